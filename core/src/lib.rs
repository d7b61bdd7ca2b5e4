//! Pure rule core of os-placement: an admission request, the settings and
//! the facts an adapter gathered in; a decision out. No I/O, no host
//! specifics: the policy module, the playground and the CLI are doors over
//! this crate.
//!
//! The crate is built in layers, each importing only from those below it
//! (see ARCHITECTURE.md at the repository root):
//! `vocab` → `input` → `scheduling` → `signals` → `placement` → `admission`.

#![deny(missing_docs)]

mod admission;
mod input;
mod placement;
mod scheduling;
mod signals;
mod vocab;

// The decision.
pub use admission::decision::{Decision, MAX_WARNING_CHARS};
pub use admission::evaluate::{
    evaluate, evaluate_request, evaluate_request_with_facts, evaluate_with_facts, Admission,
};
pub use admission::needs::{needs, needs_request};
pub use admission::reads::{Read, ReadNode};

// What comes in.
pub use input::facts::{
    ClusterRuntimeClass, Facts, ImageFacts, ImageSource, Needs, NodeFacts, Platform,
    RuntimeClassFacts, SchedulingFacts, SyncerState, Unreadable,
};
pub use input::node::{pools_from_value, Node};
pub use input::pod::{ContainerList, ContainerView, PodView};
pub use input::review::{locate_pod_spec, Operation, Origin, Review};
pub use input::settings::schema::{FieldSchema, Shape};
pub use input::settings::{
    DefaultOs, ImageFactsSource, ImageLookup, ImageRule, LookupFailure, NodeInventory,
    NodeTemplate, RuntimeClass, Scheduling, Settings, SettingsError, TaintFields, TaintSetting,
    DEFAULT_FACTS_NAMESPACE, SETTING_KEYS,
};

/// Image facts published in the cluster: the ConfigMaps the facts syncer
/// writes and every door reads.
pub mod published {
    pub use crate::input::published::*;
}

/// Capacity that appears on demand: Karpenter NodePools (with their node
/// classes) and node templates as the nodes they can launch.
pub mod capacity {
    pub use crate::input::capacity::*;
}

/// Host answers read as facts: the JSON a Kubewarden host returns (or
/// `kubectl get -o json` prints) for an image index, an image config, a
/// RuntimeClass or a Node.
pub mod host_answers {
    pub use crate::input::host_answers::*;
}

// What the rules read from a pod, for tools that explain a decision.
pub use placement::landing::{landing, Fit, PoolLanding};
pub use placement::ownership::ADDED_ANNOTATION;
pub use signals::image::{classify, ImageOs, ImageRef};
pub use signals::report::SignalReport;
pub use signals::resolve::{resolve, resolve_with, Resolution, Signal, Source};

// Words of the domain.
pub use scheduling::taints::describe as describe_toleration;
pub use vocab::build::WindowsBuild;
pub use vocab::constraint::{BuildSet, Builds, Os, Placement};
pub use vocab::diagnostics::{Code, Diagnostic};
pub use vocab::field_path::FieldPath;
pub use vocab::glob::{Glob, GlobError};
pub use vocab::isolation::Isolation;
pub use vocab::kinds::{Kind, SUPPORTED_KINDS};
pub use vocab::ordered::{SortedMap, SortedSet, StringMap};
pub use vocab::patch::{apply as apply_patch, escape_token, PatchError, PatchOp};
pub use vocab::taint::Taint;
