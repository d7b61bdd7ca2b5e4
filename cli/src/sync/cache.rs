//! What the syncer knows about each image and since when: successes stand
//! for `refresh_after`, failures for `retry_failed_after` (a negative cache,
//! so a registry that is down is not asked on every round).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use os_placement_core::{ImageFacts, SortedMap};

/// Image facts with the time they were resolved (seconds since the epoch).
pub type Published = (SortedMap<String, ImageFacts>, BTreeMap<String, u64>);

/// The facts of every image resolved so far.
#[derive(Debug)]
pub struct Cache {
    entries: BTreeMap<String, (ImageFacts, u64)>,
    refresh_after: Duration,
    retry_failed_after: Duration,
}

/// Seconds since the epoch (0 for a clock before it).
pub fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

impl Cache {
    /// What was last resolved for `image`, if anything.
    pub fn facts_of(&self, image: &str) -> Option<&ImageFacts> {
        self.entries.get(image).map(|(facts, _)| facts)
    }

    /// An empty cache with these expiries.
    pub fn new(refresh_after: Duration, retry_failed_after: Duration) -> Cache {
        Cache {
            entries: BTreeMap::new(),
            refresh_after,
            retry_failed_after,
        }
    }

    /// Takes what an earlier run or another replica published, where it
    /// is newer than what is kept; an image without a time is stale.
    pub fn seed(&mut self, (facts, times): Published) {
        for (image, facts) in facts {
            let at = times.get(&image).copied().unwrap_or(0);
            match self.entries.get(&image) {
                Some((_, kept)) if *kept >= at => {}
                _ => {
                    self.entries.insert(image, (facts, at));
                }
            }
        }
    }

    /// The images in use that are unknown, or whose facts have expired at `now`.
    pub fn to_resolve(&self, images: &BTreeSet<String>, now: SystemTime) -> Vec<String> {
        let now = epoch_seconds(now);
        images
            .iter()
            .filter(|image| match self.entries.get(*image) {
                None => true,
                // No time: published by an older run, or its times lost.
                Some((_, 0)) => true,
                Some((facts, at)) => {
                    let lasts = match facts {
                        ImageFacts::Platforms(_) => self.refresh_after,
                        _ => self.retry_failed_after,
                    };
                    now.saturating_sub(*at) >= lasts.as_secs()
                }
            })
            .cloned()
            .collect()
    }

    /// Keeps what was just resolved, as of `now`.
    pub fn record(&mut self, resolved: Vec<(String, ImageFacts)>, now: SystemTime) {
        let at = epoch_seconds(now);
        for (image, facts) in resolved {
            self.entries.insert(image, (facts, at));
        }
    }

    /// The facts and times of the images in use; the others are forgotten.
    pub fn published(&mut self, images: &BTreeSet<String>) -> Published {
        self.entries.retain(|image, _| images.contains(image));
        let facts = self
            .entries
            .iter()
            .map(|(image, (facts, _))| (image.clone(), facts.clone()))
            .collect();
        let times = self
            .entries
            .iter()
            .map(|(image, (_, at))| (image.clone(), *at))
            .collect();
        (facts, times)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use os_placement_core::Platform;

    fn linux() -> ImageFacts {
        ImageFacts::Platforms(vec![Platform {
            os: "linux".into(),
            os_version: None,
            architecture: Some("amd64".into()),
        }])
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn set(images: &[&str]) -> BTreeSet<String> {
        images.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn successes_and_failures_expire_after_their_own_time() {
        let mut cache = Cache::new(Duration::from_secs(3600), Duration::from_secs(300));
        let images = set(&["ok:1", "down:1", "new:1"]);
        cache.record(
            vec![
                ("ok:1".into(), linux()),
                ("down:1".into(), ImageFacts::LookupFailed("timeout".into())),
            ],
            at(1_000),
        );
        // Only the unknown image, right after.
        assert_eq!(cache.to_resolve(&images, at(1_010)), ["new:1"]);
        // The failure is retried after 300 s; the success still stands.
        assert_eq!(cache.to_resolve(&images, at(1_300)), ["down:1", "new:1"]);
        // The success is read again after an hour.
        assert_eq!(
            cache.to_resolve(&images, at(4_600)),
            ["down:1", "new:1", "ok:1"]
        );
    }

    #[test]
    fn published_facts_seed_the_cache_and_unused_images_are_dropped() {
        let mut cache = Cache::new(Duration::from_secs(3600), Duration::from_secs(300));
        let facts = SortedMap::from([
            ("ok:1".to_string(), linux()),
            ("old:1".to_string(), linux()),
        ]);
        let times = BTreeMap::from([("ok:1".to_string(), 1_000)]);
        cache.seed((facts, times));
        // old:1 has no time: stale at once; ok:1 stands.
        assert_eq!(
            cache.to_resolve(&set(&["ok:1", "old:1"]), at(1_100)),
            ["old:1"]
        );
        // What is kept and newer than what another replica published stays.
        cache.record(vec![("ok:1".into(), linux())], at(2_000));
        cache.seed((
            SortedMap::from([("ok:1".to_string(), ImageFacts::LookupFailed("old".into()))]),
            BTreeMap::from([("ok:1".to_string(), 1_500)]),
        ));
        let (facts, times) = cache.published(&set(&["ok:1"]));
        assert_eq!(facts.keys().collect::<Vec<_>>(), ["ok:1"]);
        assert_eq!(facts.get("ok:1"), Some(&linux()));
        assert_eq!(times["ok:1"], 2_000);
        assert_eq!(cache.to_resolve(&set(&["old:1"]), at(1_100)), ["old:1"]);
    }
}
