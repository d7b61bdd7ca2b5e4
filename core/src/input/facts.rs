//! Facts the policy adapter gathered outside the request: image platforms
//! from the registry, RuntimeClasses and Nodes from the cluster. Pure data:
//! the core never fetches anything. With no facts every rule behaves as if
//! only the request and the settings existed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{BuildSet, Builds, Placement};
use crate::admission::evaluate::{Operation, ReadPod, Review};
use crate::vocab::kinds::Kind;
use crate::vocab::labels::{OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::signals::resolve::{resolve_with, Resolution};
use crate::input::settings::{ImageLookup, Isolation, Settings, Taint};
use crate::input::pod::PodView;

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

/// Where an image may run, from its platforms: `None` when they name
/// neither Linux nor Windows. Windows entries count with their build, and
/// the hosts that run it (containerd matches `os.version` to the host's
/// build: containerd pkg/platforms, platforms_windows.go); with Hyper-V
/// isolation every newer host runs it too.
pub fn platforms_placement(platforms: &[Platform], hyperv: bool) -> Option<Placement> {
    let linux = platforms.iter().any(|p| p.os == "linux");
    let windows: Vec<&Platform> = platforms.iter().filter(|p| p.os == "windows").collect();
    if !linux && windows.is_empty() {
        return None;
    }
    let mut placement = if linux {
        Placement::linux()
    } else {
        Placement::nowhere()
    };
    if !windows.is_empty() {
        let builds: Option<Vec<WindowsBuild>> = windows
            .iter()
            .map(|p| {
                p.os_version
                    .as_deref()
                    .and_then(WindowsBuild::parse_version)
            })
            .collect();
        let hosts = match builds {
            // A Windows entry without a build may run on any host.
            None => Builds::Any,
            Some(builds) => builds
                .into_iter()
                .map(|b| hosts_of(b, hyperv))
                .fold(Builds::Only(BuildSet::new()), |acc, h| acc.union(&h)),
        };
        placement = placement.union(&Placement::windows(hosts));
    }
    Some(placement)
}

/// Node builds that run a container of `build`.
pub fn hosts_of(build: WindowsBuild, hyperv: bool) -> Builds {
    if hyperv {
        // Every older build is excluded: newer builds, known or not, run it.
        Builds::Except(
            crate::vocab::build::known_builds()
                .into_iter()
                .filter(|b| *b < build)
                .collect(),
        )
    } else {
        Builds::compatible_hosts(build)
    }
}

/// Whether a RuntimeClass handler runs Hyper-V isolated Windows containers
/// (containerd's runhcs handlers: `runhcs-wcow-hypervisor`, or any handler
/// naming `hyperv`/`hypervisor`).
pub fn handler_is_hyperv(handler: &str) -> bool {
    let h = handler.to_ascii_lowercase();
    h.contains("hypervisor") || h.contains("hyperv") || h.contains("hyper-v")
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

/// What to look up for a raw AdmissionRequest.
pub fn needs_request(request: &Value, settings: &Settings) -> Needs {
    match Review::from_admission_request(request) {
        Ok(review) => needs(&review, settings),
        Err(_) => Needs::default(),
    }
}

/// What to look up for a review under the settings: nothing for requests
/// the rules do not judge. `imageLookup: undecided` asks only for images
/// whose reference decides nothing, and only while the OS or the build is
/// open; `always` asks for every image.
pub fn needs(review: &Review<'_>, settings: &Settings) -> Needs {
    needs_reading(review, settings).0
}

/// As [`needs`], keeping the pod as read (and its resolution without facts,
/// when working out the lookups took one) so the decision need not read it again.
pub(crate) fn needs_reading<'a>(
    review: &Review<'a>,
    settings: &Settings,
) -> (Needs, Option<ReadPod<'a>>) {
    let mut needs = Needs::default();
    if matches!(review.operation, Operation::Delete | Operation::Connect) {
        return (needs, None);
    }
    let Some(kind) = Kind::parse(review.kind) else {
        return (needs, None);
    };
    let Ok((spec, path)) = crate::admission::evaluate::locate_pod_spec(review.object, kind) else {
        return (needs, None);
    };
    let Ok(pod) = PodView::read(spec, path) else {
        return (needs, None);
    };
    if let Some(name) = pod.runtime_class_name {
        if settings.runtime_class(name).is_none() {
            needs.runtime_classes.push(name.to_string());
        }
    }
    needs.nodes = settings.node_inventory.reads_nodes() || settings.windows_taint_from_nodes;
    let (images, resolution) = images_to_look_up(&pod, settings);
    needs.images = images;
    (needs, Some(ReadPod { pod, resolution }))
}

fn images_to_look_up(pod: &PodView<'_>, settings: &Settings) -> (Vec<String>, Option<Resolution>) {
    let all = pod.containers.iter().filter_map(|c| c.image);
    let mut resolution = None;
    let wanted: Vec<&str> = match settings.image_lookup {
        ImageLookup::Off => Vec::new(),
        ImageLookup::Always => all.collect(),
        ImageLookup::Undecided => {
            let resolved = resolve_with(pod, settings, &Facts::default());
            let wanted = if placement_fixed(&resolved, settings) {
                Vec::new()
            } else {
                // The resolution classified every image already.
                resolved
                    .undecided_images
                    .iter()
                    .filter_map(|&i| pod.containers.get(i).and_then(|c| c.image))
                    .collect()
            };
            resolution = Some(resolved);
            wanted
        }
    };
    let mut images: Vec<String> = Vec::new();
    for image in wanted {
        if !images.iter().any(|i| i == image) {
            images.push(image.to_string());
        }
    }
    (images, resolution)
}

/// Whether the pod's own fields already fix the OS and, for Windows, the
/// build (or need none): then no image answer can change the placement.
fn placement_fixed(resolution: &Resolution, settings: &Settings) -> bool {
    if !resolution.conflicts.is_empty() {
        // Rejected whatever the images are.
        return true;
    }
    let node = resolution.node_placement();
    let pinned = node.windows.as_ref().is_some_and(|b| b.single().is_some());
    match node.os() {
        Some(crate::vocab::constraint::Os::Linux) => true,
        Some(crate::vocab::constraint::Os::Windows) => {
            pinned || resolution.host_process || !settings.pin_windows_build
        }
        None => false,
    }
}
