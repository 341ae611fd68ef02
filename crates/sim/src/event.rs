//! The event queue: earliest first, equal times in insertion order.
//!
//! Most events come from a fixed set of sources that each have at most one event pending,
//! a newer one replacing the older: a CPU's timer (its task's phase end or run limit) and a
//! ready queue's policy timer. Those live in *slots*, one per source, the first of them
//! remembered; all other events (releases, I/O completions,
//! deadline checks) in a binary heap. A replaced or cancelled timer is gone at once instead
//! of lingering in the heap until its time. Either way an event's key is (time, class,
//! sequence number), the sequence taken from one counter when the event is scheduled, so
//! the order is the same as that of one queue holding every event.

use schedlab_policy::Time;

/// Events at the same time are handled in class order, then in insertion
/// order. Releases and wake-ups come first, so a job finishing exactly when
/// its task's next job is released finds that job waiting; CPU timers next;
/// deadline checks last, so a job finishing exactly at its deadline has met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum EventClass {
    Arrival = 0,
    Cpu = 1,
    Deadline = 2,
}

/// Bits of an entry's order word left to the insertion sequence, below the class.
const SEQ_BITS: u32 = 62;

#[derive(Debug, Clone, Copy)]
struct QueueEntry<E> {
    /// (time, class, sequence) in one integer, so an ordering is one comparison.
    key: u128,
    event: E,
}

/// The key of an empty slot: above every real key, whose class bits are never both set.
const EMPTY: u128 = u128::MAX;

/// A priority queue of events ordered by (time, class, sequence number): a binary min-heap
/// plus the slots of sources with one pending event each.
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    heap: Vec<QueueEntry<E>>,
    seq: u64,
    /// Each slot's key (`EMPTY` when none).
    slot_keys: Vec<u128>,
    slot_events: Vec<Option<E>>,
    /// The slot with the smallest key.
    first: usize,
}

impl<E: Copy> EventQueue<E> {
    /// A queue with room for `n` heap events and `slots` single-event sources.
    pub(crate) fn with_capacity(n: usize, slots: usize) -> Self {
        let slots = slots.max(1);
        Self {
            heap: Vec::with_capacity(n),
            seq: 0,
            slot_keys: vec![EMPTY; slots],
            slot_events: vec![None; slots],
            first: 0,
        }
    }

