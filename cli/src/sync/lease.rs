//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's
//! `tools/leaderelection` does it (`tryAcquireOrRenew`, `release`): the
//! leader renews the Lease every third of its duration by an update that
//! carries the resourceVersion it last read or wrote, so of two replicas
//! that find it free only one succeeds (the other gets 409 Conflict); a
//! standby reads it every [`RETRY`] and takes it once its record has not
//! changed for the Lease's duration, by this process's clock (no trust in
//! another node's clock); a leader that cannot renew within two thirds of
//! the duration stops leading before a standby may take over; on shutdown
//! the leader empties the holder, and the standby takes over at its next read.
//!
//! The crates that exist were not used: kube-leader-election 0.44 takes
//! the Lease with merge patches that carry no resourceVersion (two
//! standbys may both take it) and judges expiry by the holder's clock;
//! kube-lease-manager 0.12 keeps reporting leadership while its renewals
//! fail, past the Lease's expiry.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::watch;

/// The Lease of the facts syncer, in the facts namespace.
pub const LEASE_NAME: &str = "os-placement-facts-sync";

/// How often a standby reads the Lease (client-go's default retry period).
pub const RETRY: Duration = Duration::from_secs(2);

/// What of a Lease tells a change of its holder's record.
type Record = (Option<String>, Option<String>, Option<i32>, Option<i32>);

fn record(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    (
        spec.holder_identity,
        spec.renew_time.map(|t| t.0.to_string()),
        spec.lease_duration_seconds,
        spec.lease_transitions,
    )
}

/// One replica's view of the election.
pub struct Elector {
    api: Api<Lease>,
    identity: String,
    duration: Duration,
    /// The Lease as last read or written: its resourceVersion guards the next update.
    lease: Option<Lease>,
    /// When its record last changed, by this process's clock.
    observed_at: Instant,
    leading: bool,
}

impl Elector {
    /// A candidate called `identity` for the Lease in `namespace`, holding it
    /// for `duration` once taken.
    pub fn new(client: Client, namespace: &str, identity: String, duration: Duration) -> Elector {
        Elector {
            api: Api::namespaced(client, namespace),
            identity,
            duration,
            lease: None,
            observed_at: Instant::now(),
            leading: false,
        }
    }

    /// This replica's name in the Lease.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn spec(&self, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(i32::try_from(self.duration.as_secs()).unwrap_or(15)),
            acquire_time: Some(acquired.unwrap_or_else(|| now.clone())),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// Replaces the Lease read last with `spec`; `Ok(false)` on a conflict.
    async fn update(&mut self, mut lease: Lease, spec: LeaseSpec) -> Result<bool, kube::Error> {
        lease.spec = Some(spec);
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.lease = Some(written);
                self.observed_at = Instant::now();
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// One attempt to take or renew the Lease: whether this replica leads now.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        // The leader's fast path: update what it wrote last.
        if let (true, Some(lease)) = (self.leading, self.lease.clone()) {
            let spec = lease.spec.clone().unwrap_or_default();
            let renewed = self.spec(spec.acquire_time, spec.lease_transitions.unwrap_or(0));
            if self.update(lease, renewed).await.unwrap_or(false) {
                return Ok(true);
            }
        }
        let Some(current) = self.api.get_opt(LEASE_NAME).await? else {
            return self.create().await;
        };
        if self.lease.as_ref().map(record) != Some(record(&current)) {
            self.observed_at = Instant::now();
        }
        self.lease = Some(current.clone());
        let spec = current.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let lasts = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
        );
        let held_by_other = !holder.is_empty() && holder != self.identity;
        if held_by_other && self.observed_at.elapsed() < lasts {
            self.leading = false;
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        let next = if holder == self.identity {
            self.spec(spec.acquire_time, transitions)
        } else {
            self.spec(None, transitions.saturating_add(1))
        };
        self.leading = self.update(current, next).await?;
        Ok(self.leading)
    }

    async fn create(&mut self) -> Result<bool, kube::Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(LEASE_NAME.to_string()),
                ..ObjectMeta::default()
            },
            spec: Some(self.spec(None, 0)),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.lease = Some(created);
                self.observed_at = Instant::now();
                self.leading = true;
                Ok(true)
            }
            // Another replica created it first.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.leading = false;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up, if held: no holder, a one-second duration.
    pub async fn release(&mut self) -> Result<(), kube::Error> {
        let (true, Some(lease)) = (self.leading, self.lease.clone()) else {
            return Ok(());
        };
        self.leading = false;
        let transitions = lease.spec.as_ref().and_then(|s| s.lease_transitions);
        let now = MicroTime(Timestamp::now());
        let released = LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: transitions,
            ..LeaseSpec::default()
        };
        // A conflict: another replica holds it already.
        self.update(lease, released).await.map(drop)
    }

    /// Stops leading without writing (the renewal deadline passed).
    fn demote(&mut self) {
        self.leading = false;
    }
}

