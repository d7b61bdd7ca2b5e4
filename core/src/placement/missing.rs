//! What a pod lacks to land where it runs, and the outcome of planning it.

use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::Os;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::patch::AddOp;
use crate::vocab::taint::Taint;

/// The outcome for one pod spec.
#[derive(Debug, Default)]
pub struct Plan {
    pub violations: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    pub ops: Vec<AddOp>,
}

/// One placement field the pod lacks.
#[derive(Debug, Clone, PartialEq)]
pub enum Missing {
    /// A nodeSelector entry.
    Selector {
        /// The label key.
        key: &'static str,
        /// The value the pod needs.
        value: String,
        /// The finding when it is not added.
        code: Code,
        /// Why the pod needs it.
        why: String,
    },
    /// A toleration of the taint.
    Toleration {
        /// The taint to tolerate.
        taint: Taint,
        /// Why the pod needs it.
        why: String,
    },
    /// `spec.os.name`, with `setPodOS`.
    PodOs(Os),
    /// A required node-affinity `In` on the build label, in every term.
    BuildAffinity {
        /// The builds the pod's images run on.
        builds: Vec<WindowsBuild>,
        /// Why the pod needs it.
        why: String,
    },
}