    fn key(&mut self, time: Time, class: EventClass) -> u128 {
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS);
        let order = (class as u64) << SEQ_BITS | self.seq;
        u128::from(time) << 64 | u128::from(order)
    }

    /// Schedules `event` in `slot`, replacing the slot's pending event; returns the replaced
    /// event's time.
    pub(crate) fn arm(
        &mut self,
        slot: usize,
        time: Time,
        class: EventClass,
        event: E,
    ) -> Option<Time> {
        let key = self.key(time, class);
        self.slot_events[slot] = Some(event);
        self.set_slot(slot, key)
    }

    /// Cancels `slot`'s pending event; returns its time.
    pub(crate) fn disarm(&mut self, slot: usize) -> Option<Time> {
        // Usually already empty: the timer that fired is what stops its task.
        if self.slot_keys[slot] == EMPTY {
            return None;
        }
        self.slot_events[slot] = None;
        self.set_slot(slot, EMPTY)
    }

    fn set_slot(&mut self, slot: usize, key: u128) -> Option<Time> {
        let old = std::mem::replace(&mut self.slot_keys[slot], key);
        if key < self.slot_keys[self.first] {
            self.first = slot;
        } else if slot == self.first {
            // The first slot's key went up: look for the smallest again. There are as many
            // slots as CPUs and ready queues, a handful.
            let keys = &self.slot_keys;
            self.first =
                (0..keys.len()).fold(0, |best, i| if keys[i] < keys[best] { i } else { best });
        }
        (old != EMPTY).then_some((old >> 64) as Time)
    }

    /// The slot whose event comes first, and its key.
    fn first_slot(&self) -> (usize, u128) {
        (self.first, self.slot_keys[self.first])
    }

    pub(crate) fn push(&mut self, time: Time, class: EventClass, event: E) {
        let entry = QueueEntry { key: self.key(time, class), event };
        self.heap.push(entry);
        self.sift_up(self.heap.len() - 1, entry);
    }

    /// Puts `entry` at `hole` or above it, moving larger parents down.
    fn sift_up(&mut self, mut hole: usize, entry: QueueEntry<E>) {
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.heap[parent].key <= entry.key {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = entry;
    }

    pub(crate) fn peek_time(&self) -> Option<Time> {
        let heap = self.heap.first().map_or(EMPTY, |e| e.key);
        let key = heap.min(self.first_slot().1);
        (key != EMPTY).then_some((key >> 64) as Time)
    }

    /// Removes and returns the first event if it is due at `time`.
    pub(crate) fn pop_at(&mut self, time: Time) -> Option<E> {
        let (slot, slot_key) = self.first_slot();
        let heap_key = self.heap.first().map_or(EMPTY, |e| e.key);
        if slot_key < heap_key {
            if (slot_key >> 64) as Time != time {
                return None;
            }
            let event = self.slot_events[slot].take();
            self.set_slot(slot, EMPTY);
            return event;
        }
        if heap_key == EMPTY || (heap_key >> 64) as Time != time {
            return None;
        }
        let first = self.heap[0];
        let last = self.heap.pop().expect("not empty");
        let n = self.heap.len();
        if n == 0 {
            return Some(first.event);
        }
        // Floyd's deletion: move the hole down to a leaf along the smaller children, then
        // let the last entry rise from there (it usually belongs near the bottom).
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < n {
            child += usize::from(self.heap[child + 1].key < self.heap[child].key);
            self.heap[hole] = self.heap[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child < n {
            self.heap[hole] = self.heap[child];
            hole = child;
        }
        self.sift_up(hole, last);
        Some(first.event)
    }
}

impl<E: Copy> EventQueue<E> {
    /// Writes the pending events in the order they will come out: each one's time relative
    /// to `origin`, class, slot (or none) and `code` of the event. Sequence numbers are left
    /// out: only their order counts, and that is the order written.
    pub(crate) fn cycle_state(
        &self,
        origin: Time,
        out: &mut Vec<u64>,
        code: impl Fn(&E) -> [u64; 2],
    ) {
        let mut pending: Vec<(u128, u64, E)> =
            self.heap.iter().map(|e| (e.key, u64::MAX, e.event)).collect();
        for (slot, (&key, event)) in self.slot_keys.iter().zip(&self.slot_events).enumerate() {
            if let (true, Some(event)) = (key != EMPTY, event) {
                pending.push((key, slot as u64, *event));
            }
        }
        pending.sort_unstable_by_key(|p| p.0);
        out.push(pending.len() as u64);
        for (key, slot, event) in pending {
            let time = (key >> 64) as Time;
            let class = (key as u64) >> SEQ_BITS;
            let [a, b] = code(&event);
            out.extend([time.wrapping_sub(origin), class, slot, a, b]);
        }
    }

    /// Moves every pending event `by` later; their order stays.
    pub(crate) fn shift(&mut self, by: Time) {
        let by = u128::from(by) << 64;
        for e in &mut self.heap {
            e.key += by;
        }
        for k in &mut self.slot_keys {
            if *k != EMPTY {
                *k += by;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain<E: Copy>(q: &mut EventQueue<E>) -> Vec<(Time, E)> {
        std::iter::from_fn(|| {
            let t = q.peek_time()?;
            q.pop_at(t).map(|e| (t, e))
        })
        .collect()
    }

    #[test]
    fn equal_times_come_out_by_class_then_insertion_order() {
        let mut q = EventQueue::with_capacity(4, 0);
        q.push(5, EventClass::Cpu, "cpu");
        q.push(5, EventClass::Arrival, "a1");
        q.push(3, EventClass::Deadline, "early");
        q.push(5, EventClass::Arrival, "a2");
        q.push(5, EventClass::Deadline, "dl");
        let order: Vec<_> = drain(&mut q).into_iter().map(|(_, e)| e).collect();
        assert_eq!(order, vec!["early", "a1", "a2", "cpu", "dl"]);
    }

    #[test]
    fn pop_at_takes_only_events_due_at_that_time() {
        let mut q = EventQueue::with_capacity(2, 1);
        q.push(4, EventClass::Arrival, 'a');
        assert_eq!(q.pop_at(3), None);
        assert_eq!(q.pop_at(4), Some('a'));
        assert_eq!(q.pop_at(4), None);
    }

    #[test]
    fn a_slot_holds_one_event_and_orders_with_the_heap() {
        let mut q = EventQueue::with_capacity(2, 3);
        q.push(5, EventClass::Arrival, "release");
        assert_eq!(q.arm(1, 9, EventClass::Cpu, "cpu late"), None);
        assert_eq!(q.arm(1, 5, EventClass::Cpu, "cpu"), Some(9));
        q.arm(2, 5, EventClass::Arrival, "timer");
        assert_eq!(q.arm(0, 2, EventClass::Cpu, "cancelled"), None);
        assert_eq!(q.disarm(0), Some(2));
        assert_eq!(q.disarm(0), None);
        let order: Vec<_> = drain(&mut q).into_iter().map(|(_, e)| e).collect();
        assert_eq!(order, vec!["release", "timer", "cpu"]);
    }

    #[test]
    fn interleaved_pushes_arms_and_pops_come_out_as_a_stable_sort_would() {
        // A fixed pseudo-random sequence of pushes (times with many ties), slot events armed,
        // re-armed and cancelled, and pops, against a list kept in scheduling order.
        const SLOTS: usize = 5;
        let mut q = EventQueue::with_capacity(8, SLOTS);
        // (time, class, event id, slot)
        let mut reference: Vec<(Time, EventClass, u32, Option<usize>)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut popped = Vec::new();
        let mut expected = Vec::new();
        let mut floor = 0;
        for n in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let class =
                [EventClass::Arrival, EventClass::Cpu, EventClass::Deadline][(x >> 8) as usize % 3];
            let t = floor + (x >> 16) % 7;
            let slot = (x >> 24) as usize % SLOTS;
            match x % 8 {
                0..=2 if !reference.is_empty() => {
                    let t = q.peek_time().expect("not empty");
                    popped.push((t, q.pop_at(t).expect("due")));
                    // The stable sort by (time, class) of what is pending gives the next one.
                    let i = (0..reference.len())
                        .min_by_key(|&i| (reference[i].0, reference[i].1))
                        .expect("not empty");
                    let (rt, _, id, _) = reference.remove(i);
                    expected.push((rt, id));
                    floor = rt;
                }
                3 | 4 => {
                    let old = reference
                        .iter()
                        .position(|r| r.3 == Some(slot))
                        .map(|i| reference.remove(i).0);
                    assert_eq!(q.arm(slot, t, class, n), old);
                    reference.push((t, class, n, Some(slot)));
                }
                5 => {
                    let old = reference
                        .iter()
                        .position(|r| r.3 == Some(slot))
                        .map(|i| reference.remove(i).0);
                    assert_eq!(q.disarm(slot), old);
                }
                _ => {
                    q.push(t, class, n);
                    reference.push((t, class, n, None));
                }
            }
        }
        assert_eq!(popped, expected);
        assert_eq!(drain(&mut q).len(), reference.len());
    }
}
