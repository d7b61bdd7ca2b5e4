//! The node inventory check: can any node of the cluster run the pod as
//! it will be admitted? The nodes are filtered by the scheduling model
//! (`scheduling`): the node's OS and build must run the containers, then
//! NodeAffinity and TaintToleration as the scheduler applies them.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::input::node::Node;
use crate::input::pod::PodView;
use crate::input::review::locate_pod_spec;
use crate::input::settings::Settings;
use crate::scheduling::runtime_class::{Blocker, PodScheduling};
use crate::signals::resolve::{Resolution, Source};
use crate::vocab::constraint::{BuildSet, Builds, Os, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::Kind;
use crate::vocab::labels::OS_LABEL;
use crate::vocab::ordered::CollectOrdered;
use crate::vocab::patch::{apply, PatchOp};

/// Why no listed node runs `object` once `patch` is applied; `None` when
/// some node does, when the pod is bound to a node, or when the object
/// cannot be read back (the rules already judged it).
pub fn no_node_after(
    object: &Value,
    kind: Kind,
    patch: &[PatchOp],
    resolution: &Resolution,
    settings: &Settings,
    nodes: &[Node],
) -> Option<Diagnostic> {
    let mut admitted = object.clone();
    apply(&mut admitted, patch).ok()?;
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
    no_node(&placement, &scheduling, nodes, &path)
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
    let runs: Vec<&Node> = nodes.iter().filter(|n| n.runs(placement)).collect();
    if runs.is_empty() {
        return Some(Diagnostic::new(
            Code::NoNode,
            path,
            platform_gap(placement, nodes),
            "add nodes of that OS and build, or use an image for a build the nodes run",
        ));
    }
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
    let untolerated: BTreeSet<String> = blocked
        .iter()
        .flatten()
        .filter_map(|b| match b {
            Blocker::Taint(taint) => Some(taint.to_string()),
            _ => None,
        })
        .collect_set();
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

/// "no node runs Windows build 10.0.26100; nodes run 10.0.17763, 10.0.20348".
fn platform_gap(placement: &Placement, nodes: &[Node]) -> String {
    let windows_builds: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n.is_windows())
        .map(|n| {
            n.build()
                .map_or("an unknown build".into(), |b| b.to_string())
        })
        .collect_set();
    let has_linux = nodes.iter().any(|n| n.is_linux());
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

fn names(nodes: &[&Node]) -> String {
    let mut listed: Vec<&str> = nodes.iter().take(3).map(|n| n.name.as_str()).collect();
    if nodes.len() > 3 {
        listed.push("…");
    }
    listed.join(", ")
}
