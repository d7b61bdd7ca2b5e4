//! Facts published in the cluster, so admission reads them in constant
//! time whatever the cluster's size: the ConfigMaps the facts syncer
//! (`os-placement facts sync`) and `os-placement facts render` write in
//! one namespace, and the policy and every door read.
//!
//! Every ConfigMap carries the label [`FACTS_LABEL`]: `cluster` on the one
//! holding the node classes and RuntimeClasses ([`cluster_config_map_name`]),
//! `shard-N` on those holding the images and node names whose key falls in
//! shard N of [`SHARDS`] ([`key`]). A request lists, in one host call,
//! `os-placement.kubewarden.io/facts in (cluster,shard-N)` for the shard it
//! needs ([`selector`]): policy-server serves each selector from one
//! reflector, so there are at most `SHARDS + 1` of them, and an answer holds
//! the cluster's classes and one shard, a few kilobytes. Each ConfigMap's
//! `index` key holds a versioned [`document`]; shard ConfigMaps also keep
//! their images readable (`images`, the facts document form) and when the
//! syncer resolved them (`resolved-at`), which only people and the syncer read.
//!
//! The image facts ConfigMaps of earlier releases (label
//! [`IMAGE_FACTS_LABEL`], key `images.json`) are still read by the doors
//! ([`legacy`]); the syncer replaces them.

pub mod classes;
pub mod document;
pub mod key;
pub mod launchable;
pub mod legacy;
mod parse;
pub mod read;
pub mod render;

pub use classes::{classify, NodeClasses};
pub use document::{Heartbeat, Stale, FORMAT_VERSION, MISSED_HEARTBEATS};
pub use key::{shard_of, Key, SHARDS};
pub use legacy::{
    config_map_images, wanted_images, PublishedProblem, CONFIG_MAP_PREFIX, IMAGE_FACTS_KEY,
    IMAGE_FACTS_LABEL, IMAGE_FACTS_SELECTOR,
};
pub use read::{read, read_answers, Found, PublishedMap, Wanted};
pub use render::{config_maps, Sources};

/// The label every published ConfigMap carries: `cluster` or `shard-N`.
pub const FACTS_LABEL: &str = "os-placement.kubewarden.io/facts";

/// The label value of the cluster ConfigMap.
pub const CLUSTER_LABEL_VALUE: &str = "cluster";

/// The data key every published ConfigMap keeps its document under, the
/// one the policy reads (its field mask).
pub const INDEX_KEY: &str = "index";

/// The data key of a shard's images in readable form.
pub const IMAGES_KEY: &str = "images";

/// The data key of when the syncer resolved each image of a shard.
pub const RESOLVED_AT_KEY: &str = "resolved-at";

/// The fields of a published ConfigMap a reader needs; the host prunes the rest.
pub const FIELD_MASKS: [&str; 3] = ["metadata.name", "metadata.labels", "data.index"];

/// The label value of shard `number`.
pub fn shard_label_value(number: u16) -> String {
    format!("shard-{number}")
}

/// The name of the cluster ConfigMap.
pub fn cluster_config_map_name() -> String {
    "os-placement-facts-cluster".to_string()
}

/// The name of part `part` of shard `number`.
pub fn shard_config_map_name(number: u16, part: u16) -> String {
    match part {
        0 => format!("os-placement-facts-shard-{number}"),
        part => format!("os-placement-facts-shard-{number}-{part}"),
    }
}

/// The label selector of one request: the cluster ConfigMap, with the
/// ConfigMaps of `shard` when the request needs one.
pub fn selector(shard: Option<u16>) -> String {
    match shard {
        None => format!("{FACTS_LABEL}={CLUSTER_LABEL_VALUE}"),
        Some(number) => format!("{FACTS_LABEL} in ({CLUSTER_LABEL_VALUE},shard-{number})"),
    }
}

/// The label selector of every published ConfigMap, for the syncer.
pub fn all_selector() -> String {
    FACTS_LABEL.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
