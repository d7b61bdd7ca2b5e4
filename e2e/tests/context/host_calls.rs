//! The host calls alone, before any policy: what the registry and the
//! cluster fixtures answer, in the shapes policy-server answers with.

use std::collections::BTreeSet;

use os_placement_e2e::host::HostCalls;
use os_placement_e2e::images::{LTSC2019, LTSC2022, LTSC2025};
use serde_json::{json, Value};

use os_placement_e2e::HostCallError;

use super::support::{context, registry_with_images};

fn call(
    host: &dyn HostCalls,
    namespace: &str,
    operation: &str,
    payload: &Value,
) -> Result<Value, HostCallError> {
    host.call(
        "kubewarden",
        namespace,
        operation,
        payload.to_string().as_bytes(),
    )
    .map(|raw| serde_json::from_slice(&raw).unwrap())
}

/// `(os, os.version, architecture)` of every index entry.
fn platforms(index: &Value) -> Vec<(String, Option<String>, String)> {
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let p = &m["platform"];
            (
                p["os"].as_str().unwrap().to_owned(),
                p["os.version"].as_str().map(str::to_owned),
                p["architecture"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn windows(build: &str) -> (String, Option<String>, String) {
    (
        "windows".to_owned(),
        Some(build.to_owned()),
        "amd64".to_owned(),
    )
}

fn linux(arch: &str) -> (String, Option<String>, String) {
    ("linux".to_owned(), None, arch.to_owned())
}

#[test]
fn pushed_platforms_come_back_through_the_oci_host_calls() {
    let Some((registry, images)) = registry_with_images() else {
        return;
    };
    let host = context(Some(&registry), None);
    let manifest = |image: &str| call(&*host, "oci", "v1/oci_manifest", &json!(image));

    let index = manifest(&images.linux.reference).unwrap();
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    assert_eq!(platforms(&index), [linux("amd64"), linux("arm64")]);

    let index = manifest(&images.windows_multi.reference).unwrap();
    assert_eq!(
        platforms(&index),
        [LTSC2019, LTSC2022, LTSC2025].map(windows)
    );

    let list = manifest(&images.pause.reference).unwrap();
    assert_eq!(
        list["mediaType"],
        "application/vnd.docker.distribution.manifest.list.v2+json"
    );
    let mut all = vec![linux("amd64"), linux("arm64")];
    all.extend([LTSC2019, LTSC2022, LTSC2025].map(windows));
    assert_eq!(platforms(&list), all);

    let index = manifest(&images.windows_2025.reference).unwrap();
    assert_eq!(platforms(&index), [windows(LTSC2025)]);

    // A single manifest: no platform list; its config says the platform.
    let single = manifest(&images.windows_single.reference).unwrap();
    assert!(single.get("manifests").is_none(), "{single}");
    assert_eq!(
        single["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let answer = call(
        &*host,
        "oci",
        "v1/oci_manifest_config",
        &json!(images.windows_single.reference),
    )
    .unwrap();
    assert_eq!(answer["digest"], images.windows_single.digest);
    assert_eq!(answer["config"]["os"], "windows");
    assert_eq!(answer["config"]["os.version"], LTSC2022);
    assert_eq!(answer["manifest"], single);

    // An index asked for its config resolves to this host's platform
    // (linux/amd64), as policy-server's OCI client does; a Windows-only index
    // has none and answers an error.
    let answer = call(
        &*host,
        "oci",
        "v1/oci_manifest_config",
        &json!(images.linux.reference),
    )
    .unwrap();
    assert_eq!(
        (&answer["config"]["os"], &answer["config"]["architecture"]),
        (&json!("linux"), &json!("amd64"))
    );
    let err = call(
        &*host,
        "oci",
        "v1/oci_manifest_config",
        &json!(images.windows_multi.reference),
    )
    .unwrap_err();
    assert!(err.0.contains(&images.windows_multi.reference), "{err}");

    // An unknown tag names the image.
    let missing = format!("{}/corp/billing:9.9", registry.host());
    let err = manifest(&missing).unwrap_err();
    assert!(err.0.contains(&missing), "{err}");
    assert_eq!(host.calls().len(), 9);
}

/// The Windows builds and taints the Nodes of `cluster` report, read with
/// field masks as a reader of Nodes sends them.
fn inventory(cluster: &str) -> (BTreeSet<String>, BTreeSet<String>, usize) {
    let host = context(None, Some(cluster));
    let masks = [
        "metadata.name",
        "metadata.labels",
        "spec.taints",
        "status.nodeInfo.kernelVersion",
    ];
    let list = call(
        &*host,
        "kubernetes",
        "list_resources_all",
        &json!({
        "api_version": "v1", "kind": "Node", "label_selector": null, "field_selector": null,
        "field_masks": masks}),
    )
    .unwrap();
    assert_eq!(list["kind"], "NodeList");
    let items = list["items"].as_array().unwrap();
    let mut builds = BTreeSet::new();
    let mut taints = BTreeSet::new();
    for node in items {
        assert!(node["metadata"].get("uid").is_none(), "masked: {node}");
        assert!(
            node["status"]["nodeInfo"].get("osImage").is_none(),
            "masked: {node}"
        );
        if node["metadata"]["labels"]["kubernetes.io/os"] == "windows" {
            let build = node["metadata"]["labels"]["node.kubernetes.io/windows-build"]
                .as_str()
                .unwrap();
            // The label agrees with what the kubelet reports.
            assert!(node["status"]["nodeInfo"]["kernelVersion"]
                .as_str()
                .unwrap()
                .starts_with(build));
            builds.insert(build.to_owned());
            for taint in node["spec"]["taints"].as_array().into_iter().flatten() {
                taints.insert(format!(
                    "{}={}:{}",
                    taint["key"].as_str().unwrap(),
                    taint["value"].as_str().unwrap(),
                    taint["effect"].as_str().unwrap()
                ));
            }
        }
    }
    // The published node facts say the same, in classes.
    assert_eq!(published_builds(&*host, items.len()), builds);
    (builds, taints, items.len())
}

/// The Windows builds of the node classes the facts syncer publishes for
/// the cluster of `host`, whose classes count `nodes` nodes in all.
fn published_builds(host: &dyn HostCalls, nodes: usize) -> BTreeSet<String> {
    let published = call(
        host,
        "kubernetes",
        "list_resources_by_namespace",
        &json!({"api_version": "v1", "kind": "ConfigMap", "namespace": "os-placement",
            "label_selector": os_placement_core::published::selector(None),
            "field_selector": null, "field_masks": os_placement_core::published::FIELD_MASKS}),
    )
    .unwrap();
    let index: Value =
        serde_json::from_str(published["items"][0]["data"]["index"].as_str().unwrap()).unwrap();
    let classes = index["classes"].as_array().unwrap();
    let counted: u64 = classes.iter().map(|c| c["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, nodes as u64);
    classes
        .iter()
        .filter_map(|c| c["windowsBuild"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn cluster_fixtures_hold_the_nodes_and_classes_their_readme_lists() {
    let set = |items: &[&str]| {
        items
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        inventory("eks-mixed"),
        (
            set(&["10.0.17763", "10.0.20348"]),
            set(&["os=windows:NoSchedule"]),
            4
        )
    );
    assert_eq!(
        inventory("windows-2019-only"),
        (
            set(&["10.0.17763"]),
            set(&["node.kubernetes.io/os=windows:NoSchedule"]),
            3
        )
    );
    assert_eq!(
        inventory("aks-untainted"),
        (set(&["10.0.20348"]), set(&[]), 2)
    );

    let class = |cluster: &str, name: &str| {
        let host = context(None, Some(cluster));
        call(
            &*host,
            "kubernetes",
            "get_resource",
            &json!({"api_version": "node.k8s.io/v1",
            "kind": "RuntimeClass", "name": name, "namespace": null, "disable_cache": false}),
        )
    };
    let found = class("eks-mixed", "windows-2022").unwrap();
    assert_eq!(
        found["scheduling"]["nodeSelector"]["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
    assert_eq!(found["scheduling"]["tolerations"][0]["key"], "os");
    let found = class("aks-untainted", "windows-2022").unwrap();
    assert!(found["scheduling"].get("tolerations").is_none());
    let err = class("windows-2019-only", "windows-2022").unwrap_err();
    assert!(
        err.0
            .contains("Cannot find node.k8s.io/v1/RuntimeClass named 'windows-2022'"),
        "{err}"
    );
}
