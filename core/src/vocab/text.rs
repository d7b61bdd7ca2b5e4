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

/// `value` in double quotes, as `{:?}` writes it: printable ASCII without
/// quotes or backslashes is copied as it is (every signal's value is
/// quoted, so this is on every request's path); anything else is escaped
/// by the formatter.
pub fn quoted(value: &str) -> String {
    let plain = value
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if !plain {
        return format!("{value:?}");
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    out.push_str(value);
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_writes_what_debug_writes() {
        for value in [
            "windows",
            "10.0.20348",
            "mcr.microsoft.com/windows/servercore:ltsc2022",
            "",
            "a\"b",
            "back\\slash",
            "tab\there",
            "new\nline",
            "é",
            "日本",
            "\u{7f}",
            "\u{200b}",
            " spaced ",
        ] {
            assert_eq!(quoted(value), format!("{value:?}"), "{value}");
        }
    }
}
