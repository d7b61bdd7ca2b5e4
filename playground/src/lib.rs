//! Browser adapter of os-placement: the texts of the playground's editors
//! in, a tagged JSON result out. Every input is read, and every object
//! answered, by the door (`os-placement-door`), as in the CLI and for the
//! policy. A verdict is never a thrown exception.

#![deny(missing_docs)]

mod input_error;
mod pools;
mod run;
mod settings_text;

pub use input_error::InputError;
pub use pools::{facts_with_nodes, node_objects, read_pools};
pub use run::{run, DocumentResult, Inputs, Landing, Outcome};
pub use settings_text::{set_key, SetKeyError};

use os_placement_core::Settings;

use wasm_bindgen::prelude::wasm_bindgen;

/// Sends panics to the browser console; a panic is still a bug.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// Evaluates the object text against the settings text and returns the
/// [`Outcome`] as JSON: `{"status": "evaluated", ...}` or
/// `{"status": "invalid-input", "errors": [...]}`. `facts` is optional (the
/// page may call with five arguments): what the cluster and registries
/// hold, as for the CLI's `--facts`; empty or absent means no lookups. The
/// pools are not the cluster's Nodes: see [`evaluate_js`] for that.
pub fn evaluate(
    object: &str,
    settings: &str,
    operation: &str,
    old_object: &str,
    pools: &str,
    facts: Option<String>,
) -> String {
    evaluate_js(object, settings, operation, old_object, pools, facts, None)
}

/// The page's `evaluate` (its JavaScript name): [`evaluate`] with one more
/// optional argument, `pools_are_nodes` (false when absent): the node pools
/// are the cluster's Nodes, the node inventory the policy reads, and the
/// lookups are answered from the facts (empty facts: every other lookup
/// fails, as with a registry that does not answer).
#[wasm_bindgen(js_name = evaluate)]
pub fn evaluate_js(
    object: &str,
    settings: &str,
    operation: &str,
    old_object: &str,
    pools: &str,
    facts: Option<String>,
    pools_are_nodes: Option<bool>,
) -> String {
    let outcome = run(&Inputs {
        object,
        settings,
        operation,
        old_object,
        pools,
        facts: facts.as_deref().unwrap_or(""),
        pools_are_nodes: pools_are_nodes.unwrap_or(false),
    });
    serde_json::to_string(&outcome).unwrap_or_else(|e| {
        serde_json::json!({"status": "invalid-input", "errors": [
            {"input": "object", "path": null, "message": e.to_string(), "line": 1, "column": 1}]})
        .to_string()
    })
}

/// YAML or JSON text as JSON: `{"ok": value}` (the first document) or
/// `{"error": {"message", "line", "column"}}`. The page reads the example
/// index and the presets with it.
#[wasm_bindgen]
pub fn yaml_to_json(text: &str) -> String {
    let first = os_placement_door::read_stream(text).into_iter().next();
    let result = match first {
        None => serde_json::json!({ "ok": null }),
        Some(Ok(document)) => serde_json::json!({ "ok": document.root.to_json() }),
        Some(Err(broken)) => serde_json::json!({ "error": broken.error }),
    };
    result.to_string()
}

/// The version of the rule engine, shown in the page footer.
#[wasm_bindgen]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The build of the rule engine: the crate version and the `git describe`
/// of the source it was built from (`OS_PLACEMENT_GIT_DESCRIBE` at build
/// time, `unknown` without it), e.g. `0.1.0+v0.1.0-4-g1a2b3c4`. Share links
/// and exported workspaces carry it, so the page can say when a link was
/// made with another engine.
#[wasm_bindgen]
pub fn engine_build() -> String {
    let source = option_env!("OS_PLACEMENT_GIT_DESCRIBE").unwrap_or("unknown");
    format!("{}+{source}", env!("CARGO_PKG_VERSION"))
}

/// Every settings key with its shape, default and meaning, as JSON (the
/// one settings declaration, `Settings::schema()`): the page builds its
/// settings form from it.
#[wasm_bindgen]
pub fn settings_schema() -> String {
    serde_json::to_string(&Settings::schema()).unwrap_or_else(|_| "[]".to_string())
}

/// The settings text with top-level `key` set to `value` (JSON), every
/// other byte kept: `{"ok": text}` or `{"error": {"message", "line",
/// "column"}}` (see [`set_key`]).
#[wasm_bindgen]
pub fn settings_set(text: &str, key: &str, value: &str) -> String {
    let result = match set_key(text, key, value) {
        Ok(text) => serde_json::json!({ "ok": text }),
        Err(e) => serde_json::json!({ "error": {
            "message": e.to_string(),
            "line": e.text_error().at.line,
            "column": e.text_error().at.column,
        }}),
    };
    result.to_string()
}
