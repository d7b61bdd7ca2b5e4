//! The leader's work: follow the cluster's changes ([`SETTLE`]), look up
//! the images in use that are unknown or stale, a bounded number at a
//! time, and publish once the lookups in flight are done (or after
//! [`MAX_DELAY`]); and renew the heartbeat every `--heartbeat`,
//! also when nothing else changed (only the cluster ConfigMap is written
//! then). A standby keeps nothing of it: on taking the lead, what is
//! published is read first, so no image is looked up twice.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures_util::future::LocalBoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use os_placement_core::published::{self, Heartbeat};
use os_placement_core::ImageFacts;

use super::cache::{epoch_seconds, Cache};
use super::cluster::Cluster;
use super::pull::{fingerprint, PullSecrets};
use super::serve::Status;
use super::watch::{Inventory, Snapshot};
use crate::error::SyncError;
use os_placement_registry::{registry_of, Resolver};

/// Reads of the cluster's changes: a change is read at once when the
/// last read is two of these old; otherwise once changes have stopped for
/// one (a rollout, a node group scaling: one write for the burst), or two
/// after the last read while they go on.
pub const SETTLE: Duration = Duration::from_secs(1);

/// The longest a change waits for its burst to end, or a new leader for
/// its first lookups, before it is published.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// The pause after a failed publish.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The longest a publish, or the read of what is published, may take
/// (the API client's own timeout is long, for its watches).
pub const API_DEADLINE: Duration = Duration::from_secs(60);

type Lookup = LocalBoxFuture<'static, (String, ImageFacts)>;

/// Publishes the facts while this replica leads.
pub struct Publisher {
    cluster: Cluster,
    resolver: Arc<Resolver>,
    /// With `--pull-secrets`: the reader of pull Secrets.
    secrets: Option<Arc<PullSecrets>>,
    cache: Cache,
    status: Arc<Status>,
    heartbeat: Duration,
    interval: Duration,
    lead: Option<Lead>,
}

/// What the leader keeps between turns.
struct Lead {
    since: Instant,
    snapshot: Snapshot,
    /// When the snapshot was taken; `None` before the first.
    snapshot_at: Option<Instant>,
    /// The inventory's version as last seen, and since when.
    seen: (u64, Instant),
    checked_at: Instant,
    queue: VecDeque<String>,
    queued: HashSet<String>,
    in_flight: HashSet<String>,
    lookups: FuturesUnordered<Lookup>,
    /// With `--pull-secrets`: by image, the fingerprint of the pull
    /// contexts its last lookup read it with.
    read_with: HashMap<String, u64>,
    /// Bumped for every lookup recorded.
    generation: u64,
    /// The (inventory version, generation) last published.
    published: Option<(u64, u64)>,
    /// The first change not published yet.
    changed_at: Option<Instant>,
    heartbeat_at: u64,
    heartbeat_due: Instant,
    retry_at: Option<Instant>,
    looked_up: usize,
    failed: usize,
}

impl Lead {
    fn new() -> Lead {
        let now = Instant::now();
        Lead {
            since: now,
            snapshot: Snapshot::default(),
            snapshot_at: None,
            seen: (0, now),
            checked_at: now,
            queue: VecDeque::new(),
            queued: HashSet::new(),
            in_flight: HashSet::new(),
            lookups: FuturesUnordered::new(),
            read_with: HashMap::new(),
            generation: 0,
            published: None,
            changed_at: Some(now),
            heartbeat_at: 0,
            heartbeat_due: now,
            retry_at: None,
            looked_up: 0,
            failed: 0,
        }
    }

    /// What was published: a line for the log (the counts since the last).
    fn summary(&mut self, written: &str) -> String {
        let snapshot = &self.snapshot;
        let line = format!(
            "{} images in use, {} looked up ({} failed), {} nodes, {} launchable node kinds; {written}",
            snapshot.images.len(),
            self.looked_up,
            self.failed,
            snapshot.nodes.iter().filter(|n| n.exists()).count(),
            snapshot.nodes.iter().filter(|n| !n.exists()).count(),
        );
        self.looked_up = 0;
        self.failed = 0;
        line
    }

    /// A publish succeeded with the heartbeat `at`, renewed if `every`.
    fn published_at(&mut self, at: u64, every: Option<Duration>) {
        self.published = Some((self.snapshot.version, self.generation));
        self.heartbeat_at = at;
        if let Some(every) = every {
            self.heartbeat_due = Instant::now() + every;
        }
        self.changed_at = None;
        self.retry_at = None;
    }

