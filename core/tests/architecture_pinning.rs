//! `pinArchitecture`: pods land only on nodes of an architecture their
//! images are built for. Sources: the OCI image index specification
//! (`manifests[].platform.architecture`, GOARCH values), the kubelet's
//! well-known label `kubernetes.io/arch`, the scheduler's NodeAffinity
//! plugin (terms ORed, expressions ANDed), and docker-library/official-images
//! ("Architectures other than amd64?") for Hub namespaces like `arm64v8/`.

use crate::common::checked_create;
use crate::common::*;
use os_placement_core::{Facts, ImageFacts, Node, NodeFacts, Platform, Settings};
use serde_json::{json, Value};

const APP: &str = "registry.corp.example/team/app:1.0";
const SIDECAR: &str = "registry.corp.example/team/sidecar:2.0";

fn pinning() -> Settings {
    settings(json!({"pinArchitecture": true}))
}

fn linux_platforms(archs: &[&str]) -> Vec<Platform> {
    archs
        .iter()
        .map(|a| Platform {
            os: "linux".into(),
            os_version: None,
            architecture: Some((*a).into()),
        })
        .collect()
}

fn facts(images: &[(&str, &[&str])]) -> Facts {
    Facts {
        images: images
            .iter()
            .map(|(image, archs)| {
                (
                    image.to_string(),
                    ImageFacts::Platforms(linux_platforms(archs)),
                )
            })
            .collect(),
        ..Facts::default()
    }
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": spec}}})
}

