//! What a cell of the `cpu_scheduler` axis ran under: the sched_ext scheduler the engine
//! loaded for it (as the kernel names it) and, for every worker, whether the kernel had it
//! on sched_ext (`ext.enabled` in /proc/PID/sched).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// The scheduler's own statistics over the cell, when it serves them (scx_stats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<ScxStats>,
}

/// A scheduler's statistics from its scx_stats socket ("top" target), each number by name
/// (nested names joined by `.`). Read twice on one connection: just before the release and
/// right after the last reap. scx schedulers answer a read with their counters since the
/// connection's previous read (gauges as they are), so the second answer is the cell's own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScxStats {
    /// The socket read.
    pub socket: String,
    /// The first answer, just before the release (counters since the connection opened).
    pub before: BTreeMap<String, f64>,
    /// The second answer, after the last reap: the counters over the cell.
    pub cell: BTreeMap<String, f64>,
    /// Why a read failed, if one did (the figures read are kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ScxStats {
    /// The statistics of one cell from its two reads.
    pub fn over<E: std::fmt::Display>(
        socket: String,
        before: Result<BTreeMap<String, f64>, E>,
        cell: Result<BTreeMap<String, f64>, E>,
    ) -> Self {
        let error = [before.as_ref().err(), cell.as_ref().err()]
            .into_iter()
            .flatten()
            .next()
            .map(E::to_string);
        ScxStats {
            socket,
            before: before.unwrap_or_default(),
            cell: cell.unwrap_or_default(),
            error,
        }
    }
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
