//! The ordered ready set shared by the policies.

use std::collections::BTreeSet;

use crate::TaskId;

/// Ready tasks ordered by a policy-defined key, smallest first, ties broken by task id.
///
/// This is the shape scx's user-space schedulers use (a set keyed by
/// `(deadline, timestamp, pid)`): ordered iteration, O(log n) insert and removal,
/// and removal by id through the remembered key.
#[derive(Debug, Clone)]
pub struct ReadySet<K> {
    set: BTreeSet<(K, TaskId)>,
    keys: Vec<Option<K>>,
}

impl<K: Ord + Copy> Default for ReadySet<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Copy> ReadySet<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self { set: BTreeSet::new(), keys: Vec::new() }
    }

    /// Inserts `id` with `key`, replacing its previous entry if any.
    pub fn insert(&mut self, id: TaskId, key: K) {
        if id >= self.keys.len() {
            self.keys.resize(id + 1, None);
        }
        if let Some(old) = self.keys[id].replace(key) {
            self.set.remove(&(old, id));
        }
        self.set.insert((key, id));
    }

    /// Removes `id`, returning its key if it was present.
    pub fn remove(&mut self, id: TaskId) -> Option<K> {
        let key = self.keys.get_mut(id)?.take()?;
        self.set.remove(&(key, id));
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
        self.set.first().copied()
    }

    /// Removes and returns the smallest entry.
    pub fn pop_first(&mut self) -> Option<(K, TaskId)> {
        let (key, id) = self.set.pop_first()?;
        self.keys[id] = None;
        Some((key, id))
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (K, TaskId)> + '_ {
        self.set.iter().copied()
    }

    /// Number of ready tasks.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether no task is ready.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
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
}
