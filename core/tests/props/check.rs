//! The properties every generated case must keep. Each assertion names
//! the property, so a failure says which one broke.

use os_placement_core::Kind;
use os_placement_core::ADDED_ANNOTATION;
use os_placement_core::{evaluate, needs, Admission, Decision, Facts, Operation, Review, Settings};
use serde_json::{json, Value};

use crate::props::gen::{spec_pointer, wrap, Case};
use crate::props::oracle;

/// Placement fields the policy may add to a pod spec.
const PLACEMENT_FIELDS: &[&str] = &[
    "nodeSelector",
    "tolerations",
    "os",
    "runtimeClassName",
    "affinity",
];

/// The decision on a CREATE; reading the request once ([`Admission`]) must
/// ask for the same lookups and, with none answered, decide the same.
pub fn create(kind_name: &str, object: &Value, settings: &Settings) -> Decision {
    let review = Review {
        kind: kind_name,
        operation: Operation::Create,
        object,
        old_object: None,
        origin: Default::default(),
    };
    let decision = evaluate(&review, settings);
    let request = json!({"kind": {"kind": kind_name}, "operation": "CREATE", "object": object});
    let admission = Admission::new(&request, settings);
    assert_eq!(
        admission.needs(),
        &needs(&review, settings),
        "read once: needs"
    );
    assert_eq!(
        admission.decide(&Facts::default()),
        decision,
        "read once: decision"
    );
    decision
}

/// Whether the pod as written (with its RuntimeClass merged) selects
/// `pool`, taints aside: the policy adds tolerations, never nodes the
/// user's own selectors or affinity exclude. Without the cluster's builds
/// in the settings, the policy cannot know that no other Windows build
/// exists, so a pod whose affinity excludes every pool is not its doing.
/// Whether the pod's own selectors and affinity, as written, admit the
/// pool, with the tolerations of the admitted pod: a taint is the policy's
/// to tolerate only when it places the pod on that OS (a pod it leaves
/// alone, with `defaultOS: none`, stays off every tainted pool).
fn admitted_as_written(case: &Case, pool: &oracle::Pool, admitted: &Value) -> bool {
    let Some(spec) = case.object.pointer(&spec_pointer(case.kind)) else {
        return false;
    };
    let Some(mut merged) = oracle::merge_runtime_class(spec, &case.settings_value) else {
        return false;
    };
    let mut tolerations: Vec<Value> = admitted
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // The OS the policy placed the pod on: its nodes' taint must be
    // tolerated, whether or not the policy remembered to.
    let placed = admitted
        .pointer("/nodeSelector/kubernetes.io~1os")
        .and_then(Value::as_str);
    let declared = match placed {
        Some("windows") => case.settings_value.get("windowsTaint"),
        Some("linux") => case.settings_value.get("linuxTaint"),
        _ => None,
    };
    if let Some(key) = declared.and_then(|t| t.get("key")) {
        tolerations.push(json!({"key": key, "operator": "Exists"}));
    }
    if let Some(map) = merged.as_object_mut() {
        map.insert("tolerations".into(), Value::Array(tolerations));
    }
    oracle::schedulable(&merged, pool) == Some(true)
}

/// Checks every property on one case.
pub fn all(case: &Case) {
    let d = create(case.kind_name, &case.object, &case.settings);
    let ctx = format!(
        "{} under {}:\n{}",
        case.kind_name, case.settings_value, case.object
    );
    well_formed(&d, &ctx);
    confined(case, &d, &ctx);
    idempotent(case, &d, &ctx);
    modes_agree(case, &d, &ctx);
    kinds_agree(case, &d, &ctx);
    scheduler_oracle(case, &d, &ctx);
}