/// Runs the election until `stop` turns true, telling `leading` whether
/// this replica leads; the Lease is released on the way out.
pub async fn run(
    mut elector: Elector,
    leading: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let renew_every = elector.duration / 3;
    let deadline = elector.duration * 2 / 3;
    let mut renewed: Option<Instant> = None;
    while !*stop.borrow() {
        // A leader's attempt may take no longer than its deadline allows.
        let budget = match renewed {
            Some(at) => deadline.saturating_sub(at.elapsed()),
            None => renew_every,
        };
        let attempt = tokio::time::timeout(budget, elector.try_acquire_or_renew()).await;
        let succeeded = matches!(attempt, Ok(Ok(true)));
        match attempt {
            Ok(Ok(true)) => renewed = Some(Instant::now()),
            Ok(Ok(false)) => renewed = None,
            Ok(Err(e)) => eprintln!("os-placement facts sync: Lease {LEASE_NAME}: {e}"),
            Err(_) => eprintln!(
                "os-placement facts sync: Lease {LEASE_NAME}: no answer within {budget:?}"
            ),
        }
        if renewed.is_some_and(|at| at.elapsed() >= deadline) {
            eprintln!("os-placement facts sync: Lease {LEASE_NAME} not renewed within {deadline:?}: stepping down");
            elector.demote();
            renewed = None;
        }
        leading
            .send_if_modified(|was| std::mem::replace(was, renewed.is_some()) != renewed.is_some());
        // A failed renewal is tried again sooner, as a standby tries.
        let wait = if succeeded {
            renew_every
        } else {
            RETRY.min(renew_every)
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            // Stopped, or nothing left to stop it: either way, done.
            changed = stop.changed() => if changed.is_err() { break },
        }
    }
    leading.send_replace(false);
    match tokio::time::timeout(RETRY, elector.release()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("os-placement facts sync: cannot release Lease {LEASE_NAME}: {e}"),
        Err(_) => {
            eprintln!("os-placement facts sync: cannot release Lease {LEASE_NAME}: no answer")
        }
    }
}

/// A name for this replica: the pod's (`HOSTNAME`), its process and start time.
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "os-placement".to_string());
    let nanos = Timestamp::now().subsec_nanosecond();
    format!("{host}_{}_{nanos:08x}", std::process::id())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_renewal_is_a_changed_record() {
        let lease = |renewed: i64, holder: &str| Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                renew_time: Some(MicroTime(Timestamp::from_second(renewed).unwrap())),
                lease_duration_seconds: Some(15),
                ..LeaseSpec::default()
            }),
        };
        assert_eq!(record(&lease(10, "a")), record(&lease(10, "a")));
        assert_ne!(record(&lease(10, "a")), record(&lease(15, "a")));
        assert_ne!(record(&lease(10, "a")), record(&lease(10, "b")));
    }

    /// Two candidates on the fake API server of the fault suite, which
    /// answers 409 to a stale resourceVersion as the API server does.
    #[test]
    fn one_candidate_leads_and_the_other_takes_over_on_release_or_expiry() {
        let api = os_placement_e2e::faults::api::FakeApi::start(Vec::new()).unwrap();
        // As `facts sync` does at start.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let config = kube::Config::new(api.url().parse().unwrap());
            let client = Client::try_from(config).unwrap();
            let lasts = Duration::from_secs(3);
            let mut a = Elector::new(client.clone(), "facts", "a".into(), lasts);
            let mut b = Elector::new(client, "facts", "b".into(), lasts);
            // Both find it free at once: one creates it.
            let (took_a, took_b) = tokio::join!(a.try_acquire_or_renew(), b.try_acquire_or_renew());
            let (mut leader, mut other) = match (took_a.unwrap(), took_b.unwrap()) {
                (true, false) => (a, b),
                (false, true) => (b, a),
                both => panic!("{both:?}"),
            };
            assert!(leader.try_acquire_or_renew().await.unwrap());
            assert!(!other.try_acquire_or_renew().await.unwrap());
            // Released: the other takes it at its next attempt.
            leader.release().await.unwrap();
            assert!(other.try_acquire_or_renew().await.unwrap());
            assert!(!leader.try_acquire_or_renew().await.unwrap());
            // Not renewed for its duration: taken over.
            tokio::time::sleep(lasts / 2).await;
            assert!(!leader.try_acquire_or_renew().await.unwrap());
            tokio::time::sleep(lasts).await;
            assert!(leader.try_acquire_or_renew().await.unwrap());
            // The one it was taken from cannot renew with what it wrote last.
            assert!(!other.try_acquire_or_renew().await.unwrap());
        });
        let lease = &api.objects("Lease")[0];
        assert_eq!(lease["spec"]["leaseTransitions"], 2);
        assert_eq!(lease["spec"]["leaseDurationSeconds"], 3);
    }

    #[test]
    fn identities_name_the_process() {
        let me = identity();
        assert!(me.contains(&format!("_{}_", std::process::id())), "{me}");
    }
}
