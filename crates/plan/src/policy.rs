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
    pub const ALL: [Class; 6] =
        [Class::Other, Class::Batch, Class::Idle, Class::Fifo, Class::Rr, Class::Deadline];

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

    /// True for the fair classes, which EEVDF schedules and which take a custom slice.
    pub fn is_fair(self) -> bool {
        matches!(self, Class::Other | Class::Batch)
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
    /// EEVDF's custom slice for other and batch (sched_attr.sched_runtime, Linux 6.12+), ns;
    /// None leaves the kernel's base slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_ns: Option<u64>,
}

impl Policy {
    /// SCHED_OTHER at nice 0 with the kernel's base slice: a worker's policy unless set.
    pub const OTHER: Policy =
        Policy { class: Class::Other, priority: 0, nice: 0, deadline: None, slice_ns: None };

    /// `class` at static priority `priority`, nothing else set (fifo and rr).
    pub const fn rt(class: Class, priority: u32) -> Policy {
        Policy { class, priority, ..Self::OTHER }
    }
}

/// The shortest custom slice the kernel takes (it clamps sched_runtime to 0.1..=100 ms), us.
pub const MIN_SLICE_US: i64 = 100;
/// The longest custom slice the kernel takes, us.
pub const MAX_SLICE_US: i64 = 100_000;

/// The highest RT priority a worker may have: 99 is kept for the engine, which must
/// always be able to preempt its workers.
pub const MAX_WORKER_PRIORITY: i64 = 98;
