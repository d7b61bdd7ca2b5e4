//! The two documents of the published facts, version 1: what the `index`
//! key of each ConfigMap holds.
//!
//! The cluster document (`"kind": "cluster"`):
//!
//! ```json
//! {"version": 1, "kind": "cluster", "shards": 128, "nodes": 10000,
//!  "hostnamesAreNames": true,
//!  "classes": [{"id": "k3Jd9a0Qz1cA", "count": 2833, "name": "ip-10-0-0-1...",
//!               "os": "linux", "architecture": "amd64",
//!               "labels": "kubernetes.io/os=linux,topology.kubernetes.io/zone=us-west-2a,...",
//!               "taints": "os=windows:NoSchedule", "varying": ["kubernetes.io/hostname"]}],
//!  "runtimeClasses": {"windows-2022": {"handler": "...", "scheduling": {...}}},
//!  "syncer": {"at": 1795766400, "every": 20}}
//! ```
//!
//! `syncer` is the facts syncer's heartbeat ([`Heartbeat`]): renewed while
//! it runs, absent from what `facts render` writes. `stale` (absent when
//! empty) names the kinds the syncer could not read for longer than its
//! bound, whose published facts are the last it read:
//! `"stale": [{"kind": "Node", "since": 1795766100}]` ([`Stale`]).
//!
//! `nodes` and `classes` are absent when no node facts were published,
//! `runtimeClasses` when no RuntimeClasses were. `capacity` lists what
//! can be launched for a pending pod (a Karpenter NodePool, per OS, build
//! and architecture) as classes with a `source` and no count, and the
//! NodePools that launch nothing now with `blocked` saying why:
//!
//! ```json
//! "capacity": [{"source": "NodePool windows2022", "os": "windows",
//!               "windowsBuild": "10.0.20348", "architecture": "amd64",
//!               "labels": "karpenter.sh/nodepool=windows2022,...", "varying": [...]},
//!              {"source": "NodePool windows2025",
//!               "blocked": "its EC2NodeClass windows2025 reports AMIsReady is False (AMINotFound)"}]
//! ``` A class's labels are
//! written as `kubectl label` takes them (`key=value,...`) and its taints
//! as `kubectl taint` does (`key=value:Effect`, `key:Effect`): neither
//! syntax allows a comma, an equals sign or a quote in a key or value, so
//! the document holds few characters JSON escapes, and reads fast.
//!
//! A shard document (`"kind": "shard"`) holds the images and node names
//! whose key falls in its shard:
//!
//! ```json
//! {"version": 1, "kind": "shard", "shards": 128, "shard": 17, "part": 0,
//!  "values": [["linux/amd64", "linux/arm64"], {"lookupFailed": "..."}],
//!  "images": "<key><code><key><code>...", "names": "<key><class><flag>..."}
//! ```
//!
//! `images` is a run of 14-character records sorted by key: a 12-character
//! key ([`Key`]) and a 2-character code, the index of its entry in `values`
//! in base64url. A value is an image's platforms, each written as
//! containerd's `platforms.FormatAll` writes it (`os(osVersion)/arch`), or
//! the lookup failure the syncer met. `names` is a run of 25-character
//! records sorted by key: the key of a node name, its class's id, and `s`
//! when the node's hostname label is its name, else `n`. Records hold no
//! character JSON escapes, so a reader finds one by binary search.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use crate::input::capacity::DECIDED_AT_LAUNCH;
use crate::input::facts::{ClusterRuntimeClass, ImageFacts, Platform, SyncerState};
use crate::input::node::Node;
use crate::input::published::key::{Key, KEY_CHARS};
use crate::vocab::ordered::{SortedMap, StringMap};
use crate::vocab::taint::Taint;

/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Characters of an image record: key and value code.
pub const IMAGE_RECORD: usize = KEY_CHARS + 2;

/// Characters of a name record: key, class id and flag.
pub const NAME_RECORD: usize = 2 * KEY_CHARS + 1;

