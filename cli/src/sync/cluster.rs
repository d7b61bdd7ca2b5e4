//! The Kubernetes side of `facts sync`: the images the cluster's Pods and
//! workload templates use (every kind the policy places, read by the core's
//! pod view), and the image facts ConfigMaps of one namespace, read back and
//! written with create, replace and delete.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ReplicationController};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::Client;
use os_placement_core::published::{self, IMAGE_FACTS_SELECTOR};
use os_placement_core::{locate_pod_spec, ImageFacts, Kind, PodView, SortedMap};
use serde_json::Value;

use super::cache::Published;
use crate::error::SyncError;

/// The syncer's own data key beside the facts: when each image was resolved.
pub const RESOLVED_AT_KEY: &str = "resolved-at.json";

/// Objects per list page.
const PAGE: u32 = 500;

/// A connection to the cluster and the namespace the facts live in.
pub struct Cluster {
    client: Client,
    namespace: String,
}

fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> SyncError {
    let action = action.into();
    move |source| SyncError::Api {
        action,
        source: Box::new(source),
    }
}

/// The kinds whose pod specs carry images, with their API coordinates.
fn workload_kinds() -> [(Kind, ApiResource); 8] {
    [
        (Kind::Pod, ApiResource::erase::<Pod>(&())),
        (Kind::Deployment, ApiResource::erase::<Deployment>(&())),
        (Kind::ReplicaSet, ApiResource::erase::<ReplicaSet>(&())),
        (Kind::StatefulSet, ApiResource::erase::<StatefulSet>(&())),
        (Kind::DaemonSet, ApiResource::erase::<DaemonSet>(&())),
        (
            Kind::ReplicationController,
            ApiResource::erase::<ReplicationController>(&()),
        ),
        (Kind::Job, ApiResource::erase::<Job>(&())),
        (Kind::CronJob, ApiResource::erase::<CronJob>(&())),
    ]
}

impl Cluster {
    /// The in-cluster configuration, or KUBECONFIG's current context, with
    /// bounded API timeouts.
    pub async fn connect(namespace: &str) -> Result<Cluster, SyncError> {
        let mut config = kube::Config::infer()
            .await
            .map_err(|e| SyncError::Config(e.to_string()))?;
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = Some(Duration::from_secs(60));
        let client = Client::try_from(config).map_err(api_error("cannot build the client"))?;
        Ok(Cluster {
            client,
            namespace: namespace.to_string(),
        })
    }

    /// The namespace the facts are published in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Every image reference of every Pod and workload template, in all
    /// namespaces. A kind the syncer may not list is skipped with a message.
    pub async fn images_in_use(&self) -> Result<BTreeSet<String>, SyncError> {
        let mut images = BTreeSet::new();
        for (kind, resource) in workload_kinds() {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            match list_all(&api).await {
                Ok(objects) => {
                    for object in objects {
                        images.extend(images_of(&object, kind));
                    }
                }
                Err(e @ kube::Error::Api(_)) => {
                    eprintln!("os-placement facts sync: skipping {}: {e}", resource.plural)
                }
                Err(e) => return Err(api_error(format!("cannot list {}", resource.plural))(e)),
            }
        }
        Ok(images)
    }

    /// The facts and times published so far (nothing when none are).
    pub async fn published(&self) -> Result<Published, SyncError> {
        let (mut facts, mut times) = (SortedMap::new(), BTreeMap::new());
        for config_map in self.config_maps().await? {
            let value = serde_json::to_value(&config_map).unwrap_or_default();
            if let Ok(images) = published::config_map_images(&value) {
                facts.extend(images);
            }
            let read = config_map
                .data
                .as_ref()
                .and_then(|d| d.get(RESOLVED_AT_KEY));
            if let Some(read) =
                read.and_then(|text| serde_json::from_str::<BTreeMap<String, u64>>(text).ok())
            {
                times.extend(read);
            }
        }
        Ok((facts, times))
    }

