//! Reading the published facts without building JSON trees: a list answer
//! read down to each ConfigMap's name and `data.index`, and a document read
//! into what the request wants, the rest skipped unread. A request reads a
//! few kilobytes this way on every admission, so only what it uses is kept:
//! the classes' labels and taints only for the full check, only the
//! RuntimeClasses it names, the image and name records borrowed as they are.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::input::capacity::DECIDED_AT_LAUNCH;
use crate::input::facts::{ClusterRuntimeClass, ImageFacts};
use crate::input::host_answers;
use crate::input::node::{Node, ALL_LABELS};
use crate::input::published::document::{parse_labels, parse_taints, Heartbeat, PublishedValue};
use crate::vocab::ordered::SortedMap;

/// A string, borrowed from the text when it has no escapes.
pub(crate) struct Text<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(text.to_owned())))
    }
}

/// One item of a ConfigMap list: its name and its `data.index`.
pub(crate) type Item<'a> = (Cow<'a, str>, Option<Cow<'a, str>>);

/// The items of a ConfigMap list answer (`{"items": [...]}`).
pub(crate) fn list_items(answer: &[u8]) -> Result<Vec<Item<'_>>, serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_slice(answer);
    let items = ListSeed.deserialize(&mut reader)?;
    reader.end()?;
    Ok(items)
}

struct ListSeed;

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = Vec<Item<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ListSeed {
    type Value = Vec<Item<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list with items")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut items = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0 == "items" {
                items = Some(map.next_value_seed(ItemsSeed)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        items.ok_or_else(|| de::Error::missing_field("items"))
    }
}

struct ItemsSeed;

impl<'de> DeserializeSeed<'de> for ItemsSeed {
    type Value = Vec<Item<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed {
    type Value = Vec<Item<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of ConfigMaps")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ItemSeed)? {
            items.push(item);
        }
        Ok(items)
    }
}

struct ItemSeed;

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Item<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed {
    type Value = Item<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a ConfigMap")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut index) = (None, None);
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.0.as_ref() {
                "metadata" => name = map.next_value_seed(FieldSeed("name"))?,
                "data" => index = map.next_value_seed(FieldSeed("index"))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((name.unwrap_or(Cow::Borrowed("(unnamed)")), index))
    }
}

/// One string field of an object, the others skipped.
struct FieldSeed(&'static str);

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Option<Cow<'de, str>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with {}", self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0 == self.0 {
                found = Some(map.next_value::<Text<'de>>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// What reading a document keeps.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keep<'w> {
    /// The classes' labels, taints and varying keys (the full check);
    /// without them a class has only its OS, build and architecture.
    pub labels: bool,
    /// The RuntimeClasses to read; the others are skipped.
    pub runtime_classes: &'w [String],
}

/// A document of either kind, as read.
#[derive(Debug, Default)]
pub(crate) struct Parsed<'t> {
    pub version: u64,
    pub kind: Cow<'t, str>,
    pub shards: u64,
    /// Cluster: the node count, when node facts are published.
    pub nodes: Option<u64>,
    pub hostnames_are_names: bool,
    pub classes: Vec<(String, Node)>,
    /// Cluster: the launchable entries.
    pub capacity: Vec<Node>,
    /// Cluster: the kept RuntimeClasses, when any were published.
    pub runtime_classes: Option<SortedMap<String, ClusterRuntimeClass>>,
    /// Cluster: the syncer's heartbeat, when one writes the facts.
    pub syncer: Option<Heartbeat>,
    pub shard: Option<u64>,
    pub values: Vec<ImageFacts>,
    pub images: Option<Cow<'t, str>>,
    pub names: Option<Cow<'t, str>>,
}

/// Reads one document (an `index` text).
pub(crate) fn document<'t>(
    index: &'t str,
    keep: Keep<'_>,
) -> Result<Parsed<'t>, serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_slice(index.as_bytes());
    let parsed = DocumentSeed(keep).deserialize(&mut reader)?;
    reader.end()?;
    Ok(parsed)
}

