//! The only place that talks to the rule core: settings in, one decision
//! per object out, in the CLI's own report types.

use std::path::{Path, PathBuf};

use os_placement_core::{evaluate, Diagnostic, Review, Settings, SignalReport};
use serde_json::Value;

use crate::args::{OperationArg, Preset};

/// Where the settings come from.
#[derive(Debug, Clone)]
pub enum SettingsSource {
    Defaults,
    File(PathBuf),
    Preset(Preset),
}

impl SettingsSource {
    /// How reports name the settings.
    pub fn label(&self) -> String {
        match self {
            SettingsSource::Defaults => "defaults".to_owned(),
            SettingsSource::File(path) => path.display().to_string(),
            SettingsSource::Preset(preset) => format!("preset {}", preset.name()),
        }
    }
}

/// The example settings shipped in `examples/settings/`, for `--preset`.
fn preset_text(preset: Preset) -> &'static str {
    match preset {
        Preset::Eks => include_str!("../../examples/settings/eks.yaml"),
        Preset::Gke => include_str!("../../examples/settings/gke.yaml"),
        Preset::Aks => include_str!("../../examples/settings/aks.yaml"),
    }
}

/// Reads and validates settings; the error lines are those of the policy's
/// `validate_settings`, each prefixed with where the settings came from.
pub fn load_settings(source: &SettingsSource) -> Result<Settings, Vec<String>> {
    let label = source.label();
    let value = match source {
        SettingsSource::Defaults => Value::Null,
        SettingsSource::Preset(preset) => parse_settings_text(preset_text(*preset), &label)?,
        SettingsSource::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| vec![format!("cannot read settings {}: {e}", path.display())])?;
            parse_settings_text(&text, &label)?
        }
    };
    Settings::from_value(&value).map_err(|e| {
        e.to_string()
            .lines()
            .map(|line| format!("{label}: {line}"))
            .collect()
    })
}

fn parse_settings_text(text: &str, label: &str) -> Result<Value, Vec<String>> {
    serde_yaml_ng::from_str::<Value>(text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        let message = e.to_string();
        let message = message
            .split_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        vec![format!(
            "{label}{at}: settings are not valid YAML or JSON: {message}"
        )]
    })
}

/// Whether the core evaluates this object, as the recommended
/// ClusterAdmissionPolicy routes it: the kind within its API group.
pub fn unsupported_reason(object: &Value) -> Option<String> {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let Some(parsed) = os_placement_core::Kind::parse(kind) else {
        return Some(format!("{kind} has no pod template"));
    };
    if group != parsed.api_group() {
        return Some(format!(
            "{api_version} {kind} is not a Kubernetes workload kind"
        ));
    }
    None
}

/// The decision on one object.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub accepted: bool,
    pub violations: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// RFC 6902 operations, relative to the object.
    pub patch: Vec<Value>,
    /// The object with the patch applied; None when unchanged.
    pub mutated: Option<Value>,
    /// The fields that said which OS and build the pod needs.
    pub signals: Vec<SignalReport>,
}

impl Outcome {
    pub fn patched(&self) -> bool {
        self.accepted && !self.patch.is_empty()
    }
}

/// Evaluates one object as the admission request of `operation` would.
pub fn evaluate_object(object: &Value, settings: &Settings, operation: OperationArg) -> Outcome {
    let review = Review {
        kind: object.get("kind").and_then(Value::as_str).unwrap_or(""),
        operation: operation.to_core(),
        object,
        old_object: None,
    };
    let decision = evaluate(&review, settings);
    let patch = match serde_json::to_value(&decision.patch) {
        Ok(Value::Array(ops)) => ops,
        _ => Vec::new(),
    };
    Outcome {
        accepted: decision.accepted,
        violations: decision.violations,
        warnings: decision.warnings,
        patch,
        mutated: decision.mutated_object,
        signals: decision.signals,
    }
}

/// A settings file path as given on the command line.
pub fn settings_source(file: Option<&Path>, preset: Option<Preset>) -> SettingsSource {
    match (file, preset) {
        (Some(path), _) => SettingsSource::File(path.to_path_buf()),
        (None, Some(preset)) => SettingsSource::Preset(preset),
        (None, None) => SettingsSource::Defaults,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_only_workload_kinds_in_their_groups() {
        let object = |api: &str, kind: &str| json!({"apiVersion": api, "kind": kind});
        assert_eq!(unsupported_reason(&object("apps/v1", "Deployment")), None);
        assert_eq!(unsupported_reason(&object("v1", "Pod")), None);
        assert_eq!(unsupported_reason(&object("batch/v1", "CronJob")), None);
        assert!(unsupported_reason(&object("v1", "Service")).is_some());
        // A custom resource that happens to be called Job.
        assert!(unsupported_reason(&object("batch.volcano.sh/v1alpha1", "Job")).is_some());
    }

    #[test]
    fn presets_are_valid_settings() {
        for preset in [Preset::Eks, Preset::Gke, Preset::Aks] {
            let settings = load_settings(&SettingsSource::Preset(preset));
            assert!(settings.is_ok(), "{preset:?}: {settings:?}");
        }
    }

    #[test]
    fn settings_errors_name_the_source_and_the_key() {
        let dir =
            std::env::temp_dir().join(format!("os-placement-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.yaml");
        std::fs::write(&path, "mutate: yes please\nbogus: 1\n").unwrap();
        let errors = load_settings(&SettingsSource::File(path.clone())).unwrap_err();
        let label = path.display().to_string();
        assert!(errors.iter().all(|e| e.starts_with(&label)), "{errors:?}");
        assert!(errors.iter().any(|e| e.contains("bogus")), "{errors:?}");
        std::fs::write(&path, "mutate: [\n").unwrap();
        let errors = load_settings(&SettingsSource::File(path)).unwrap_err();
        assert!(errors[0].contains("not valid YAML"), "{errors:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
