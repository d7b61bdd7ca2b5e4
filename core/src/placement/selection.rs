//! How a pod chooses its nodes by means the policy does not interpret:
//! a node pool label, specific nodes, a binding to one node, a toleration
//! of the Windows taint. An OS selector added to such a pod may contradict
//! where it points, so without an OS signal the policy leaves it alone.

use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};

use crate::input::pod::PodView;
use crate::input::settings::Settings;
use crate::vocab::constraint::Os;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::labels::is_placement_label;

/// Labels every OS's nodes carry alike: selecting on them picks no node
/// pool of one OS (architecture, zone, instance type, capacity type).
const OS_NEUTRAL_LABELS: &[&str] = &[
    "kubernetes.io/arch",
    "beta.kubernetes.io/arch",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.sh/capacity-type",
    "eks.amazonaws.com/capacityType",
    "cloud.google.com/gke-spot",
    "cloud.google.com/gke-preemptible",
    "kubernetes.azure.com/scalesetpriority",
];

/// One field through which the pod points at particular nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Field path relative to the object.
    pub path: String,
    /// What it selects, for messages, e.g. `eks.amazonaws.com/nodegroup=win`.
    pub what: String,
}

/// Whether selecting on `key` may pick nodes of one OS only.
pub fn picks_a_pool(key: &str) -> bool {
    !is_placement_label(key) && !OS_NEUTRAL_LABELS.contains(&key)
}

/// Every way the pod points at nodes that the OS labels do not describe.
pub fn other_selections(pod: &PodView<'_>, settings: &Settings) -> Vec<Selection> {
    let mut found = Vec::new();
    if let Some(node) = pod.node_name {
        found.push(Selection {
            path: pod.field("nodeName").display().to_string(),
            what: format!("node {node}"),
        });
    }
    for (key, value) in pod.node_selector.iter().filter(|(k, _)| picks_a_pool(k)) {
        found.push(Selection {
            path: pod.field("nodeSelector").key(key).display().to_string(),
            what: format!("{key}={value}"),
        });
    }
    if let Some(required) = &pod.required_affinity {
        let base = pod
            .field("affinity")
            .field("nodeAffinity")
            .field("requiredDuringSchedulingIgnoredDuringExecution")
            .field("nodeSelectorTerms");
        for (i, term) in required.node_selector_terms.iter().enumerate() {
            if let Some(what) = term_selection(term) {
                found.push(Selection {
                    path: base.index(i).display().to_string(),
                    what,
                });
            }
        }
    }
    for (i, t) in pod.tolerations.iter().enumerate() {
        if points_at_windows(t, settings) {
            found.push(Selection {
                path: pod.field("tolerations").index(i).display().to_string(),
                what: format!("a toleration of {}", crate::scheduling::taints::describe(t)),
            });
        }
    }
    found
}

/// The pool-picking part of one affinity term, if it has one.
fn term_selection(term: &NodeSelectorTerm) -> Option<String> {
    let mut parts: Vec<String> = term
        .match_expressions
        .iter()
        .flatten()
        .filter(|r| picks_a_pool(&r.key))
        .map(|r| format!("{} {}", r.key, r.operator))
        .collect();
    parts.extend(
        term.match_fields
            .iter()
            .flatten()
            .map(|r| format!("{} {} (matchFields)", r.key, r.operator)),
    );
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// A toleration that names the Windows taint, or says Windows: evidence
/// that the pod is meant for Windows nodes, never a reason to add Linux.
fn points_at_windows(t: &Toleration, settings: &Settings) -> bool {
    let key = t.key.as_deref().unwrap_or("");
    let value = t.value.as_deref().unwrap_or("");
    let names_taint = settings.windows_taint().is_some_and(|taint| {
        !key.is_empty()
            && key == taint.key
            && (t.operator.as_deref() == Some("Exists") || value == taint.value)
    });
    names_taint
        || value.eq_ignore_ascii_case("windows")
        || key.to_ascii_lowercase().contains("windows")
}

/// The selections in words, short enough for a warning: the first, and
/// how many more (each has its own path in the pod spec).
pub fn summary(selections: &[Selection]) -> String {
    let first = selections
        .first()
        .map(|s| s.what.as_str())
        .unwrap_or_default();
    let first = match first.char_indices().nth(90) {
        Some((end, _)) => format!("{}…", first.get(..end).unwrap_or_default()),
        None => first.to_string(),
    };
    match selections.len() {
        0 | 1 => first,
        n => format!("{first} (and {} more)", n - 1),
    }
}

/// The warning for a pod whose OS cannot be told and which points at nodes
/// by other means: nothing is added.
pub fn os_undetermined(pod: &PodView<'_>, selections: &[Selection]) -> Diagnostic {
    let path = selections
        .first()
        .map(|s| s.path.clone())
        .unwrap_or_else(|| pod.path.display().to_string());
    Diagnostic::new(
        Code::OsUndetermined,
        path,
        format!(
            "OS unknown and the pod picks nodes by {}, so no OS selector was added",
            summary(selections)
        ),
        "set nodeSelector kubernetes.io/os",
    )
}

/// The warning for a bound pod whose selectors the policy would have added.
pub fn bound_to_node(pod: &PodView<'_>, node: &str, os: Os) -> Diagnostic {
    Diagnostic::new(
        Code::BoundToNode,
        pod.field("nodeName").display(),
        format!(
            "the pod is bound to node {node:?}, so no selector was added; it needs a {os} node"
        ),
        "make sure that node runs the pod's OS and build",
    )
}
