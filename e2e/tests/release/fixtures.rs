//! The data-file scenarios of `e2e/fixtures/` (see its README) through the
//! annotated module: each request as a bare AdmissionRequest and as an
//! AdmissionReview, both checked against `expected.yaml`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use os_placement_e2e::review::review_of;
use os_placement_e2e::{admission_request, read_yaml, repo_root, LoadedPolicy};
use serde_json::Value;

use super::support::annotated_module;

fn scenarios() -> Vec<PathBuf> {
    let dir = repo_root().join("e2e/fixtures");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    folders
}

fn name(folder: &Path) -> String {
    folder.file_name().unwrap().to_string_lossy().into_owned()
}

fn settings(folder: &Path) -> Value {
    match read_yaml(&folder.join("settings.yaml")).unwrap() {
        Value::Null => Value::Object(Default::default()),
        other => other,
    }
}

fn fragments(expected: &Value) -> Vec<String> {
    expected["messageContains"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// Differences between one answer (allowed, message, patch) and `expected.yaml`.
fn check(expected: &Value, allowed: bool, message: &str, patch: Option<Value>) -> Vec<String> {
    let mut problems = Vec::new();
    if Some(allowed) != expected["allowed"].as_bool() {
        problems.push(format!(
            "allowed {allowed}, expected {}",
            expected["allowed"]
        ));
    }
    for fragment in fragments(expected) {
        if !message.contains(&fragment) {
            problems.push(format!("message {message:?} lacks {fragment:?}"));
        }
    }
    let patch = patch.unwrap_or(Value::Null);
    if patch != expected["patch"] {
        problems.push(format!("patch {patch}, expected {}", expected["patch"]));
    }
    problems
}

fn run_object(folder: &Path, expected: &Value) -> Vec<String> {
    let object = read_yaml(&folder.join("object.yaml")).unwrap();
    let settings = settings(folder);
    let policy = match LoadedPolicy::load(annotated_module(), settings.clone()) {
        Ok(policy) => policy,
        Err(e) => return vec![format!("settings refused: {e:#}")],
    };
    let request = admission_request(&object, "CREATE", None, None);
    let mut problems = Vec::new();

    // A bare AdmissionRequest through waPC.
    let evaluation = annotated_module()
        .instantiate()
        .unwrap()
        .validate(&request, &settings)
        .unwrap();
    let bare_patch = evaluation
        .patch
        .filter(|p| !p.0.is_empty())
        .map(|p| serde_json::to_value(p).unwrap());
    let answer = &evaluation.response;
    for problem in check(expected, answer.accepted, answer.message(), bare_patch) {
        problems.push(format!("AdmissionRequest: {problem}"));
    }

    // A full AdmissionReview through the policy-server-faithful host.
    let review = policy.review(&review_of(&request)).unwrap();
    let response = &review["response"];
    if response["uid"] != request["uid"] {
        problems.push("AdmissionReview: uid not echoed".to_owned());
    }
    let patch = response["patch"].as_str().map(|p| {
        let bytes = base64::engine::general_purpose::STANDARD.decode(p).unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    let message = response["status"]["message"].as_str().unwrap_or_default();
    let allowed = response["allowed"].as_bool().unwrap_or_default();
    for problem in check(expected, allowed, message, patch) {
        problems.push(format!("AdmissionReview: {problem}"));
    }
    problems
}

fn run_bad_settings(folder: &Path, expected: &Value) -> Vec<String> {
    assert_eq!(
        expected["valid"],
        false,
        "{}: only invalid settings are listed",
        name(folder)
    );
    match LoadedPolicy::load(annotated_module(), settings(folder)) {
        Ok(_) => vec!["settings accepted".to_owned()],
        Err(e) => {
            let message = format!("{e:#}");
            fragments(expected)
                .into_iter()
                .filter(|f| !message.contains(f.as_str()))
                .map(|f| format!("message {message:?} lacks {f:?}"))
                .collect()
        }
    }
}

#[test]
fn every_fixture_gives_what_it_expects() {
    let folders = scenarios();
    let mut failures = Vec::new();
    let (mut objects, mut bad_settings) = (0, 0);
    for folder in &folders {
        let expected = read_yaml(&folder.join("expected.yaml")).unwrap();
        let problems = if folder.join("object.yaml").is_file() {
            objects += 1;
            run_object(folder, &expected)
        } else {
            bad_settings += 1;
            run_bad_settings(folder, &expected)
        };
        failures.extend(
            problems
                .into_iter()
                .map(|p| format!("{}: {p}", name(folder))),
        );
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // 8 kinds x (3 Windows builds, Linux on EKS and AKS, 4 conflicts) + the tolerate-all DaemonSet.
    assert_eq!(objects, 8 * 9 + 1);
    assert!(bad_settings >= 10, "{bad_settings}");
}
