//! Limits that shape a run's figures: a CPU quota or an RT runtime below the machine's on the
//! engine's cgroup path (stored with the run's `Environment`), and the throttling a cell
//! repetition met (stored with its `CellRecord`). sys reads them, report words them.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The tightest limit of one kind on this process's cpu cgroup and its ancestors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// What it limits, and by how much.
    #[serde(flatten)]
    pub kind: LimitKind,
    /// The cgroup directory that sets it.
    pub cgroup: PathBuf,
    /// Where the run's engine (and so its workers) ran instead, when the run left the limit
    /// behind (`--escape-limits`, or the real-time placement); None: in force for the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifted: Option<PathBuf>,
}

/// A kind of limit and its figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LimitKind {
    /// CFS bandwidth: `quota_us` of CPU time per `period_us` for the cgroup's tasks together
    /// (v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, v2 `cpu.max`).
    CpuQuota {
        /// CPU time per period, µs.
        quota_us: u64,
        /// The period, µs.
        period_us: u64,
        /// Set on the v2 tree (`cpu.max`), else on a v1 cpu hierarchy.
        v2: bool,
    },
    /// RT group scheduling: real-time tasks of the cgroup run at most `runtime_us` of each
    /// `period_us` on each CPU (v1 `cpu.rt_runtime_us` / `cpu.rt_period_us`), less than the
    /// machine's `kernel.sched_rt_runtime_us` allows.
    RtRuntime {
        /// RT runtime per period, µs.
        runtime_us: u64,
        /// The period, µs.
        period_us: u64,
    },
}

impl LimitKind {
    /// The share it leaves: CPUs' worth of time for a quota, the fraction of each period of a
    /// CPU for an RT runtime.
    pub fn share(&self) -> f64 {
        let (num, den) = match *self {
            LimitKind::CpuQuota { quota_us, period_us, .. } => (quota_us, period_us),
            LimitKind::RtRuntime { runtime_us, period_us } => (runtime_us, period_us),
        };
        if den == 0 {
            0.0
        } else {
            num as f64 / den as f64
        }
    }
}

/// The CFS bandwidth throttling of one cgroup over one cell repetition: the deltas of its
/// `cpu.stat` from just before the release to just after the last reap.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throttled {
    /// The cgroup read (one that has a CPU quota).
    pub cgroup: PathBuf,
    /// A cgroup of the cell's own (a group's `cpu_max`), as opposed to one the engine and
    /// its workers ran in.
    pub own: bool,
    /// Enforcement periods that elapsed with tasks runnable (`nr_periods`).
    pub periods: u64,
    /// Periods in which the cgroup was throttled (`nr_throttled`).
    pub throttled_periods: u64,
    /// Time throttled, seconds, summed over the CPUs as the kernel counts it (`throttled_time`
    /// ns on v1, `throttled_usec` on v2).
    pub throttled_s: f64,
}
