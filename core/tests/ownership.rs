//! Own what you add: a build pin the policy added at CREATE moves with the
//! image on a later UPDATE; a value the user wrote is never changed.

use crate::common::*;
use os_placement_core::Decision;
use os_placement_core::ADDED_ANNOTATION;
use serde_json::{json, Value};

const PIN: &str = "/spec/template/spec/nodeSelector/node.kubernetes.io~1windows-build";
const OS: &str = "/spec/template/spec/nodeSelector/kubernetes.io~1os";
const RECORD: &str = "/metadata/annotations/os-placement.kubewarden.io~1added";

fn deployment(image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": image}]}}}})
}

/// The object as admitted at CREATE.
fn admitted(image: &str) -> Value {
    let object = deployment(image);
    let d = create(&object, &eks());
    assert!(d.accepted, "{}", message(&d));
    d.mutated_object.unwrap()
}

fn with_image(object: &Value, image: &str) -> Value {
    let mut next = object.clone();
    next["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
    next
}

fn op<'d>(d: &'d Decision, path: &str) -> Option<(&'static str, &'d Value)> {
    d.patch
        .iter()
        .find(|o| o.path == path)
        .map(|o| (o.op, &o.value))
}

fn record(object: &Value) -> Value {
    let text = object["metadata"]["annotations"][ADDED_ANNOTATION]
        .as_str()
        .unwrap();
    serde_json::from_str(text).unwrap()
}

#[test]
fn create_records_the_selector_entries_the_policy_added() {
    let object = admitted(WIN2019);
    assert_eq!(record(&object), json!({OS: "windows", PIN: "10.0.17763"}));
    // A Pod is never patched again, so it carries no record.
    let d = create(&pod_with_images(&[WIN2019]), &eks());
    assert!(d.mutated_object.unwrap()["metadata"]
        .get("annotations")
        .is_none());
    // Nor does validate-only mode, which adds nothing.
    let strict = settings(json!({"mutate": false}));
    assert!(create(&deployment(LINUX_IMAGE), &strict).patch.is_empty());
}

/// `kubectl set image` / `helm upgrade` from ltsc2019 to ltsc2022.
#[test]
fn image_upgrade_moves_the_policys_own_build_pin() {
    let old = admitted(WIN2019);
    let new = with_image(&old, WIN2022);
    let d = update(&new, &old, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(op(&d, PIN), Some(("replace", &json!("10.0.20348"))));
    assert_eq!(op(&d, OS), None);
    assert_eq!(op(&d, RECORD).map(|(o, _)| o), Some("replace"));
    assert_eq!(d.patch.len(), 2, "{:?}", d.patch);
    let moved = d.mutated_object.unwrap();
    assert_eq!(record(&moved), json!({OS: "windows", PIN: "10.0.20348"}));
    // Idempotent: the moved object is left alone on the next update.
    let again = update(&moved, &moved.clone(), &eks());
    assert!(
        again.accepted && again.patch.is_empty(),
        "{:?}",
        again.patch
    );
    let next = update(&with_image(&moved, WIN2022), &old, &eks());
    assert!(next.accepted && next.patch.is_empty(), "{:?}", next.patch);
}

#[test]
fn record_is_read_from_the_old_object_when_an_update_drops_it() {
    let old = admitted(WIN2019);
    let mut new = with_image(&old, WIN2022);
    new["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    let d = update(&new, &old, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(op(&d, PIN), Some(("replace", &json!("10.0.20348"))));
    assert_eq!(op(&d, "/metadata/annotations").map(|(o, _)| o), Some("add"));
}

#[test]
fn switching_the_image_to_linux_moves_the_os_and_removes_the_pin() {
    let old = admitted(WIN2019);
    let d = update(&with_image(&old, LINUX_IMAGE), &old, &settings(json!({})));
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(op(&d, OS), Some(("replace", &json!("linux"))));
    assert_eq!(op(&d, PIN).map(|(o, _)| o), Some("remove"));
    assert_eq!(record(&d.mutated_object.unwrap()), json!({OS: "linux"}));
}

#[test]
fn a_pin_the_user_changed_is_theirs_and_is_never_moved() {
    let mut old = admitted(WIN2019);
    // The user edits the pin: it no longer holds the recorded value.
    old["spec"]["template"]["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"] =
        json!("10.0.14393");
    let d = update(&with_image(&old, WIN2022), &old, &eks());
    assert_rejected_with(&d, "build-conflict");
    assert!(d.patch.is_empty());
}

#[test]
fn a_pin_the_user_wrote_is_never_moved() {
    // Regression: without a record, the upgrade is the user's conflict to fix.
    let mut old = deployment(WIN2019);
    old["spec"]["template"]["spec"]["nodeSelector"] =
        json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"});
    let d = update(&with_image(&old, WIN2022), &old, &eks());
    assert_rejected_with(&d, "build-conflict");
    assert!(message(&d).contains("10.0.17763"), "{}", message(&d));
}

#[test]
fn a_forged_or_broken_record_owns_nothing() {
    let mut old = admitted(WIN2019);
    old["metadata"]["annotations"][ADDED_ANNOTATION] = json!("not json");
    let d = update(&with_image(&old, WIN2022), &old, &eks());
    assert_rejected_with(&d, "build-conflict");
}
