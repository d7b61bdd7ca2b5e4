//! Background audit. Requests are shaped as Kubewarden's audit scanner
//! builds them (kubewarden-controller,
//! `internal/audit-scanner/scanner/admission_request.go`: `CREATE`, the
//! object's UID as the request's, `resource.resource` set to the Kind, no
//! `userInfo`), and judged as its report reads them
//! (`internal/audit-scanner/report/report.go`, `computePolicyResult`:
//! `pass` whenever `allowed` is true, the patch ignored).

use crate::common::*;
use os_placement_core::{
    needs_request, Admission, Code, Decision, Facts, ImageFacts, Node, NodeFacts, Origin, Platform,
    Settings,
};
use serde_json::{json, Value};

/// The audit scanner's request for a live `object`, as the door builds it.
pub fn audit_request(object: &Value) -> Value {
    os_placement_door::audit_request(object)
}

/// What the audit answers for `object` with `facts`.
pub fn audit(object: &Value, settings: &Settings, facts: &Facts) -> Decision {
    let request = audit_request(object);
    let decision = Admission::new(&request, settings).decide(facts);
    assert!(
        decision.patch.is_empty(),
        "an audit never patches: {object}"
    );
    assert!(decision.mutated_object.is_none());
    decision
}

fn node(name: &str, os: &str, build: Option<&str>, arch: &str) -> Node {
    serde_json::from_value(json!({"name": name, "os": os, "windowsBuild": build,
        "architecture": arch}))
    .unwrap()
}

/// An EKS-like cluster: Linux amd64 and arm64, Windows 2019 and 2022.
fn cluster() -> Facts {
    Facts {
        nodes: Some(NodeFacts::Listed(vec![
            node("linux-amd64", "linux", None, "amd64"),
            node("linux-arm64", "linux", None, "arm64"),
            node("win-2019", "windows", Some("10.0.17763"), "amd64"),
            node("win-2022", "windows", Some("10.0.20348"), "amd64"),
        ])),
        ..Facts::default()
    }
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "0b4c"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}})
}

fn daemon_set(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system", "uid": "77aa"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}}})
}

fn cron_job(spec: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "report", "namespace": "shop", "uid": "9f31"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": spec}}}}})
}

/// A Pod of ReplicaSet web-7d4b9 running on `node`.
fn running_pod(spec: Value, node: &str) -> Value {
    let mut spec = spec;
    spec["nodeName"] = json!(node);
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9-x2x7q", "namespace": "shop", "uid": "c0ffee",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7d4b9", "uid": "1", "controller": true}]},
        "spec": spec})
}

/// What the API server and the kubelet add to a live object; an audit
/// answer must not depend on any of it.
fn as_live(mut object: Value) -> Value {
    let metadata = &mut object["metadata"];
    metadata["creationTimestamp"] = Value::Null;
    metadata["resourceVersion"] = json!("4711");
    metadata["generation"] = json!(3);
    metadata["managedFields"] = json!([{"manager": "kubectl", "operation": "Update",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]);
    object["status"] = json!({"phase": "Running", "replicas": 2,
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "c0", "ready": true, "restartCount": 0}]});
    object
}

fn eks_mutating() -> Settings {
    eks_with(json!({"mutate": true}))
}

#[test]
fn the_audit_scanner_is_told_apart_from_the_api_server() {
    let object = deployment(spec_with_images(&[WIN2022]));
    let scanner = audit_request(&object);
    assert_eq!(Origin::of_request(&scanner), Origin::Audit);
    // Go leaves out an empty userInfo's fields; a missing userInfo reads alike.
    let mut no_user_info = scanner.clone();
    no_user_info.as_object_mut().unwrap().remove("userInfo");
    assert_eq!(Origin::of_request(&no_user_info), Origin::Audit);

    // The API server names the plural resource and the user, even anonymous.
    let api_server = os_placement_door::admission_request(
        &object,
        os_placement_core::Operation::Create,
        None,
        None,
    );
    assert_eq!(Origin::of_request(&api_server), Origin::Admission);
    let mut anonymous = scanner.clone();
    anonymous["userInfo"] = json!({"username": "system:anonymous"});
    assert_eq!(Origin::of_request(&anonymous), Origin::Admission);
    let mut plural = scanner.clone();
    plural["resource"]["resource"] = json!("deployments");
    assert_eq!(Origin::of_request(&plural), Origin::Admission);
    // A hand-written request with neither is an admission request.
    let bare = json!({"kind": {"kind": "Deployment"}, "operation": "CREATE", "object": object});
    assert_eq!(Origin::of_request(&bare), Origin::Admission);
}

