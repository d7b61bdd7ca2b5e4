//! The host the benches answer os-placement's calls with: the e2e host over
//! a cluster, answering as policy-server does (every answer rebuilt), and
//! keeping how many calls it answered, how long building the answers took
//! and how big they were.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use os_placement_e2e::capabilities::{Cluster, ContextHost};
use os_placement_e2e::error::HostCallError;
use os_placement_e2e::host::HostCalls;

/// What the host spent since it was last asked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Spent {
    /// Calls answered.
    pub calls: usize,
    /// Time spent building the answers.
    pub time: Duration,
    /// Bytes answered.
    pub bytes: usize,
}

/// A cluster behind the host capabilities, measured.
pub struct MeasuredHost {
    inner: ContextHost,
    spent: Mutex<Spent>,
}

impl MeasuredHost {
    /// Answers from `cluster`.
    pub fn new(cluster: Cluster) -> Self {
        Self {
            inner: ContextHost::new().with_cluster(cluster),
            spent: Mutex::new(Spent::default()),
        }
    }

    /// A cluster with no published facts, Nodes or RuntimeClasses, granting
    /// what the deploy manifests grant (ConfigMaps, RuntimeClasses).
    pub fn empty_cluster() -> Self {
        Self::new(
            Cluster::from_objects(Vec::new())
                .allowing(&[("v1", "ConfigMap"), ("node.k8s.io/v1", "RuntimeClass")]),
        )
    }

    /// What was spent since the last `take`, forgetting it.
    pub fn take(&self) -> Spent {
        self.spent
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

impl HostCalls for MeasuredHost {
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, HostCallError> {
        let started = Instant::now();
        let answer = self.inner.call(binding, namespace, operation, payload);
        // The fixture host logs every call; the benches only count them.
        self.inner.take_calls();
        if let Ok(mut spent) = self.spent.lock() {
            spent.calls += 1;
            spent.time += started.elapsed();
            spent.bytes += answer.as_ref().map_or(0, Vec::len);
        }
        answer
    }
}
