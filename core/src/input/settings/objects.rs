//! The settings, declared once: every key of every settings object with
//! its field, type, default and meaning. The struct, its reader, its
//! defaults, its key list and its schema all come from these declarations.

use crate::vocab::ordered::StringMap;

use k8s_openapi::api::core::v1::Toleration;

use crate::input::settings::declare::{settings_object, Validate};
use crate::input::settings::read::At;
use crate::input::settings::taints::{TaintFields, TaintSetting};
use crate::input::settings::{
    DefaultOs, ImageFactsSource, ImageLookup, LookupFailure, NodeInventory,
};
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::Os;
use crate::vocab::glob::{Glob, GlobError};
use crate::vocab::isolation::Isolation;
use crate::vocab::names::{is_dns_label, is_dns_subdomain, is_label_value};

/// The namespace the facts syncer publishes image facts in, unless the
/// settings name another.
pub const DEFAULT_FACTS_NAMESPACE: &str = "os-placement";

settings_object! {
    /// The policy's settings, as `ClusterAdmissionPolicy.spec.settings` gives them.
    pub struct Settings {
        /// Add missing placement (true) or reject misplaced pods (false).
        mutate: bool = true => "mutate";
        /// The OS of a pod with no OS signal: linux, or none to leave such pods alone.
        default_os: DefaultOs = DefaultOs::Linux => "defaultOS";
        /// The taint on Windows nodes ({key, value, effect}); null when they are not tainted; fromNodes reads it from the Windows nodes.
        windows_taint: TaintSetting = TaintSetting::Untainted => "windowsTaint";
        /// The taint on Linux nodes ({key, value, effect}), as Rancher/RKE2 mixed clusters taint them (cattle.io/os=linux:NoSchedule); null when they are not tainted; fromNodes reads it from the Linux nodes.
        linux_taint: TaintSetting = TaintSetting::Untainted => "linuxTaint";
        /// Pin Windows pods to node.kubernetes.io/windows-build when the build is known.
        pin_windows_build: bool = true => "pinWindowsBuild";
        /// Pin pods to the CPU architectures their images are built for (read from each image's index) when the cluster's nodes of their OS offer more: kubernetes.io/arch in the nodeSelector for one, a required node affinity for several.
        pin_architecture: bool = false => "pinArchitecture";
        /// Also require and set spec.os.name.
        set_pod_os: bool = false => "setPodOS";
        /// Place Windows pods with runtimeClassName instead of raw selector entries.
        prefer_runtime_class: bool = false => "preferRuntimeClass";
        /// The cluster's RuntimeClasses that carry scheduling; a class not listed is read from the cluster, and a listed one wins over the cluster's.
        runtime_classes: Vec<RuntimeClass> = Vec::new() => "runtimeClasses";
        /// Rules for private images, checked before the built-in ones.
        windows_images: Vec<ImageRule> = Vec::new() => "windowsImages";
        /// Which images to read from their registry: off, undecided (only those whose reference says nothing, or no build, while the pod's OS or build is open) or always.
        image_lookup: ImageLookup = ImageLookup::Undecided => "imageLookup";
        /// Where the platforms of the images imageLookup wants come from: cluster (the ConfigMaps the facts syncer publishes, read from the policy server's cache, so admission never waits on a registry) or registry (asked at admission time: a registry that hangs stalls admission).
        image_facts: ImageFactsSource = ImageFactsSource::Cluster => "imageFacts";
        /// The namespace of the facts the facts syncer publishes: node classes, RuntimeClasses and image facts (imageFacts: cluster).
        image_facts_namespace: String = DEFAULT_FACTS_NAMESPACE.to_string() => "imageFactsNamespace";
        /// A failed image lookup: warn (fall back to the reference rules) or reject.
        lookup_failure: LookupFailure = LookupFailure::Warn => "lookupFailure";
        /// With imageFacts: cluster, refuse a Pod created by a ReplicaSet, Job, DaemonSet, StatefulSet or ReplicationController whose placement depends on an image the facts syncer, reporting, has not published yet: its controller creates it again within seconds, and it is then placed by the image's platforms. Never while the syncer does not report.
        wait_for_image_facts: bool = true => "waitForImageFacts";
        /// Check pods against the cluster's nodes, as the facts syncer publishes them: auto warns about a pod no node runs (its OS, build or architecture) and says nothing when no node facts are published (not for a Pod its controller creates, or whose own selectors fix its OS and build); warn and reject also check selectors and taints after the patch, use the nodes' builds for placement, and warn when no node facts are published; off reads nothing.
        node_inventory: NodeInventory = NodeInventory::Auto => "nodeInventory";
        /// The builds (10.0.N) the Windows nodes run, for build placement when no node facts are read.
        windows_builds: Vec<WindowsBuild> = Vec::new() => "windowsBuilds";
        /// Capacity no object in the cluster shows, which the node inventory counts like the NodePools the syncer publishes: cluster-autoscaler node groups and EKS managed node groups scaled to zero, each as {name, os, windowsBuild, architecture, labels, taints}.
        node_templates: Vec<NodeTemplate> = Vec::new() => "nodeTemplates";
    }
}

