//! The node inventory check: can any node of the cluster run the pod as
//! it will be admitted? The nodes are filtered by the scheduling model
//! (`scheduling`): the node's OS and build must run the containers, then
//! NodeAffinity and TaintToleration as the scheduler applies them.

use serde_json::Value;

use crate::input::facts::Facts;
use crate::input::node::Node;
use crate::input::pod::PodView;
use crate::input::review::locate_pod_spec;
use crate::input::settings::Settings;
use crate::scheduling::runtime_class::{Blocker, PodScheduling};
use crate::signals::architecture::{join as join_archs, Architectures};
use crate::signals::resolve::{Resolution, Source};
use crate::vocab::arch::ArchSet;
use crate::vocab::constraint::{BuildSet, Builds, Os, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::Kind;
use crate::vocab::labels::{ARCH_LABEL, OS_LABEL};
use crate::vocab::ordered::SortedSet;
use crate::vocab::patch::{apply, PatchOp};

/// How far the check goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Only whether some node runs the pod's OS, build and architecture.
    Platform,
    /// Also whether such a node passes the pod's selectors, affinity and
    /// tolerations.
    Scheduling,
}

/// Why no listed node runs `object` once `patch` is applied; `None` when
/// some node does, when the pod is bound to a node, or when the object
/// cannot be read back (the rules already judged it).
pub fn no_node_after(
    object: &Value,
    kind: Kind,
    patch: &[PatchOp],
    resolution: &Resolution,
    settings: &Settings,
    facts: &Facts,
    check: Check,
) -> Option<Diagnostic> {
    let nodes = facts.inventory(settings)?;
    let nodes = nodes.as_ref();
    // An object admitted as it is is read as it is: no copy to patch.
    let admitted = if patch.is_empty() {
        std::borrow::Cow::Borrowed(object)
    } else {
        let mut patched = object.clone();
        apply(&mut patched, patch).ok()?;
        std::borrow::Cow::Owned(patched)
    };
    let (spec, path) = locate_pod_spec(&admitted, kind).ok()?;
    let pod = PodView::read(spec, path).ok()?;
    if pod.node_name.is_some() {
        return None;
    }
    let class = pod
        .runtime_class_name
        .and_then(|n| settings.runtime_class(n));
    let scheduling = PodScheduling::of(&pod, class);
    // The pod's OS after admission: a defaulted Linux pod runs Linux only.
    let placement = match scheduling.node_selector.get(OS_LABEL).map(String::as_str) {
        Some("linux") => resolution.placement.intersect(&Os::Linux.placement()),
        _ => resolution.placement.clone(),
    };
    let path = resolution
        .signals
        .iter()
        .find(|s| s.source == Source::Image)
        .map(|s| s.path.clone())
        .unwrap_or_else(|| pod.path.display().to_string());
    let archs = settings
        .pin_architecture
        .then(|| Architectures::read(&pod, placement.os(), facts).runnable())
        .flatten();
    if let Some(gap) = no_architecture(&placement, archs.as_ref(), nodes, &path) {
        return Some(gap);
    }
    match check {
        Check::Platform => no_platform(&placement, nodes, &path),
        Check::Scheduling => no_node(&placement, &scheduling, nodes, &path),
    }
}

/// With `pinArchitecture`: `None` when some node that runs the pod's OS and
/// build is of an architecture its images are built for (or names none).
fn no_architecture(
    placement: &Placement,
    archs: Option<&ArchSet>,
    nodes: &[Node],
    path: &str,
) -> Option<Diagnostic> {
    let archs = archs?;
    let runs: Vec<&Node> = nodes.iter().filter(|n| n.runs(placement)).collect();
    let node_archs: ArchSet = runs
        .iter()
        .filter_map(|n| n.label(ARCH_LABEL).map(|a| a.into_owned()))
        .collect();
    let fits = |n: &&Node| {
        n.label(ARCH_LABEL)
            .is_none_or(|a| archs.contains(a.as_ref()))
    };
    if runs.is_empty() || runs.iter().any(fits) {
        return None;
    }
    Some(Diagnostic::new(
        Code::NoNode,
        path,
        format!(
            "no node runs the images' architecture {}; the nodes that run {placement} are {}{}",
            join_archs(archs),
            join_archs(&node_archs),
            capacity_gap(nodes)
        ),
        "add nodes (or a NodePool) of that architecture, or use an image built for the nodes'",
    ))
}

