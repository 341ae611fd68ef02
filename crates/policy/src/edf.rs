//! Earliest deadline first.
//!
//! The ready task with the earliest absolute deadline runs, preempting a
//! running task whose deadline is strictly later. Ties go to the earlier
//! release, then the lower task id. A job's deadline comes from its
//! [`Arrival::Job`]; failing that, release + relative deadline; a task with
//! neither runs in the background, after every task with a deadline.

use crate::ranked::{Rank, Ranked};
use crate::{Duration, SchedParams, Time};

/// Ranks a job by its absolute deadline.
#[derive(Debug, Clone, Copy, Default)]
pub struct EarliestDeadline;

impl Rank for EarliestDeadline {
    const INSTANT: bool = true;

    fn name(&self) -> &'static str {
        "edf"
    }

    fn admitted(&self, _params: &SchedParams) -> u64 {
        Time::MAX
    }

    fn job(
        &self,
        _rank: u64,
        relative: Option<Duration>,
        release: Time,
        deadline: Option<Time>,
    ) -> u64 {
        deadline.or_else(|| relative.map(|d| release.saturating_add(d))).unwrap_or(Time::MAX)
    }
}

/// The EDF policy.
pub type Edf = Ranked<EarliestDeadline>;

impl Edf {
    /// An empty policy.
    pub fn new() -> Self {
        Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arrival, SchedPolicy};

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
