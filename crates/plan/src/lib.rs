//! schedlab's vocabulary and its resolved experiment plan: the matrix axes ([`axis`]),
//! scheduling classes and policies, workloads, cgroup and I/O scheduler settings, CPU
//! lists, periodic task sets, and the [`Plan`] of cells and groups that the engine runs
//! and the simulator models; also the machine's facts a plan is checked against
//! ([`Capabilities`], [`MachineLimits`], [`DeviceFacts`]).
//!
//! This crate sits at the bottom: it knows nothing of TOML (`schedlab-spec` turns a spec
//! file into a [`Plan`]) and nothing of the machine (`schedlab-sys` reads the facts). A
//! plan is stored as JSON with each run and read back by `--resume`, so the serde shapes
//! here are a stored format.
#![deny(missing_docs)]

pub mod axis;
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
mod workload;

pub use device::*;
pub use facts::*;
pub use needs::*;
pub use plan::*;
pub use policy::*;
pub use rt::*;
pub use schedlab_model::AdaptiveTarget;
pub use scx::{CpuScheduler, ScxProgram};
pub use shard::*;
pub use workload::*;
