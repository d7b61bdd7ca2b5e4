//! The image facts ConfigMaps of earlier releases, which the doors still
//! read (`--facts`, the playground): each carries the label
//! [`IMAGE_FACTS_LABEL`]` = "true"` and one data key, [`IMAGE_FACTS_KEY`],
//! whose text is a facts document in the core's own form:
//! `{"images": {"<reference>": {"platforms": [...]} | {"lookupFailed": "..."}}}`.
//! The syncer of this release replaces them with the published facts of
//! this module's parent, and deletes them.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::input::facts::ImageFacts;
use crate::input::published::parse::Text;
use crate::vocab::ordered::SortedMap;

/// The label every image facts ConfigMap carries, with the value `"true"`.
pub const IMAGE_FACTS_LABEL: &str = "os-placement.kubewarden.io/image-facts";

/// The label selector that finds them.
pub const IMAGE_FACTS_SELECTOR: &str = "os-placement.kubewarden.io/image-facts=true";

/// The data key holding the facts document.
pub const IMAGE_FACTS_KEY: &str = "images.json";

/// The names of the ConfigMaps: this prefix, `-`, the shard number.
pub const CONFIG_MAP_PREFIX: &str = "os-placement-image-facts";

/// Why a ConfigMap's facts cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishedProblem {
    /// The list answer has no `items`.
    NoItems,
    /// A ConfigMap without the data key.
    NoFacts {
        /// The ConfigMap's name.
        config_map: String,
    },
    /// The data key's text is not a facts document.
    NotFacts {
        /// The ConfigMap's name.
        config_map: String,
        /// The parser's words.
        error: String,
    },
}

impl fmt::Display for PublishedProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishedProblem::NoItems => f.write_str("the ConfigMap list has no items"),
            PublishedProblem::NoFacts { config_map } => {
                write!(f, "ConfigMap {config_map} has no {IMAGE_FACTS_KEY}")
            }
            PublishedProblem::NotFacts { config_map, error } => write!(
                f,
                "ConfigMap {config_map}: {IMAGE_FACTS_KEY} is not a facts document: {error}"
            ),
        }
    }
}

/// The images one image facts ConfigMap carries.
pub fn config_map_images(
    config_map: &Value,
) -> Result<SortedMap<String, ImageFacts>, PublishedProblem> {
    let (name, text) = facts_text(config_map)?;
    // Bytes, not text: the one JSON reader the module already carries.
    serde_json::from_slice::<PublishedImages>(text.as_bytes())
        .map(|facts| facts.images)
        .map_err(|e| PublishedProblem::NotFacts {
            config_map: name,
            error: e.to_string(),
        })
}

/// The `wanted` images one image facts ConfigMap carries; the others are
/// skipped unread, so a request pays for the images it names, not for
/// every image of the cluster.
fn wanted_in(
    config_map: &Value,
    wanted: &[String],
) -> Result<Vec<(String, ImageFacts)>, PublishedProblem> {
    let (name, text) = facts_text(config_map)?;
    let mut reader = serde_json::Deserializer::from_slice(text.as_bytes());
    let document = WantedSeed {
        wanted,
        level: Level::Document,
    };
    let read = document
        .deserialize(&mut reader)
        .and_then(|images| reader.end().map(|()| images));
    read.map_err(|e| PublishedProblem::NotFacts {
        config_map: name,
        error: e.to_string(),
    })
}

/// A ConfigMap's name and its facts text.
fn facts_text(config_map: &Value) -> Result<(String, &str), PublishedProblem> {
    let name = config_map
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)")
        .to_string();
    match config_map
        .get("data")
        .and_then(|data| data.get(IMAGE_FACTS_KEY))
        .and_then(Value::as_str)
    {
        Some(text) => Ok((name, text)),
        None => Err(PublishedProblem::NoFacts { config_map: name }),
    }
}

/// Reads a facts document (`Level::Document`) down to its `images` map
/// (`Level::Images`), keeping the wanted entries; every other value is
/// skipped unread.
#[derive(Clone, Copy)]
struct WantedSeed<'w> {
    wanted: &'w [String],
    level: Level,
}

