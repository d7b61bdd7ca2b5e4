//! Field paths of an object, kept in both forms: for messages
//! (`spec.nodeSelector[kubernetes.io/os]`) and as JSON Pointers
//! (`/spec/nodeSelector/kubernetes.io~1os`).

use crate::vocab::patch::push_escaped;

/// A field path in both forms: for messages and as a JSON Pointer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath {
    display: String,
    pointer: String,
}

impl FieldPath {
    /// The object itself.
    pub fn root() -> FieldPath {
        FieldPath::default()
    }

    /// A field of this path.
    pub fn field(&self, name: &str) -> FieldPath {
        FieldPath {
            display: self.field_text(name),
            pointer: self.child_pointer(name),
        }
    }

    /// An element of the list at this path.
    pub fn index(&self, i: usize) -> FieldPath {
        let digits = i.to_string();
        let mut display = String::with_capacity(self.display.len() + 2 + digits.len());
        display.push_str(&self.display);
        display.push('[');
        display.push_str(&digits);
        display.push(']');
        FieldPath {
            display,
            pointer: self.child_pointer(&digits),
        }
    }

    /// A map entry: `nodeSelector[kubernetes.io/os]`.
    pub fn key(&self, key: &str) -> FieldPath {
        let mut display = String::with_capacity(self.display.len() + 2 + key.len());
        display.push_str(&self.display);
        push_key(&mut display, key);
        FieldPath {
            display,
            pointer: self.child_pointer(key),
        }
    }

    /// Only the message form of `self.field(name)`, for what is never
    /// patched (signals, diagnostics). `name` may hold dots: `os.name`.
    pub fn field_text(&self, name: &str) -> String {
        let mut display = String::with_capacity(self.display.len() + 1 + name.len());
        display.push_str(&self.display);
        if !display.is_empty() {
            display.push('.');
        }
        display.push_str(name);
        display
    }

    fn child_pointer(&self, token: &str) -> String {
        let mut pointer = String::with_capacity(self.pointer.len() + 1 + token.len());
        pointer.push_str(&self.pointer);
        pointer.push('/');
        push_escaped(&mut pointer, token);
        pointer
    }

    /// The message form, e.g. `spec.containers[0].image`.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The JSON Pointer form, e.g. `/spec/containers/0/image`.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

/// Appends a map entry's `[key]` to a message path, quoted when the key
/// holds a control character or `]`, so one violation stays on one line.
pub fn push_key(display: &mut String, key: &str) {
    display.push('[');
    if key.chars().any(|c| c.is_control() || c == ']') {
        display.push_str(&format!("{key:?}"));
    } else {
        display.push_str(key);
    }
    display.push(']');
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}
