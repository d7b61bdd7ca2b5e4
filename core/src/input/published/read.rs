//! Reading the published facts a request wants from the ConfigMaps its
//! host call answered with: the cluster's node classes and RuntimeClasses,
//! and from the shards, the facts of the wanted images and the class of
//! each wanted node name. The policy and the doors read them here alike.

use crate::input::facts::{
    ClusterRuntimeClass, ImageFacts, NodeFacts, RuntimeClassFacts, SyncerState,
};
use crate::input::node::Node;
use crate::input::published::document::{
    code_value, find_record, Heartbeat, FORMAT_VERSION, IMAGE_RECORD, NAME_RECORD,
};
use crate::input::published::key::{Key, KEY_CHARS, SHARDS};
use crate::input::published::parse::{self, Keep, Parsed};
use crate::vocab::labels::HOSTNAME_LABEL;
use crate::vocab::ordered::SortedMap;

/// One published ConfigMap as a reader gets it: its name and the text of
/// its `index` key (`None` when it has none).
#[derive(Debug, Clone, Copy)]
pub struct PublishedMap<'t> {
    /// `metadata.name`.
    pub name: &'t str,
    /// `data.index`.
    pub index: Option<&'t str>,
}

/// What a request wants from the published facts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted<'w> {
    /// Image references, as written.
    pub images: &'w [String],
    /// Node names and hostnames the pod selects.
    pub names: &'w [String],
    /// RuntimeClasses the settings do not declare.
    pub runtime_classes: &'w [String],
    /// The classes' labels and taints (the full check, a taint read from
    /// the nodes); without them a class has its OS, build and architecture.
    pub labels: bool,
}

/// What the published ConfigMaps say about what was wanted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// The cluster document; `None` when no facts are published.
    pub cluster: Option<Cluster>,
    /// The wanted images found, with their facts.
    pub images: SortedMap<String, ImageFacts>,
    /// The wanted names found: their class and whether the hostname is the name.
    pub names: SortedMap<String, (String, bool)>,
    /// ConfigMaps that could not be read, and why: a wanted entry not found
    /// may be in one of them.
    pub problems: Vec<String>,
}

/// The cluster document as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    /// The node classes by id; `None` when no node facts were published.
    pub classes: Option<Vec<(String, Node)>>,
    /// What NodePools launch (count 0), and those that launch nothing now.
    pub capacity: Vec<Node>,
    /// Whether every node's hostname label is its name.
    pub hostnames_are_names: bool,
    /// Every RuntimeClass; `None` when none were published.
    pub runtime_classes: Option<SortedMap<String, ClusterRuntimeClass>>,
    /// The syncer's heartbeat; `None` when no syncer wrote the facts.
    pub syncer: Option<Heartbeat>,
}

/// Reads `maps` for `wanted`.
pub fn read<'t>(maps: impl IntoIterator<Item = PublishedMap<'t>>, wanted: &Wanted<'_>) -> Found {
    let images: Vec<(&String, Key, u16)> = keyed(wanted.images);
    let names: Vec<(&String, Key, u16)> = keyed(wanted.names);
    let keep = Keep {
        labels: wanted.labels,
        runtime_classes: wanted.runtime_classes,
    };
    let mut found = Found::default();
    for map in maps {
        let Some(index) = map.index else {
            found
                .problems
                .push(format!("ConfigMap {} has no index", map.name));
            continue;
        };
        match parse::document(index, keep) {
            Ok(document) => found.take(map.name, document, &images, &names),
            Err(e) => found.problems.push(format!(
                "ConfigMap {}: its index is not a published facts document: {e}",
                map.name
            )),
        }
    }
    found
}

/// Reads host answers to the list calls of [`selector`](super::selector)
/// for `wanted`: each a ConfigMap list, read down to the ConfigMaps' names
/// and indexes. The cluster ConfigMap every answer holds is read once.
pub fn read_answers(answers: &[Vec<u8>], wanted: &Wanted<'_>) -> Result<Found, String> {
    let mut items = Vec::new();
    for answer in answers {
        let listed = parse::list_items(answer)
            .map_err(|e| format!("the ConfigMap list answer cannot be read: {e}"))?;
        items.extend(listed);
    }
    let cluster = super::cluster_config_map_name();
    let mut seen_cluster = false;
    let maps = items.iter().filter(|(name, _)| {
        let first = !(seen_cluster && *name == cluster);
        seen_cluster |= *name == cluster;
        first
    });
    Ok(read(
        maps.map(|(name, index)| PublishedMap {
            name,
            index: index.as_deref(),
        }),
        wanted,
    ))
}

fn keyed(texts: &[String]) -> Vec<(&String, Key, u16)> {
    texts
        .iter()
        .map(|text| {
            let (key, shard) = Key::of(text);
            (text, key, shard)
        })
        .collect()
}

impl Found {
    fn take(
        &mut self,
        name: &str,
        document: Parsed<'_>,
        images: &[(&String, Key, u16)],
        names: &[(&String, Key, u16)],
    ) {
        let (version, shards) = (document.version, document.shards);
        if version != u64::from(FORMAT_VERSION) || shards != u64::from(SHARDS) {
            self.problems.push(format!(
                "ConfigMap {name} is published in format version {version} with {shards} shards, and this release reads version {FORMAT_VERSION} with {SHARDS}: run the facts syncer of the policy's release"
            ));
            return;
        }
        match document.kind.as_ref() {
            "cluster" => {
                self.cluster = Some(Cluster {
                    classes: document.nodes.map(|_| document.classes),
                    capacity: document.capacity,
                    hostnames_are_names: document.hostnames_are_names,
                    runtime_classes: document.runtime_classes,
                    syncer: document.syncer,
                })
            }
            "shard" if document.shard.is_some() => self.take_shard(&document, images, names),
            "shard" => self.problems.push(format!(
                "ConfigMap {name}: its shard document has no shard number"
            )),
            other => self.problems.push(format!(
                "ConfigMap {name} holds a document of kind {other:?}"
            )),
        }
    }

