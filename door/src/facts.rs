//! Facts files: what the cluster and the registries would answer the
//! policy's host calls, for the doors that have no host (the CLI and the
//! playground). A facts file is one or more YAML or JSON documents, each
//! either
//!
//! - the core's [`Facts`] form: `images` (reference: `{platforms: [...]}`,
//!   `{lookupFailed: ...}`, or what the registry serves: an image index or
//!   manifest list, an `oci_manifest_config` answer, an image config),
//!   `runtimeClasses` (name: `{found: ...}`, `missing`, `{lookupFailed: ...}`,
//!   or a RuntimeClass object), `nodes` (`{listed: [...]}`, or a list of
//!   Node objects); or
//! - Kubernetes objects as `kubectl get nodes,runtimeclasses -o yaml` (or
//!   `-o json`) prints them: Nodes and RuntimeClasses, alone or in a List;
//!   Karpenter's NodePools with their EC2NodeClasses (or EKS Auto Mode
//!   NodeClasses), as `kubectl get nodepools,ec2nodeclasses -o yaml` prints
//!   them, whose launchable nodes join the listed Nodes;
//!   and the ConfigMaps the facts syncer or `os-placement facts render`
//!   publishes (`kubectl get configmaps -n os-placement -l
//!   os-placement.kubewarden.io/facts -o yaml`), read as the policy reads
//!   them, or the image facts ConfigMaps of earlier releases (label
//!   `os-placement.kubewarden.io/image-facts=true`).
//!
//! The file then answers as a host would ([`HostFacts::answer`]): what it
//! holds is found; an image it lacks is a failed lookup, or, when the file
//! holds published ConfigMaps, not published yet (as the policy says with
//! `imageFacts: cluster`); a RuntimeClass it
//! lacks does not exist when the file lists RuntimeClass objects (a cluster
//! listing holds them all), else it is a failed lookup; Node objects are the
//! node inventory, else the published node classes; neither is a failed
//! lookup. The same facts then give the same answer through every door.

use std::collections::BTreeMap;

use os_placement_core::capacity;
use os_placement_core::host_answers::{self, AnswerProblem, ManifestAnswer};
use os_placement_core::published::{self, PublishedMap, Wanted};
use os_placement_core::{
    ClusterRuntimeClass, Facts, ImageFacts, ImageSource, Needs, Node as ClusterNode, NodeFacts,
    Platform, RuntimeClassFacts, SortedMap,
};
use serde::de::DeserializeOwned;

use crate::error::TextError;
use crate::node::{Data, Entry, Node};
use crate::objects::type_name;
use crate::stream::read_stream;

/// What a facts file holds, ready to answer a request's [`Needs`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostFacts {
    images: SortedMap<String, ImageFacts>,
    runtime_classes: BTreeMap<String, RuntimeClassFacts>,
    /// RuntimeClass objects were listed: a name not among them does not exist.
    listed_runtime_classes: bool,
    /// Image facts ConfigMaps were given: an image not among them is not published yet.
    published_images: bool,
    nodes: Option<NodeFacts>,
    /// NodePools and node classes: what they launch joins the listed Nodes.
    capacity: Vec<serde_json::Value>,
    /// Published ConfigMaps (name, `data.index`), read as the policy reads them.
    published: Vec<(String, Option<String>)>,
    /// The images those ConfigMaps keep readable, for `facts render`.
    published_readable: SortedMap<String, ImageFacts>,
    /// The time to age the syncer's heartbeat at (seconds since the epoch);
    /// `None`: as it was when published (a door without a clock).
    now: Option<u64>,
}

/// What a facts file holds, as `os-placement facts render` publishes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderSources {
    /// The Node objects, and what the NodePools launch; `None` when there
    /// were no Nodes.
    pub nodes: Option<Vec<ClusterNode>>,
    /// The RuntimeClass objects; `None` when there were none.
    pub runtime_classes: Option<SortedMap<String, ClusterRuntimeClass>>,
    /// Image facts, from facts documents and published ConfigMaps.
    pub images: SortedMap<String, ImageFacts>,
}

