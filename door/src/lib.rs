//! The one door of os-placement: every adapter (the CLI, the playground,
//! the e2e host that runs the policy module) reads its input here, so the
//! same text gives the same answer through each. Pure: text in, values
//! out, no file or network I/O.
//!
//! 1. Text ([`stream`], [`node`]): YAML or JSON, multi-document streams,
//!    read as kubectl reads it (sigs.k8s.io/yaml over go-yaml v2: anchors
//!    and aliases resolved, `<<` merge keys applied, YAML 1.1 scalars such
//!    as `yes` and `0644`), every node and key with its span. Aliases that
//!    would expand without bound are an input error.
//! 2. Objects ([`mod@objects`]): every `*List` expanded into its items, an
//!    AdmissionReview taken as its request, null documents dropped.
//! 3. Requests ([`request`], [`rules`]): the AdmissionRequest the API
//!    server sends, and whether the policy's rules select it at all.
//! 4. Answers ([`mod@evaluate`], [`answer`]): one serialisable [`Answer`] per
//!    object, with facts from a facts file ([`facts`]) when the door has no
//!    host.
//!
//! Around them: settings text ([`settings`]), writing YAML and JSON back
//! ([`emit`]), and editing YAML text in place ([`edit`]).
#![deny(missing_docs)]

pub mod answer;
mod compose;
pub mod edit;
pub mod emit;
pub mod error;
pub mod evaluate;
pub mod facts;
pub mod node;
pub mod objects;
pub mod path;
pub mod request;
pub mod review;
pub mod rules;
mod scalar;
pub mod settings;
pub mod stream;

pub use answer::{Answer, Finding, Located, Verdict};
pub use compose::{MAX_COPIED_NODES, MAX_DEPTH};
pub use error::TextError;
pub use evaluate::{
    evaluate, evaluate_text, evaluate_with_lookups, request_for, Call, Evaluated, Options, Outcome,
    Problem, ProblemKind,
};
pub use facts::{read_facts, HostFacts, RenderSources};
pub use node::{Data, Entry, Node, Position, Span};
pub use objects::{objects, Found, Location, NotAnObject, Subject};
pub use request::{admission_request, audit_request, Submission};
pub use settings::{read_settings, SettingsTextError};
pub use stream::{read_one, read_stream, BrokenDocument, Document};
