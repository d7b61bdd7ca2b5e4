//! The serialisable surface adapters (playground, CLI) rely on.

use crate::common::*;
use os_placement_core::{evaluate_request, Operation, Settings};
use serde_json::{json, Value};

fn windows_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "iis"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "iis", "image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"}]}}}})
}

#[test]
fn decision_serialises_with_codes_patch_and_signals() {
    let d = create(&windows_deployment(), &eks());
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["accepted"], true);
    let ops = v["patch"].as_array().unwrap();
    assert!(!ops.is_empty());
    assert!(ops
        .iter()
        .all(|op| op["op"] == "add" && op["path"].is_string()));
    assert!(v["mutatedObject"].is_object());
    let signal = &v["signals"][0];
    assert_eq!(signal["source"], "image");
    assert_eq!(signal["path"], "spec.template.spec.containers[0].image");
    assert_eq!(signal["os"], "windows");
    assert_eq!(signal["builds"], json!(["10.0.17763"]));
    assert_eq!(signal["container"], "iis");
}

#[test]
fn violations_serialise_with_kebab_case_codes() {
    let mut object = windows_deployment();
    object["spec"]["template"]["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let v = serde_json::to_value(create(&object, &eks())).unwrap();
    assert_eq!(v["accepted"], false);
    assert_eq!(v["violations"][0]["code"], "os-conflict");
    assert!(v["violations"][0]["fix"]
        .as_str()
        .is_some_and(|f| !f.is_empty()));
    assert_eq!(v["signals"].as_array().map(Vec::len), Some(2));
}

#[test]
fn operation_round_trips_as_the_api_spells_it() {
    for (text, op) in [
        ("CREATE", Operation::Create),
        ("CONNECT", Operation::Connect),
    ] {
        assert_eq!(text.parse::<Operation>().unwrap(), op);
        assert_eq!(serde_json::to_value(op).unwrap(), text);
    }
    let problem = "create".parse::<Operation>().unwrap_err();
    assert_eq!(problem.path, "operation");
}

#[test]
fn unknown_operation_in_a_request_is_a_rejection_naming_it() {
    let request = json!({"kind": {"kind": "Deployment"}, "operation": "PATCH",
        "object": windows_deployment()});
    let d = evaluate_request(&request, &Settings::default());
    assert!(!d.accepted);
    assert_eq!(d.violations[0].path, "operation");
    assert!(d.violations[0].message.contains("PATCH"));
}

#[test]
fn settings_problems_are_diagnostics_with_paths_from_the_root() {
    let err = Settings::from_value(&json!({"windowsTaint": {"key": "os", "effect": "Sometimes"}}))
        .unwrap_err();
    let v = serde_json::to_value(&err).unwrap();
    let paths: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert!(paths.contains(&"windowsTaint.effect"), "{paths:?}");
    assert!(v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["code"] == "invalid-setting"));
}

#[test]
fn every_kind_names_its_api_group() {
    use os_placement_core::Kind;
    for (kind, group) in [
        ("Pod", ""),
        ("ReplicationController", ""),
        ("Deployment", "apps"),
        ("ReplicaSet", "apps"),
        ("StatefulSet", "apps"),
        ("DaemonSet", "apps"),
        ("Job", "batch"),
        ("CronJob", "batch"),
    ] {
        assert_eq!(Kind::parse(kind).unwrap().api_group(), group, "{kind}");
    }
}

/// The owning adapter's path: the patch applied once to the object it takes
/// out of the request gives the same decision as the copying one.
#[test]
fn a_patch_applied_to_the_owned_object_equals_the_copied_one() {
    use os_placement_core::{Admission, Facts};
    let settings = eks();
    let mut patched = 0;
    for object in [
        windows_deployment(),
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web"}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}),
    ] {
        let mut request =
            os_placement_door::admission_request(&object, Operation::Create, None, None);
        let copied = Admission::new(&request, &settings).decide(&Facts::default());
        let unapplied = Admission::new(&request, &settings).decide_unapplied(&Facts::default());
        assert_eq!(unapplied.mutated_object, None);
        assert_eq!(unapplied.patch, copied.patch);
        assert_eq!(unapplied.patch_pending(), copied.mutated_object.is_some());
        let owned = request
            .get_mut("object")
            .map(Value::take)
            .unwrap_or_default();
        assert_eq!(unapplied.apply_to(owned), copied);
        patched += usize::from(copied.mutated_object.is_some());
    }
    // Both ways are exercised: the Deployment is patched, the Pod is not.
    assert_eq!(patched, 1);
}

#[test]
fn a_patch_the_object_cannot_take_is_a_rejection_naming_its_path() {
    use os_placement_core::{Admission, Facts};
    let settings = eks();
    let request =
        os_placement_door::admission_request(&windows_deployment(), Operation::Create, None, None);
    let decision = Admission::new(&request, &settings).decide_unapplied(&Facts::default());
    assert!(decision.accepted && !decision.patch.is_empty());
    let rejected = decision.apply_to(json!({"kind": "Deployment"}));
    assert!(!rejected.accepted);
    assert_eq!(rejected.violations[0].code.to_string(), "malformed-object");
    assert!(
        rejected.violations[0]
            .path
            .starts_with("/spec/template/spec/"),
        "{:?}",
        rejected.violations
    );
    assert_eq!(rejected.mutated_object, None);
}