const EXPECTED: &str = "a facts file holds images, runtimeClasses and nodes (the policy's facts), or Node, RuntimeClass, NodePool and EC2NodeClass objects (kubectl get nodes,runtimeclasses,nodepools,ec2nodeclasses -o yaml) and published facts ConfigMaps (kubectl get configmaps -n os-placement -l os-placement.kubewarden.io/facts -o yaml)";

impl HostFacts {
    /// Reads a facts file; an error names where and what is wrong.
    pub fn read(text: &str) -> Result<HostFacts, TextError> {
        let mut facts = HostFacts::default();
        facts.add_text(text)?;
        Ok(facts)
    }

    /// Adds what another facts file holds (several files read as one).
    pub fn add_text(&mut self, text: &str) -> Result<(), TextError> {
        for document in read_stream(text) {
            let document = document.map_err(|broken| broken.error)?;
            self.add_document(&document.root)?;
        }
        Ok(())
    }

    /// Whether the file held nothing.
    pub fn is_empty(&self) -> bool {
        *self == HostFacts::default()
    }

    /// Whether the facts hold platforms (or a failed lookup) for `image`.
    pub fn has_image(&self, image: &str) -> bool {
        self.images.contains_key(image)
    }

    /// Adds image facts gathered elsewhere (the CLI's `--lookup` reads them
    /// from the registries); an image the facts hold already keeps its facts.
    pub fn add_looked_up(&mut self, images: impl IntoIterator<Item = (String, ImageFacts)>) {
        for (image, facts) in images {
            self.images.insert_absent(&image, || facts);
        }
    }

    /// Ages the published syncer heartbeat at `now` (seconds since the
    /// epoch), as the policy does with its clock.
    pub fn at(mut self, now: u64) -> HostFacts {
        self.now = Some(now);
        self
    }

    /// The facts the policy would gather for `needs` from a host that
    /// answers from this file.
    pub fn answer(&self, needs: &Needs) -> Facts {
        let found = (!self.published.is_empty()).then(|| self.read_published(needs));
        let mut facts = Facts::default();
        for image in &needs.images {
            let from_file = self.images.get(image).cloned().or_else(|| {
                // A registry answers what the published facts keep readable.
                matches!(needs.image_source, ImageSource::Registry)
                    .then(|| self.published_readable.get(image).cloned())
                    .flatten()
            });
            let found = match (from_file, &found, &needs.image_source) {
                (Some(found), _, _) => found,
                (None, Some(published), ImageSource::Cluster { .. }) => published
                    .image_facts(std::slice::from_ref(image))
                    .get(image)
                    .cloned()
                    .unwrap_or(ImageFacts::Unpublished),
                (None, _, _) if self.published_images => ImageFacts::Unpublished,
                (None, _, _) => {
                    ImageFacts::LookupFailed("the facts file has no platforms for it".to_string())
                }
            };
            facts.images.insert(image.clone(), found);
        }
        for name in &needs.runtime_classes {
            let published = found.as_ref().and_then(|f| f.runtime_class(name));
            let found = match (self.runtime_classes.get(name), published) {
                (Some(found), _) => found.clone(),
                (None, Some(published)) => published,
                (None, None) if self.listed_runtime_classes => RuntimeClassFacts::Missing,
                (None, None) => RuntimeClassFacts::LookupFailed(
                    "the facts file lists no RuntimeClasses".to_string(),
                ),
            };
            facts.runtime_classes.insert(name.clone(), found);
        }
        if needs.nodes {
            facts.nodes = Some(match (&self.nodes, &found) {
                (Some(NodeFacts::Listed(nodes)), _) => NodeFacts::Listed(self.with_capacity(nodes)),
                (Some(nodes), _) => nodes.clone(),
                (None, Some(published)) => match published.node_facts(
                    &needs.node_names,
                    "the facts file's published facts hold no node facts",
                ) {
                    NodeFacts::Listed(nodes) => NodeFacts::Listed(self.with_capacity(&nodes)),
                    failed => failed,
                },
                (None, None) => {
                    NodeFacts::LookupFailed("the facts file lists no Nodes".to_string())
                }
            });
        }
        facts.syncer = found.as_ref().map(|found| {
            let published = found.cluster.as_ref().and_then(|c| c.syncer).map(|h| h.at);
            found.syncer(self.now.or(published).unwrap_or_default())
        });
        facts
    }

