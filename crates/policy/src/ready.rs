//! The ordered ready set shared by the policies.

use std::collections::BTreeSet;

use crate::TaskId;

/// Up to this many ready tasks the set is a sorted vector; past it, a B-tree.
const SMALL: usize = 32;

/// Ready tasks ordered by a policy-defined key, smallest first, ties broken by task id.
///
/// This is the shape scx's user-space schedulers use (a set keyed by
/// `(deadline, timestamp, pid)`): ordered iteration, insert and removal by id
/// through the remembered key. A few ready tasks live in a vector sorted
/// largest first (the smallest is popped from its end without moving the
/// rest), which beats a B-tree's node walks and allocations at that size;
/// a set that once grows past 32 becomes a B-tree for good.
#[derive(Debug, Clone)]
pub struct ReadySet<K> {
    entries: Entries<K>,
    keys: Vec<Option<K>>,
}

#[derive(Debug, Clone)]
enum Entries<K> {
    /// Sorted in descending order: the smallest entry is last.
    Small(Vec<(K, TaskId)>),
    Large(BTreeSet<(K, TaskId)>),
}

impl<K: Ord + Copy> Default for ReadySet<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Copy> Entries<K> {
    fn insert(&mut self, entry: (K, TaskId)) {
        match self {
            Entries::Small(v) if v.len() < SMALL => {
                // From the largest end: a new job's key (a later deadline or release) is
                // usually among the largest, so the scan is short.
                let at = v.iter().position(|e| *e < entry).unwrap_or(v.len());
                v.insert(at, entry);
            }
            Entries::Small(v) => {
                let mut set: BTreeSet<_> = v.drain(..).collect();
                set.insert(entry);
                *self = Entries::Large(set);
            }
            Entries::Large(set) => {
                set.insert(entry);
            }
        }
    }

    fn remove(&mut self, entry: &(K, TaskId)) {
        match self {
            Entries::Small(v) => {
                let at = v.partition_point(|e| e > entry);
                if v.get(at) == Some(entry) {
                    v.remove(at);
                }
            }
            Entries::Large(set) => {
                set.remove(entry);
            }
        }
    }
}

impl<K: Ord + Copy> ReadySet<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self { entries: Entries::Small(Vec::new()), keys: Vec::new() }
    }

    /// Inserts `id` with `key`, replacing its previous entry if any.
    pub fn insert(&mut self, id: TaskId, key: K) {
        if id >= self.keys.len() {
            self.keys.resize(id + 1, None);
        }
        if let Some(old) = self.keys[id].replace(key) {
            self.entries.remove(&(old, id));
        }
        self.entries.insert((key, id));
    }

    /// Removes `id`, returning its key if it was present.
    pub fn remove(&mut self, id: TaskId) -> Option<K> {
        let key = self.keys.get_mut(id)?.take()?;
        self.entries.remove(&(key, id));
        Some(key)
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: TaskId) -> bool {
        self.key(id).is_some()
    }

    /// The key `id` is stored under.
    pub fn key(&self, id: TaskId) -> Option<K> {
        self.keys.get(id).copied().flatten()
    }

    /// The smallest entry.
    pub fn first(&self) -> Option<(K, TaskId)> {
        match &self.entries {
            Entries::Small(v) => v.last().copied(),
            Entries::Large(set) => set.first().copied(),
        }
    }

    /// Removes and returns the smallest entry.
    pub fn pop_first(&mut self) -> Option<(K, TaskId)> {
        let (key, id) = match &mut self.entries {
            Entries::Small(v) => v.pop()?,
            Entries::Large(set) => set.pop_first()?,
        };
        self.keys[id] = None;
        Some((key, id))
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (K, TaskId)> + '_ {
        let (small, large) = match &self.entries {
            Entries::Small(v) => (Some(v.iter().rev().copied()), None),
            Entries::Large(set) => (None, Some(set.iter().copied())),
        };
        small.into_iter().flatten().chain(large.into_iter().flatten())
    }

    /// Number of ready tasks.
    pub fn len(&self) -> usize {
        match &self.entries {
            Entries::Small(v) => v.len(),
            Entries::Large(set) => set.len(),
        }
    }

    /// Whether no task is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_key_then_id_and_reinserts() {
        let mut r = ReadySet::new();
        r.insert(3, (10u64, 0u64));
        r.insert(1, (10, 0));
        r.insert(2, (5, 7));
        assert_eq!(r.first(), Some(((5, 7), 2)));
        r.insert(2, (20, 0));
        let order: Vec<_> = r.iter().map(|(_, id)| id).collect();
        assert_eq!(order, vec![1, 3, 2]);
        assert_eq!(r.remove(3), Some((10, 0)));
        assert_eq!(r.remove(3), None);
        assert_eq!(r.pop_first(), Some(((10, 0), 1)));
        assert!(!r.contains(1));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn a_set_that_outgrows_the_vector_keeps_its_order() {
        // The same operations on a set of 100 tasks (a B-tree past 32) and on a plain
        // B-tree give the same entries at every step.
        let mut r = ReadySet::new();
        let mut reference = BTreeSet::new();
        let mut keys = vec![None; 100];
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let id = (x >> 33) as usize % 100;
            let key = (x >> 50) % 16;
            match (x >> 20) % 4 {
                0 => {
                    assert_eq!(
                        r.remove(id),
                        keys[id].take().inspect(|k| assert!(reference.remove(&(*k, id))))
                    );
                }
                1 => {
                    let first = reference.pop_first();
                    if let Some((_, i)) = first {
                        keys[i] = None;
                    }
                    assert_eq!(r.pop_first(), first);
                }
                _ => {
                    r.insert(id, key);
                    if let Some(old) = keys[id].replace(key) {
                        reference.remove(&(old, id));
                    }
                    reference.insert((key, id));
                }
            }
            assert_eq!(r.first(), reference.first().copied());
            assert_eq!(r.len(), reference.len());
        }
        assert!(r.iter().eq(reference.iter().copied()));
        assert!(matches!(r.entries, Entries::Large(_)), "the test should reach the B-tree");
    }
}
