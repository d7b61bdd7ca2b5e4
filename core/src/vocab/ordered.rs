//! Ordered sets and maps collected by insertion.
//!
//! `FromIterator` for `BTreeSet` and `BTreeMap` sorts its input first, and
//! the sort is compiled once per element type: that sort code was about a
//! tenth of the policy module. Inserting one by one needs no sort, and the
//! sets and maps here hold a handful of entries.

use std::collections::{BTreeMap, BTreeSet};

/// `collect_set` / `collect_map` for any iterator.
pub trait CollectOrdered: Iterator + Sized {
    /// The items as a set; of equal items, the first is kept.
    fn collect_set(self) -> BTreeSet<Self::Item>
    where
        Self::Item: Ord,
    {
        let mut set = BTreeSet::new();
        set.extend(self);
        set
    }

    /// The pairs as a map; of equal keys, the last value is kept, as `collect` does.
    fn collect_map<K: Ord, V>(self) -> BTreeMap<K, V>
    where
        Self: Iterator<Item = (K, V)>,
    {
        let mut map = BTreeMap::new();
        map.extend(self);
        map
    }
}

impl<I: Iterator> CollectOrdered for I {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_maps_match_what_collect_builds() {
        let items = [3, 1, 2, 3, 1];
        assert_eq!(
            items.iter().copied().collect_set(),
            items.iter().copied().collect::<BTreeSet<_>>()
        );
        let pairs = [("b", 1), ("a", 2), ("b", 3)];
        let map = pairs.iter().copied().collect_map();
        assert_eq!(map, pairs.iter().copied().collect::<BTreeMap<_, _>>());
        assert_eq!(
            map.get("b"),
            Some(&3),
            "the last value of a repeated key wins"
        );
    }
}
