//! A deterministic discrete-event simulator for the `schedlab-policy` policies.
//!
//! Build a [`SimConfig`] (CPUs, global or partitioned mapping, policy,
//! overheads, horizon) and a list of [`TaskSpec`]s (each a [`WorkSpec`]:
//! CPU burst, I/O-bound, mixed phases or periodic jobs), then call
//! [`simulate`] to get a [`SimResult`]: per-task counters, response times,
//! window violations, per-CPU figures and an optional execution trace.
//!
//! Time is virtual integer nanoseconds (any unit works if used consistently).
//! Events are ordered by (time, class, insertion sequence), and all events of
//! one instant are applied before any scheduling decision, so the same input
//! always gives the same result, trace included.
//!
//! ```
//! use schedlab_policy::PolicySpec;
//! use schedlab_sim::{simulate, SimConfig, TaskSpec};
//!
//! let tasks = [TaskSpec::periodic("t1", 2, 5), TaskSpec::periodic("t2", 4, 7)];
//! let config = SimConfig::new(1, PolicySpec::Edf).with_horizon(35);
//! let result = simulate(&config, &tasks).unwrap();
//! assert_eq!(result.total_misses(), 0);
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod config;
mod engine;
mod error;
mod event;
mod result;
mod rng;
mod validate;

pub use config::{
    Costs, Mapping, MissAction, PeriodicSpec, Phase, Record, SimConfig, TaskSpec, WorkSpec,
};
pub use error::SimError;
pub use result::{CpuResult, JobOutcome, ResponseStats, SimResult, Slice, TaskResult};
pub use validate::validate;

use engine::Simulator;
use schedlab_policy::cbs::Cbs;
use schedlab_policy::dwcs::Dwcs;
use schedlab_policy::edf::Edf;
use schedlab_policy::fair::Fair;
use schedlab_policy::fifo::Fifo;
use schedlab_policy::rm::Monotonic;
use schedlab_policy::rr::RoundRobin;
use schedlab_policy::PolicySpec;

/// Validates the inputs and runs the simulation to its horizon (or until all work is done).
pub fn simulate(config: &SimConfig, tasks: &[TaskSpec]) -> Result<SimResult, SimError> {
    simulate_counted(config, tasks).map(|(r, _)| r)
}

/// As [`simulate`], with the number of whole hyperperiods skipped because they repeated one
/// simulated ([`SimConfig::skip_cycles`]).
pub fn simulate_counted(
    config: &SimConfig,
    tasks: &[TaskSpec],
) -> Result<(SimResult, u64), SimError> {
    validate(config, tasks)?;
    let (c, t) = (config, tasks);
    // One engine per policy type (what `PolicySpec::build` would box), so no call is virtual.
    Ok(match config.policy {
        PolicySpec::Fifo => Simulator::new(c, t, Fifo::new).run(),
        PolicySpec::Rr { quantum } => Simulator::new(c, t, || RoundRobin::new(quantum)).run(),
        PolicySpec::Fair { base_slice } => Simulator::new(c, t, || Fair::new(base_slice)).run(),
        PolicySpec::Edf => Simulator::new(c, t, Edf::new).run(),
        PolicySpec::Rm => Simulator::new(c, t, Monotonic::rate).run(),
        PolicySpec::Dm => Simulator::new(c, t, Monotonic::deadline).run(),
        PolicySpec::Dwcs { work_conserving } => {
            Simulator::new(c, t, || Dwcs::new(work_conserving)).run()
        }
        PolicySpec::Cbs { hard } => Simulator::new(c, t, || Cbs::new(hard)).run(),
    })
}
