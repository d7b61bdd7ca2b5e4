//! Shared helpers for the core's integration tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use os_placement_core::ImageFacts;
use os_placement_core::{
    evaluate, evaluate_with_facts, needs, Admission, Decision, Facts, Needs, Operation, Review,
    Settings,
};
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub fn settings(v: Value) -> Settings {
    Settings::from_value(&v).unwrap_or_else(|e| panic!("settings {v}: {e}"))
}

/// An image whose reference tells nothing about its OS.
pub const PRIVATE: &str = "registry.corp.example/billing/api:4.2";

/// A CREATE review of `object`.
pub fn review_of(object: &Value) -> Review<'_> {
    Review {
        kind: object["kind"].as_str().unwrap_or(""),
        operation: Operation::Create,
        object,
        old_object: None,
        origin: Default::default(),
    }
}

/// The decision with `facts`. Also checks that reading the request once
/// ([`Admission`]) answers as the two separate calls do.
pub fn with_facts(object: &Value, settings: &Settings, facts: &Facts) -> Decision {
    let decision = evaluate_with_facts(&review_of(object), settings, facts);
    let request =
        json!({"kind": {"kind": object["kind"]}, "operation": "CREATE", "object": object});
    let admission = Admission::new(&request, settings);
    assert_eq!(
        admission.needs(),
        &needs_of(object, settings),
        "needs of {object}"
    );
    assert_eq!(admission.decide(facts), decision, "read once: {object}");
    decision
}

pub fn needs_of(object: &Value, settings: &Settings) -> Needs {
    needs(&review_of(object), settings)
}

/// Facts that hold one image's answer.
pub fn image_facts(reference: &str, facts: ImageFacts) -> Facts {
    Facts {
        images: [(reference.to_string(), facts)].into(),
        ..Facts::default()
    }
}

/// A required node affinity of one term with these `matchExpressions`.
pub fn required_affinity(expressions: Value) -> Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}})
}

/// A HostProcess Pod of WIN2022 on the host network, with `extra` over its spec.
pub fn host_process_pod(extra: Value) -> Value {
    let base = pod(json!({
        "hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "containers": [{"name": "c", "image": WIN2022}]
    }));
    with_spec(base, extra)
}

pub fn eks() -> Settings {
    eks_with(json!({}))
}

/// The EKS Windows taint with the settings in `extra` beside it.
pub fn eks_with(extra: Value) -> Settings {
    let mut all =
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    if let (Some(all), Value::Object(extra)) = (all.as_object_mut(), extra) {
        all.extend(extra);
    }
    settings(all)
}

pub fn create(object: &Value, settings: &Settings) -> Decision {
    let kind = object["kind"].as_str().unwrap_or("");
    evaluate(
        &Review {
            kind,
            operation: Operation::Create,
            object,
            old_object: None,
            origin: Default::default(),
        },
        settings,
    )
}

pub fn update(object: &Value, old: &Value, settings: &Settings) -> Decision {
    let kind = object["kind"].as_str().unwrap_or("");
    evaluate(
        &Review {
            kind,
            operation: Operation::Update,
            object,
            old_object: Some(old),
            origin: Default::default(),
        },
        settings,
    )
}

/// The first non-empty YAML document of the text, as JSON.
pub fn yaml(text: &str) -> Value {
    os_placement_door::read_one(text)
        .expect("readable YAML")
        .expect("a YAML document")
        .to_json()
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
    assert!(
        again.accepted,
        "mutated object rejected: {:?}",
        again.message()
    );
    assert!(
        again.patch.is_empty(),
        "second pass patched: {:?}",
        again.patch
    );
    let strict = Settings {
        mutate: false,
        ..settings.clone()
    };
    let validated = create(&once, &strict);
    assert!(
        validated.accepted,
        "mutated object fails validation: {:?}",
        validated.message()
    );
}

// ---- helpers shared by the rule tests ----

pub const WIN2019: &str = "mcr.microsoft.com/windows/servercore:ltsc2019";
pub const WIN2022: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";
pub const WIN_NO_BUILD: &str = "mcr.microsoft.com/dotnet/framework/aspnet:4.8";
pub const LINUX_IMAGE: &str = "alpine:3.19";
/// Multi-arch: says nothing about the OS.
pub const NEUTRAL_IMAGE: &str = "registry.k8s.io/pause:3.9";

pub const EKS_TOLERATION: &str =
    r#"{"key":"os","operator":"Equal","value":"windows","effect":"NoSchedule"}"#;

pub fn eks_toleration() -> Value {
    serde_json::from_str(EKS_TOLERATION).unwrap()
}

/// A pod spec with one container per image.
pub fn spec_with_images(images: &[&str]) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    json!({ "containers": containers })
}

/// A pod running these images.
pub fn pod_with_images(images: &[&str]) -> Value {
    pod(spec_with_images(images))
}

