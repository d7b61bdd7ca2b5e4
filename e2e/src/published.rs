//! The ConfigMaps `os-placement facts sync` would publish for a cluster
//! fixture and a registry's images, for tests through the e2e host: the
//! platforms are gathered by the policy's own code
//! (`os_placement_policy::facts`) over this host's OCI calls, and the whole
//! is shaped by the core's builder, so `imageFacts: cluster` can be checked
//! against `imageFacts: registry` on the same images, and the node facts
//! against the Node list.

use os_placement_core::{capacity, host_answers};
use os_placement_core::{published, ImageFacts, ImageSource, Needs, SortedMap};
use serde_json::Value;

use crate::capabilities::{Cluster, ContextHost};
use crate::error::{Error, Result};
use crate::http::http;
use crate::native::Through;

/// Every `host/repository:tag` a registry on 127.0.0.1:`port` holds (its catalog).
pub fn catalog(port: u16) -> Result<Vec<String>> {
    let get = |path: &str| -> Result<Value> {
        let answer = http(port, "GET", path, &[], b"").map_err(Error::io(path.to_string()))?;
        Ok(serde_json::from_slice(&answer.body)?)
    };
    let mut references = Vec::new();
    let repositories = get("/v2/_catalog")?;
    for repository in repositories
        .get("repositories")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(repository) = repository.as_str() else {
            continue;
        };
        let tags = get(&format!("/v2/{repository}/tags/list"))?;
        for tag in tags
            .get("tags")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            references.push(format!("127.0.0.1:{port}/{repository}:{tag}"));
        }
    }
    Ok(references)
}

/// The facts of `images`, resolved through `host`'s registries.
pub fn image_facts(host: &ContextHost, images: &[String]) -> SortedMap<String, ImageFacts> {
    let needs = Needs {
        images: images.to_vec(),
        image_source: ImageSource::Registry,
        ..Needs::default()
    };
    let facts = os_placement_policy::facts::gather(&needs, &Through(host));
    host.take_calls();
    facts.images
}

/// The ConfigMaps the facts syncer publishes in `namespace` for `objects`
/// (their Nodes, RuntimeClasses and NodePools with their node classes, all
/// of the cluster's) and `images`.
pub fn config_maps(
    objects: &[Value],
    images: &SortedMap<String, ImageFacts>,
    namespace: &str,
) -> Vec<Value> {
    let of_kind = |kind: &'static str| {
        objects
            .iter()
            .filter(move |o| o.get("kind").and_then(Value::as_str) == Some(kind))
    };
    let mut nodes: Vec<_> = of_kind("Node").map(host_answers::node).collect();
    nodes.extend(capacity::from_objects(objects));
    let runtime_classes: SortedMap<String, _> = of_kind("RuntimeClass")
        .filter_map(|rc| {
            let name = rc.pointer("/metadata/name")?.as_str()?.to_string();
            Some((name, host_answers::runtime_class(rc)))
        })
        .collect();
    published::config_maps(
        &published::Sources {
            nodes: Some(&nodes),
            runtime_classes: Some(&runtime_classes),
            images,
            resolved_at: None,
            syncer: None,
            stale: &[],
        },
        namespace,
    )
}

/// `cluster` as its facts syncer leaves it: with the ConfigMaps of
/// [`config_maps`] for its objects and `images`.
pub fn synced(
    cluster: Cluster,
    images: &SortedMap<String, ImageFacts>,
    namespace: &str,
) -> Cluster {
    let maps = config_maps(cluster.objects(), images, namespace);
    cluster.with_objects(maps)
}