    async fn config_maps(&self) -> Result<Vec<ConfigMap>, SyncError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default().labels(IMAGE_FACTS_SELECTOR);
        api.list(&params)
            .await
            .map(|list| list.items)
            .map_err(api_error(format!(
                "cannot list the image facts ConfigMaps of namespace {}",
                self.namespace
            )))
    }

    /// Writes the ConfigMaps for `facts`: new ones created, changed ones
    /// replaced, surplus ones deleted. Returns how many there are.
    pub async fn publish(
        &self,
        facts: &SortedMap<String, ImageFacts>,
        times: &BTreeMap<String, u64>,
    ) -> Result<usize, SyncError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let existing: BTreeMap<String, ConfigMap> = self
            .config_maps()
            .await?
            .into_iter()
            .filter_map(|cm| Some((cm.metadata.name.clone()?, cm)))
            .collect();
        let wanted = desired(facts, times, &self.namespace)?;
        for config_map in &wanted {
            let name = config_map.metadata.name.clone().unwrap_or_default();
            self.write(&api, &name, config_map, existing.get(&name))
                .await?;
        }
        let kept: BTreeSet<Option<&String>> =
            wanted.iter().map(|cm| cm.metadata.name.as_ref()).collect();
        for name in existing.keys().filter(|name| !kept.contains(&Some(*name))) {
            api.delete(name, &DeleteParams::default())
                .await
                .map_err(api_error(format!("cannot delete ConfigMap {name}")))?;
        }
        Ok(wanted.len())
    }

    async fn write(
        &self,
        api: &Api<ConfigMap>,
        name: &str,
        config_map: &ConfigMap,
        existing: Option<&ConfigMap>,
    ) -> Result<(), SyncError> {
        let params = PostParams::default();
        match existing {
            None => api
                .create(&params, config_map)
                .await
                .map(drop)
                .map_err(api_error(format!("cannot create ConfigMap {name}"))),
            Some(old) if old.data == config_map.data => Ok(()),
            Some(old) => {
                let mut replacement = config_map.clone();
                replacement.metadata.resource_version = old.metadata.resource_version.clone();
                api.replace(name, &params, &replacement)
                    .await
                    .map(drop)
                    .map_err(api_error(format!("cannot replace ConfigMap {name}")))
            }
        }
    }
}

/// Every page of a list.
async fn list_all(api: &Api<DynamicObject>) -> Result<Vec<DynamicObject>, kube::Error> {
    let mut objects = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        objects.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(objects),
        }
    }
}

/// The image references of one object's pod spec, read as the policy reads them.
fn images_of(object: &DynamicObject, kind: Kind) -> Vec<String> {
    let Ok(value) = serde_json::to_value(object) else {
        return Vec::new();
    };
    let Ok((spec, path)) = locate_pod_spec(&value, kind) else {
        return Vec::new();
    };
    match PodView::read(spec, path) {
        Ok(pod) => pod
            .containers
            .iter()
            .filter_map(|c| c.image.map(str::to_string))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The ConfigMaps the core builds for the facts, with the resolution times
/// of each shard's images beside them.
fn desired(
    facts: &SortedMap<String, ImageFacts>,
    times: &BTreeMap<String, u64>,
    namespace: &str,
) -> Result<Vec<ConfigMap>, SyncError> {
    published::config_maps(facts, namespace)
        .into_iter()
        .map(|mut value| {
            let name = value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let shard_times: BTreeMap<&String, &u64> = published::config_map_images(&value)
                .map(|images| {
                    images
                        .keys()
                        .filter_map(|image| times.get_key_value(image))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(data) = value.get_mut("data").and_then(Value::as_object_mut) {
                data.insert(
                    RESOLVED_AT_KEY.to_string(),
                    Value::String(serde_json::to_string(&shard_times).unwrap_or_default()),
                );
            }
            serde_json::from_value(value).map_err(|source| SyncError::ConfigMap { name, source })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use os_placement_core::Platform;
    use serde_json::json;

    #[test]
    fn images_come_from_every_container_list_of_the_pod_spec() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "n"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "initContainers": [{"name": "i", "image": "corp/init:1"}],
                "containers": [{"name": "a", "image": "corp/app:1"}, {"name": "b"}]}}}}}
        }))
        .unwrap();
        assert_eq!(
            images_of(&object, Kind::CronJob),
            ["corp/app:1", "corp/init:1"]
        );
        // Negative: the same object read as a Pod has no pod spec at spec.
        assert!(images_of(&object, Kind::Deployment).is_empty());
    }

    #[test]
    fn published_config_maps_carry_the_times_of_their_images() {
        let facts = SortedMap::from([(
            "corp/app:1".to_string(),
            ImageFacts::Platforms(vec![Platform {
                os: "linux".into(),
                os_version: None,
                architecture: None,
            }]),
        )]);
        let times = BTreeMap::from([
            ("corp/app:1".to_string(), 1_700_000_000),
            ("gone:1".to_string(), 1),
        ]);
        let maps = desired(&facts, &times, "os-placement").unwrap();
        assert_eq!(maps.len(), 1);
        let data = maps[0].data.as_ref().unwrap();
        assert_eq!(data[RESOLVED_AT_KEY], r#"{"corp/app:1":1700000000}"#);
        let value = serde_json::to_value(&maps[0]).unwrap();
        assert_eq!(published::config_map_images(&value).unwrap(), facts);
    }
}
