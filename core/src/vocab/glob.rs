//! Glob patterns on image references (settings `windowsImages[].pattern`).
//!
//! `*` matches any run of characters, '/' included (image paths are not file paths),
//! `?` one character, `[abc]` / `[a-z]` / `[!a-z]` a class, `\` escapes the next character.

use std::fmt;

/// A compiled glob pattern.
/// The default is the empty pattern, which matches only the empty text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Glob {
    source: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyChar,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    /// Whether this single-character token accepts `c` (never called for `Star`).
    fn accepts(&self, c: char) -> bool {
        match self {
            Self::Literal(l) => *l == c,
            Self::AnyChar => true,
            Self::Star => false,
            Self::Class { negated, ranges } => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
            }
        }
    }
}

/// Why a pattern does not compile. Positions are 1-based character positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobError {
    /// The pattern is empty.
    Empty,
    /// A `[` has no closing `]`.
    UnclosedClass {
        /// Where the `[` is.
        position: usize,
    },
    /// A class contains no character (`[]`, `[!]`).
    EmptyClass {
        /// Where the class opens.
        position: usize,
    },
    /// The pattern ends with a lone `\`.
    TrailingEscape,
    /// A class range whose start is after its end, e.g. `[z-a]`.
    ReversedRange {
        /// Where the range is.
        position: usize,
        /// Its first character.
        start: char,
        /// Its last character.
        end: char,
    },
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "the pattern is empty"),
            Self::UnclosedClass { position } => write!(
                f,
                "'[' at character {position} is never closed by ']' (write \\[ for a literal '[')"
            ),
            Self::EmptyClass { position } => write!(
                f,
                "the character class at character {position} is empty (write \\] for a literal ']')"
            ),
            Self::TrailingEscape => write!(
                f,
                "the pattern ends with a lone '\\' (write \\\\ for a literal '\\')"
            ),
            Self::ReversedRange {
                position,
                start,
                end,
            } => write!(
                f,
                "the range {start}-{end} in the class at character {position} is reversed (write {end}-{start})"
            ),
        }
    }
}

