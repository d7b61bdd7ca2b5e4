//! Context-aware placement through the built `.wasm`: the policy gathers
//! facts through the host calls, answered from the real registry and the
//! cluster fixtures. Expectations follow issue 9 ("What to build" 2-4) and
//! the host-call contract in policy/src/facts.rs.

use std::sync::Arc;

use os_placement_e2e::capabilities::{ContextHost, Registries};
use os_placement_e2e::registry::free_port;
use serde_json::{json, Value};

use super::evaluation::{evaluate, pod, result, show};
use super::support::{context, registry_with_images};

fn eks() -> Value {
    json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}})
}

fn with(mut settings: Value, extra: Value) -> Value {
    if let (Value::Object(s), Value::Object(e)) = (&mut settings, extra) {
        s.extend(e);
    }
    settings
}

fn node_selector(object: &Value) -> Value {
    object["spec"]["nodeSelector"].clone()
}

fn oci_calls(calls: &[os_placement_e2e::capabilities::HostCall]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.namespace == "oci")
        .map(|c| format!("{} {}", c.operation, c.payload))
        .collect()
}

#[test]
fn private_images_with_no_hint_are_placed_by_their_platforms() {
    let Some((registry, images)) = registry_with_images() else {
        return;
    };
    let host = context(Some(&registry), Some("eks-mixed"));

    // A single Windows manifest: its config's os.version pins the build.
    let object = pod("reports", &[&images.windows_single.reference], json!({}));
    let evaluation = evaluate(&host, &object, &eks());
    show(
        "private Windows image (single manifest, config os.version 10.0.20348.2700), eks-mixed",
        &evaluation,
    );
    assert!(
        evaluation.response.accepted,
        "{}",
        evaluation.response.message()
    );
    let placed = result(&evaluation, &object);
    assert_eq!(
        node_selector(&placed),
        json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"})
    );
    assert_eq!(
        placed["spec"]["tolerations"],
        json!([{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}])
    );
    let reference = json!(images.windows_single.reference).to_string();
    assert_eq!(
        oci_calls(&host.take_calls()),
        [
            format!("v1/oci_manifest {reference}"),
            format!("v1/oci_manifest_config {reference}"),
        ]
    );

    // A Linux-only index: Linux, even with defaultOS none (untainted Windows
    // nodes, so a Linux pod needs the selector); two containers of the same
    // image, one lookup.
    let object = pod(
        "billing",
        &[&images.linux.reference, &images.linux.reference],
        json!({}),
    );
    let settings = json!({"defaultOS": "none"});
    let evaluation = evaluate(&host, &object, &settings);
    show(
        "private Linux index (amd64, arm64), defaultOS none",
        &evaluation,
    );
    assert!(evaluation.response.accepted);
    assert_eq!(
        node_selector(&result(&evaluation, &object)),
        json!({"kubernetes.io/os": "linux"})
    );
    assert_eq!(oci_calls(&host.take_calls()).len(), 1);

    // Without the lookup the same pod is left alone: the registry decided.
    let evaluation = evaluate(
        &host,
        &object,
        &with(settings, json!({"imageLookup": "off"})),
    );
    assert!(!evaluation.patched());
    // No image is looked up; the Node list (nodeInventory auto) still is.
    assert!(oci_calls(&host.take_calls()).is_empty());
}