#[test]
fn misplaced_workloads_fail_the_audit_naming_what_to_add() {
    let settings = eks_mutating();
    let spec = spec_with_images(&[WIN2022]);
    for object in [
        deployment(spec.clone()),
        daemon_set(spec.clone()),
        cron_job(spec.clone()),
    ] {
        let admitted = create(&object, &settings);
        assert!(admitted.accepted && !admitted.patch.is_empty(), "{object}");
        let d = audit(&object, &settings, &Facts::default());
        assert!(!d.accepted, "{object}");
        let codes = codes(&d);
        assert!(codes.contains(&"missing-os-selector"), "{codes:?}");
        assert!(codes.contains(&"missing-windows-toleration"), "{codes:?}");
        let message = message(&d);
        assert!(message.contains("kubernetes.io/os"), "{message}");
        assert!(message.contains("10.0.20348"), "{message}");
        for line in message.lines() {
            assert!(line.contains(": ") && line.contains("; "), "{line}");
        }
    }
}

#[test]
fn placed_workloads_pass_and_live_fields_change_nothing() {
    let settings = eks_mutating();
    for object in [
        deployment(spec_with_images(&[WIN2022])),
        daemon_set(spec_with_images(&[LINUX_IMAGE])),
        cron_job(spec_with_images(&[WIN2019])),
    ] {
        let placed = result_object(&object, &create(&object, &settings));
        let d = audit(&placed, &settings, &Facts::default());
        assert!(d.accepted, "{placed}: {:?}", d.message());
        let live = audit(&as_live(placed.clone()), &settings, &Facts::default());
        assert_eq!(live, d, "live fields changed the answer");
        let misplaced = audit(&as_live(object.clone()), &settings, &Facts::default());
        assert_eq!(misplaced, audit(&object, &settings, &Facts::default()));
    }
}

#[test]
fn admission_answers_are_unchanged_by_the_audit() {
    let settings = eks_mutating();
    let object = deployment(spec_with_images(&[WIN2022]));
    let request = os_placement_door::admission_request(
        &object,
        os_placement_core::Operation::Create,
        None,
        None,
    );
    let through_request = Admission::new(&request, &settings).decide(&Facts::default());
    assert_eq!(through_request, create(&object, &settings));
    assert!(through_request.accepted && !through_request.patch.is_empty());
}

#[test]
fn workloads_no_node_runs_fail_the_audit() {
    // Admission only warns under nodeInventory auto; the audit fails it.
    let settings = eks_mutating();
    let placed = result_object(
        &deployment(spec_with_images(&[WIN2019])),
        &create(&deployment(spec_with_images(&[WIN2019])), &settings),
    );
    let only_2022 = Facts {
        nodes: Some(NodeFacts::Listed(vec![
            node("linux-amd64", "linux", None, "amd64"),
            node("win-2022", "windows", Some("10.0.20348"), "amd64"),
        ])),
        ..Facts::default()
    };
    let admitted =
        os_placement_core::evaluate_with_facts(&review_of(&placed), &settings, &only_2022);
    assert!(admitted.accepted);
    assert!(admitted.warnings.iter().any(|w| w.code == Code::NoNode));
    let d = audit(&placed, &settings, &only_2022);
    assert_eq!(codes(&d), ["no-node"]);
    assert!(message(&d).contains("10.0.17763"), "{}", message(&d));
    // With a node that runs it, it passes.
    assert!(audit(&placed, &settings, &cluster()).accepted);
}

