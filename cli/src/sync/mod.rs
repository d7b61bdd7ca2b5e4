//! `os-placement facts sync`: the facts admission reads kept in the
//! cluster, so that it never waits on a registry and reads them in constant
//! time. The syncer watches ([`watch`]) the cluster's Pods and workload
//! templates, Nodes and RuntimeClasses; resolves the images not known or
//! gone stale from their registries (`os_placement_registry`: timeouts, bounded
//! retries, a concurrency limit, checked hosts, Docker config
//! credentials); and publishes the node classes, RuntimeClasses and image
//! facts as the ConfigMaps the policy reads (`os_placement_core::published`),
//! rewriting only those whose content changed ([`cluster`]). A change is
//! published within seconds; what was resolved, and when, is kept
//! ([`cache`]): failures are retried after `--retry-failed-after`,
//! successes read again after `--refresh-after`, also across runs (the
//! times are published beside the facts).
//!
//! Replicas elect a leader on a Lease ([`lease`]); only the leader looks
//! images up and publishes ([`publisher`]), with a heartbeat renewed every
//! `--heartbeat`; every replica watches, so a standby takes over at once.
//! With `--pull-secrets`, each image is read with the pull Secrets of the
//! namespaces that use it ([`pull`]).
//! `/healthz`, `/readyz` and `/metrics` are served on one port ([`serve`],
//! [`metrics`]). `--once` lists, publishes (without a heartbeat) and exits.

mod cache;
mod cluster;
mod lease;
mod metrics;
mod pace;
mod publisher;
mod pull;
mod serve;
mod watch;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use os_placement_core::published;
use os_placement_core::ImageFacts;
use tokio::sync::watch as channel;

use crate::args::SyncArgs;
use crate::error::{CliError, SyncError};
use cache::Cache;
use cluster::Cluster;
use os_placement_registry::Resolver;
use pace::Pace;
use publisher::Publisher;
use pull::PullSecrets;
use serve::Status;
use watch::{Inventory, Snapshot, Watched};

/// How long `--once` waits for every kind to be listed.
const ONCE_DEADLINE: Duration = Duration::from_secs(120);

/// The loop turns at least this often: timers are checked (a settled
/// change is read within this of settling), `/healthz` kept live.
const TURN: Duration = Duration::from_millis(250);

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
    let mut shutdown = Shutdown::new()?;
    let pace = Arc::new(Pace::default());
    let cluster = Cluster::connect(&args.namespace, pace.clone()).await?;
    let inventory = Arc::new(Inventory::new(args.pull_secrets));
    let status = Arc::new(Status::default());
    let mut paths = Vec::new();
    for (kind, resource) in Watched::all() {
        paths.push((kind, watch::collection_path(&resource)));
        tokio::spawn(watch::watch(
            cluster.client(),
            kind,
            resource,
            inventory.clone(),
            pace.clone(),
            status.clone(),
        ));
    }
    if args.once {
        return once(args, cluster, &inventory, &mut shutdown).await;
    }
    let health = Health { pace, paths };
    let listener = serve::bind(args.metrics_address)
        .await
        .map_err(|e| SyncError::Listen(args.metrics_address, e))?;
    if let Some(address) = serve::local_address(&listener) {
        eprintln!("os-placement facts sync: /healthz, /readyz and /metrics on {address}");
    }
    tokio::spawn(serve::serve(listener, status.clone()));
    follow(args, cluster, &inventory, &health, status, &mut shutdown).await
}

/// What tells a re-established watch on a quiet kind from one still
/// failing: the client's record of successful reads, by collection path.
struct Health {
    pace: Arc<Pace>,
    paths: Vec<(Watched, String)>,
}

impl Health {
    /// Recovery confirmed where the API server answered again, stale
    /// kinds marked, `/metrics` told.
    fn check(&self, inventory: &Inventory, status: &Status, stale_after: Duration) {
        inventory.confirm(|kind| {
            let (_, path) = self.paths.iter().find(|(k, _)| *k == kind)?;
            self.pace.read_ok(path)
        });
        inventory.check_stale(stale_after);
        status.metrics.watches(&inventory.health());
    }
}

