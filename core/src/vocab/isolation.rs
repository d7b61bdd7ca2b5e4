//! How Windows containers are isolated from their host, and which
//! RuntimeClass handlers give which isolation.

use serde::{Deserialize, Serialize};

/// How a RuntimeClass isolates Windows containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Process isolation: the image build must match the host's.
    Process,
    /// Hyper-V isolation: hosts of the image's build or newer run it
    /// (Kubernetes documents it as experimental).
    Hyperv,
}

/// Whether a RuntimeClass handler runs Hyper-V isolated Windows containers
/// (containerd's runhcs handlers: `runhcs-wcow-hypervisor`, or any handler
/// naming `hyperv`/`hypervisor`).
pub fn handler_is_hyperv(handler: &str) -> bool {
    let h = handler.to_ascii_lowercase();
    h.contains("hypervisor") || h.contains("hyperv") || h.contains("hyper-v")
}