    /// With `--pull-secrets`: queues the images a namespace or Secret
    /// started or stopped pulling since their last lookup, so no
    /// namespace keeps facts read with another's credentials. Facts read
    /// before this replica led count as read with what it first sees.
    fn reread_pulled(&mut self) {
        let pulls = &self.snapshot.pulls;
        self.read_with.retain(|image, _| pulls.contains_key(image));
        for (image, used) in pulls {
            let now = fingerprint(used);
            let before = *self.read_with.entry(image.clone()).or_insert(now);
            if before != now && !self.in_flight.contains(image) && self.queued.insert(image.clone())
            {
                self.read_with.insert(image.clone(), now);
                self.queue.push_back(image.clone());
            }
        }
    }

    fn changed(&mut self) {
        self.changed_at.get_or_insert_with(Instant::now);
    }

    fn busy(&self) -> bool {
        !self.lookups.is_empty() || !self.queue.is_empty()
    }

    /// Whether to publish now, and whether the heartbeat is due.
    fn due(&self) -> Option<bool> {
        if self.retry_at.is_some_and(|at| Instant::now() < at) {
            return None;
        }
        let waited = |at: Option<Instant>| at.is_some_and(|at| at.elapsed() >= MAX_DELAY);
        // A new leader's first publish waits for its first lookups.
        if self.published.is_none() && self.busy() && self.since.elapsed() < MAX_DELAY {
            return None;
        }
        if Instant::now() >= self.heartbeat_due {
            return Some(true);
        }
        // Lookups finishing one after another are published together.
        let changed = self.published != Some((self.snapshot.version, self.generation));
        (changed && (!self.busy() || waited(self.changed_at))).then_some(false)
    }
}

impl Publisher {
    /// A publisher to `cluster`, resolving with `resolver` (and pull
    /// `secrets`, when read), renewing the heartbeat every `heartbeat` and
    /// looking for expired facts every `interval`.
    pub fn new(
        cluster: Cluster,
        (resolver, secrets): (Arc<Resolver>, Option<Arc<PullSecrets>>),
        cache: Cache,
        status: Arc<Status>,
        heartbeat: Duration,
        interval: Duration,
    ) -> Publisher {
        Publisher {
            cluster,
            resolver,
            secrets,
            cache,
            status,
            heartbeat,
            interval,
            lead: None,
        }
    }

    /// Stops leading: lookups in flight are dropped, nothing is written.
    pub fn stand_by(&mut self) {
        self.lead = None;
    }

    /// One turn of the leader, once the watches are synced: what is
    /// published read on taking the lead, lookups started, a publish when due.
    pub async fn turn(&mut self, inventory: &Inventory) {
        if self.lead.is_none() {
            match tokio::time::timeout(API_DEADLINE, self.cluster.load()).await {
                Ok(Ok(published)) => self.cache.seed(published),
                Ok(Err(e)) => return eprintln!("os-placement facts sync: {e}"),
                Err(_) => {
                    return eprintln!(
                        "os-placement facts sync: the published facts could not be read within {API_DEADLINE:?}"
                    )
                }
            }
            self.lead = Some(Lead::new());
        }
        self.refresh(inventory);
        self.start_lookups();
        let due = self.lead.as_ref().and_then(Lead::due);
        if let Some(heartbeat) = due {
            self.publish(heartbeat).await;
        }
    }

    /// Takes a new snapshot of a changed cluster as [`SETTLE`] says, and
    /// queues what is unknown or expired.
    fn refresh(&mut self, inventory: &Inventory) {
        let Some(lead) = self.lead.as_mut() else {
            return;
        };
        let version = inventory.version();
        if version != lead.seen.0 {
            lead.seen = (version, Instant::now());
        }
        let moved = version != lead.snapshot.version;
        let settled = lead.seen.1.elapsed() >= SETTLE;
        let stale = lead
            .snapshot_at
            .is_none_or(|at| moved && (settled || at.elapsed() >= SETTLE * 2));
        if stale {
            lead.snapshot = inventory.snapshot();
            lead.snapshot_at = Some(Instant::now());
            self.status
                .metrics
                .images_in_use
                .set(i64::try_from(lead.snapshot.images.len()).unwrap_or(i64::MAX));
            lead.changed();
        } else if lead.checked_at.elapsed() < self.interval {
            return;
        }
        lead.checked_at = Instant::now();
        if self.secrets.is_some() {
            lead.reread_pulled();
        }
        for image in self
            .cache
            .to_resolve(&lead.snapshot.images, SystemTime::now())
        {
            if !lead.in_flight.contains(&image) && lead.queued.insert(image.clone()) {
                lead.queue.push_back(image);
            }
        }
    }

