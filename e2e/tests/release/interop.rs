//! Interop with the real Kubewarden tools (`$KUBEWARDEN_BIN`, else
//! `../shared/kubewarden`): kwctl pulls what we push and we pull what kwctl
//! pushes, with the same manifest; policy-server loads our module from the
//! local registry and answers every example case as our host does, and
//! refuses to start on bad settings with our message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use os_placement_e2e::policy_server::{comparable, PolicyServer};
use os_placement_e2e::review::review_of;
use os_placement_e2e::{load_cases, read_yaml, repo_root, LoadedPolicy};
use serde_json::{json, Value};

use crate::registry::Registry;
use crate::support::{
    annotated_bytes, annotated_module, assert_success, kwctl, policy_server, run_kwctl,
    write_annotated,
};

/// Sources allowing plain HTTP to the test registry (kwctl and policy-server).
fn insecure(registry: &Registry) -> Value {
    json!({"insecure_sources": [format!("127.0.0.1:{}", registry.port)]})
}

/// The kwctl sources file of [`insecure`].
fn sources(dir: &Path, registry: &Registry) -> PathBuf {
    let path = dir.join("sources.json");
    std::fs::write(&path, serde_json::to_vec(&insecure(registry)).unwrap()).unwrap();
    path
}

fn release(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_os-placement-release"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn kwctl_pulls_what_we_push_and_we_pull_what_kwctl_pushes() {
    let Some(kwctl) = kwctl() else { return };
    let Some(registry) = Registry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let sources = sources(dir.path(), &registry);
    let sources = sources.to_str().unwrap();

    let ours = registry.reference("os-placement/ours:v0.1.0");
    let pushed = release(&["push", wasm.to_str().unwrap(), &ours]);
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let kwctl_out = dir.path().join("kwctl-pulled.wasm");
    let pulled = run_kwctl(
        &kwctl,
        dir.path(),
        &[
            "pull",
            "--sources-path",
            sources,
            &ours,
            "--output-path",
            kwctl_out.to_str().unwrap(),
        ],
    );
    assert_success("kwctl pull", &pulled);
    assert_eq!(std::fs::read(&kwctl_out).unwrap(), annotated_bytes());

    let theirs = registry.reference("os-placement/theirs:v0.1.0");
    let pushed = run_kwctl(
        &kwctl,
        dir.path(),
        &[
            "push",
            "--sources-path",
            sources,
            wasm.to_str().unwrap(),
            &theirs,
        ],
    );
    assert_success("kwctl push", &pushed);
    let our_out = dir.path().join("our-pulled.wasm");
    let output = release(&["pull", &theirs, "--output-path", our_out.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read(&our_out).unwrap(), annotated_bytes());

    // The same module pushed by both tools: the same manifest, field by field.
    let (our_manifest, our_digest) = registry.manifest("os-placement/ours", "v0.1.0");
    let (kwctl_manifest, kwctl_digest) = registry.manifest("os-placement/theirs", "v0.1.0");
    for field in [
        "schemaVersion",
        "mediaType",
        "config",
        "layers",
        "annotations",
        "artifactType",
    ] {
        assert_eq!(
            our_manifest.get(field),
            kwctl_manifest.get(field),
            "{field}"
        );
    }
    assert_eq!(our_manifest, kwctl_manifest);
    assert_eq!(our_digest, kwctl_digest);
}

/// The settings file of a case, by policy id: the file stem, `defaults` for none.
fn policy_id(settings: Option<&Path>) -> String {
    settings.and_then(|p| p.file_stem()).map_or_else(
        || "defaults".to_owned(),
        |s| s.to_string_lossy().replace('.', "-"),
    )
}

#[test]
fn policy_server_serves_our_module_from_the_registry_as_our_host_answers() {
    let Some(binary) = policy_server() else {
        return;
    };
    let Some(registry) = Registry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let reference = registry.reference("os-placement/policy:v0.1.0");
    let pushed = release(&["push", wasm.to_str().unwrap(), &reference]);
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );

    let root = repo_root();
    let cases = load_cases(&root.join("examples/cases.yaml")).unwrap();
    // One policy per settings file, all from the registry.
    let mut policies = BTreeMap::new();
    let mut ours = BTreeMap::new();
    for case in &cases {
        let id = policy_id(case.settings.as_deref());
        if policies.contains_key(&id) {
            continue;
        }
        let mut settings = match &case.settings {
            Some(path) => read_yaml(&root.join(path)).unwrap(),
            None => json!({}),
        };
        // Rules only: with image lookups off the module asks neither host for
        // an image (their host-capability errors differ in wording).
        if let Some(map) = settings.as_object_mut() {
            map.insert("imageLookup".into(), "off".into());
        }
        policies.insert(
            id.clone(),
            json!({"module": reference, "settings": settings, "allowedToMutate": true}),
        );
        let module = annotated_module();
        ours.insert(id, LoadedPolicy::load(module, settings).unwrap());
    }
    let mut server = PolicyServer::spawn(
        &binary,
        dir.path(),
        &json!(policies),
        Some(&insecure(&registry)),
    )
    .unwrap();
    server
        .wait_ready(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e:#}"));

    let mut compared = 0;
    for case in &cases {
        let resolved = case.resolve(&root).unwrap();
        let review = review_of(&resolved.request());
        let id = policy_id(case.settings.as_deref());
        let expected = ours[&id].review(&review).unwrap();
        let answered = server
            .validate(&id, &review)
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.name));
        assert_eq!(
            answered["apiVersion"], "admission.k8s.io/v1",
            "{}",
            case.name
        );
        assert_eq!(answered["kind"], "AdmissionReview", "{}", case.name);
        assert_eq!(
            comparable(&answered),
            comparable(&expected),
            "{}",
            case.name
        );
        compared += 1;
    }
    assert_eq!(compared, cases.len());
    assert!(compared >= 20, "only {compared} cases");
}

#[test]
fn policy_server_refuses_bad_settings_with_our_message() {
    let Some(binary) = policy_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wasm = write_annotated(dir.path());
    let policies = json!({"bad": {
        "module": format!("file://{}", wasm.display()),
        "settings": {"windowsTaint": {"key": "os", "value": "windows", "effect": "Sometimes"}},
    }});
    let mut server = PolicyServer::spawn(&binary, dir.path(), &policies, None).unwrap();
    let status = server.wait_exit(Duration::from_secs(120));
    assert!(
        status.is_some(),
        "policy-server started with invalid settings"
    );
    assert!(!status.unwrap().success());
    let text = server.logs();
    assert!(text.contains("windowsTaint.effect"), "{text}");
    // Our own host refuses the same settings with the same line.
    let ours = LoadedPolicy::load(annotated_module(), policies["bad"]["settings"].clone())
        .unwrap_err()
        .to_string();
    let line = ours
        .lines()
        .find(|l| l.contains("windowsTaint.effect"))
        .unwrap();
    let line = line.trim_start_matches("the policy settings are not valid: ");
    assert!(text.contains(line), "{line:?} not in {text}");
}