#[test]
fn images_whose_reference_decides_make_no_lookup() {
    let Some((registry, _images)) = registry_with_images() else {
        return;
    };
    let host = context(Some(&registry), Some("eks-mixed"));
    let object = pod(
        "web",
        &[
            "mcr.microsoft.com/windows/nanoserver:ltsc2022",
            "mcr.microsoft.com/windows/servercore:ltsc2022",
        ],
        json!({}),
    );
    let evaluation = evaluate(&host, &object, &eks());
    assert!(evaluation.response.accepted);
    assert_eq!(
        node_selector(&result(&evaluation, &object))["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
    assert_eq!(oci_calls(&host.take_calls()), Vec::<String>::new());
}

fn build_affinity(object: &Value) -> Option<Value> {
    object["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()
        .map(|terms| json!(terms))
}

#[test]
fn multi_build_images_get_no_pin() {
    let Some((registry, images)) = registry_with_images() else {
        return;
    };
    let host = context(Some(&registry), Some("eks-mixed"));
    let inventory = with(eks(), json!({"nodeInventory": "warn"}));
    // The pause-like list (Linux and three Windows builds) in a Windows pod:
    // it covers every build the nodes run (10.0.17763, 10.0.20348), so no pin.
    let object = pod(
        "pause",
        &[&images.pause.reference],
        json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
    );
    let evaluation = evaluate(&host, &object, &inventory);
    show("pause-like list (linux + 10.0.17763/20348/26100), Windows pod, eks-mixed, nodeInventory warn", &evaluation);
    assert!(evaluation.response.accepted);
    let placed = result(&evaluation, &object);
    assert_eq!(
        node_selector(&placed),
        json!({"kubernetes.io/os": "windows"})
    );
    assert_eq!(build_affinity(&placed), None);
    assert_eq!(placed["spec"]["tolerations"][0]["key"], "os");
    assert_eq!(oci_calls(&host.take_calls()).len(), 1);

    // A Windows-only index of three builds: Windows, no pin.
    let object = pod("ledger", &[&images.windows_multi.reference], json!({}));
    let evaluation = evaluate(&host, &object, &inventory);
    show(
        "Windows index (10.0.17763/20348/26100), eks-mixed, nodeInventory warn",
        &evaluation,
    );
    assert!(evaluation.response.accepted);
    let placed = result(&evaluation, &object);
    assert_eq!(
        node_selector(&placed),
        json!({"kubernetes.io/os": "windows"})
    );
    assert_eq!(build_affinity(&placed), None);

    // Without the node inventory, the builds are narrowed to the image's.
    let evaluation = evaluate(&host, &object, &eks());
    show(
        "Windows index (10.0.17763/20348/26100), no node inventory",
        &evaluation,
    );
    let terms = build_affinity(&result(&evaluation, &object));
    assert_eq!(
        terms,
        Some(
            json!([{"matchExpressions": [{"key": "node.kubernetes.io/windows-build",
        "operator": "In", "values": ["10.0.17763", "10.0.20348", "10.0.26100"]}]}])
        )
    );
}

#[test]
fn an_image_no_node_can_run_is_rejected_naming_the_node_builds() {
    let Some((registry, images)) = registry_with_images() else {
        return;
    };
    let host = context(Some(&registry), Some("eks-mixed"));
    let object = pod("batch", &[&images.windows_2025.reference], json!({}));
    let evaluation = evaluate(
        &host,
        &object,
        &with(eks(), json!({"nodeInventory": "reject"})),
    );
    show(
        "Windows 2025-only index in eks-mixed (2019/2022 nodes), nodeInventory reject",
        &evaluation,
    );
    assert!(!evaluation.response.accepted);
    let message = evaluation.response.message();
    for part in ["10.0.26100", "10.0.17763", "10.0.20348"] {
        assert!(message.contains(part), "{part} not in {message}");
    }
    // The node facts and the image come in one call; the Node list is not read.
    let calls = host.take_calls();
    let count = |operation: &str| calls.iter().filter(|c| c.operation == operation).count();
    assert_eq!(count("list_resources_by_namespace"), 1);
    assert_eq!(count("list_resources_all"), 0);

    // The same image where a node runs its build is placed there.
    let host = context(Some(&registry), Some("aks-untainted"));
    let object = pod("ledger", &[&images.windows_multi.reference], json!({}));
    let evaluation = evaluate(&host, &object, &json!({"nodeInventory": "reject"}));
    assert!(
        evaluation.response.accepted,
        "{}",
        evaluation.response.message()
    );
}

#[test]
fn registry_down_falls_back_with_a_warning() {
    let port = free_port().unwrap();
    let down = format!("127.0.0.1:{port}/corp/billing:4.2");
    let registries = Registries::new(&[format!("127.0.0.1:{port}")]).unwrap();
    let host_down = Arc::new(ContextHost::new().with_registries(registries));
    let object = pod("billing", &[&down], json!({}));
    // Untainted Windows nodes: a Linux pod needs the selector, so the fallback
    // (no hint in the reference: defaultOS linux) shows in the patch.
    let evaluation = evaluate(&host_down, &object, &json!({}));
    show(
        "registry down (connection refused), default lookupFailure",
        &evaluation,
    );
    assert!(
        evaluation.response.accepted,
        "{}",
        evaluation.response.message()
    );
    assert_eq!(
        node_selector(&result(&evaluation, &object)),
        json!({"kubernetes.io/os": "linux"})
    );
    // The API server keeps warnings of up to 256 characters.
    let warnings = evaluation.response.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&down) && w.chars().count() <= 256),
        "{warnings:?}"
    );
    assert_eq!(oci_calls(&host_down.take_calls()).len(), 1);

    // lookupFailure: reject makes it a rejection naming the image, still no trap.
    let evaluation = evaluate(&host_down, &object, &json!({"lookupFailure": "reject"}));
    show("registry down, lookupFailure reject", &evaluation);
    assert!(!evaluation.response.accepted);
    assert!(
        evaluation.response.message().contains(&down),
        "{}",
        evaluation.response.message()
    );

    // No registry reachable at all: the same fallback.
    let nothing = context(None, None);
    let evaluation = evaluate(&nothing, &object, &json!({}));
    assert!(evaluation.response.accepted);
    assert_eq!(
        node_selector(&result(&evaluation, &object)),
        json!({"kubernetes.io/os": "linux"})
    );
}

