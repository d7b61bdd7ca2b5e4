//! The published side of `facts sync`: the ConfigMaps of one namespace,
//! read back once at start (what an earlier run resolved, and when) and
//! then written only where their content changes. The image facts
//! ConfigMaps of earlier releases are read for their images and deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::Client;
use os_placement_core::published::{self, IMAGE_FACTS_SELECTOR};
use os_placement_core::{ImageFacts, SortedMap};
use serde_json::{json, Value};

use super::cache::Published;
use super::pace::{Pace, PaceLayer};
use crate::error::SyncError;

/// The earlier releases' key for resolution times.
const LEGACY_RESOLVED_AT_KEY: &str = "resolved-at.json";

/// A published ConfigMap as last read or written: its data and resource version.
type Known = (Option<BTreeMap<String, String>>, Option<String>);

/// A connection to the cluster and the namespace the facts live in, with
/// what is published there now.
pub struct Cluster {
    client: Client,
    namespace: String,
    /// Each published ConfigMap's data and resource version.
    existing: BTreeMap<String, Known>,
    /// ConfigMaps of the earlier format, deleted once the new ones are written.
    legacy: BTreeSet<String>,
}

/// What one publish did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// ConfigMaps created.
    pub created: usize,
    /// ConfigMaps replaced: their content changed.
    pub replaced: usize,
    /// ConfigMaps deleted: no longer needed, or of the earlier format.
    pub deleted: usize,
    /// ConfigMaps left as they were.
    pub unchanged: usize,
}

fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> SyncError {
    let action = action.into();
    move |source| SyncError::Api {
        action,
        source: Box::new(source),
    }
}

impl Cluster {
    /// The in-cluster configuration, or KUBECONFIG's current context, with
    /// bounded API timeouts; every answer is read by `pace` (`Retry-After`,
    /// which reads succeed).
    pub async fn connect(namespace: &str, pace: Arc<Pace>) -> Result<Cluster, SyncError> {
        let mut config = kube::Config::infer()
            .await
            .map_err(|e| SyncError::Config(e.to_string()))?;
        config.connect_timeout = Some(Duration::from_secs(10));
        // A watch is held open up to 290 s by the API server.
        config.read_timeout = Some(Duration::from_secs(300));
        let client = kube::client::ClientBuilder::try_from(config)
            .map_err(api_error("cannot build the client"))?
            .with_layer(&PaceLayer(pace))
            .build();
        Ok(Cluster {
            client,
            namespace: namespace.to_string(),
            existing: BTreeMap::new(),
            legacy: BTreeSet::new(),
        })
    }

    /// The client, for the watches.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The namespace the facts are published in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn api(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Reads what is published, remembering it so that only changes are
    /// written: the images resolved so far and when (nothing when none are).
    pub async fn load(&mut self) -> Result<Published, SyncError> {
        let (mut facts, mut times) = (SortedMap::new(), BTreeMap::new());
        let current = self.list(&published::all_selector()).await?;
        let legacy = self.list(IMAGE_FACTS_SELECTOR).await?;
        for config_map in current.iter().chain(&legacy) {
            let (images, resolved) = images_in(config_map);
            facts.extend(images);
            times.extend(resolved);
        }
        self.existing = current
            .into_iter()
            .filter_map(|cm| {
                let name = cm.metadata.name?;
                Some((name, (cm.data, cm.metadata.resource_version)))
            })
            .collect();
        self.legacy = legacy
            .into_iter()
            .filter_map(|cm| cm.metadata.name)
            .collect();
        Ok((facts, times))
    }

    async fn list(&self, selector: &str) -> Result<Vec<ConfigMap>, SyncError> {
        let params = ListParams::default().labels(selector);
        self.api()
            .list(&params)
            .await
            .map(|l| l.items)
            .map_err(api_error(format!(
                "cannot list the ConfigMaps of namespace {} labelled {selector}",
                self.namespace
            )))
    }

