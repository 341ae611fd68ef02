//! The plain, serialisable choice of a policy.

use serde::{Deserialize, Serialize};

use crate::cbs::Cbs;
use crate::dwcs::Dwcs;
use crate::edf::Edf;
use crate::fair::Fair;
use crate::fifo::Fifo;
use crate::rm::Monotonic;
use crate::rr::RoundRobin;
use crate::{Duration, PolicyError, SchedPolicy, MILLISECOND};

/// Linux's default SCHED_RR quantum (RR_TIMESLICE, 100 ms).
pub const DEFAULT_RR_QUANTUM: Duration = 100 * MILLISECOND;

/// The fair base slice used when none is given (the kernel's 0.75 ms x (1 + log2 8 CPUs)).
pub const DEFAULT_BASE_SLICE: Duration = 3 * MILLISECOND;

/// A policy and its parameters, as an experiment description would name them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PolicySpec {
    /// Fixed priority, FIFO within a priority.
    Fifo,
    /// Fixed priority with a quantum.
    Rr {
        /// Quantum in ns.
        quantum: Duration,
    },
    /// The simplified EEVDF model.
    Fair {
        /// Base slice in ns.
        base_slice: Duration,
    },
    /// Earliest deadline first.
    Edf,
    /// Rate-monotonic.
    Rm,
    /// Deadline-monotonic.
    Dm,
    /// Dynamic window-constrained scheduling.
    Dwcs {
        /// Whether a task may be served twice in one request period.
        work_conserving: bool,
    },
    /// EDF + constant bandwidth server (SCHED_DEADLINE).
    Cbs {
        /// Throttle on exhaustion (SCHED_DEADLINE) rather than postpone at once.
        hard: bool,
    },
}

impl PolicySpec {
    /// The policy's short name, as [`SchedPolicy::name`] reports it.
    pub fn name(&self) -> &'static str {
        match self {
            PolicySpec::Fifo => "fifo",
            PolicySpec::Rr { .. } => "rr",
            PolicySpec::Fair { .. } => "fair",
            PolicySpec::Edf => "edf",
            PolicySpec::Rm => "rm",
            PolicySpec::Dm => "dm",
            PolicySpec::Dwcs { .. } => "dwcs",
            PolicySpec::Cbs { .. } => "cbs",
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self {
            PolicySpec::Rr { quantum: 0 } => Err(PolicyError::ZeroQuantum),
            PolicySpec::Fair { base_slice: 0 } => Err(PolicyError::ZeroSlice),
            _ => Ok(()),
        }
    }

    /// A fresh policy instance with no tasks.
    pub fn build(&self) -> Box<dyn SchedPolicy + Send> {
        match *self {
            PolicySpec::Fifo => Box::new(Fifo::new()),
            PolicySpec::Rr { quantum } => Box::new(RoundRobin::new(quantum)),
            PolicySpec::Fair { base_slice } => Box::new(Fair::new(base_slice)),
            PolicySpec::Edf => Box::new(Edf::new()),
            PolicySpec::Rm => Box::new(Monotonic::rate()),
            PolicySpec::Dm => Box::new(Monotonic::deadline()),
            PolicySpec::Dwcs { work_conserving } => Box::new(Dwcs::new(work_conserving)),
            PolicySpec::Cbs { hard } => Box::new(Cbs::new(hard)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_built_policies() {
        for spec in [
            PolicySpec::Fifo,
            PolicySpec::Rr { quantum: 1 },
            PolicySpec::Fair { base_slice: 1 },
            PolicySpec::Edf,
            PolicySpec::Rm,
            PolicySpec::Dm,
            PolicySpec::Dwcs { work_conserving: true },
            PolicySpec::Cbs { hard: true },
        ] {
            assert_eq!(spec.build().name(), spec.name());
        }
        assert_eq!(PolicySpec::Rr { quantum: 0 }.validate(), Err(PolicyError::ZeroQuantum));
    }
}