/// `None` when some node runs the pod's OS and build; otherwise what the
/// nodes lack, at `path`.
pub fn no_platform(placement: &Placement, nodes: &[Node], path: &str) -> Option<Diagnostic> {
    if nodes.is_empty() || nodes.iter().any(|n| n.runs(placement)) {
        return None;
    }
    Some(Diagnostic::new(
        Code::NoNode,
        path,
        platform_gap(placement, nodes),
        "add nodes (or a NodePool) of that OS and build, or use an image for a build the nodes run",
    ))
}

/// `None` when some node runs the pod; otherwise why none does, at `path`.
pub fn no_node(
    placement: &Placement,
    scheduling: &PodScheduling<'_>,
    nodes: &[Node],
    path: &str,
) -> Option<Diagnostic> {
    if nodes.is_empty() {
        return None;
    }
    if let Some(gap) = no_platform(placement, nodes, path) {
        return Some(gap);
    }
    let runs: Vec<&Node> = nodes.iter().filter(|n| n.runs(placement)).collect();
    let selected: Vec<&Node> = runs
        .iter()
        .copied()
        .filter(|n| scheduling.selects(n))
        .collect();
    if selected.is_empty() {
        return Some(Diagnostic::new(
            Code::NoNode,
            path,
            format!(
                "no node that runs {placement} matches the pod's nodeSelector and required node affinity (nodes {})",
                names(&runs)
            ),
            "select labels those nodes carry",
        ));
    }
    let blocked: Vec<Vec<Blocker>> = selected.iter().map(|n| scheduling.blockers(n)).collect();
    if blocked.iter().any(Vec::is_empty) {
        return None;
    }
    let untolerated: SortedSet<String> = blocked
        .iter()
        .flatten()
        .filter_map(|b| match b {
            Blocker::Taint(taint) => Some(taint.to_string()),
            _ => None,
        })
        .collect();
    Some(Diagnostic::new(
        Code::NoNode,
        path,
        format!(
            "every node that runs the pod carries a taint it does not tolerate: {}",
            untolerated.into_iter().collect::<Vec<_>>().join(", ")
        ),
        "add a toleration for the taint",
    ))
}

/// "no node runs Windows build 10.0.26100; nodes run 10.0.17763, 10.0.20348",
/// and what the NodePools and node templates would launch.
fn platform_gap(placement: &Placement, nodes: &[Node]) -> String {
    let existing: Vec<Node> = nodes.iter().filter(|n| n.exists()).cloned().collect();
    let mut gap = existing_gap(placement, &existing);
    gap.push_str(&capacity_gap(nodes));
    gap
}

/// What no launchable entry offers: nothing when there is none; else
/// that none launches such a node, with the first reason one launches
/// nothing at all.
fn capacity_gap(nodes: &[Node]) -> String {
    let launchable: Vec<&Node> = nodes.iter().filter(|n| !n.exists()).collect();
    if launchable.is_empty() {
        return String::new();
    }
    match launchable
        .iter()
        .find_map(|n| Some((n.launchable.as_ref()?, n.blocked.as_ref()?)))
    {
        Some((source, why)) => {
            format!(", and no NodePool or node template launches one ({source}: {why})")
        }
        None => ", and no NodePool or node template launches one".to_string(),
    }
}

/// The gap among the nodes that exist.
fn existing_gap(placement: &Placement, nodes: &[Node]) -> String {
    let windows_builds: SortedSet<String> = nodes
        .iter()
        .filter(|n| n.is_windows())
        .map(|n| {
            n.build()
                .map_or("an unknown build".into(), |b| b.to_string())
        })
        .collect();
    let has_linux = nodes.iter().any(|n| n.is_linux());
    if nodes.is_empty() {
        return format!("no node runs {placement}");
    }
    match (placement.linux, &placement.windows) {
        (false, Some(builds)) if windows_builds.is_empty() => {
            format!(
                "no node runs Windows ({}); the cluster has only Linux nodes",
                builds
            )
        }
        (false, Some(Builds::Only(set))) => format!(
            "no node runs Windows build {}; nodes run {}",
            join(set),
            windows_builds.into_iter().collect::<Vec<_>>().join(", ")
        ),
        (true, _) if !has_linux => {
            format!("no node runs {placement}; the cluster has only Windows nodes")
        }
        _ => format!("no node runs {placement}"),
    }
}

fn join(set: &BuildSet) -> String {
    set.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Up to three nodes by name (a class by its first node and how many are
/// like it), then "…".
fn names(nodes: &[&Node]) -> String {
    let mut listed: Vec<String> = nodes.iter().take(3).map(|n| n.describe()).collect();
    if nodes.len() > 3 {
        listed.push("…".to_string());
    }
    listed.join(", ")
}
