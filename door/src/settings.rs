//! Policy settings from YAML or JSON text, checked by the core with the
//! messages of the policy's `validate_settings`, each problem at the line
//! of its field.

use os_placement_core::{Settings, SettingsError};
use serde_json::Value;

use crate::error::TextError;
use crate::node::Position;
use crate::stream::read_one;

/// Why settings text gives no settings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsTextError {
    /// The text is not YAML or JSON.
    #[error("settings are not valid YAML or JSON: {0}")]
    Text(TextError),
    /// The settings break the policy's rules for them.
    #[error("{error}")]
    Invalid {
        /// Every problem, as `validate_settings` reports it.
        error: SettingsError,
        /// Where each problem's field is written, in the same order.
        at: Vec<Position>,
    },
}

/// Reads settings: empty text (or `null`) means every default.
pub fn read_settings(text: &str) -> Result<Settings, SettingsTextError> {
    let root = read_one(text).map_err(SettingsTextError::Text)?;
    let value = root.as_ref().map_or(Value::Null, |r| r.to_json());
    Settings::from_value(&value).map_err(|error| {
        let at = error
            .problems
            .iter()
            .map(|p| {
                root.as_ref()
                    .map_or(Position { line: 1, column: 1 }, |r| r.locate(&p.path))
            })
            .collect();
        SettingsTextError::Invalid { error, at }
    })
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_yaml_1_1_words_and_located_problems() {
        assert_eq!(
            format!("{:?}", read_settings("").unwrap()),
            format!("{:?}", Settings::default())
        );
        // `mutate: no` is the boolean false, as kubectl applies it.
        assert!(!read_settings("mutate: no\n").unwrap().mutate);
        let Err(SettingsTextError::Invalid { error, at }) =
            read_settings("windowsTaint:\n  key: os\n  effect: Sometimes\nmutat: true\n")
        else {
            panic!("invalid")
        };
        let paths: Vec<&str> = error.problems.iter().map(|p| p.path.as_str()).collect();
        assert!(
            paths.contains(&"windowsTaint.effect") && paths.contains(&"mutat"),
            "{paths:?}"
        );
        let effect = paths
            .iter()
            .position(|p| *p == "windowsTaint.effect")
            .unwrap();
        assert_eq!(at[effect], Position { line: 3, column: 3 });
        let e = read_settings("mutate: [\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("settings are not valid YAML or JSON"),
            "{e}"
        );
    }
}
