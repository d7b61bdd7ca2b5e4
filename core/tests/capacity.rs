//! Capacity that appears on demand: Karpenter NodePools (read with
//! `capacity::from_objects`) and the settings' node templates count as
//! nodes in the node inventory. Fixtures under `fixtures/karpenter/` are
//! shaped as aws/karpenter-provider-aws `examples/v1`.

use crate::common::*;
use os_placement_core::{
    capacity, Decision, Facts, ImageFacts, Node, NodeFacts, Platform, Settings,
};
use serde_json::{json, Value};

use crate::common::with_facts as with;

const WINDOWS_2022: &str = include_str!("fixtures/karpenter/windows-2022.yaml");
const WINDOWS_2025_NOT_READY: &str = include_str!("fixtures/karpenter/windows-2025-not-ready.yaml");
const MULTIPLE_ARCH: &str = include_str!("fixtures/karpenter/multiple-arch.yaml");
const AUTO_MODE: &str = include_str!("fixtures/karpenter/auto-mode.yaml");

const IIS_2022: &str = "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022";
const WIN2025: &str = "mcr.microsoft.com/windows/servercore:ltsc2025";

/// The objects of a multi-document YAML fixture.
fn objects(texts: &[&str]) -> Vec<Value> {
    texts
        .iter()
        .flat_map(|text| os_placement_door::read_stream(text))
        .map(|document| document.expect("a readable fixture").root.to_json())
        .collect()
}

/// A Linux amd64 node as the kubelet labels it.
fn linux_node(name: &str) -> Node {
    Node {
        name: name.into(),
        os: Some("linux".into()),
        architecture: Some("amd64".into()),
        labels: [
            ("kubernetes.io/os".to_string(), "linux".to_string()),
            ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        ]
        .into(),
        ..Node::default()
    }
}

/// The cluster: `nodes` that exist and the NodePools of `fixtures`.
fn cluster(nodes: Vec<Node>, fixtures: &[&str]) -> Facts {
    let mut all = nodes;
    all.extend(capacity::from_objects(&objects(fixtures)));
    Facts {
        nodes: Some(NodeFacts::Listed(all)),
        ..Facts::default()
    }
}

/// An EKS cluster whose only nodes are Linux: Windows comes from NodePools.
fn linux_only(fixtures: &[&str]) -> Facts {
    cluster(vec![linux_node("ip-10-0-1-5")], fixtures)
}

fn deployment(images: &[&str]) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "iis"},
        "spec": {"selector": {}, "template": {"metadata": {}, "spec": spec_with_images(images)}}})
}

fn no_node_warning(d: &Decision) -> Option<String> {
    d.warning_lines()
        .into_iter()
        .find(|w| w.contains("no node"))
}