    /// `nodes` and what the file's NodePools launch.
    fn with_capacity(&self, nodes: &[ClusterNode]) -> Vec<ClusterNode> {
        let mut all = nodes.to_vec();
        all.extend(capacity::from_objects(&self.capacity));
        all
    }

    /// The published ConfigMaps read for `needs`, as the policy reads them.
    fn read_published(&self, needs: &Needs) -> published::Found {
        let images: &[String] = match needs.image_source {
            ImageSource::Cluster { .. } => &needs.images,
            ImageSource::Registry => &[],
        };
        let maps = self.published.iter().map(|(name, index)| PublishedMap {
            name,
            index: index.as_deref(),
        });
        published::read(
            maps,
            &Wanted {
                images,
                names: &needs.node_names,
                runtime_classes: &needs.runtime_classes,
                labels: needs.node_labels,
            },
        )
    }

    /// The ConfigMaps the facts syncer would publish in `namespace` for
    /// what the file holds (`os-placement facts render`).
    pub fn published(&self, namespace: &str) -> Vec<serde_json::Value> {
        let sources = self.render_sources();
        published::config_maps(
            &published::Sources {
                nodes: sources.nodes.as_deref(),
                runtime_classes: sources.runtime_classes.as_ref(),
                images: &sources.images,
                resolved_at: None,
                syncer: None,
                stale: &[],
            },
            namespace,
        )
    }

    /// What the file holds, for `os-placement facts render`: Node and
    /// RuntimeClass objects and every image's facts.
    pub fn render_sources(&self) -> RenderSources {
        let nodes = match &self.nodes {
            Some(NodeFacts::Listed(nodes)) => Some(self.with_capacity(nodes)),
            _ => None,
        };
        let runtime_classes = self.listed_runtime_classes.then(|| {
            self.runtime_classes
                .iter()
                .filter_map(|(name, facts)| match facts {
                    RuntimeClassFacts::Found(class) => Some((name.clone(), class.clone())),
                    _ => None,
                })
                .collect()
        });
        let mut images = self.published_readable.clone();
        for (image, facts) in &self.images {
            images.insert(image.clone(), facts.clone());
        }
        RenderSources {
            nodes,
            runtime_classes,
            images,
        }
    }

    fn add_document(&mut self, root: &Node) -> Result<(), TextError> {
        match &root.data {
            Data::Null => Ok(()),
            Data::Map(_) if root.get("kind").is_some() => self.add_object(root, "document"),
            // A bare list of objects, as `jq '.items'` leaves a listing.
            Data::Seq(items) if items.iter().all(|i| i.get("kind").is_some()) => {
                for (i, item) in items.iter().enumerate() {
                    self.add_object(item, &format!("[{i}]"))?;
                }
                Ok(())
            }
            Data::Map(entries) => {
                for entry in entries {
                    match entry.key.as_str() {
                        "images" => self.add_images(&entry.value)?,
                        "runtimeClasses" => self.add_runtime_classes(&entry.value)?,
                        "nodes" => self.add_nodes(&entry.value)?,
                        other => {
                            return Err(problem(
                                &entry.value,
                                format!("unknown key {other:?}: {EXPECTED}"),
                            ))
                        }
                    }
                }
                Ok(())
            }
            other => Err(problem(
                root,
                format!("the document is {}: {EXPECTED}", type_name(other)),
            )),
        }
    }

