//! `os-placement facts sync`: image facts kept in the cluster, so that
//! admission never waits on a registry. Each round lists the images the
//! cluster's Pods and workload templates use ([`cluster`]), resolves those
//! not known or gone stale from their registries (`crate::registry`: timeouts,
//! bounded retries, a concurrency limit, Docker config credentials), and
//! publishes them as the ConfigMaps the policy reads
//! (`os_placement_core::published`). What was resolved, and when, is kept
//! ([`cache`]): failures are retried after `--retry-failed-after`,
//! successes read again after `--refresh-after`, also across runs of a
//! CronJob (the times are published beside the facts).

mod cache;
mod cluster;

use std::time::{Duration, SystemTime};

use crate::args::SyncArgs;
use crate::error::{CliError, SyncError};
use crate::registry::Resolver;
use cache::Cache;
use cluster::Cluster;

/// Runs `facts sync` until it fails, or once with `--once`.
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
    let cluster = Cluster::connect(&args.namespace).await?;
    let resolver = Resolver::new(&args.registry);
    let mut cache = Cache::new(args.refresh_after, args.retry_failed_after);
    cache.seed(cluster.published().await?);
    loop {
        let round = round(&cluster, &resolver, &mut cache).await;
        match round {
            Ok(line) => eprintln!("os-placement facts sync: {line}"),
            Err(e) if args.once => return Err(e),
            // The next round may find the API again.
            Err(e) => eprintln!("os-placement facts sync: {e}"),
        }
        if args.once {
            return Ok(());
        }
        tokio::time::sleep(args.interval).await;
    }
}

/// One sync: list, resolve what is missing or stale, publish.
async fn round(
    cluster: &Cluster,
    resolver: &Resolver,
    cache: &mut Cache,
) -> Result<String, SyncError> {
    let started = std::time::Instant::now();
    let images = cluster.images_in_use().await?;
    let now = SystemTime::now();
    let stale = cache.to_resolve(&images, now);
    let resolved = resolver.resolve_all(&stale).await;
    let failed = resolved
        .iter()
        .filter(|(_, facts)| matches!(facts, os_placement_core::ImageFacts::LookupFailed(_)))
        .count();
    cache.record(resolved, now);
    let (facts, times) = cache.published(&images);
    let written = cluster.publish(&facts, &times).await?;
    Ok(format!(
        "{} images in use, {} looked up ({failed} failed), {written} ConfigMaps in namespace {}, {:.1?}",
        images.len(),
        stale.len(),
        cluster.namespace(),
        round_secs(started.elapsed()),
    ))
}

/// A duration shown to a tenth of a second.
fn round_secs(elapsed: Duration) -> Duration {
    Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX) / 100 * 100)
}
