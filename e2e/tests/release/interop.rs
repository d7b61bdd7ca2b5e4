//! Interop with the real policy-server (`$KUBEWARDEN_BIN`, else
//! `../shared/kubewarden`): it loads our module from a local registry and
//! answers every example case as our host does, and refuses to start on bad
//! settings with our message. (kwctl push/pull and signatures: xtask's tests.)

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use os_placement_e2e::policy_server::{comparable, PolicyServer};
use os_placement_e2e::registry::LocalRegistry;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{load_cases, read_yaml, repo_root, LoadedPolicy};
use serde_json::{json, Value};
use xtask::oci::{self, RegistryOptions};

use super::support::{annotated_bytes, annotated_module, policy_server, write_annotated};

/// Sources allowing plain HTTP to the test registry.
fn insecure(registry: &LocalRegistry) -> Value {
    json!({"insecure_sources": [registry.host()]})
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
    let Some(registry) = LocalRegistry::start().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let reference = registry.reference("os-placement/policy:v0.1.0");
    oci::push(annotated_bytes(), &reference, &RegistryOptions::default()).unwrap();

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
