//! One serialisable answer per object, the same through every door: which
//! object, where it is, the verdict and everything behind it.

use os_placement_core::{Decision, Diagnostic, SignalReport};
use serde::Serialize;
use serde_json::Value;

use crate::node::Position;
use crate::objects::{Location, Subject};

/// What the policy says about an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Admitted, possibly with a patch.
    Accepted,
    /// Refused.
    Rejected,
    /// Not a request the policy's rules select: the API server would not
    /// ask the policy, and admits it as far as this policy is concerned.
    Skipped,
}

/// A field the core found something about, with where it is written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Located<T> {
    /// What was found (its `path` is from the object's root).
    #[serde(flatten)]
    pub item: T,
    /// Where the path, or the deepest part of it that is written, starts.
    #[serde(flatten)]
    pub at: Position,
}

/// A violation or a warning: `code`, `path`, `message`, `fix`, `line`, `column`.
pub type Finding = Located<Diagnostic>;

/// The answer about one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The object's `apiVersion`.
    pub api_version: String,
    /// The object's `kind`.
    pub kind: String,
    /// `metadata.name`, or `metadata.generateName` followed by `*`.
    pub name: Option<String>,
    /// `metadata.namespace`, when set.
    pub namespace: Option<String>,
    /// Where the object is in the input.
    #[serde(flatten)]
    pub at: Location,
    /// The admission operation of the request.
    pub operation: String,
    /// Accepted, rejected or skipped.
    pub verdict: Verdict,
    /// The rejection as the API server shows it: one line per violation.
    pub message: Option<String>,
    /// Why it is rejected.
    pub violations: Vec<Finding>,
    /// What does not block it.
    pub warnings: Vec<Finding>,
    /// The warnings as the API server shows them (cut at 256 characters).
    pub warning_lines: Vec<String>,
    /// RFC 6902 operations relative to the object; empty when unchanged.
    pub patch: Vec<Value>,
    /// The object with the patch applied; `None` when unchanged.
    pub mutated_object: Option<Value>,
    /// Why the policy is not asked, for a skipped object.
    pub skip_reason: Option<String>,
    /// The fields that said which OS and build the pod needs.
    pub signals: Vec<Located<SignalReport>>,
}

impl Answer {
    /// Whether the object is admitted (a skipped one is: the policy is not asked).
    pub fn accepted(&self) -> bool {
        self.verdict != Verdict::Rejected
    }

    /// Whether it is accepted with changes.
    pub fn patched(&self) -> bool {
        self.verdict == Verdict::Accepted && !self.patch.is_empty()
    }

    /// The answer of the core about `subject`, sent as `request`.
    pub(crate) fn decided(subject: &Subject, request: &Value, decision: Decision) -> Answer {
        let node = &subject.node;
        let locate = |d: &Diagnostic| Located {
            at: node.locate(&d.path),
            item: d.clone(),
        };
        let patch = match serde_json::to_value(&decision.patch) {
            Ok(Value::Array(ops)) => ops,
            _ => Vec::new(),
        };
        Answer {
            verdict: if decision.accepted {
                Verdict::Accepted
            } else {
                Verdict::Rejected
            },
            message: decision.message(),
            violations: decision.violations.iter().map(locate).collect(),
            warnings: decision.warnings.iter().map(locate).collect(),
            warning_lines: decision.warning_lines(),
            patch,
            signals: decision
                .signals
                .into_iter()
                .map(|s| Located {
                    at: node.locate(&s.path),
                    item: s,
                })
                .collect(),
            mutated_object: decision.mutated_object,
            ..Answer::about(subject, request)
        }
    }

    /// A skipped object: the rules do not select its request.
    pub(crate) fn skipped(subject: &Subject, request: &Value, reason: String) -> Answer {
        Answer {
            skip_reason: Some(reason),
            ..Answer::about(subject, request)
        }
    }

    /// Who and where, with nothing decided yet.
    fn about(subject: &Subject, request: &Value) -> Answer {
        let object = &subject.object;
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let name = text("/metadata/name")
            .or_else(|| text("/metadata/generateName").map(|prefix| format!("{prefix}*")));
        Answer {
            api_version: text("/apiVersion").unwrap_or_default(),
            kind: text("/kind").unwrap_or_default(),
            name,
            namespace: text("/metadata/namespace"),
            at: subject.at,
            operation: request
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            verdict: Verdict::Skipped,
            message: None,
            violations: Vec::new(),
            warnings: Vec::new(),
            warning_lines: Vec::new(),
            patch: Vec::new(),
            mutated_object: None,
            skip_reason: None,
            signals: Vec::new(),
        }
    }
}
