//! Policy settings, declared once (`objects.rs`): each key with its type,
//! default and meaning. They are read straight from JSON bytes or a JSON
//! value, every mistake reported at its path (unknown keys with the nearest
//! known one), then each object's `validate` step runs.

mod declare;
mod objects;
mod read;
pub mod schema;
mod taints;
mod values;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

pub use objects::{
    ImageRule, NodeTemplate, RuntimeClass, Scheduling, Settings, DEFAULT_FACTS_NAMESPACE,
};
pub use taints::{TaintFields, TaintSetting};

use crate::vocab::constraint::Os;
use crate::vocab::diagnostics::{render, Code, Diagnostic};
use crate::vocab::isolation::{handler_is_hyperv, Isolation};
use crate::vocab::taint::Taint;
use read::{At, SettingValue};
use schema::{FieldSchema, Shape};

/// What a pod with no OS signal gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultOs {
    /// A Linux selector.
    Linux,
    /// Nothing: pods without any OS signal are left alone.
    None,
}

values::word_setting!(DefaultOs { "linux" => DefaultOs::Linux, "none" => DefaultOs::None });

/// Which images the adapter reads from the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageLookup {
    /// None.
    Off,
    /// Only those whose reference decides nothing while placement is open.
    Undecided,
    /// Every image.
    Always,
}

values::word_setting!(ImageLookup {
    "off" => ImageLookup::Off,
    "undecided" => ImageLookup::Undecided,
    "always" => ImageLookup::Always,
});

/// Where image platforms come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFactsSource {
    /// The facts the syncer (`os-placement facts sync`) publishes as
    /// ConfigMaps, read from the policy server's informer cache: admission
    /// never waits on a registry.
    Cluster,
    /// The registry, asked at admission time by the policy server: a
    /// registry that hangs stalls admission (the policy server's OCI calls
    /// have no timeout).
    Registry,
}

values::word_setting!(ImageFactsSource {
    "cluster" => ImageFactsSource::Cluster,
    "registry" => ImageFactsSource::Registry,
});

/// What a failed lookup does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupFailure {
    /// Fall back to the reference rules, with a warning.
    Warn,
    /// Reject the request.
    Reject,
}

values::word_setting!(LookupFailure { "warn" => LookupFailure::Warn, "reject" => LookupFailure::Reject });

/// Whether the node inventory is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeInventory {
    /// Nodes are not read for the check.
    Off,
    /// The Nodes are read when the host grants it: a pod no node runs (its
    /// OS, build or architecture) is admitted with a warning; a list that
    /// cannot be read is not mentioned.
    Auto,
    /// A pod no node can run is admitted with a warning.
    Warn,
    /// A pod no node can run is rejected.
    Reject,
}

values::word_setting!(NodeInventory {
    "off" => NodeInventory::Off,
    "auto" => NodeInventory::Auto,
    "warn" => NodeInventory::Warn,
    "reject" => NodeInventory::Reject,
});

values::word_setting!(Isolation { "process" => Isolation::Process, "hyperv" => Isolation::Hyperv });

values::word_setting!(Os { "linux" => Os::Linux, "windows" => Os::Windows });

impl NodeInventory {
    /// Whether the check needs the Nodes.
    pub fn reads_nodes(self) -> bool {
        self != NodeInventory::Off
    }

    /// Whether the settings ask for the full check (`warn` or `reject`):
    /// selectors and taints too, the cluster's builds for placement, and a
    /// warning when the Nodes cannot be read.
    pub fn explicit(self) -> bool {
        matches!(self, NodeInventory::Warn | NodeInventory::Reject)
    }
}

impl RuntimeClass {
    /// Whether pods of this class run Hyper-V isolated Windows containers.
    pub fn is_hyperv(&self) -> bool {
        match self.isolation {
            Some(isolation) => isolation == Isolation::Hyperv,
            None => self.handler.as_deref().is_some_and(handler_is_hyperv),
        }
    }
}

/// Every problem found in the settings, each with its path from the
/// settings root (`windowsTaint.effect`), rendered one per line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingsError {
    /// The problems, code `invalid-setting`, in the order found.
    pub problems: Vec<Diagnostic>,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(&self.problems))
    }
}

impl std::error::Error for SettingsError {}

/// The top-level setting keys.
pub const SETTING_KEYS: &[&str] = Settings::KEYS;

impl Settings {
    /// Reads settings from a JSON value; `null` means all defaults.
    pub fn from_value(value: &Value) -> Result<Settings, SettingsError> {
        let problems = RefCell::new(Vec::new());
        let read = Root::read(value, &At::root(&problems));
        let problems = problems.into_inner();
        match read {
            Some(Root(settings)) if problems.is_empty() => Ok(settings),
            _ => Err(SettingsError { problems }),
        }
    }

    /// Reads settings from JSON text; `null` means all defaults.
    pub fn from_json(text: &str) -> Result<Settings, SettingsError> {
        Settings::from_slice(text.as_bytes())
    }

    /// Reads settings from JSON bytes; `null` means all defaults.
    pub fn from_slice(bytes: &[u8]) -> Result<Settings, SettingsError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| SettingsError {
            problems: vec![Diagnostic::new(
                Code::InvalidSetting,
                "settings",
                format!("not valid JSON: {e}"),
                "",
            )],
        })?;
        Settings::from_value(&value)
    }

    /// The RuntimeClass of that name, if the settings declare it.
    pub fn runtime_class(&self, name: &str) -> Option<&RuntimeClass> {
        self.runtime_classes.iter().find(|rc| rc.name == name)
    }

    /// The taint on the Windows nodes, when the settings name one (or it
    /// was read from the nodes).
    pub fn windows_taint(&self) -> Option<&Taint> {
        self.windows_taint.taint()
    }

    /// The taint on the Linux nodes, when the settings name one (or it was
    /// read from the nodes).
    pub fn linux_taint(&self) -> Option<&Taint> {
        self.linux_taint.taint()
    }

    /// The taint nodes of `os` carry.
    pub fn taint_of(&self, os: crate::vocab::constraint::Os) -> Option<&Taint> {
        match os {
            crate::vocab::constraint::Os::Linux => self.linux_taint(),
            crate::vocab::constraint::Os::Windows => self.windows_taint(),
        }
    }

    /// Whether a taint is to be read from the nodes.
    pub fn taints_from_nodes(&self) -> bool {
        self.windows_taint.reads_nodes() || self.linux_taint.reads_nodes()
    }

    /// Every key with its shape, default and meaning.
    pub fn schema() -> Vec<FieldSchema> {
        match Settings::shape() {
            Shape::Object { fields } => fields,
            _ => Vec::new(),
        }
    }

    /// The settings as JSON, every key written out.
    pub fn to_json(&self) -> Value {
        SettingValue::to_json(self)
    }
}

/// The settings root: an object, or `null` for all defaults.
struct Root(Settings);

impl SettingValue for Root {
    const EXPECTED: &'static str = "an object";

    fn shape() -> Shape {
        Settings::shape()
    }

    fn to_json(&self) -> Value {
        self.0.to_json()
    }

    fn read(value: &Value, at: &At<'_>) -> Option<Root> {
        match value {
            Value::Null => Some(Root(Settings::default())),
            _ => Settings::read(value, at).map(Root),
        }
    }
}
