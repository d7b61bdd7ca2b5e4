//! `os-placement facts sync`: the facts admission reads kept in the
//! cluster, so that it never waits on a registry and reads them in constant
//! time. The syncer watches ([`watch`]) the cluster's Pods and workload
//! templates, Nodes and RuntimeClasses; resolves the images not known or
//! gone stale from their registries (`crate::registry`: timeouts, bounded
//! retries, a concurrency limit, Docker config credentials); and publishes
//! the node classes, RuntimeClasses and image facts as the ConfigMaps the
//! policy reads (`os_placement_core::published`), rewriting only those whose
//! content changed ([`cluster`]). A change is published within seconds; what
//! was resolved, and when, is kept ([`cache`]): failures are retried after
//! `--retry-failed-after`, successes read again after `--refresh-after`,
//! also across runs (the times are published beside the facts).

mod cache;
mod cluster;
mod watch;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use os_placement_core::published::{self, Sources};
use os_placement_core::ImageFacts;

use crate::args::SyncArgs;
use crate::error::{CliError, SyncError};
use crate::registry::Resolver;
use cache::Cache;
use cluster::Cluster;
use watch::{Inventory, Snapshot, Watched};

/// How long a burst of changes (a rollout, a node group scaling) settles
/// before the facts are published: one write for the burst.
const SETTLE: Duration = Duration::from_secs(1);

/// How long `--once` waits for every kind to be listed.
const ONCE_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `facts sync` until it is stopped, or once with `--once`.
pub fn run(args: &SyncArgs) -> Result<u8, CliError> {
    // Err only when a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SyncError::Runtime)?;
    runtime.block_on(sync(args))?;
    Ok(0)
}

async fn sync(args: &SyncArgs) -> Result<(), SyncError> {
    let mut cluster = Cluster::connect(&args.namespace).await?;
    let resolver = Resolver::new(&args.registry);
    let mut cache = Cache::new(args.refresh_after, args.retry_failed_after);
    cache.seed(cluster.load().await?);
    let inventory = Arc::new(Inventory::default());
    for (kind, resource) in Watched::all() {
        tokio::spawn(watch::watch(
            cluster.client(),
            kind,
            resource,
            inventory.clone(),
        ));
    }
    let started = Instant::now();
    let mut published_at = None;
    loop {
        tokio::select! {
            () = inventory.changed() => {}
            () = tokio::time::sleep(args.interval) => {}
            () = shutdown() => return Ok(()),
        }
        if !inventory.snapshot().complete {
            if args.once && started.elapsed() > ONCE_DEADLINE {
                return Err(SyncError::Incomplete(ONCE_DEADLINE));
            }
            continue;
        }
        tokio::time::sleep(SETTLE).await;
        let snapshot = inventory.snapshot();
        if published_at == Some(snapshot.version) && !cache.expired(&snapshot.images) {
            continue;
        }
        match round(&mut cluster, &resolver, &mut cache, &inventory, &snapshot).await {
            Ok(line) => {
                published_at = Some(snapshot.version);
                eprintln!("os-placement facts sync: {line}");
            }
            Err(e) if args.once => return Err(e),
            // The next change or interval tries again.
            Err(e) => eprintln!("os-placement facts sync: {e}"),
        }
        if args.once {
            return Ok(());
        }
    }
}

/// SIGTERM (a pod being stopped) or Ctrl-C.
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// One publish: resolve what is missing or stale, write what changed.
async fn round(
    cluster: &mut Cluster,
    resolver: &Resolver,
    cache: &mut Cache,
    inventory: &Inventory,
    snapshot: &Snapshot,
) -> Result<String, SyncError> {
    let started = Instant::now();
    let now = SystemTime::now();
    let stale = cache.to_resolve(&snapshot.images, now);
    let resolved = resolver.resolve_all(&stale).await;
    let failed = resolved
        .iter()
        .filter(|(_, facts)| matches!(facts, ImageFacts::LookupFailed(_)))
        .count();
    cache.record(resolved, now);
    let (facts, times) = cache.published(&snapshot.images);
    let skipped = inventory.skipped();
    let maps = published::config_maps(
        &Sources {
            nodes: (!skipped.contains_key(&Watched::Node)).then_some(snapshot.nodes.as_slice()),
            runtime_classes: (!skipped.contains_key(&Watched::RuntimeClass))
                .then_some(&snapshot.runtime_classes),
            images: &facts,
            resolved_at: Some(&times),
            syncer: None,
        },
        cluster.namespace(),
    );
    let written = cluster.publish(&maps).await?;
    Ok(format!(
        "{} images in use, {} looked up ({failed} failed), {} nodes, {} launchable node kinds; {} ConfigMaps in namespace {} ({} created, {} replaced, {} deleted), {:.1?}",
        snapshot.images.len(),
        stale.len(),
        snapshot.nodes.iter().filter(|n| n.exists()).count(),
        snapshot.nodes.iter().filter(|n| !n.exists()).count(),
        maps.len(),
        cluster.namespace(),
        written.created,
        written.replaced,
        written.deleted,
        round_secs(started.elapsed()),
    ))
}

/// A duration shown to a tenth of a second.
fn round_secs(elapsed: Duration) -> Duration {
    Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX) / 100 * 100)
}
