//! The ClusterAdmissionPolicy manifests in deploy/: they agree with
//! metadata.yml, and the policy module accepts their settings.

use os_placement_e2e::{read_yaml, repo_root};
use serde_json::Value;

use super::support::{annotated_module, metadata_yml};

fn image() -> String {
    let annotations = &metadata_yml()["annotations"];
    format!(
        "{}:v{}",
        annotations["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
        annotations["io.kubewarden.policy.version"]
            .as_str()
            .unwrap()
    )
}

const DEPLOY: [&str; 5] = ["eks", "gke", "aks", "runtimeclass", "monitor"];

#[test]
fn deploy_manifests_match_metadata_and_their_settings_are_valid() {
    let metadata = metadata_yml();
    for name in DEPLOY {
        let path = repo_root().join(format!("deploy/{name}.yaml"));
        let policy = read_yaml(&path).unwrap();
        let spec = &policy["spec"];
        assert_eq!(policy["apiVersion"], "policies.kubewarden.io/v1", "{name}");
        assert_eq!(policy["kind"], "ClusterAdmissionPolicy", "{name}");
        assert_eq!(spec["rules"], metadata["rules"], "{name}: rules");
        assert_eq!(spec["mutating"], metadata["mutating"], "{name}: mutating");
        assert_eq!(
            spec["contextAwareResources"], metadata["contextAwareResources"],
            "{name}: contextAwareResources"
        );
        assert_eq!(
            spec["backgroundAudit"], metadata["backgroundAudit"],
            "{name}"
        );
        assert_eq!(
            spec["module"].as_str(),
            Some(format!("registry://{}", image()).as_str()),
            "{name}: module"
        );
        assert_eq!(spec["failurePolicy"], "Fail", "{name}");
        let excluded = &spec["namespaceSelector"]["matchExpressions"][0];
        assert_eq!(excluded["operator"], "NotIn", "{name}");
        assert!(
            excluded["values"]
                .as_array()
                .unwrap()
                .contains(&Value::from("kube-system")),
            "{name}: kube-system not excluded"
        );
        let expected_mode = if name == "monitor" {
            "monitor"
        } else {
            "protect"
        };
        assert_eq!(spec["mode"], expected_mode, "{name}");
        // policy-server refuses to load a policy whose settings fail validate_settings.
        let answer = annotated_module()
            .instantiate()
            .unwrap()
            .validate_settings(&spec["settings"])
            .unwrap();
        assert!(answer.valid, "{name}: {answer:?}");
    }
}

#[test]
fn deploy_settings_are_the_example_settings() {
    // The manifests carry the documented example settings, so `make run` shows what they do.
    for (deploy, example) in [
        ("eks", "eks"),
        ("gke", "gke"),
        ("aks", "aks"),
        ("runtimeclass", "runtimeclass"),
        ("monitor", "eks"),
    ] {
        let policy = read_yaml(&repo_root().join(format!("deploy/{deploy}.yaml"))).unwrap();
        let settings =
            read_yaml(&repo_root().join(format!("examples/settings/{example}.yaml"))).unwrap();
        assert_eq!(policy["spec"]["settings"], settings, "{deploy}");
    }
}
