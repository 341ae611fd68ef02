//! Rate-monotonic and deadline-monotonic fixed priorities.
//!
//! Each task's priority is fixed by its period (rate-monotonic) or its
//! relative deadline (deadline-monotonic): shorter runs first and preempts
//! longer. Ties go to the earlier release, then the lower task id. Tasks with
//! no period (or deadline) run in the background.

use serde::{Deserialize, Serialize};

use crate::cycle::{self, StateWriter};
use crate::{Arrival, Duration, ReadySet, SchedParams, SchedPolicy, Stop, TaskId, Time};

/// Which parameter sets a task's fixed priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorityBy {
    /// Rate-monotonic: the shorter period runs first.
    Period,
    /// Deadline-monotonic: the shorter relative deadline runs first.
    Deadline,
}

/// A monotonic fixed-priority policy (RM or DM).
#[derive(Debug, Clone)]
pub struct Monotonic {
    by: PriorityBy,
    ready: ReadySet<(Duration, Time)>,
    rank: Vec<Duration>,
    release: Vec<Time>,
}

impl Monotonic {
    /// A policy ranking tasks by `by`.
    pub fn new(by: PriorityBy) -> Self {
        Self { by, ready: ReadySet::new(), rank: Vec::new(), release: Vec::new() }
    }

    /// Rate-monotonic.
    pub fn rate() -> Self {
        Self::new(PriorityBy::Period)
    }

    /// Deadline-monotonic.
    pub fn deadline() -> Self {
        Self::new(PriorityBy::Deadline)
    }

    fn key(&self, id: TaskId) -> (Duration, Time) {
        (self.rank[id], self.release[id])
    }
}

impl SchedPolicy for Monotonic {
    fn name(&self) -> &'static str {
        match self.by {
            PriorityBy::Period => "rm",
            PriorityBy::Deadline => "dm",
        }
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        if id >= self.rank.len() {
            self.rank.resize(id + 1, Duration::MAX);
            self.release.resize(id + 1, 0);
        }
        let rank = match self.by {
            PriorityBy::Period => params.period,
            PriorityBy::Deadline => params.relative_deadline(),
        };
        self.rank[id] = rank.unwrap_or(Duration::MAX);
    }

    fn wake(&mut self, id: TaskId, now: Time, arrival: Arrival) {
        self.release[id] = match arrival {
            Arrival::Job { release, .. } => release,
            Arrival::Resume if self.rank[id] == Duration::MAX => now,
            Arrival::Resume => self.release[id],
        };
        self.ready.insert(id, self.key(id));
    }

    fn cancel(&mut self, id: TaskId, _now: Time) {
        self.ready.remove(id);
    }

    fn pick_next(&mut self, _now: Time) -> Option<TaskId> {
        self.ready.pop_first().map(|(_, id)| id)
    }

    fn run_limit(&self, _id: TaskId, _now: Time) -> Option<Duration> {
        None
    }

    fn stop(&mut self, id: TaskId, _now: Time, why: Stop) {
        if why.stays_ready() {
            self.ready.insert(id, self.key(id));
        }
    }

    fn should_preempt(&mut self, running: TaskId, _now: Time) -> bool {
        self.ready.first().is_some_and(|((rank, _), _)| rank < self.rank[running])
    }

    fn precedes(&self, a: TaskId, b: TaskId, _now: Time) -> bool {
        (self.key(a), a) < (self.key(b), b)
    }

    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    fn cycle_state(&self, origin: Time, out: &mut Vec<u64>) -> bool {
        if !self.ready.is_empty() {
            return false;
        }
        let mut w = StateWriter::new(out, origin);
        for &r in &self.release {
            w.time(r);
        }
        true
    }

    fn shift(&mut self, by: Duration) {
        for r in &mut self.release {
            cycle::shift(r, by);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(period: u64, deadline: u64) -> SchedParams {
        SchedParams { period: Some(period), deadline: Some(deadline), ..Default::default() }
    }

    #[test]
    fn rm_ranks_by_period_and_dm_by_deadline() {
        for (mut p, first) in [(Monotonic::rate(), 1), (Monotonic::deadline(), 0)] {
            p.admit(0, &params(10, 3));
            p.admit(1, &params(5, 5));
            for id in 0..2 {
                p.wake(id, 0, Arrival::Job { release: 0, deadline: None });
            }
            assert_eq!(p.pick_next(0), Some(first), "{}", p.name());
        }
    }
}