/// Never a panic (reaching here), and every rejection names a field path
/// that its message line carries.
pub fn well_formed(d: &Decision, ctx: &str) {
    assert_eq!(
        d.accepted,
        d.violations.is_empty(),
        "verdict vs violations: {ctx}"
    );
    assert_eq!(
        d.patch.is_empty(),
        d.mutated_object.is_none(),
        "patch vs object: {ctx}"
    );
    let message = d.message().unwrap_or_default();
    for v in &d.violations {
        assert!(
            !v.path.is_empty(),
            "rejection without a field path {v:?}: {ctx}"
        );
        assert!(!v.fix.is_empty(), "rejection without a fix {v:?}: {ctx}");
        assert!(
            message.contains(&v.path),
            "message lacks {}: {message}",
            v.path
        );
    }
}

/// Whether the op writes the ownership record on the object's metadata.
fn is_record_op(op_path: &str, value: &Value) -> bool {
    let key = ADDED_ANNOTATION.replace('/', "~1");
    op_path == format!("/metadata/annotations/{key}")
        || (op_path == "/metadata/annotations" && value.get(ADDED_ANNOTATION).is_some())
        || (op_path == "/metadata" && value.pointer("/annotations").is_some())
}

/// Confinement and no overwrite: ops are adds at placement paths (or the
/// ownership record on workloads); every leaf of the input keeps its value
/// and every new leaf lies under an op.
pub fn confined(case: &Case, d: &Decision, ctx: &str) {
    let Some(mutated) = &d.mutated_object else {
        return;
    };
    let prefix = spec_pointer(case.kind);
    for op in &d.patch {
        if is_record_op(&op.path, &op.value) {
            assert_ne!(case.kind, Kind::Pod, "a Pod got an ownership record: {ctx}");
            continue;
        }
        assert_eq!(op.op, "add", "op {op:?} on a CREATE: {ctx}");
        let field = op
            .path
            .strip_prefix(&format!("{prefix}/"))
            .map(|r| r.split('/').next().unwrap_or(""));
        assert!(
            field.is_some_and(|f| PLACEMENT_FIELDS.contains(&f)),
            "op outside the placement fields {op:?}: {ctx}"
        );
    }
    for (pointer, value) in leaves(&case.object, String::new()) {
        // Empty containers may gain entries; null is how JSON says unset
        // (the API server never sends it for these fields).
        if value == json!({}) || value == json!([]) || value.is_null() {
            continue;
        }
        assert_eq!(
            mutated.pointer(&pointer),
            Some(&value),
            "input value at {pointer} changed: {ctx}"
        );
    }
    for (pointer, _) in leaves(mutated, String::new()) {
        let covered = d.patch.iter().any(|op| {
            let target = op.path.strip_suffix("/-").unwrap_or(&op.path);
            pointer == target
                || pointer.starts_with(&format!("{target}/"))
                || (op.path.ends_with("/-") && pointer.starts_with(&format!("{target}/")))
        });
        assert!(
            case.object.pointer(&pointer).is_some() || covered,
            "{pointer} added without an op: {ctx}"
        );
    }
}

/// Every leaf of `v` (scalars, empty objects and arrays) by pointer.
pub fn leaves(v: &Value, at: String) -> Vec<(String, Value)> {
    match v {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .flat_map(|(k, x)| {
                leaves(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                )
            })
            .collect(),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .flat_map(|(i, x)| leaves(x, format!("{at}/{i}")))
            .collect(),
        _ => vec![(at, v.clone())],
    }
}

/// Idempotence: the mutated object evaluates with no patch and no violation.
pub fn idempotent(case: &Case, d: &Decision, ctx: &str) {
    let Some(mutated) = &d.mutated_object else {
        return;
    };
    let again = create(case.kind_name, mutated, &case.settings);
    assert!(
        again.accepted,
        "mutated object rejected: {:?}: {ctx}",
        again.message()
    );
    assert!(
        again.patch.is_empty(),
        "second pass patched {:?}: {ctx}",
        again.patch
    );
}

/// Modes agree: validation alone rejects exactly when mutation would
/// patch or reject.
pub fn modes_agree(case: &Case, d: &Decision, ctx: &str) {
    let flip = |mutate| Settings {
        mutate,
        ..case.settings.clone()
    };
    let (mutating, validating) = if case.settings.mutate {
        (
            d.clone(),
            create(case.kind_name, &case.object, &flip(false)),
        )
    } else {
        (create(case.kind_name, &case.object, &flip(true)), d.clone())
    };
    let would_change = !mutating.accepted || !mutating.patch.is_empty();
    assert_eq!(
        !validating.accepted,
        would_change,
        "modes disagree: mutate gives {:?} {:?}, validate {:?}: {ctx}",
        mutating.patch,
        mutating.message(),
        validating.message()
    );
}

