//! Browser adapter of os-placement: the texts of the playground's editors
//! in, a tagged JSON result out, decided by the same rule core as the
//! Kubewarden policy. A verdict is never a thrown exception.

mod emit;
mod request;
mod run;
mod tree;

pub use run::{run, DocumentResult, InputError, Inputs, Outcome};

use wasm_bindgen::prelude::wasm_bindgen;

/// Sends panics to the browser console; a panic is still a bug.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// Evaluates the object text against the settings text and returns the
/// [`Outcome`] as JSON: `{"status": "evaluated", ...}` or
/// `{"status": "invalid-input", "errors": [...]}`.
#[wasm_bindgen]
pub fn evaluate(
    object: &str,
    settings: &str,
    operation: &str,
    old_object: &str,
    pools: &str,
) -> String {
    let outcome = run(&Inputs {
        object,
        settings,
        operation,
        old_object,
        pools,
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
    let result = match tree::parse_documents(text) {
        Ok(docs) => serde_json::json!({
            "ok": docs.first().map(tree::Node::to_json).unwrap_or_default()
        }),
        Err(e) => serde_json::json!({ "error": e }),
    };
    result.to_string()
}

/// The version of the rule engine, shown in the page footer.
#[wasm_bindgen]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
