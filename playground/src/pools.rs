//! The node pools of the page: a list of pools (`{name, os, build, labels,
//! taints}`), Nodes as `kubectl get nodes -o yaml` prints them, and
//! Karpenter NodePools with their node classes as `kubectl get
//! nodepools,ec2nodeclasses -o yaml` prints them (a pool per OS and
//! architecture each launches). They draw the landing picture and, when
//! the page says so, they are the cluster's node inventory: written out as
//! Node objects (what NodePools launch in the facts' own form) and read
//! back by the door's facts reader, the path a Node list from a cluster
//! takes.

use os_placement_core::capacity;
use os_placement_core::{host_answers, pools_from_value, Node as Pool};
use os_placement_door::{read_stream, Data, Node, TextError};
use serde_json::{json, Map, Value};

use crate::input_error::InputError;

/// The labels the kubelet sets on every node, from the node's own fields.
const OS_LABEL: &str = "kubernetes.io/os";
const ARCH_LABEL: &str = "kubernetes.io/arch";
const WINDOWS_BUILD_LABEL: &str = "node.kubernetes.io/windows-build";

const EXPECTED: &str = "node pools are a list of {name, os, build, labels, taints} (or a preset's pools:), or Nodes, NodePools and EC2NodeClasses as kubectl get nodes,nodepools,ec2nodeclasses -o yaml prints them";

/// Reads the pools text; `None` when it holds none or has problems (each
/// pushed to `errors`, input `pools`).
pub fn read_pools(text: &str, errors: &mut Vec<InputError>) -> Option<Vec<Pool>> {
    let mut read = Read::default();
    let before = errors.len();
    for document in read_stream(text) {
        match document {
            Ok(document) => read_document(&document.root, &mut read, errors),
            Err(broken) => errors.push(text_error(broken.error)),
        }
    }
    let mut pools = read.pools;
    pools.extend(capacity::from_objects(&read.capacity));
    (errors.len() == before && !pools.is_empty()).then_some(pools)
}

/// What the pools text holds so far.
#[derive(Default)]
struct Read {
    pools: Vec<Pool>,
    /// NodePools and node classes, read together at the end.
    capacity: Vec<Value>,
}

fn read_document(root: &Node, read: &mut Read, errors: &mut Vec<InputError>) {
    if matches!(root.data, Data::Null) {
        return;
    }
    if root.get("kind").is_some() {
        return read_node_objects(root, "document", read, errors);
    }
    let pools = &mut read.pools;
    // A preset file may carry its pools under `pools:`.
    let list = root.get("pools").unwrap_or(root);
    match pools_from_value(&list.to_json()) {
        Ok(found) => pools.extend(found),
        Err(problems) => errors.extend(problems.into_iter().map(|d| InputError {
            input: "pools",
            at: list.locate(&d.path),
            message: if d.path.is_empty() {
                format!("{}: {EXPECTED}", d.message)
            } else {
                format!("{}: {}", d.path, d.message)
            },
            path: Some(d.path),
        })),
    }
}

/// A Node, a NodePool or node class, or a list of them, read as the
/// policy reads a Node list and the syncer reads NodePools.
fn read_node_objects(node: &Node, what: &str, read: &mut Read, errors: &mut Vec<InputError>) {
    let kind = node.text("kind").unwrap_or("");
    let object = || node.to_json();
    match (kind, node.get("items").map(|items| &items.data)) {
        ("Node", _) => read.pools.push(host_answers::node(&object())),
        _ if capacity::is_capacity_object(&object()) => read.capacity.push(object()),
        (kind, Some(Data::Seq(items))) if kind.ends_with("List") => {
            for (i, item) in items.iter().enumerate() {
                read_node_objects(item, &format!("items[{i}]"), read, errors);
            }
        }
        (kind, _) => errors.push(InputError {
            input: "pools",
            path: None,
            message: format!("{what} is a {kind}: {EXPECTED}"),
            at: node.span.at,
        }),
    }
}

fn text_error(error: TextError) -> InputError {
    InputError {
        input: "pools",
        path: None,
        message: error.message,
        at: error.at,
    }
}

