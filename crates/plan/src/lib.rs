//! schedlab's vocabulary and its resolved experiment plan: the matrix axes ([`axis`]),
//! scheduling classes and policies, workloads, cgroup and I/O scheduler settings, CPU
//! lists, periodic task sets (the task model and its generator: [`TaskParams`], [`GenSpec`]), and the [`Plan`] of cells and groups that the engine runs
//! and the simulator models; also the machine's facts a plan is checked against
//! ([`Capabilities`], [`MachineLimits`], [`DeviceFacts`]).
//!
//! This crate sits at the bottom: it knows nothing of TOML (`schedlab-spec` turns a spec
//! file into a [`Plan`]) and nothing of the machine (`schedlab-sys` reads the facts). A
//! plan is stored as JSON with each run and read back by `--resume`, so the serde shapes
//! here are a stored format.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod axis;
mod bench;
pub mod cpulist;
mod device;
mod facts;
pub mod knob;
mod needs;
mod plan;
mod policy;
mod rt;
pub mod scx;
mod shard;
pub mod suggest;
mod task;
mod taskset;
mod workload;

pub use bench::*;
pub use device::*;
pub use facts::*;
pub use needs::*;
pub use plan::*;
pub use policy::*;
pub use rt::*;
pub use schedlab_model::AdaptiveTarget;
pub use scx::{CpuScheduler, ScxProgram};
pub use shard::*;
pub use task::{
    check_canonical, feasibility, partition, total_min_utilisation, total_utilisation,
    validate_set, Feasibility, NonCanonical, TaskError, TaskParams,
};
pub use taskset::{
    canonical_set, set_seed, uunifast, uunifast_discard, GenError, GenSpec, PeriodChoice,
    TaskSetSpec, UtilisationMeasure, MAX_DISCARDS, SEED_LATENCY_SETS,
};
pub use workload::*;

/// A value the plan's vocabulary refuses (a CPU list, a knob or its value, a scheduler, a
/// shard), or a program it cannot use; the text says why and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

impl From<String> for Refusal {
    fn from(why: String) -> Refusal {
        Refusal(why)
    }
}

impl From<&str> for Refusal {
    fn from(why: &str) -> Refusal {
        Refusal(why.to_string())
    }
}

impl From<Refusal> for String {
    fn from(r: Refusal) -> String {
        r.0
    }
}

/// `Err` of a [`Refusal`] saying `why`.
pub(crate) fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(why.into()))
}
