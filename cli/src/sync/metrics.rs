//! What `/metrics` says, in the Prometheus text format (prometheus-client):
//! the images in use, registry lookups and their failures by registry host,
//! the age of the oldest published fact, publish errors, whether this
//! replica leads, when it last published, whether its watches are synced,
//! and by kind: list and watch errors, since when a watch is recovering,
//! whether the API server refuses the kind, whether its facts are stale.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

/// Registry hosts given their own label; lookups at any further host
/// count under `other`, so pods naming ever new hosts cannot grow the
/// metrics without bound.
pub const HOSTS_KEPT: usize = 64;

/// The label of a per-registry series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Host {
    /// `host[:port]` as images name it, or `other`.
    pub host: String,
}

// Defined here, not by the watches that fill it in: the watches report to
// `/metrics` through `serve`, which holds these metrics.
/// How one kind's watch fares, for `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindHealth {
    /// The kind (`Pod`, `NodePool`, ...).
    pub kind: &'static str,
    /// Since when its watch is failing, seconds since the epoch.
    pub recovering_since: Option<u64>,
    /// Whether the API server refuses it, with the HTTP status.
    pub refused: Option<u16>,
    /// Whether its facts are published as stale.
    pub stale: bool,
}

/// The label of a series by where a lookup's credentials came from.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CredentialsLabel {
    /// `pull-secret`, `docker-config`, `aws`, `gcp`, `azure` or `none`.
    pub credentials: String,
}

/// The label of a per-kind series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// The watched kind (`Pod`, `NodePool`, ...).
    pub kind: String,
}