/// The pools as the Node objects a cluster would list: one Node per pool,
/// with the labels the kubelet sets (`kubernetes.io/os`,
/// `kubernetes.io/arch`, `node.kubernetes.io/windows-build`) and its taints.
/// What NodePools launch is no Node: it is left out.
pub fn node_objects(pools: &[Pool]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": pools.iter().filter(|p| p.exists()).map(node_object).collect::<Vec<_>>(),
    })
}

fn node_object(pool: &Pool) -> Value {
    let mut labels: Map<String, Value> = pool
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let from_fields = [
        (OS_LABEL, pool.os.as_ref()),
        (ARCH_LABEL, pool.architecture.as_ref()),
        (WINDOWS_BUILD_LABEL, pool.windows_build.as_ref()),
    ];
    for (key, value) in from_fields {
        if let Some(value) = value {
            labels
                .entry(key)
                .or_insert_with(|| Value::String(value.clone()));
        }
    }
    // What the kubelet reports in nodeInfo, read when the labels are not
    // (the policy lists only nodeInfo under nodeInventory auto): a Windows
    // node's kernelVersion starts with its build.
    let mut node_info = Map::new();
    let fields = [
        ("operatingSystem", pool.label(OS_LABEL)),
        ("architecture", pool.label(ARCH_LABEL)),
        ("kernelVersion", pool.label(WINDOWS_BUILD_LABEL)),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            node_info.insert(key.into(), json!(value));
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": pool.name, "labels": labels},
        "spec": {"taints": pool.taints},
        "status": {"nodeInfo": node_info},
    })
}

