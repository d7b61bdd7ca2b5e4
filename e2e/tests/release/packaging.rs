//! Packaging generated from or checked against metadata.yml: the Artifact
//! Hub package and the ClusterAdmissionPolicy manifests in deploy/.

use os_placement_e2e::artifacthub::{artifacthub_package, created_at_of, PackageInputs};
use os_placement_e2e::{read_yaml, repo_root};
use serde_json::Value;

use crate::support::{annotated_module, metadata_yml};

fn yaml_value(text: &str) -> Value {
    serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(text).unwrap()).unwrap()
}

fn version() -> String {
    metadata_yml()["annotations"]["io.kubewarden.policy.version"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn image() -> String {
    let oci = metadata_yml()["annotations"]["io.kubewarden.policy.ociUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    format!("{oci}:v{}", version())
}

#[test]
fn artifacthub_package_is_generated_from_metadata() {
    let path = repo_root().join("artifacthub-pkg.yml");
    let checked_in = std::fs::read_to_string(&path).unwrap();
    let created_at = created_at_of(&checked_in).expect("artifacthub-pkg.yml has no createdAt");
    let generated = artifacthub_package(
        &metadata_yml(),
        &PackageInputs {
            created_at,
            questions: None,
        },
    )
    .unwrap();
    assert!(
        generated == checked_in,
        "artifacthub-pkg.yml is out of step with metadata.yml: run `make artifacthub`\n--- expected\n{generated}"
    );
}

/// Independent of the generator: the fields Artifact Hub shows agree with metadata.yml.
#[test]
fn artifacthub_package_agrees_with_metadata() {
    let package = read_yaml(&repo_root().join("artifacthub-pkg.yml")).unwrap();
    let metadata = metadata_yml();
    let annotations = &metadata["annotations"];
    assert_eq!(package["version"].as_str(), Some(version().as_str()));
    assert_eq!(package["name"], annotations["io.kubewarden.policy.title"]);
    assert_eq!(
        package["displayName"],
        annotations["io.artifacthub.displayName"]
    );
    assert_eq!(
        package["description"],
        annotations["io.kubewarden.policy.description"]
    );
    assert_eq!(
        package["license"],
        annotations["io.kubewarden.policy.license"]
    );
    assert_eq!(
        package["containersImages"][0]["image"].as_str(),
        Some(image().as_str())
    );
    assert!(package["install"].as_str().unwrap().contains(&image()));
    let package_annotations = &package["annotations"];
    assert_eq!(
        package_annotations["kubewarden/mutation"].as_str(),
        Some(metadata["mutating"].to_string().as_str())
    );
    assert_eq!(
        package_annotations["kubewarden/resources"],
        annotations["io.artifacthub.resources"]
    );
    let rules = yaml_value(package_annotations["kubewarden/rules"].as_str().unwrap());
    assert_eq!(rules, metadata["rules"]);
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