#[derive(Clone, Copy)]
enum Level {
    Document,
    Images,
}

impl<'de> DeserializeSeed<'de> for WantedSeed<'_> {
    type Value = Vec<(String, ImageFacts)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for WantedSeed<'_> {
    type Value = Vec<(String, ImageFacts)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.level {
            Level::Document => "a facts document",
            Level::Images => "a map of image references to their facts",
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = Vec::new();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match self.level {
                Level::Document if key.0 == "images" => {
                    let images = WantedSeed {
                        level: Level::Images,
                        ..self
                    };
                    kept = map.next_value_seed(images)?;
                }
                Level::Images if self.wanted.iter().any(|image| *image == key.0) => {
                    kept.push((key.0.into_owned(), map.next_value::<ImageFacts>()?));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(kept)
    }
}

/// A facts document as a ConfigMap publishes it: only its images are read
/// (the syncer writes nothing else), so the module carries no reader for
/// the rest of [`Facts`](crate::Facts).
#[derive(Deserialize)]
struct PublishedImages {
    #[serde(default)]
    images: SortedMap<String, ImageFacts>,
}

/// What a list of image facts ConfigMaps (a `list_resources_by_namespace`
/// answer) says about each `wanted` image: its published facts; not
/// published yet ([`ImageFacts::Unpublished`]); or, when the list or one of
/// its ConfigMaps cannot be read, a failed lookup naming why.
pub fn wanted_images(list: &Value, wanted: &[String]) -> SortedMap<String, ImageFacts> {
    let failed = |problem: &PublishedProblem| ImageFacts::LookupFailed(problem.to_string());
    let Some(items) = list.get("items").and_then(Value::as_array) else {
        return each(wanted, failed(&PublishedProblem::NoItems));
    };
    let mut published = Vec::new();
    let mut unreadable = None;
    for item in items {
        match wanted_in(item, wanted) {
            Ok(images) => published.extend(images),
            Err(problem) => unreadable = Some(problem),
        }
    }
    wanted
        .iter()
        .map(|image| {
            let found = published.iter().position(|(name, _)| name == image);
            let facts = match (found.map(|at| published.swap_remove(at).1), &unreadable) {
                (Some(found), _) => found,
                // It may be in the shard that cannot be read.
                (None, Some(problem)) => failed(problem),
                (None, None) => ImageFacts::Unpublished,
            };
            (image.clone(), facts)
        })
        .collect()
}

/// The same facts for every wanted image.
fn each(wanted: &[String], facts: ImageFacts) -> SortedMap<String, ImageFacts> {
    wanted
        .iter()
        .map(|image| (image.clone(), facts.clone()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::input::facts::Platform;
    use serde_json::json;

    fn windows(version: &str) -> ImageFacts {
        ImageFacts::Platforms(vec![Platform {
            os: "windows".into(),
            os_version: Some(version.into()),
            architecture: Some("amd64".into()),
        }])
    }

    fn images() -> SortedMap<String, ImageFacts> {
        SortedMap::from([
            ("corp/win:1".to_string(), windows("10.0.20348.1")),
            (
                "corp/down:1".to_string(),
                ImageFacts::LookupFailed("timeout".into()),
            ),
        ])
    }

    /// One ConfigMap of the earlier format, as its syncer wrote it.
    fn config_maps(images: &SortedMap<String, ImageFacts>, namespace: &str) -> Vec<Value> {
        let document = json!({ "images": images });
        vec![json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": format!("{CONFIG_MAP_PREFIX}-0"),
                "namespace": namespace,
                "labels": { IMAGE_FACTS_LABEL: "true" },
            },
            "data": { IMAGE_FACTS_KEY: document.to_string() },
        })]
    }

    fn list(items: Vec<Value>) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": items})
    }

    #[test]
    fn published_facts_are_read_back_as_they_were_written() {
        let maps = config_maps(&images(), "os-placement");
        assert_eq!(maps.len(), 1);
        let map = &maps[0];
        assert_eq!(map["metadata"]["name"], "os-placement-image-facts-0");
        assert_eq!(map["metadata"]["namespace"], "os-placement");
        assert_eq!(map["metadata"]["labels"][IMAGE_FACTS_LABEL], "true");
        assert_eq!(config_map_images(map).unwrap(), images());
        let wanted = ["corp/win:1", "corp/down:1", "corp/new:1"].map(String::from);
        let found = wanted_images(&list(maps), &wanted);
        assert_eq!(*found.get("corp/win:1").unwrap(), windows("10.0.20348.1"));
        assert_eq!(
            *found.get("corp/down:1").unwrap(),
            ImageFacts::LookupFailed("timeout".into())
        );
        assert_eq!(*found.get("corp/new:1").unwrap(), ImageFacts::Unpublished);
    }

    #[test]
    fn only_the_wanted_images_are_read_and_escaped_keys_still_match() {
        // Unwanted entries are skipped unread, whatever they hold; a key
        // written with JSON escapes (`\/`) is the same reference.
        let text = r#"{"images": {
            "corp/other:1": {"someFutureForm": [1, {"a": null}]},
            "corp\/win:1": {"platforms": [{"os": "windows", "osVersion": "10.0.20348.1", "architecture": "amd64"}]}
        }, "later": {"ignored": true}}"#;
        let shard = json!({"metadata": {"name": "s"}, "data": {IMAGE_FACTS_KEY: text}});
        let found = wanted_images(&list(vec![shard.clone()]), &["corp/win:1".to_string()]);
        assert_eq!(*found.get("corp/win:1").unwrap(), windows("10.0.20348.1"));
        // The same entry, wanted, is not a facts entry: the shard names it.
        let found = wanted_images(&list(vec![shard]), &["corp/other:1".to_string()]);
        assert!(
            matches!(found.get("corp/other:1").unwrap(), ImageFacts::LookupFailed(e) if e.starts_with("ConfigMap s: images.json is not a facts document")),
            "{found:?}"
        );
        // Text after the document is not a facts document either.
        let trailing = json!({"metadata": {"name": "t"}, "data": {IMAGE_FACTS_KEY: "{} x"}});
        let found = wanted_images(&list(vec![trailing]), &["x:1".to_string()]);
        assert!(
            matches!(found.get("x:1").unwrap(), ImageFacts::LookupFailed(_)),
            "{found:?}"
        );
    }

    #[test]
    fn an_unreadable_list_or_shard_is_a_failed_lookup_naming_it() {
        let wanted = ["corp/win:1".to_string()];
        let found = wanted_images(&json!({"errors": []}), &wanted);
        assert_eq!(
            *found.get("corp/win:1").unwrap(),
            ImageFacts::LookupFailed("the ConfigMap list has no items".into())
        );
        let broken = json!({"metadata": {"name": "os-placement-image-facts-1"},
            "data": {IMAGE_FACTS_KEY: "{\"images\": ["}});
        let good = config_maps(&images(), "facts").remove(0);
        let found = wanted_images(&list(vec![good.clone(), broken]), &wanted);
        // Found in the readable shard.
        assert_eq!(*found.get("corp/win:1").unwrap(), windows("10.0.20348.1"));
        let found = wanted_images(
            &list(vec![good, json!({"metadata": {"name": "odd"}, "data": {}})]),
            &["corp/other:1".to_string()],
        );
        assert_eq!(
            *found.get("corp/other:1").unwrap(),
            ImageFacts::LookupFailed("ConfigMap odd has no images.json".into())
        );
        let broken = json!({"metadata": {"name": "b"}, "data": {IMAGE_FACTS_KEY: "\"text\""}});
        let found = wanted_images(&list(vec![broken]), &["x:1".to_string()]);
        assert!(
            matches!(found.get("x:1").unwrap(), ImageFacts::LookupFailed(e) if e.starts_with("ConfigMap b: images.json is not a facts document")),
            "{found:?}"
        );
        // No ConfigMap at all: nothing is published yet.
        let found = wanted_images(&list(vec![]), &["x:1".to_string()]);
        assert_eq!(*found.get("x:1").unwrap(), ImageFacts::Unpublished);
    }
}
