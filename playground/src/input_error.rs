//! What is wrong with an input of the page, and where.

use os_placement_door::{Position, TextError};
use serde::Serialize;

/// A problem in one of the inputs, at a line and column of its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{input} line {}, column {}: {message}", at.line, at.column)]
pub struct InputError {
    /// `object`, `settings`, `oldObject`, `pools` or `facts`.
    pub input: &'static str,
    /// The field path, when the problem is in a field.
    pub path: Option<String>,
    /// What is wrong, and how to fix it.
    pub message: String,
    /// Where.
    #[serde(flatten)]
    pub at: Position,
}

impl InputError {
    /// A text that is not valid YAML or JSON.
    pub(crate) fn text(input: &'static str, error: TextError) -> InputError {
        InputError {
            input,
            path: None,
            message: error.message,
            at: error.at,
        }
    }
}
