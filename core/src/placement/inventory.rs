//! The node inventory check: can any node of the cluster run the pod as
//! it will be admitted? Node filtering follows the scheduler's plugins:
//! NodeAffinity (nodeSelector entries ANDed, required terms ORed,
//! expressions ANDed: kubernetes pkg/scheduler/framework/plugins/nodeaffinity
//! and component-helpers nodeaffinity) and TaintToleration (only NoSchedule
//! and NoExecute taints filter).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, Toleration};

use crate::input::facts::{NodeFact, NodeTaint};
use crate::scheduling::taints::tolerates;
use crate::vocab::constraint::{BuildSet, Builds, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::labels::{OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::vocab::ordered::CollectOrdered;

/// The pod as the scheduler will see it.
pub struct Candidate<'p> {
    /// Where the images and fields let it run.
    pub placement: &'p Placement,
    /// nodeSelector, RuntimeClass entries merged.
    pub node_selector: &'p BTreeMap<String, String>,
    /// Required node affinity.
    pub affinity: Option<&'p NodeSelector>,
    /// Tolerations, RuntimeClass entries merged.
    pub tolerations: &'p [&'p Toleration],
}

/// `None` when some node runs the pod; otherwise why none does, at `path`.
pub fn no_node(candidate: &Candidate<'_>, nodes: &[NodeFact], path: &str) -> Option<Diagnostic> {
    if nodes.is_empty() {
        return None;
    }
    let runs: Vec<&NodeFact> = nodes
        .iter()
        .filter(|n| runs_on(candidate.placement, n))
        .collect();
    if runs.is_empty() {
        return Some(Diagnostic::new(
            Code::NoNode,
            path,
            platform_gap(candidate.placement, nodes),
            "add nodes of that OS and build, or use an image for a build the nodes run",
        ));
    }
    let selected: Vec<&NodeFact> = runs
        .iter()
        .copied()
        .filter(|n| selects(candidate, n))
        .collect();
    if selected.is_empty() {
        return Some(Diagnostic::new(
            Code::NoNode,
            path,
            format!(
                "no node that runs {} matches the pod's nodeSelector and required node affinity (nodes {})",
                candidate.placement,
                names(&runs)
            ),
            "select labels those nodes carry",
        ));
    }
    let untolerated: BTreeSet<String> = selected
        .iter()
        .flat_map(|n| blocking_taints(n, candidate.tolerations))
        .map(|t| t.as_taint().to_string())
        .collect_set();
    if selected
        .iter()
        .any(|n| blocking_taints(n, candidate.tolerations).is_empty())
    {
        return None;
    }
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
fn platform_gap(placement: &Placement, nodes: &[NodeFact]) -> String {
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

fn names(nodes: &[&NodeFact]) -> String {
    let mut listed: Vec<&str> = nodes.iter().take(3).map(|n| n.name.as_str()).collect();
    if nodes.len() > 3 {
        listed.push("…");
    }
    listed.join(", ")
}

/// Whether the node's OS and build run the pod's containers.
pub fn runs_on(placement: &Placement, node: &NodeFact) -> bool {
    if node.is_windows() {
        match (&placement.windows, node.build()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(builds), Some(build)) => builds.allows(build),
        }
    } else {
        placement.linux
    }
}

/// The node's labels, with the OS and build it is known to have.
fn labels_of(node: &NodeFact) -> BTreeMap<String, String> {
    let mut labels = node.labels.clone();
    if let Some(os) = &node.os {
        labels.entry(OS_LABEL.into()).or_insert_with(|| os.clone());
    }
    if let Some(build) = node.build() {
        labels
            .entry(WINDOWS_BUILD_LABEL.into())
            .or_insert_with(|| build.to_string());
    }
    labels
}

fn selects(candidate: &Candidate<'_>, node: &NodeFact) -> bool {
    let labels = labels_of(node);
    let selector_ok = candidate
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    selector_ok
        && candidate.affinity.is_none_or(|affinity| {
            affinity.node_selector_terms.iter().any(|term| {
                let expressions = term.match_expressions.as_deref().unwrap_or_default();
                let fields = term.match_fields.as_deref().unwrap_or_default();
                // An empty term matches no node.
                (!expressions.is_empty() || !fields.is_empty())
                    && expressions.iter().all(|e| matches(e, labels.get(&e.key)))
                    && fields
                        .iter()
                        .all(|f| f.key == "metadata.name" && matches(f, Some(&node.name)))
            })
        })
}

/// One requirement against a label value (`None`: the label is absent).
fn matches(req: &NodeSelectorRequirement, value: Option<&String>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let bound = match values {
                [b] => b.parse::<i64>().ok(),
                _ => None,
            };
            match (bound, value.and_then(|v| v.parse::<i64>().ok())) {
                (Some(b), Some(v)) if req.operator == "Gt" => v > b,
                (Some(b), Some(v)) => v < b,
                _ => false,
            }
        }
        _ => false,
    }
}

/// The NoSchedule and NoExecute taints of the node no toleration tolerates.
fn blocking_taints<'n>(node: &'n NodeFact, tolerations: &[&Toleration]) -> Vec<&'n NodeTaint> {
    node.taints
        .iter()
        .filter(|t| matches!(t.effect.as_str(), "NoSchedule" | "NoExecute"))
        .filter(|t| {
            let taint = t.as_taint();
            !tolerations.iter().any(|tol| tolerates(tol, &taint))
        })
        .collect()
}

/// The taint every Windows node carries and no Linux node does, for
/// `windowsTaint: fromNodes`; `None` when the Windows nodes share none.
pub fn windows_taint(nodes: &[NodeFact]) -> Option<NodeTaint> {
    let mut windows = nodes.iter().filter(|n| n.is_windows());
    let first = windows.next()?;
    let rest: Vec<&NodeFact> = windows.collect();
    first
        .taints
        .iter()
        .filter(|t| {
            matches!(
                t.effect.as_str(),
                "NoSchedule" | "NoExecute" | "PreferNoSchedule"
            )
        })
        .filter(|t| rest.iter().all(|n| n.taints.contains(t)))
        .find(|t| {
            nodes
                .iter()
                .filter(|n| n.is_linux())
                .all(|n| !n.taints.contains(t))
        })
        .cloned()
}
