//! Node taints, as `spec.taints[]` writes them.

use std::fmt;

/// The taint carried by Windows nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl Taint {
    /// Whether the scheduler keeps untolerating pods off tainted nodes:
    /// `PreferNoSchedule` is only a scoring preference.
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
