//! Errors in policy and task parameters.

use crate::{Duration, Window};

/// A policy or task parameter that no policy can work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A round-robin quantum of zero would never let a task run.
    #[error("the round-robin quantum must be greater than zero")]
    ZeroQuantum,
    /// A fair base slice of zero would never let a task run.
    #[error("the fair base slice must be greater than zero")]
    ZeroSlice,
    /// Nice values outside -20..=19 have no weight in the kernel's table.
    #[error("nice value {0} is outside -20..=19")]
    NiceOutOfRange(i32),
    /// A fair weight of zero would give a task no share at all.
    #[error("the fair weight must be greater than zero")]
    ZeroWeight,
    /// A window x/y with x > y would allow more misses than deadlines.
    #[error("window {0} is invalid: x must not exceed y")]
    InvalidWindow(Window),
    /// A period of zero leaves no time between deadlines.
    #[error("the period must be greater than zero")]
    ZeroPeriod,
    /// A relative deadline of zero cannot be met.
    #[error("the relative deadline must be greater than zero")]
    ZeroDeadline,
    /// A reservation with zero runtime never runs.
    #[error("the reservation runtime must be greater than zero")]
    ZeroRuntime,
    /// SCHED_DEADLINE requires runtime <= deadline <= period.
    #[error(
        "reservation runtime {runtime} <= deadline {deadline} <= period {period} does not hold"
    )]
    ReservationOrder {
        /// Budget per period.
        runtime: Duration,
        /// Relative deadline.
        deadline: Duration,
        /// Replenishment period.
        period: Duration,
    },
}
