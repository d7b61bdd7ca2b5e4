//! What the parity tests share: the compiled policy module, reading files,
//! and comparing one playground answer with the policy's.

use std::path::Path;

use os_placement_e2e::{wasm_path, Evaluation, PolicyModule};
use os_placement_playground::DocumentResult;
use serde_json::Value;

/// The policy module, compiled.
pub fn module() -> PolicyModule {
    let path = wasm_path();
    assert!(
        path.is_file(),
        "policy module {} not found: run `make build` or set OS_PLACEMENT_WASM",
        path.display()
    );
    PolicyModule::compile(&path).unwrap_or_else(|e| panic!("cannot load {}: {e:#}", path.display()))
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first document of a YAML text, read by the playground's reader.
pub fn as_json(text: &str) -> Value {
    let parsed: Value = serde_json::from_str(&os_placement_playground::yaml_to_json(text)).unwrap();
    assert!(parsed.get("error").is_none(), "not YAML: {parsed}");
    parsed["ok"].clone()
}

/// The differences between the playground's answer about `object` and the
/// policy's. `ignored_warnings` drop module warnings the test host causes.
pub fn differences(
    label: &str,
    doc: &DocumentResult,
    policy: &Evaluation,
    object: &Value,
    ignored_warnings: &[&str],
) -> Vec<String> {
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
    let module_warnings: Vec<String> = response
        .warnings()
        .iter()
        .filter(|w| !ignored_warnings.iter().any(|ignored| w.contains(ignored)))
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
    if &patched != policy.resulting_object(object) {
        diffs.push(format!("{label}: patch does not give the policy's object"));
    }
    diffs
}
