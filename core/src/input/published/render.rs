//! The ConfigMaps that publish facts: one for the cluster (node classes,
//! RuntimeClasses) and one per shard that holds images or node names, each
//! under the object size limit. The facts syncer and `os-placement facts
//! render` both write exactly these.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::input::facts::{ClusterRuntimeClass, ImageFacts};
use crate::input::node::Node;
use crate::input::published::classes::{classify, NodeClasses};
use crate::input::published::document::{
    value_code, Document, Heartbeat, PublishedCapacity, PublishedClass, PublishedValue, Stale,
    FORMAT_VERSION, MAX_VALUES,
};
use crate::input::published::key::{Key, SHARDS};
use crate::input::published::launchable;
use crate::input::published::{
    cluster_config_map_name, shard_config_map_name, shard_label_value, CLUSTER_LABEL_VALUE,
    FACTS_LABEL, IMAGES_KEY, INDEX_KEY, RESOLVED_AT_KEY,
};
use crate::vocab::ordered::SortedMap;

/// The most bytes of data one ConfigMap carries: the API server refuses
/// objects over 1 MiB (etcd's request limit); the rest is metadata.
pub const PART_BYTES: usize = 700 * 1024;

/// What to publish.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    /// The cluster's Nodes, and the launchable entries of its NodePools
    /// (`capacity::from_objects`); `None` publishes no node facts.
    pub nodes: Option<&'a [Node]>,
    /// Every RuntimeClass; `None` publishes none.
    pub runtime_classes: Option<&'a SortedMap<String, ClusterRuntimeClass>>,
    /// Image facts by reference as written.
    pub images: &'a SortedMap<String, ImageFacts>,
    /// When the syncer resolved each image (seconds since the epoch), kept
    /// beside the facts for its next run.
    pub resolved_at: Option<&'a BTreeMap<String, u64>>,
    /// The syncer's heartbeat; `None` for facts no syncer keeps (`facts render`).
    pub syncer: Option<Heartbeat>,
    /// The kinds the syncer could not read for too long (`Document::stale`).
    pub stale: &'a [Stale],
}

static NO_IMAGES: SortedMap<String, ImageFacts> = SortedMap::new();

impl Default for Sources<'_> {
    fn default() -> Self {
        Sources {
            nodes: None,
            runtime_classes: None,
            images: &NO_IMAGES,
            resolved_at: None,
            syncer: None,
            stale: &[],
        }
    }
}

/// The ConfigMaps for `sources` in `namespace`: the cluster's first, then
/// the shards in order.
pub fn config_maps(sources: &Sources<'_>, namespace: &str) -> Vec<Value> {
    config_maps_within(sources, namespace, PART_BYTES)
}

/// As [`config_maps`], each ConfigMap's data within `part_bytes`.
pub(crate) fn config_maps_within(
    sources: &Sources<'_>,
    namespace: &str,
    part_bytes: usize,
) -> Vec<Value> {
    let classes = sources.nodes.map(classify);
    let mut maps = vec![cluster_config_map(&classes, sources, namespace)];
    let mut shards: BTreeMap<u16, Shard> = BTreeMap::new();
    for (image, facts) in sources.images {
        if matches!(facts, ImageFacts::Unpublished) {
            continue;
        }
        let (key, shard) = Key::of(image);
        shards.entry(shard).or_default().images.push(ImageEntry {
            key,
            image,
            facts: within_part(facts, part_bytes),
            resolved_at: sources
                .resolved_at
                .and_then(|times| times.get(image))
                .copied(),
        });
    }
    for member in classes.iter().flat_map(|c| &c.members) {
        let (key, shard) = Key::of(&member.name);
        let flag = if member.hostname_is_name { 's' } else { 'n' };
        let record = format!("{key}{}{flag}", member.class);
        shards.entry(shard).or_default().names.push((key, record));
    }
    for (number, shard) in shards {
        for (part, document) in shard.parts(number, part_bytes).into_iter().enumerate() {
            let part = u16::try_from(part).unwrap_or(u16::MAX);
            maps.push(shard_config_map(number, part, &document, namespace));
        }
    }
    maps
}

fn cluster_config_map(
    classes: &Option<NodeClasses>,
    sources: &Sources<'_>,
    namespace: &str,
) -> Value {
    let document = Document {
        version: FORMAT_VERSION,
        kind: "cluster".into(),
        shards: SHARDS,
        nodes: classes.as_ref().map(|c| c.total),
        hostnames_are_names: classes.as_ref().is_some_and(|c| c.hostnames_are_names),
        classes: classes
            .iter()
            .flat_map(|c| &c.classes)
            .map(|(id, node)| PublishedClass::of(id, node))
            .collect(),
        capacity: sources
            .nodes
            .map(launchable::group)
            .unwrap_or_default()
            .iter()
            .filter_map(PublishedCapacity::of)
            .collect(),
        runtime_classes: sources.runtime_classes.cloned(),
        syncer: sources.syncer,
        stale: sources.stale.to_vec(),
        ..Document::default()
    };
    let index = serde_json::to_string(&document).unwrap_or_default();
    config_map(
        cluster_config_map_name(),
        CLUSTER_LABEL_VALUE,
        json!({ INDEX_KEY: index }),
        namespace,
    )
}

