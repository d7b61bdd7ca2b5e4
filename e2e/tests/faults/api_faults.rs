//! The facts syncer through the API server's everyday faults, two
//! replicas on the fake API, judged from the outside: watches broken every
//! few seconds (the heartbeat stays fresh, the leader ready, the watches
//! resume from their resource version or bookmark without listing again),
//! lists and watches answered 500, 429 with `Retry-After` and 410 for ten
//! seconds (a change made meanwhile is published within seconds of their
//! end, with bounded retries), and Karpenter's CRDs removed and reinstalled
//! (their objects leave the facts within seconds, the rest goes on, new
//! ones are published without a restart). Throughout, only the leader
//! writes, and nothing is written that does not change.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use os_placement_e2e::faults::api::{ApiFault, FakeApi, Seen};
use serde_json::{json, Value};

use super::setup::{cli_binary, deployment};
use super::syncer::{
    cluster_document, cluster_nodes, heartbeat, is_write, karpenter_cluster, kind, node, pod,
    published, shard_writes, tally, wait_for, Pair, Replica, NODES, NO_REGISTRY,
};

/// The heartbeat these replicas renew: short, so that a gap shows.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// Pods in these clusters: enough to page, few enough to list quickly.
const PODS: usize = 2_000;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Two replicas with a 5 s heartbeat on a fake API holding `objects`,
/// once the first publication is out.
fn start(cli: &Path, dir: &Path, objects: Vec<Value>, ready: impl Fn(&FakeApi) -> bool) -> Pair {
    let api = FakeApi::start(objects).unwrap();
    api.bookmark_every(Duration::from_secs(1));
    let args = ["--heartbeat", "5s"];
    let replicas = [
        Replica::spawn_with(cli, &api, dir, "syncer-a", &args),
        Replica::spawn_with(cli, &api, dir, "syncer-b", &args),
    ];
    let pair = Pair { api, replicas };
    wait_for(Duration::from_secs(120), || ready(&pair.api))
        .unwrap_or_else(|| panic!("nothing published:\n{}", pair.logged()));
    let both = wait_for(Duration::from_secs(30), || {
        pair.replicas
            .iter()
            .all(|r| r.get("/readyz").is_some_and(|(code, _)| code == 200))
    });
    assert!(both.is_some(), "not ready:\n{}", pair.logged());
    pair
}

fn cluster() -> Vec<Value> {
    let mut objects: Vec<Value> = (0..PODS).map(pod).collect();
    objects.extend((0..NODES).map(node));
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "os-placement"}}),
    );
    objects
}

/// What was seen over a while, polled every 200 ms: the oldest heartbeat
/// age, and whether the leader answered `/readyz` 200 every time.
#[derive(Debug, Default)]
struct Watched {
    oldest_beat: u64,
    leader_unready: usize,
    polls: usize,
}

impl Watched {
    fn poll(&mut self, pair: &Pair) {
        self.polls += 1;
        if let Some((at, _)) = heartbeat(&pair.api) {
            self.oldest_beat = self.oldest_beat.max(now().saturating_sub(at));
        }
        let (leader, _) = pair.roles();
        if leader.get("/readyz").map(|(code, _)| code) != Some(200) {
            self.leader_unready += 1;
        }
    }

    /// Polls for `span`, running `act` at each of `at` (offsets into it).
    fn during(pair: &Pair, span: Duration, at: &[Duration], mut act: impl FnMut(usize)) -> Watched {
        let mut watched = Watched::default();
        let started = Instant::now();
        let mut next = 0;
        while started.elapsed() < span {
            if at.get(next).is_some_and(|t| started.elapsed() >= *t) {
                act(next);
                next += 1;
            }
            watched.poll(pair);
            std::thread::sleep(Duration::from_millis(200));
        }
        watched
    }

    fn assert_fresh(&self, pair: &Pair) {
        let bound = 2 * HEARTBEAT.as_secs();
        assert!(
            self.oldest_beat <= bound,
            "the heartbeat was {} s old (bound {bound} s):\n{}",
            self.oldest_beat,
            pair.logged()
        );
        assert_eq!(
            self.leader_unready,
            0,
            "leader unready in {} of {} polls:\n{}",
            self.leader_unready,
            self.polls,
            pair.logged()
        );
    }
}

/// Only the leader wrote among `seen`, and no shard (nothing changed).
fn only_heartbeats(pair: &Pair, seen: &[Seen]) {
    let (leader, _) = pair.roles();
    let writers: Vec<&Seen> = seen
        .iter()
        .filter(|s| is_write(s) && s.path.contains("/configmaps"))
        .filter(|s| s.token.as_deref() != Some(leader.name))
        .collect();
    assert!(writers.is_empty(), "written by the standby: {writers:?}");
    assert_eq!(shard_writes(seen), 0, "{:?}", tally(seen));
}