struct DocumentSeed<'w>(Keep<'w>);

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = Parsed<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = Parsed<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a published facts document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut parsed = Parsed::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.0.as_ref() {
                "version" => parsed.version = map.next_value()?,
                "kind" => parsed.kind = map.next_value::<Text<'de>>()?.0,
                "shards" => parsed.shards = map.next_value()?,
                "nodes" => parsed.nodes = map.next_value()?,
                "hostnamesAreNames" => parsed.hostnames_are_names = map.next_value()?,
                "classes" => parsed.classes = map.next_value_seed(ClassesSeed(self.0.labels))?,
                "capacity" => {
                    let entries = map.next_value_seed(ClassesSeed(self.0.labels))?;
                    parsed.capacity = entries
                        .into_iter()
                        .map(|(_, node)| launched(node))
                        .collect();
                }
                "runtimeClasses" => {
                    parsed.runtime_classes = Some(map.next_value_seed(RuntimeClassesSeed(self.0))?)
                }
                "syncer" => parsed.syncer = map.next_value()?,
                "shard" => parsed.shard = Some(map.next_value()?),
                "values" => {
                    let values: Vec<PublishedValue> = map.next_value()?;
                    parsed.values = values.into_iter().map(|v| v.0).collect();
                }
                "images" => parsed.images = Some(map.next_value::<Text<'de>>()?.0),
                "names" => parsed.names = Some(map.next_value::<Text<'de>>()?.0),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(parsed)
    }
}

struct ClassesSeed(bool);

impl<'de> DeserializeSeed<'de> for ClassesSeed {
    type Value = Vec<(String, Node)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ClassesSeed {
    type Value = Vec<(String, Node)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of node classes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut classes = Vec::new();
        while let Some(class) = seq.next_element_seed(ClassSeed(self.0))? {
            classes.push(class);
        }
        Ok(classes)
    }
}

/// A capacity entry as read, with what every launched node leaves
/// undecided (not written) back among its varying keys.
fn launched(mut node: Node) -> Node {
    if !node.varying.iter().any(|k| k == ALL_LABELS) {
        for key in DECIDED_AT_LAUNCH {
            if !node.labels.contains_key(*key) && !node.varying.iter().any(|k| k == key) {
                node.varying.push((*key).to_string());
            }
        }
        node.varying.sort();
    }
    node
}

/// One class, or one capacity entry (with a `source`, and a `blocked`
/// reason when it launches nothing); without labels, its label keys are
/// all unknown.
struct ClassSeed(bool);

impl<'de> DeserializeSeed<'de> for ClassSeed {
    type Value = (String, Node);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ClassSeed {
    type Value = (String, Node);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a node class")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut id, mut node) = (String::new(), Node::default());
        let text = |t: Text<'de>| Some(t.0.into_owned());
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match (key.0.as_ref(), self.0) {
                ("id", _) => id = map.next_value::<Text<'de>>()?.0.into_owned(),
                ("count", _) => node.count = map.next_value()?,
                ("name", _) => node.name = map.next_value::<Text<'de>>()?.0.into_owned(),
                ("os", _) => node.os = text(map.next_value()?),
                ("windowsBuild", _) => node.windows_build = text(map.next_value()?),
                ("architecture", _) => node.architecture = text(map.next_value()?),
                ("labels", true) => node.labels = parse_labels(&map.next_value::<Text<'de>>()?.0),
                ("taints", true) => node.taints = parse_taints(&map.next_value::<Text<'de>>()?.0),
                ("varying", true) => node.varying = map.next_value()?,
                ("source", _) => {
                    let source = map.next_value::<Text<'de>>()?.0.into_owned();
                    node.name = source.clone();
                    node.launchable = Some(source);
                    node.unnamed = Some(Vec::new());
                }
                ("blocked", _) => node.blocked = text(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !self.0 {
            node.varying = vec![ALL_LABELS.to_string()];
        }
        Ok((id, node))
    }
}

struct RuntimeClassesSeed<'w>(Keep<'w>);

impl<'de> DeserializeSeed<'de> for RuntimeClassesSeed<'_> {
    type Value = SortedMap<String, ClusterRuntimeClass>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RuntimeClassesSeed<'_> {
    type Value = SortedMap<String, ClusterRuntimeClass>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of RuntimeClasses")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = SortedMap::new();
        while let Some(name) = map.next_key::<Text<'de>>()? {
            if self.0.runtime_classes.iter().any(|w| *w == name.0) {
                let class = map.next_value::<Value>()?;
                kept.insert(name.0.into_owned(), host_answers::runtime_class(&class));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(kept)
    }
}
