//! The two ways a place in an object is named: a field path as the core
//! writes it in messages (`spec.nodeSelector[kubernetes.io/os]`), and an
//! RFC 6901 JSON Pointer as patches use it (`/spec/nodeSelector/kubernetes.io~1os`).

/// The tokens of a JSON Pointer, unescaped (`~1` is `/`, `~0` is `~`).
pub fn pointer_tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// A JSON Pointer token for `key` (`/` as `~1`, `~` as `~0`).
pub fn escape_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Splits a field path as the core renders it: `a.b[0][key/with.dots]`,
/// with keys that hold `]` or control characters written quoted.
pub fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = path.chars().peekable();
    let mut field = String::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => out.push(std::mem::take(&mut field)),
            '[' => {
                if !field.is_empty() {
                    out.push(std::mem::take(&mut field));
                }
                out.push(bracketed(&mut chars));
                // A `.` after `]` starts the next field.
                if chars.peek() == Some(&'.') {
                    chars.next();
                }
            }
            _ => field.push(c),
        }
    }
    if !field.is_empty() {
        out.push(field);
    }
    out
}

fn bracketed(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    if chars.peek() == Some(&'"') {
        let mut quoted = String::from("\"");
        chars.next();
        let mut escaped = false;
        for c in chars.by_ref() {
            quoted.push(c);
            if c == '"' && !escaped {
                break;
            }
            escaped = c == '\\' && !escaped;
        }
        chars.next(); // the closing ]
        return serde_json::from_str(&quoted).unwrap_or(quoted);
    }
    let mut key = String::new();
    for c in chars.by_ref() {
        if c == ']' {
            break;
        }
        key.push(c);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_field_paths_with_quoted_keys() {
        assert_eq!(segments("a.b[0].c"), ["a", "b", "0", "c"]);
        assert_eq!(segments("s.m[k.io/x]"), ["s", "m", "k.io/x"]);
        assert_eq!(segments("s.m[\"a]b\"].z"), ["s", "m", "a]b", "z"]);
    }

    #[test]
    fn pointer_tokens_unescape_as_rfc_6901_says() {
        // RFC 6901 section 4: `~1` before `~0`, so `~01` is `~1`.
        assert_eq!(pointer_tokens("/a~1b/m~0n/~01"), ["a/b", "m~n", "~1"]);
        assert_eq!(pointer_tokens(""), Vec::<String>::new());
        assert_eq!(escape_token("kubernetes.io/os~x"), "kubernetes.io~1os~0x");
    }
}