    /// A Node, a RuntimeClass, a NodePool or node class, or a list of them.
    fn add_object(&mut self, node: &Node, what: &str) -> Result<(), TextError> {
        let kind = node.text("kind").unwrap_or("");
        match (kind, node.get("items")) {
            ("Node", _) => self.push_node(host_answers::node(&node.to_json())),
            ("NodePool" | "EC2NodeClass" | "NodeClass", _) => self.add_capacity(node, what)?,
            ("ConfigMap", _) => self.add_config_map(node, what)?,
            ("RuntimeClass", _) => {
                let name = node
                    .get("metadata")
                    .and_then(|m| m.text("name"))
                    .unwrap_or("");
                if name.is_empty() {
                    return Err(problem(
                        node,
                        format!("{what}: a RuntimeClass without metadata.name"),
                    ));
                }
                self.listed_runtime_classes = true;
                self.runtime_classes.insert(
                    name.to_string(),
                    RuntimeClassFacts::Found(host_answers::runtime_class(&node.to_json())),
                );
            }
            (
                kind,
                Some(Node {
                    data: Data::Seq(items),
                    ..
                }),
            ) if kind.ends_with("List") => {
                for (i, item) in items.iter().enumerate() {
                    self.add_object(item, &format!("items[{i}]"))?;
                }
            }
            (kind, _) => return Err(problem(node, format!("{what} is a {kind}: {EXPECTED}"))),
        }
        Ok(())
    }

    /// A published facts ConfigMap, or an image facts ConfigMap of an
    /// earlier release, read as the policy reads it.
    fn add_config_map(&mut self, node: &Node, what: &str) -> Result<(), TextError> {
        let labels = node.get("metadata").and_then(|m| m.get("labels"));
        if labels
            .and_then(|l| l.text(published::FACTS_LABEL))
            .is_some()
        {
            return self.add_published(node, what);
        }
        let legacy = labels.and_then(|l| l.text(published::IMAGE_FACTS_LABEL)) == Some("true");
        if !legacy {
            return Err(problem(
                node,
                format!(
                    "{what} is a ConfigMap without the label {}: only published facts ConfigMaps are facts",
                    published::FACTS_LABEL
                ),
            ));
        }
        let images = published::config_map_images(&node.to_json())
            .map_err(|e| problem(node, format!("{what}: {e}")))?;
        self.images.extend(images);
        self.published_images = true;
        Ok(())
    }

    fn add_published(&mut self, node: &Node, what: &str) -> Result<(), TextError> {
        let name = node
            .get("metadata")
            .and_then(|m| m.text("name"))
            .unwrap_or_default()
            .to_string();
        let data = node.get("data");
        let index = data.and_then(|d| d.text(published::INDEX_KEY));
        if index.is_none() {
            return Err(problem(
                node,
                format!(
                    "{what}: ConfigMap {name} has no data.{}: publish it with os-placement facts render or the facts syncer",
                    published::INDEX_KEY
                ),
            ));
        }
        if let Some(readable) = data.and_then(|d| d.get(published::IMAGES_KEY)) {
            let readable = serde_json::json!({"metadata": {"name": name},
                "data": {published::IMAGE_FACTS_KEY: readable.to_json()}});
            let images = published::config_map_images(&readable)
                .map_err(|e| problem(node, format!("{what}: {e}")))?;
            self.published_readable.extend(images);
        }
        self.published.push((name, index.map(str::to_string)));
        self.published_images = true;
        Ok(())
    }

    /// A NodePool or node class of the versions Karpenter serves today.
    fn add_capacity(&mut self, node: &Node, what: &str) -> Result<(), TextError> {
        let object = node.to_json();
        if !capacity::is_capacity_object(&object) {
            let kind = node.text("kind").unwrap_or_default();
            let version = node.text("apiVersion").unwrap_or_default();
            let Some(expected) = capacity::CAPACITY_KINDS.iter().find(|k| k.kind == kind) else {
                return Err(problem(node, format!("{what} is a {kind}: {EXPECTED}")));
            };
            let group = expected.api_version.split('/').next().unwrap_or_default();
            return Err(problem(
                node,
                format!(
                    "{what} is a {kind} of {version:?}: this release reads {kind} of {} (kubectl get {}.{group} -o yaml)",
                    expected.api_version, expected.plural
                ),
            ));
        }
        self.capacity.push(object);
        Ok(())
    }

