//! Shared helpers for the core's integration tests.
#![allow(dead_code)]

use os_placement_core::{evaluate, Decision, Review, Settings};
use serde_json::{json, Value};

pub fn settings(v: Value) -> Settings {
    Settings::from_value(&v).unwrap_or_else(|e| panic!("settings {v}: {e}"))
}

pub fn eks() -> Settings {
    settings(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}}))
}

pub fn create(object: &Value, settings: &Settings) -> Decision {
    let kind = object["kind"].as_str().unwrap_or("");
    evaluate(
        &Review {
            kind,
            operation: "CREATE",
            object,
            old_object: None,
        },
        settings,
    )
}

pub fn update(object: &Value, old: &Value, settings: &Settings) -> Decision {
    let kind = object["kind"].as_str().unwrap_or("");
    evaluate(
        &Review {
            kind,
            operation: "UPDATE",
            object,
            old_object: Some(old),
        },
        settings,
    )
}

/// The first non-empty YAML document of the text, as JSON.
pub fn yaml(text: &str) -> Value {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| serde_yaml::Value::deserialize(doc).unwrap())
        .find(|v| !v.is_null())
        .map(|v| serde_json::to_value(v).unwrap())
        .expect("a YAML document")
}

/// The object after the decision (mutated or unchanged).
pub fn result_object(object: &Value, d: &Decision) -> Value {
    d.mutated_object.clone().unwrap_or_else(|| object.clone())
}

pub fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

pub fn codes(d: &Decision) -> Vec<&'static str> {
    d.violations.iter().map(|v| v.code.as_str()).collect()
}

pub fn message(d: &Decision) -> String {
    d.message().unwrap_or_default()
}

/// Asserts that mutating the result again changes nothing and validates clean.
pub fn assert_idempotent(object: &Value, d: &Decision, settings: &Settings) {
    let once = result_object(object, d);
    let again = create(&once, settings);
    assert!(again.accepted, "mutated object rejected: {:?}", again.message());
    assert!(again.patch.is_empty(), "second pass patched: {:?}", again.patch);
    let strict = Settings { mutate: false, ..settings.clone() };
    let validated = create(&once, &strict);
    assert!(validated.accepted, "mutated object fails validation: {:?}", validated.message());
}
