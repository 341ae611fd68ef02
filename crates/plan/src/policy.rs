//! Scheduling policies as a plan names them: the class, its priority, nice and deadline
//! parameters.

use serde::{Deserialize, Serialize};

/// Scheduling class of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// SCHED_OTHER (the fair class).
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_DEADLINE.
    Deadline,
}

impl Class {
    /// All classes, in the order users usually list them.
    pub const ALL: [Class; 6] = [Class::Other, Class::Batch, Class::Idle, Class::Fifo, Class::Rr, Class::Deadline];

    /// The spec name of the class.
    pub fn name(self) -> &'static str {
        match self {
            Class::Other => "other",
            Class::Batch => "batch",
            Class::Idle => "idle",
            Class::Fifo => "fifo",
            Class::Rr => "rr",
            Class::Deadline => "deadline",
        }
    }

    /// Parses a spec name.
    pub fn parse(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }

    /// True for the real-time classes whose tasks take a static priority.
    pub fn is_rt(self) -> bool {
        matches!(self, Class::Fifo | Class::Rr)
    }

    /// True for classes that can starve ordinary processes (need throttling on).
    pub fn is_realtime(self) -> bool {
        matches!(self, Class::Fifo | Class::Rr | Class::Deadline)
    }
}

/// SCHED_DEADLINE parameters, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineParams {
    /// Runtime budget per period.
    pub runtime_ns: u64,
    /// Relative deadline.
    pub deadline_ns: u64,
    /// Period.
    pub period_ns: u64,
}

/// A scheduling policy to apply to every worker of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Scheduling class.
    pub class: Class,
    /// Static RT priority (1..=98 for fifo/rr, 0 otherwise).
    pub priority: u32,
    /// Nice value (-20..=19).
    pub nice: i32,
    /// Deadline parameters for the deadline class.
    pub deadline: Option<DeadlineParams>,
}

/// The highest RT priority a worker may have: 99 is kept for the engine, which must
/// always be able to preempt its workers.
pub const MAX_WORKER_PRIORITY: i64 = 98;