fn linux_spec(images: &[&str]) -> Value {
    let mut spec = spec_with_images(images);
    spec["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    spec
}

fn template(object: &Value, d: &os_placement_core::Decision) -> Value {
    result_object(object, d)["spec"]["template"]["spec"].clone()
}

/// `with_facts`, plus the invariants `checked_create` holds for facts-free
/// decisions: minimal, and the same answer again after the patch.
fn decide(object: &Value, settings: &Settings, facts: &Facts) -> os_placement_core::Decision {
    let d = with_facts(object, settings, facts);
    if let Some(after) = &d.mutated_object {
        let again = with_facts(after, settings, facts);
        assert!(
            again.accepted && again.patch.is_empty(),
            "not idempotent: {:?}",
            again.patch
        );
    }
    d
}

#[test]
fn an_amd64_only_image_is_pinned_to_amd64_and_an_arm64_only_one_to_arm64() {
    for arch in ["amd64", "arm64"] {
        let object = deployment(linux_spec(&[APP]));
        let d = decide(&object, &pinning(), &facts(&[(APP, &[arch])]));
        assert!(d.accepted, "{}", message(&d));
        assert_eq!(
            template(&object, &d)["nodeSelector"]["kubernetes.io/arch"],
            arch
        );
        // The pin, and the record that it is the policy's own (it moves
        // with the image on a later update).
        let own: Vec<_> = d.patch.iter().filter(|op| !is_record_op(op)).collect();
        assert_eq!(own.len(), 1, "{:?}", d.patch);
    }
}

#[test]
fn a_multi_architecture_image_is_not_pinned() {
    let object = deployment(linux_spec(&[APP]));
    let d = decide(&object, &pinning(), &facts(&[(APP, &["amd64", "arm64"])]));
    assert!(d.accepted && d.patch.is_empty(), "{:?}", d.patch);
}

#[test]
fn with_pinning_off_nothing_about_architecture_changes() {
    let object = deployment(linux_spec(&[APP]));
    let d = decide(&object, &Settings::default(), &facts(&[(APP, &["amd64"])]));
    assert!(d.accepted && d.patch.is_empty(), "{:?}", d.patch);
    let hub = deployment(linux_spec(&["arm64v8/nginx:1.27"]));
    assert!(create(&hub, &Settings::default()).patch.is_empty());
}

#[test]
fn every_container_counts_init_and_ephemeral_included() {
    let mut spec = linux_spec(&[APP]);
    spec["initContainers"] = json!([{"name": "init", "image": SIDECAR}]);
    let object = deployment(spec);
    let d = decide(
        &object,
        &pinning(),
        &facts(&[(APP, &["amd64", "arm64"]), (SIDECAR, &["amd64"])]),
    );
    assert_eq!(
        template(&object, &d)["nodeSelector"]["kubernetes.io/arch"],
        "amd64"
    );
}

#[test]
fn images_built_for_different_architectures_are_rejected() {
    let object = deployment(linux_spec(&[APP, SIDECAR]));
    let d = decide(
        &object,
        &pinning(),
        &facts(&[(APP, &["amd64"]), (SIDECAR, &["arm64"])]),
    );
    assert_rejected_with(&d, "arch-conflict");
    assert_eq!(
        d.violations[0].path,
        "spec.template.spec.containers[1].image"
    );
}

#[test]
fn a_selected_architecture_no_image_runs_on_is_rejected_with_its_path() {
    let mut spec = linux_spec(&[APP]);
    spec["nodeSelector"]["kubernetes.io/arch"] = json!("arm64");
    let object = deployment(spec);
    let d = decide(&object, &pinning(), &facts(&[(APP, &["amd64"])]));
    assert_rejected_with(&d, "arch-conflict");
    let v = &d.violations[0];
    assert_eq!(
        v.path,
        "spec.template.spec.nodeSelector[kubernetes.io/arch]"
    );
    assert!(
        v.message.contains("amd64") && v.message.contains("arm64"),
        "{v}"
    );
    // Negative: a selection the image runs on is left as it is.
    let mut spec = linux_spec(&[APP]);
    spec["nodeSelector"]["kubernetes.io/arch"] = json!("amd64");
    let d = decide(&deployment(spec), &pinning(), &facts(&[(APP, &["amd64"])]));
    assert!(d.accepted && d.patch.is_empty(), "{:?}", d.patch);
}

#[test]
fn a_wider_affinity_is_narrowed_by_a_pin_and_kept_as_written() {
    let mut spec = linux_spec(&[APP]);
    spec["affinity"] = required_affinity(json!([
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]));
    let object = deployment(spec.clone());
    let d = decide(&object, &pinning(), &facts(&[(APP, &["amd64", "s390x"])]));
    assert!(d.accepted, "{}", message(&d));
    let after = template(&object, &d);
    assert_eq!(after["nodeSelector"]["kubernetes.io/arch"], "amd64");
    assert_eq!(after["affinity"], spec["affinity"]);
}

#[test]
fn several_architectures_go_into_every_required_term() {
    let mut spec = linux_spec(&[APP]);
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}});
    let object = deployment(spec);
    let mut f = facts(&[(APP, &["amd64", "s390x"])]);
    f.nodes = Some(NodeFacts::Listed(vec![
        node("a", "amd64"),
        node("b", "arm64"),
        node("c", "s390x"),
    ]));
    let d = decide(&object, &pinning(), &f);
    let terms = &template(&object, &d)["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    let expression =
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "s390x"]});
    assert_eq!(
        terms[0]["matchExpressions"],
        json!([{"key": "pool", "operator": "In", "values": ["a"]}, expression])
    );
    assert_eq!(terms[1]["matchExpressions"], json!([expression]));
    assert_eq!(terms[1]["matchFields"][0]["key"], "metadata.name");
}

fn node(name: &str, arch: &str) -> Node {
    Node {
        name: name.into(),
        os: Some("linux".into()),
        architecture: Some(arch.into()),
        ..Node::default()
    }
}

#[test]
fn the_node_inventory_says_which_architectures_the_cluster_offers() {
    let object = deployment(linux_spec(&[APP]));
    let mut with_nodes = facts(&[(APP, &["amd64", "s390x"])]);
    with_nodes.nodes = Some(NodeFacts::Listed(vec![
        node("a", "amd64"),
        node("b", "arm64"),
        node("c", "s390x"),
    ]));
    let d = decide(&object, &pinning(), &with_nodes);
    let terms = &template(&object, &d)["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    assert_eq!(
        terms,
        &json!([{"matchExpressions": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "s390x"]}]}])
    );
    // An amd64-only cluster: nothing to pin.
    let mut only_amd64 = facts(&[(APP, &["amd64"])]);
    only_amd64.nodes = Some(NodeFacts::Listed(vec![node("a", "amd64")]));
    assert!(decide(&object, &pinning(), &only_amd64).patch.is_empty());
}

