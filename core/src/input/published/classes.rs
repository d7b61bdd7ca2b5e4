//! The cluster's nodes as classes: the nodes alike in everything placement
//! reads (OS, Windows build, architecture, labels, taints) are one entry
//! with a count, so what is published grows with how varied the cluster is,
//! not with how many nodes it has. A label that tells every node apart (the
//! hostname) is left out of the classes and marked as varying; so, while the
//! classes are over their budget, is the label with the most values, never
//! one that tells the OS, build or architecture. Node names go to the shards
//! with their class, for pods that select a node by name.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::input::node::Node;
use crate::input::published::key::Key;
use crate::vocab::labels::{is_placement_label, ARCH_LABEL, BETA_ARCH_LABEL, HOSTNAME_LABEL};
use crate::vocab::taint::Taint;

/// The most bytes the classes may take in the cluster document before
/// labels are marked as varying: the document is read on every request.
pub const CLASS_BUDGET: usize = 24 * 1024;

/// The nodes of a cluster as classes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeClasses {
    /// How many nodes there are.
    pub total: u32,
    /// One entry per class: `count` nodes, `name` the first of them by
    /// name, `varying` the label keys left out.
    pub classes: Vec<(Key, Node)>,
    /// Every node: its name, its class, and whether its hostname label is
    /// its name.
    pub members: Vec<Member>,
    /// Whether every node's hostname label, where it has one, is its name.
    pub hostnames_are_names: bool,
}

/// One node as the name index publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// `metadata.name`.
    pub name: String,
    /// Its class.
    pub class: Key,
    /// Its `kubernetes.io/hostname` label is its name.
    pub hostname_is_name: bool,
}

/// What makes nodes alike.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
struct Signature {
    os: Option<String>,
    windows_build: Option<String>,
    architecture: Option<String>,
    labels: BTreeMap<String, String>,
    taints: Vec<(String, String, String)>,
    varying: Vec<String>,
}

/// Groups `nodes` into classes within [`CLASS_BUDGET`]; launchable entries
/// (capacity, published apart) are left out.
pub fn classify(nodes: &[Node]) -> NodeClasses {
    classify_within(nodes, CLASS_BUDGET)
}

/// Groups `nodes` into classes whose published form takes at most
/// `budget` bytes, when leaving out labels can get it there.
pub fn classify_within(nodes: &[Node], budget: usize) -> NodeClasses {
    let mut left_out: BTreeSet<String> = BTreeSet::from([HOSTNAME_LABEL.to_string()]);
    loop {
        let classes = group(nodes, &left_out);
        if published_size(&classes) <= budget {
            return classes;
        }
        match most_varied(nodes.iter().filter(|n| n.exists()), &left_out) {
            Some(key) => left_out.insert(key),
            None => return classes,
        };
    }
}

fn signature(node: &Node, left_out: &BTreeSet<String>) -> Signature {
    let mut labels = BTreeMap::new();
    let mut varying = Vec::new();
    for (key, value) in &node.labels {
        if left_out.contains(key) {
            varying.push(key.clone());
        } else {
            labels.insert(key.clone(), value.clone());
        }
    }
    let mut taints: Vec<(String, String, String)> = node
        .taints
        .iter()
        .map(|t| (t.key.clone(), t.value.clone(), t.effect.clone()))
        .collect();
    taints.sort();
    taints.dedup();
    Signature {
        os: node.os.clone(),
        windows_build: node.build().map(|b| b.to_string()),
        architecture: node.architecture.clone(),
        labels,
        taints,
        varying,
    }
}

fn group(nodes: &[Node], left_out: &BTreeSet<String>) -> NodeClasses {
    // Signature → (class number, example name, count).
    let mut seen: BTreeMap<Signature, (usize, String, u32)> = BTreeMap::new();
    let mut of_node = Vec::with_capacity(nodes.len());
    for node in nodes.iter().filter(|n| n.exists()) {
        let next = seen.len();
        let entry = seen
            .entry(signature(node, left_out))
            .or_insert_with(|| (next, node.name.clone(), 0));
        entry.2 = entry.2.saturating_add(1);
        if node.name < entry.1 {
            entry.1 = node.name.clone();
        }
        of_node.push(entry.0);
    }
    let mut classes: Vec<(usize, Key, Node)> = seen
        .into_iter()
        .map(|(signature, (number, name, count))| {
            let id = class_key(&signature);
            (number, id, class_node(signature, name, count))
        })
        .collect();
    // In the order of their first node, as a listing shows them.
    classes.sort_by_key(|(number, _, _)| *number);
    let ids: Vec<Key> = classes.iter().map(|(_, id, _)| *id).collect();
    let members: Vec<Member> = nodes
        .iter()
        .filter(|n| n.exists())
        .zip(of_node)
        .filter_map(|(node, number)| {
            Some(Member {
                name: node.name.clone(),
                class: *ids.get(number)?,
                hostname_is_name: node.labels.get(HOSTNAME_LABEL) == Some(&node.name),
            })
        })
        .collect();
    NodeClasses {
        total: u32::try_from(members.len()).unwrap_or(u32::MAX),
        classes: classes
            .into_iter()
            .map(|(_, id, node)| (id, node))
            .collect(),
        members,
        hostnames_are_names: nodes.iter().filter(|n| n.exists()).all(|n| {
            n.labels
                .get(HOSTNAME_LABEL)
                .is_none_or(|hostname| *hostname == n.name)
        }),
    }
}

