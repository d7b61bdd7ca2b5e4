//! The image facts ConfigMaps `os-placement facts sync` would publish for a
//! registry's images, for tests through the e2e host: the platforms are
//! gathered by the policy's own code (`os_placement_policy::facts`) over
//! this host's OCI calls, and shaped by the core's ConfigMap builder, so
//! `imageFacts: cluster` can be checked against `imageFacts: registry` on
//! the same images.

use os_placement_core::{published, ImageSource, Needs};
use serde_json::Value;

use crate::capabilities::ContextHost;
use crate::error::{Error, Result};
use crate::host::HostCalls;
use crate::http::http;

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

/// The policy's host, answered by `host`.
struct Through<'a>(&'a ContextHost);

impl os_placement_policy::facts::Host for Through<'_> {
    fn call(
        &self,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, os_placement_policy::facts::HostError> {
        self.0
            .call("kubewarden", namespace, operation, payload)
            .map_err(|e| os_placement_policy::facts::HostError(e.0))
    }
}

/// The ConfigMaps publishing `images` in `namespace`, resolved through `host`'s registries.
pub fn config_maps(host: &ContextHost, images: &[String], namespace: &str) -> Vec<Value> {
    let needs = Needs {
        images: images.to_vec(),
        image_source: ImageSource::Registry,
        ..Needs::default()
    };
    let facts = os_placement_policy::facts::gather(&needs, &Through(host));
    host.take_calls();
    published::config_maps(&facts.images, namespace)
}