    fn push_node(&mut self, node: ClusterNode) {
        match &mut self.nodes {
            Some(NodeFacts::Listed(nodes)) => nodes.push(node),
            _ => self.nodes = Some(NodeFacts::Listed(vec![node])),
        }
    }

    fn add_images(&mut self, images: &Node) -> Result<(), TextError> {
        let entries = map_entries(
            images,
            "images",
            "map each image reference to its platforms",
        )?;
        for entry in entries {
            let facts = image_facts(&entry.value, &entry.key)?;
            self.images.insert(entry.key.clone(), facts);
        }
        Ok(())
    }

    fn add_runtime_classes(&mut self, classes: &Node) -> Result<(), TextError> {
        let entries = map_entries(
            classes,
            "runtimeClasses",
            "map each RuntimeClass name to what the cluster has",
        )?;
        for entry in entries {
            let value = entry.value.to_json();
            let facts = if value.get("handler").is_some() || value.get("kind").is_some() {
                RuntimeClassFacts::Found(host_answers::runtime_class(&value))
            } else {
                parse(&entry.value, &format!("runtimeClasses[{:?}]", entry.key))?
            };
            self.runtime_classes.insert(entry.key.clone(), facts);
        }
        Ok(())
    }

    fn add_nodes(&mut self, nodes: &Node) -> Result<(), TextError> {
        match &nodes.data {
            Data::Seq(items) => {
                for item in items {
                    self.push_node(host_answers::node(&item.to_json()));
                }
                Ok(())
            }
            _ => match parse::<NodeFacts>(nodes, "nodes")? {
                NodeFacts::Listed(listed) => {
                    listed.into_iter().for_each(|n| self.push_node(n));
                    Ok(())
                }
                failed => {
                    self.nodes = Some(failed);
                    Ok(())
                }
            },
        }
    }
}

/// The entries of `node`, the value of key `key`; anything but a map is
/// named with its type and `fix`.
fn map_entries<'n>(node: &'n Node, key: &str, fix: &str) -> Result<&'n [Entry], TextError> {
    match &node.data {
        Data::Map(entries) => Ok(entries),
        other => Err(problem(
            node,
            format!("{key} is {}: {fix}", type_name(other)),
        )),
    }
}

/// An image's platforms in the policy's form, or as its registry serves them.
fn image_facts(node: &Node, image: &str) -> Result<ImageFacts, TextError> {
    let fail = |message: String| problem(node, format!("images[{image:?}]: {message}"));
    let value = node.to_json();
    if value.get("platforms").is_some() || value.get("lookupFailed").is_some() {
        return serde_json::from_value(value).map_err(|e| fail(e.to_string()));
    }
    let answer = |read: Result<Platform, AnswerProblem>| read.map_err(|e| fail(e.to_string()));
    let platforms = if value.get("manifests").is_some() {
        match host_answers::manifest(&value).map_err(|e| fail(e.to_string()))? {
            ManifestAnswer::Index(platforms) => platforms,
            ManifestAnswer::Image => return Err(fail(MANIFEST_WITHOUT_PLATFORM.into())),
        }
    } else if value.get("config").is_some() && value.get("manifest").is_some() {
        vec![answer(host_answers::manifest_config(&value))?]
    } else if value.get("os").is_some() {
        vec![answer(host_answers::image_config(&value))?]
    } else if value.get("config").is_some() {
        return Err(fail(MANIFEST_WITHOUT_PLATFORM.into()));
    } else {
        return Err(fail("expected {platforms: [...]}, {lookupFailed: ...}, an image index (manifests), or an image config (os, architecture, os.version)".into()));
    };
    Ok(ImageFacts::Platforms(platforms))
}

const MANIFEST_WITHOUT_PLATFORM: &str = "an image manifest names no platform: give its image index, or its config (os, architecture, os.version)";

