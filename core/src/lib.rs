//! Pure rule core of os-placement: a typed view of a pod spec and the
//! settings in, a decision out. No I/O, no host specifics.

pub mod affinity;
pub mod build;
pub mod constraint;
pub mod context;
pub mod diagnostics;
pub mod evaluate;
pub mod facts;
pub mod glob;
pub mod host_answers;
pub mod image;
pub mod inventory;
pub mod kinds;
pub mod labels;
pub mod landing;
pub mod names;
pub mod ordered;
pub mod ownership;
pub mod patch;
pub mod place;
pub mod report;
pub mod resolve;
pub mod selection;
pub mod settings;
pub mod spec;
pub mod toleration;
pub mod windows_rules;

pub use diagnostics::{Code, Diagnostic};
pub use evaluate::{
    evaluate, evaluate_request, evaluate_request_with_facts, evaluate_with_facts, Admission,
    Decision, Operation, Review, MAX_WARNING_CHARS,
};
pub use facts::{
    needs, needs_request, ClusterRuntimeClass, Facts, ImageFacts, Needs, NodeFact, NodeFacts,
    Platform, RuntimeClassFacts,
};
pub use kinds::{Kind, SUPPORTED_KINDS};
pub use landing::{landing, pools_from_value, Fit, NodePool, PoolLanding};
pub use report::SignalReport;
pub use settings::{Settings, SettingsError};