    /// Starts queued lookups, up to `--concurrency` in flight.
    fn start_lookups(&mut self) {
        let Some(lead) = self.lead.as_mut() else {
            return;
        };
        while lead.in_flight.len() < self.resolver.concurrency() {
            let Some(image) = lead.queue.pop_front() else {
                break;
            };
            lead.queued.remove(&image);
            if !lead.snapshot.images.contains(&image) {
                continue;
            }
            lead.in_flight.insert(image.clone());
            let resolver = self.resolver.clone();
            let secrets = self.secrets.clone();
            let pulls = lead.snapshot.pulls.get(&image).cloned().unwrap_or_default();
            if secrets.is_some() {
                lead.read_with.insert(image.clone(), fingerprint(&pulls));
            }
            lead.lookups.push(Box::pin(async move {
                let facts = match secrets {
                    Some(secrets) => secrets.read(&resolver, &image, &pulls).await,
                    None => resolver.resolve(&image).await,
                };
                (image, facts)
            }));
        }
    }

    /// The next lookup to finish; never, when none is in flight.
    pub async fn next_lookup(&mut self) -> (String, ImageFacts) {
        match self.lead.as_mut() {
            Some(lead) if !lead.lookups.is_empty() => match lead.lookups.next().await {
                Some(done) => done,
                None => std::future::pending().await,
            },
            _ => std::future::pending().await,
        }
    }

    /// Keeps a finished lookup, and starts the next.
    pub fn record(&mut self, (image, facts): (String, ImageFacts)) {
        let Some(lead) = self.lead.as_mut() else {
            return;
        };
        lead.in_flight.remove(&image);
        let failed = matches!(facts, ImageFacts::LookupFailed(_));
        let host = registry_of(&image).unwrap_or_else(|| "unparsable".to_string());
        self.status.metrics.lookup(&host, failed);
        let totals = self.resolver.lookups_by_credentials();
        self.status.metrics.credentials(&totals);
        // Once per image and reason: a failure retried unchanged is not said again.
        if let ImageFacts::LookupFailed(why) = &facts {
            if self.cache.facts_of(&image) != Some(&facts) {
                eprintln!("os-placement facts sync: {image} was not read: {why}");
            }
        }
        lead.looked_up += 1;
        lead.failed += usize::from(failed);
        lead.generation += 1;
        lead.changed();
        self.cache.record(vec![(image, facts)], SystemTime::now());
        self.start_lookups();
    }

