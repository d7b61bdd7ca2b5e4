//! The resolved signals as a serialisable report: which field said which
//! OS and build, for tools that explain a decision.

use serde::Serialize;

use crate::input::pod::PodView;
use crate::signals::resolve::{Signal, Source};
use crate::vocab::constraint::Builds;

/// One field that restricts where the pod can run, as the core read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalReport {
    /// The kind of field: `podOs`, `nodeSelector`, `deprecatedOsSelector`,
    /// `affinity`, `runtimeClass`, `windowsOptions` or `image`.
    pub source: &'static str,
    /// Field path relative to the object.
    pub path: String,
    /// The value as written.
    pub value: String,
    /// Why the value means what it does, when not obvious.
    pub reason: Option<String>,
    /// `linux` or `windows` when the field allows only one OS.
    pub os: Option<&'static str>,
    /// The Windows builds allowed, when the field restricts them.
    pub builds: Vec<String>,
    /// The Windows builds excluded, when the field excludes some.
    pub excluded_builds: Vec<String>,
    /// Where the field lets the pod land, in words.
    pub placement: String,
    /// The name of the container the signal comes from.
    pub container: Option<String>,
}

impl SignalReport {
    pub(crate) fn new(signal: &Signal, pod: &PodView<'_>) -> SignalReport {
        let list = |set: &crate::vocab::constraint::BuildSet| {
            set.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        let (builds, excluded_builds) = match &signal.placement.windows {
            Some(Builds::Only(set)) => (list(set), Vec::new()),
            Some(Builds::Except(set)) => (Vec::new(), list(set)),
            _ => (Vec::new(), Vec::new()),
        };
        SignalReport {
            source: source_name(signal.source),
            path: signal.path.clone(),
            value: signal.value.clone(),
            reason: signal.reason.clone(),
            os: signal.placement.os().map(|os| os.label()),
            builds,
            excluded_builds,
            placement: signal.placement.to_string(),
            container: signal
                .container
                .and_then(|i| pod.containers.get(i))
                .and_then(|c| c.name)
                .map(str::to_string),
        }
    }
}

fn source_name(source: Source) -> &'static str {
    match source {
        Source::PodOs => "podOs",
        Source::NodeSelector => "nodeSelector",
        Source::DeprecatedOsSelector => "deprecatedOsSelector",
        Source::Affinity => "affinity",
        Source::RuntimeClass => "runtimeClass",
        Source::WindowsOptions => "windowsOptions",
        Source::Image => "image",
    }
}
