//! The image cases through Kubewarden's own policy-server (`$KUBEWARDEN_BIN`,
//! else `../shared/kubewarden`): its OCI host calls reach the test registry,
//! listed in `insecure_sources`, and its answers must equal our host's for the
//! same AdmissionReviews. Without a Kubernetes API server on this machine,
//! policy-server answers every Kubernetes host call with an error
//! (`--ignore-kubernetes-connection-failure`), so only cases that need no
//! cluster run here; the cluster cases run through our host (`policy.rs`).

use std::sync::Arc;
use std::time::Duration;

use os_placement_e2e::capabilities::{ContextHost, Registries};
use os_placement_e2e::external;
use os_placement_e2e::policy_server::{comparable, PolicyServer};
use os_placement_e2e::registry::free_port;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, repo_root, wasm_path, LoadedPolicy, PolicyModule};
use serde_json::{json, Value};
use xtask::annotate::{annotate_file, AnnotateFiles};

use super::evaluation::pod;
use super::support::registry_with_images;

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
    let root = repo_root();
    let files = AnnotateFiles {
        wasm: &wasm_path(),
        metadata: &root.join("metadata.yml"),
        usage: Some(&root.join("README.md")),
        output: &wasm,
    };
    annotate_file(&files, "v1").expect("run `make build` first");
    let bytes = std::fs::read(&wasm).unwrap();
    // Admission-time lookups (imageFacts: registry): policy-server runs
    // without a Kubernetes API here; the published facts are measured
    // through it in the fault suite (e2e/tests/faults).
    let eks = json!({"imageFacts": "registry",
        "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let down = format!("127.0.0.1:{}", free_port().unwrap());
    let mut settings = serde_json::Map::new();
    settings.insert("eks".to_owned(), eks.clone());
    // Untainted Windows nodes: a Linux pod gets the selector, so Linux shows.
    settings.insert(
        "none".to_owned(),
        json!({"defaultOS": "none", "imageFacts": "registry"}),
    );
    settings.insert(
        "eks-reject".to_owned(),
        json!({"lookupFailure": "reject", "imageFacts": "registry", "windowsTaint": eks["windowsTaint"]}),
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
    let sources = json!({"insecure_sources": insecure});
    let mut server = PolicyServer::spawn(
        &binary,
        dir.path(),
        &Value::Object(policies),
        Some(&sources),
    )
    .unwrap();
    server
        .wait_ready(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e:#}"));

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
        let theirs = server.validate(id, &review).unwrap();
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
    let images_asked = |calls: &[os_placement_e2e::capabilities::HostCall]| {
        calls.iter().filter(|c| c.namespace == "oci").count()
    };
    assert_eq!(images_asked(&ours_ungranted.calls()), 1);
    // The lookups really happened on both sides.
    assert!(
        ours.calls()
            .iter()
            .any(|c| c.operation == "v1/oci_manifest_config"),
        "{:?}",
        ours.calls()
    );
}
