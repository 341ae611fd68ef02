//! What a policy knows about a task, and the events a driver reports.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Duration, PolicyError, Time};

/// A task's index; drivers use small dense integers so policies can keep per-task state in vectors.
pub type TaskId = usize;

/// A window constraint x/y: at most `x` of any `y` consecutive deadlines may be missed.
///
/// 0/0 means no loss tolerated (DWCS then behaves as pure EDF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Window {
    /// Misses tolerated per window.
    pub x: u32,
    /// Window length in deadlines.
    pub y: u32,
}

impl Window {
    /// The 0/0 window: no deadline may be missed.
    pub const HARD: Window = Window { x: 0, y: 0 };

    /// The window x/y.
    pub const fn new(x: u32, y: u32) -> Self {
        Self { x, y }
    }

    /// The fraction of deadlines that must be met, 1 - x/y (1 for 0/0).
    pub fn met_fraction(&self) -> f64 {
        if self.y == 0 {
            1.0
        } else {
            1.0 - f64::from(self.x) / f64::from(self.y)
        }
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.x, self.y)
    }
}

/// A SCHED_DEADLINE-style reservation: `runtime` every `period`, due `deadline` after each activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reservation {
    /// Budget per period.
    pub runtime: Duration,
    /// Relative deadline of each server activation.
    pub deadline: Duration,
    /// Replenishment period.
    pub period: Duration,
}

impl Reservation {
    /// Checks runtime > 0 and runtime <= deadline <= period, as sched_setattr does.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.runtime == 0 {
            return Err(PolicyError::ZeroRuntime);
        }
        if self.runtime > self.deadline || self.deadline > self.period {
            return Err(PolicyError::ReservationOrder {
                runtime: self.runtime,
                deadline: self.deadline,
                period: self.period,
            });
        }
        Ok(())
    }
}

/// Everything any policy may want to know about a task; each policy reads only its own fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedParams {
    /// Real-time priority for fifo and rr; higher runs first (as SCHED_FIFO's 1..99).
    pub priority: u32,
    /// Nice value for fair, -20..=19.
    pub nice: i32,
    /// Fair weight overriding the nice value's (e.g. [`SCHED_IDLE_WEIGHT`](crate::fair::SCHED_IDLE_WEIGHT)).
    pub weight: Option<u64>,
    /// Period T (rm, dwcs; the default relative deadline).
    pub period: Option<Duration>,
    /// Relative deadline D (edf, dm); defaults to the period.
    pub deadline: Option<Duration>,
    /// Service per period C (the dwcs quantum).
    pub wcet: Option<Duration>,
    /// Window constraint x/y (dwcs).
    pub window: Window,
    /// Bandwidth reservation (cbs); tasks without one run in the background.
    pub reservation: Option<Reservation>,
    /// Its own slice (fair: EEVDF's custom slice) instead of the policy's base slice.
    pub slice: Option<Duration>,
}

impl SchedParams {
    /// The relative deadline: `deadline`, else `period`.
    pub fn relative_deadline(&self) -> Option<Duration> {
        self.deadline.or(self.period)
    }

    /// Checks the fields every policy relies on.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if !(-20..=19).contains(&self.nice) {
            return Err(PolicyError::NiceOutOfRange(self.nice));
        }
        if self.weight == Some(0) {
            return Err(PolicyError::ZeroWeight);
        }
        if self.window.x > self.window.y {
            return Err(PolicyError::InvalidWindow(self.window));
        }
        if self.period == Some(0) {
            return Err(PolicyError::ZeroPeriod);
        }
        if self.deadline == Some(0) {
            return Err(PolicyError::ZeroDeadline);
        }
        if let Some(r) = &self.reservation {
            r.validate()?;
        }
        Ok(())
    }
}

/// Why a task became ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// A new job (or the task's first arrival) was released.
    Job {
        /// When the job was released; may be earlier than now if it waited behind an earlier job.
        release: Time,
        /// The job's absolute deadline, if it has one.
        deadline: Option<Time>,
    },
    /// The task woke from blocking and continues its current job.
    Resume,
}

/// Why a running task stopped running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// A task with higher precedence took its CPU; it stays ready.
    Preempted,
    /// It used up the run limit the policy gave it (quantum, slice, budget); it stays ready.
    Expired,
    /// It blocked (e.g. on I/O) and will `wake` with [`Arrival::Resume`].
    Blocked,
    /// Its job finished; it will `wake` with the next [`Arrival::Job`].
    Done,
    /// Its job was abandoned (dropped at a missed deadline).
    Aborted,
    /// It finished all its work and will never wake again.
    Exited,
}

impl Stop {
    /// Whether the task stays ready after this stop.
    pub fn stays_ready(self) -> bool {
        matches!(self, Stop::Preempted | Stop::Expired)
    }
}
