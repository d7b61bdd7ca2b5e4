//! `linuxTaint`: clusters whose Linux nodes are tainted, as Rancher/RKE2
//! mixed clusters are (`cattle.io/os=linux:NoSchedule`, Windows nodes
//! untainted; Rancher's documentation on Windows clusters, and
//! NetApp/trident#542). Tolerations are matched as the scheduler's
//! TaintToleration plugin matches them (`corev1.Toleration.ToleratesTaint`).

use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::{Facts, Node, NodeFacts, Settings, Taint};
use serde_json::{json, Value};

fn rke2() -> Settings {
    settings(
        json!({"linuxTaint": {"key": "cattle.io/os", "value": "linux", "effect": "NoSchedule"}}),
    )
}

fn rke2_toleration() -> Value {
    json!({"key": "cattle.io/os", "operator": "Equal", "value": "linux", "effect": "NoSchedule"})
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": spec}}})
}

#[test]
fn a_linux_workload_gets_the_linux_selector_and_the_linux_toleration() {
    let object = deployment(spec_with_images(&[LINUX_IMAGE]));
    let d = create(&object, &rke2());
    assert!(d.accepted, "{}", message(&d));
    let spec = &result_object(&object, &d)["spec"]["template"]["spec"];
    assert_eq!(spec["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(spec["tolerations"], json!([rke2_toleration()]));
}

#[test]
fn a_windows_pod_never_gets_the_linux_toleration() {
    let d = create(&pod(spec_with_images(&[WIN2022])), &rke2());
    assert!(d.accepted, "{}", message(&d));
    let spec = &result_object(&pod(spec_with_images(&[WIN2022])), &d)["spec"];
    assert_eq!(spec["nodeSelector"]["kubernetes.io/os"], "windows");
    assert_eq!(
        spec["nodeSelector"]["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
    assert!(spec.get("tolerations").is_none(), "{spec}");
}

/// A tolerate-all DaemonSet (flannel, node-local-dns) already tolerates the
/// Linux taint: it gets the Linux selector and no second toleration.
#[test]
fn a_tolerate_all_daemonset_lands_on_linux_without_a_duplicate_toleration() {
    let object = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "agent", "image": LINUX_IMAGE}]}}}});
    let d = create(&object, &rke2());
    assert!(d.accepted, "{}", message(&d));
    let spec = &result_object(&object, &d)["spec"]["template"]["spec"];
    assert_eq!(spec["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(spec["tolerations"], json!([{"operator": "Exists"}]));
}

#[test]
fn a_toleration_the_user_wrote_is_kept_and_not_repeated() {
    for own in [
        json!({"key": "cattle.io/os", "operator": "Exists"}),
        rke2_toleration(),
        json!({"key": "cattle.io/os", "value": "linux"}),
    ] {
        let object = pod(with_spec_fields(json!({"tolerations": [own.clone()]})));
        let d = create(&object, &rke2());
        assert!(d.accepted, "{}", message(&d));
        assert_eq!(
            result_object(&object, &d)["spec"]["tolerations"],
            json!([own])
        );
    }
    // A toleration of another value does not tolerate the taint: one is added.
    let other = json!({"key": "cattle.io/os", "value": "windows"});
    let object = pod(with_spec_fields(json!({"tolerations": [other.clone()]})));
    let d = create(&object, &rke2());
    assert_eq!(
        result_object(&object, &d)["spec"]["tolerations"],
        json!([other, rke2_toleration()])
    );
}

fn with_spec_fields(extra: Value) -> Value {
    let mut spec = spec_with_images(&[LINUX_IMAGE]);
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    spec
}

#[test]
fn validate_mode_names_the_missing_linux_toleration() {
    let strict = settings(json!({"mutate": false,
        "linuxTaint": {"key": "cattle.io/os", "value": "linux", "effect": "NoSchedule"}}));
    let d = create(&pod(spec_with_images(&[LINUX_IMAGE])), &strict);
    assert_rejected_with(&d, "missing-linux-toleration");
    let found = d
        .violations
        .iter()
        .find(|v| v.code.as_str() == "missing-linux-toleration")
        .unwrap();
    assert_eq!(found.path, "spec.tolerations");
    assert!(found.fix.contains("cattle.io/os"), "{found}");
    // Tolerated and selected: accepted as it is.
    let placed = pod(with_spec_fields(json!({
        "tolerations": [rke2_toleration()], "nodeSelector": {"kubernetes.io/os": "linux"}})));
    let d = create(&placed, &strict);
    assert!(d.accepted && d.patch.is_empty(), "{}", message(&d));
}

/// The taint manager evicts a pod whose toleration of a NoExecute taint
/// has tolerationSeconds (pkg/controller/tainteviction).
#[test]
fn an_expiring_toleration_of_a_no_execute_linux_taint_is_rejected() {
    let s = settings(
        json!({"linuxTaint": {"key": "cattle.io/os", "value": "linux", "effect": "NoExecute"}}),
    );
    let expiring = json!({"key": "cattle.io/os", "operator": "Exists", "effect": "NoExecute",
        "tolerationSeconds": 60});
    let d = create(
        &pod(with_spec_fields(json!({"tolerations": [expiring]}))),
        &s,
    );
    assert_rejected_with(&d, "toleration-expires");
    assert_eq!(
        d.violations[0].path,
        "spec.tolerations[0].tolerationSeconds"
    );
    assert!(
        d.violations[0].message.contains("Linux node"),
        "{}",
        message(&d)
    );
}

fn node(name: &str, os: &str, taints: &[(&str, &str)]) -> Node {
    Node {
        name: name.into(),
        os: Some(os.into()),
        labels: [("kubernetes.io/os".to_string(), os.to_string())].into(),
        taints: taints
            .iter()
            .map(|(k, v)| Taint {
                key: (*k).into(),
                value: (*v).into(),
                effect: "NoSchedule".into(),
            })
            .collect(),
        ..Node::default()
    }
}

#[test]
fn from_nodes_reads_the_taint_every_linux_node_carries_and_no_windows_node_does() {
    let s = settings(json!({"linuxTaint": "fromNodes"}));
    let nodes = vec![
        node("l1", "linux", &[("cattle.io/os", "linux"), ("gpu", "yes")]),
        node("l2", "linux", &[("cattle.io/os", "linux")]),
        node("w1", "windows", &[]),
    ];
    let facts = Facts {
        nodes: Some(NodeFacts::Listed(nodes)),
        ..Facts::default()
    };
    let object = pod(spec_with_images(&[LINUX_IMAGE]));
    let d = with_facts(&object, &s, &facts);
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        result_object(&object, &d)["spec"]["tolerations"],
        json!([rke2_toleration()])
    );
    // A taint the Windows nodes share is not the Linux nodes' own.
    let shared = vec![
        node("l1", "linux", &[("cattle.io/os", "linux")]),
        node("w1", "windows", &[("cattle.io/os", "linux")]),
    ];
    let facts = Facts {
        nodes: Some(NodeFacts::Listed(shared)),
        ..Facts::default()
    };
    let d = with_facts(&object, &s, &facts);
    assert!(result_object(&object, &d)["spec"]
        .get("tolerations")
        .is_none());
}

#[test]
fn without_a_linux_taint_nothing_changes() {
    let object = deployment(spec_with_images(&[LINUX_IMAGE]));
    let d = create(&object, &Settings::default());
    let spec = &result_object(&object, &d)["spec"]["template"]["spec"];
    assert_eq!(spec["nodeSelector"]["kubernetes.io/os"], "linux");
    assert!(spec.get("tolerations").is_none(), "{spec}");
}
