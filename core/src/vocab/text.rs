//! Words for messages: JSON values named by their type, quoted host errors
//! shortened to fit a warning line.

use serde_json::Value;

/// "a string", "a list", ... for messages about JSON of the wrong type.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Characters of a host error quoted in a diagnostic: with the field path,
/// the image and the fix, the line must stay within the API server's limit.
const QUOTED_ERROR_CHARS: usize = 48;

/// The error text, short enough for a warning line.
pub fn short(error: &str) -> String {
    let mut text: String = error.chars().take(QUOTED_ERROR_CHARS).collect();
    if error.chars().count() > QUOTED_ERROR_CHARS {
        text.push('…');
    }
    text
}
