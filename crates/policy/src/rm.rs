//! Rate-monotonic and deadline-monotonic fixed priorities.
//!
//! Each task's priority is fixed by its period (rate-monotonic) or its
//! relative deadline (deadline-monotonic): shorter runs first and preempts
//! longer. Ties go to the earlier release, then the lower task id. Tasks with
//! no period (or deadline) run in the background.

use serde::{Deserialize, Serialize};

use crate::ranked::{Rank, Ranked};
use crate::{Duration, SchedParams, Time};

/// Which parameter sets a task's fixed priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorityBy {
    /// Rate-monotonic: the shorter period runs first.
    Period,
    /// Deadline-monotonic: the shorter relative deadline runs first.
    Deadline,
}

impl Rank for PriorityBy {
    const INSTANT: bool = false;

    fn name(&self) -> &'static str {
        match self {
            PriorityBy::Period => "rm",
            PriorityBy::Deadline => "dm",
        }
    }

    fn admitted(&self, params: &SchedParams) -> u64 {
        let rank = match self {
            PriorityBy::Period => params.period,
            PriorityBy::Deadline => params.relative_deadline(),
        };
        rank.unwrap_or(Duration::MAX)
    }

    /// Fixed: a job keeps its task's rank.
    fn job(
        &self,
        rank: u64,
        _relative: Option<Duration>,
        _release: Time,
        _deadline: Option<Time>,
    ) -> u64 {
        rank
    }
}

/// A monotonic fixed-priority policy (RM or DM).
pub type Monotonic = Ranked<PriorityBy>;

impl Monotonic {
    /// A policy ranking tasks by `by`.
    pub fn new(by: PriorityBy) -> Self {
        Self::by(by)
    }

    /// Rate-monotonic.
    pub fn rate() -> Self {
        Self::new(PriorityBy::Period)
    }

    /// Deadline-monotonic.
    pub fn deadline() -> Self {
        Self::new(PriorityBy::Deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arrival, SchedPolicy};

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
