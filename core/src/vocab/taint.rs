//! Node taints, as `spec.taints[]` writes them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The taint effects the API accepts (`core/v1` `TaintEffect`).
pub const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One taint of a node, or the taint the settings say a kind of node carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    /// Taint key, e.g. `os` or `node.kubernetes.io/os`.
    pub key: String,
    /// Taint value; empty when unset.
    #[serde(default)]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

impl Taint {
    /// Whether the scheduler keeps untolerating pods off tainted nodes:
    /// `PreferNoSchedule` is only a scoring preference (TaintToleration
    /// filters on `NoSchedule` and `NoExecute` only).
    pub fn keeps_pods_off(&self) -> bool {
        matches!(self.effect.as_str(), "NoSchedule" | "NoExecute")
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}
