//! Pure rule core of os-placement: a typed view of a pod spec and the
//! settings in, a decision out. No I/O, no host specifics.

pub mod admission;
pub mod input;
pub mod placement;
pub mod scheduling;
pub mod signals;
pub mod vocab;

pub use admission::{context, evaluate};
pub use input::{facts, pod as spec, settings};
pub use placement::{inventory, landing, ownership, plan as place, selection, windows_rules};
pub use scheduling::taints as toleration;
pub use signals::{affinity, image, report, resolve};
pub use vocab::{build, constraint, diagnostics, glob, kinds, labels, names, ordered, patch};

pub use admission::needs::{needs, needs_request};
pub use diagnostics::{Code, Diagnostic};
pub use evaluate::{
    evaluate, evaluate_request, evaluate_request_with_facts, evaluate_with_facts, Admission,
    Decision, MAX_WARNING_CHARS,
};
pub use facts::{Facts, Needs};
pub use input::review::{Operation, Review};
pub use landing::{landing, pools_from_value, Fit, NodePool, PoolLanding};
pub use report::SignalReport;
pub use settings::{Settings, SettingsError};
