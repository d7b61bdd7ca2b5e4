//! What NodePools launch, as the cluster document publishes it: entries
//! alike in everything placement reads are one entry, named by the first
//! NodePool and how many more are like it, so what is published stays
//! within a budget however many NodePools there are. While over it, the
//! label with the most values (the NodePool's name, a team label) is left
//! out of the entries and marked as varying, never one that tells the OS,
//! build or architecture; as the node classes do.

use std::collections::{BTreeMap, BTreeSet};

use crate::input::capacity::DECIDED_AT_LAUNCH;
use crate::input::node::Node;
use crate::input::published::classes::most_varied;

/// The most bytes the capacity entries may take in the cluster document.
pub const CAPACITY_BUDGET: usize = 4 * 1024;

/// The launchable entries among `nodes`, grouped within [`CAPACITY_BUDGET`].
pub fn group(nodes: &[Node]) -> Vec<Node> {
    group_within(nodes, CAPACITY_BUDGET)
}

/// As [`group`], within `budget` bytes when leaving out labels can get it there.
pub fn group_within(nodes: &[Node], budget: usize) -> Vec<Node> {
    let entries: Vec<&Node> = nodes.iter().filter(|n| !n.exists()).collect();
    let mut left_out = BTreeSet::new();
    loop {
        let grouped = merge(&entries, &left_out);
        if size(&grouped) <= budget {
            return grouped;
        }
        match most_varied(entries.iter().copied(), &left_out) {
            Some(key) => left_out.insert(key),
            None => return grouped,
        };
    }
}

/// The entries with the `left_out` labels marked as varying, the alike
/// ones merged, in the order of their first.
fn merge(entries: &[&Node], left_out: &BTreeSet<String>) -> Vec<Node> {
    let mut merged: BTreeMap<String, (usize, Node, usize)> = BTreeMap::new();
    for (at, entry) in entries.iter().enumerate() {
        let reduced = reduced(entry, left_out);
        let mut key_node = reduced.clone();
        key_node.name.clear();
        key_node.launchable = None;
        let key = serde_json::to_string(&key_node).unwrap_or_default();
        merged
            .entry(key)
            .and_modify(|(_, _, count)| *count += 1)
            .or_insert((at, reduced, 1));
    }
    let mut grouped: Vec<(usize, Node, usize)> = merged.into_values().collect();
    grouped.sort_by_key(|(at, _, _)| *at);
    grouped
        .into_iter()
        .map(|(_, mut node, count)| {
            if count > 1 {
                let source = node.launchable.take().unwrap_or_default();
                let named = format!("{source} and {} more like it", count - 1);
                node.name = named.clone();
                node.launchable = Some(named);
            }
            node
        })
        .collect()
}

/// `entry` without the `left_out` labels, which become varying.
fn reduced(entry: &Node, left_out: &BTreeSet<String>) -> Node {
    let mut node = entry.clone();
    let mut varying: BTreeSet<String> = node.varying.iter().cloned().collect();
    for key in left_out {
        if node.labels.remove(key.as_str()).is_some() {
            varying.insert(key.clone());
        }
    }
    node.varying = varying.into_iter().collect();
    node
}

/// About the bytes the entries take in the cluster document, as published
/// (without the labels every launched node has undecided).
fn size(entries: &[Node]) -> usize {
    entries
        .iter()
        .map(|n| {
            let text = serde_json::to_string(n).map_or(0, |t| t.len());
            let defaults: usize = DECIDED_AT_LAUNCH.iter().map(|k| k.len() + 3).sum();
            text.saturating_sub(defaults) + 24
        })
        .sum()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::input::capacity::from_objects;
    use serde_json::json;

    fn pools(count: usize) -> Vec<Node> {
        let mut objects = vec![
            json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "w"}, "spec": {"amiFamily": "Windows2022"}}),
        ];
        objects.extend((0..count).map(|i| {
            json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": format!("win-{i}")},
                "spec": {"template": {"metadata": {"labels": {"team": format!("t{}", i % 3)}},
                    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "w"}}}}})
        }));
        from_objects(&objects)
    }

    #[test]
    fn few_nodepools_are_published_one_by_one() {
        let entries = pools(3);
        let grouped = group(&entries);
        assert_eq!(grouped, entries);
    }

    /// Over the budget the NodePool's name is left out: 300 NodePools of
    /// three teams become three entries, each named by its first.
    #[test]
    fn many_nodepools_merge_within_the_budget_keeping_the_platform() {
        let entries = pools(300);
        let grouped = group(&entries);
        assert_eq!(grouped.len(), 3, "{grouped:?}");
        assert_eq!(grouped[1].name, "NodePool win-1 and 99 more like it");
        assert_eq!(
            grouped[1].launchable.as_deref(),
            Some("NodePool win-1 and 99 more like it")
        );
        assert_eq!(grouped[1].label("team").as_deref(), Some("t1"));
        assert_eq!(
            grouped[1].build().map(|b| b.to_string()).as_deref(),
            Some("10.0.20348")
        );
        assert!(grouped[1]
            .varying
            .iter()
            .any(|k| k == "karpenter.sh/nodepool"));
        assert!(size(&grouped) <= CAPACITY_BUDGET);
        // Tighter, the team goes too: one entry, the platform kept.
        let one = group_within(&entries, size(&grouped) / 2);
        assert_eq!(one.len(), 1, "{one:?}");
        assert_eq!(one[0].name, "NodePool win-0 and 299 more like it");
        assert!(one[0].varying.iter().any(|k| k == "team"));
        assert_eq!(one[0].label("kubernetes.io/os").as_deref(), Some("windows"));
    }
}