fn class_key(signature: &Signature) -> Key {
    let text = serde_json::to_string(signature).unwrap_or_default();
    Key::of(&text).0
}

fn class_node(signature: Signature, name: String, count: u32) -> Node {
    Node {
        name,
        os: signature.os,
        windows_build: signature.windows_build,
        architecture: signature.architecture,
        labels: signature.labels.into_iter().collect(),
        taints: signature
            .taints
            .into_iter()
            .map(|(key, value, effect)| Taint { key, value, effect })
            .collect(),
        count,
        varying: signature.varying,
        unnamed: None,
        launchable: None,
        blocked: None,
    }
}

/// About the bytes the classes take in the cluster document.
fn published_size(classes: &NodeClasses) -> usize {
    classes
        .classes
        .iter()
        .map(|(_, node)| serde_json::to_string(node).map_or(0, |text| text.len() + 24))
        .sum()
}

/// The label with the most distinct values that may be left out: not one
/// that tells the OS, build or architecture, not one left out already.
pub(crate) fn most_varied<'n>(
    nodes: impl Iterator<Item = &'n Node>,
    left_out: &BTreeSet<String>,
) -> Option<String> {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for node in nodes {
        for (key, value) in &node.labels {
            values.entry(key).or_default().insert(value);
        }
    }
    values
        .into_iter()
        .filter(|(key, _)| {
            !left_out.contains(*key)
                && !is_placement_label(key)
                && !matches!(*key, ARCH_LABEL | BETA_ARCH_LABEL)
        })
        .filter(|(_, seen)| seen.len() > 1)
        .max_by_key(|(key, seen)| (seen.len(), std::cmp::Reverse(*key)))
        .map(|(key, _)| key.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::vocab::ordered::StringMap;

    fn node(name: &str, os: &str, zone: &str, taint: bool) -> Node {
        let mut labels = StringMap::new();
        labels.insert("kubernetes.io/os".into(), os.into());
        labels.insert(HOSTNAME_LABEL.into(), name.into());
        labels.insert("topology.kubernetes.io/zone".into(), zone.into());
        Node {
            name: name.into(),
            os: Some(os.into()),
            labels,
            taints: if taint {
                vec![Taint {
                    key: "os".into(),
                    value: "windows".into(),
                    effect: "NoSchedule".into(),
                }]
            } else {
                Vec::new()
            },
            ..Node::default()
        }
    }

    #[test]
    fn alike_nodes_are_one_class_with_a_count_and_their_names_are_kept() {
        let nodes = vec![
            node("l-2", "linux", "a", false),
            node("w-1", "windows", "a", true),
            node("l-1", "linux", "a", false),
            node("l-3", "linux", "b", false),
        ];
        let classes = classify(&nodes);
        assert_eq!(classes.total, 4);
        let counts: Vec<(&str, u32)> = classes
            .classes
            .iter()
            .map(|(_, n)| (n.name.as_str(), n.count))
            .collect();
        // In the order of their first node; the example is the first by name.
        assert_eq!(counts, [("l-1", 2), ("w-1", 1), ("l-3", 1)]);
        let linux = &classes.classes[0].1;
        assert_eq!(linux.varying, [HOSTNAME_LABEL]);
        assert!(!linux.labels.contains_key(HOSTNAME_LABEL));
        assert_eq!(classes.classes[1].1.taints.len(), 1);
        assert_eq!(classes.members.len(), 4);
        assert_eq!(classes.members[0].class, classes.members[2].class);
        assert_ne!(classes.members[0].class, classes.members[3].class);
        assert!(classes.hostnames_are_names);
        // Negative: a node whose hostname is not its name is told apart.
        let mut odd = node("l-4", "linux", "a", false);
        odd.labels.insert(HOSTNAME_LABEL.into(), "other".into());
        let classes = classify(&[odd]);
        assert!(!classes.hostnames_are_names);
        assert!(!classes.members[0].hostname_is_name);
    }

    #[test]
    fn over_budget_the_most_varied_label_is_left_out_never_the_os() {
        let nodes: Vec<Node> = (0..40)
            .map(|i| node(&format!("n-{i}"), "linux", &format!("zone-{i}"), false))
            .collect();
        let roomy = classify_within(&nodes, usize::MAX);
        assert_eq!(roomy.classes.len(), 40);
        let tight = classify_within(&nodes, 2_000);
        assert_eq!(tight.classes.len(), 1);
        let class = &tight.classes[0].1;
        assert_eq!(class.count, 40);
        assert!(class
            .varying
            .contains(&"topology.kubernetes.io/zone".to_string()));
        assert_eq!(
            class.labels.get("kubernetes.io/os").map(String::as_str),
            Some("linux")
        );
        // Negative: nothing but the OS to leave out, so it stays over budget.
        let os_only = vec![
            node("a", "linux", "z", false),
            node("b", "windows", "z", true),
        ];
        assert_eq!(classify_within(&os_only, 10).classes.len(), 2);
    }
}