/// Merges `extra` into the pod spec (top-level keys replaced).
pub fn with_spec(mut object: Value, extra: Value) -> Value {
    let spec = object
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .unwrap();
    for (k, v) in extra.as_object().unwrap() {
        spec.insert(k.clone(), v.clone());
    }
    object
}

pub fn warning_codes(d: &Decision) -> Vec<&'static str> {
    d.warnings.iter().map(|w| w.code.as_str()).collect()
}

/// The paths of the placement ops (the ownership record is checked apart).
pub fn patch_paths(d: &Decision) -> Vec<String> {
    d.patch
        .iter()
        .filter(|op| !is_record_op(op))
        .map(|op| op.path.clone())
        .collect()
}

/// The op at `path`, if any.
pub fn op_value<'d>(d: &'d Decision, path: &str) -> Option<&'d Value> {
    d.patch
        .iter()
        .find(|op| op.path == path)
        .map(|op| &op.value)
}

/// Asserts the decision accepted the object unchanged.
pub fn assert_unchanged(d: &Decision) {
    assert!(d.accepted, "rejected: {}", message(d));
    assert!(d.patch.is_empty(), "patched: {:?}", d.patch);
    assert!(d.mutated_object.is_none());
}

/// Asserts a rejection carrying `code`.
pub fn assert_rejected_with(d: &Decision, code: &str) {
    assert!(
        !d.accepted,
        "accepted, expected {code}; patch {:?}",
        d.patch
    );
    assert!(d.patch.is_empty() && d.mutated_object.is_none());
    assert!(
        codes(d).contains(&code),
        "codes {:?}, expected {code}: {}",
        codes(d),
        message(d)
    );
}

/// JSON pointers where two documents differ. Arrays of different length
/// are reported at the array once the common prefix has been compared.
pub fn diff_paths(a: &Value, b: &Value) -> Vec<String> {
    fn walk(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let child = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => walk(p, q, child, out),
                        _ => out.push(child),
                    }
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(p, q, format!("{at}/{i}"), out);
                }
                if x.len() != y.len() {
                    out.push(at);
                }
            }
            _ if a == b => {}
            _ => out.push(at),
        }
    }
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out
}

/// Asserts every op is an `add` under one of the pod spec's placement fields,
/// and that the mutated object equals the input except at the patched paths.
pub fn assert_minimal(object: &Value, d: &Decision, spec_pointer: &str) {
    let allowed = ["nodeSelector", "tolerations", "os", "runtimeClassName"];
    for op in d.patch.iter().filter(|op| !is_record_op(op)) {
        assert_eq!(op.op, "add", "{op:?}");
        let rest = op
            .path
            .strip_prefix(spec_pointer)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or_else(|| panic!("op outside {spec_pointer}: {op:?}"));
        let field = rest.split('/').next().unwrap_or("");
        assert!(allowed.contains(&field), "op on {field}: {op:?}");
    }
    let Some(mutated) = &d.mutated_object else {
        assert!(d.patch.is_empty());
        return;
    };
    for path in diff_paths(object, mutated) {
        let covered = d.patch.iter().any(|op| {
            let target = op.path.strip_suffix("/-").unwrap_or(&op.path);
            path == target || path.starts_with(&format!("{target}/"))
        });
        assert!(
            covered,
            "{path} changed but no op targets it; ops {:?}",
            d.patch
        );
    }
}

/// The op writing the record of what the policy added: an `add` on CREATE.
pub fn is_record_op(op: &os_placement_core::PatchOp) -> bool {
    let key = os_placement_core::escape_token(os_placement_core::ADDED_ANNOTATION);
    op.op == "add"
        && (op.path == format!("/metadata/annotations/{key}")
            || op.path == "/metadata/annotations"
                && op
                    .value
                    .as_object()
                    .is_some_and(|m| m.keys().all(|k| k == os_placement_core::ADDED_ANNOTATION)))
}

/// The JSON pointer of the object's pod spec, by kind.
pub fn spec_pointer_of(object: &Value) -> &'static str {
    match object.get("kind").and_then(Value::as_str) {
        Some("Pod") => "/spec",
        Some("CronJob") => "/spec/jobTemplate/spec/template/spec",
        _ => "/spec/template/spec",
    }
}

/// `create`, plus the invariants every accepted decision must hold:
/// confined `add` ops, a minimal diff, and idempotence when mutated.
pub fn checked_create(object: &Value, settings: &Settings) -> Decision {
    let d = create(object, settings);
    if d.accepted {
        assert_minimal(object, &d, spec_pointer_of(object));
        if d.mutated_object.is_some() {
            assert_idempotent(object, &d, settings);
        }
    } else {
        assert!(d.patch.is_empty() && d.mutated_object.is_none());
    }
    d
}
