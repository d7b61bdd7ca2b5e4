//! The playground gives the verdict the cluster gives: every example case
//! and every corpus manifest through the playground adapter (natively)
//! and through the built policy `.wasm` in wasmtime (as policy-server runs
//! it), comparing verdict, message, warnings and the resulting object.
//!
//! The module is `$OS_PLACEMENT_WASM` (set by `make test`), else the
//! default build path; the corpus `$OS_PLACEMENT_CORPUS`, else
//! `../shared/corpus` from the repository root.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;

use os_placement_e2e::{
    admission_request, corpus_dir, load_cases, repo_root, wasm_path, PolicyHost, PolicyModule,
};
use os_placement_playground::{run, Inputs, Outcome};
use serde_json::{json, Value};

fn host() -> PolicyHost {
    let path = wasm_path();
    assert!(
        path.is_file(),
        "policy module {} not found: run `make build` or set OS_PLACEMENT_WASM",
        path.display()
    );
    PolicyModule::compile(&path)
        .and_then(|m| m.instantiate())
        .unwrap_or_else(|e| panic!("cannot load {}: {e:#}", path.display()))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first document of a YAML text, read by the playground's reader.
fn as_json(text: &str) -> Value {
    let parsed: Value = serde_json::from_str(&os_placement_playground::yaml_to_json(text)).unwrap();
    assert!(parsed.get("error").is_none(), "not YAML: {parsed}");
    parsed["ok"].clone()
}

/// Compares one object; returns the differences.
fn compare(
    label: &str,
    host: &PolicyHost,
    inputs: &Inputs<'_>,
    sub_resource: Option<&str>,
) -> Vec<String> {
    let object = as_json(inputs.object);
    let old = (!inputs.old_object.is_empty()).then(|| as_json(inputs.old_object));
    let settings = if inputs.settings.is_empty() {
        json!({})
    } else {
        as_json(inputs.settings)
    };
    let request = admission_request(&object, inputs.operation, old.as_ref(), sub_resource);
    // The playground has no registry or cluster: the module, with image
    // lookups off, asks the host for none.
    let mut settings = settings;
    if let Some(map) = settings.as_object_mut() {
        map.insert("imageLookup".into(), "off".into());
    }
    let policy = host
        .validate(&request, &settings)
        .unwrap_or_else(|e| panic!("{label}: policy failed: {e:#}"));
    let documents = match run(inputs) {
        Outcome::Evaluated { documents, .. } => documents,
        Outcome::InvalidInput { errors } => {
            return vec![format!("{label}: playground input error {errors:?}")]
        }
    };
    let Some(doc) = documents.first() else {
        return vec![format!("{label}: no document")];
    };
    let mut diffs = Vec::new();
    let response = &policy.response;
    if doc.accepted != response.accepted {
        diffs.push(format!(
            "{label}: accepted {} vs policy {}",
            doc.accepted, response.accepted
        ));
    }
    if doc.message.as_deref() != response.message.as_deref() {
        diffs.push(format!(
            "{label}: message {:?} vs policy {:?}",
            doc.message, response.message
        ));
    }
    // A RuntimeClass lookup the test host cannot answer warns in the module only.
    let module_warnings: Vec<String> = response
        .warnings()
        .iter()
        .filter(|w| !w.contains("could not be read from the cluster"))
        .cloned()
        .collect();
    if doc.warning_lines != module_warnings {
        diffs.push(format!(
            "{label}: warnings {:?} vs policy {:?}",
            doc.warning_lines,
            response.warnings()
        ));
    }
    if doc.mutated_object != response.mutated_object {
        diffs.push(format!("{label}: mutated object differs from the policy's"));
    }
    // The playground's patch, applied, gives the policy's object.
    let mut patched = object.clone();
    let patch: json_patch::Patch = serde_json::from_value(doc.patch.clone()).unwrap();
    json_patch::patch(&mut patched, &patch).unwrap();
    if &patched != policy.resulting_object(&object) {
        diffs.push(format!("{label}: patch does not give the policy's object"));
    }
    diffs
}

#[test]
fn examples_match_the_policy() {
    let root = repo_root();
    let host = host();
    let cases = load_cases(&root.join("examples/cases.yaml")).unwrap();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    let mut diffs = Vec::new();
    for case in &cases {
        let object = read(&root.join(&case.manifest));
        let settings = case
            .settings
            .as_ref()
            .map(|p| read(&root.join(p)))
            .unwrap_or_default();
        let old = case
            .old_manifest
            .as_ref()
            .map(|p| read(&root.join(p)))
            .unwrap_or_default();
        let inputs = Inputs {
            object: &object,
            settings: &settings,
            operation: &case.operation,
            old_object: &old,
            pools: "",
            facts: "",
        };
        diffs.extend(compare(
            &case.name,
            &host,
            &inputs,
            case.sub_resource.as_deref(),
        ));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn corpus_matches_the_policy() {
    let dir = corpus_dir();
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "corpus not found at {} (set OS_PLACEMENT_CORPUS)",
            dir.display()
        );
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: corpus_matches_the_policy: no corpus at {}",
            dir.display()
        );
        return;
    }
    let host = host();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 50,
        "{} corpus manifests in {}",
        files.len(),
        dir.display()
    );
    let mut diffs = Vec::new();
    for file in &files {
        let object = read(file);
        let inputs = Inputs {
            object: &object,
            operation: "CREATE",
            ..Inputs::default()
        };
        diffs.extend(compare(&file.display().to_string(), &host, &inputs, None));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