impl std::error::Error for GlobError {}

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            match c {
                '*' => {
                    // Consecutive stars mean the same as one; collapsing keeps matching linear.
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::AnyChar);
                    i += 1;
                }
                '\\' => {
                    let escaped = chars.get(i + 1).ok_or(GlobError::TrailingEscape)?;
                    tokens.push(Token::Literal(*escaped));
                    i += 2;
                }
                '[' => {
                    let (token, next) = parse_class(&chars, i)?;
                    tokens.push(token);
                    i = next;
                }
                _ => {
                    tokens.push(Token::Literal(c));
                    i += 1;
                }
            }
        }
        Ok(Self {
            source: pattern.to_owned(),
            tokens,
        })
    }

    /// The source pattern.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `text` matches.
    ///
    /// Greedy match with backtracking to the last star only: O(len(text) * len(pattern)) at
    /// worst, never exponential.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let mut t = 0; // position in text
        let mut p = 0; // position in tokens
                       // Last star seen: (token index after it, text position it currently extends to).
        let mut backtrack: Option<(usize, usize)> = None;
        loop {
            match (self.tokens.get(p), text.get(t)) {
                (Some(Token::Star), _) => {
                    p += 1;
                    backtrack = Some((p, t));
                }
                (Some(token), Some(&c)) if token.accepts(c) => {
                    p += 1;
                    t += 1;
                }
                (None, None) => return true,
                _ => match backtrack {
                    // Let the last star swallow one more character and retry.
                    Some((star_p, star_t)) if star_t < text.len() => {
                        backtrack = Some((star_p, star_t + 1));
                        p = star_p;
                        t = star_t + 1;
                    }
                    _ => return false,
                },
            }
        }
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Parses the class starting at `chars[open] == '['`; returns it and the index after its `]`.
fn parse_class(chars: &[char], open: usize) -> Result<(Token, usize), GlobError> {
    let position = open + 1;
    let mut i = open + 1;
    let negated = chars.get(i) == Some(&'!');
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    loop {
        let start = match chars.get(i) {
            None => return Err(GlobError::UnclosedClass { position }),
            Some(']') => break,
            Some('\\') => {
                i += 1;
                *chars.get(i).ok_or(GlobError::UnclosedClass { position })?
            }
            Some(&c) => c,
        };
        i += 1;
        // A '-' before the closing ']' is a literal '-'.
        let is_range = chars.get(i) == Some(&'-') && !matches!(chars.get(i + 1), Some(']') | None);
        if !is_range {
            ranges.push((start, start));
            continue;
        }
        i += 1;
        let end = match chars.get(i) {
            Some('\\') => {
                i += 1;
                *chars.get(i).ok_or(GlobError::UnclosedClass { position })?
            }
            Some(&c) => c,
            None => return Err(GlobError::UnclosedClass { position }),
        };
        i += 1;
        if start > end {
            return Err(GlobError::ReversedRange {
                position,
                start,
                end,
            });
        }
        ranges.push((start, end));
    }
    if ranges.is_empty() {
        return Err(GlobError::EmptyClass { position });
    }
    Ok((Token::Class { negated, ranges }, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(p: &str) -> Glob {
        Glob::new(p).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    }

    #[test]
    fn matching_table() {
        let cases: &[(&str, &str, bool)] = &[
            (
                "registry.example.com/win/*",
                "registry.example.com/win/app:1.0",
                true,
            ),
            (
                "registry.example.com/win/*",
                "registry.example.com/win/a/b/c@sha256:00",
                true,
            ),
            (
                "registry.example.com/win/*",
                "registry.example.com/win/",
                true,
            ),
            (
                "registry.example.com/win/*",
                "registry.example.com/linux/app",
                false,
            ),
            (
                "registry.example.com/win/*",
                "xregistry.example.com/win/app",
                false,
            ),
            (
                "*/windows/*",
                "mcr.microsoft.com/windows/servercore:ltsc2019",
                true,
            ),
            ("*", "", true),
            ("*", "anything/at:all", true),
            ("**", "a/b", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("a*c", "abcbc", true),
            ("a*c", "abcb", false),
            ("*:ltsc20??", "x/y:ltsc2022", true),
            ("*:ltsc20??", "x/y:ltsc202", false),
            ("?", "ǅ", true),
            ("?", "", false),
            ("??", "a", false),
            ("app:v[0-9]*", "app:v1.2", true),
            ("app:v[0-9]*", "app:vx", false),
            ("app:[!0-9]*", "app:latest", true),
            ("app:[!0-9]*", "app:1.0", false),
            ("[abc]", "b", true),
            ("[abc]", "d", false),
            ("[a-]", "-", true),
            ("[-a]", "-", true),
            ("x\\*", "x*", true),
            ("x\\*", "xy", false),
            ("x\\?", "x?", true),
            ("x\\[", "x[", true),
            ("[\\]]", "]", true),
            ("[\\!a]", "!", true),
            ("a\\\\b", "a\\b", true),
            ("exact:tag", "exact:tag", true),
            ("exact:tag", "exact:tag2", false),
            ("exact:tag", "Exact:tag", false),
            ("日本*", "日本語", true),
        ];
        // Every pattern here compiles (compile_errors covers the others), so a
        // negative case cannot pass by failing to compile.
        for (p, text, want) in cases {
            assert_eq!(glob(p).matches(text), *want, "{p:?} on {text:?}");
        }
    }

    #[test]
    fn compile_errors() {
        let cases: &[(&str, GlobError, &str)] = &[
            ("", GlobError::Empty, "empty"),
            (
                "a[bc",
                GlobError::UnclosedClass { position: 2 },
                "never closed",
            ),
            (
                "a[",
                GlobError::UnclosedClass { position: 2 },
                "never closed",
            ),
            (
                "[a\\",
                GlobError::UnclosedClass { position: 1 },
                "never closed",
            ),
            (
                "[a-",
                GlobError::UnclosedClass { position: 1 },
                "never closed",
            ),
            ("[]", GlobError::EmptyClass { position: 1 }, "empty"),
            ("x[!]", GlobError::EmptyClass { position: 2 }, "empty"),
            ("[]a]", GlobError::EmptyClass { position: 1 }, "empty"),
            ("abc\\", GlobError::TrailingEscape, "lone"),
            (
                "[z-a]",
                GlobError::ReversedRange {
                    position: 1,
                    start: 'z',
                    end: 'a',
                },
                "reversed",
            ),
        ];
        for (p, want, text) in cases {
            let err = Glob::new(p).unwrap_err();
            assert_eq!(&err, want, "{p:?}");
            assert!(err.to_string().contains(text), "{p:?}: {err}");
        }
    }

    #[test]
    fn as_str_and_display_return_source() {
        let g = glob("registry.example.com/win/**");
        assert_eq!(g.as_str(), "registry.example.com/win/**");
        assert_eq!(g.to_string(), "registry.example.com/win/**");
        assert_eq!(g, glob("registry.example.com/win/**"));
    }

    #[test]
    fn no_exponential_backtracking() {
        let g = glob(&format!("{}b", "a*".repeat(50)));
        let text = "a".repeat(5_000);
        assert!(!g.matches(&text));
        assert!(g.matches(&format!("{text}b")));
    }
}
