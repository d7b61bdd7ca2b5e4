//! Facts the policy adapter gathered outside the request: image platforms
//! from the registry, RuntimeClasses and Nodes from the cluster. Pure data:
//! the core never fetches anything. With no facts every rule behaves as if
//! only the request and the settings existed.

use std::borrow::Cow;

use crate::vocab::ordered::{SortedMap, StringMap};

use k8s_openapi::api::core::v1::Toleration;
use serde::{Deserialize, Serialize};

use crate::input::capacity;
pub use crate::input::node::Node;
use crate::input::settings::Settings;
use crate::vocab::constraint::BuildSet;
use crate::vocab::isolation::Isolation;

/// Everything known beyond the request and the settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// Platforms per image reference, exactly as written in the pod: a
    /// sorted vector, since a request looks up a handful of images.
    #[serde(default, skip_serializing_if = "SortedMap::is_empty")]
    pub images: SortedMap<String, ImageFacts>,
    /// RuntimeClasses by name, as read from the cluster: the few a pod
    /// names, so a sorted vector rather than a B-tree of its own.
    #[serde(default, skip_serializing_if = "SortedMap::is_empty")]
    pub runtime_classes: SortedMap<String, RuntimeClassFacts>,
    /// The cluster's nodes; `None` when not looked up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<NodeFacts>,
    /// Whether the facts syncer runs, read with the published facts;
    /// `None` when they were not read. Not part of a facts document: each
    /// door reads it from the published facts.
    #[serde(skip)]
    pub syncer: Option<SyncerState>,
    /// Why the published facts could not be read from the host; `None`
    /// when they were read, or not asked for. The images they would have
    /// told are then absent from `images`. Not part of a facts document.
    #[serde(skip)]
    pub unreadable: Option<Unreadable>,
}

/// Why the host gave no published facts: said once for the request, with
/// the fix, and never blamed on the facts syncer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The host refused to list ConfigMaps: the policy's
    /// `contextAwareResources` lacks `v1/ConfigMap`.
    ConfigMapsNotGranted,
    /// The host refused the call: the policy is not granted the host
    /// capability `kubernetes/list_resources_by_namespace`.
    CapabilityNotGranted,
    /// The host took the call and failed it (its reflector, the API server,
    /// its RBAC), or answered what is not a ConfigMap list: why.
    Failed(String),
}

/// What the published facts say of the facts syncer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncerState {
    /// It reported `age` seconds ago, within its interval: an image it has
    /// not published yet will be within seconds.
    Alive {
        /// Seconds since its last report.
        age: u64,
    },
    /// Its last report is `age` seconds old: it has stopped, or cannot publish.
    Stale {
        /// Seconds since its last report.
        age: u64,
    },
    /// Facts are published, but by no syncer (`facts render`).
    Rendered,
    /// No facts are published in the namespace.
    Unpublished,
}

/// What the registry said about one image reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ImageFacts {
    /// The entries of its index, or the single manifest's config.
    Platforms(Vec<Platform>),
    /// The lookup failed: the error text, for the warning.
    LookupFailed(String),
    /// The image facts published in the cluster do not hold it yet: the
    /// facts syncer resolves it for a later request.
    Unpublished,
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
    pub node_selector: StringMap,
    /// `scheduling.tolerations`.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
}

/// The cluster's node inventory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeFacts {
    /// Every node, as listed.
    Listed(Vec<Node>),
    /// The list failed: the error text.
    LookupFailed(String),
}

impl Facts {
    /// Whether nothing was gathered: the rules see only the request and the settings.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
            && self.runtime_classes.is_empty()
            && self.nodes.is_none()
            && self.syncer.is_none()
            && self.unreadable.is_none()
    }

    /// The listed nodes, when the inventory was read.
    pub fn listed_nodes(&self) -> Option<&[Node]> {
        match &self.nodes {
            Some(NodeFacts::Listed(nodes)) => Some(nodes),
            _ => None,
        }
    }

    /// The node inventory: the listed nodes (and the NodePools' launchable
    /// nodes published with them), with the settings' node templates; `None`
    /// when the nodes were not read, whatever the templates say.
    pub fn inventory<'f>(&'f self, settings: &Settings) -> Option<Cow<'f, [Node]>> {
        let nodes = self.listed_nodes()?;
        if settings.node_templates.is_empty() {
            return Some(Cow::Borrowed(nodes));
        }
        let mut all = nodes.to_vec();
        all.extend(capacity::from_templates(&settings.node_templates));
        Some(Cow::Owned(all))
    }

    /// Builds of the Windows nodes: from the inventory, else `windowsBuilds`
    /// in the settings; `None` when neither says.
    /// The inventory counts when the settings ask for it (`nodeInventory`
    /// warn or reject, or a taint read from the nodes), not under `auto`.
    pub fn cluster_builds(&self, settings: &Settings) -> Option<BuildSet> {
        let counts = settings.node_inventory.explicit() || settings.taints_from_nodes();
        let nodes = self.inventory(settings).filter(|n| counts && !n.is_empty());
        if let Some(nodes) = nodes {
            return Some(
                nodes
                    .iter()
                    .filter(|n| n.usable() && n.is_windows())
                    .filter_map(Node::build)
                    .collect(),
            );
        }
        (!settings.windows_builds.is_empty())
            .then(|| settings.windows_builds.iter().copied().collect())
    }
}

/// Where the adapter reads the platforms of the images it needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ImageSource {
    /// Each image's registry, one lookup per image (`imageFacts: registry`).
    #[default]
    Registry,
    /// The image facts ConfigMaps of one namespace, one list for every image
    /// (`imageFacts: cluster`; see `input::published`).
    Cluster {
        /// The namespace the facts are published in.
        namespace: String,
    },
}

/// What the adapter should look up for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Needs {
    /// Distinct image references to read platforms for, in pod order.
    pub images: Vec<String>,
    /// Where to read them.
    pub image_source: ImageSource,
    /// RuntimeClass names the settings do not declare.
    pub runtime_classes: Vec<String>,
    /// Whether to list the cluster's Nodes.
    pub nodes: bool,
    /// Whether the Nodes must come with their labels and taints (the full
    /// check, a taint read from the nodes); without, their OS, build and
    /// architecture (`status.nodeInfo`) are enough, a far smaller list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub node_labels: bool,
    /// Node names and hostnames the pod selects (`matchFields` on
    /// `metadata.name`, the `kubernetes.io/hostname` label), looked up with
    /// the node facts for the full check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_names: Vec<String>,
    /// Where the published facts live (`imageFactsNamespace`): the node
    /// facts and RuntimeClasses are read there, whatever `image_source` says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub facts_namespace: String,
}

impl Needs {
    /// Whether nothing is to be looked up.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.runtime_classes.is_empty() && !self.nodes
    }
}