impl Validate for Settings {
    fn validate(&self, at: &At<'_>) {
        if self.prefer_runtime_class && self.runtime_classes.is_empty() {
            at.problem_at(
                "preferRuntimeClass",
                "is true but runtimeClasses is empty: declare the cluster's RuntimeClasses that carry scheduling, or set preferRuntimeClass to false",
            );
        }
        for (i, class) in self.runtime_classes.iter().enumerate() {
            if self
                .runtime_classes
                .iter()
                .take(i)
                .any(|c| c.name == class.name)
            {
                at.field("runtimeClasses").index(i).problem_at(
                    "name",
                    format_args!(
                        "{:?} is declared twice: RuntimeClass names are unique",
                        class.name
                    ),
                );
            }
        }
        if !is_dns_label(&self.image_facts_namespace) {
            at.problem_at(
                "imageFactsNamespace",
                format_args!(
                    "{:?} is not a namespace name (a lower-case DNS label such as os-placement)",
                    self.image_facts_namespace
                ),
            );
        }
        for (i, template) in self.node_templates.iter().enumerate() {
            if self
                .node_templates
                .iter()
                .take(i)
                .any(|t| t.name == template.name)
            {
                at.field("nodeTemplates").index(i).problem_at(
                    "name",
                    format_args!(
                        "{:?} is declared twice: node template names are unique",
                        template.name
                    ),
                );
            }
        }
        for (i, build) in self.windows_builds.iter().enumerate() {
            if self.windows_builds.iter().take(i).any(|b| b == build) {
                at.field("windowsBuilds")
                    .index(i)
                    .problem(format_args!("\"{build}\" is listed twice"));
            }
        }
    }
}

settings_object! {
    /// Nodes that can be launched on demand and that no object in the
    /// cluster describes (a node group scaled to zero).
    pub struct NodeTemplate {
        /// A name for messages: the node group's, e.g. windows-2022-ng.
        name: String = String::new() => "name", required "is required: the node group's name, for messages";
        /// linux or windows.
        os: Os = Os::Linux => "os", required "is required: linux or windows";
        /// The build its Windows nodes run, 10.0.N.
        windows_build: Option<WindowsBuild> = None => "windowsBuild";
        /// Its nodes' CPU architecture (kubernetes.io/arch: amd64, arm64, ...); without it, any.
        architecture: Option<String> = None => "architecture";
        /// The labels its nodes carry, e.g. eks.amazonaws.com/nodegroup.
        labels: StringMap = StringMap::new() => "labels";
        /// The taints its nodes carry, each {key, value, effect}.
        taints: Vec<TaintFields> = Vec::new() => "taints";
    }
}

impl Validate for NodeTemplate {
    fn validate(&self, at: &At<'_>) {
        if self.os == Os::Linux && self.windows_build.is_some() {
            at.problem_at(
                "windowsBuild",
                "is set but os is linux: a build is for Windows node groups; remove it, or set os to windows",
            );
        }
        if let Some(arch) = &self.architecture {
            if arch.is_empty() || !is_label_value(arch) {
                at.problem_at(
                    "architecture",
                    format_args!("{arch:?} is not an architecture (a kubernetes.io/arch value such as amd64 or arm64)"),
                );
            }
        }
    }
}

settings_object! {
    /// A cluster RuntimeClass that carries scheduling.
    pub struct RuntimeClass {
        /// The RuntimeClass name.
        name: String = String::new() => "name", required "is required";
        /// As in the RuntimeClass: nodeSelector and tolerations.
        scheduling: Scheduling = Scheduling::default() => "scheduling",
            required "is required: list only RuntimeClasses that carry scheduling (nodeSelector and tolerations)";
        /// Its CRI handler; a handler such as runhcs-wcow-hypervisor means Hyper-V isolation.
        handler: Option<String> = None => "handler";
        /// process or hyperv (the class runs Windows images on hosts of their build or newer); by default read from the handler.
        isolation: Option<Isolation> = None => "isolation";
    }
}

impl Validate for RuntimeClass {
    fn validate(&self, at: &At<'_>) {
        if !is_dns_subdomain(&self.name) {
            at.problem_at(
                "name",
                format_args!(
                    "{:?} is not a valid RuntimeClass name (a lower-case DNS subdomain such as windows-2022)",
                    self.name
                ),
            );
        }
    }
}

settings_object! {
    /// The scheduling part of a RuntimeClass.
    pub struct Scheduling {
        /// As in the RuntimeClass.
        node_selector: StringMap = StringMap::new() => "nodeSelector";
        /// As in the RuntimeClass.
        tolerations: Vec<Toleration> = Vec::new() => "tolerations";
    }
}

impl Validate for Scheduling {
    fn validate(&self, _: &At<'_>) {}
}

settings_object! {
    /// A settings rule (`windowsImages[]`): images matching `pattern` are
    /// Windows images. Rules are checked before the built-in conventions.
    pub struct ImageRule {
        /// On the whole image reference: * any run of characters (including /), ? one character, [a-z], [!a-z], \ escapes.
        pattern: Glob = Glob::default() => "pattern",
            required "is required: a glob on the image reference, e.g. registry.example.com/win/*";
        /// 10.0.N. Without it the image is Windows and its build is only a release the reference names (ltsc2022), never a version number.
        windows_build: Option<WindowsBuild> = None => "windowsBuild";
    }
}

impl Validate for ImageRule {
    fn validate(&self, _: &At<'_>) {}
}

impl ImageRule {
    /// Compiles `pattern` into a rule.
    pub fn new(pattern: &str, windows_build: Option<WindowsBuild>) -> Result<Self, GlobError> {
        Ok(Self {
            pattern: Glob::new(pattern)?,
            windows_build,
        })
    }
}

impl Eq for ImageRule {}