    /// Writes the facts (with a new heartbeat when `heartbeat`).
    async fn publish(&mut self, heartbeat: bool) {
        let Some(lead) = self.lead.as_mut() else {
            return;
        };
        let started = Instant::now();
        let now = epoch_seconds(SystemTime::now());
        let at = if heartbeat { now } else { lead.heartbeat_at };
        let published = self.cache.published(&lead.snapshot.images);
        let beat = Heartbeat {
            at,
            every: u32::try_from(self.heartbeat.as_secs()).unwrap_or(u32::MAX),
        };
        let snapshot = &lead.snapshot;
        let maps = published::config_maps(
            &snapshot.sources(&published, Some(beat)),
            self.cluster.namespace(),
        );
        let times = &published.1;
        let metrics = &self.status.metrics;
        let written = tokio::time::timeout(API_DEADLINE, self.cluster.publish(&maps)).await;
        match written.unwrap_or_else(|_| Err(SyncError::Timeout(API_DEADLINE))) {
            Ok(written) => {
                let oldest = times.values().min().copied().unwrap_or(now);
                metrics.last_publish.set(now as f64);
                metrics
                    .oldest_fact_age
                    .set(i64::try_from(now.saturating_sub(oldest)).unwrap_or(i64::MAX));
                let wrote = written.created + written.replaced + written.deleted > 0;
                if wrote && lead.published != Some((snapshot.version, lead.generation)) {
                    let counts = format!(
                        "{} ConfigMaps in namespace {} ({} created, {} replaced, {} deleted)",
                        maps.len(),
                        self.cluster.namespace(),
                        written.created,
                        written.replaced,
                        written.deleted
                    );
                    eprintln!(
                        "os-placement facts sync: {}, {:.1?}",
                        lead.summary(&counts),
                        super::round_secs(started.elapsed())
                    );
                }
                lead.published_at(at, heartbeat.then_some(self.heartbeat));
            }
            Err(e) => {
                metrics.publish_errors.inc();
                lead.retry_at = Some(Instant::now() + RETRY_AFTER);
                eprintln!("os-placement facts sync: {e}");
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ago(seconds: u64) -> Instant {
        Instant::now()
            .checked_sub(Duration::from_secs(seconds))
            .unwrap()
    }

    #[test]
    fn the_heartbeat_is_renewed_when_due_and_changes_once_settled() {
        let mut lead = Lead::new();
        // A new leader waits for its first lookups, then publishes with a heartbeat.
        lead.lookups
            .push(Box::pin(std::future::pending::<(String, ImageFacts)>()));
        assert_eq!(lead.due(), None);
        lead.since = ago(11);
        assert_eq!(lead.due(), Some(true));
        lead.lookups = FuturesUnordered::new();
        lead.published_at(1_000, Some(Duration::from_secs(20)));
        // Nothing changed, heartbeat not due: nothing to write.
        assert_eq!(lead.due(), None);
        // A change is published once its lookups are done.
        lead.generation += 1;
        lead.changed();
        lead.queue.push_back("corp/app:2".into());
        assert_eq!(lead.due(), None);
        lead.queue.clear();
        assert_eq!(lead.due(), Some(false));
        lead.published_at(1_000, None);
        assert_eq!(lead.heartbeat_at, 1_000);
        // The heartbeat falls due; a failed publish waits before trying again.
        lead.heartbeat_due = ago(0);
        assert_eq!(lead.due(), Some(true));
        lead.retry_at = Some(Instant::now() + RETRY_AFTER);
        assert_eq!(lead.due(), None);
    }

    /// An image another namespace (or Secret) starts pulling is read again
    /// with the credentials of all; facts from before the lead are kept.
    #[test]
    fn an_image_pulled_with_other_credentials_is_read_again() {
        use super::super::pull::Pull;
        use std::collections::{BTreeMap, BTreeSet};
        let pull = |namespace: &str| {
            Arc::new(Pull {
                namespace: namespace.into(),
                secrets: vec!["regcred".into()],
                service_account: None,
            })
        };
        let mut lead = Lead::new();
        let image = "corp/app:1".to_string();
        lead.snapshot.pulls = BTreeMap::from([(image.clone(), BTreeSet::from([pull("a")]))]);
        lead.reread_pulled();
        assert!(lead.queue.is_empty(), "first seen: as read");
        lead.reread_pulled();
        assert!(lead.queue.is_empty(), "unchanged");
        lead.snapshot.pulls =
            BTreeMap::from([(image.clone(), BTreeSet::from([pull("a"), pull("b")]))]);
        lead.reread_pulled();
        assert_eq!(lead.queue, [image.as_str()]);
        // Queued once, and not while a lookup of it is in flight.
        lead.reread_pulled();
        assert_eq!(lead.queue.len(), 1);
        lead.queue.clear();
        lead.queued.clear();
        lead.in_flight.insert(image.clone());
        lead.snapshot.pulls = BTreeMap::from([(image.clone(), BTreeSet::from([pull("c")]))]);
        lead.reread_pulled();
        assert!(lead.queue.is_empty());
        lead.in_flight.clear();
        lead.reread_pulled();
        assert_eq!(lead.queue, [image.as_str()]);
        // An image no longer used is forgotten.
        lead.snapshot.pulls.clear();
        lead.reread_pulled();
        assert!(lead.read_with.is_empty());
    }

    #[test]
    fn changes_during_lookups_wait_at_most_max_delay() {
        let mut lead = Lead::new();
        lead.published_at(1_000, Some(Duration::from_secs(20)));
        lead.queue.push_back("corp/app:1".into());
        lead.generation += 1;
        lead.changed();
        assert_eq!(lead.due(), None);
        lead.changed_at = Some(ago(11));
        assert_eq!(lead.due(), Some(false));
    }
}
