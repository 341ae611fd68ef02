//! The shape EDF and the monotonic policies share: each ready job has a rank, the smaller
//! runs first and preempts a strictly larger one; ties go to the earlier release, then the
//! lower task id. A [`Rank`] says what the rank is (an absolute deadline, a period, a
//! relative deadline); [`Ranked`] is the policy around it.

use std::fmt::Debug;

use crate::cycle::{self, StateWriter};
use crate::{Arrival, Duration, ReadySet, SchedParams, SchedPolicy, Stop, TaskId, Time};

/// What a [`Ranked`] policy orders its jobs by; `u64::MAX` ranks a task in the background,
/// after every task with a rank.
pub trait Rank: Debug + Clone {
    /// Whether a rank is an instant, which moves when the driver skips cycles (EDF's absolute
    /// deadline), rather than a length that does not (a period).
    const INSTANT: bool;

    /// Short lower-case name, e.g. `"edf"`.
    fn name(&self) -> &'static str;

    /// The rank of a task admitted with `params`, until its first job.
    fn admitted(&self, params: &SchedParams) -> u64;

    /// The rank of a job released at `release` with absolute deadline `deadline`, of a task
    /// ranked `rank` until now whose relative deadline is `relative`.
    fn job(
        &self,
        rank: u64,
        relative: Option<Duration>,
        release: Time,
        deadline: Option<Time>,
    ) -> u64;
}

#[derive(Debug, Clone, Copy)]
struct Task {
    rank: u64,
    release: Time,
    relative: Option<Duration>,
}

/// A policy running the ready job of the smallest [`Rank`].
#[derive(Debug, Clone, Default)]
pub struct Ranked<R> {
    by: R,
    ready: ReadySet<(u64, Time)>,
    tasks: Vec<Task>,
}

impl<R: Rank> Ranked<R> {
    /// An empty policy ranking jobs by `by`.
    pub fn by(by: R) -> Self {
        Self { by, ready: ReadySet::new(), tasks: Vec::new() }
    }

    fn key(&self, id: TaskId) -> (u64, Time) {
        let t = &self.tasks[id];
        (t.rank, t.release)
    }
}

impl<R: Rank> SchedPolicy for Ranked<R> {
    fn name(&self) -> &'static str {
        self.by.name()
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        let task = Task { rank: u64::MAX, release: 0, relative: params.relative_deadline() };
        if id >= self.tasks.len() {
            self.tasks.resize(id + 1, task);
        }
        self.tasks[id] = Task { rank: self.by.admitted(params), ..task };
    }

    fn wake(&mut self, id: TaskId, now: Time, arrival: Arrival) {
        let t = &mut self.tasks[id];
        match arrival {
            Arrival::Job { release, deadline } => {
                t.release = release;
                t.rank = self.by.job(t.rank, t.relative, release, deadline);
            }
            Arrival::Resume if t.rank == u64::MAX => t.release = now,
            Arrival::Resume => {}
        }
        self.ready.insert(id, self.key(id));
    }

    fn cancel(&mut self, id: TaskId, _now: Time) {
        self.ready.remove(id);
    }

    fn pick_next(&mut self, _now: Time) -> Option<TaskId> {
        self.ready.pop_first().map(|(_, id)| id)
    }

    fn stop(&mut self, id: TaskId, _now: Time, why: Stop) {
        if why.stays_ready() {
            self.ready.insert(id, self.key(id));
        }
    }

    fn should_preempt(&mut self, running: TaskId, _now: Time) -> bool {
        self.ready.first().is_some_and(|((rank, _), _)| rank < self.tasks[running].rank)
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
        for t in &self.tasks {
            if R::INSTANT {
                w.time(t.rank);
            }
            w.time(t.release);
        }
        true
    }

    fn shift(&mut self, by: Duration) {
        for t in &mut self.tasks {
            if R::INSTANT {
                cycle::shift(&mut t.rank, by);
            }
            cycle::shift(&mut t.release, by);
        }
    }
}
