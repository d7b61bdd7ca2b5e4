//! Taints and tolerations in the settings: the taint a kind of node
//! carries (`windowsTaint`), and the tolerations of a RuntimeClass, checked
//! as the API server's `ValidateTolerations` checks them.

use k8s_openapi::api::core::v1::Toleration;
use serde_json::Value;

use crate::input::settings::declare::{settings_object, Validate};
use crate::input::settings::read::{wrong, At, SettingValue};
use crate::input::settings::schema::Shape;
use crate::vocab::names::{is_label_value, is_qualified_name};
use crate::vocab::taint::{Taint, TAINT_EFFECTS};

/// The word that reads a taint from the nodes.
const FROM_NODES: &str = "fromNodes";

/// The taint a kind of node carries, as the settings give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaintSetting {
    /// `null`: those nodes are not tainted.
    Untainted,
    /// `fromNodes`: read from the nodes (the taint they all carry and no
    /// other node does).
    FromNodes,
    /// The taint.
    Taint(Taint),
}

impl TaintSetting {
    /// The taint, when one is set.
    pub fn taint(&self) -> Option<&Taint> {
        match self {
            TaintSetting::Taint(taint) => Some(taint),
            _ => None,
        }
    }

    /// Whether the taint is read from the nodes.
    pub fn reads_nodes(&self) -> bool {
        *self == TaintSetting::FromNodes
    }
}

impl From<Option<Taint>> for TaintSetting {
    fn from(taint: Option<Taint>) -> TaintSetting {
        taint.map_or(TaintSetting::Untainted, TaintSetting::Taint)
    }
}

impl SettingValue for TaintSetting {
    const EXPECTED: &'static str =
        "an object {key, value, effect}, \"fromNodes\" (read from the nodes) or null";

    fn shape() -> Shape {
        Shape::OneOf {
            options: vec![
                Shape::Null,
                Shape::Literal { value: FROM_NODES },
                TaintFields::shape(),
            ],
        }
    }

    fn to_json(&self) -> Value {
        match self {
            TaintSetting::Untainted => Value::Null,
            TaintSetting::FromNodes => Value::String(FROM_NODES.to_string()),
            TaintSetting::Taint(taint) => TaintFields::from(taint.clone()).to_json(),
        }
    }

    fn read(value: &Value, at: &At<'_>) -> Option<TaintSetting> {
        match value {
            Value::Null => Some(TaintSetting::Untainted),
            Value::String(s) if s == FROM_NODES => Some(TaintSetting::FromNodes),
            Value::Object(_) => TaintFields::read(value, at).map(|t| TaintSetting::Taint(t.into())),
            _ => wrong(Self::EXPECTED, value, at),
        }
    }
}

settings_object! {
    /// A taint as the settings write it.
    pub struct TaintFields {
        /// Label-key syntax: os (EKS guides), node.kubernetes.io/os (GKE).
        key: String = String::new() => "key",
            required "is required (e.g. os on EKS, node.kubernetes.io/os on GKE); set the taint to null when those nodes are not tainted";
        /// The taint's value, e.g. windows.
        value: String = String::new() => "value";
        /// NoSchedule, PreferNoSchedule or NoExecute.
        effect: String = String::new() => "effect",
            required "is required: one of NoSchedule, PreferNoSchedule, NoExecute";
    }
}

impl Validate for TaintFields {
    fn validate(&self, at: &At<'_>) {
        if !is_qualified_name(&self.key) {
            at.problem_at(
                "key",
                format_args!(
                "{:?} is not a valid taint key (a label key such as os or node.kubernetes.io/os)",
                self.key
            ),
            );
        }
        if !is_label_value(&self.value) {
            at.problem_at(
                "value",
                format_args!(
                    "{:?} is not a valid taint value (up to 63 letters, digits, '-', '_', '.')",
                    self.value
                ),
            );
        }
        if !TAINT_EFFECTS.contains(&self.effect.as_str()) {
            at.problem_at(
                "effect",
                format_args!(
                    "{:?} is not a taint effect: use NoSchedule, PreferNoSchedule or NoExecute",
                    self.effect
                ),
            );
        }
    }
}

impl From<TaintFields> for Taint {
    fn from(t: TaintFields) -> Taint {
        Taint {
            key: t.key,
            value: t.value,
            effect: t.effect,
        }
    }
}

impl From<Taint> for TaintFields {
    fn from(t: Taint) -> TaintFields {
        TaintFields {
            key: t.key,
            value: t.value,
            effect: t.effect,
        }
    }
}

settings_object! {
    /// A toleration as the settings write it (`core/v1` Toleration).
    pub struct TolerationFields {
        /// The taint key; empty with operator Exists tolerates every taint.
        key: Option<String> = None => "key";
        /// Equal (the default) or Exists.
        operator: Option<String> = None => "operator";
        /// The taint value, with operator Equal.
        value: Option<String> = None => "value";
        /// The taint effect; empty tolerates every effect.
        effect: Option<String> = None => "effect";
        /// How long a NoExecute taint is tolerated.
        toleration_seconds: Option<i64> = None => "tolerationSeconds";
    }
}

/// As the API server's `ValidateTolerations` checks a toleration.
impl Validate for TolerationFields {
    fn validate(&self, at: &At<'_>) {
        let operator = match self.operator.as_deref() {
            None | Some("") => "Equal",
            Some(op) => op,
        };
        let key = self.key.as_deref().unwrap_or("");
        let has_value = self.value.as_deref().is_some_and(|v| !v.is_empty());
        match operator {
            "Equal" if key.is_empty() => at.problem_at(
                "key",
                "is required with operator Equal (an empty key needs operator Exists)",
            ),
            "Exists" if has_value => at.problem_at("value", "must be empty with operator Exists"),
            "Equal" | "Exists" => {}
            other => at.problem_at(
                "operator",
                format_args!("{other:?} is not a toleration operator: use Equal or Exists"),
            ),
        }
        if let Some(effect) = self.effect.as_deref().filter(|e| !e.is_empty()) {
            if !TAINT_EFFECTS.contains(&effect) {
                at.problem_at("effect", format_args!(
                    "{effect:?} is not a taint effect: use NoSchedule, PreferNoSchedule or NoExecute, or leave it empty for all"
                ));
            }
        }
    }
}

impl SettingValue for Toleration {
    const EXPECTED: &'static str = "an object";

    fn shape() -> Shape {
        TolerationFields::shape()
    }

    fn to_json(&self) -> Value {
        TolerationFields {
            key: self.key.clone(),
            operator: self.operator.clone(),
            value: self.value.clone(),
            effect: self.effect.clone(),
            toleration_seconds: self.toleration_seconds,
        }
        .to_json()
    }

    fn read(value: &Value, at: &At<'_>) -> Option<Self> {
        TolerationFields::read(value, at).map(|t| Toleration {
            key: t.key,
            operator: t.operator,
            value: t.value,
            effect: t.effect,
            toleration_seconds: t.toleration_seconds,
        })
    }
}
