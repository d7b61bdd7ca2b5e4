//! The image cases through Kubewarden's own policy-server (`$KUBEWARDEN_BIN`,
//! else `../shared/kubewarden`): its OCI host calls reach the test registry,
//! listed in `insecure_sources`, and its answers must equal our host's for the
//! same AdmissionReviews. Without a Kubernetes API server on this machine,
//! policy-server answers every Kubernetes host call with an error
//! (`--ignore-kubernetes-connection-failure`), so only cases that need no
//! cluster run here; the cluster cases run through our host (`policy.rs`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use os_placement_e2e::annotate::{
    annotate_bytes, embedded_metadata, load_metadata, protocol_version,
};
use os_placement_e2e::capabilities::{ContextHost, Registries};
use os_placement_e2e::external;
use os_placement_e2e::registry::free_port;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, repo_root, wasm_path, LoadedPolicy, PolicyModule};
use serde_json::{json, Value};

use crate::evaluation::pod;
use crate::support::registry_with_images;

/// A policy-server process, killed and reaped on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Best effort: the process may already be gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The built module annotated as `make annotated-policy.wasm` does.
fn annotated() -> Vec<u8> {
    let module = std::fs::read(wasm_path()).expect("run `make build` first");
    let metadata = load_metadata(&repo_root().join("metadata.yml")).unwrap();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let protocol = protocol_version(&module).unwrap();
    annotate_bytes(
        &module,
        &embedded_metadata(metadata, &protocol, Some(&readme)),
    )
    .unwrap()
}

