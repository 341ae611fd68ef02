//! The records that flow between schedlab's rooms: what a worker did (`Sample`),
//! what a cell did (`CellRecord`), and what the machine was (`Environment`).
//!
//! The runner and the simulator produce them, the store keeps them, analysis and
//! report read them. Keeping them here lets those crates agree without depending
//! on each other.
#![deny(missing_docs)]

use serde::{Deserialize, Serialize};

/// Whether a run was measured on the machine or simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Real processes on this machine.
    Measured,
    /// The discrete-event simulator.
    Sim,
}

impl Mode {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Measured => "measured",
            Mode::Sim => "sim",
        }
    }
}

/// One worker process of one cell repetition: its accounting from wait4 and its own report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Worker index within the cell (0..processes, over all groups).
    pub index: u32,
    /// The worker's group ("main" unless the spec names groups).
    pub group: String,
    /// A background worker: kept, but never in the measured figures.
    pub background: bool,
    /// CPUs it was pinned to (empty: not pinned).
    pub allowed_cpus: Vec<u32>,
    /// CPUs it was seen running on (sampled between chunks of work; empty if unknown).
    pub cpus_seen: Vec<u32>,
    /// Process id.
    pub pid: i32,
    /// Exit status when the worker exited normally.
    pub exit_code: Option<i32>,
    /// Signal number when the worker was killed by a signal.
    pub signal: Option<i32>,
    /// The worker was killed by the cell's watchdog.
    pub timed_out: bool,
    /// Elapsed seconds of the work, from the worker's own clock (engine view if it did not report).
    pub wall_s: f64,
    /// Elapsed seconds from release to reap, as the engine saw it.
    pub engine_wall_s: f64,
    /// User CPU seconds (wait4 rusage of exactly this child).
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// (user + sys) / wall * 100.
    pub cpu_pct: f64,
    /// Voluntary context switches ("blocked").
    pub voluntary_csw: i64,
    /// Involuntary context switches ("preempted").
    pub involuntary_csw: i64,
    /// Maximum resident set size in KiB.
    pub max_rss_kb: i64,
    /// Minor page faults.
    pub minor_faults: i64,
    /// Major page faults.
    pub major_faults: i64,
    /// User CPU seconds before the release (exec, setup, the wait itself), from the worker.
    pub setup_user_s: f64,
    /// System CPU seconds before the release.
    pub setup_sys_s: f64,
    /// Voluntary context switches before the release (at least the release wait).
    pub setup_voluntary_csw: i64,
    /// Involuntary context switches before the release.
    pub setup_involuntary_csw: i64,
    /// CPU seconds used between the measured release and the last measured exit: the work's
    /// CPU for measured workers, /proc/<pid>/schedstat deltas for background workers.
    pub window_cpu_s: f64,
    /// Work units the worker reported (iterations, bytes, ...); 0 if it did not report.
    pub work_units: f64,
    /// The worker's own start relative to the release, seconds.
    pub start_offset_s: f64,
    /// The worker's own end relative to the release, seconds.
    pub end_offset_s: f64,
    /// Workload-specific extras (scheduling policy seen by the worker, CPU it ended on, ...).
    pub extra: serde_json::Value,
}

/// Deltas of /proc/stat over one cell repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatDelta {
    /// User jiffies (all CPUs).
    pub user: u64,
    /// Niced user jiffies.
    pub nice: u64,
    /// System jiffies.
    pub system: u64,
    /// Idle jiffies.
    pub idle: u64,
    /// I/O wait jiffies.
    pub iowait: u64,
    /// Hard interrupt jiffies.
    pub irq: u64,
    /// Soft interrupt jiffies.
    pub softirq: u64,
    /// Context switches (all CPUs).
    pub ctxt: u64,
    /// Interrupts serviced.
    pub interrupts: u64,
    /// Processes created.
    pub forks: u64,
}

/// How a cell repetition ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Every worker was reaped.
    Ok,
    /// The watchdog killed at least one worker.
    TimedOut,
    /// The cell could not be started (e.g. SCHED_DEADLINE admission refused).
    Failed,
}

