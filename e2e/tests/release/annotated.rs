//! The annotated module (`make annotated-policy.wasm`): the metadata section
//! read back and checked against metadata.yml and README.md, the module still
//! evaluating, and the real kwctl agreeing with it.

use os_placement_e2e::{admission_request, read_yaml, repo_root, LoadedPolicy};
use serde_json::{json, Value};
use wasmparser::{Parser, Payload};
use xtask::annotate::{read_metadata, METADATA_SECTION, USAGE_ANNOTATION};

use super::support::{
    annotated_bytes, annotated_module, assert_success, kwctl, metadata_yml, policy_bytes, readme,
    run_kwctl, write_annotated,
};

fn embedded() -> Value {
    read_metadata(annotated_bytes())
        .unwrap()
        .expect("no io.kubewarden.metadata section")
}

#[test]
fn every_metadata_field_is_embedded() {
    let embedded = embedded();
    let metadata = metadata_yml();
    for (key, value) in metadata.as_object().unwrap() {
        if key == "annotations" {
            continue;
        }
        assert_eq!(&embedded[key], value, "{key}");
    }
    for (key, value) in metadata["annotations"].as_object().unwrap() {
        assert_eq!(&embedded["annotations"][key], value, "annotations.{key}");
    }
    // What the module answers through waPC, as kwctl asks it.
    assert_eq!(embedded["protocolVersion"], "v1");
    assert_eq!(
        embedded["protocolVersion"],
        super::support::protocol_version()
    );
    assert_eq!(embedded["annotations"][USAGE_ANNOTATION], readme());
    // kwctl's default for a field metadata.yml leaves out.
    assert_eq!(metadata.get("policyType"), None);
    assert_eq!(embedded["policyType"], "kubernetes");
    // Nothing but metadata.yml, the protocol version, the default and the usage text.
    assert_eq!(
        embedded.as_object().unwrap().len(),
        metadata.as_object().unwrap().len() + 2
    );
    assert_eq!(
        embedded["annotations"].as_object().unwrap().len(),
        metadata["annotations"].as_object().unwrap().len() + 1
    );
}

#[test]
fn the_rest_of_the_module_is_unchanged() {
    let original = policy_bytes();
    let annotated = annotated_bytes();
    assert_eq!(&annotated[..original.len()], original);
    let sections: Vec<String> = Parser::new(0)
        .parse_all(annotated)
        .filter_map(|p| match p.unwrap() {
            Payload::CustomSection(c) => Some(c.name().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        sections.iter().filter(|n| *n == METADATA_SECTION).count(),
        1,
        "{sections:?}"
    );
    assert_eq!(sections.last().map(String::as_str), Some(METADATA_SECTION));
    wasmparser::Validator::new()
        .validate_all(annotated)
        .unwrap();
}

#[test]
fn the_annotated_module_evaluates() {
    let settings = read_yaml(&repo_root().join("examples/settings/eks.yaml")).unwrap();
    let policy = LoadedPolicy::load(annotated_module(), settings).unwrap();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "iis", "namespace": "web"},
        "spec": {"containers": [{"name": "iis", "image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}]}
    });
    let evaluation = policy
        .evaluate(&admission_request(&pod, "CREATE", None, None))
        .unwrap();
    assert!(evaluation.response.accepted, "{:?}", evaluation.response);
    let placed = evaluation.resulting_object(&pod);
    assert_eq!(
        placed["spec"]["nodeSelector"]["kubernetes.io/os"],
        "windows"
    );
    assert_eq!(
        placed["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
    assert_eq!(
        annotated_module()
            .instantiate()
            .unwrap()
            .protocol_version()
            .unwrap(),
        "v1"
    );
}

/// What kwctl annotate embeds equals what we embed, but for the annotation
/// naming kwctl's own version.
#[test]
fn kwctl_annotate_embeds_the_same_metadata() {
    let Some(kwctl) = kwctl() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("policy.wasm");
    std::fs::write(&input, policy_bytes()).unwrap();
    let output = dir.path().join("kwctl-annotated.wasm");
    let root = repo_root();
    let result = run_kwctl(
        &kwctl,
        dir.path(),
        &[
            "annotate",
            input.to_str().unwrap(),
            "--metadata-path",
            root.join("metadata.yml").to_str().unwrap(),
            "--usage-path",
            root.join("README.md").to_str().unwrap(),
            "--output-path",
            output.to_str().unwrap(),
        ],
    );
    assert_success("kwctl annotate", &result);
    let mut theirs = read_metadata(&std::fs::read(&output).unwrap())
        .unwrap()
        .expect("kwctl wrote no metadata section");
    let kwctl_version = theirs["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("io.kubewarden.kwctl");
    assert!(
        kwctl_version.is_some(),
        "kwctl no longer names itself: {theirs}"
    );
    assert_eq!(theirs, embedded());
}

/// kwctl inspect reads our annotated module.
#[test]
fn kwctl_inspect_reads_our_module() {
    let Some(kwctl) = kwctl() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = write_annotated(dir.path());
    let result = run_kwctl(
        &kwctl,
        dir.path(),
        &["inspect", "-o", "yaml", path.to_str().unwrap()],
    );
    let stdout = assert_success("kwctl inspect", &result);
    let inspected: Value = xtask::yaml::parse("kwctl inspect", &stdout).unwrap();
    let inspected = inspected.get("metadata").cloned().unwrap_or(inspected);
    assert_eq!(inspected["protocolVersion"], "v1", "{stdout}");
    assert_eq!(inspected["rules"], metadata_yml()["rules"], "{stdout}");
    assert_eq!(inspected["mutating"], true, "{stdout}");
    assert_eq!(
        inspected["annotations"]["io.kubewarden.policy.title"],
        "os-placement"
    );
}
