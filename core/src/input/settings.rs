//! Policy settings: parsed from JSON with a precise message for every
//! mistake, never a silent default for a bad value.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Toleration;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::input::image_rule::ImageRule;
use crate::vocab::build::WindowsBuild;
use crate::vocab::diagnostics::{render, Code, Diagnostic};
use crate::vocab::glob::Glob;
pub use crate::vocab::isolation::Isolation;
use crate::vocab::labels::{OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::vocab::names::{is_dns_subdomain, is_label_value, is_qualified_name};
pub use crate::vocab::taint::Taint;
use crate::vocab::text::{describe, json_type_name};

/// What a pod with no OS signal gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultOs {
    Linux,
    /// Leave pods without any OS signal alone.
    None,
}

/// The scheduling part of a RuntimeClass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scheduling {
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

/// A cluster RuntimeClass that carries scheduling.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeClass {
    pub name: String,
    pub scheduling: Scheduling,
    /// The CRI handler, when known (from the cluster or the settings).
    pub handler: Option<String>,
    /// Declared isolation; `None` infers it from the handler.
    pub isolation: Option<Isolation>,
}

impl RuntimeClass {
    /// Whether pods of this class run Hyper-V isolated Windows containers.
    pub fn is_hyperv(&self) -> bool {
        match self.isolation {
            Some(isolation) => isolation == Isolation::Hyperv,
            None => self
                .handler
                .as_deref()
                .is_some_and(crate::vocab::isolation::handler_is_hyperv),
        }
    }
}

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

/// What a failed lookup does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupFailure {
    /// Fall back to the reference rules, with a warning.
    Warn,
    /// Reject the request.
    Reject,
}

/// Whether the node inventory is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeInventory {
    /// Nodes are not read for the check.
    Off,
    /// A pod no node can run is admitted with a warning.
    Warn,
    /// A pod no node can run is rejected.
    Reject,
}

impl NodeInventory {
    /// Whether the check needs the Nodes.
    pub fn reads_nodes(self) -> bool {
        self != NodeInventory::Off
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub mutate: bool,
    pub default_os: DefaultOs,
    pub windows_taint: Option<Taint>,
    pub pin_windows_build: bool,
    pub set_pod_os: bool,
    pub prefer_runtime_class: bool,
    pub runtime_classes: Vec<RuntimeClass>,
    pub windows_images: Vec<ImageRule>,
    /// `imageLookup`.
    pub image_lookup: ImageLookup,
    /// `lookupFailure`.
    pub lookup_failure: LookupFailure,
    /// `nodeInventory`.
    pub node_inventory: NodeInventory,
    /// `windowsTaint: fromNodes`: the taint is read from the Windows nodes.
    pub windows_taint_from_nodes: bool,
    /// `windowsBuilds`: the builds the cluster's Windows nodes run.
    pub windows_builds: Vec<WindowsBuild>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mutate: true,
            default_os: DefaultOs::Linux,
            windows_taint: None,
            pin_windows_build: true,
            set_pod_os: false,
            prefer_runtime_class: false,
            runtime_classes: Vec::new(),
            windows_images: Vec::new(),
            image_lookup: ImageLookup::Undecided,
            lookup_failure: LookupFailure::Warn,
            node_inventory: NodeInventory::Off,
            windows_taint_from_nodes: false,
            windows_builds: Vec::new(),
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
pub const SETTING_KEYS: &[&str] = &[
    "mutate",
    "defaultOS",
    "windowsTaint",
    "pinWindowsBuild",
    "setPodOS",
    "preferRuntimeClass",
    "runtimeClasses",
    "windowsImages",
    "imageLookup",
    "lookupFailure",
    "nodeInventory",
    "windowsBuilds",
];
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl Settings {
    /// Parses settings JSON; `null` means all defaults.
    pub fn from_value(value: &Value) -> Result<Settings, SettingsError> {
        let mut reader = Reader::default();
        let settings = reader.settings(value);
        if reader.problems.is_empty() {
            Ok(settings)
        } else {
            Err(SettingsError {
                problems: reader.problems,
            })
        }
    }

    /// Parses settings from JSON text.
    pub fn from_json(text: &str) -> Result<Settings, SettingsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SettingsError {
            problems: vec![Diagnostic::new(
                Code::InvalidSetting,
                "settings",
                format!("not valid JSON: {e}"),
                "",
            )],
        })?;
        Settings::from_value(&value)
    }

    pub fn runtime_class(&self, name: &str) -> Option<&RuntimeClass> {
        self.runtime_classes.iter().find(|rc| rc.name == name)
    }
}

/// Walks the settings JSON and collects every problem with its path.
#[derive(Default)]
struct Reader {
    problems: Vec<Diagnostic>,
}

