//! Which Windows builds to pin a pod to: the one build its image names, or,
//! from a set of builds (an image index, Hyper-V isolation, the cluster's
//! nodes), a pin when one fits and a required affinity when several do.

use crate::placement::missing::{Missing, Plan};
use crate::signals::resolve::Resolution;
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{BuildSet, Builds};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::labels::WINDOWS_BUILD_LABEL;

/// The cluster's Windows builds, when known (node inventory or settings).
pub type ClusterBuilds<'c> = Option<&'c BuildSet>;

/// The build pin of an image whose reference names one build.
pub(crate) fn legacy_pin(
    resolution: &Resolution,
    pins: bool,
    node_builds: &Builds,
    missing: &mut Vec<Missing>,
    plan: &mut Plan,
) {
    match pin_build(resolution, node_builds) {
        Some(build) if pins && !node_builds.is_within(&resolution.image_builds()) => {
            missing.push(pin(build));
        }
        None if pins && node_builds.single().is_none() => {
            plan.warnings.extend(resolution.images_without_build.iter().map(|(path, image)| {
                Diagnostic::new(
                    Code::UnknownBuild,
                    path,
                    format!("Windows image {image} names no build, so the pod is not pinned to one"),
                    "use a release tag (e.g. ltsc2022) or set nodeSelector node.kubernetes.io/windows-build",
                )
            }));
        }
        _ => {}
    }
}

fn pin(build: WindowsBuild) -> Missing {
    Missing::Selector {
        key: WINDOWS_BUILD_LABEL,
        value: build.to_string(),
        code: Code::MissingBuildPin,
        why: format!("the pod's Windows image needs build {build} but the pod is not pinned to it, so it can land on a node of another build and fail to start"),
    }
}

/// Build placement from a set of builds (an image index, Hyper-V, or the
/// cluster's builds): nothing when every build the pod can reach runs it,
/// a pin when one build fits, else a required affinity `In` on the fitting
/// builds (the scheduler ORs terms and ANDs expressions: NodeAffinity).
pub(crate) fn build_placement(
    resolution: &Resolution,
    node_builds: &Builds,
    cluster: ClusterBuilds<'_>,
) -> Option<Missing> {
    let allowed = resolution.image_builds();
    let fits: BuildSet = match (cluster, &allowed.intersect(node_builds)) {
        (Some(cluster), _) => {
            let reachable: Vec<&WindowsBuild> =
                cluster.iter().filter(|b| node_builds.allows(**b)).collect();
            if reachable.iter().all(|b| allowed.allows(**b)) {
                return None;
            }
            reachable
                .into_iter()
                .filter(|b| allowed.allows(**b))
                .copied()
                .collect()
        }
        (None, Builds::Only(set)) if !node_builds.is_within(&allowed) => {
            // One image build (and the hosts that also run it): its own pin.
            if let Some(own) = resolution.image_build() {
                if allowed == Builds::compatible_hosts(own) {
                    return pin_build(resolution, node_builds).map(pin);
                }
            }
            set.clone()
        }
        _ => return None,
    };
    match fits.len() {
        // No node runs it (the inventory check says so): keep the image's
        // own pin, so that the pod waits rather than fails on a wrong build.
        0 => resolution.image_build().map(pin),
        1 => fits.iter().next().map(|b| pin(*b)),
        _ => Some(Missing::Affinity {
            key: WINDOWS_BUILD_LABEL,
            why: format!(
                "the pod's Windows images run on builds {} only, but the pod does not select them",
                join_builds(&fits)
            ),
            values: fits.iter().map(ToString::to_string).collect(),
            code: Code::MissingBuildPin,
        }),
    }
}

fn join_builds(builds: &BuildSet) -> String {
    builds
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The build to pin: the images' own, unless the pod's node-selecting
/// fields rule it out and leave another build that runs the images (a
/// 2025 node for an ltsc2022 image under `windows-build NotIn [20348]`).
fn pin_build(resolution: &Resolution, node_builds: &Builds) -> Option<WindowsBuild> {
    let own = resolution.image_build()?;
    match resolution.image_builds().intersect(node_builds) {
        Builds::Only(set) if !set.contains(&own) => set.first().copied().or(Some(own)),
        _ => Some(own),
    }
}