fn shard_config_map(number: u16, part: u16, document: &PartDocument, namespace: &str) -> Value {
    let mut data = json!({ INDEX_KEY: document.index, IMAGES_KEY: document.images });
    if let (Some(times), Some(map)) = (&document.resolved_at, data.as_object_mut()) {
        map.insert(RESOLVED_AT_KEY.to_string(), Value::String(times.clone()));
    }
    config_map(
        shard_config_map_name(number, part),
        &shard_label_value(number),
        data,
        namespace,
    )
}

fn config_map(name: String, label: &str, data: Value, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": { FACTS_LABEL: label },
        },
        "data": data,
    })
}

/// An image's facts, or a failed lookup saying why they are too big to publish.
fn within_part(facts: &ImageFacts, part_bytes: usize) -> Cow<'_, ImageFacts> {
    let size = serde_json::to_string(&PublishedValue(facts.clone())).map_or(0, |t| t.len());
    if size > part_bytes / 4 {
        return Cow::Owned(ImageFacts::LookupFailed(format!(
            "its index lists too many platforms ({size} bytes of facts)"
        )));
    }
    Cow::Borrowed(facts)
}

struct ImageEntry<'a> {
    key: Key,
    image: &'a str,
    facts: Cow<'a, ImageFacts>,
    resolved_at: Option<u64>,
}

/// What falls in one shard.
#[derive(Default)]
struct Shard<'a> {
    images: Vec<ImageEntry<'a>>,
    names: Vec<(Key, String)>,
}

/// One part of a shard, written.
struct PartDocument {
    index: String,
    images: String,
    resolved_at: Option<String>,
}

/// A part being filled.
#[derive(Default)]
struct Part<'a> {
    values: Vec<PublishedValue>,
    value_text: Vec<String>,
    images: Vec<(Key, usize, &'a str, ImageFacts, Option<u64>)>,
    names: Vec<(Key, String)>,
    bytes: usize,
    limit: usize,
}

impl<'a> Part<'a> {
    fn new(limit: usize) -> Self {
        Part {
            limit,
            ..Part::default()
        }
    }

    /// Adds an image; `false` when it does not fit.
    fn add_image(&mut self, entry: &ImageEntry<'a>) -> bool {
        let value = PublishedValue(entry.facts.clone().into_owned());
        let text = serde_json::to_string(&value).unwrap_or_default();
        let existing = self.value_text.iter().position(|t| *t == text);
        // The record, the readable entry, and a new value's text.
        let size = 16 + 2 * entry.image.len() + 2 * text.len() + 24;
        let full = self.bytes + size > self.limit
            || (existing.is_none() && self.values.len() >= MAX_VALUES);
        if full && !self.is_empty() {
            return false;
        }
        let index = existing.unwrap_or_else(|| {
            self.values.push(value);
            self.value_text.push(text);
            self.values.len() - 1
        });
        self.images.push((
            entry.key,
            index,
            entry.image,
            entry.facts.clone().into_owned(),
            entry.resolved_at,
        ));
        self.bytes += size;
        true
    }

    fn is_empty(&self) -> bool {
        self.images.is_empty() && self.names.is_empty()
    }

    fn write(mut self, number: u16, part: u16) -> PartDocument {
        self.images.sort_by_key(|(key, ..)| *key);
        self.names.sort_by_key(|(key, _)| *key);
        let images: String = self
            .images
            .iter()
            .map(|(key, index, ..)| {
                format!("{key}{}", String::from_utf8_lossy(&value_code(*index)))
            })
            .collect();
        let names: String = self
            .names
            .iter()
            .map(|(_, record)| record.as_str())
            .collect();
        let document = Document {
            version: FORMAT_VERSION,
            kind: "shard".into(),
            shards: SHARDS,
            shard: Some(number),
            part,
            values: self.values,
            images: images.into(),
            names: names.into(),
            ..Document::default()
        };
        let readable: SortedMap<&str, &ImageFacts> = self
            .images
            .iter()
            .map(|(_, _, image, facts, _)| (*image, facts))
            .collect();
        let times: BTreeMap<&str, u64> = self
            .images
            .iter()
            .filter_map(|(_, _, image, _, at)| Some((*image, (*at)?)))
            .collect();
        PartDocument {
            index: serde_json::to_string(&document).unwrap_or_default(),
            images: json!({ "images": readable }).to_string(),
            resolved_at: (!times.is_empty())
                .then(|| serde_json::to_string(&times).unwrap_or_default()),
        }
    }
}

impl<'a> Shard<'a> {
    /// The shard's parts: as many as its images need, node names in the first.
    fn parts(mut self, number: u16, limit: usize) -> Vec<PartDocument> {
        self.images.sort_by(|a, b| a.image.cmp(b.image));
        let mut parts: Vec<Part<'a>> = vec![Part {
            bytes: self.names.len() * 26,
            names: std::mem::take(&mut self.names),
            ..Part::new(limit)
        }];
        for entry in &self.images {
            let fits = parts.last_mut().is_some_and(|part| part.add_image(entry));
            if !fits {
                let mut next = Part::new(limit);
                next.add_image(entry);
                parts.push(next);
            }
        }
        parts
            .into_iter()
            .enumerate()
            .map(|(part, filled)| filled.write(number, u16::try_from(part).unwrap_or(u16::MAX)))
            .collect()
    }
}
