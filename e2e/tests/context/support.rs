//! Shared pieces: the registry with the standard images, the cluster
//! fixtures, the compiled policy module, and one evaluation through it.

use std::sync::Arc;

use os_placement_core::{SortedMap, DEFAULT_FACTS_NAMESPACE};
use os_placement_e2e::capabilities::{Cluster, ContextHost, Registries};
use os_placement_e2e::images::{push_standard_images, StandardImages};
use os_placement_e2e::published;
use os_placement_e2e::registry::LocalRegistry;
use os_placement_e2e::repo_root;

/// A registry holding [`StandardImages`], or `None` after a visible skip
/// (a failure under CI) when docker-registry is not installed.
pub fn registry_with_images() -> Option<(LocalRegistry, StandardImages)> {
    let registry = LocalRegistry::start().unwrap_or_else(|e| panic!("{e:#}"))?;
    let images = push_standard_images(&registry.host()).unwrap_or_else(|e| panic!("{e:#}"));
    Some((registry, images))
}

/// A cluster fixture of `e2e/clusters/`.
pub fn cluster(name: &str) -> Cluster {
    Cluster::load(&repo_root().join("e2e/clusters").join(name)).unwrap()
}

/// Registries reaching `registry` over plain HTTP.
pub fn registries(registry: &LocalRegistry) -> Registries {
    Registries::new(&[registry.host()]).unwrap()
}

/// Host calls answered from `registry` (if any) and cluster `name` (if any).
/// The cluster also holds the ConfigMaps the facts syncer would publish for
/// its Nodes and RuntimeClasses and, with a registry, for every image in
/// it, so `imageFacts: cluster` (the default) and `imageFacts: registry`
/// both find them.
pub fn context(registry: Option<&LocalRegistry>, cluster_name: Option<&str>) -> Arc<ContextHost> {
    let mut host = ContextHost::new();
    let mut images = SortedMap::new();
    if let Some(registry) = registry {
        let catalog = published::catalog(registry.port()).unwrap();
        let resolver = ContextHost::new().with_registries(registries(registry));
        images = published::image_facts(&resolver, &catalog);
        host = host.with_registries(registries(registry));
    }
    let objects = match (cluster_name, registry) {
        (Some(name), _) => Some(cluster(name)),
        (None, Some(_)) => Some(Cluster::default()),
        (None, None) => None,
    };
    if let Some(objects) = objects {
        host = host.with_cluster(published::synced(objects, &images, DEFAULT_FACTS_NAMESPACE));
    }
    Arc::new(host)
}