/// The most values one shard part holds: what a 2-character code counts.
pub const MAX_VALUES: usize = 64 * 64;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A published document, either kind; the fields of the other kind are empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document<'a> {
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// `cluster` or `shard`.
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    /// How many shards the facts are spread over.
    pub shards: u16,
    /// Cluster: how many nodes there are; absent without node facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Cluster: whether every node's hostname label is its name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hostnames_are_names: bool,
    /// Cluster: the node classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<PublishedClass>,
    /// Cluster: what can be launched on demand, and what cannot now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<PublishedCapacity>,
    /// Cluster: every RuntimeClass; absent when none were published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_classes: Option<SortedMap<String, ClusterRuntimeClass>>,
    /// Cluster: the facts syncer's last report; absent when no syncer
    /// wrote the facts (`facts render`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncer: Option<Heartbeat>,
    /// Cluster: the kinds the syncer could not read for longer than its
    /// bound, whose facts are its last known ones; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<Stale>,
    /// Shard: its number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u16>,
    /// Shard: which part of it, when it is too big for one ConfigMap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub part: u16,
    /// Shard: the distinct image facts its records point at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<PublishedValue>,
    /// Shard: the image records.
    #[serde(default, borrow, skip_serializing_if = "str::is_empty")]
    pub images: Cow<'a, str>,
    /// Shard: the node name records.
    #[serde(default, borrow, skip_serializing_if = "str::is_empty")]
    pub names: Cow<'a, str>,
}

/// The facts syncer's report, renewed every `every` seconds while it runs
/// and can publish: readers tell from it whether a fact missing now will
/// be published within seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// When it was renewed, in seconds since the Unix epoch.
    pub at: u64,
    /// How often it is renewed, in seconds.
    pub every: u32,
}

/// A kind of the cluster the syncer could not read for longer than its
/// `--stale-after`: what it last read is still published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stale {
    /// The kind (`Node`, `Pod`, `NodePool`, ...).
    pub kind: String,
    /// Since when it could not be read, in seconds since the Unix epoch.
    pub since: u64,
}

/// How many renewal intervals may pass before a syncer counts as stopped.
pub const MISSED_HEARTBEATS: u64 = 3;

impl Heartbeat {
    /// What the heartbeat says at `now` (seconds since the epoch). A
    /// heartbeat ahead of `now` (clocks apart) counts as just renewed.
    pub fn state(&self, now: u64) -> SyncerState {
        let age = now.saturating_sub(self.at);
        if age <= MISSED_HEARTBEATS * u64::from(self.every.max(1)) {
            SyncerState::Alive { age }
        } else {
            SyncerState::Stale { age }
        }
    }
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

/// What a class or a capacity entry says of its nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedNodes {
    /// `linux` or `windows`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// `10.0.N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_build: Option<String>,
    /// `amd64`, `arm64`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// The labels its nodes share, `key=value,...`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub labels: String,
    /// Their taints, `key=value:Effect,...`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub taints: String,
    /// The label keys whose values differ between its nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub varying: Vec<String>,
}

impl PublishedNodes {
    /// What `node` says, with `varying` as written.
    fn of(node: &Node, varying: Vec<String>) -> PublishedNodes {
        PublishedNodes {
            os: node.os.clone(),
            windows_build: node.windows_build.clone(),
            architecture: node.architecture.clone(),
            labels: format_labels(&node.labels),
            taints: format_taints(&node.taints),
            varying,
        }
    }
}

/// A class as the cluster document writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedClass {
    /// Its id, which name records point at.
    pub id: String,
    /// How many nodes it has.
    pub count: u32,
    /// Its first node by name.
    pub name: String,
    /// What its nodes are.
    #[serde(flatten)]
    pub nodes: PublishedNodes,
}

impl PublishedClass {
    /// The class of `node` (a class entry) under `id`.
    pub fn of(id: &Key, node: &Node) -> PublishedClass {
        PublishedClass {
            id: id.to_string(),
            count: node.count,
            name: node.name.clone(),
            nodes: PublishedNodes::of(node, node.varying.clone()),
        }
    }
}

/// Capacity as the cluster document writes it: nodes a NodePool launches,
/// with no count and no name; `varying` holds the label keys that differ
/// between the NodePools merged here, besides those every launched node
/// leaves undecided (`capacity::DECIDED_AT_LAUNCH`, not written).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedCapacity {
    /// What launches them: `NodePool windows2022`.
    pub source: String,
    /// Why it launches nothing now; absent when it launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// What its nodes are.
    #[serde(flatten)]
    pub nodes: PublishedNodes,
}

impl PublishedCapacity {
    /// The published form of a launchable entry; `None` for a node.
    pub fn of(node: &Node) -> Option<PublishedCapacity> {
        // What every launched node leaves undecided is not written: the
        // reader adds it back.
        let varying = node
            .varying
            .iter()
            .filter(|k| !DECIDED_AT_LAUNCH.contains(&k.as_str()))
            .cloned()
            .collect();
        Some(PublishedCapacity {
            source: node.launchable.clone()?,
            blocked: node.blocked.clone(),
            nodes: PublishedNodes::of(node, varying),
        })
    }
}