#[test]
fn a_runtime_class_only_in_the_cluster_places_the_pod() {
    let Some((registry, images)) = registry_with_images() else {
        return;
    };
    let host = context(Some(&registry), Some("eks-mixed"));
    // windows-2022 is not in the settings: read from the cluster (its
    // published facts), it provides the selector, build and toleration, so
    // nothing is added.
    let object = pod(
        "ledger",
        &[&images.windows_multi.reference],
        json!({"runtimeClassName": "windows-2022"}),
    );
    let evaluation = evaluate(&host, &object, &eks());
    show(
        "runtimeClassName windows-2022 only in the cluster (eks-mixed)",
        &evaluation,
    );
    assert!(
        evaluation.response.accepted,
        "{}",
        evaluation.response.message()
    );
    // A missing build alone would also pass with a wrong OS selector added.
    assert!(!evaluation.patched(), "{:?}", evaluation.patch);
    // Published with the node facts: one Kubernetes call, no get_resource.
    let calls = host.take_calls();
    let operations: Vec<&str> = calls
        .iter()
        .filter(|c| c.namespace == "kubernetes")
        .map(|c| c.operation.as_str())
        .collect();
    assert_eq!(operations, ["list_resources_by_namespace"]);

    // Not published (a class created since the syncer last ran): read by name.
    let unsynced = std::sync::Arc::new(
        os_placement_e2e::capabilities::ContextHost::new()
            .with_cluster(super::support::cluster("eks-mixed")),
    );
    let evaluation = evaluate(&unsynced, &object, &eks());
    assert!(
        evaluation.response.accepted,
        "{}",
        evaluation.response.message()
    );
    let gets: Vec<_> = unsynced
        .take_calls()
        .into_iter()
        .filter(|c| c.operation == "get_resource")
        .collect();
    assert_eq!(gets.len(), 1);
    assert!(
        gets[0].payload.contains("\"windows-2022\""),
        "{}",
        gets[0].payload
    );

    // A class the cluster does not have, on a workload: rejected with a fix.
    let host = context(Some(&registry), Some("windows-2019-only"));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "ledger", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "ledger"}}, "template": {
            "metadata": {"labels": {"app": "ledger"}},
            "spec": {"runtimeClassName": "windows-2022", "containers": [{"name": "c", "image": LTSC2022_IMAGE}]}}}});
    let evaluation = evaluate(&host, &deployment, &eks());
    show(
        "runtimeClassName windows-2022 missing from the cluster (Deployment)",
        &evaluation,
    );
    assert!(!evaluation.response.accepted);
    assert!(
        evaluation
            .response
            .message()
            .contains("spec.template.spec.runtimeClassName"),
        "{}",
        evaluation.response.message()
    );
}

const LTSC2022_IMAGE: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";

#[test]
fn windows_taint_from_nodes() {
    let settings = json!({"windowsTaint": "fromNodes"});
    let object = pod(
        "web",
        &["mcr.microsoft.com/windows/servercore:ltsc2019"],
        json!({}),
    );
    // GKE-like: the taint the Windows nodes carry is tolerated.
    let host = context(None, Some("windows-2019-only"));
    let evaluation = evaluate(&host, &object, &settings);
    show(
        "windowsTaint fromNodes, windows-2019-only (node.kubernetes.io/os=windows:NoSchedule)",
        &evaluation,
    );
    let placed = result(&evaluation, &object);
    assert_eq!(
        placed["spec"]["tolerations"],
        json!([{"key": "node.kubernetes.io/os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}])
    );
    // AKS-like, untainted: no toleration to add.
    let host = context(None, Some("aks-untainted"));
    let object = pod("web", &[LTSC2022_IMAGE], json!({}));
    let evaluation = evaluate(&host, &object, &settings);
    show("windowsTaint fromNodes, aks-untainted", &evaluation);
    assert!(evaluation.response.accepted);
    assert_eq!(
        result(&evaluation, &object)["spec"].get("tolerations"),
        None
    );
}
