//! The keys a sync wrote, per table: what a complete run keeps (the rest is marked
//! removed), and whether an entity was written already in the run.
//!
//! A sync of the `xlarge` world ends with about 800,000 keys and scopes. As 16-byte
//! digests in hash sets (room for the load factor, and old and new tables side by
//! side while a set doubles) they take 23 MB for those counts. Nearly every key and
//! scope is one integer (an organization, user or project id), so those are kept as
//! themselves, 8 bytes each, and the rest (the experiments' scopes) as 128-bit
//! digests of their text, both in sorted vectors grown by an eighth at a time: 8-10
//! MB. At the sync's peak, while the project list streams, heaptrack counts 2-5 MB
//! here against 6 MB for the hash sets. Documents
//! are fetched in key order, so most keys arrive above every key before them and
//! are appended; the few that do not wait in a small hash set that is merged in once
//! it holds an eighth of the sorted part.

use std::collections::HashSet;
use std::hash::Hash;

use rusqlite::types::Value;

use super::table::{SeenKeys, key_text};

/// A set of keys of one table, as [`crate::mirror::table::key_text`] tells them
/// apart: `7` and `"7"` are one key, as they are one key in an integer column.
#[derive(Debug, Default)]
pub struct KeySet {
    ids: SortedSet<i64>,
    /// Keys that are not one integer, by a digest of their text. Two keys sharing a
    /// digest is a chance of about 2^-128 per pair.
    digests: SortedSet<u128>,
}

/// A key as the set keeps it.
enum Compact {
    Id(i64),
    Digest(u128),
}

fn compact(key: &[Value]) -> Compact {
    if let [Value::Integer(id)] = key {
        return Compact::Id(*id);
    }
    let text = key_text(key);
    match text.parse::<i64>() {
        // `+7` and `07` parse too, but are other keys than `7`.
        Ok(id) if id.to_string() == text => Compact::Id(id),
        _ => Compact::Digest(xxhash_rust::xxh3::xxh3_128(text.as_bytes())),
    }
}

impl KeySet {
    /// Adds a key; false when it was there already.
    pub fn insert(&mut self, key: &[Value]) -> bool {
        match compact(key) {
            Compact::Id(id) => self.ids.insert(id),
            Compact::Digest(digest) => self.digests.insert(digest),
        }
    }

    /// Whether `key` is in the set.
    pub fn contains(&self, key: &[Value]) -> bool {
        match compact(key) {
            Compact::Id(id) => self.ids.contains(id),
            Compact::Digest(digest) => self.digests.contains(digest),
        }
    }
}

impl SeenKeys for KeySet {
    fn saw(&self, key: &[Value]) -> bool {
        self.contains(key)
    }
}

/// A set of plain values: a sorted vector, and the values that came out of order
/// since it was last merged.
#[derive(Debug)]
struct SortedSet<T> {
    /// Ascending, no value twice, none of `recent`.
    sorted: Vec<T>,
    recent: HashSet<T>,
}

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet {
            sorted: Vec::new(),
            recent: HashSet::new(),
        }
    }
}

/// Fewest out-of-order values gathered before a merge.
const MERGE_AT_LEAST: usize = 1024;

impl<T: Ord + Hash + Copy> SortedSet<T> {
    fn insert(&mut self, value: T) -> bool {
        if self.sorted.last().is_none_or(|last| value > *last) {
            // Above everything sorted, and so above everything in `recent` too.
            grow_for(&mut self.sorted, 1);
            self.sorted.push(value);
            return true;
        }
        if self.sorted.binary_search(&value).is_ok() || !self.recent.insert(value) {
            return false;
        }
        if self.recent.len() >= (self.sorted.len() / 8).max(MERGE_AT_LEAST) {
            self.merge();
        }
        true
    }

    fn contains(&self, value: T) -> bool {
        self.sorted.binary_search(&value).is_ok() || self.recent.contains(&value)
    }

    /// Moves `recent` into `sorted`, merging from the back so no second vector of
    /// the set's size is needed.
    fn merge(&mut self) {
        let mut added: Vec<T> = self.recent.drain().collect();
        added.sort_unstable();
        let old = self.sorted.len();
        grow_for(&mut self.sorted, added.len());
        self.sorted.extend_from_slice(&added);
        // The copy of `added` at the end only lengthens the vector. `sorted[..left]`
        // and `added[..right]` are still to place, everything from `to` on is in its
        // place, and `to` never falls below `left`.
        let (mut left, mut right, mut to) = (old, added.len(), self.sorted.len());
        while right > 0 {
            to -= 1;
            if left > 0 && self.sorted[left - 1] > added[right - 1] {
                self.sorted[to] = self.sorted[left - 1];
                left -= 1;
            } else {
                self.sorted[to] = added[right - 1];
                right -= 1;
            }
        }
    }
}

/// Makes room for `extra` more values, growing by an eighth rather than doubling:
/// a vector that doubles is up to half empty.
fn grow_for<T>(values: &mut Vec<T>, extra: usize) {
    if values.capacity() - values.len() < extra {
        values.reserve_exact(extra + (values.len() / 8).max(MERGE_AT_LEAST));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i64) -> Vec<Value> {
        vec![Value::Integer(n)]
    }

    #[test]
    fn answers_contains_after_many_inserts_in_any_order() {
        let mut set = KeySet::default();
        // Mostly ascending with stragglers, as fetches finish; every tenth id left out.
        let ids: Vec<i64> = (0..200_000i64)
            .map(|i| if i % 97 == 0 { i * 7 % 200_000 } else { i })
            .filter(|id| id % 10 != 3)
            .collect();
        let mut fresh = 0;
        for id in &ids {
            fresh += usize::from(set.insert(&int(*id)));
        }
        let distinct: HashSet<i64> = ids.iter().copied().collect();
        assert_eq!(fresh, distinct.len(), "true once per key");
        for id in -5..200_005i64 {
            assert_eq!(set.contains(&int(id)), distinct.contains(&id), "id {id}");
        }
        assert!(!set.insert(&int(ids[12_345])), "a key added again");
        assert!(set.ids.sorted.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn keys_of_other_shapes_are_told_apart_by_their_text() {
        let mut set = KeySet::default();
        let text = |s: &str| Value::Text(s.into());
        let keys = [
            vec![text("user"), Value::Integer(4)],
            vec![text("organization"), Value::Integer(4)],
            vec![text("+7")],
            vec![text("07")],
            vec![Value::Integer(-9), text("2026-03-01")],
        ];
        for key in &keys {
            assert!(set.insert(key));
        }
        for key in &keys {
            assert!(set.contains(key));
        }
        assert!(!set.contains(&[text("user"), Value::Integer(5)]));
        assert!(!set.contains(&int(7)), "`+7` and `07` are not 7");
        // As in an integer column, 12 and "12" are one key.
        assert!(set.insert(&[text("12")]));
        assert!(!set.insert(&int(12)));
        assert!(set.contains(&[text("12")]) && set.contains(&int(12)));
        assert!(!set.insert(&[text("user"), Value::Integer(4)]));
    }

    #[test]
    fn a_descending_run_merges_into_the_sorted_part() {
        let mut set = SortedSet::default();
        for v in (0..10_000u128).rev() {
            assert!(set.insert(v * 3));
        }
        for v in 0..30_000u128 {
            assert_eq!(set.contains(v), v % 3 == 0, "{v}");
        }
        set.merge();
        assert_eq!(
            set.sorted,
            (0..10_000u128).map(|v| v * 3).collect::<Vec<_>>()
        );
    }
}