/// One value of a shard: an image's platforms or its failed lookup.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedValue(pub ImageFacts);

impl Serialize for PublishedValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            ImageFacts::Platforms(platforms) => {
                let mut seq = serializer.serialize_seq(Some(platforms.len()))?;
                for platform in platforms {
                    seq.serialize_element(&format_platform(platform))?;
                }
                seq.end()
            }
            ImageFacts::LookupFailed(error) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("lookupFailed", error)?;
                map.end()
            }
            // Never published: an image not resolved has no record.
            ImageFacts::Unpublished => serializer.serialize_unit(),
        }
    }
}

impl<'de> Deserialize<'de> for PublishedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = PublishedValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of platforms or {\"lookupFailed\": ...}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut platforms = Vec::new();
        while let Some(text) = seq.next_element::<Cow<'de, str>>()? {
            platforms.push(parse_platform(&text));
        }
        Ok(PublishedValue(ImageFacts::Platforms(platforms)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut error = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "lookupFailed" {
                error = Some(map.next_value::<String>()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        let error = error.ok_or_else(|| de::Error::missing_field("lookupFailed"))?;
        Ok(PublishedValue(ImageFacts::LookupFailed(error)))
    }
}

/// `os(osVersion)/architecture`, the parts it has (containerd
/// `platforms.FormatAll`, without variants).
pub fn format_platform(platform: &Platform) -> String {
    let mut text = platform.os.clone();
    if let Some(version) = &platform.os_version {
        text.push('(');
        text.push_str(version);
        text.push(')');
    }
    if let Some(arch) = &platform.architecture {
        text.push('/');
        text.push_str(arch);
    }
    text
}

/// A platform written by [`format_platform`]; a variant after the
/// architecture is dropped.
pub fn parse_platform(text: &str) -> Platform {
    let (os_part, arch) = match text.split_once('/') {
        Some((os, rest)) => (os, Some(rest.split('/').next().unwrap_or(rest))),
        None => (text, None),
    };
    let (os, version) = match os_part.split_once('(') {
        Some((os, rest)) => (os, Some(rest.trim_end_matches(')'))),
        None => (os_part, None),
    };
    Platform {
        os: os.to_string(),
        os_version: version.filter(|v| !v.is_empty()).map(str::to_string),
        architecture: arch.filter(|a| !a.is_empty()).map(str::to_string),
    }
}

/// Labels as `kubectl label` takes them: `key=value,key=value`.
pub fn format_labels(labels: &StringMap) -> String {
    let mut text = String::new();
    for (key, value) in labels {
        if !text.is_empty() {
            text.push(',');
        }
        text.push_str(key);
        text.push('=');
        text.push_str(value);
    }
    text
}

/// Labels written by [`format_labels`]; an entry without `=` is left out.
pub fn parse_labels(text: &str) -> StringMap {
    text.split(',')
        .filter_map(|entry| entry.split_once('='))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// Taints as `kubectl taint` takes them: `key=value:Effect`, or
/// `key:Effect` without a value.
pub fn format_taints(taints: &[Taint]) -> String {
    let written: Vec<String> = taints
        .iter()
        .map(|t| match t.value.as_str() {
            "" => format!("{}:{}", t.key, t.effect),
            value => format!("{}={value}:{}", t.key, t.effect),
        })
        .collect();
    written.join(",")
}

/// Taints written by [`format_taints`]; one without an effect is left out.
pub fn parse_taints(text: &str) -> Vec<Taint> {
    text.split(',')
        .filter_map(|entry| {
            let (spec, effect) = entry.rsplit_once(':')?;
            let (key, value) = spec.split_once('=').unwrap_or((spec, ""));
            Some(Taint {
                key: key.to_string(),
                value: value.to_string(),
                effect: effect.to_string(),
            })
        })
        .filter(|t| !t.key.is_empty() && !t.effect.is_empty())
        .collect()
}

/// The 2-character code of value `index`.
pub fn value_code(index: usize) -> [u8; 2] {
    let at = |i: usize| ALPHABET.get(i % 64).copied().unwrap_or(b'A');
    [at(index / 64), at(index)]
}

/// The value index a code names.
pub fn code_value(code: &[u8]) -> Option<usize> {
    let index = |b: &u8| ALPHABET.iter().position(|a| a == b);
    match code {
        [high, low] => Some(index(high)? * 64 + index(low)?),
        _ => None,
    }
}

/// The record of `key` in a run of `width`-character records sorted by
/// key, without the key.
pub fn find_record<'r>(records: &'r str, key: &Key, width: usize) -> Option<&'r str> {
    if width <= KEY_CHARS || !records.len().is_multiple_of(width) {
        return None;
    }
    let wanted = key.as_str();
    let (mut low, mut high) = (0, records.len() / width);
    while low < high {
        let middle = low + (high - low) / 2;
        let record = records.get(middle * width..(middle + 1) * width)?;
        let (found, rest) = record.split_at_checked(KEY_CHARS)?;
        match found.cmp(wanted) {
            std::cmp::Ordering::Equal => return Some(rest),
            std::cmp::Ordering::Less => low = middle + 1,
            std::cmp::Ordering::Greater => high = middle,
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::vocab::ordered::StringMap;

    #[test]
    fn platforms_are_written_as_containerd_formats_them_and_read_back() {
        // containerd/platforms FormatAll: "windows(10.0.17763.1)/amd64".
        let windows = Platform {
            os: "windows".into(),
            os_version: Some("10.0.20348.2700".into()),
            architecture: Some("amd64".into()),
        };
        assert_eq!(format_platform(&windows), "windows(10.0.20348.2700)/amd64");
        assert_eq!(parse_platform("windows(10.0.20348.2700)/amd64"), windows);
        let linux = parse_platform("linux/arm64/v8");
        assert_eq!(linux.architecture.as_deref(), Some("arm64"));
        assert_eq!(linux.os_version, None);
        let bare = parse_platform("linux");
        assert_eq!((bare.os.as_str(), bare.architecture), ("linux", None));
    }

    /// kubectl's syntaxes: `kubectl label node n k=v`, `kubectl taint node
    /// n key=value:Effect` and `key:Effect` (k8s.io/kubectl
    /// pkg/cmd/taint, `parseTaints`).
    #[test]
    fn labels_and_taints_are_written_as_kubectl_takes_them() {
        let labels: StringMap = [("kubernetes.io/os", "windows"), ("tier", "")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(format_labels(&labels), "kubernetes.io/os=windows,tier=");
        assert_eq!(parse_labels(&format_labels(&labels)), labels);
        let taints = vec![
            Taint {
                key: "os".into(),
                value: "windows".into(),
                effect: "NoSchedule".into(),
            },
            Taint {
                key: "node.kubernetes.io/not-ready".into(),
                value: String::new(),
                effect: "NoExecute".into(),
            },
        ];
        let text = format_taints(&taints);
        assert_eq!(
            text,
            "os=windows:NoSchedule,node.kubernetes.io/not-ready:NoExecute"
        );
        assert_eq!(parse_taints(&text), taints);
        // Negative: what is not a label or a taint is left out.
        assert!(parse_labels("nokey").is_empty());
        assert!(parse_taints("os=windows").is_empty());
        assert!(parse_labels("").is_empty() && parse_taints("").is_empty());
    }

    #[test]
    fn values_read_back_and_codes_name_every_index() {
        let value = PublishedValue(ImageFacts::Platforms(vec![parse_platform("linux/amd64")]));
        let text = serde_json::to_string(&value).unwrap();
        assert_eq!(text, r#"["linux/amd64"]"#);
        assert_eq!(
            serde_json::from_str::<PublishedValue>(&text).unwrap(),
            value
        );
        let failed: PublishedValue =
            serde_json::from_str(r#"{"lookupFailed": "timeout", "future": 1}"#).unwrap();
        assert_eq!(failed.0, ImageFacts::LookupFailed("timeout".into()));
        assert!(serde_json::from_str::<PublishedValue>(r#"{"other": 1}"#).is_err());
        for index in [0, 1, 63, 64, 4095] {
            assert_eq!(code_value(&value_code(index)), Some(index));
        }
        assert_eq!(code_value(b"A"), None);
    }

    #[test]
    fn records_are_found_by_binary_search_and_only_whole() {
        let mut keys: Vec<Key> = (0..50).map(|i| Key::of(&format!("img-{i}")).0).collect();
        keys.sort();
        let records: String = keys
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{k}{}", String::from_utf8_lossy(&value_code(i))))
            .collect();
        for (i, key) in keys.iter().enumerate() {
            let rest = find_record(&records, key, IMAGE_RECORD).unwrap();
            assert_eq!(code_value(rest.as_bytes()), Some(i));
        }
        assert_eq!(
            find_record(&records, &Key::of("absent").0, IMAGE_RECORD),
            None
        );
        // A cut run is not read.
        assert_eq!(find_record(&records[1..], &keys[0], IMAGE_RECORD), None);
    }
}