/// The facts text with the pools added as the cluster's Nodes: the
/// facts as written, then one more document listing the Nodes, and one
/// with what NodePools launch in the facts' `nodes: {listed: ...}` form
/// (lines of the written facts keep their numbers).
pub fn facts_with_nodes(facts: &str, pools: &[Pool]) -> String {
    let mut nodes = node_objects(pools).to_string();
    let launchable: Vec<&Pool> = pools.iter().filter(|p| !p.exists()).collect();
    if !launchable.is_empty() {
        let listed = json!({"nodes": {"listed": launchable}});
        nodes = format!("{nodes}\n---\n{listed}");
    }
    if facts.trim().is_empty() {
        nodes
    } else {
        format!("{facts}\n---\n{nodes}\n")
    }
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use os_placement_core::{Needs, NodeFacts};
    use os_placement_door::HostFacts;

    const POOLS: &str = "- name: linux\n  os: linux\n  labels: {kubernetes.io/arch: arm64}\n  taints: [{key: cattle.io/os, value: linux, effect: NoSchedule}]\n- name: win\n  os: windows\n  build: \"10.0.20348\"\n";

    /// `kubectl get nodes -o yaml` output, trimmed to what it always carries
    /// (core/v1 Node: the kubelet's well-known labels, taints, nodeInfo).
    const KUBECTL_NODES: &str = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: aks-win22-1\n    labels:\n      kubernetes.io/os: windows\n      kubernetes.io/arch: amd64\n      node.kubernetes.io/windows-build: 10.0.20348\n  spec: {}\n  status:\n    nodeInfo: {operatingSystem: windows, architecture: amd64, kernelVersion: 10.0.20348.2700}\nmetadata:\n  resourceVersion: \"\"\n";

    fn read(text: &str) -> Result<Vec<Pool>, Vec<InputError>> {
        let mut errors = Vec::new();
        let pools = read_pools(text, &mut errors);
        match pools {
            Some(pools) if errors.is_empty() => Ok(pools),
            _ => Err(errors),
        }
    }

    #[test]
    fn pools_and_kubectl_nodes_are_both_read() {
        let pools = read(POOLS).unwrap();
        assert_eq!(pools.len(), 2);
        assert_eq!(
            pools[1].build().map(|b| b.to_string()).as_deref(),
            Some("10.0.20348")
        );
        let nodes = read(KUBECTL_NODES).unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].name, "aks-win22-1");
        assert!(nodes[0].is_windows());
        assert_eq!(nodes[0].architecture.as_deref(), Some("amd64"));
    }

    #[test]
    fn what_is_not_a_pool_or_a_node_is_named_at_its_line() {
        let errors = read("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n")
            .unwrap_err();
        assert_eq!(errors[0].at.line, 4, "{errors:?}");
        assert!(
            errors[0].message.starts_with("items[0] is a Pod"),
            "{errors:?}"
        );
        let errors = read("- name: a\n  os: plan9\n").unwrap_err();
        assert_eq!(
            (errors[0].path.as_deref(), errors[0].at.line),
            (Some("[0].os"), 2)
        );
        let errors = read("just: text\n").unwrap_err();
        assert!(
            errors[0].message.contains("kubectl get nodes"),
            "{errors:?}"
        );
        assert_eq!(read("").unwrap_err(), Vec::new(), "no pools, no problem");
    }

    /// The pools, as Nodes, read back through the door's facts reader (as
    /// the policy reads a Node list) are the same nodes.
    #[test]
    fn pools_as_nodes_read_back_as_the_same_nodes() {
        let pools = read(POOLS).unwrap();
        let facts = HostFacts::read(&facts_with_nodes("", &pools)).unwrap();
        let answer = facts.answer(&Needs {
            nodes: true,
            ..Needs::default()
        });
        let Some(NodeFacts::Listed(nodes)) = answer.nodes else {
            panic!("{answer:?}")
        };
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].label(ARCH_LABEL).as_deref(), Some("arm64"));
        assert_eq!(nodes[0].taints, pools[0].taints);
        assert!(nodes[1].is_windows());
        assert_eq!(nodes[1].build(), pools[1].build());
        // nodeInfo alone (what the policy lists under nodeInventory auto)
        // says the same OS, build and architecture.
        let objects = node_objects(&pools);
        for (object, pool) in objects["items"].as_array().unwrap().iter().zip(&pools) {
            let info_only = json!({"metadata": {"name": object["metadata"]["name"]},
                "status": object["status"]});
            let node = host_answers::node(&info_only);
            assert_eq!(
                (node.is_windows(), node.build(), node.label(ARCH_LABEL)),
                (pool.is_windows(), pool.build(), pool.label(ARCH_LABEL)),
                "{info_only}"
            );
        }
        // Written facts keep their lines; the Nodes come after them.
        let text = facts_with_nodes("runtimeClasses:\n  gpu: missing\n", &pools);
        assert!(
            text.starts_with("runtimeClasses:\n  gpu: missing\n\n---\n"),
            "{text}"
        );
    }

    /// `kubectl get nodepools,ec2nodeclasses -o yaml` (trimmed as in
    /// aws/karpenter-provider-aws examples/v1/windows-2022.yaml).
    const NODEPOOLS: &str = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: windows2022}\n  spec:\n    template:\n      spec:\n        requirements:\n        - {key: kubernetes.io/os, operator: In, values: [windows]}\n        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: windows2022}\n- apiVersion: karpenter.k8s.aws/v1\n  kind: EC2NodeClass\n  metadata: {name: windows2022}\n  spec:\n    amiSelectorTerms: [{alias: windows2022@latest}]\n";

    /// NodePools are pools of the nodes they launch, and reach the facts
    /// as launchable entries, not as Nodes.
    #[test]
    fn nodepools_are_pools_of_what_they_launch() {
        let pools = read(&format!("{KUBECTL_NODES}---\n{NODEPOOLS}")).unwrap();
        assert_eq!(pools.len(), 2);
        assert_eq!(pools[1].name, "NodePool windows2022");
        assert_eq!(
            pools[1].build().map(|b| b.to_string()).as_deref(),
            Some("10.0.20348")
        );
        assert_eq!(node_objects(&pools)["items"].as_array().unwrap().len(), 1);
        let facts = HostFacts::read(&facts_with_nodes("", &pools)).unwrap();
        let answer = facts.answer(&Needs {
            nodes: true,
            ..Needs::default()
        });
        let Some(NodeFacts::Listed(nodes)) = answer.nodes else {
            panic!("{answer:?}")
        };
        assert_eq!(nodes.len(), 2);
        assert!(nodes[0].exists());
        assert_eq!(nodes[1], pools[1]);
        // Negative: a NodePool whose class is missing launches nothing.
        let orphan = NODEPOOLS
            .split("- apiVersion: karpenter.k8s.aws/v1")
            .next()
            .unwrap();
        let pools = read(orphan).unwrap();
        assert_eq!(
            pools[0].blocked.as_deref(),
            Some("its EC2NodeClass windows2022 does not exist")
        );
    }
}
