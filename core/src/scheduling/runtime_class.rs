//! A pod's scheduling with its RuntimeClass merged in, as the built-in
//! RuntimeClass admission plugin merges it
//! (kubernetes plugin/pkg/admission/runtimeclass, `setScheduling`): each
//! `scheduling.nodeSelector` entry is added to the pod's nodeSelector, the
//! same key with another value is a conflict, and the class's tolerations
//! are appended unless one of the pod's own already covers them.

use crate::vocab::ordered::StringMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};

use crate::input::node::Node;
use crate::input::pod::PodView;
use crate::input::settings::RuntimeClass;
use crate::scheduling::requirement::{affinity_matches, selector_misses};
use crate::scheduling::taints::{covers, untolerated};
use crate::vocab::taint::Taint;

/// What the scheduler filters a pod by, its RuntimeClass merged in.
#[derive(Debug, Clone)]
pub struct PodScheduling<'p> {
    /// `spec.nodeSelector` with the class's entries added.
    pub node_selector: StringMap,
    /// Required node affinity, as written.
    pub affinity: Option<&'p NodeSelector>,
    /// `spec.tolerations` with the class's tolerations appended.
    pub tolerations: Vec<&'p Toleration>,
}

/// Why the scheduler keeps a pod off a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// A nodeSelector entry the node does not carry, with the node's value.
    Selector {
        /// The label key.
        key: String,
        /// The value the pod selects.
        want: String,
        /// The node's value; `None` when it has no such label.
        has: Option<String>,
    },
    /// No required node-affinity term matches the node.
    Affinity,
    /// A `NoSchedule`/`NoExecute` taint no toleration tolerates.
    Taint(Taint),
}

impl<'p> PodScheduling<'p> {
    /// The pod's scheduling fields, merged with `class` when it has one.
    pub fn of(pod: &'p PodView<'_>, class: Option<&'p RuntimeClass>) -> PodScheduling<'p> {
        let mut scheduling = PodScheduling {
            node_selector: pod.node_selector.clone(),
            affinity: pod.required_affinity.as_ref(),
            tolerations: pod.tolerations.iter().collect(),
        };
        if let Some(class) = class {
            for (key, value) in &class.scheduling.node_selector {
                scheduling
                    .node_selector
                    .insert_absent(key.as_str(), || value.clone());
            }
            scheduling
                .tolerations
                .extend(added_tolerations(&pod.tolerations, class));
        }
        scheduling
    }

    /// Whether the node passes nodeSelector and required node affinity.
    pub fn selects(&self, node: &Node) -> bool {
        selector_misses(&self.node_selector, node).is_empty()
            && self.affinity.is_none_or(|a| affinity_matches(a, node))
    }

    /// Everything that keeps the pod off the node; empty when nothing does.
    pub fn blockers(&self, node: &Node) -> Vec<Blocker> {
        let mut found: Vec<Blocker> = selector_misses(&self.node_selector, node)
            .into_iter()
            .map(|(key, want, has)| Blocker::Selector {
                key: key.to_string(),
                want: want.to_string(),
                has: has.map(|h| h.into_owned()),
            })
            .collect();
        if self.affinity.is_some_and(|a| !affinity_matches(a, node)) {
            found.push(Blocker::Affinity);
        }
        found.extend(
            untolerated(&node.taints, &self.tolerations)
                .into_iter()
                .cloned()
                .map(Blocker::Taint),
        );
        found
    }
}

/// The class's tolerations the pod's own do not cover, in order: those
/// the plugin appends.
pub fn added_tolerations<'c>(own: &[Toleration], class: &'c RuntimeClass) -> Vec<&'c Toleration> {
    class
        .scheduling
        .tolerations
        .iter()
        .filter(|t| !own.iter().any(|mine| covers(mine, t)))
        .collect()
}

/// The class's nodeSelector entries whose key the pod sets to another
/// value: `(key, the pod's value, the class's value)`. The plugin refuses
/// such a pod.
pub fn selector_conflicts<'a>(
    own: &'a StringMap,
    class: &'a RuntimeClass,
) -> Vec<(&'a str, &'a str, &'a str)> {
    class
        .scheduling
        .node_selector
        .iter()
        .filter_map(|(key, value)| {
            own.get(key)
                .filter(|mine| *mine != value)
                .map(|mine| (key.as_str(), mine.as_str(), value.as_str()))
        })
        .collect()
}
