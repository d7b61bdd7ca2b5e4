//! What a command evaluates with: the settings, the operation and the
//! facts, read through the door as the policy would be configured.

use std::path::{Path, PathBuf};

use os_placement_core::{Operation, Origin, Settings};
use os_placement_door::{read_settings, HostFacts, Options, SettingsTextError};

use crate::args::{PolicyArgs, Preset};
use crate::error::CliError;
use crate::inputs::{read_path, Input};
use crate::lookup;

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
        Preset::Rke2 => include_str!("../../examples/settings/rke2.yaml"),
    }
}

/// The settings, operation and facts of a command.
#[derive(Debug)]
pub struct Policy {
    pub settings: Settings,
    /// How reports name the settings.
    pub label: String,
    pub operation: Operation,
    /// What `--facts` says the cluster and registries hold; `None`: nothing
    /// is looked up.
    pub facts: Option<HostFacts>,
    /// `--audit`: objects judged as they exist, as the background audit does.
    pub origin: Origin,
}

impl Policy {
    /// Reads the settings and the facts the arguments name.
    pub fn load(args: &PolicyArgs) -> Result<Policy, CliError> {
        let source = settings_source(args.settings.as_deref(), args.preset);
        Ok(Policy {
            settings: load_settings(&source)?,
            label: source.label(),
            operation: args.operation.to_core(),
            facts: args.facts.as_deref().map(load_facts).transpose()?,
            origin: if args.audit {
                Origin::Audit
            } else {
                Origin::Admission
            },
        })
    }

    /// With `--lookup`, adds the platforms of the images `inputs` need
    /// that the facts do not hold, read from their registries.
    pub fn look_up(&mut self, inputs: &[Input], args: &PolicyArgs) -> Result<(), CliError> {
        if !args.lookup {
            return Ok(());
        }
        let known = |image: &String| self.facts.as_ref().is_some_and(|f| f.has_image(image));
        let missing: Vec<String> = lookup::wanted_images(inputs, &self.options())
            .into_iter()
            .filter(|image| !known(image))
            .collect();
        let found = lookup::resolve(&missing, &args.registry)?;
        if !found.is_empty() {
            self.facts
                .get_or_insert_with(HostFacts::default)
                .add_looked_up(found);
        }
        Ok(())
    }

    /// What every object is evaluated with.
    pub fn options(&self) -> Options<'_> {
        Options {
            settings: &self.settings,
            operation: self.operation,
            old_object: None,
            facts: self.facts.as_ref(),
            origin: self.origin,
        }
    }
}

/// Reads and validates settings; each problem is one line, prefixed with
/// where it is: `file:line:column: path: message; fix`.
pub fn load_settings(source: &SettingsSource) -> Result<Settings, CliError> {
    let label = source.label();
    let text = match source {
        SettingsSource::Defaults => return Ok(Settings::default()),
        SettingsSource::Preset(preset) => preset_text(*preset).to_owned(),
        SettingsSource::File(path) => read_path(path)?,
    };
    read_settings(&text).map_err(|error| CliError::Settings(problem_lines(&label, &error)))
}

fn problem_lines(label: &str, error: &SettingsTextError) -> Vec<String> {
    match error {
        SettingsTextError::Text(e) => vec![format!(
            "{label}:{}:{}: settings are not valid YAML or JSON: {}",
            e.at.line, e.at.column, e.message
        )],
        SettingsTextError::Invalid { error, at } => error
            .problems
            .iter()
            .zip(at)
            .map(|(problem, at)| format!("{label}:{}:{}: {problem}", at.line, at.column))
            .collect(),
    }
}

/// Reads a facts file (`--facts`).
fn load_facts(path: &Path) -> Result<HostFacts, CliError> {
    let text = read_path(path)?;
    HostFacts::read(&text).map_err(|e| facts_error(path, &e))
}

/// A facts file that does not read: `file:line:column: what is wrong`.
pub fn facts_error(path: &Path, error: &os_placement_door::TextError) -> CliError {
    CliError::Facts(format!(
        "{}:{}:{}: {}",
        path.display(),
        error.at.line,
        error.at.column,
        error.message
    ))
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

    #[test]
    fn presets_are_valid_settings() {
        for preset in [Preset::Eks, Preset::Gke, Preset::Aks, Preset::Rke2] {
            let settings = load_settings(&SettingsSource::Preset(preset));
            assert!(settings.is_ok(), "{preset:?}: {settings:?}");
        }
    }

    #[test]
    fn settings_errors_name_the_source_the_line_and_the_key() {
        let dir =
            std::env::temp_dir().join(format!("os-placement-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.yaml");
        std::fs::write(&path, "mutate: yes please\nbogus: 1\n").unwrap();
        let Err(CliError::Settings(errors)) = load_settings(&SettingsSource::File(path.clone()))
        else {
            panic!("invalid settings")
        };
        let label = path.display().to_string();
        assert!(errors.iter().all(|e| e.starts_with(&label)), "{errors:?}");
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(&format!("{label}:2:1: bogus"))),
            "{errors:?}"
        );
        std::fs::write(&path, "mutate: [\n").unwrap();
        let Err(CliError::Settings(errors)) = load_settings(&SettingsSource::File(path)) else {
            panic!("not YAML")
        };
        assert!(errors[0].contains("not valid YAML"), "{errors:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