/// Watches broken every 3 s for 15 s: the heartbeat is never older than two
/// intervals, the leader stays ready, the watches resume where they were
/// (no list again), and nothing but the heartbeat is written. Then a break,
/// a write and etcd's compaction: the watches are answered 410 and list
/// again, and the write is published.
#[test]
fn broken_watches_hold_neither_the_heartbeat_nor_readiness() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pair = start(&cli, dir.path(), cluster(), |api| {
        cluster_nodes(api) == Some(NODES as u64)
    });
    // Bookmarks carry each watch past the other kinds' events.
    std::thread::sleep(Duration::from_secs(2));
    let before = pair.api.seen().len();
    let resets: Vec<Duration> = (0..5).map(|i| Duration::from_secs(3 * i + 1)).collect();
    let watched = Watched::during(&pair, Duration::from_secs(16), &resets, |_| {
        pair.api.reset_watches();
    });
    let seen = pair.api.seen()[before..].to_vec();
    eprintln!(
        "facts sync, watches broken 5 times in 15 s: heartbeat at most {} s old (every {HEARTBEAT:?}), leader unready in {} of {} polls; requests {:?}",
        watched.oldest_beat, watched.leader_unready, watched.polls, tally(&seen)
    );
    watched.assert_fresh(&pair);
    only_heartbeats(&pair, &seen);
    let lists = seen.iter().filter(|s| kind(s).starts_with("LIST")).count();
    assert_eq!(
        lists,
        0,
        "a broken watch resumes without a list: {:?}",
        tally(&seen)
    );
    let watches = seen.iter().filter(|s| kind(s) == "WATCH pods").count();
    assert!(watches >= 2 * 5, "{:?}", tally(&seen));
    // Each break resumed at the first try: routine, not logged.
    for replica in &pair.replicas {
        assert!(
            !replica.logged().contains("failed, retrying"),
            "{}",
            replica.logged()
        );
    }
    for replica in &pair.replicas {
        let errors = replica
            .get("/metrics")
            .map(|(_, text)| text)
            .unwrap_or_default();
        assert!(
            errors.contains("os_placement_sync_watch_errors_total{kind=\"Pod\"}"),
            "{errors}"
        );
        assert!(
            errors.contains("os_placement_sync_watch_stale{kind=\"Pod\"} 0"),
            "{errors}"
        );
    }

    // Compacted history: the resumed watches are told 410 and list again;
    // a change made then is published.
    let before = pair.api.seen().len();
    pair.api.reset_watches();
    let image = format!("{NO_REGISTRY}/shop/after-compaction:1");
    // Written and compacted while the watches are down: their versions
    // are too old to resume from.
    pair.api.put(deployment("after-compaction", &image));
    pair.api.compact();
    let reacted = wait_for(Duration::from_secs(20), || published(&pair.api, &image))
        .unwrap_or_else(|| panic!("{image} not published:\n{}", pair.logged()));
    let seen = pair.api.seen()[before..].to_vec();
    eprintln!(
        "  compacted, then broken: listed again {:?}; a new image published after {reacted:.1?}",
        tally(&seen)
    );
    assert!(
        seen.iter().any(|s| kind(s) == "LIST deployments"),
        "{:?}",
        tally(&seen)
    );
}

/// Ten seconds of lists and watches answered 500, 429 (Retry-After: 1) and
/// 410 in turn; a Deployment created two seconds in is published within
/// 5 s after they end. The heartbeat goes on and the leader stays ready
/// throughout; the retries are paced, not a loop.
#[test]
fn a_change_made_during_api_faults_is_published_within_seconds_of_their_end() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pair = start(&cli, dir.path(), cluster(), |api| {
        cluster_nodes(api) == Some(NODES as u64)
    });
    let before = pair.api.seen().len();
    let image = format!("{NO_REGISTRY}/shop/during-faults:3");
    pair.api.fault(Some(ApiFault::Mixed));
    let watched = Watched::during(
        &pair,
        Duration::from_secs(10),
        &[Duration::from_secs(2)],
        |_| {
            pair.api.put(deployment("during-faults", &image));
        },
    );
    let during = pair.api.seen()[before..].to_vec();
    assert!(
        !published(&pair.api, &image),
        "published while every read failed"
    );
    pair.api.fault(None);
    let reacted = wait_for(Duration::from_secs(30), || published(&pair.api, &image))
        .unwrap_or_else(|| panic!("{image} not published:\n{}", pair.logged()));
    let reads = during
        .iter()
        .filter(|s| s.method == "GET" && !kind(s).ends_with("leases"))
        .count();
    eprintln!(
        "facts sync, 10 s of 500/429/410 on lists and watches: a change made during them published {reacted:.1?} after they ended; heartbeat at most {} s old, leader unready in {} of {} polls; {reads} reads by both replicas during them",
        watched.oldest_beat, watched.leader_unready, watched.polls
    );
    watched.assert_fresh(&pair);
    assert!(
        reacted <= Duration::from_secs(5),
        "{reacted:?}:\n{}",
        pair.logged()
    );
    // 15 kinds, two replicas, jittered doubling to 4 s with Retry-After:
    // a few attempts each, not a loop.
    assert!(reads < 2 * 15 * 12, "{reads} reads: {:?}", tally(&during));
    let (leader, _) = pair.roles();
    // The Pods are listed again (410) after the Deployment: their recovery follows.
    wait_for(Duration::from_secs(20), || {
        leader.logged().contains("watching Pod recovered")
    });
    for line in ["watching Pod failed", "watching Pod recovered"] {
        assert_eq!(
            leader.logged().matches(line).count(),
            1,
            "said once per transition:\n{}",
            leader.logged()
        );
    }
}

