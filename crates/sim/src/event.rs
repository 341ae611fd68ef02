//! The event queue: earliest first, equal times in insertion order.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

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

#[derive(Debug)]
struct Entry<E> {
    time: Time,
    class: Class,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    fn key(&self) -> (Time, Class, u64) {
        (self.time, self.class, self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// A priority queue of events ordered by (time, class, sequence number).
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
}

impl<E> EventQueue<E> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self { heap: BinaryHeap::with_capacity(n), seq: 0 }
    }

    pub(crate) fn push(&mut self, time: Time, class: Class, event: E) {
        self.seq += 1;
        self.heap.push(Reverse(Entry { time, class, seq: self.seq, event }));
    }

    pub(crate) fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    pub(crate) fn pop(&mut self) -> Option<(Time, E)> {
        self.heap.pop().map(|Reverse(e)| (e.time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_come_out_by_class_then_insertion_order() {
        let mut q = EventQueue::with_capacity(4);
        q.push(5, Class::Cpu, "cpu");
        q.push(5, Class::Arrival, "a1");
        q.push(3, Class::Deadline, "early");
        q.push(5, Class::Arrival, "a2");
        q.push(5, Class::Deadline, "dl");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, vec!["early", "a1", "a2", "cpu", "dl"]);
    }
}
