//! What can be wrong with an input: where, what, and how to fix it.

use serde::Serialize;

use crate::node::Position;

/// A problem with the text itself (YAML or JSON syntax, a key written
/// twice, anchors that expand too far), at a line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("line {}, column {}: {message}", at.line, at.column)]
pub struct TextError {
    /// What is wrong.
    pub message: String,
    /// Where.
    #[serde(flatten)]
    pub at: Position,
}
