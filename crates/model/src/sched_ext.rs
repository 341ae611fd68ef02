//! What a cell of the `cpu_scheduler` axis ran under: the sched_ext scheduler the engine
//! loaded for it (as the kernel names it) and, for every worker, whether the kernel had it
//! on sched_ext (`ext.enabled` in /proc/PID/sched).

use serde::{Deserialize, Serialize};

/// The sched_ext side of one cell repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedExtCell {
    /// The scheduler loaded for the cell (None: the kernel's own, EEVDF).
    pub loaded: Option<ScxLoaded>,
    /// Every worker, in sample order.
    pub workers: Vec<WorkerExt>,
}

/// A sched_ext scheduler as the engine started it and the kernel reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScxLoaded {
    /// The program exec'd (resolved path).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// `/sys/kernel/sched_ext/root/ops` once enabled (`bpfland_1.1.4_g..._x86_64_...`).
    pub ops: String,
    /// The scheduler's name: root/ops up to its first `_`.
    pub name: String,
    /// Its version: the rest of root/ops.
    pub version: String,
    /// `/sys/kernel/sched_ext/enable_seq` once enabled: how many times a scheduler was
    /// loaded since boot, this one included.
    pub enable_seq: Option<u64>,
    /// `/sys/kernel/sched_ext/switch_all`: every fair-class task is on sched_ext (false:
    /// only SCHED_EXT ones).
    pub switch_all: Option<bool>,
    /// The scheduler's pid.
    pub pid: i32,
    /// From its exec to the state `enabled`, seconds.
    pub load_s: f64,
    /// From SIGINT to the state `disabled`, seconds (None: it was gone before the stop).
    pub stop_s: Option<f64>,
    /// It did not stop on SIGINT within the grace period and was killed.
    pub killed: bool,
}

/// One worker's sched_ext state, read just before the release.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerExt {
    /// The worker's group.
    pub group: String,
    /// Its pid.
    pub pid: i32,
    /// `ext.enabled` of /proc/PID/sched (None: the kernel shows no such line).
    pub ext_enabled: Option<bool>,
}

impl SchedExtCell {
    /// Workers seen on sched_ext.
    pub fn on_ext(&self) -> usize {
        self.workers.iter().filter(|w| w.ext_enabled == Some(true)).count()
    }
}