#[test]
fn windows_pods_compare_with_the_windows_nodes_amd64() {
    let platforms = vec![Platform {
        os: "windows".into(),
        os_version: Some("10.0.20348.1".into()),
        architecture: Some("amd64".into()),
    }];
    let f = Facts {
        images: [(PRIVATE.to_string(), ImageFacts::Platforms(platforms))].into(),
        ..Facts::default()
    };
    let object = pod(spec_with_images(&[PRIVATE]));
    let d = decide(&object, &pinning(), &f);
    let selector = &result_object(&object, &d)["spec"]["nodeSelector"];
    assert_eq!(selector["kubernetes.io/os"], "windows");
    assert!(selector.get("kubernetes.io/arch").is_none(), "{selector}");
}

#[test]
fn without_facts_only_a_hub_architecture_namespace_pins() {
    let plain = deployment(linux_spec(&[APP]));
    assert!(checked_create(&plain, &pinning()).patch.is_empty());
    let hub = deployment(linux_spec(&["arm64v8/nginx:1.27"]));
    let d = checked_create(&hub, &pinning());
    assert_eq!(
        template(&hub, &d)["nodeSelector"]["kubernetes.io/arch"],
        "arm64"
    );
}

#[test]
fn validate_mode_reports_the_missing_pin() {
    let strict = settings(json!({"pinArchitecture": true, "mutate": false}));
    let object = deployment(linux_spec(&[APP]));
    let d = decide(&object, &strict, &facts(&[(APP, &["arm64"])]));
    assert_rejected_with(&d, "missing-arch-pin");
    assert!(
        d.violations[0]
            .fix
            .contains("kubernetes.io/arch: \"arm64\""),
        "{}",
        d.violations[0]
    );
}

#[test]
fn needs_asks_for_every_image_while_the_architecture_is_open() {
    let object = deployment(linux_spec(&[APP, SIDECAR, APP]));
    // The OS is fixed by the selector: without pinning nothing is asked.
    assert!(needs_of(&object, &Settings::default()).images.is_empty());
    assert_eq!(
        needs_of(&object, &pinning()).images,
        vec![APP.to_string(), SIDECAR.to_string()]
    );
    let mut fixed = linux_spec(&[APP]);
    fixed["nodeSelector"]["kubernetes.io/arch"] = json!("amd64");
    assert!(needs_of(&deployment(fixed), &pinning()).images.is_empty());
    let off = settings(json!({"pinArchitecture": true, "imageLookup": "off"}));
    assert!(needs_of(&object, &off).images.is_empty());
}

/// nodeInventory auto with pinning: an image built for an architecture no
/// node of its OS has is admitted (pinned, so it waits) with a warning.
#[test]
fn no_node_of_the_images_architecture_is_a_warning() {
    let object = deployment(linux_spec(&[APP]));
    let mut f = facts(&[(APP, &["s390x"])]);
    f.nodes = Some(NodeFacts::Listed(vec![
        node("a", "amd64"),
        node("b", "arm64"),
    ]));
    let d = decide(&object, &pinning(), &f);
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        template(&object, &d)["nodeSelector"]["kubernetes.io/arch"],
        "s390x"
    );
    let lines = d.warning_lines();
    let warning = lines
        .iter()
        .find(|w| w.contains("architecture"))
        .expect("a warning");
    assert!(
        warning.contains("s390x") && warning.contains("amd64, arm64"),
        "{warning}"
    );
    // Without pinning, nothing about architecture is said.
    let d = decide(&object, &Settings::default(), &f);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}
