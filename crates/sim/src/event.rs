//! The event queue: earliest first, equal times in insertion order.

use schedlab_policy::Time;

/// Events at the same time are handled in class order, then in insertion
/// order. Releases and wake-ups come first, so a job finishing exactly when
/// its task's next job is released finds that job waiting; CPU timers next;
/// deadline checks last, so a job finishing exactly at its deadline has met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    Arrival = 0,
    Cpu = 1,
    Deadline = 2,
}

/// Bits of an entry's order word left to the insertion sequence, below the class.
const SEQ_BITS: u32 = 62;

#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    /// (time, class, sequence) in one integer, so an ordering is one comparison.
    key: u128,
    event: E,
}

/// Children per node: a shallower heap than a binary one, whose children share a cache line.
const ARITY: usize = 4;

/// A priority queue of events ordered by (time, class, sequence number): a 4-ary min-heap.
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    seq: u64,
}

impl<E: Copy> EventQueue<E> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self { heap: Vec::with_capacity(n), seq: 0 }
    }

    pub(crate) fn push(&mut self, time: Time, class: Class, event: E) {
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS);
        let order = (class as u64) << SEQ_BITS | self.seq;
        let entry = Entry { key: u128::from(time) << 64 | u128::from(order), event };
        let mut i = self.heap.len();
        self.heap.push(entry);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= entry.key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = entry;
    }

    pub(crate) fn peek_time(&self) -> Option<Time> {
        self.heap.first().map(|e| (e.key >> 64) as Time)
    }

    /// Removes and returns the first event if it is due at `time`.
    pub(crate) fn pop_at(&mut self, time: Time) -> Option<E> {
        if self.peek_time() != Some(time) {
            return None;
        }
        let first = self.heap[0].event;
        let last = self.heap.pop().expect("not empty");
        let n = self.heap.len();
        if n > 0 {
            let mut i = 0;
            loop {
                let child = ARITY * i + 1;
                if child >= n {
                    break;
                }
                let end = (child + ARITY).min(n);
                let mut best = child;
                for c in child + 1..end {
                    if self.heap[c].key < self.heap[best].key {
                        best = c;
                    }
                }
                if last.key <= self.heap[best].key {
                    break;
                }
                self.heap[i] = self.heap[best];
                i = best;
            }
            self.heap[i] = last;
        }
        Some(first)
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
        let mut q = EventQueue::with_capacity(4);
        q.push(5, Class::Cpu, "cpu");
        q.push(5, Class::Arrival, "a1");
        q.push(3, Class::Deadline, "early");
        q.push(5, Class::Arrival, "a2");
        q.push(5, Class::Deadline, "dl");
        let order: Vec<_> = drain(&mut q).into_iter().map(|(_, e)| e).collect();
        assert_eq!(order, vec!["early", "a1", "a2", "cpu", "dl"]);
    }

    #[test]
    fn pop_at_takes_only_events_due_at_that_time() {
        let mut q = EventQueue::with_capacity(2);
        q.push(4, Class::Arrival, 'a');
        assert_eq!(q.pop_at(3), None);
        assert_eq!(q.pop_at(4), Some('a'));
        assert_eq!(q.pop_at(4), None);
    }

    #[test]
    fn interleaved_pushes_and_pops_come_out_as_a_stable_sort_would() {
        // A fixed pseudo-random sequence of pushes (times with many ties) and pops.
        let mut q = EventQueue::with_capacity(8);
        let mut reference: Vec<(Time, Class, u32)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut popped = Vec::new();
        let mut expected = Vec::new();
        let mut floor = 0;
        for n in 0..5_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 3 == 0 && !reference.is_empty() {
                let t = q.peek_time().expect("not empty");
                popped.push((t, q.pop_at(t).expect("due")));
                // The stable sort by (time, class) of what is queued gives the next one.
                let i = (0..reference.len()).min_by_key(|&i| (reference[i].0, reference[i].1)).expect("not empty");
                let (rt, _, id) = reference.remove(i);
                expected.push((rt, id));
                floor = rt;
            } else {
                let class = [Class::Arrival, Class::Cpu, Class::Deadline][(x >> 8) as usize % 3];
                let t = floor + (x >> 16) % 7;
                q.push(t, class, n);
                reference.push((t, class, n));
            }
        }
        assert_eq!(popped, expected);
        assert_eq!(drain(&mut q).len(), reference.len());
    }
}
