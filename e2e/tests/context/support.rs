//! Shared pieces: the registry with the standard images, the cluster
//! fixtures, the compiled policy module, and one evaluation through it.

use std::sync::Arc;

use os_placement_core::DEFAULT_FACTS_NAMESPACE;
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
/// With a registry, the cluster also holds the image facts ConfigMaps the
/// facts syncer would publish for every image in it, so `imageFacts:
/// cluster` (the default) and `imageFacts: registry` both find them.
pub fn context(registry: Option<&LocalRegistry>, cluster_name: Option<&str>) -> Arc<ContextHost> {
    let mut host = ContextHost::new();
    let mut objects = cluster_name.map(cluster);
    if let Some(registry) = registry {
        let images = published::catalog(registry.port()).unwrap();
        let resolver = ContextHost::new().with_registries(registries(registry));
        let config_maps = published::config_maps(&resolver, &images, DEFAULT_FACTS_NAMESPACE);
        objects = Some(objects.unwrap_or_default().with_objects(config_maps));
        host = host.with_registries(registries(registry));
    }
    if let Some(cluster) = objects {
        host = host.with_cluster(cluster);
    }
    Arc::new(host)
}