impl Reader {
    fn problem(&mut self, path: &str, message: impl fmt::Display) {
        self.problems.push(Diagnostic::new(
            Code::InvalidSetting,
            path,
            message.to_string(),
            "",
        ));
    }

    fn settings(&mut self, value: &Value) -> Settings {
        let mut settings = Settings::default();
        let map = match value {
            Value::Null => return settings,
            Value::Object(map) => map,
            other => {
                self.problem(
                    "settings",
                    format!("expected an object, got {}", json_type_name(other)),
                );
                return settings;
            }
        };
        self.reject_unknown_keys("", map, SETTING_KEYS);
        if let Some(v) = self.bool(map, "mutate") {
            settings.mutate = v;
        }
        if let Some(v) = self.bool(map, "pinWindowsBuild") {
            settings.pin_windows_build = v;
        }
        if let Some(v) = self.bool(map, "setPodOS") {
            settings.set_pod_os = v;
        }
        if let Some(v) = self.bool(map, "preferRuntimeClass") {
            settings.prefer_runtime_class = v;
        }
        if let Some(v) = self.string(map, "defaultOS", "defaultOS") {
            match v.as_str() {
                "linux" => settings.default_os = DefaultOs::Linux,
                "none" => settings.default_os = DefaultOs::None,
                other => self.problem(
                    "defaultOS",
                    format!("{other:?} is not supported: use \"linux\" or \"none\""),
                ),
            }
        }
        settings.windows_taint = match map.get("windowsTaint") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == "fromNodes" => {
                settings.windows_taint_from_nodes = true;
                None
            }
            Some(Value::String(s)) => {
                self.problem(
                    "windowsTaint",
                    format!("expected an object {{key, value, effect}}, \"fromNodes\" (read from the Windows nodes) or null, got the string {s:?}"),
                );
                None
            }
            Some(v) => self.taint(v),
        };
        self.context_settings(map, &mut settings);
        if let Some(items) = self.array(map, "runtimeClasses", "runtimeClasses") {
            settings.runtime_classes = self.runtime_classes(items);
        }
        if let Some(items) = self.array(map, "windowsImages", "windowsImages") {
            settings.windows_images = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| self.image_rule(&format!("windowsImages[{i}]"), item))
                .collect();
        }
        if settings.prefer_runtime_class && settings.runtime_classes.is_empty() {
            self.problem(
                "preferRuntimeClass",
                "is true but runtimeClasses is empty: declare the cluster's RuntimeClasses that carry scheduling, or set preferRuntimeClass to false",
            );
        }
        settings
    }

    /// `imageLookup`, `lookupFailure`, `nodeInventory`, `windowsBuilds`.
    fn context_settings(&mut self, map: &Map<String, Value>, settings: &mut Settings) {
        if let Some(v) = self.string(map, "imageLookup", "imageLookup") {
            match v.as_str() {
                "off" => settings.image_lookup = ImageLookup::Off,
                "undecided" => settings.image_lookup = ImageLookup::Undecided,
                "always" => settings.image_lookup = ImageLookup::Always,
                other => self.problem(
                    "imageLookup",
                    format!("{other:?} is not supported: use \"off\", \"undecided\" or \"always\""),
                ),
            }
        }
        if let Some(v) = self.string(map, "lookupFailure", "lookupFailure") {
            match v.as_str() {
                "warn" => settings.lookup_failure = LookupFailure::Warn,
                "reject" => settings.lookup_failure = LookupFailure::Reject,
                other => self.problem(
                    "lookupFailure",
                    format!("{other:?} is not supported: use \"warn\" or \"reject\""),
                ),
            }
        }
        if let Some(v) = self.string(map, "nodeInventory", "nodeInventory") {
            match v.as_str() {
                "off" => settings.node_inventory = NodeInventory::Off,
                "warn" => settings.node_inventory = NodeInventory::Warn,
                "reject" => settings.node_inventory = NodeInventory::Reject,
                other => self.problem(
                    "nodeInventory",
                    format!("{other:?} is not supported: use \"off\", \"warn\" or \"reject\""),
                ),
            }
        }
        if let Some(items) = self.array(map, "windowsBuilds", "windowsBuilds") {
            for (i, item) in items.iter().enumerate() {
                let path = format!("windowsBuilds[{i}]");
                let Value::String(b) = item else {
                    self.problem(
                        &path,
                        format!(
                            "expected a string such as \"10.0.20348\", got {}",
                            describe(item)
                        ),
                    );
                    continue;
                };
                match WindowsBuild::parse_label(b) {
                    Ok(build) if settings.windows_builds.contains(&build) => {
                        self.problem(&path, format!("{b:?} is listed twice"))
                    }
                    Ok(build) => settings.windows_builds.push(build),
                    Err(e) => self.problem(&path, e),
                }
            }
        }
    }

    fn reject_unknown_keys(&mut self, prefix: &str, map: &Map<String, Value>, known: &[&str]) {
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                self.problem(
                    &path,
                    format!("unknown setting; known keys here are {}", known.join(", ")),
                );
            }
        }
    }

    fn bool(&mut self, map: &Map<String, Value>, key: &str) -> Option<bool> {
        match map.get(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                self.problem(
                    key,
                    format!("expected true or false, got {}", describe(other)),
                );
                None
            }
        }
    }

    fn string(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match map.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.problem(path, format!("expected a string, got {}", describe(other)));
                None
            }
        }
    }

    fn array<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<&'v Vec<Value>> {
        match map.get(key)? {
            Value::Array(items) => Some(items),
            Value::Null => None,
            other => {
                self.problem(path, format!("expected a list, got {}", describe(other)));
                None
            }
        }
    }

    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.problem(path, format!("expected an object, got {}", describe(other)));
                None
            }
        }
    }

    fn taint(&mut self, value: &Value) -> Option<Taint> {
        let map = self.object(value, "windowsTaint")?;
        self.reject_unknown_keys("windowsTaint", map, &["key", "value", "effect"]);
        let key = self.string(map, "key", "windowsTaint.key");
        let value = self
            .string(map, "value", "windowsTaint.value")
            .unwrap_or_default();
        let effect = self.string(map, "effect", "windowsTaint.effect");
        match &key {
            None if !map.contains_key("key") => self.problem(
                "windowsTaint.key",
                "is required (e.g. os on EKS, node.kubernetes.io/os on GKE); set windowsTaint to null when Windows nodes are not tainted",
            ),
            Some(k) if !is_qualified_name(k) => self.problem(
                "windowsTaint.key",
                format!("{k:?} is not a valid taint key (a label key such as os or node.kubernetes.io/os)"),
            ),
            _ => {}
        }
        if !is_label_value(&value) {
            self.problem(
                "windowsTaint.value",
                format!("{value:?} is not a valid taint value (up to 63 letters, digits, '-', '_', '.')"),
            );
        }
        match &effect {
            None if !map.contains_key("effect") => self.problem(
                "windowsTaint.effect",
                "is required: one of NoSchedule, PreferNoSchedule, NoExecute",
            ),
            Some(e) if !TAINT_EFFECTS.contains(&e.as_str()) => self.problem(
                "windowsTaint.effect",
                format!(
                    "{e:?} is not a taint effect: use NoSchedule, PreferNoSchedule or NoExecute"
                ),
            ),
            _ => {}
        }
        Some(Taint {
            key: key?,
            value,
            effect: effect?,
        })
    }

    fn runtime_classes(&mut self, items: &[Value]) -> Vec<RuntimeClass> {
        let mut classes: Vec<RuntimeClass> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("runtimeClasses[{i}]");
            let Some(rc) = self.runtime_class(&path, item) else {
                continue;
            };
            if classes.iter().any(|c| c.name == rc.name) {
                self.problem(
                    &format!("{path}.name"),
                    format!(
                        "{:?} is declared twice: RuntimeClass names are unique",
                        rc.name
                    ),
                );
                continue;
            }
            classes.push(rc);
        }
        classes
    }

    fn runtime_class(&mut self, path: &str, value: &Value) -> Option<RuntimeClass> {
        let map = self.object(value, path)?;
        self.reject_unknown_keys(path, map, &["name", "scheduling", "handler", "isolation"]);
        let handler = self.string(map, "handler", &format!("{path}.handler"));
        let isolation = match self.string(map, "isolation", &format!("{path}.isolation")) {
            None => None,
            Some(v) => match v.as_str() {
                "process" => Some(Isolation::Process),
                "hyperv" => Some(Isolation::Hyperv),
                other => {
                    self.problem(
                        &format!("{path}.isolation"),
                        format!("{other:?} is not supported: use \"process\" or \"hyperv\""),
                    );
                    None
                }
            },
        };
        let name_path = format!("{path}.name");
        let name = match map.get("name") {
            None => {
                self.problem(&name_path, "is required");
                None
            }
            Some(_) => self.string(map, "name", &name_path),
        };
        if let Some(n) = &name {
            if !is_dns_subdomain(n) {
                self.problem(
                    &name_path,
                    format!("{n:?} is not a valid RuntimeClass name (a lower-case DNS subdomain such as windows-2022)"),
                );
            }
        }
        let scheduling = match map.get("scheduling") {
            None | Some(Value::Null) => {
                self.problem(
                    &format!("{path}.scheduling"),
                    "is required: list only RuntimeClasses that carry scheduling (nodeSelector and tolerations)",
                );
                Scheduling::default()
            }
            Some(v) => self.scheduling(&format!("{path}.scheduling"), v),
        };
        Some(RuntimeClass {
            name: name?,
            scheduling,
            handler,
            isolation,
        })
    }

    fn scheduling(&mut self, path: &str, value: &Value) -> Scheduling {
        let mut scheduling = Scheduling::default();
        let Some(map) = self.object(value, path) else {
            return scheduling;
        };
        self.reject_unknown_keys(path, map, &["nodeSelector", "tolerations"]);
        if let Some(selector) = map.get("nodeSelector").filter(|v| !v.is_null()) {
            let selector_path = format!("{path}.nodeSelector");
            if let Some(entries) = self.object(selector, &selector_path) {
                for (key, v) in entries {
                    let entry_path = format!("{selector_path}[{key}]");
                    let Value::String(s) = v else {
                        self.problem(
                            &entry_path,
                            format!("expected a string, got {}", describe(v)),
                        );
                        continue;
                    };
                    if !is_qualified_name(key) {
                        self.problem(&entry_path, "is not a valid label key");
                    }
                    self.check_selector_value(&entry_path, key, s);
                    scheduling.node_selector.insert(key.clone(), s.clone());
                }
            }
        }
        if let Some(items) = self.array(map, "tolerations", &format!("{path}.tolerations")) {
            for (i, item) in items.iter().enumerate() {
                let item_path = format!("{path}.tolerations[{i}]");
                if let Some(t) = self.toleration(&item_path, item) {
                    scheduling.tolerations.push(t);
                }
            }
        }
        scheduling
    }

    fn check_selector_value(&mut self, path: &str, key: &str, value: &str) {
        if key == OS_LABEL && value != "linux" && value != "windows" {
            self.problem(
                path,
                format!("{value:?} is not an OS label value: use linux or windows"),
            );
        } else if key == WINDOWS_BUILD_LABEL {
            if let Err(e) = WindowsBuild::parse_label(value) {
                self.problem(path, e);
            }
        } else if !is_label_value(value) {
            self.problem(path, format!("{value:?} is not a valid label value"));
        }
    }

    fn toleration(&mut self, path: &str, value: &Value) -> Option<Toleration> {
        let map = self.object(value, path)?;
        self.reject_unknown_keys(
            path,
            map,
            &["key", "operator", "value", "effect", "tolerationSeconds"],
        );
        let toleration: Toleration = match serde_json::from_value(value.clone()) {
            Ok(t) => t,
            Err(e) => {
                self.problem(path, format!("is not a toleration: {e}"));
                return None;
            }
        };
        let operator = match toleration.operator.as_deref() {
            None | Some("") => "Equal",
            Some(op) => op,
        };
        let key = toleration.key.as_deref().unwrap_or("");
        let has_value = toleration.value.as_deref().is_some_and(|v| !v.is_empty());
        match operator {
            "Equal" if key.is_empty() => self.problem(
                &format!("{path}.key"),
                "is required with operator Equal (an empty key needs operator Exists)",
            ),
            "Exists" if has_value => self.problem(
                &format!("{path}.value"),
                "must be empty with operator Exists",
            ),
            "Equal" | "Exists" => {}
            other => self.problem(
                &format!("{path}.operator"),
                format!("{other:?} is not a toleration operator: use Equal or Exists"),
            ),
        }
        if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty()) {
            if !TAINT_EFFECTS.contains(&effect) {
                self.problem(
                    &format!("{path}.effect"),
                    format!("{effect:?} is not a taint effect: use NoSchedule, PreferNoSchedule or NoExecute, or leave it empty for all"),
                );
            }
        }
        Some(toleration)
    }

    fn image_rule(&mut self, path: &str, value: &Value) -> Option<ImageRule> {
        let map = self.object(value, path)?;
        self.reject_unknown_keys(path, map, &["pattern", "windowsBuild"]);
        let pattern_path = format!("{path}.pattern");
        let pattern = match map.get("pattern") {
            None => {
                self.problem(
                    &pattern_path,
                    "is required: a glob on the image reference, e.g. registry.example.com/win/*",
                );
                None
            }
            Some(_) => self.string(map, "pattern", &pattern_path),
        };
        let glob = pattern.and_then(|p| match Glob::new(&p) {
            Ok(g) => Some(g),
            Err(e) => {
                self.problem(&pattern_path, e);
                None
            }
        });
        let build_path = format!("{path}.windowsBuild");
        let windows_build = match map.get("windowsBuild") {
            None | Some(Value::Null) => None,
            Some(_) => self.string(map, "windowsBuild", &build_path).and_then(|b| {
                match WindowsBuild::parse_label(&b) {
                    Ok(build) => Some(build),
                    Err(e) => {
                        self.problem(&build_path, e);
                        None
                    }
                }
            }),
        };
        Some(ImageRule {
            pattern: glob?,
            windows_build,
        })
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
