//! Taints and tolerations, as the scheduler's TaintToleration plugin and
//! `corev1.Toleration.ToleratesTaint` (k8s.io/api core/v1 toleration.go)
//! decide them.

use k8s_openapi::api::core::v1::Toleration;
use serde_json::{json, Value};

use crate::input::node::Node;
use crate::vocab::taint::{Taint, TAINT_EFFECTS};

/// Whether `toleration` tolerates `taint` (`ToleratesTaint`): an empty
/// effect matches every effect, an empty key with `Exists` every taint.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => toleration.value.as_deref().unwrap_or("") == taint.value,
        "Exists" => true,
        _ => false,
    }
}

/// The taints that keep the pod off the node: `NoSchedule` and
/// `NoExecute` taints no toleration tolerates (TaintToleration filters on
/// those effects only; `PreferNoSchedule` only scores).
pub fn untolerated<'t>(taints: &'t [Taint], tolerations: &[&Toleration]) -> Vec<&'t Taint> {
    taints
        .iter()
        .filter(|taint| taint.keeps_pods_off())
        .filter(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
        .collect()
}

/// The taint every Windows node carries and no Linux node does, for
/// `windowsTaint: fromNodes`; `None` when the Windows nodes share none.
pub fn windows_taint(nodes: &[Node]) -> Option<Taint> {
    let mut windows = nodes.iter().filter(|n| n.is_windows());
    let first = windows.next()?;
    let rest: Vec<&Node> = windows.collect();
    first
        .taints
        .iter()
        .filter(|t| TAINT_EFFECTS.contains(&t.effect.as_str()))
        .filter(|t| rest.iter().all(|n| n.taints.contains(t)))
        .find(|t| {
            nodes
                .iter()
                .filter(|n| n.is_linux())
                .all(|n| !n.taints.contains(t))
        })
        .cloned()
}

/// For a `NoExecute` taint: the matching toleration with the shortest
/// `tolerationSeconds`, after which the taint manager evicts the pod
/// (kubernetes pkg/controller/tainteviction, getMinTolerationTime).
pub fn eviction_after<'t>(
    tolerations: &[&'t Toleration],
    taint: &Taint,
) -> Option<(&'t Toleration, i64)> {
    if taint.effect != "NoExecute" {
        return None;
    }
    tolerations
        .iter()
        .filter(|t| tolerates(t, taint))
        .filter_map(|t| t.toleration_seconds.map(|s| (*t, s.max(0))))
        .min_by_key(|(_, s)| *s)
}

/// Whether one toleration covers another, as the RuntimeClass plugin merges them.
pub fn covers(wide: &Toleration, narrow: &Toleration) -> bool {
    let wide_effect = wide.effect.as_deref().unwrap_or("");
    if !wide_effect.is_empty() && Some(wide_effect) != narrow.effect.as_deref() {
        return false;
    }
    let wide_key = wide.key.as_deref().unwrap_or("");
    let exists = wide.operator.as_deref() == Some("Exists");
    if wide_key.is_empty() {
        return exists;
    }
    if Some(wide_key) != narrow.key.as_deref() {
        return false;
    }
    exists || (wide.value == narrow.value && narrow.operator.as_deref() != Some("Exists"))
}

/// The toleration the policy adds for the Windows taint.
pub fn for_taint(taint: &Taint) -> Value {
    if taint.value.is_empty() {
        json!({"key": taint.key, "operator": "Exists", "effect": taint.effect})
    } else {
        json!({"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect})
    }
}

/// Renders a toleration for messages, e.g. `os=windows:NoSchedule` or `Exists (any taint)`.
pub fn describe(t: &Toleration) -> String {
    let key = t.key.as_deref().unwrap_or("");
    let effect = t.effect.as_deref().unwrap_or("");
    let exists = t.operator.as_deref() == Some("Exists");
    let target = match (key.is_empty(), exists) {
        (true, true) if effect.is_empty() => "every taint".to_string(),
        (true, true) => return format!("every {effect} taint"),
        (false, true) => format!("{key} (any value)"),
        _ => format!("{key}={}", t.value.as_deref().unwrap_or("")),
    };
    if effect.is_empty() {
        target
    } else {
        format!("{target}:{effect}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint() -> Taint {
        Taint {
            key: "os".into(),
            value: "windows".into(),
            effect: "NoSchedule".into(),
        }
    }

    fn t(v: Value) -> Toleration {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn exists_without_key_tolerates_everything() {
        assert!(tolerates(&t(json!({"operator": "Exists"})), &taint()));
        assert!(tolerates(
            &t(json!({"operator": "Exists", "effect": "NoSchedule"})),
            &taint()
        ));
        assert!(!tolerates(
            &t(json!({"operator": "Exists", "effect": "NoExecute"})),
            &taint()
        ));
    }

    #[test]
    fn equal_needs_key_value_and_effect() {
        assert!(tolerates(
            &t(
                json!({"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"})
            ),
            &taint()
        ));
        assert!(tolerates(
            &t(json!({"key": "os", "value": "windows"})),
            &taint()
        ));
        // Values are case-sensitive (corpus: microsoft/SDN uses "Windows").
        assert!(!tolerates(
            &t(
                json!({"key": "os", "operator": "Equal", "value": "Windows", "effect": "NoSchedule"})
            ),
            &taint()
        ));
        assert!(!tolerates(
            &t(json!({"key": "node.kubernetes.io/os", "operator": "Exists"})),
            &taint()
        ));
        assert!(tolerates(
            &t(json!({"key": "os", "operator": "Exists"})),
            &taint()
        ));
    }

    #[test]
    fn coverage_follows_the_runtime_class_merge() {
        let all = t(json!({"operator": "Exists"}));
        let specific = t(
            json!({"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}),
        );
        assert!(covers(&all, &specific));
        assert!(!covers(&specific, &all));
        assert!(covers(&specific, &specific));
        let any_effect = t(json!({"key": "os", "operator": "Equal", "value": "windows"}));
        assert!(covers(&any_effect, &specific));
    }

    #[test]
    fn added_toleration_shape() {
        assert_eq!(
            for_taint(&taint()),
            json!({"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"})
        );
        let no_value = Taint {
            value: String::new(),
            ..taint()
        };
        assert_eq!(
            for_taint(&no_value),
            json!({"key": "os", "operator": "Exists", "effect": "NoSchedule"})
        );
        assert!(tolerates(&t(for_taint(&no_value)), &no_value));
    }
}
