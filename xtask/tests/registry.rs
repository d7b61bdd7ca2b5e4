//! The policy as an OCI artifact in a real registry (Debian's docker-registry,
//! the CNCF distribution server) on 127.0.0.1, started per test with its own
//! port and storage and stopped when the test ends, passed or failed.

use serde_json::json;
use xtask::annotate::read_metadata;
use xtask::local::http::http;
use xtask::local::registry::free_port;
use xtask::oci::{self, manifest_annotations, RegistryOptions, OCI_SOURCE_ANNOTATION};

use super::support::{
    annotated_bytes, policy_bytes, registry, stderr, write_annotated, xtask, xtask_ok,
};

const WASM_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";
const WASM_CONFIG: &str = "application/vnd.wasm.config.v1+json";

/// Pushes with the chore and returns the printed reference.
fn push_with_tool(wasm: &std::path::Path, reference: &str) -> String {
    xtask_ok(&["push", wasm.to_str().unwrap(), reference], &[])
}

#[test]
fn push_then_pull_by_tag_and_by_digest() {
    let Some(registry) = registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let reference = registry.reference("os-placement/policy:v0.1.0");
    let printed = push_with_tool(&wasm, &reference);
    let (manifest, digest) = registry.manifest("os-placement/policy", "v0.1.0").unwrap();
    assert!(digest.starts_with("sha256:"), "{digest}");
    assert_eq!(printed, format!("{reference}@{digest}"));

    // The manifest, field by field.
    let metadata = read_metadata(annotated_bytes()).unwrap().unwrap();
    let annotations = manifest_annotations(&metadata);
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG);
    assert_eq!(manifest["config"]["size"], 2);
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0]["mediaType"], WASM_LAYER);
    assert_eq!(layers[0]["size"], json!(annotated_bytes().len()));
    assert_eq!(
        manifest["annotations"],
        serde_json::to_value(&annotations).unwrap()
    );
    assert_eq!(
        manifest["annotations"][OCI_SOURCE_ANNOTATION],
        metadata["annotations"]["io.kubewarden.policy.source"]
    );
    assert!(manifest["annotations"]
        .get("io.kubewarden.policy.usage")
        .is_none());
    // The config blob is `{}`.
    let config = http(
        registry.port(),
        "GET",
        &format!(
            "/v2/os-placement/policy/blobs/{}",
            manifest["config"]["digest"].as_str().unwrap()
        ),
        &[],
        b"",
    )
    .unwrap();
    assert_eq!(config.body, b"{}");

    // Pulled by tag and by digest: the same bytes, and a policy that evaluates.
    for pulled_from in [
        reference.clone(),
        registry.reference(&format!("os-placement/policy@{digest}")),
    ] {
        let out = dir.path().join("pulled.wasm");
        let output = xtask(&["pull", &pulled_from, "--output-path", out.to_str().unwrap()]);
        assert!(
            output.status.success(),
            "pull {pulled_from}: {}",
            stderr(&output)
        );
        let pulled = std::fs::read(&out).unwrap();
        assert_eq!(pulled, annotated_bytes(), "{pulled_from}");
    }
}

#[test]
fn push_to_a_registry_that_is_down_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let port = free_port().unwrap();
    let output = xtask(&[
        "push",
        wasm.to_str().unwrap(),
        &format!("registry://127.0.0.1:{port}/os-placement/policy:v0.1.0"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains(&format!(
            "cannot push to 127.0.0.1:{port}/os-placement/policy:v0.1.0"
        )),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
}

#[test]
fn unannotated_module_is_not_pushed() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.wasm");
    std::fs::write(&raw, policy_bytes()).unwrap();
    let output = xtask(&["push", raw.to_str().unwrap(), "registry://127.0.0.1:1/p:t"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("not annotated"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn pull_of_a_missing_tag_fails_cleanly() {
    let Some(registry) = registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    push_with_tool(&wasm, &registry.reference("os-placement/policy:v0.1.0"));
    let out = dir.path().join("pulled.wasm");
    let output = xtask(&[
        "pull",
        &registry.reference("os-placement/policy:v9.9.9"),
        "--output-path",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("os-placement/policy:v9.9.9"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
    assert!(!out.exists());
}

#[test]
fn tampered_layer_is_detected() {
    let Some(registry) = registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let reference = registry.reference("os-placement/policy:v0.1.0");
    push_with_tool(&wasm, &reference);
    let (manifest, _) = registry.manifest("os-placement/policy", "v0.1.0").unwrap();
    let layer = registry.blob_file(manifest["layers"][0]["digest"].as_str().unwrap());
    let mut bytes = std::fs::read(&layer).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&layer, &bytes).unwrap();

    let err = oci::pull(&reference, &RegistryOptions::default()).unwrap_err();
    let message = format!("{err:#}");
    assert!(message.to_lowercase().contains("digest"), "{message}");
    let out = dir.path().join("pulled.wasm");
    let output = xtask(&["pull", &reference, "--output-path", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(!out.exists());
}
