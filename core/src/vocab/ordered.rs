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

/// A small set kept as a sorted vector: for the handful of names a pod or a
/// cluster holds, far less code than a B-tree for each element type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortedSet<T>(Vec<T>);

impl<T: Ord + Clone> SortedSet<T> {
    /// The empty set.
    pub fn new() -> Self {
        SortedSet(Vec::new())
    }

    /// Adds `item`; `false` when it was there already.
    pub fn insert(&mut self, item: T) -> bool {
        match self.0.binary_search(&item) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, item);
                true
            }
        }
    }

    /// Whether the set holds `item`.
    pub fn contains<Q: Ord + ?Sized>(&self, item: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
    {
        self.0.binary_search_by(|x| x.borrow().cmp(item)).is_ok()
    }

    /// How many items the set holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The items, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    /// Whether every item is also in `other`.
    pub fn is_subset(&self, other: &SortedSet<T>) -> bool {
        self.0.iter().all(|x| other.contains(x))
    }

    /// The items both sets hold.
    pub fn intersection(&self, other: &SortedSet<T>) -> SortedSet<T> {
        SortedSet(
            self.0
                .iter()
                .filter(|x| other.contains(*x))
                .cloned()
                .collect(),
        )
    }

    /// The items either set holds.
    pub fn union(&self, other: &SortedSet<T>) -> SortedSet<T> {
        let mut all = self.clone();
        all.extend(other.0.iter().cloned());
        all
    }
}

impl<T: Ord + Clone> Extend<T> for SortedSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.insert(item);
        }
    }
}

impl<T: Ord + Clone> FromIterator<T> for SortedSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut set = SortedSet::new();
        set.extend(items);
        set
    }
}

impl<T> IntoIterator for SortedSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a SortedSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_sets_hold_each_item_once_in_order() {
        let set: SortedSet<&str> = ["b", "a", "b", "c"].into_iter().collect();
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(set.contains("b") && !set.contains("d"));
        let other: SortedSet<&str> = ["c", "d"].into_iter().collect();
        assert_eq!(
            set.intersection(&other).into_iter().collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(set.union(&other).len(), 4);
        assert!(!set.is_subset(&other) && set.intersection(&other).is_subset(&set));
    }

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
