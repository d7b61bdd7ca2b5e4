//! The settings described for people and forms: every key with its type,
//! default and meaning, generated from the one declaration. The Rancher UI
//! questions (`questions-ui.yml`) and the playground's settings form are
//! checked against or built from it.

use serde::Serialize;
use serde_json::Value;

/// What a setting's value looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Shape {
    /// `true` or `false`.
    Boolean,
    /// A string; `example` shows a typical value.
    String {
        /// A typical value, for placeholders.
        example: &'static str,
    },
    /// An integer.
    Integer,
    /// One of these strings.
    Enum {
        /// The accepted values.
        values: Vec<&'static str>,
    },
    /// A list of values of one shape.
    List {
        /// The shape of each item.
        item: Box<Shape>,
    },
    /// A map from label keys to strings.
    Map,
    /// An object with these keys.
    Object {
        /// Its keys.
        fields: Vec<FieldSchema>,
    },
    /// One of several shapes, e.g. `null`, a word, or an object.
    OneOf {
        /// The alternatives.
        options: Vec<Shape>,
    },
    /// The string `value`, written as is.
    Literal {
        /// The word.
        value: &'static str,
    },
    /// `null`.
    Null,
}

/// One key of a settings object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSchema {
    /// The key, e.g. `windowsTaint`.
    pub key: &'static str,
    /// What it means, from the declaration's doc comment.
    pub description: String,
    /// Its shape.
    pub shape: Shape,
    /// Its default, as JSON; `null` for required keys.
    pub default: Value,
    /// Whether it must be given.
    pub required: bool,
}