impl CellStatus {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Ok => "ok",
            CellStatus::TimedOut => "timed_out",
            CellStatus::Failed => "failed",
        }
    }
    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<CellStatus> {
        Some(match s {
            "ok" => CellStatus::Ok,
            "timed_out" => CellStatus::TimedOut,
            "failed" => CellStatus::Failed,
            _ => return None,
        })
    }
}

/// One group of a cell, as stored beside its results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupParams {
    /// Group name.
    pub name: String,
    /// Workload name.
    pub workload: String,
    /// Workload kind.
    pub workload_kind: String,
    /// Policy name.
    pub policy: String,
    /// Scheduling class.
    pub class: String,
    /// RT priority.
    pub priority: i32,
    /// Nice.
    pub nice: i32,
    /// Processes.
    pub processes: u32,
    /// Affinity as written ("all", "spread", "compact", or a list).
    pub affinity: String,
    /// cgroup cpu.weight (v2 units), if set.
    pub cpu_weight: Option<u32>,
    /// cgroup bandwidth (quota_us, period_us), if set.
    pub cpu_max: Option<(u64, u64)>,
    /// cgroup cpuset, if set.
    pub cpuset: Option<Vec<u32>>,
    /// Background group.
    pub background: bool,
}

/// The parameters that identify a matrix cell, as stored beside its results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellParams {
    /// Matrix cell index (stable for a given spec).
    pub cell_id: u32,
    /// Human-readable key, e.g. `cpu/fifo:50/n10`.
    pub key: String,
    /// Workload name as written in the spec.
    pub workload: String,
    /// Workload kind (pi, copy, mixed, command).
    pub workload_kind: String,
    /// Policy name as written in the spec.
    pub policy: String,
    /// Scheduling class (other, batch, idle, fifo, rr, deadline).
    pub class: String,
    /// RT priority (0 for non-RT classes).
    pub priority: i32,
    /// Nice value.
    pub nice: i32,
    /// Number of worker processes of the primary (first measured) group.
    pub processes: u32,
    /// Every group of the cell (the fields above describe the primary one).
    pub groups: Vec<GroupParams>,
}

/// One finished cell repetition with all its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// Which cell.
    pub params: CellParams,
    /// Repetition number (0-based; warm-ups are numbered separately).
    pub rep: u32,
    /// A warm-up repetition: stored, but never in the figures.
    pub warmup: bool,
    /// Position in the run's execution order.
    pub ordinal: u32,
    /// How it ended.
    pub status: CellStatus,
    /// Why it failed or timed out, if it did.
    pub message: Option<String>,
    /// Unix time (seconds) when the cell was released.
    pub started_unix: f64,
    /// Release to last reap, seconds.
    pub makespan_s: f64,
    /// /proc/stat deltas over the repetition.
    pub stat: StatDelta,
    /// The engine's own user CPU seconds during this repetition (spawn, supervise, reap).
    pub engine_user_s: f64,
    /// The engine's own system CPU seconds during this repetition.
    pub engine_sys_s: f64,
    /// The engine's peak RSS so far, KiB.
    pub engine_max_rss_kb: i64,
    /// One sample per worker.
    pub samples: Vec<Sample>,
}

/// What the machine was when a run was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Kernel release (uname -r).
    pub kernel: String,
    /// Kernel version string (uname -v).
    pub kernel_version: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// CONFIG_HZ if it could be found.
    pub hz: Option<u32>,
    /// kernel.sched_rt_runtime_us (-1 = throttling disabled).
    pub rt_runtime_us: Option<i64>,
    /// kernel.sched_rt_period_us.
    pub rt_period_us: Option<i64>,
    /// kernel.sched_rr_timeslice_ms.
    pub rr_timeslice_ms: Option<i64>,
    /// kernel.sched_autogroup_enabled.
    pub autogroup: Option<bool>,
    /// cpufreq governor of cpu0, if any.
    pub governor: Option<String>,
    /// Memory in KiB.
    pub mem_total_kb: Option<u64>,
    /// Block devices and their active I/O scheduler, e.g. `vda: mq-deadline`.
    pub io_devices: Vec<String>,
    /// cgroup layout: "v1", "v2" or "hybrid".
    pub cgroup: String,
    /// schedlab version.
    pub tool_version: String,
    /// Running as root / with CAP_SYS_NICE.
    pub cap_sys_nice: bool,
}