/// One POST; the body of the answer as JSON.
fn post(port: u16, path: &str, body: &Value) -> Value {
    let body = serde_json::to_vec(body).unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(stream, "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()).unwrap();
    stream.write_all(&body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let (head, rest) = raw.split_at(split + 4);
    assert!(
        head.starts_with(b"HTTP/1.0 200") || head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    serde_json::from_slice(rest).unwrap()
}

fn ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let mut head = [0_u8; 12];
    stream.write_all(b"GET /readiness HTTP/1.0\r\n\r\n").is_ok()
        && stream.read_exact(&mut head).is_ok()
        && head.ends_with(b" 200")
}

fn start(binary: &Path, dir: &Path, policies: &Value, insecure: &[String]) -> Server {
    let policies_path = dir.join("policies.yml");
    std::fs::write(&policies_path, serde_json::to_vec(policies).unwrap()).unwrap();
    let sources = dir.join("sources.json");
    std::fs::write(&sources, json!({"insecure_sources": insecure}).to_string()).unwrap();
    let downloads = dir.join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let (port, probe) = (free_port().unwrap(), free_port().unwrap());
    let log = dir.join("policy-server.log");
    let child = Command::new(binary)
        .args(["--policies", policies_path.to_str().unwrap()])
        .args(["--sources-path", sources.to_str().unwrap()])
        .args(["--addr", "127.0.0.1", "--port", &port.to_string()])
        .args(["--readiness-probe-port", &probe.to_string()])
        .args(["--policies-download-dir", downloads.to_str().unwrap()])
        .args([
            "--workers",
            "2",
            "--log-no-color",
            "--ignore-kubernetes-connection-failure",
        ])
        .env("HOME", dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("policy-server.err")).unwrap())
        .spawn()
        .unwrap();
    let mut server = Server { child, port };
    let started = Instant::now();
    while !ready(probe) {
        let exited = server.child.try_wait().unwrap();
        if exited.is_some() || started.elapsed() > Duration::from_secs(120) {
            let out = std::fs::read_to_string(&log).unwrap_or_default();
            let err = std::fs::read_to_string(dir.join("policy-server.err")).unwrap_or_default();
            panic!("policy-server not ready ({exited:?}):\n{out}\n{err}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    server
}

/// What must be equal between two AdmissionReview responses.
fn comparable(review: &Value) -> Value {
    let response = &review["response"];
    let patch = response["patch"].as_str().map(|p| {
        let bytes = base64::engine::general_purpose::STANDARD.decode(p).unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    json!({
        "allowed": response["allowed"],
        "message": response["status"]["message"],
        "warnings": response["warnings"].as_array().cloned().unwrap_or_default(),
        "patch": patch,
    })
}

#[test]
fn policy_server_looks_images_up_in_the_registry_as_our_host_does() {
    let Some(binary) = external::kubewarden_tool("policy-server").unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    let Some((registry, images)) = registry_with_images() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("annotated-policy.wasm");
    let bytes = annotated();
    std::fs::write(&wasm, &bytes).unwrap();
    let eks = json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let down = format!("127.0.0.1:{}", free_port().unwrap());
    let mut settings = serde_json::Map::new();
    settings.insert("eks".to_owned(), eks.clone());
    // Untainted Windows nodes: a Linux pod gets the selector, so Linux shows.
    settings.insert("none".to_owned(), json!({"defaultOS": "none"}));
    settings.insert(
        "eks-reject".to_owned(),
        json!({"lookupFailure": "reject", "windowsTaint": eks["windowsTaint"]}),
    );
    settings.insert("ungranted".to_owned(), eks.clone());
    // policy-server denies every host capability a policy is not granted
    // (`hostCapabilities` of the policy; none by default).
    let granted = json!(["oci/v1/oci_manifest", "oci/v1/oci_manifest_config"]);
    let policies: serde_json::Map<String, Value> = settings
        .iter()
        .map(|(id, s)| {
            let mut policy = json!({"module": format!("file://{}", wasm.display()),
                                    "settings": s, "allowedToMutate": true});
            if id != "ungranted" {
                policy["hostCapabilities"] = granted.clone();
            }
            (id.clone(), policy)
        })
        .collect();
    let insecure = [registry.host(), down.clone()];
    let server = start(&binary, dir.path(), &Value::Object(policies), &insecure);

    let ours = Arc::new(ContextHost::new().with_registries(Registries::new(&insecure).unwrap()));
    let ours_ungranted = Arc::new(
        ContextHost::new()
            .with_registries(Registries::new(&insecure).unwrap())
            .granting(&[]),
    );
    let compiled = PolicyModule::from_bytes(&bytes).unwrap();
    let module = Arc::new(compiled.with_host_calls(ours.clone()));
    let ungranted = Arc::new(
        PolicyModule::from_bytes(&bytes)
            .unwrap()
            .with_host_calls(ours_ungranted.clone()),
    );
    let missing = format!("{down}/corp/billing:4.2");
    let cases = [
        (
            "eks",
            pod("reports", &[&images.windows_single.reference], json!({})),
        ),
        (
            "none",
            pod("billing", &[&images.linux.reference], json!({})),
        ),
        (
            "eks",
            pod(
                "pause",
                &[&images.pause.reference],
                json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
            ),
        ),
        (
            "eks",
            pod("ledger", &[&images.windows_multi.reference], json!({})),
        ),
        (
            "eks",
            pod("batch", &[&images.windows_2025.reference], json!({})),
        ),
        ("eks", pod("down", &[&missing], json!({}))),
        ("eks-reject", pod("down", &[&missing], json!({}))),
        (
            "ungranted",
            pod("reports", &[&images.windows_single.reference], json!({})),
        ),
    ];
    for (id, object) in &cases {
        let review = review_of(&admission_request(object, "CREATE", None, None));
        let theirs = post(server.port, &format!("/validate/{id}"), &review);
        let host = if *id == "ungranted" {
            &ungranted
        } else {
            &module
        };
        let expected = LoadedPolicy::load(host.clone(), settings[*id].clone())
            .unwrap()
            .review(&review)
            .unwrap();
        let (theirs, expected) = (comparable(&theirs), comparable(&expected));
        let name = object["metadata"]["name"].as_str().unwrap();
        eprintln!("policy-server {id} {name}: {theirs}");
        if name == "down" {
            // The error texts of the two OCI clients differ; the verdict, the
            // patch and a warning or message naming the image do not.
            assert_eq!(
                (&theirs["allowed"], &theirs["patch"]),
                (&expected["allowed"], &expected["patch"]),
                "{id} {name}"
            );
            assert!(theirs.to_string().contains(&missing), "{theirs}");
        } else {
            assert_eq!(theirs, expected, "{id} {name}");
        }
    }
    // Without the grant, the lookup was refused and the policy fell back.
    assert_eq!(ours_ungranted.calls().len(), 1);
    // The lookups really happened on both sides.
    assert!(
        ours.calls()
            .iter()
            .any(|c| c.operation == "v1/oci_manifest_config"),
        "{:?}",
        ours.calls()
    );
}
