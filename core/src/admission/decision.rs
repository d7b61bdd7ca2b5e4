//! The decision: verdict, findings, patch and signals, and how an
//! accepted plan becomes a patched object.

use serde::Serialize;
use serde_json::Value;

use crate::input::pod::PodView;
use crate::signals::report::SignalReport;
use crate::signals::resolve::Resolution;
use crate::vocab::diagnostics::{render, Code, Diagnostic};
use crate::vocab::patch::{apply, AddOp};

/// What the policy says about one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Whether the object is admitted (possibly with the patch).
    pub accepted: bool,
    /// Why it is rejected; empty when accepted.
    pub violations: Vec<Diagnostic>,
    /// Findings that do not block admission.
    pub warnings: Vec<Diagnostic>,
    /// The RFC 6902 `add` operations applied to the object; empty when unchanged.
    pub patch: Vec<AddOp>,
    /// The object with the patch applied; `None` when unchanged.
    pub mutated_object: Option<Value>,
    /// The fields that said which OS and build the pod needs, as read.
    pub signals: Vec<SignalReport>,
}

impl Decision {
    pub(crate) fn accept(warnings: Vec<Diagnostic>) -> Decision {
        Decision {
            accepted: true,
            violations: Vec::new(),
            warnings,
            patch: Vec::new(),
            mutated_object: None,
            signals: Vec::new(),
        }
    }

    /// A rejection with these violations and warnings.
    pub fn reject(violations: Vec<Diagnostic>, warnings: Vec<Diagnostic>) -> Decision {
        Decision {
            accepted: false,
            violations,
            warnings,
            patch: Vec::new(),
            mutated_object: None,
            signals: Vec::new(),
        }
    }

    pub(crate) fn with_signals(
        mut self,
        report: bool,
        resolution: &Resolution,
        pod: &PodView<'_>,
    ) -> Decision {
        if !report {
            return self;
        }
        self.signals = resolution
            .signals
            .iter()
            .map(|s| SignalReport::new(s, pod))
            .collect();
        self
    }

    /// The rejection message: one line per violation.
    pub fn message(&self) -> Option<String> {
        (!self.violations.is_empty()).then(|| render(&self.violations))
    }

    /// Warnings as the API server shows them, each within its
    /// [`MAX_WARNING_CHARS`] limit (it truncates longer ones).
    pub fn warning_lines(&self) -> Vec<String> {
        self.warnings.iter().map(warning_line).collect()
    }
}

/// The API server truncates admission warnings longer than this.
pub const MAX_WARNING_CHARS: usize = 256;

fn warning_line(warning: &Diagnostic) -> String {
    let line = warning.to_string();
    match line.char_indices().nth(MAX_WARNING_CHARS - 1) {
        Some((end, _)) => format!("{}…", line.get(..end).unwrap_or_default()),
        None => line,
    }
}

/// Accepted with these operations (unchanged without any), the object not
/// yet patched: a workload's are rebased on its owned entries (`adopt`),
/// and the caller applies them once ([`Decision::apply_to`]).
pub(crate) fn planned(ops: Vec<AddOp>, warnings: Vec<Diagnostic>) -> Decision {
    Decision {
        patch: ops,
        ..Decision::accept(warnings)
    }
}

impl Decision {
    /// Whether the decision admits the object with a patch not yet applied
    /// ([`Decision::apply_to`] would set [`Decision::mutated_object`]).
    pub fn patch_pending(&self) -> bool {
        self.accepted && !self.patch.is_empty() && self.mutated_object.is_none()
    }

    /// The decision with its patch applied to `object` (the reviewed
    /// object, owned so it is patched in place rather than copied):
    /// [`Decision::mutated_object`] is set when there is a patch. An
    /// operation the object cannot take rejects it.
    pub fn apply_to(mut self, mut object: Value) -> Decision {
        if !self.patch_pending() {
            return self;
        }
        if let Err(e) = apply(&mut object, &self.patch) {
            return Decision::reject(
                vec![Diagnostic::new(
                    Code::MalformedObject,
                    e.path,
                    "cannot be added to the object",
                    "report this object to the policy maintainers",
                )],
                std::mem::take(&mut self.warnings),
            );
        }
        self.mutated_object = Some(object);
        self
    }
}