    fn take_shard(
        &mut self,
        document: &Parsed<'_>,
        images: &[(&String, Key, u16)],
        names: &[(&String, Key, u16)],
    ) {
        let in_shard = |s: &u16| document.shard == Some(u64::from(*s));
        let records = document.images.as_deref().unwrap_or_default();
        for (image, key, _) in images.iter().filter(|(_, _, s)| in_shard(s)) {
            let value = find_record(records, key, IMAGE_RECORD)
                .and_then(|code| code_value(code.as_bytes()))
                .and_then(|at| document.values.get(at));
            if let Some(facts) = value {
                self.images.insert((*image).clone(), facts.clone());
            }
        }
        let records = document.names.as_deref().unwrap_or_default();
        for (name, key, _) in names.iter().filter(|(_, _, s)| in_shard(s)) {
            let Some(record) = find_record(records, key, NAME_RECORD) else {
                continue;
            };
            let (class, flag) = record.split_at_checked(KEY_CHARS).unwrap_or((record, ""));
            self.names
                .insert((*name).clone(), (class.to_string(), flag == "s"));
        }
    }

    /// The facts of each wanted image: found; in a ConfigMap that could not
    /// be read; or not published yet.
    pub fn image_facts(&self, wanted: &[String]) -> SortedMap<String, ImageFacts> {
        wanted
            .iter()
            .map(|image| {
                let facts = match (self.images.get(image), self.problems.first()) {
                    (Some(found), _) => found.clone(),
                    (None, Some(problem)) => ImageFacts::LookupFailed(problem.clone()),
                    (None, None) => ImageFacts::Unpublished,
                };
                (image.clone(), facts)
            })
            .collect()
    }

    /// What the facts say of the syncer at `now` (seconds since the epoch).
    pub fn syncer(&self, now: u64) -> SyncerState {
        match &self.cluster {
            None => SyncerState::Unpublished,
            Some(Cluster {
                syncer: Some(heartbeat),
                ..
            }) => heartbeat.state(now),
            Some(_) => SyncerState::Rendered,
        }
    }

    /// A RuntimeClass as published; `None` when the facts do not say (not
    /// published, or created since: ask the cluster).
    pub fn runtime_class(&self, name: &str) -> Option<RuntimeClassFacts> {
        let published = self.cluster.as_ref()?.runtime_classes.as_ref()?;
        published
            .get(name)
            .map(|class| RuntimeClassFacts::Found(class.clone()))
    }

    /// The node inventory: each class of nodes, apart from its class each
    /// node the pod selects by one of `names` (name or hostname) that the
    /// facts hold, and the capacity entries. The other nodes of a class are known to carry none of
    /// those; a name the facts do not hold may be any node's.
    /// `not_published` words the failure when there are no node facts.
    pub fn node_facts(&self, names: &[String], not_published: &str) -> NodeFacts {
        let Some(cluster) = &self.cluster else {
            return NodeFacts::LookupFailed(not_published.to_string());
        };
        let Some(classes) = &cluster.classes else {
            return NodeFacts::LookupFailed(not_published.to_string());
        };
        // A name looked up may be in a shard that could not be read.
        if let (false, Some(problem)) = (names.is_empty(), self.problems.first()) {
            return NodeFacts::LookupFailed(problem.clone());
        }
        // Each name found, in a class the document has; a name not found may
        // be a node the syncer has not published yet (seconds behind a new
        // node): it stays possible, so a DaemonSet's first pod on a new node
        // is never refused for it.
        let found: Vec<(&String, usize, bool)> = self
            .names
            .iter()
            .filter_map(|(name, (class, same))| {
                Some((name, classes.iter().position(|(id, _)| id == class)?, *same))
            })
            .collect();
        let known: Vec<String> = found.iter().map(|(name, _, _)| (*name).clone()).collect();
        let mut nodes: Vec<Node> = classes
            .iter()
            .map(|(_, class)| unnamed(class, &known, cluster.hostnames_are_names))
            .collect();
        for (name, at, hostname_is_name) in found {
            if let (Some(entry), Some((_, class))) = (nodes.get_mut(at), classes.get(at)) {
                entry.count = entry.count.saturating_sub(1);
                nodes.push(named(class, name, hostname_is_name));
            }
        }
        nodes.retain(|n| n.count > 0);
        nodes.extend(cluster.capacity.iter().cloned());
        NodeFacts::Listed(nodes)
    }
}

/// The nodes of a class not looked up by name: their names are none of
/// `found`, nor their hostnames when hostnames are names.
fn unnamed(class: &Node, found: &[String], hostnames_are_names: bool) -> Node {
    let mut node = class.clone();
    if hostnames_are_names {
        node.varying.retain(|key| key != HOSTNAME_LABEL);
    }
    node.unnamed = Some(found.to_vec());
    node
}

/// The node `name` of `class`.
fn named(class: &Node, name: &str, hostname_is_name: bool) -> Node {
    let mut node = class.clone();
    node.name = name.to_string();
    node.count = 1;
    node.unnamed = None;
    if hostname_is_name {
        node.varying.retain(|key| key != HOSTNAME_LABEL);
        node.labels
            .insert(HOSTNAME_LABEL.to_string(), name.to_string());
    } else if !node.varying.iter().any(|key| key == HOSTNAME_LABEL) {
        node.varying.push(HOSTNAME_LABEL.to_string());
    }
    node
}