/// The node labels the decision's patch makes the pod require.
fn required_label_keys(object: &Value, d: &Decision) -> Vec<String> {
    let after = result_object(object, d);
    let spec = &after["spec"]["template"]["spec"];
    let spec = if spec.is_null() { &after["spec"] } else { spec };
    let mut keys: Vec<String> = spec["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .collect();
    let terms = &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    for term in terms.as_array().into_iter().flatten() {
        for e in term["matchExpressions"].as_array().into_iter().flatten() {
            keys.push(e["key"].as_str().unwrap_or_default().to_string());
        }
    }
    keys
}

/// The labels Karpenter satisfies on every NodePool it launches for (core
/// `pkg/apis/v1/labels.go`, `WellKnownLabels`; aws `pkg/apis/v1/labels.go`
/// adds the Windows build): the only ones the policy may add.
fn assert_well_known_only(object: &Value, d: &Decision) {
    let well_known = [
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "node.kubernetes.io/windows-build",
    ];
    for key in required_label_keys(object, d) {
        assert!(well_known.contains(&key.as_str()), "the policy added {key}");
    }
}

/// aws `examples/v1/windows-2022.yaml` with aws
/// `pkg/providers/instancetype/types.go` (a Windows AMI family launches
/// Windows with its build): an ltsc2022 Deployment on a cluster whose only
/// nodes are Linux is one Karpenter places, in every mode.
#[test]
fn a_ready_windows_nodepool_runs_a_windows_deployment_in_every_mode() {
    let object = deployment(&[IIS_2022]);
    let facts = linux_only(&[WINDOWS_2022]);
    for mode in ["auto", "warn", "reject"] {
        let settings = eks_with(json!({"nodeInventory": mode}));
        let d = with(&object, &settings, &facts);
        assert!(d.accepted, "{mode}: {}", message(&d));
        assert_eq!(no_node_warning(&d), None, "{mode}");
        let selector = &result_object(&object, &d)["spec"]["template"]["spec"]["nodeSelector"];
        assert_eq!(selector["kubernetes.io/os"], "windows", "{mode}");
        assert_well_known_only(&object, &d);
    }
    // Negative: without the NodePool, auto warns and reject refuses.
    let facts = linux_only(&[]);
    let d = with(&object, &eks(), &facts);
    let warning = no_node_warning(&d).expect("a no-node warning");
    assert!(
        warning.contains("the cluster has only Linux nodes"),
        "{warning}"
    );
    assert!(!warning.contains("launches one"), "{warning}");
    let d = with(
        &object,
        &eks_with(json!({"nodeInventory": "reject"})),
        &facts,
    );
    assert_rejected_with(&d, "no-node");
}

/// aws `pkg/providers/amifamily/windows.go`, `pkg/apis/v1/ec2nodeclass_status.go`
/// (`AMIsReady`): a windows2025 NodePool whose class finds no AMI launches
/// nothing, and the message says which NodePool and why.
#[test]
fn a_nodepool_whose_amis_are_not_ready_launches_nothing_and_is_named() {
    let object = deployment(&[WIN2025]);
    let facts = linux_only(&[WINDOWS_2022, WINDOWS_2025_NOT_READY]);
    let d = with(&object, &eks(), &facts);
    assert!(d.accepted, "{}", message(&d));
    let warning = no_node_warning(&d).expect("a no-node warning");
    assert!(
        warning.contains("NodePool windows2025: its EC2NodeClass windows2025 reports AMIsReady is False (AMINotFound)"),
        "{warning}"
    );
    assert!(warning.chars().count() <= 256, "{warning}");
    let d = with(
        &object,
        &eks_with(json!({"nodeInventory": "reject"})),
        &facts,
    );
    assert_rejected_with(&d, "no-node");
    assert!(
        message(&d).contains("no NodePool or node template launches one"),
        "{}",
        message(&d)
    );
    // Negative: the same NodePool with its AMIs found launches 2025 nodes.
    let ready = WINDOWS_2025_NOT_READY.replace("status: \"False\"", "status: \"True\"");
    let facts = linux_only(&[&ready]);
    let d = with(
        &object,
        &eks_with(json!({"nodeInventory": "reject"})),
        &facts,
    );
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(no_node_warning(&d), None);
}

/// aws `examples/v1/multiple-arch.yaml`: with `pinArchitecture`, an arm64
/// image on a cluster with no arm64 node yet runs on the arm64 NodePool's.
#[test]
fn an_arm64_nodepool_runs_an_arm64_image_before_any_arm64_node_exists() {
    let image = "registry.corp.example/edge/agent:1.0";
    let arm64 = Platform {
        os: "linux".into(),
        os_version: None,
        architecture: Some("arm64".into()),
    };
    let mut facts = linux_only(&[MULTIPLE_ARCH]);
    facts.images = [(image.to_string(), ImageFacts::Platforms(vec![arm64]))].into();
    let object = deployment(&[image]);
    let settings = eks_with(json!({"pinArchitecture": true}));
    let d = with(&object, &settings, &facts);
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(no_node_warning(&d), None);
    let spec = &result_object(&object, &d)["spec"]["template"]["spec"];
    assert_eq!(
        spec["nodeSelector"]["kubernetes.io/arch"], "arm64",
        "{spec}"
    );
    assert_well_known_only(&object, &d);
    // Negative: with only the amd64 NodePool, no node will run it.
    let amd64_only: Vec<Value> = objects(&[MULTIPLE_ARCH])
        .into_iter()
        .filter(|o| o["metadata"]["name"] != "arm64")
        .collect();
    let mut nodes = vec![linux_node("ip-10-0-1-5")];
    nodes.extend(capacity::from_objects(&amd64_only));
    facts.nodes = Some(NodeFacts::Listed(nodes));
    let d = with(&object, &settings, &facts);
    let warning = no_node_warning(&d).expect("a no-node warning");
    assert!(warning.contains("architecture arm64"), "{warning}");
    assert!(
        warning.contains("no NodePool or node template launches one"),
        "{warning}"
    );
}

/// EKS Auto Mode (EKS user guide, "Create a Node Pool"): its NodeClass
/// launches Linux only. A cluster with no node at all yet runs a Linux pod
/// and not a Windows one.
#[test]
fn auto_mode_launches_linux_and_never_windows() {
    let facts = cluster(Vec::new(), &[AUTO_MODE]);
    let reject = settings(json!({"nodeInventory": "reject"}));
    let linux = pod(json!({"containers": [{"name": "c", "image": LINUX_IMAGE}],
        "nodeSelector": {"kubernetes.io/os": "linux"}}));
    let d = with(&linux, &reject, &facts);
    assert!(d.accepted, "{}", message(&d));
    let windows = pod(spec_with_images(&[WIN2022]));
    let d = with(&windows, &reject, &facts);
    assert_rejected_with(&d, "no-node");
    assert!(
        message(&d).contains("no NodePool or node template launches one"),
        "{}",
        message(&d)
    );
}

/// core `pkg/scheduling/requirements.go`, `Compatible`: a pod requiring a
/// label its NodePool does not define is one Karpenter does not launch
/// for, unless the label is well known (zone, instance type: decided at
/// launch) or the NodePool's template carries it.
#[test]
fn a_selector_on_a_label_no_nodepool_defines_finds_no_node() {
    let warn = eks_with(json!({"nodeInventory": "warn"}));
    let facts = linux_only(&[WINDOWS_2022]);
    let with_selector = |key: &str, value: &str| {
        let mut object = deployment(&[IIS_2022]);
        object["spec"]["template"]["spec"]["nodeSelector"] = json!({ key: value });
        object
    };
    let object = with_selector("team", "payments");
    let d = with(&object, &warn, &facts);
    let warning = no_node_warning(&d).expect("a no-node warning");
    assert!(warning.contains("nodeSelector"), "{warning}");
    assert!(
        warning.contains("NodePool windows2022 (none yet)"),
        "{warning}"
    );
    // Negative: well-known labels Karpenter decides at launch.
    for (key, value) in [
        ("topology.kubernetes.io/zone", "eu-west-1a"),
        ("karpenter.k8s.aws/instance-category", "m"),
        ("karpenter.sh/capacity-type", "on-demand"),
        ("karpenter.sh/nodepool", "windows2022"),
    ] {
        let d = with(&with_selector(key, value), &warn, &facts);
        assert_eq!(no_node_warning(&d), None, "{key}");
    }
    // Negative: the NodePool's template labels define it.
    let labelled = WINDOWS_2022.replacen(
        "  template:\n    spec:",
        "  template:\n    metadata:\n      labels:\n        team: payments\n    spec:",
        1,
    );
    let d = with(&object, &warn, &linux_only(&[&labelled]));
    assert_eq!(no_node_warning(&d), None);
}

/// core `pkg/apis/v1/nodepool.go` (`taints`, `startupTaints`) and
/// `nodeclaim.go` `CanAdd` (the pod must tolerate the template's taints):
/// template taints count, startup taints do not.
#[test]
fn template_taints_count_and_startup_taints_do_not() {
    let tainted = WINDOWS_2022.replacen(
        "      nodeClassRef:",
        "      taints:\n        - key: os\n          value: windows\n          effect: NoSchedule\n      nodeClassRef:",
        1,
    );
    let object = deployment(&[IIS_2022]);
    let reject = settings(json!({"nodeInventory": "reject"}));
    let d = with(&object, &reject, &linux_only(&[&tainted]));
    assert_rejected_with(&d, "no-node");
    assert!(
        message(&d).contains("os=windows:NoSchedule"),
        "{}",
        message(&d)
    );
    // The taint read from the nodes (a NodePool's count) is tolerated.
    let from_nodes = settings(json!({"nodeInventory": "reject", "windowsTaint": "fromNodes"}));
    let d = with(&object, &from_nodes, &linux_only(&[&tainted]));
    assert!(d.accepted, "{}", message(&d));
    let tolerations = &result_object(&object, &d)["spec"]["template"]["spec"]["tolerations"];
    assert_eq!(tolerations[0]["key"], "os", "{tolerations}");
    // Negative: a startup taint is removed before pods schedule.
    let startup = WINDOWS_2022.replacen(
        "      nodeClassRef:",
        "      startupTaints:\n        - key: os\n          value: windows\n          effect: NoSchedule\n      nodeClassRef:",
        1,
    );
    let d = with(&object, &reject, &linux_only(&[&startup]));
    assert!(d.accepted, "{}", message(&d));
}

/// Node groups scaled to zero, which no object shows, are declared in the
/// settings and count like NodePools.
#[test]
fn node_templates_count_like_nodepools() {
    let object = deployment(&[IIS_2022]);
    let templates = |build: &str| {
        eks_with(json!({"nodeInventory": "reject", "nodeTemplates": [{
            "name": "windows-ng", "os": "windows", "windowsBuild": build, "architecture": "amd64",
            "labels": {"eks.amazonaws.com/nodegroup": "windows-ng"},
            "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]}]}))
    };
    let d = with(&object, &templates("10.0.20348"), &linux_only(&[]));
    assert!(d.accepted, "{}", message(&d));
    assert_well_known_only(&object, &d);
    // Negative: a 2019 node group does not run a 2022 image, and is named.
    let d = with(&object, &templates("10.0.17763"), &linux_only(&[]));
    assert_rejected_with(&d, "no-node");
    assert!(
        message(&d).contains("no NodePool or node template launches one"),
        "{}",
        message(&d)
    );
    // Negative: templates do not stand for nodes that were never read.
    let unread = Facts::default();
    let d = with(&object, &templates("10.0.17763"), &unread);
    assert!(d.accepted, "{}", message(&d));
}

/// A pin on the Windows build is chosen among the builds nodes run and
/// NodePools launch: with a Windows Server 2019 node and a ready windows2025
/// NodePool, an ltsc2022 image goes to the 2025 nodes (as
/// `facts::pin_is_chosen_among_builds_that_exist` with nodes of both).
#[test]
fn build_pins_count_the_builds_nodepools_launch() {
    let mut win2019 = linux_node("win-2019");
    win2019.os = Some("windows".into());
    win2019.windows_build = Some("10.0.17763".into());
    win2019.labels = [
        ("kubernetes.io/os".to_string(), "windows".to_string()),
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        (
            "node.kubernetes.io/windows-build".to_string(),
            "10.0.17763".to_string(),
        ),
    ]
    .into();
    let ready = WINDOWS_2025_NOT_READY.replace("status: \"False\"", "status: \"True\"");
    let object = deployment(&[WIN2022]);
    let warn: Settings = eks_with(json!({"nodeInventory": "warn"}));
    let d = with(&object, &warn, &cluster(vec![win2019.clone()], &[&ready]));
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(no_node_warning(&d), None);
    let spec = &result_object(&object, &d)["spec"]["template"]["spec"];
    assert_eq!(
        spec["nodeSelector"]["node.kubernetes.io/windows-build"], "10.0.26100",
        "{spec}"
    );
    assert_well_known_only(&object, &d);
    // Negative: the NodePool not ready, no node runs it and the warning says why.
    let d = with(
        &object,
        &warn,
        &cluster(vec![win2019], &[WINDOWS_2025_NOT_READY]),
    );
    let warning = no_node_warning(&d).expect("a no-node warning");
    assert!(warning.contains("NodePool windows2025"), "{warning}");
}

/// A node still to be launched has a name no pod names: a pod bound by
/// `matchFields` to an existing Linux node (as the DaemonSet controller
/// binds its pods, `pkg/controller/daemon/util`) is not placed by a
/// Windows NodePool.
#[test]
fn a_pod_bound_to_a_named_node_is_not_placed_by_a_nodepool() {
    let warn = eks_with(json!({"nodeInventory": "warn"}));
    let facts = linux_only(&[WINDOWS_2022]);
    let bound = |name: &str| {
        let mut object = pod(spec_with_images(&[IIS_2022]));
        object["spec"]["affinity"] = required_affinity(json!([]));
        object["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = json!([{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}]}]);
        object
    };
    let d = with(&bound("ip-10-0-1-5"), &warn, &facts);
    let warning = no_node_warning(&d).expect("a no-node warning");
    assert!(
        warning.contains("matches the pod's nodeSelector and required node affinity"),
        "{warning}"
    );
    // Negative: the NodePool places the same pod unbound.
    let d = with(&pod(spec_with_images(&[IIS_2022])), &warn, &facts);
    assert_eq!(no_node_warning(&d), None);
}

/// Every place of every fixture object, replaced by a value of each other
/// JSON type in turn: reading never panics, and neither does deciding a
/// pod with what was read (a trap under `failurePolicy: Fail` would block
/// pod creation).
#[test]
fn no_nodepool_shape_panics() {
    fn places(value: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match value {
            Value::Object(map) => map.iter().for_each(|(k, v)| {
                places(
                    v,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                )
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .for_each(|(i, v)| places(v, format!("{at}/{i}"), out)),
            _ => {}
        }
    }
    let all = objects(&[
        WINDOWS_2022,
        WINDOWS_2025_NOT_READY,
        MULTIPLE_ARCH,
        AUTO_MODE,
    ]);
    let junk = [
        json!(null),
        json!(7),
        json!("x"),
        json!([1, {}]),
        json!({"a": []}),
        json!(true),
    ];
    let object = deployment(&[IIS_2022]);
    let reject = eks_with(json!({"nodeInventory": "reject"}));
    let mut tried = 0;
    for (i, target) in all.iter().enumerate() {
        let mut at = Vec::new();
        places(target, String::new(), &mut at);
        for place in at.iter().filter(|p| !p.is_empty()) {
            for value in &junk {
                let mut changed = all.clone();
                *changed[i].pointer_mut(place).unwrap() = value.clone();
                let nodes = capacity::from_objects(&changed);
                let facts = cluster(vec![linux_node("n")], &[]);
                let mut facts = facts;
                if let Some(NodeFacts::Listed(listed)) = &mut facts.nodes {
                    listed.extend(nodes);
                }
                let _ = with(&object, &reject, &facts);
                tried += 1;
            }
        }
    }
    assert!(tried > 500, "{tried} shapes tried");
}
