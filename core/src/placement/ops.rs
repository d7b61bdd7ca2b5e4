//! The JSON Patch operations that add what a pod lacks: nodeSelector
//! entries, tolerations, a required node-affinity build expression in every
//! term, `spec.os`, and a RuntimeClass's scheduling merged as the admission
//! plugin would. Only `add`: a value the user set is never replaced.

use serde_json::{json, Map, Value};

use crate::input::pod::PodView;
use crate::input::settings::RuntimeClass;
use crate::placement::missing::Missing;
use crate::scheduling::runtime_class::added_tolerations;
use crate::scheduling::taints::for_taint;
use crate::vocab::build::WindowsBuild;
use crate::vocab::field_path::FieldPath;
use crate::vocab::labels::WINDOWS_BUILD_LABEL;
use crate::vocab::patch::{pointer_child, AddOp};

/// Adds the class's scheduling to a Pod the way the RuntimeClass plugin would.
pub(crate) fn merge_runtime_class(pod: &PodView<'_>, rc: &RuntimeClass, ops: &mut Vec<AddOp>) {
    let entries: Vec<(String, String)> = rc
        .scheduling
        .node_selector
        .iter()
        .filter(|(k, _)| !pod.node_selector.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    ops.extend(selector_ops(pod, &entries));
    let new: Vec<Value> = added_tolerations(&pod.tolerations, rc)
        .into_iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    ops.extend(toleration_ops(pod, new));
}

pub(crate) fn ops_for(pod: &PodView<'_>, missing: &[Missing]) -> Vec<AddOp> {
    let mut ops = Vec::new();
    let entries: Vec<(String, String)> = missing
        .iter()
        .filter_map(|m| match m {
            Missing::Selector { key, value, .. } => Some((key.to_string(), value.clone())),
            _ => None,
        })
        .collect();
    ops.extend(selector_ops(pod, &entries));
    let tolerations: Vec<Value> = missing
        .iter()
        .filter_map(|m| match m {
            Missing::Toleration { taint, .. } => Some(for_taint(taint)),
            _ => None,
        })
        .collect();
    ops.extend(toleration_ops(pod, tolerations));
    for m in missing {
        if let Missing::BuildAffinity { builds, .. } = m {
            ops.extend(build_affinity_ops(pod, builds));
        }
    }
    for m in missing {
        if let Missing::PodOs(os) = m {
            ops.push(match pod.raw.get("os") {
                Some(Value::Object(_)) => AddOp::new(
                    pod.field("os").field("name").pointer().to_string(),
                    json!(os.label()),
                ),
                _ => AddOp::new(
                    pod.field("os").pointer().to_string(),
                    json!({"name": os.label()}),
                ),
            });
        }
    }
    ops
}

pub(crate) fn build_expression(builds: &[WindowsBuild]) -> Value {
    let values: Vec<String> = builds.iter().map(ToString::to_string).collect();
    json!({"key": WINDOWS_BUILD_LABEL, "operator": "In", "values": values})
}

/// Adds the build expression to every required term, after the user's
/// expressions (which stay as written), or creates the one term.
fn build_affinity_ops(pod: &PodView<'_>, builds: &[WindowsBuild]) -> Vec<AddOp> {
    let expression = build_expression(builds);
    let fields = [
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ];
    let mut path = pod.path.clone();
    let mut current = Some(pod.raw);
    for (depth, field) in fields.iter().enumerate() {
        path = path.field(field);
        let next = current.and_then(|map| map.get(*field));
        match next {
            Some(Value::Object(map)) => current = Some(map),
            Some(Value::Array(terms)) if depth == fields.len() - 1 && !terms.is_empty() => {
                return terms
                    .iter()
                    .enumerate()
                    .map(|(i, term)| term_op(&path.index(i), term, &expression))
                    .collect();
            }
            _ => {
                // Build the rest of the path as one value.
                let mut value = json!([{"matchExpressions": [expression]}]);
                for outer in fields.iter().skip(depth + 1).rev() {
                    value = json!({ *outer: value });
                }
                return vec![AddOp::new(path.pointer().to_string(), value)];
            }
        }
    }
    Vec::new()
}

fn term_op(term_path: &FieldPath, term: &Value, expression: &Value) -> AddOp {
    match term.get("matchExpressions") {
        Some(Value::Array(_)) => AddOp::new(
            format!("{}/-", term_path.field("matchExpressions").pointer()),
            expression.clone(),
        ),
        _ => AddOp::new(
            term_path.field("matchExpressions").pointer().to_string(),
            json!([expression]),
        ),
    }
}

fn selector_ops(pod: &PodView<'_>, entries: &[(String, String)]) -> Vec<AddOp> {
    if entries.is_empty() {
        return Vec::new();
    }
    let path = pod.field("nodeSelector");
    match pod.raw.get("nodeSelector") {
        Some(Value::Object(_)) => entries
            .iter()
            .map(|(k, v)| AddOp::new(pointer_child(path.pointer(), k), json!(v)))
            .collect(),
        _ => {
            let mut map = Map::new();
            map.extend(entries.iter().map(|(k, v)| (k.clone(), json!(v))));
            vec![AddOp::new(path.pointer().to_string(), Value::Object(map))]
        }
    }
}

fn toleration_ops(pod: &PodView<'_>, tolerations: Vec<Value>) -> Vec<AddOp> {
    if tolerations.is_empty() {
        return Vec::new();
    }
    let path = pod.field("tolerations");
    match pod.raw.get("tolerations") {
        Some(Value::Array(_)) => tolerations
            .into_iter()
            .map(|t| AddOp::new(format!("{}/-", path.pointer()), t))
            .collect(),
        _ => vec![AddOp::new(
            path.pointer().to_string(),
            Value::Array(tolerations),
        )],
    }
}