/// Runs as a replica until shutdown: every replica watches; the one that
/// holds the Lease looks up and publishes.
async fn follow(
    args: &SyncArgs,
    cluster: Cluster,
    inventory: &Inventory,
    health: &Health,
    status: Arc<Status>,
    shutdown: &mut Shutdown,
) -> Result<(), SyncError> {
    let (mut leading, stop, election) = elect(args, &cluster);
    let resolver = Arc::new(Resolver::new(&args.registry));
    let secrets = args
        .pull_secrets
        .then(|| Arc::new(PullSecrets::new(cluster.client())));
    let cache = Cache::new(args.refresh_after, args.retry_failed_after);
    let mut publisher = Publisher::new(
        cluster,
        (resolver, secrets),
        cache,
        status.clone(),
        args.heartbeat,
        args.interval,
    );
    loop {
        status.turn();
        health.check(inventory, &status, args.stale_after);
        let synced = inventory.synced();
        status.set_ready(synced);
        let leads = *leading.borrow_and_update();
        status.metrics.leader.set(i64::from(leads));
        if !leads {
            publisher.stand_by();
        } else if synced {
            // Leadership lost mid-turn stops its writes; so does shutdown.
            tokio::select! {
                () = publisher.turn(inventory) => {}
                _ = leading.wait_for(|leads| !leads) => continue,
                () = shutdown.wait() => break,
            }
        }
        let done = tokio::select! {
            () = shutdown.wait() => break,
            changed = leading.changed() => match changed {
                Ok(()) => None,
                // The election ended on its own: stop, to be started again.
                Err(_) => {
                    eprintln!("os-placement facts sync: the leader election stopped");
                    break;
                }
            },
            () = inventory.changed() => None,
            done = publisher.next_lookup() => Some(done),
            () = tokio::time::sleep(TURN) => None,
        };
        if let Some(done) = done {
            publisher.record(done);
        }
    }
    let _ = stop.send(true);
    let _ = election.await;
    Ok(())
}

/// Starts the election: whether this replica leads, how to stop it (the
/// Lease is released), its task.
fn elect(
    args: &SyncArgs,
    cluster: &Cluster,
) -> (
    channel::Receiver<bool>,
    channel::Sender<bool>,
    tokio::task::JoinHandle<()>,
) {
    let elector = lease::Elector::new(
        cluster.client(),
        &args.namespace,
        lease::identity(),
        args.lease_duration,
    );
    eprintln!(
        "os-placement facts sync: {} stands for Lease {} in namespace {}",
        elector.identity(),
        lease::LEASE_NAME,
        args.namespace
    );
    let (leading_tx, leading) = channel::channel(false);
    let (stop, stopped) = channel::channel(false);
    let election = tokio::spawn(lease::run(elector, leading_tx, stopped));
    (leading, stop, election)
}

/// SIGTERM (a pod being stopped) or Ctrl-C, listened for from the start.
struct Shutdown {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Shutdown {
    fn new() -> Result<Shutdown, SyncError> {
        Ok(Shutdown {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(SyncError::Runtime)?,
        })
    }

    async fn wait(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `--once`: every kind listed, every image unknown or stale resolved,
/// the facts published (no heartbeat: nothing renews it), then exit.
async fn once(
    args: &SyncArgs,
    mut cluster: Cluster,
    inventory: &Inventory,
    shutdown: &mut Shutdown,
) -> Result<(), SyncError> {
    let started = Instant::now();
    while !inventory.snapshot().complete {
        // A kind that cannot be listed for a minute is published as stale.
        inventory.check_stale(args.stale_after);
        if started.elapsed() > ONCE_DEADLINE {
            return Err(SyncError::Incomplete(ONCE_DEADLINE));
        }
        tokio::select! {
            () = shutdown.wait() => return Ok(()),
            () = inventory.changed() => {}
            () = tokio::time::sleep(TURN) => {}
        }
    }
    tokio::time::sleep(publisher::SETTLE).await;
    let resolver = Resolver::new(&args.registry);
    let secrets = args
        .pull_secrets
        .then(|| PullSecrets::new(cluster.client()));
    let mut cache = Cache::new(args.refresh_after, args.retry_failed_after);
    cache.seed(cluster.load().await?);
    let snapshot = inventory.snapshot();
    let readers = (&resolver, secrets.as_ref());
    let line = round(&mut cluster, readers, &mut cache, &snapshot).await?;
    eprintln!("os-placement facts sync: {line}");
    Ok(())
}

/// One publish: resolve what is missing or stale, write what changed.
async fn round(
    cluster: &mut Cluster,
    (resolver, secrets): (&Resolver, Option<&PullSecrets>),
    cache: &mut Cache,
    snapshot: &Snapshot,
) -> Result<String, SyncError> {
    let started = Instant::now();
    let now = SystemTime::now();
    let stale = cache.to_resolve(&snapshot.images, now);
    let resolved = pull::read_all(resolver, secrets, &stale, &snapshot.pulls).await;
    let mut failed = 0;
    for (image, facts) in &resolved {
        if let ImageFacts::LookupFailed(why) = facts {
            failed += 1;
            eprintln!("os-placement facts sync: {image} was not read: {why}");
        }
    }
    cache.record(resolved, now);
    // A single run keeps no heartbeat: its facts read as rendered.
    let facts = cache.published(&snapshot.images);
    let maps = published::config_maps(&snapshot.sources(&facts, None), cluster.namespace());
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