/// The syncer's metrics.
pub struct Metrics {
    registry: Registry,
    /// Distinct images the cluster's workloads use.
    pub images_in_use: Gauge,
    lookups: Family<Host, Counter>,
    failures: Family<Host, Counter>,
    hosts: Mutex<BTreeSet<String>>,
    by_credentials: Family<CredentialsLabel, Counter>,
    failures_by_credentials: Family<CredentialsLabel, Counter>,
    /// Seconds since the oldest published image fact was resolved.
    pub oldest_fact_age: Gauge,
    /// Publishes that failed.
    pub publish_errors: Counter,
    /// 1 while this replica holds the Lease.
    pub leader: Gauge,
    /// When the facts were last published, seconds since the epoch.
    pub last_publish: Gauge<f64, AtomicU64>,
    /// 1 while every kind is listed (or refused, or stale): the facts
    /// can be published.
    pub watches_synced: Gauge,
    watch_errors: Family<KindLabel, Counter>,
    recovering_since: Family<KindLabel, Gauge>,
    not_served: Family<KindLabel, Gauge>,
    stale: Family<KindLabel, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered.
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("os_placement_sync"),
            images_in_use: Gauge::default(),
            lookups: Family::default(),
            failures: Family::default(),
            hosts: Mutex::new(BTreeSet::new()),
            by_credentials: Family::default(),
            failures_by_credentials: Family::default(),
            oldest_fact_age: Gauge::default(),
            publish_errors: Counter::default(),
            leader: Gauge::default(),
            last_publish: Gauge::default(),
            watches_synced: Gauge::default(),
            watch_errors: Family::default(),
            recovering_since: Family::default(),
            not_served: Family::default(),
            stale: Family::default(),
        };
        let r = &mut m.registry;
        r.register(
            "images_in_use",
            "Distinct images the cluster's Pods and workload templates use",
            m.images_in_use.clone(),
        );
        r.register(
            "registry_lookups",
            "Image lookups finished, by registry host",
            m.lookups.clone(),
        );
        r.register(
            "registry_lookup_failures",
            "Image lookups that failed or were refused, by registry host",
            m.failures.clone(),
        );
        r.register(
            "lookups_by_credentials",
            "Image lookups finished, by where their credentials came from (pull-secret, docker-config, aws, gcp, azure, none)",
            m.by_credentials.clone(),
        );
        r.register(
            "lookup_failures_by_credentials",
            "Image lookups that failed or were refused, by where their credentials came from",
            m.failures_by_credentials.clone(),
        );
        r.register_with_unit(
            "oldest_fact_age",
            "Age of the oldest published image fact",
            Unit::Seconds,
            m.oldest_fact_age.clone(),
        );
        r.register(
            "publish_errors",
            "Publishes of the facts that failed",
            m.publish_errors.clone(),
        );
        r.register(
            "leader",
            "Whether this replica holds the Lease and publishes (1) or stands by (0)",
            m.leader.clone(),
        );
        r.register_with_unit(
            "last_publish_timestamp",
            "When the facts were last published, since the epoch",
            Unit::Seconds,
            m.last_publish.clone(),
        );
        r.register(
            "watches_synced",
            "Whether every watch of the cluster is synced (1) or not (0)",
            m.watches_synced.clone(),
        );
        r.register(
            "watch_errors",
            "Errors of a kind's list or watch, each followed by a retry",
            m.watch_errors.clone(),
        );
        r.register_with_unit(
            "watch_recovering_since_timestamp",
            "Since when a kind's watch is failing (its last listed objects kept), since the epoch; 0 when it is not",
            Unit::Seconds,
            m.recovering_since.clone(),
        );
        r.register(
            "watch_not_served",
            "Whether the API server refuses a kind: 404, not served (1), 403, not allowed (2), or serves it (0)",
            m.not_served.clone(),
        );
        r.register(
            "watch_stale",
            "Whether a kind's facts are published as stale: not read for longer than --stale-after (1) or not (0)",
            m.stale.clone(),
        );
        m
    }

    /// Counts an error of `kind`'s list or watch.
    pub fn watch_error(&self, kind: &str) {
        self.watch_errors
            .get_or_create(&KindLabel {
                kind: kind.to_string(),
            })
            .inc();
    }

    /// How each kind's watch fares now.
    pub fn watches(&self, health: &[KindHealth]) {
        for h in health {
            let label = KindLabel {
                kind: h.kind.to_string(),
            };
            let since = h.recovering_since.unwrap_or(0);
            self.recovering_since
                .get_or_create(&label)
                .set(i64::try_from(since).unwrap_or(i64::MAX));
            let refused = match h.refused {
                Some(404) => 1,
                Some(_) => 2,
                None => 0,
            };
            self.not_served.get_or_create(&label).set(refused);
            self.stale.get_or_create(&label).set(i64::from(h.stale));
        }
    }

    /// Brings the counts by credentials up to the resolver's totals
    /// (`(credentials, lookups, failures)`, which only grow).
    pub fn credentials(&self, totals: &[(&'static str, u64, u64)]) {
        for (credentials, lookups, failures) in totals {
            let label = CredentialsLabel {
                credentials: (*credentials).to_string(),
            };
            for (family, total) in [
                (&self.by_credentials, lookups),
                (&self.failures_by_credentials, failures),
            ] {
                let counter = family.get_or_create(&label);
                let seen = counter.get();
                if *total > seen {
                    counter.inc_by(total - seen);
                }
            }
        }
    }

    /// Counts a finished lookup at `host`.
    pub fn lookup(&self, host: &str, failed: bool) {
        let label = Host {
            host: self.label(host),
        };
        self.lookups.get_or_create(&label).inc();
        if failed {
            self.failures.get_or_create(&label).inc();
        }
    }

    /// `host`, or `other` once [`HOSTS_KEPT`] hosts have a label.
    fn label(&self, host: &str) -> String {
        let mut hosts = self
            .hosts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if hosts.contains(host) || hosts.len() < HOSTS_KEPT && hosts.insert(host.to_string()) {
            host.to_string()
        } else {
            "other".to_string()
        }
    }

    /// The text `/metrics` answers.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn lookups_are_counted_by_where_their_credentials_came_from() {
        let metrics = Metrics::new();
        metrics.credentials(&[("aws", 3, 1), ("docker-config", 2, 0)]);
        metrics.credentials(&[("aws", 5, 1), ("docker-config", 2, 0)]);
        let text = metrics.encode();
        for line in [
            "os_placement_sync_lookups_by_credentials_total{credentials=\"aws\"} 5",
            "os_placement_sync_lookup_failures_by_credentials_total{credentials=\"aws\"} 1",
            "os_placement_sync_lookups_by_credentials_total{credentials=\"docker-config\"} 2",
            "os_placement_sync_lookup_failures_by_credentials_total{credentials=\"docker-config\"} 0",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
    }

    #[test]
    fn lookups_are_counted_by_host_and_hosts_are_bounded() {
        let metrics = Metrics::new();
        metrics.lookup("ghcr.io", false);
        metrics.lookup("ghcr.io", true);
        for i in 0..HOSTS_KEPT + 10 {
            metrics.lookup(&format!("r{i}.example"), true);
        }
        metrics.leader.set(1);
        let text = metrics.encode();
        assert!(
            text.contains("os_placement_sync_registry_lookups_total{host=\"ghcr.io\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("os_placement_sync_registry_lookup_failures_total{host=\"ghcr.io\"} 1"),
            "{text}"
        );
        // ghcr.io and 63 more have their own series; the last 11 share one.
        assert!(
            text.contains("os_placement_sync_registry_lookups_total{host=\"other\"} 11"),
            "{text}"
        );
        assert!(
            !text.contains(&format!("r{}.example", HOSTS_KEPT + 5)),
            "{text}"
        );
        assert!(text.contains("os_placement_sync_leader 1"), "{text}");
        assert!(
            text.contains("os_placement_sync_oldest_fact_age_seconds 0"),
            "{text}"
        );
        assert!(
            text.contains("os_placement_sync_last_publish_timestamp_seconds 0"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
