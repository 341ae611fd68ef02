//! Fixed priority, first-in first-out within a priority (SCHED_FIFO).
//!
//! A higher `priority` runs first and preempts lower ones at once. Within a
//! priority, tasks run in the order they became ready and keep the CPU until
//! they block or finish. As in Linux, a preempted task goes back to the *head*
//! of its priority's queue, so it resumes before its peers.

use std::cmp::Reverse;

use crate::{Arrival, ReadySet, SchedParams, SchedPolicy, Stop, TaskId, Time};

/// The SCHED_FIFO policy.
#[derive(Debug, Clone, Default)]
pub struct Fifo {
    ready: ReadySet<(Reverse<u32>, i64)>,
    prio: Vec<u32>,
    // Tail positions count up and head positions count down, so one ordered set serves both ends.
    tail: i64,
    head: i64,
}

impl Fifo {
    /// An empty policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `id` behind every ready task of its priority.
    pub fn enqueue_tail(&mut self, id: TaskId) {
        self.tail += 1;
        self.ready.insert(id, (Reverse(self.prio[id]), self.tail));
    }

    /// Queues `id` ahead of every ready task of its priority.
    pub fn enqueue_head(&mut self, id: TaskId) {
        self.head -= 1;
        self.ready.insert(id, (Reverse(self.prio[id]), self.head));
    }
}

impl SchedPolicy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        if id >= self.prio.len() {
            self.prio.resize(id + 1, 0);
        }
        self.prio[id] = params.priority;
    }

    fn wake(&mut self, id: TaskId, _now: Time, _arrival: Arrival) {
        if !self.ready.contains(id) {
            self.enqueue_tail(id);
        }
    }

    fn cancel(&mut self, id: TaskId, _now: Time) {
        self.ready.remove(id);
    }

    fn pick_next(&mut self, _now: Time) -> Option<TaskId> {
        self.ready.pop_first().map(|(_, id)| id)
    }

    fn stop(&mut self, id: TaskId, _now: Time, why: Stop) {
        match why {
            Stop::Preempted => self.enqueue_head(id),
            Stop::Expired => self.enqueue_tail(id),
            _ => {}
        }
    }

    fn should_preempt(&mut self, running: TaskId, _now: Time) -> bool {
        self.ready.first().is_some_and(|((Reverse(p), _), _)| p > self.prio[running])
    }

    fn precedes(&self, a: TaskId, b: TaskId, _now: Time) -> bool {
        self.prio[a] > self.prio[b]
    }

    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// With nothing queued, the future depends on the priorities alone: a task queued later
    /// goes behind (or, preempted, ahead of) every other whatever the counters read.
    fn cycle_state(&self, _origin: Time, _out: &mut Vec<u64>) -> bool {
        self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_prios(prios: &[u32]) -> Fifo {
        let mut f = Fifo::new();
        for (id, &priority) in prios.iter().enumerate() {
            f.admit(id, &SchedParams { priority, ..Default::default() });
        }
        f
    }

    #[test]
    fn higher_priority_first_then_arrival_order() {
        let mut f = with_prios(&[1, 5, 1]);
        f.wake(0, 0, Arrival::Resume);
        f.wake(2, 0, Arrival::Resume);
        f.wake(1, 0, Arrival::Resume);
        assert_eq!(f.pick_next(0), Some(1));
        assert_eq!(f.pick_next(0), Some(0));
        assert_eq!(f.pick_next(0), Some(2));
        assert_eq!(f.pick_next(0), None);
    }

    #[test]
    fn preempted_task_returns_to_head() {
        let mut f = with_prios(&[1, 1, 9]);
        f.wake(0, 0, Arrival::Resume);
        f.wake(1, 0, Arrival::Resume);
        assert_eq!(f.pick_next(0), Some(0));
        f.wake(2, 1, Arrival::Resume);
        assert!(f.should_preempt(0, 1));
        f.stop(0, 1, Stop::Preempted);
        assert_eq!(f.pick_next(1), Some(2));
        assert!(!f.should_preempt(2, 1));
        f.stop(2, 2, Stop::Done);
        assert_eq!(f.pick_next(2), Some(0));
    }
}
