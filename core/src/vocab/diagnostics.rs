//! Violations and warnings: what is wrong, where, and how to fix it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Stable identifiers for each kind of finding, so tools can match on them.
/// Serialised as the kebab-case string of [`Code::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// The object is not a well-formed instance of its kind.
    MalformedObject,
    /// The kind or operation is not one this policy handles.
    UnsupportedKind,
    /// Two signals ask for different operating systems.
    OsConflict,
    /// Two signals ask for different Windows builds.
    BuildConflict,
    /// No node can satisfy the pod's own constraints.
    Unschedulable,
    /// A value the API or the scheduler would not accept.
    InvalidValue,
    /// The pod's RuntimeClass scheduling conflicts with the pod.
    RuntimeClassConflict,
    /// The pod does not select its OS.
    MissingOsSelector,
    /// The Windows pod does not tolerate the Windows taint.
    MissingWindowsToleration,
    /// The Linux pod does not tolerate the Linux taint.
    MissingLinuxToleration,
    /// The Windows pod is not pinned to its image's build.
    MissingBuildPin,
    /// The pod is not pinned to the architectures its images are built for.
    MissingArchPin,
    /// No architecture runs all the pod's images, or the pod selects one
    /// no image is built for.
    ArchConflict,
    /// The Linux pod can land on Windows nodes.
    LinuxPodUnconfined,
    /// `preferRuntimeClass` found no declared RuntimeClass to use.
    NoMatchingRuntimeClass,
    /// `spec.os.name` is missing while `setPodOS` asks for it.
    MissingPodOs,
    /// A field the API forbids for pods of this OS.
    ForbiddenField,
    /// HostProcess settings that the API rejects.
    HostProcess,
    /// A new ephemeral container does not fit the running pod.
    EphemeralContainerMismatch,
    /// A Windows image whose tag names no build.
    UnknownBuild,
    /// An image that only may be a Windows image: the OS is left open.
    AmbiguousImage,
    /// A deprecated label.
    DeprecatedLabel,
    /// A policy setting that is missing, of the wrong type or out of range.
    InvalidSetting,
    /// The pod's OS cannot be told and it chooses its nodes by other means,
    /// so the policy leaves its placement alone.
    OsUndetermined,
    /// The pod is bound to a node (`spec.nodeName`): no selector is added.
    BoundToNode,
    /// A `NoExecute` Windows taint evicts the pod after `tolerationSeconds`.
    TolerationExpires,
    /// A registry or cluster lookup failed; the rules fell back.
    LookupFailed,
    /// The registry's answer lacks what placement needs (a Windows entry
    /// without `os.version`, no entry of any OS).
    RegistryIncomplete,
    /// The pod names a RuntimeClass the cluster does not have.
    RuntimeClassMissing,
    /// No node of the cluster's inventory can run the pod.
    NoNode,
    /// A running pod is on a node that cannot run one of its containers
    /// (background audit).
    WrongNode,
    /// A controller's Pod waits for the facts syncer to publish an image
    /// its placement depends on: the controller creates it again.
    FactsPending,
}

impl Code {
    /// The stable identifier, e.g. `os-conflict`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::MalformedObject => "malformed-object",
            Code::UnsupportedKind => "unsupported-kind",
            Code::OsConflict => "os-conflict",
            Code::BuildConflict => "build-conflict",
            Code::Unschedulable => "unschedulable",
            Code::InvalidValue => "invalid-value",
            Code::RuntimeClassConflict => "runtime-class-conflict",
            Code::MissingOsSelector => "missing-os-selector",
            Code::MissingWindowsToleration => "missing-windows-toleration",
            Code::MissingLinuxToleration => "missing-linux-toleration",
            Code::MissingBuildPin => "missing-build-pin",
            Code::MissingArchPin => "missing-arch-pin",
            Code::ArchConflict => "arch-conflict",
            Code::LinuxPodUnconfined => "linux-pod-unconfined",
            Code::NoMatchingRuntimeClass => "no-matching-runtime-class",
            Code::MissingPodOs => "missing-pod-os",
            Code::ForbiddenField => "forbidden-field",
            Code::HostProcess => "host-process",
            Code::EphemeralContainerMismatch => "ephemeral-container-mismatch",
            Code::UnknownBuild => "unknown-build",
            Code::AmbiguousImage => "ambiguous-image",
            Code::DeprecatedLabel => "deprecated-label",
            Code::InvalidSetting => "invalid-setting",
            Code::OsUndetermined => "os-undetermined",
            Code::BoundToNode => "bound-to-node",
            Code::TolerationExpires => "toleration-expires",
            Code::LookupFailed => "lookup-failed",
            Code::RegistryIncomplete => "registry-incomplete",
            Code::RuntimeClassMissing => "runtime-class-missing",
            Code::NoNode => "no-node",
            Code::WrongNode => "wrong-node",
            Code::FactsPending => "facts-pending",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding: rendered as `<path>: <message>; <fix>` (no `; <fix>` when
/// the message already says what to do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What kind of finding this is.
    pub code: Code,
    /// Field path relative to the object, e.g. `spec.template.spec.nodeSelector`.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl Diagnostic {
    /// A finding at `path`.
    pub fn new(
        code: Code,
        path: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Diagnostic {
            code,
            path: path.into(),
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        if !self.fix.is_empty() {
            write!(f, "; {}", self.fix)?;
        }
        Ok(())
    }
}

/// Renders findings one per line, as the rejection message shows them.
pub fn render(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