/// NodePool sources in the published cluster document.
fn sources(api: &FakeApi) -> Vec<String> {
    cluster_document(api)
        .and_then(|d| d["capacity"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let source = c["source"].as_str().unwrap_or("").to_string();
            match c["blocked"].as_str() {
                Some(why) => format!("{source}: {why}"),
                None => source,
            }
        })
        .collect()
}

const KARPENTER: [&str; 3] = [
    "karpenter.sh/v1",
    "karpenter.k8s.aws/v1",
    "eks.amazonaws.com/v1",
];

/// Karpenter's CRDs removed while two replicas run: within 5 s the
/// NodePools are gone from the facts (none published as blocked) while the
/// Nodes and the heartbeat go on; reinstalled with new objects, they are
/// published within 60 s, without a restart.
#[test]
fn karpenter_removed_and_reinstalled_is_followed_without_a_restart() {
    let Some(cli) = cli_binary().unwrap() else {
        return;
    };
    let objects = karpenter_cluster();
    let pool = objects
        .iter()
        .find(|o| o["kind"] == "NodePool" && o["metadata"]["name"] == "windows2022")
        .cloned()
        .unwrap();
    let class = objects
        .iter()
        .find(|o| o["kind"] == "EC2NodeClass" && o["metadata"]["name"] == "windows2022")
        .cloned()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pair = start(&cli, dir.path(), objects, |api| sources(api).len() == 4);
    let before = pair.api.seen().len();
    let removed = Instant::now();
    for group in KARPENTER {
        pair.api.unserve(group);
    }
    let gone = wait_for(Duration::from_secs(20), || sources(&pair.api).is_empty())
        .map(|_| removed.elapsed())
        .unwrap_or_else(|| {
            panic!(
                "NodePools still published: {:?}\n{}",
                sources(&pair.api),
                pair.logged()
            )
        });
    // Gone for a while: the Nodes and the heartbeat go on, nothing blocked.
    let watched = Watched::during(&pair, Duration::from_secs(12), &[], |_| {});
    watched.assert_fresh(&pair);
    assert_eq!(cluster_nodes(&pair.api), Some(2));
    assert!(sources(&pair.api).is_empty(), "{:?}", sources(&pair.api));
    for replica in &pair.replicas {
        let logged = replica.logged();
        assert_eq!(
            logged
                .matches("nodepools.karpenter.sh is not served")
                .count(),
            1,
            "{logged}"
        );
        assert!(!logged.contains("does not exist"), "{logged}");
        let metrics = replica.get("/metrics").map(|(_, t)| t).unwrap_or_default();
        assert!(
            metrics.contains("os_placement_sync_watch_not_served{kind=\"NodePool\"} 1"),
            "{metrics}"
        );
    }
    // Reinstalled, with a new NodePool and its class.
    let reinstalled = Instant::now();
    for group in KARPENTER {
        pair.api.serve(group);
    }
    let mut pool = pool;
    pool["metadata"]["name"] = json!("windows-new");
    pool["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    pair.api.put(class);
    pair.api.put(pool);
    let back = wait_for(Duration::from_secs(70), || {
        sources(&pair.api)
            .iter()
            .any(|s| s == "NodePool windows-new")
    })
    .map(|_| reinstalled.elapsed())
    .unwrap_or_else(|| {
        panic!(
            "not published again: {:?}\n{}",
            sources(&pair.api),
            pair.logged()
        )
    });
    let seen = pair.api.seen()[before..].to_vec();
    eprintln!(
        "facts sync, Karpenter's CRDs removed: NodePools gone from the facts after {gone:.1?}; reinstalled with a new NodePool: published after {back:.1?}; requests {:?}",
        tally(&seen)
    );
    assert!(gone <= Duration::from_secs(5), "{gone:?}");
    assert!(back <= Duration::from_secs(60), "{back:?}");
    let (leader, _) = pair.roles();
    assert!(seen
        .iter()
        .filter(|s| is_write(s) && s.path.contains("/configmaps"))
        .all(|s| s.token.as_deref() == Some(leader.name)));
}
