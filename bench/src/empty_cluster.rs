//! The host the bench answers os-placement's calls with: a cluster with no
//! published facts, Nodes or RuntimeClasses, answering as policy-server
//! does (the answer rebuilt for every call), and counting the calls.

use std::sync::atomic::{AtomicUsize, Ordering};

use os_placement_e2e::capabilities::{Cluster, ContextHost};
use os_placement_e2e::error::HostCallError;
use os_placement_e2e::host::HostCalls;

/// An empty cluster behind the capabilities the deploy manifests grant.
pub struct EmptyCluster {
    inner: ContextHost,
    calls: AtomicUsize,
}

impl Default for EmptyCluster {
    fn default() -> Self {
        let cluster = Cluster::from_objects(Vec::new())
            .allowing(&[("v1", "ConfigMap"), ("node.k8s.io/v1", "RuntimeClass")]);
        Self {
            inner: ContextHost::new().with_cluster(cluster),
            calls: AtomicUsize::new(0),
        }
    }
}

impl EmptyCluster {
    /// The calls answered since the last `take_calls`, forgetting them.
    pub fn take_calls(&self) -> usize {
        self.calls.swap(0, Ordering::Relaxed)
    }
}

impl HostCalls for EmptyCluster {
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, HostCallError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let answer = self.inner.call(binding, namespace, operation, payload);
        // The fixture host logs every call; the bench only counts them.
        self.inner.take_calls();
        answer
    }
}