    /// Writes `maps` (the core's ConfigMaps, the cluster's first): new ones
    /// created, changed ones replaced, the rest (and those of the earlier
    /// format) deleted. The cluster ConfigMap, which carries the heartbeat,
    /// is written after the shards: a failed write renews no heartbeat.
    pub async fn publish(&mut self, maps: &[Value]) -> Result<Written, SyncError> {
        let mut written = Written::default();
        let mut wanted = BTreeSet::new();
        let (cluster, shards) = maps
            .split_first()
            .map_or((None, maps), |(c, s)| (Some(c), s));
        for map in shards.iter().chain(cluster) {
            let config_map: ConfigMap =
                serde_json::from_value(map.clone()).map_err(|source| SyncError::ConfigMap {
                    name: name_of(map),
                    source,
                })?;
            let name = config_map.metadata.name.clone().unwrap_or_default();
            wanted.insert(name.clone());
            match self.existing.get(&name) {
                Some((data, _)) if *data == config_map.data => written.unchanged += 1,
                Some((_, version)) => {
                    let version = version.clone();
                    self.replace(&name, config_map, version).await?;
                    written.replaced += 1;
                }
                None => {
                    self.create(&name, config_map).await?;
                    written.created += 1;
                }
            }
        }
        let surplus: Vec<String> = self
            .existing
            .keys()
            .filter(|name| !wanted.contains(*name))
            .cloned()
            .chain(std::mem::take(&mut self.legacy))
            .collect();
        for name in surplus {
            self.api()
                .delete(&name, &DeleteParams::default())
                .await
                .map(drop)
                .or_else(ignore_not_found)
                .map_err(api_error(format!("cannot delete ConfigMap {name}")))?;
            self.existing.remove(&name);
            written.deleted += 1;
        }
        Ok(written)
    }

    async fn create(&mut self, name: &str, config_map: ConfigMap) -> Result<(), SyncError> {
        let created = self
            .api()
            .create(&PostParams::default(), &config_map)
            .await
            .map_err(api_error(format!("cannot create ConfigMap {name}")))?;
        self.remember(name, created);
        Ok(())
    }

    /// Replaces `name`; when another writer changed it since, reads it and
    /// tries once more.
    async fn replace(
        &mut self,
        name: &str,
        mut config_map: ConfigMap,
        version: Option<String>,
    ) -> Result<(), SyncError> {
        config_map.metadata.resource_version = version;
        let params = PostParams::default();
        let replaced = match self.api().replace(name, &params, &config_map).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let current = self
                    .api()
                    .get(name)
                    .await
                    .map_err(api_error(format!("cannot read ConfigMap {name}")))?;
                config_map.metadata.resource_version = current.metadata.resource_version;
                self.api().replace(name, &params, &config_map).await
            }
            other => other,
        };
        let replaced = replaced.map_err(api_error(format!("cannot replace ConfigMap {name}")))?;
        self.remember(name, replaced);
        Ok(())
    }

    fn remember(&mut self, name: &str, written: ConfigMap) {
        self.existing.insert(
            name.to_string(),
            (written.data, written.metadata.resource_version),
        );
    }
}

fn ignore_not_found(error: kube::Error) -> Result<(), kube::Error> {
    match error {
        kube::Error::Api(status) if status.code == 404 => Ok(()),
        other => Err(other),
    }
}

fn name_of(map: &Value) -> String {
    map.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The images a published ConfigMap keeps readable, and when each was resolved.
fn images_in(config_map: &ConfigMap) -> (SortedMap<String, ImageFacts>, BTreeMap<String, u64>) {
    let data = config_map.data.clone().unwrap_or_default();
    let readable = data
        .get(published::IMAGES_KEY)
        .or_else(|| data.get(published::IMAGE_FACTS_KEY));
    let images = readable
        .and_then(|text| {
            let map = json!({"metadata": {"name": config_map.metadata.name},
                "data": {published::IMAGE_FACTS_KEY: text}});
            published::config_map_images(&map).ok()
        })
        .unwrap_or_default();
    let times = data
        .get(published::RESOLVED_AT_KEY)
        .or_else(|| data.get(LEGACY_RESOLVED_AT_KEY))
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    (images, times)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use os_placement_core::Platform;

    #[test]
    fn published_images_and_their_times_are_read_back_from_either_format() {
        let facts = SortedMap::from([(
            "corp/app:1".to_string(),
            ImageFacts::Platforms(vec![Platform {
                os: "linux".into(),
                os_version: None,
                architecture: None,
            }]),
        )]);
        let times = BTreeMap::from([("corp/app:1".to_string(), 1_700_000_000)]);
        let maps = published::config_maps(
            &published::Sources {
                images: &facts,
                resolved_at: Some(&times),
                ..published::Sources::default()
            },
            "os-placement",
        );
        let shard: ConfigMap = serde_json::from_value(maps[1].clone()).unwrap();
        assert_eq!(images_in(&shard), (facts.clone(), times.clone()));
        // The earlier format: images.json and resolved-at.json.
        let legacy: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "os-placement-image-facts-0",
                         "labels": {published::IMAGE_FACTS_LABEL: "true"}},
            "data": {"images.json": r#"{"images":{"corp/app:1":{"platforms":[{"os":"linux"}]}}}"#,
                     "resolved-at.json": r#"{"corp/app:1":1700000000}"#}}))
        .unwrap();
        assert_eq!(images_in(&legacy), (facts, times));
        // Negative: the cluster ConfigMap holds no images.
        let cluster: ConfigMap = serde_json::from_value(maps[0].clone()).unwrap();
        assert!(images_in(&cluster).0.is_empty());
    }
}
