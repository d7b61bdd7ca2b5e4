//! The CLI's verdicts equal those of the built policy `.wasm`, run in
//! wasmtime as policy-server runs it, on the examples and the corpus, for
//! every example settings file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::{code, corpus, repo_root, run_in, stdout};
use os_placement_e2e::{admission_request, read_yaml, wasm_path, PolicyModule};
use serde_json::Value;

/// The built module, or None (a visible skip) outside CI.
pub fn module() -> Option<PolicyModule> {
    let path = wasm_path();
    if !path.is_file() {
        let message = format!(
            "policy module {} not found: run `make build` or set OS_PLACEMENT_WASM",
            path.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
        return None;
    }
    Some(PolicyModule::compile(&path).unwrap_or_else(|e| panic!("{e:#}")))
}

fn manifest_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// Applies the RFC 6902 operations the policy emits: `add`, and `replace`
/// or `remove` of object members.
pub fn apply(object: &Value, patch: &[Value]) -> Value {
    let mut object = object.clone();
    for op in patch {
        let path = op["path"].as_str().unwrap();
        let (parent, last) = path.rsplit_once('/').unwrap();
        let key = last.replace("~1", "/").replace("~0", "~");
        match (
            op["op"].as_str().unwrap(),
            object.pointer_mut(parent).unwrap(),
        ) {
            ("add" | "replace", Value::Object(map)) => {
                map.insert(key, op["value"].clone());
            }
            ("remove", Value::Object(map)) => {
                map.remove(&key).unwrap();
            }
            ("add", Value::Array(items)) if key == "-" => items.push(op["value"].clone()),
            (kind, other) => panic!("{path}: cannot {kind} in {other}"),
        }
    }
    object
}

/// CLI results by file for one settings file (one object per file here).
fn cli_results(settings: &Path, dirs: &[PathBuf]) -> BTreeMap<String, Value> {
    let mut args = vec![
        "check",
        "--output",
        "json",
        "--settings",
        settings.to_str().unwrap(),
    ];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    let output = run_in(&repo_root(), &args, None);
    assert!(matches!(code(&output), 0 | 1), "{}", stdout(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["file"].as_str().unwrap().to_owned(), r.clone()))
        .collect()
}

/// Findings as the API server shows them: `path: message; fix`.
pub fn lines(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let (path, message, fix) = (&f["path"], &f["message"], &f["fix"]);
            let fix = fix.as_str().unwrap();
            let mut line = format!("{}: {}", path.as_str().unwrap(), message.as_str().unwrap());
            if !fix.is_empty() {
                line = format!("{line}; {fix}");
            }
            line
        })
        .collect()
}

/// The CLI has no registry or cluster: the module is compared with image
/// lookups off, so it asks the host for no image.
fn without_facts(mut settings: Value) -> Value {
    if let Some(map) = settings.as_object_mut() {
        map.insert("imageLookup".into(), "off".into());
    }
    settings
}

/// The module's warnings but those about a RuntimeClass, node facts or
/// published facts lookup, which the test host cannot answer and the CLI
/// never makes.
fn rule_warnings(warnings: &[String]) -> Vec<&String> {
    warnings
        .iter()
        .filter(|w| {
            !w.contains("could not be read from the cluster")
                && !w.contains("the node facts could not be read")
                && !w.contains(" facts cannot be read (")
        })
        .collect()
}

/// The CLI prints warnings in full; the policy truncates them to the API
/// server's 256 characters, ending with `…`.
pub fn same_or_truncated(full: &str, shown: &str) -> bool {
    full == shown
        || shown
            .strip_suffix('…')
            .is_some_and(|kept| full.starts_with(kept) && shown.chars().count() == 256)
}

#[test]
fn cli_verdicts_equal_the_wasm_verdicts() {
    let Some(module) = module() else { return };
    let host = module.instantiate().unwrap();
    let mut dirs = vec![repo_root().join("examples/manifests")];
    dirs.extend(corpus());
    let files = manifest_files(&dirs);
    let mut settings_files = manifest_files(&[repo_root().join("examples/settings")]);
    assert!(settings_files.len() >= 7, "{settings_files:?}");
    settings_files.sort();
    let mut compared = 0;
    for settings_file in &settings_files {
        let settings = read_yaml(settings_file).unwrap();
        let settings = without_facts(settings);
        let results = cli_results(settings_file, &dirs);
        for file in &files {
            let name = file.display().to_string();
            let context = format!("{name} with {}", settings_file.display());
            let cli = results
                .get(&name)
                .unwrap_or_else(|| panic!("{context}: no CLI result"));
            let object = read_yaml(file).unwrap();
            let wasm = host
                .validate(&admission_request(&object, "CREATE", None, None), &settings)
                .unwrap_or_else(|e| panic!("{context}: {e:#}"));
            let response = &wasm.response;
            let verdict = cli["verdict"].as_str().unwrap();
            assert_eq!(verdict != "rejected", response.accepted, "{context}: {cli}");
            assert_eq!(verdict == "patched", wasm.patched(), "{context}: {cli}");
            let message: Vec<String> = response.message().lines().map(str::to_owned).collect();
            assert_eq!(lines(&cli["violations"]), message, "{context}");
            let warnings = lines(&cli["warnings"]);
            let shown = rule_warnings(response.warnings());
            assert_eq!(warnings.len(), shown.len(), "{context}");
            for (full, shown) in warnings.iter().zip(shown) {
                assert!(
                    same_or_truncated(full, shown),
                    "{context}: {full:?} vs {shown:?}"
                );
            }
            if wasm.patched() {
                let patched = apply(&object, cli["patch"].as_array().unwrap());
                assert_eq!(
                    Some(&patched),
                    response.mutated_object.as_ref(),
                    "{context}"
                );
            }
            compared += 1;
        }
    }
    eprintln!("{compared} verdicts compared");
    assert!(compared >= settings_files.len() * 18);
}