fn parse<T: DeserializeOwned>(node: &Node, what: &str) -> Result<T, TextError> {
    serde_json::from_value(node.to_json()).map_err(|e| problem(node, format!("{what}: {e}")))
}

fn problem(node: &Node, message: String) -> TextError {
    TextError {
        message,
        at: node.span.at,
    }
}

/// Reads a facts file: see [`HostFacts::read`].
pub fn read_facts(text: &str) -> Result<HostFacts, TextError> {
    HostFacts::read(text)
}

#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
#[cfg(test)]
mod tests {
    use super::*;
    use os_placement_core::Platform;

    const KUBECTL: &str = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: win-1\n    labels: {kubernetes.io/os: windows, node.kubernetes.io/windows-build: 10.0.20348}\n  spec:\n    taints: [{key: os, value: windows, effect: NoSchedule}]\n- apiVersion: node.k8s.io/v1\n  kind: RuntimeClass\n  metadata: {name: windows-2022}\n  handler: runhcs-wcow-process\n  scheduling:\n    nodeSelector: {kubernetes.io/os: windows}\n";

    fn needs(images: &[&str], classes: &[&str], nodes: bool) -> Needs {
        Needs {
            images: images.iter().map(|s| s.to_string()).collect(),
            runtime_classes: classes.iter().map(|s| s.to_string()).collect(),
            nodes,
            node_labels: nodes,
            ..Needs::default()
        }
    }

    #[test]
    fn kubectl_output_is_taken_as_it_is() {
        let facts = HostFacts::read(KUBECTL).unwrap();
        let answer = facts.answer(&needs(&[], &["windows-2022", "gone"], true));
        let nodes = answer.listed_nodes().unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].windows_build.as_deref(), Some("10.0.20348"));
        assert!(
            matches!(answer.runtime_classes.get("windows-2022").unwrap(), RuntimeClassFacts::Found(rc) if rc.handler == "runhcs-wcow-process")
        );
        assert_eq!(
            *answer.runtime_classes.get("gone").unwrap(),
            RuntimeClassFacts::Missing,
            "a listing holds every class"
        );
        // The same as JSON.
        let json =
            serde_json::to_string(&crate::stream::read_one(KUBECTL).unwrap().unwrap().to_json())
                .unwrap();
        assert_eq!(HostFacts::read(&json).unwrap(), facts);
    }

    #[test]
    fn the_policy_form_and_registry_answers_are_read() {
        let text = r#"
images:
  registry.example/app:1: {platforms: [{os: windows, osVersion: 10.0.17763.1}]}
  registry.example/down:1: {lookupFailed: timeout}
  registry.example/multi:1:
    mediaType: application/vnd.oci.image.index.v1+json
    manifests:
    - {digest: "sha256:a", platform: {os: linux, architecture: arm64}}
  registry.example/single:1: {os: windows, os.version: 10.0.20348.1, architecture: amd64}
runtimeClasses:
  hyperv: {found: {handler: runhcs-wcow-hypervisor}}
  gone: missing
"#;
        let facts = HostFacts::read(text).unwrap();
        let answer = facts.answer(&needs(
            &[
                "registry.example/app:1",
                "registry.example/down:1",
                "registry.example/multi:1",
                "registry.example/single:1",
                "unknown:1",
            ],
            &["hyperv", "gone", "other"],
            true,
        ));
        let platforms = |image: &str| match answer.images.get(image).unwrap() {
            ImageFacts::Platforms(p) => p.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            platforms("registry.example/app:1")[0].os_version.as_deref(),
            Some("10.0.17763.1")
        );
        assert_eq!(
            platforms("registry.example/multi:1"),
            [Platform {
                os: "linux".into(),
                os_version: None,
                architecture: Some("arm64".into())
            }]
        );
        assert_eq!(platforms("registry.example/single:1")[0].os, "windows");
        assert_eq!(
            *answer.images.get("registry.example/down:1").unwrap(),
            ImageFacts::LookupFailed("timeout".into())
        );
        assert!(
            matches!(answer.images.get("unknown:1").unwrap(), ImageFacts::LookupFailed(e) if e.contains("facts file"))
        );
        assert_eq!(
            *answer.runtime_classes.get("gone").unwrap(),
            RuntimeClassFacts::Missing
        );
        assert!(
            matches!(
                answer.runtime_classes.get("other").unwrap(),
                RuntimeClassFacts::LookupFailed(_)
            ),
            "no listing: unknown"
        );
        assert!(matches!(answer.nodes, Some(NodeFacts::LookupFailed(_))));
        // Nothing asked, nothing answered.
        assert!(facts.answer(&Needs::default()).is_empty());
    }

    /// What `kubectl get configmaps -l os-placement.kubewarden.io/image-facts=true
    /// -o yaml` prints for the ConfigMaps the syncer of earlier releases published.
    const PUBLISHED: &str = r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: os-placement-image-facts-0
    namespace: os-placement
    labels:
      os-placement.kubewarden.io/image-facts: "true"
  data:
    images.json: '{"images":{"corp/win:1":{"platforms":[{"os":"windows","osVersion":"10.0.20348.1","architecture":"amd64"}]},"corp/down:1":{"lookupFailed":"timeout"}}}'
