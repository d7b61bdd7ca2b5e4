//! Karpenter NodePools for the cluster-size benchmark: `count` NodePools,
//! each joined to one of five EC2NodeClasses (AL2023, Bottlerocket,
//! Windows 2019, 2022 and 2025), the Windows ones tainted
//! `os=windows:NoSchedule`, each with a team label and an instance-category
//! requirement, as platform teams write them (aws/karpenter-provider-aws
//! `examples/v1`). Every tenth is not ready, so blocked entries are served
//! too. [`nodepools_with_classes`] gives each NodePool an EC2NodeClass of
//! its own, as `e2e/clusters/eks-karpenter` writes them.

use serde_json::{json, Value};

/// The node classes: name, AMI alias, OS.
const CLASSES: [(&str, &str, &str); 5] = [
    ("al2023", "al2023@latest", "linux"),
    ("bottlerocket", "bottlerocket@latest", "linux"),
    ("windows2019", "windows2019@latest", "windows"),
    ("windows2022", "windows2022@latest", "windows"),
    ("windows2025", "windows2025@latest", "windows"),
];

/// `count` NodePools and the EC2NodeClasses they name.
pub fn nodepools(count: usize) -> Vec<Value> {
    let mut objects: Vec<Value> = CLASSES
        .iter()
        .map(|(name, alias, _)| {
            json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
                "metadata": {"name": name}, "spec": {"amiSelectorTerms": [{"alias": alias}]}})
        })
        .collect();
    objects.extend((0..count).map(nodepool));
    objects
}

/// `count` NodePools, each with an EC2NodeClass of its own named after it
/// (a role, an AMI alias, Ready), as a cluster whose teams each own a pool.
pub fn nodepools_with_classes(count: usize) -> Vec<Value> {
    let mut objects = Vec::with_capacity(2 * count);
    for i in 0..count {
        let (_, alias, _) = class_of(i);
        let mut pool = nodepool(i);
        let name = pool.pointer("/metadata/name").cloned().unwrap_or_default();
        if let Some(reference) = pool.pointer_mut("/spec/template/spec/nodeClassRef/name") {
            *reference = name.clone();
        }
        objects.push(pool);
        objects.push(
            json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": name},
            "spec": {"role": "KarpenterNodeRole-shop", "amiSelectorTerms": [{"alias": alias}]},
            "status": {"conditions": [
                {"type": "AMIsReady", "status": "True", "reason": "AMIsReady"},
                {"type": "Ready", "status": "True", "reason": "Ready"}]}}),
        );
    }
    objects
}

/// The node class of the `i`th NodePool.
fn class_of(i: usize) -> (&'static str, &'static str, &'static str) {
    CLASSES
        .iter()
        .cycle()
        .nth(i)
        .copied()
        .unwrap_or(("al2023", "al2023@latest", "linux"))
}

fn nodepool(i: usize) -> Value {
    let (class, _, os) = class_of(i);
    let arch = if os == "linux" && i % 2 == 1 {
        "arm64"
    } else {
        "amd64"
    };
    let mut requirements = vec![
        json!({"key": "kubernetes.io/os", "operator": "In", "values": [os]}),
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}),
        json!({"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]}),
    ];
    if i.is_multiple_of(3) {
        requirements.push(json!({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}));
    }
    let taints = if os == "windows" {
        json!([{"key": "os", "value": "windows", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    let ready = if i % 10 == 9 { "False" } else { "True" };
    json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": format!("{class}-team-{i}")},
        "spec": {"template": {
            "metadata": {"labels": {"team": format!("team-{}", i % 40)}},
            "spec": {"requirements": requirements, "taints": taints,
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": class}}}},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "NodeClassNotReady"}]}})
}
