//! The packaging agrees with what the policy does: metadata.yml rules cover
//! exactly the kinds and operations it evaluates, the README's policy
//! manifest uses the same rules, and every example settings file is valid.

use std::path::Path;

use os_placement_e2e::{read_yaml, repo_root};
use serde_json::{json, Value};

use super::host;

fn metadata() -> Value {
    read_yaml(&repo_root().join("metadata.yml")).unwrap()
}

/// (resource, operations) pairs, sorted, from a `rules` list.
fn rule_set(rules: &Value) -> Vec<(String, Vec<String>)> {
    let mut set = Vec::new();
    for rule in rules.as_array().unwrap() {
        let group = rule["apiGroups"][0].as_str().unwrap();
        let mut operations: Vec<String> = rule["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().to_string())
            .collect();
        operations.sort();
        for resource in rule["resources"].as_array().unwrap() {
            set.push((
                format!("{group}/{}", resource.as_str().unwrap()),
                operations.clone(),
            ));
        }
    }
    set.sort();
    set
}

#[test]
fn metadata_rules_cover_pods_and_every_workload_kind() {
    let both = vec!["CREATE".to_string(), "UPDATE".to_string()];
    let mut expected = vec![
        ("/pods".to_string(), vec!["CREATE".to_string()]),
        (
            "/pods/ephemeralcontainers".to_string(),
            vec!["UPDATE".to_string()],
        ),
        ("/replicationcontrollers".to_string(), both.clone()),
    ];
    for resource in [
        "apps/deployments",
        "apps/replicasets",
        "apps/statefulsets",
        "apps/daemonsets",
    ] {
        expected.push((resource.to_string(), both.clone()));
    }
    for resource in ["batch/jobs", "batch/cronjobs"] {
        expected.push((resource.to_string(), both.clone()));
    }
    expected.sort();
    assert_eq!(rule_set(&metadata()["rules"]), expected);
}

#[test]
fn metadata_declares_a_mutating_wapc_policy_with_its_annotations() {
    let m = metadata();
    assert_eq!(m["mutating"], json!(true));
    assert_eq!(m["backgroundAudit"], json!(true));
    assert_eq!(m["executionMode"], "kubewarden-wapc");
    let annotations = m["annotations"].as_object().unwrap();
    for key in [
        "io.kubewarden.policy.title",
        "io.kubewarden.policy.description",
        "io.kubewarden.policy.author",
        "io.kubewarden.policy.url",
        "io.kubewarden.policy.source",
        "io.kubewarden.policy.license",
        "io.kubewarden.policy.severity",
        "io.kubewarden.policy.category",
        "io.artifacthub.displayName",
        "io.artifacthub.resources",
        "io.artifacthub.keywords",
    ] {
        let value = annotations.get(key).and_then(Value::as_str);
        // OCI manifest annotations carry single-line values only.
        assert!(
            value.is_some_and(|v| !v.is_empty() && !v.contains('\n')),
            "{key}: {value:?}"
        );
    }
}

#[test]
fn documented_policy_manifest_uses_the_metadata_rules() {
    let readme = std::fs::read_to_string(repo_root().join("docs/deploy.md")).unwrap();
    let start = readme.find("kind: ClusterAdmissionPolicy").unwrap();
    let block_start = readme[..start].rfind("```yaml").unwrap() + "```yaml".len();
    let block_end = block_start + readme[block_start..].find("```").unwrap();
    let manifest: Value = os_placement_door::read_one(&readme[block_start..block_end])
        .unwrap()
        .unwrap()
        .to_json();
    assert_eq!(
        rule_set(&manifest["spec"]["rules"]),
        rule_set(&metadata()["rules"])
    );
    let answer = host()
        .validate_settings(&manifest["spec"]["settings"])
        .unwrap();
    assert!(answer.valid, "docs/deploy.md settings: {answer:?}");
}

#[test]
fn every_example_settings_file_is_valid() {
    let dir = repo_root().join("examples/settings");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let answer = host()
                .validate_settings(&read_yaml(Path::new(&path)).unwrap())
                .unwrap();
            assert!(answer.valid, "{}: {answer:?}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} settings files");
}

#[test]
fn invalid_settings_get_every_problem_with_its_path() {
    let answer = host()
        .validate_settings(&json!({
            "mutate": "yes",
            "windowsTaint": {"key": "os", "effect": "Sometimes"},
            "runtimeClasses": [{"name": "Windows_2022", "scheduling": {"nodeSelector": {"node.kubernetes.io/windows-build": "2022"}}}],
            "windowsImages": [{"pattern": "registry.example.com/[win/*"}]
        }))
        .unwrap();
    assert!(!answer.valid);
    let message = answer.message.unwrap_or_default();
    for path in [
        "mutate:",
        "windowsTaint.effect:",
        "runtimeClasses[0].name:",
        "runtimeClasses[0].scheduling.nodeSelector[node.kubernetes.io/windows-build]:",
        "windowsImages[0].pattern:",
    ] {
        assert!(message.contains(path), "{path} missing from {message:?}");
    }
}
