//! Integration tests of the simulator: exact schedules, checked slice by slice.

mod channels;
mod determinism;
mod dwcs;
mod global;
mod interrupts;
mod schedules;
mod serde;
mod validation;
mod workloads;

use schedlab_policy::{PolicySpec, Time};
use schedlab_sim::{simulate, SimConfig, SimResult, TaskSpec};

/// Runs a simulation that must be valid.
pub fn run(config: &SimConfig, tasks: &[TaskSpec]) -> SimResult {
    simulate(config, tasks).expect("valid input")
}

/// One CPU, the given policy, stopping at `horizon`.
pub fn uni(policy: PolicySpec, horizon: Time) -> SimConfig {
    SimConfig::new(1, policy).with_horizon(horizon)
}

/// The (start, end) slices of a task, ignoring the CPU.
pub fn spans(r: &SimResult, task: usize) -> Vec<(Time, Time)> {
    r.slices_of(task).into_iter().map(|(_, s, e)| (s, e)).collect()
}