/// Kinds agree: a workload's template evaluates like a Pod with the same
/// spec, paths prefixed. RuntimeClasses are left out: on a Pod the policy
/// does the plugin's merge itself, on a template the plugin does it later.
pub fn kinds_agree(case: &Case, d: &Decision, ctx: &str) {
    if case.kind == Kind::Pod || !case.settings.runtime_classes.is_empty() {
        return;
    }
    let prefix = spec_pointer(case.kind);
    let spec = case.object.pointer(&prefix).cloned().unwrap_or(Value::Null);
    let pod = wrap(Kind::Pod, "Pod", spec, case.object["metadata"].clone());
    let p = create("Pod", &pod, &case.settings);
    assert_eq!(
        p.accepted,
        d.accepted,
        "kinds disagree on the verdict: {:?} vs {:?}: {ctx}",
        p.message(),
        d.message()
    );
    let display = prefix.trim_start_matches('/').replace('/', ".");
    let shift = |path: &str| match path.strip_prefix("spec") {
        Some(rest) => format!("{display}{rest}"),
        None => path.to_string(),
    };
    let pod_violations: Vec<_> = p
        .violations
        .iter()
        .map(|v| (v.code, shift(&v.path)))
        .collect();
    let violations: Vec<_> = d
        .violations
        .iter()
        .map(|v| (v.code, v.path.clone()))
        .collect();
    assert_eq!(
        pod_violations, violations,
        "kinds disagree on the violations: {ctx}"
    );
    let pod_ops: Vec<_> = p
        .patch
        .iter()
        .map(|op| {
            (
                op.op,
                format!(
                    "{prefix}{}",
                    op.path.strip_prefix("/spec").unwrap_or(&op.path)
                ),
                op.value.clone(),
            )
        })
        .collect();
    let ops: Vec<_> = d
        .patch
        .iter()
        .filter(|op| !is_record_op(&op.path, &op.value))
        .map(|op| (op.op, op.path.clone(), op.value.clone()))
        .collect();
    assert_eq!(pod_ops, ops, "kinds disagree on the patch: {ctx}");
}

/// The scheduler oracle: an admitted pod lands only on nodes that can run
/// all its containers, and somewhere when the cluster has such nodes that
/// the pod's own selectors and affinity, as written, admit.
pub fn scheduler_oracle(case: &Case, d: &Decision, ctx: &str) {
    if !d.accepted {
        return;
    }
    let object = d.mutated_object.as_ref().unwrap_or(&case.object);
    let Some(spec) = object.pointer(&spec_pointer(case.kind)) else {
        return;
    };
    let Some(merged) = oracle::merge_runtime_class(spec, &case.settings_value) else {
        panic!("admitted pod refused by the RuntimeClass plugin: {ctx}");
    };
    let check_build = case.settings.pin_windows_build;
    let mut lands = Vec::new();
    let mut could = false;
    for pool in &case.pools {
        let (Some(schedulable), Some(runs)) = (
            oracle::schedulable(&merged, pool),
            oracle::runs(&merged, pool, &case.settings_value, check_build),
        ) else {
            // Not a spec the API server admits: the scheduler never sees it.
            return;
        };
        // Without a taint that keeps pods off, or without defaultOS, the
        // policy leaves OS-neutral pods where the user put them.
        if schedulable {
            assert!(
                runs,
                "lands on {} where it cannot run: {merged}: {ctx}",
                pool.name
            );
            lands.push(pool.name.clone());
        }
        could |= runs && admitted_as_written(case, pool, &merged);
    }
    if case.known_labels_only && oracle::complete(&case.pools) && could {
        assert!(
            !lands.is_empty(),
            "admitted but lands on no node: {merged}: {ctx}"
        );
    }
}
