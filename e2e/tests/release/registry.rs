//! The policy as an OCI artifact in a real registry (Debian's docker-registry,
//! the CNCF distribution server) on 127.0.0.1, started per test with its own
//! port and storage and stopped when the test ends, passed or failed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use os_placement_e2e::annotate::read_metadata;
use os_placement_e2e::external;
use os_placement_e2e::oci::{self, manifest_annotations, RegistryOptions, OCI_SOURCE_ANNOTATION};
use os_placement_e2e::{LoadedPolicy, PolicyModule};
use serde_json::{json, Value};

use crate::support::{annotated_bytes, free_port, http, wait_until, write_annotated};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const WASM_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";
const WASM_CONFIG: &str = "application/vnd.wasm.config.v1+json";

/// A registry process; killed and reaped on drop, so a failing test stops it too.
pub struct Registry {
    child: Child,
    pub port: u16,
    pub storage: PathBuf,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts a registry, or `None` after a visible skip when docker-registry
    /// is not installed (a failure under CI).
    pub fn start() -> Option<Self> {
        let binary = external::registry_server().unwrap_or_else(|e| panic!("{e}"))?;
        let dir = tempfile::tempdir().unwrap();
        let storage = dir.path().join("storage");
        let port = free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                storage.display()
            ),
        )
        .unwrap();
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("registry.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut registry = Self {
            child,
            port,
            storage,
            _dir: dir,
        };
        let up = wait_until(Duration::from_secs(20), || {
            http(port, "GET", "/v2/", &[], b"").is_ok_and(|r| r.status == 200)
        });
        if !up {
            let log = std::fs::read_to_string(registry._dir.path().join("registry.log"))
                .unwrap_or_default();
            let status = registry.child.try_wait();
            panic!("the registry did not answer on 127.0.0.1:{port} ({status:?}):\n{log}");
        }
        Some(registry)
    }

    /// `registry://127.0.0.1:PORT/<path>`
    pub fn reference(&self, path: &str) -> String {
        format!("registry://127.0.0.1:{}/{path}", self.port)
    }

    /// The manifest at `repository:reference` as the registry returns it, with its digest header.
    pub fn manifest(&self, repository: &str, reference: &str) -> (Value, String) {
        let response = http(
            self.port,
            "GET",
            &format!("/v2/{repository}/manifests/{reference}"),
            &[("Accept", OCI_MANIFEST)],
            b"",
        )
        .unwrap();
        assert_eq!(
            response.status,
            200,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        assert_eq!(response.header("content-type"), Some(OCI_MANIFEST));
        let digest = response
            .header("docker-content-digest")
            .unwrap_or_default()
            .to_owned();
        (response.json().unwrap(), digest)
    }

    /// The file holding blob `digest` in the registry's storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Best effort: the process may already be gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn release(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_os-placement-release"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Pushes with the release tool and returns the printed reference.
fn push_with_tool(wasm: &Path, reference: &str) -> String {
    let output = release(&["push", wasm.to_str().unwrap(), reference]);
    assert!(output.status.success(), "push failed: {}", stderr(&output));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[test]
fn push_then_pull_by_tag_and_by_digest() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let reference = registry.reference("os-placement/policy:v0.1.0");
    let printed = push_with_tool(&wasm, &reference);
    let (manifest, digest) = registry.manifest("os-placement/policy", "v0.1.0");
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
        registry.port,
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
        let output = release(&["pull", &pulled_from, "--output-path", out.to_str().unwrap()]);
        assert!(
            output.status.success(),
            "pull {pulled_from}: {}",
            stderr(&output)
        );
        let pulled = std::fs::read(&out).unwrap();
        assert_eq!(pulled, annotated_bytes(), "{pulled_from}");
        if pulled_from != reference {
            continue; // the same bytes: compiled and evaluated once, below
        }
        // Compiled from the pulled bytes, not the shared module.
        let policy =
            LoadedPolicy::load(PolicyModule::from_bytes(&pulled).unwrap(), json!({})).unwrap();
        let request = os_placement_e2e::admission_request(
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
                    "spec": {"containers": [{"name": "a", "image": "alpine:3.20"}]}}),
            "CREATE",
            None,
            None,
        );
        let evaluation = policy.evaluate(&request).unwrap();
        assert!(evaluation.response.accepted);
        assert_eq!(
            evaluation.resulting_object(&request["object"])["spec"]["nodeSelector"]
                ["kubernetes.io/os"],
            "linux"
        );
    }
}

#[test]
fn push_to_a_registry_that_is_down_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let port = free_port();
    let output = release(&[
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
    std::fs::write(&raw, crate::support::policy_bytes()).unwrap();
    let output = release(&["push", raw.to_str().unwrap(), "registry://127.0.0.1:1/p:t"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("not annotated"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn pull_of_a_missing_tag_fails_cleanly() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    push_with_tool(&wasm, &registry.reference("os-placement/policy:v0.1.0"));
    let out = dir.path().join("pulled.wasm");
    let output = release(&[
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
    let Some(registry) = Registry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let reference = registry.reference("os-placement/policy:v0.1.0");
    push_with_tool(&wasm, &reference);
    let (manifest, _) = registry.manifest("os-placement/policy", "v0.1.0");
    let layer = registry.blob_file(manifest["layers"][0]["digest"].as_str().unwrap());
    let mut bytes = std::fs::read(&layer).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&layer, &bytes).unwrap();

    let err = oci::pull(&reference, &RegistryOptions::default()).unwrap_err();
    let message = format!("{err:#}");
    assert!(message.to_lowercase().contains("digest"), "{message}");
    let out = dir.path().join("pulled.wasm");
    let output = release(&["pull", &reference, "--output-path", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(!out.exists());
}
