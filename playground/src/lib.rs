//! Browser adapter of os-placement: the texts of the playground's editors
//! in, a tagged JSON result out. Every input is read, and every object
//! answered, by the door (`os-placement-door`), as in the CLI and for the
//! policy. A verdict is never a thrown exception.

#![deny(missing_docs)]

mod run;

pub use run::{run, DocumentResult, InputError, Inputs, Landing, Outcome};

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
/// hold, as for the CLI's `--facts`; empty or absent means no lookups.
#[wasm_bindgen]
pub fn evaluate(
    object: &str,
    settings: &str,
    operation: &str,
    old_object: &str,
    pools: &str,
    facts: Option<String>,
) -> String {
    let outcome = run(&Inputs {
        object,
        settings,
        operation,
        old_object,
        pools,
        facts: facts.as_deref().unwrap_or(""),
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
