//! Scalars as kubectl reads them: sigs.k8s.io/yaml decodes YAML with
//! go-yaml v2 (`resolve.go`), which keeps YAML 1.1's words and numbers
//! (`yes`/`on` are booleans, `0644` is octal), then writes JSON (mapping
//! keys become text; an integral float is written as an integer).
//! Only plain (unquoted, untagged) scalars are resolved; quoted and block
//! scalars are text.

use crate::node::Data;

/// What a plain scalar means, as go-yaml v2's `resolve` decides it.
pub(crate) fn resolve_plain(text: &str) -> Data {
    if let Some(data) = by_name(text) {
        return data;
    }
    match text.as_bytes().first() {
        Some(b'.') => float(text).map_or_else(|| Data::Str(text.into()), Data::Float),
        Some(b'0'..=b'9' | b'+' | b'-') => number(text).unwrap_or_else(|| Data::Str(text.into())),
        _ => Data::Str(text.into()),
    }
}

/// The words go-yaml v2 resolves by name (`resolveMapList`).
fn by_name(text: &str) -> Option<Data> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Data::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Data::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => Data::Null,
        ".nan" | ".NaN" | ".NAN" => Data::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Data::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Data::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// An integer (`strconv.ParseInt(s, 0, 64)`, then `ParseUint`), else a
/// YAML-style float, after dropping `_` as go-yaml does.
fn number(text: &str) -> Option<Data> {
    let plain: String = text.chars().filter(|c| *c != '_').collect();
    if let Some(i) = go_int(&plain) {
        return Some(Data::Int(i));
    }
    if let Some(u) = go_uint(&plain) {
        return Some(Data::Uint(u));
    }
    yaml_style_float(&plain)
        .then(|| float(&plain))
        .flatten()
        .map(Data::Float)
}

/// `strconv.ParseInt(s, 0, 64)`: a sign, then `0x`, `0o`, `0b`, a leading
/// `0` (octal) or decimal digits.
fn go_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, text.get(1..)?),
        b'+' => (false, text.get(1..)?),
        _ => (false, text),
    };
    let magnitude = go_uint(digits)?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseUint(s, 0, 64)` (no sign).
fn go_uint(text: &str) -> Option<u64> {
    let lower = text.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, text.get(2..)?),
        Some("0o") => (8, text.get(2..)?),
        Some("0b") => (2, text.get(2..)?),
        _ if text.len() > 1 && text.starts_with('0') => (8, text.get(1..)?),
        _ => (10, text),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// go-yaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (
            body.get(..i).unwrap_or(""),
            Some(body.get(i + 1..).unwrap_or("")),
        ),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

fn float(text: &str) -> Option<f64> {
    // Rust's parser also takes `inf` and `nan`, which never get here: both
    // callers pass only text that starts with `.` or matched the float shape.
    text.parse::<f64>().ok()
}

/// A mapping key as sigs.k8s.io/yaml writes it in JSON: text as is,
/// integers in decimal, floats as Go's `FormatFloat(f, 'g', -1, 32)`,
/// booleans as `true`/`false`; `None` for keys JSON cannot have (null,
/// integers above `i64::MAX`).
pub(crate) fn key_text(data: &Data) -> Option<String> {
    Some(match data {
        Data::Str(s) => s.clone(),
        Data::Int(i) => i.to_string(),
        Data::Bool(b) => b.to_string(),
        Data::Float(f) => go_float32_g(*f),
        Data::Null | Data::Uint(_) | Data::Seq(_) | Data::Map(_) => return None,
    })
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits of the
/// float32, in `%e` form when the exponent is below -4 or at least 6.
fn go_float32_g(value: f64) -> String {
    let single = value as f32;
    if single.is_nan() {
        return ".nan".into();
    }
    if single.is_infinite() {
        return if single > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `-1.2345e6`.
    let scientific = format!("{single:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{fraction}e{exp_sign}{:02}",
            exponent.unsigned_abs()
        );
    }
    let point = exponent + 1;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        let point = point as usize;
        let padded = format!("{digits:0<point$}");
        let (whole, fraction) = padded.split_at(point);
        if fraction.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{fraction}")
        }
    };
    format!("{sign}{text}")
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str) -> Data {
        resolve_plain(text)
    }

    /// go-yaml v2 resolve.go: the YAML 1.1 words.
    #[test]
    fn yaml_1_1_words_are_booleans_and_nulls() {
        for word in ["y", "Yes", "YES", "on", "ON", "true", "True"] {
            assert_eq!(resolved(word), Data::Bool(true), "{word}");
        }
        for word in ["n", "No", "off", "OFF", "false", "FALSE"] {
            assert_eq!(resolved(word), Data::Bool(false), "{word}");
        }
        for word in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolved(word), Data::Null, "{word:?}");
        }
        // Mixed case outside the table stays text.
        for word in ["yEs", "oN", "nULL", "TRue", "<<"] {
            assert_eq!(resolved(word), Data::Str(word.into()), "{word}");
        }
    }

    /// go-yaml v2: `strconv.ParseInt(plain, 0, 64)` with `_` removed, then
    /// `ParseUint`, then the YAML float shape.
    #[test]
    fn numbers_follow_go_parse_int_with_base_prefixes() {
        assert_eq!(resolved("0644"), Data::Int(420), "a leading 0 is octal");
        assert_eq!(resolved("0o17"), Data::Int(15));
        assert_eq!(resolved("0x1F"), Data::Int(31));
        assert_eq!(resolved("-0x10"), Data::Int(-16));
        assert_eq!(resolved("0b101"), Data::Int(5));
        assert_eq!(resolved("1_000"), Data::Int(1000));
        assert_eq!(resolved("+12"), Data::Int(12));
        assert_eq!(resolved("-9223372036854775808"), Data::Int(i64::MIN));
        assert_eq!(
            resolved("18446744073709551615"),
            Data::Uint(u64::MAX),
            "above i64 is a uint"
        );
        // `08` is no octal number, but has the float shape.
        assert_eq!(resolved("08"), Data::Float(8.0));
        assert_eq!(resolved("1e3"), Data::Float(1000.0));
        assert_eq!(resolved(".5"), Data::Float(0.5));
        assert_eq!(resolved("-1.5e-3"), Data::Float(-0.0015));
        assert_eq!(resolved("1."), Data::Float(1.0));
    }

    #[test]
    fn what_only_looks_numeric_is_text() {
        for text in [
            "10.0.17763",
            "1:20",
            "2001-12-14",
            "0x",
            "1e",
            "+",
            "-",
            ".",
            "0xG",
            "1.2.3",
            "12abc",
            "inf",
            "nan",
        ] {
            assert_eq!(resolved(text), Data::Str(text.into()), "{text}");
        }
        assert!(matches!(resolved(".inf"), Data::Float(f) if f.is_infinite()));
    }

    /// sigs.k8s.io/yaml `convertToJSONableObject`: keys to text.
    #[test]
    fn keys_become_their_json_text() {
        assert_eq!(key_text(&Data::Int(1)).unwrap(), "1");
        assert_eq!(key_text(&Data::Bool(true)).unwrap(), "true");
        assert_eq!(key_text(&Data::Null), None);
        assert_eq!(key_text(&Data::Uint(u64::MAX)), None);
        // Go: strconv.FormatFloat(f, 'g', -1, 32).
        for (value, text) in [
            (1.5, "1.5"),
            (3.0, "3"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
        ] {
            assert_eq!(go_float32_g(value), text, "{value}");
        }
    }
}
