//! Fixed priority with a time quantum (SCHED_RR).
//!
//! Like [`fifo`](crate::fifo), but a task that has run for a whole quantum
//! goes to the tail of its priority's queue with a fresh quantum. A preempted
//! task keeps the rest of its quantum and returns to the head, as in Linux;
//! a task that blocks also keeps what is left of its quantum.

use crate::cycle::{self, StateWriter};
use crate::fifo::Fifo;
use crate::{Arrival, Duration, SchedParams, SchedPolicy, Stop, TaskId, Time};

/// The SCHED_RR policy.
#[derive(Debug, Clone)]
pub struct RoundRobin {
    fifo: Fifo,
    quantum: Duration,
    left: Vec<Duration>,
    since: Vec<Time>,
}

impl RoundRobin {
    /// A policy giving each task `quantum` at a time (must be > 0).
    pub fn new(quantum: Duration) -> Self {
        Self { fifo: Fifo::new(), quantum: quantum.max(1), left: Vec::new(), since: Vec::new() }
    }

    /// The quantum.
    pub fn quantum(&self) -> Duration {
        self.quantum
    }
}

impl SchedPolicy for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        self.fifo.admit(id, params);
        if id >= self.left.len() {
            self.left.resize(id + 1, self.quantum);
            self.since.resize(id + 1, 0);
        }
        self.left[id] = self.quantum;
    }

    fn wake(&mut self, id: TaskId, now: Time, arrival: Arrival) {
        self.fifo.wake(id, now, arrival);
    }

    fn cancel(&mut self, id: TaskId, now: Time) {
        self.fifo.cancel(id, now);
    }

    fn pick_next(&mut self, now: Time) -> Option<TaskId> {
        let id = self.fifo.pick_next(now)?;
        self.since[id] = now;
        Some(id)
    }

    fn run_limit(&self, id: TaskId, _now: Time) -> Option<Duration> {
        Some(self.left[id])
    }

    fn stop(&mut self, id: TaskId, now: Time, why: Stop) {
        let used = now.saturating_sub(self.since[id]);
        self.left[id] = self.left[id].saturating_sub(used);
        let spent = self.left[id] == 0;
        if spent {
            self.left[id] = self.quantum;
        }
        match why {
            Stop::Expired => {
                self.left[id] = self.quantum;
                self.fifo.enqueue_tail(id);
            }
            Stop::Preempted if spent => self.fifo.enqueue_tail(id),
            Stop::Preempted => self.fifo.enqueue_head(id),
            _ => {}
        }
    }

    fn should_preempt(&mut self, running: TaskId, now: Time) -> bool {
        self.fifo.should_preempt(running, now)
    }

    fn precedes(&self, a: TaskId, b: TaskId, now: Time) -> bool {
        self.fifo.precedes(a, b, now)
    }

    fn has_ready(&self) -> bool {
        self.fifo.has_ready()
    }

    fn cycle_state(&self, origin: Time, out: &mut Vec<u64>) -> bool {
        if !self.fifo.cycle_state(origin, out) {
            return false;
        }
        let mut w = StateWriter::new(out, origin);
        for (&left, &since) in self.left.iter().zip(&self.since) {
            w.word(left);
            w.time(since);
        }
        true
    }

    fn shift(&mut self, by: Duration) {
        for t in &mut self.since {
            cycle::shift(t, by);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::with_ready;

    #[test]
    fn expired_task_goes_to_tail_with_fresh_quantum() {
        let mut rr = with_ready(RoundRobin::new(2), 2);
        assert_eq!(rr.pick_next(0), Some(0));
        assert_eq!(rr.run_limit(0, 0), Some(2));
        rr.stop(0, 2, Stop::Expired);
        assert_eq!(rr.pick_next(2), Some(1));
        rr.stop(1, 3, Stop::Blocked);
        assert_eq!(rr.pick_next(3), Some(0));
        assert_eq!(rr.run_limit(0, 3), Some(2));
        rr.wake(1, 3, Arrival::Resume);
        rr.stop(0, 5, Stop::Expired);
        assert_eq!(rr.pick_next(5), Some(1));
        // Task 1 blocked after 1 of its 2 units, so 1 unit is left.
        assert_eq!(rr.run_limit(1, 5), Some(1));
    }
}