metadata:
  resourceVersion: ""
"#;

    #[test]
    fn published_config_maps_are_read_as_the_policy_reads_them() {
        let facts = HostFacts::read(PUBLISHED).unwrap();
        let answer = facts.answer(&needs(
            &["corp/win:1", "corp/down:1", "corp/new:1"],
            &[],
            false,
        ));
        assert!(
            matches!(answer.images.get("corp/win:1").unwrap(), ImageFacts::Platforms(p) if p[0].os == "windows")
        );
        assert_eq!(
            *answer.images.get("corp/down:1").unwrap(),
            ImageFacts::LookupFailed("timeout".into())
        );
        // Not published yet, as the policy says with imageFacts: cluster.
        assert_eq!(
            *answer.images.get("corp/new:1").unwrap(),
            ImageFacts::Unpublished
        );
        // Negative: a ConfigMap that is not published facts is refused, naming the label.
        let e =
            HostFacts::read(&PUBLISHED.replace("image-facts: \"true\"", "other: x")).unwrap_err();
        assert!(
            e.message
                .contains("without the label os-placement.kubewarden.io/facts:"),
            "{e}"
        );
        let e = HostFacts::read(&PUBLISHED.replace("{\"images\":{", "{\"images\":[")).unwrap_err();
        assert!(e.message.contains("not a facts document"), "{e}");
    }

    /// What `os-placement facts render` writes (the core's builder) is read
    /// back as the policy reads it: images from the shard index, nodes as
    /// classes, RuntimeClasses from the cluster document.
    #[test]
    fn rendered_config_maps_answer_as_the_policy_reads_them() {
        let kubectl = HostFacts::read(KUBECTL).unwrap();
        let sources = kubectl.render_sources();
        let mut images = SortedMap::new();
        images.insert(
            "corp/win:1".to_string(),
            ImageFacts::Platforms(vec![Platform {
                os: "windows".into(),
                os_version: Some("10.0.20348.1".into()),
                architecture: Some("amd64".into()),
            }]),
        );
        let maps = published::config_maps(
            &published::Sources {
                nodes: sources.nodes.as_deref(),
                runtime_classes: sources.runtime_classes.as_ref(),
                images: &images,
                resolved_at: None,
                syncer: None,
                stale: &[],
            },
            "os-placement",
        );
        let text = serde_json::to_string(
            &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": maps}),
        )
        .unwrap();
        let rendered = HostFacts::read(&text).unwrap();
        let mut wanted = needs(
            &["corp/win:1", "corp/new:1"],
            &["windows-2022", "other"],
            true,
        );
        wanted.image_source = ImageSource::Cluster {
            namespace: "os-placement".into(),
        };
        let answer = rendered.answer(&wanted);
        assert_eq!(answer.images.get("corp/win:1"), images.get("corp/win:1"));
        assert_eq!(
            answer.images.get("corp/new:1"),
            Some(&ImageFacts::Unpublished)
        );
        assert!(matches!(
            answer.runtime_classes.get("windows-2022"),
            Some(RuntimeClassFacts::Found(rc)) if rc.handler == "runhcs-wcow-process"
        ));
        let nodes = answer.listed_nodes().unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].name, "win-1");
        assert!(nodes[0].is_windows());
        // A registry answers what the shards keep readable; render reads it back.
        wanted.image_source = ImageSource::Registry;
        let answer = rendered.answer(&wanted);
        assert_eq!(answer.images.get("corp/win:1"), images.get("corp/win:1"));
        assert_eq!(rendered.render_sources().images, images);
        // Negative: a published ConfigMap without its index is refused, naming it.
        let e = HostFacts::read(&text.replace("\"index\"", "\"other\"")).unwrap_err();
        assert!(e.message.contains("has no data.index"), "{e}");
    }

    #[test]
    fn problems_are_named_with_their_place() {
        let e = HostFacts::read("imagez: {}\n").unwrap_err();
        assert!(e.message.starts_with("unknown key \"imagez\""), "{e}");
        let e =
            HostFacts::read("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n")
                .unwrap_err();
        assert_eq!(
            (e.at.line, e.message.starts_with("items[0] is a Pod")),
            (4, true),
            "{e}"
        );
        let e = HostFacts::read("images:\n  a:1: {config: {digest: x}}\n").unwrap_err();
        assert!(e.message.contains("names no platform"), "{e}");
        let e = HostFacts::read("runtimeClasses:\n  x: maybe\n").unwrap_err();
        assert!(e.message.starts_with("runtimeClasses[\"x\"]"), "{e}");
        assert!(HostFacts::read("").unwrap().is_empty());
    }

    const NODEPOOLS: &str = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: windows2022}\n  spec:\n    template:\n      spec:\n        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: windows2022}\n- apiVersion: karpenter.k8s.aws/v1\n  kind: EC2NodeClass\n  metadata: {name: windows2022}\n  spec:\n    amiSelectorTerms: [{alias: windows2022@latest}]\n";

    /// `kubectl get nodepools,ec2nodeclasses -o yaml` beside the Nodes:
    /// what the NodePools launch joins the inventory, in the answer and in
    /// what `facts render` publishes.
    #[test]
    fn nodepools_join_the_listed_nodes() {
        let mut facts = HostFacts::read(KUBECTL).unwrap();
        facts.add_text(NODEPOOLS).unwrap();
        let answer = facts.answer(&needs(&[], &[], true));
        let nodes = answer.listed_nodes().unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].describe(), "NodePool windows2022 (none yet)");
        let rendered = facts.published("os-placement");
        let index = rendered[0]["data"][published::INDEX_KEY].as_str().unwrap();
        assert!(
            index.contains("\"source\":\"NodePool windows2022\""),
            "{index}"
        );
        // Through the published form, the same inventory.
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": rendered});
        let from_published = HostFacts::read(&list.to_string()).unwrap();
        let again = from_published.answer(&needs(&[], &[], true));
        assert_eq!(again.listed_nodes().unwrap().len(), 2);
        // Negative: NodePools alone are no node inventory.
        let alone = HostFacts::read(NODEPOOLS).unwrap();
        assert!(alone
            .answer(&needs(&[], &[], true))
            .listed_nodes()
            .is_none());
        // An older API version is named with the one this release reads.
        let beta = NODEPOOLS.replacen("karpenter.sh/v1", "karpenter.sh/v1beta1", 1);
        let e = HostFacts::read(&beta).unwrap_err();
        assert!(
            e.message.contains("items[0] is a NodePool of \"karpenter.sh/v1beta1\": this release reads NodePool of karpenter.sh/v1"),
            "{e}"
        );
    }
}
