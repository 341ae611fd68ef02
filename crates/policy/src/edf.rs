//! Earliest deadline first.
//!
//! The ready task with the earliest absolute deadline runs, preempting a
//! running task whose deadline is strictly later. Ties go to the earlier
//! release, then the lower task id. A job's deadline comes from its
//! [`Arrival::Job`]; failing that, release + relative deadline; a task with
//! neither runs in the background, after every task with a deadline.

use crate::cycle::{self, StateWriter};
use crate::{Arrival, Duration, ReadySet, SchedParams, SchedPolicy, Stop, TaskId, Time};

#[derive(Debug, Clone, Copy, Default)]
struct EdfTask {
    relative: Option<Duration>,
    deadline: Time,
    release: Time,
}

/// The EDF policy.
#[derive(Debug, Clone, Default)]
pub struct Edf {
    ready: ReadySet<(Time, Time)>,
    tasks: Vec<EdfTask>,
}

impl Edf {
    /// An empty policy.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&self, id: TaskId) -> (Time, Time) {
        let t = &self.tasks[id];
        (t.deadline, t.release)
    }
}

impl SchedPolicy for Edf {
    fn name(&self) -> &'static str {
        "edf"
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        if id >= self.tasks.len() {
            self.tasks.resize(id + 1, EdfTask::default());
        }
        self.tasks[id] =
            EdfTask { relative: params.relative_deadline(), deadline: Time::MAX, release: 0 };
    }

    fn wake(&mut self, id: TaskId, now: Time, arrival: Arrival) {
        let t = &mut self.tasks[id];
        match arrival {
            Arrival::Job { release, deadline } => {
                t.release = release;
                t.deadline = deadline
                    .or_else(|| t.relative.map(|d| release.saturating_add(d)))
                    .unwrap_or(Time::MAX);
            }
            Arrival::Resume if t.deadline == Time::MAX => t.release = now,
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

    fn run_limit(&self, _id: TaskId, _now: Time) -> Option<Duration> {
        None
    }

    fn stop(&mut self, id: TaskId, _now: Time, why: Stop) {
        if why.stays_ready() {
            self.ready.insert(id, self.key(id));
        }
    }

    fn should_preempt(&mut self, running: TaskId, _now: Time) -> bool {
        self.ready.first().is_some_and(|((d, _), _)| d < self.tasks[running].deadline)
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
            w.time(t.deadline);
            w.time(t.release);
        }
        true
    }

    fn shift(&mut self, by: Duration) {
        for t in &mut self.tasks {
            cycle::shift(&mut t.deadline, by);
            cycle::shift(&mut t.release, by);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_deadline_runs_and_preempts_only_when_strictly_earlier() {
        let mut e = Edf::new();
        for id in 0..3 {
            e.admit(id, &SchedParams::default());
        }
        let job = |release, deadline| Arrival::Job { release, deadline: Some(deadline) };
        e.wake(0, 0, job(0, 10));
        e.wake(1, 0, job(0, 5));
        assert_eq!(e.pick_next(0), Some(1));
        e.wake(2, 1, job(1, 5));
        assert!(!e.should_preempt(1, 1));
        e.wake(2, 1, job(1, 4));
        assert!(e.should_preempt(1, 1));
        assert!(e.precedes(2, 1, 1));
    }
}
