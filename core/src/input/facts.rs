//! Facts the policy adapter gathered outside the request: image platforms
//! from the registry, RuntimeClasses and Nodes from the cluster. Pure data:
//! the core never fetches anything. With no facts every rule behaves as if
//! only the request and the settings existed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use serde::{Deserialize, Serialize};

use crate::input::settings::Settings;
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::BuildSet;
use crate::vocab::isolation::Isolation;
use crate::vocab::labels::{OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::vocab::taint::Taint;

/// Everything known beyond the request and the settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// Platforms per image reference, exactly as written in the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, ImageFacts>,
    /// RuntimeClasses by name, as read from the cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runtime_classes: BTreeMap<String, RuntimeClassFacts>,
    /// The cluster's nodes; `None` when not looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<NodeFacts>,
}

/// What the registry said about one image reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ImageFacts {
    /// The entries of its index, or the single manifest's config.
    Platforms(Vec<Platform>),
    /// The lookup failed: the error text, for the warning.
    LookupFailed(String),
}

/// One platform an image runs on (OCI image-index `platform`, or config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Platform {
    /// `linux`, `windows`, or what else the registry says (`unknown` for attestations).
    pub os: String,
    /// `os.version`, e.g. `10.0.20348.2700`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    /// `amd64`, `arm64`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
}

/// What the cluster said about one RuntimeClass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RuntimeClassFacts {
    /// It exists.
    Found(ClusterRuntimeClass),
    /// The cluster has no RuntimeClass of that name.
    Missing,
    /// The lookup failed: the error text.
    LookupFailed(String),
}

/// The parts of a `node.k8s.io/v1` RuntimeClass the rules read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRuntimeClass {
    /// The CRI handler, e.g. `runhcs-wcow-process`.
    #[serde(default)]
    pub handler: String,
    /// `scheduling`, as in the API.
    #[serde(default)]
    pub scheduling: SchedulingFacts,
    /// Declared isolation; otherwise inferred from the handler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
}

/// `RuntimeClass.scheduling`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingFacts {
    /// `scheduling.nodeSelector`.
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// `scheduling.tolerations`.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

/// The cluster's node inventory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeFacts {
    /// Every node, as listed.
    Listed(Vec<NodeFact>),
    /// The list failed: the error text.
    LookupFailed(String),
}

/// One node, reduced to what placement depends on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFact {
    /// `metadata.name`.
    pub name: String,
    /// `linux` or `windows` (label `kubernetes.io/os`, else `nodeInfo.operatingSystem`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// `10.0.N` (label `node.kubernetes.io/windows-build`, else `nodeInfo.kernelVersion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_build: Option<String>,
    /// `kubernetes.io/arch` or `nodeInfo.architecture`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// `metadata.labels`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `spec.taints`.
    #[serde(default)]
    pub taints: Vec<NodeTaint>,
}

/// A node taint (`spec.taints[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeTaint {
    /// Taint key.
    pub key: String,
    /// Taint value; empty when unset.
    #[serde(default)]
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

impl NodeTaint {
    /// As the settings' taint type, for the toleration rules.
    pub fn as_taint(&self) -> Taint {
        Taint {
            key: self.key.clone(),
            value: self.value.clone(),
            effect: self.effect.clone(),
        }
    }
}

impl NodeFact {
    /// Whether this is a Windows node.
    pub fn is_windows(&self) -> bool {
        self.os
            .as_deref()
            .or(self.labels.get(OS_LABEL).map(String::as_str))
            == Some("windows")
    }

    /// Whether this is a Linux node (no OS known counts as Linux, the default).
    pub fn is_linux(&self) -> bool {
        !self.is_windows()
    }

    /// The node's Windows build, from the label or `windowsBuild`.
    pub fn build(&self) -> Option<WindowsBuild> {
        self.labels
            .get(WINDOWS_BUILD_LABEL)
            .or(self.windows_build.as_ref())
            .and_then(|b| WindowsBuild::parse_version(b))
    }
}

impl Facts {
    /// Whether nothing was gathered: the rules see only the request and the settings.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.runtime_classes.is_empty() && self.nodes.is_none()
    }

    /// The listed nodes, when the inventory was read.
    pub fn listed_nodes(&self) -> Option<&[NodeFact]> {
        match &self.nodes {
            Some(NodeFacts::Listed(nodes)) => Some(nodes),
            _ => None,
        }
    }

    /// Builds of the Windows nodes: from the inventory, else `windowsBuilds`
    /// in the settings; `None` when neither says.
    pub fn cluster_builds(&self, settings: &Settings) -> Option<BuildSet> {
        if let Some(nodes) = self.listed_nodes().filter(|n| !n.is_empty()) {
            return Some(
                nodes
                    .iter()
                    .filter(|n| n.is_windows())
                    .filter_map(NodeFact::build)
                    .collect(),
            );
        }
        (!settings.windows_builds.is_empty())
            .then(|| settings.windows_builds.iter().copied().collect())
    }
}

/// What the adapter should look up for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Needs {
    /// Distinct image references to read platforms for, in pod order.
    pub images: Vec<String>,
    /// RuntimeClass names the settings do not declare.
    pub runtime_classes: Vec<String>,
    /// Whether to list the cluster's Nodes.
    pub nodes: bool,
}

impl Needs {
    /// Whether nothing is to be looked up.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.runtime_classes.is_empty() && !self.nodes
    }
}
