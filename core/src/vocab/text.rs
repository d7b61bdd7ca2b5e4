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
    cut(error, QUOTED_ERROR_CHARS)
}

/// `text` in at most `chars` characters, then `…` when it was longer.
pub fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or_default()),
        None => text.to_string(),
    }
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
    fn cut_keeps_short_texts_and_marks_cut_ones() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("日本語です", 2), "日本…");
        assert_eq!(cut("", 0), "");
        assert_eq!(short(&"x".repeat(48)), "x".repeat(48));
        assert_eq!(short(&"x".repeat(49)), format!("{}…", "x".repeat(48)));
    }

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