#[test]
fn a_running_pod_on_a_node_that_cannot_run_it_fails_naming_the_node() {
    let settings = eks_mutating();
    let toleration = eks_toleration();
    let windows =
        json!({"containers": [{"name": "c0", "image": WIN2022}], "tolerations": [toleration]});
    for (node, what) in [("linux-amd64", "Linux"), ("win-2019", "Windows 10.0.17763")] {
        let pod = running_pod(windows.clone(), node);
        let d = audit(&pod, &settings, &cluster());
        assert!(!d.accepted, "{node}");
        let v = &d.violations[0];
        assert_eq!(v.code, Code::WrongNode);
        assert_eq!(v.path, "spec.nodeName");
        assert!(
            v.message.contains(&format!("node \"{node}\" ({what}")),
            "{}",
            v.message
        );
        assert!(v.message.contains(WIN2022), "{}", v.message);
        assert!(v.fix.contains("ReplicaSet web-7d4b9"), "{}", v.fix);
        assert!(
            v.fix
                .contains("node.kubernetes.io/windows-build: 10.0.20348"),
            "{}",
            v.fix
        );
        assert_eq!(audit(&as_live(pod.clone()), &settings, &cluster()), d);
    }
    // A Linux image on a Windows node.
    let linux = running_pod(
        json!({"containers": [{"name": "c0", "image": LINUX_IMAGE}]}),
        "win-2022",
    );
    let d = audit(&linux, &settings, &cluster());
    assert_eq!(codes(&d), ["wrong-node"]);
    assert!(d.violations[0].fix.contains("kubernetes.io/os: linux"));
}

#[test]
fn a_running_pod_on_a_node_of_another_architecture_fails() {
    let settings = eks_mutating();
    let image = "registry.corp.example/tools/agent:2.1";
    let facts = Facts {
        images: [(
            image.to_string(),
            ImageFacts::Platforms(vec![Platform {
                os: "linux".into(),
                os_version: None,
                architecture: Some("arm64".into()),
            }]),
        )]
        .into(),
        ..cluster()
    };
    let spec = json!({"containers": [{"name": "c0", "image": image}]});
    let d = audit(&running_pod(spec.clone(), "linux-amd64"), &settings, &facts);
    assert_eq!(codes(&d), ["wrong-node"]);
    assert!(
        d.violations[0].message.contains("arm64"),
        "{}",
        d.violations[0].message
    );
    assert!(d.violations[0].fix.contains("kubernetes.io/arch: arm64"));
    assert!(audit(&running_pod(spec, "linux-arm64"), &settings, &facts).accepted);
}

#[test]
fn a_running_pod_that_fits_its_node_passes_with_a_note_for_its_template() {
    let settings = eks_mutating();
    let spec = json!({"containers": [{"name": "c0", "image": WIN2022}], "tolerations": [eks_toleration()]});
    let pod = running_pod(spec, "win-2022");
    // Admission would add a selector (its mutate: false wording rejects it).
    let strict = eks_with(json!({"mutate": false}));
    let mut unbound = pod.clone();
    unbound["spec"].as_object_mut().unwrap().remove("nodeName");
    assert!(!create(&unbound, &strict).accepted);
    let d = audit(&pod, &settings, &cluster());
    assert!(d.accepted, "{:?}", d.message());
    let note = d
        .warnings
        .iter()
        .find(|w| w.code == Code::BoundToNode)
        .unwrap();
    assert!(
        note.fix.contains("ReplicaSet web-7d4b9's pod template"),
        "{}",
        note.fix
    );
    assert!(note.message.contains("win-2022"), "{}", note.message);
    assert!(note.to_string().len() < 256);
    // One that selects its OS gets no note.
    let mut selected = pod.clone();
    selected["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "windows"});
    let d = audit(&selected, &settings, &cluster());
    assert!(d.accepted && d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn a_running_pod_on_a_node_the_facts_do_not_hold_is_left_alone() {
    let settings = eks_mutating();
    let spec = json!({"containers": [{"name": "c0", "image": WIN2022}]});
    for facts in [Facts::default(), cluster()] {
        let d = audit(&running_pod(spec.clone(), "ip-10-0-9-9"), &settings, &facts);
        assert!(d.accepted, "{:?}", d.message());
        assert!(d.warnings.iter().any(|w| w.code == Code::BoundToNode));
    }
}

#[test]
fn an_audited_pod_asks_for_its_node_and_an_admitted_one_does_not() {
    let settings = settings(json!({"nodeInventory": "off"}));
    let pod = running_pod(spec_with_images(&[WIN2022]), "win-2022");
    let needs = needs_request(&audit_request(&pod), &settings);
    assert!(needs.nodes);
    assert_eq!(needs.node_names, ["win-2022"]);
    let admitted = os_placement_door::admission_request(
        &pod,
        os_placement_core::Operation::Create,
        None,
        None,
    );
    let needs = needs_request(&admitted, &settings);
    assert!(!needs.nodes && needs.node_names.is_empty());
}
