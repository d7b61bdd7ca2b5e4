//! Ordered sets and maps kept as sorted vectors.
//!
//! A `BTreeSet` or `BTreeMap` compiles its B-tree code once per key and
//! value type, and collecting into one sorts its input with a sort compiled
//! per element type: together about a tenth of the policy module. The sets
//! and maps a request builds hold a handful of entries, where a sorted
//! vector is smaller code and as fast.

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

    /// The items of `self` that `other` does not hold.
    pub fn difference(&self, other: &SortedSet<T>) -> SortedSet<T> {
        SortedSet(
            self.0
                .iter()
                .filter(|x| !other.contains(*x))
                .cloned()
                .collect(),
        )
    }

    /// The smallest item.
    pub fn first(&self) -> Option<&T> {
        self.0.first()
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

/// A small map kept as a vector sorted by key: label maps and node selectors
/// hold a handful of entries, and a B-tree per key and value type costs far
/// more code than this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap(Vec::new())
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// The empty map.
    pub const fn new() -> Self {
        SortedMap(Vec::new())
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.0.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Sets `key` to `value`, returning the value it replaced. Keys that
    /// come in order are appended, so a map read from sorted input (the
    /// syncer publishes its image facts in order) is built in linear time.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.0.last().is_none_or(|(last, _)| *last < key) {
            self.0.push((key, value));
            return None;
        }
        match self.find(&key) {
            Ok(at) => self
                .0
                .get_mut(at)
                .map(|entry| std::mem::replace(&mut entry.1, value)),
            Err(at) => {
                self.0.insert(at, (key, value));
                None
            }
        }
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.find(key)
            .ok()
            .and_then(|at| self.0.get(at))
            .map(|(_, v)| v)
    }

    /// Whether the map has `key`.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// Takes `key` out of the map.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.find(key).ok().map(|at| self.0.remove(at).1)
    }

    /// How many entries the map holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets `key` to `value()` unless the map has the key already.
    pub fn insert_absent<Q>(&mut self, key: &Q, value: impl FnOnce() -> V)
    where
        Q: Ord + ?Sized + ToOwned<Owned = K>,
        K: std::borrow::Borrow<Q>,
    {
        if let Err(at) = self.find(key) {
            self.0.insert(at, (key.to_owned(), value()));
        }
    }

    /// The entries, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<K: Ord, V> Extend<(K, V)> for SortedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, pairs: I) {
        for (key, value) in pairs {
            self.insert(key, value);
        }
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SortedMap<K, V> {
    /// Of equal keys, the last value is kept, as `BTreeMap` does.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        let mut map = SortedMap::new();
        map.extend(pairs);
        map
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<K: serde::Serialize, V: serde::Serialize> serde::Serialize for SortedMap<K, V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for SortedMap<K, V> {
    fn from(pairs: [(K, V); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl<'de, K, V> serde::Deserialize<'de> for SortedMap<K, V>
where
    K: Ord + serde::Deserialize<'de>,
    V: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor(std::marker::PhantomData))
    }
}

struct MapVisitor<K, V>(std::marker::PhantomData<(K, V)>);

impl<'de, K, V> serde::de::Visitor<'de> for MapVisitor<K, V>
where
    K: Ord + serde::Deserialize<'de>,
    V: serde::Deserialize<'de>,
{
    type Value = SortedMap<K, V>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut access: A,
    ) -> Result<Self::Value, A::Error> {
        let mut map = SortedMap::new();
        while let Some((key, value)) = access.next_entry()? {
            map.insert(key, value);
        }
        Ok(map)
    }
}

/// Label maps, node selectors and the other `string: string` maps of the API.
pub type StringMap = SortedMap<String, String>;

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
    fn sorted_maps_keep_keys_in_order_and_the_last_value() {
        let map: SortedMap<&str, i32> = [("b", 1), ("a", 2), ("b", 3)].into_iter().collect();
        assert_eq!(map.iter().collect::<Vec<_>>(), [(&"a", &2), (&"b", &3)]);
        assert_eq!(map.get("b"), Some(&3));
        assert!(map.contains_key("a") && !map.contains_key("c"));
        let mut map = map;
        assert_eq!(map.insert("a", 5), Some(2));
        assert_eq!(map.remove("b"), Some(3));
        assert_eq!(map.len(), 1);
        assert_eq!(serde_json::to_string(&map).unwrap(), r#"{"a":5}"#);
    }

    #[test]
    fn keys_in_order_are_appended_and_keys_out_of_order_still_sorted() {
        let mut map = SortedMap::new();
        for key in ["a", "b", "d"] {
            assert_eq!(map.insert(key, 1), None);
        }
        // Out of order, repeated, and in front of every key.
        assert_eq!(map.insert("c", 2), None);
        assert_eq!(map.insert("d", 3), Some(1));
        assert_eq!(map.insert("0", 4), None);
        let pairs: Vec<_> = map.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(pairs, [("0", 4), ("a", 1), ("b", 1), ("c", 2), ("d", 3)]);
        assert_eq!(map.get("c"), Some(&2));
    }
}
