//! The records that flow between schedlab's rooms: what a worker did (`Sample`),
//! what a cell did (`CellRecord`), and what the machine was (`Environment`).
//!
//! The runner and the simulator produce them, the store keeps them, analysis and
//! report read them. Keeping them here lets those crates agree without depending
//! on each other.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};

pub mod adaptive;
pub mod bench;
pub mod columns;
pub mod detail;
pub mod dispatch;
pub mod jobs;
pub mod limits;
pub mod look;
pub mod machine;
mod rt_task;
pub mod sched_ext;
pub mod sets;
pub mod sim_params;
pub mod trace;

pub use adaptive::{AdaptiveTarget, RepetitionOutcome};
pub use bench::{BenchFigures, LatencyPercentiles, RpsPercentiles};
pub use detail::{Detail, Extra};
pub use limits::{Limit, LimitKind, Throttled};
pub use look::{Consumer, MachineLook};
pub use machine::Machine;
pub use rt_task::{RtColumn, RtNumber, RtParams, RtTally, RtTask, RtTimes};

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

record! {
    /// One worker process of one cell repetition: its accounting from wait4 and its own report.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct Sample {
        columns {
            /// Worker index within the cell (0..processes, over all groups).
            index: u32 => "idx",
            /// The worker's group ("main" unless the spec names groups).
            group: String => "group_name",
            /// A background worker: kept, but never in the measured figures.
            background: bool,
            /// CPUs it was pinned to (empty: not pinned).
            allowed_cpus: Vec<u32>,
            /// CPUs it was seen running on (sampled between chunks of work; empty if unknown).
            cpus_seen: Vec<u32>,
            /// Process id.
            pid: i32,
            /// Exit status when the worker exited normally.
            exit_code: Option<i32>,
            /// Signal number when the worker was killed by a signal.
            signal: Option<i32>,
            /// The worker was killed by the cell's watchdog.
            timed_out: bool,
            /// Elapsed seconds of the work, from the worker's own clock (engine view if it did not report).
            wall_s: f64,
            /// Elapsed seconds from release to reap, as the engine saw it.
            engine_wall_s: f64,
            /// User CPU seconds (wait4 rusage of exactly this child).
            user_s: f64,
            /// System CPU seconds.
            sys_s: f64,
            /// (user + sys) / wall * 100.
            cpu_pct: f64,
            /// Voluntary context switches ("blocked").
            voluntary_csw: i64,
            /// Involuntary context switches ("preempted").
            involuntary_csw: i64,
            /// Maximum resident set size in KiB.
            max_rss_kb: i64,
            /// Minor page faults.
            minor_faults: i64,
            /// Major page faults.
            major_faults: i64,
            /// User CPU seconds before the release (exec, setup, the wait itself), from the worker.
            setup_user_s: f64,
            /// System CPU seconds before the release.
            setup_sys_s: f64,
            /// Voluntary context switches before the release (at least the release wait).
            setup_voluntary_csw: i64,
            /// Involuntary context switches before the release.
            setup_involuntary_csw: i64,
            /// CPU seconds used between the measured release and the last measured exit: the work's
            /// CPU for measured workers, /proc/<pid>/schedstat deltas for background workers.
            window_cpu_s: f64,
            /// Work units the worker reported (iterations, bytes, ...); 0 if it did not report.
            work_units: f64,
            /// The worker's own start relative to the release, seconds.
            start_offset_s: f64,
            /// The worker's own end relative to the release, seconds.
            end_offset_s: f64,
            /// Block input operations (wait4 rusage ru_inblock; 0 in databases from before it).
            block_in: i64,
            /// Block output operations (ru_oublock).
            block_out: i64,
            /// Seconds on a CPU as the scheduler counts them (/proc/PID/schedstat, read at the
            /// exit before the reap; the simulator: its run time). Empty where unknown.
            oncpu_s: Option<f64>,
            /// Seconds runnable but waiting for a CPU (schedstat's run_delay: CONFIG_SCHED_INFO).
            run_delay_s: Option<f64>,
            /// Times it was given a CPU (schedstat's pcount; the simulator: its dispatches).
            timeslices: Option<i64>,
            /// Moves between CPUs (/proc/PID/sched se.nr_migrations).
            migrations: Option<i64>,
            /// Switch-outs because it blocked, as the scheduler counts them (nr_voluntary_switches).
            sched_voluntary: Option<i64>,
            /// Switch-outs while runnable, i.e. preemptions (nr_involuntary_switches).
            sched_involuntary: Option<i64>,
        }
        other {
            /// The worker's own report beside wait4's (scheduling policy it saw, CPU it ended on,
            /// what its workload measured, a periodic task's results, ...).
            extra: Extra,
            /// A periodic task's per-job records. The store keeps them in their own table and
            /// [`Sample`]s read back from it leave them out (see the store's `job_logs`).
            #[serde(skip)]
            jobs: Option<jobs::JobLog>,
        }
    }
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
    /// Steal jiffies: time the hypervisor ran something else while this machine's vCPUs
    /// wanted to run (0 on bare metal, and in databases from before it was stored).
    #[serde(default)]
    pub steal: u64,
}

impl StatDelta {
    /// The CPUs' busy time, ticks: user, nice, system, irq and softirq (not idle, iowait or
    /// steal).
    pub fn busy_ticks(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }

    /// The CPUs' time the counters cover, ticks (USER_HZ), steal included.
    pub fn cpu_ticks(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// How loaded the machine was over a repetition (release to last reap), beside the
/// /proc/stat deltas: with them, the evidence that other work disturbed its timings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// The 1-minute load average at the repetition's end (/proc/loadavg); it counts the
    /// repetition's own runnable workers too.
    pub load1: f64,
    /// Microseconds during which some runnable task waited for a CPU, over the repetition
    /// (/proc/pressure/cpu's "some" total); None where the kernel has no PSI.
    pub cpu_pressure_us: Option<u64>,
}

/// How a cell repetition ended. Only `Ok` repetitions enter the figures; the others are
/// stored with their reason (`CellRecord::message`), shown as failed and counted as left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Every measured worker exited 0 with its report.
    #[default]
    Ok,
    /// The watchdog killed at least one worker.
    TimedOut,
    /// It could not start (spawn failed, admission refused), or workers exited non-zero,
    /// died by a signal or did not report.
    Failed,
}

impl CellStatus {
    /// Whether the repetition ran to its end as planned (its figures count).
    pub fn is_ok(self) -> bool {
        self == CellStatus::Ok
    }
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
    /// The utilisation a periodic set was generated for (the `utilisation` axis), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilisation: Option<f64>,
    /// The factor the `work_scale` axis multiplied the group's work amounts by, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_scale: Option<f64>,
    /// EEVDF's custom slice of the workers (the `slice_us` policy field or axis), us.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_us: Option<u32>,
    /// Which set of a batch of generated sets (`generate = { sets = N, live = k }`) the
    /// group's tasks are: 0 for the batch's own cell, i for its live set i.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<u32>,
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
    /// The I/O scheduler setting of the cell (its name in the spec), if the spec sweeps one.
    #[serde(default)]
    pub iosched: Option<String>,
    /// The scheduler knobs the cell sweeps, by name, values as the cell key spells them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub knobs: std::collections::BTreeMap<String, String>,
    /// How the cell's adaptive repetitions ended, as the store keeps it per cell (None under
    /// fixed repetitions, and while the cell is still repeating).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<RepetitionOutcome>,
    /// The `cpu_scheduler` of the cell as its key spells it (`eevdf`, `scx_bpfland`), if the
    /// spec sweeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_scheduler: Option<String>,
}

/// One finished cell repetition with all its samples (the default: an empty repetition that
/// ended well, for building records field by field).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// From the first worker's spawn to the release, seconds: starting, setting up and
    /// preparing every worker (None: simulated, or it failed before; spawn to last reap is
    /// this plus `makespan_s`).
    #[serde(default)]
    pub spawn_s: Option<f64>,
    /// /proc/stat deltas over the repetition.
    pub stat: StatDelta,
    /// How loaded the machine was during the repetition (None: simulated, failed before
    /// its release, or stored before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<MachineLoad>,
    /// The engine's own user CPU seconds during this repetition (spawn, supervise, reap).
    pub engine_user_s: f64,
    /// The engine's own system CPU seconds during this repetition.
    pub engine_sys_s: f64,
    /// The engine's peak RSS so far, KiB.
    pub engine_max_rss_kb: i64,
    /// One sample per worker.
    pub samples: Vec<Sample>,
    /// The experiment device during this repetition (I/O experiments only).
    #[serde(default)]
    pub io: Option<CellIo>,
    /// The periodic task set of this repetition (real-time experiments only).
    #[serde(default)]
    pub rt: Option<CellRt>,
    /// The CPU wake-up latency /dev/cpu_dma_latency was held at during this repetition,
    /// microseconds (None: not held; only real-time and periodic cells hold it).
    #[serde(default)]
    pub cpu_dma_latency_us: Option<u32>,
    /// Every scheduler knob in force during this repetition (the run's fixed ones and the
    /// cell's own), by name, as read back from the kernel after writing.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub knobs: std::collections::BTreeMap<String, String>,
    /// What the kernel's scheduler trace of this repetition says (traced cells only).
    #[serde(default)]
    pub trace: Option<trace::CellTrace>,
    /// The sched_ext scheduler this repetition ran under and whether each worker was on it
    /// (cells of the `cpu_scheduler` axis only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext: Option<sched_ext::SchedExtCell>,
    /// The CFS bandwidth throttling this repetition met, one entry per cgroup with a CPU
    /// quota that its workers ran under (empty: none, simulated, or stored before it was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttling: Vec<Throttled>,
    /// The kernel's capture of this repetition, kept for export (traced cells only; the
    /// store keeps it in its own table and `Store::cells` leaves it out).
    #[serde(skip)]
    pub raw_trace: Option<trace::RawTrace>,
}

/// A periodic task set's cell: who scheduled it, what theory says about it, and the live
/// dispatcher's own metrics when it ran the set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellRt {
    /// other, fifo-rm, fifo-dm, deadline, edf or dwcs.
    pub scheduler: String,
    /// The utilisation the set was generated for (None for a listed or canonical set).
    pub utilisation: Option<f64>,
    /// Sum of (1 - x/y) C/T: DWCS minimum utilisation.
    pub min_utilisation: f64,
    /// Sum of C/T.
    pub plain_utilisation: f64,
    /// Canonical and minimum utilisation <= 1: the DWCS feasibility test's guarantee.
    pub guaranteed: bool,
    /// Why the set is not canonical, when it is not.
    pub not_canonical: Option<String>,
    /// The CPU the set ran on; `u32::MAX` when it was not on one CPU (SCHED_DEADLINE runs
    /// globally; a partitioned set's CPUs are in `task_cpus`).
    pub cpu: u32,
    /// Each task's CPU, when the set was pinned (empty under SCHED_DEADLINE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_cpus: Vec<u32>,
    /// A partitioned set's feasibility test on each of its CPUs, ascending (empty when the set
    /// was on one CPU or global).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_theory: Vec<CpuTheory>,
    /// The dispatcher's quantum, ns.
    pub quantum_ns: u64,
    /// The dispatcher's metrics (`schedlab.dispatch.metrics/1`), for edf and dwcs.
    pub dispatcher: Option<Dispatchers>,
}

/// The live dispatchers of a periodic cell: stored as one object, or an array of one per CPU
/// (ascending) when the set was partitioned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dispatchers {
    /// The set ran on one CPU.
    One(Box<dispatch::Metrics>),
    /// A partitioned set: one per CPU it used, ascending (None where a dispatcher wrote none).
    PerCpu(Vec<Option<dispatch::Metrics>>),
}

impl Dispatchers {
    /// Each dispatcher's metrics, CPUs ascending (None where a dispatcher wrote none).
    pub fn per_cpu(&self) -> Vec<Option<&dispatch::Metrics>> {
        match self {
            Dispatchers::One(m) => vec![Some(m)],
            Dispatchers::PerCpu(v) => v.iter().map(Option::as_ref).collect(),
        }
    }
}

/// The DWCS feasibility test of the tasks a partitioned set placed on one CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTheory {
    /// Which CPU.
    pub cpu: u32,
    /// Sum of its tasks' C/T.
    pub plain_utilisation: f64,
    /// Sum of their (1 - x/y) C/T.
    pub min_utilisation: f64,
    /// Canonical and minimum utilisation <= 1 on this CPU.
    pub guaranteed: bool,
}

/// The tasks of a placement (each task's CPU) grouped by CPU: (CPU, task indices in order),
/// CPUs ascending.
pub fn by_cpu(placement: &[u32]) -> Vec<(u32, Vec<usize>)> {
    let mut cpus: Vec<u32> = placement.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    cpus.into_iter()
        .map(|c| (c, (0..placement.len()).filter(|&i| placement[i] == c).collect()))
        .collect()
}

/// The experiment's block device during one cell repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellIo {
    /// The device the files were written to, e.g. `loop3` or `vda`.
    pub device: String,
    /// The device whose queue the I/O scheduler setting applied to (the same, or the loop
    /// device's backing disk).
    pub queue_device: String,
    /// The scheduler active on that queue during the cell, read back from sysfs.
    pub scheduler: String,
    /// Tunables written for the cell (name, value), read back.
    pub tunables: Vec<(String, String)>,
    /// /sys/block/<dev>/stat deltas over the measured window, for each device on the path.
    pub stats: Vec<DiskStatDelta>,
}

/// Deltas of one device's /sys/block/<dev>/stat (Documentation/block/stat.rst) over a cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskStatDelta {
    /// Device name.
    pub device: String,
    /// Read requests completed.
    pub read_ios: u64,
    /// Read requests merged.
    pub read_merges: u64,
    /// Sectors read (512 bytes).
    pub read_sectors: u64,
    /// Milliseconds spent by reads.
    pub read_ticks_ms: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Write requests merged.
    pub write_merges: u64,
    /// Sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent by writes.
    pub write_ticks_ms: u64,
    /// Milliseconds the device had I/O in flight.
    pub io_ticks_ms: u64,
    /// Weighted milliseconds of I/O in flight (time in queue).
    pub time_in_queue_ms: u64,
    /// Flush requests completed.
    pub flush_ios: u64,
}

/// What an I/O worker (`par_write`, `par_read`) measured, in its sample's `extra.detail`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IoSummary {
    /// "write" or "read".
    pub op: String,
    /// buffered, sync, direct or fsync.
    pub mode: String,
    /// Bytes transferred by this worker.
    pub bytes: u64,
    /// Files completed.
    pub files: u64,
    /// Threads used.
    pub threads: u32,
    /// read/write system calls made.
    pub ops: u64,
    /// bytes / the worker's wall time, MB/s (10^6 bytes).
    pub mb_s: f64,
    /// Per-operation latency percentiles, ns: p50, p90, p99, p99.9, max, mean.
    pub lat_ns: LatencySummary,
    /// The per-operation latency histogram (HdrHistogram V2 + deflate, base64).
    pub hist: String,
    /// Per file: (file index, thread, start, end) in seconds from the worker's start.
    pub file_times: Vec<(u32, u32, f64, f64)>,
    /// Bytes per thread.
    pub thread_bytes: Vec<u64>,
    /// Time spent in fsync at the end of each file (fsync mode), seconds summed over files.
    #[serde(default)]
    pub fsync_s: f64,
}

/// Latency percentiles in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Values recorded.
    pub count: u64,
}

/// The encoding of latency histograms inside records: HdrHistogram V2 + deflate, base64
/// (a few hundred bytes for any number of values), so histograms can be merged later.
pub mod hist {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
    pub use hdrhistogram::Histogram;

    /// Encodes a histogram (an empty string if it cannot be encoded).
    pub fn encode(h: &Histogram<u64>) -> String {
        let mut out = Vec::new();
        match V2DeflateSerializer::new().serialize(h, &mut out) {
            Ok(_) => base64::engine::general_purpose::STANDARD.encode(out),
            Err(_) => String::new(),
        }
    }

    /// Decodes what [`encode`] made.
    pub fn decode(s: &str) -> Option<Histogram<u64>> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
        Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
    }

    /// p50/p90/p99/p99.9/max/mean of a histogram.
    pub fn summary(h: &Histogram<u64>) -> super::LatencySummary {
        if h.is_empty() {
            return super::LatencySummary::default();
        }
        super::LatencySummary {
            p50: h.value_at_quantile(0.5) as f64,
            p90: h.value_at_quantile(0.9) as f64,
            p99: h.value_at_quantile(0.99) as f64,
            p999: h.value_at_quantile(0.999) as f64,
            max: h.max() as f64,
            mean: h.mean(),
            count: h.len(),
        }
    }
}

impl Sample {
    /// CPU seconds of the work itself: user + system time less what setup (exec, preparing
    /// before the release) used, never negative.
    pub fn work_cpu_s(&self) -> f64 {
        (self.user_s + self.sys_s - self.setup_user_s - self.setup_sys_s).max(0.0)
    }

    /// The periodic task results of a periodic worker, if this sample has them.
    pub fn rt(&self) -> Option<&RtTask> {
        self.extra.rt.as_ref()
    }

    /// A benchmark's figures (a benchmark kind's, or parsed from a command's output).
    pub fn bench(&self) -> Option<&crate::BenchFigures> {
        self.extra.bench.as_ref()
    }

    /// The I/O summary of an I/O worker, if this sample has one.
    pub fn io(&self) -> Option<&IoSummary> {
        match &self.extra.detail {
            Some(Detail::Io(io)) => Some(io),
            _ => None,
        }
    }
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
    /// Which machine this is, and the facts beyond those above (absent in runs stored
    /// before they were kept).
    #[serde(default)]
    pub machine: Machine,
    /// sched_ext when the run began: `absent` (no /sys/kernel/sched_ext), `disabled`, or
    /// its state and root/ops (`enabled bpfland_1.1.4_...`); None for older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext: Option<String>,
    /// The limits on the engine's cgroup path that shape the figures: the tightest CPU quota
    /// and an RT runtime below the machine's (empty: none, or a run stored before they were
    /// read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<Limit>,
}

#[cfg(test)]
mod tests {
    use super::by_cpu;

    #[test]
    fn a_placement_groups_task_indices_by_cpu() {
        assert_eq!(by_cpu(&[1, 0, 1, 3]), vec![(0, vec![1]), (1, vec![0, 2]), (3, vec![3])]);
        assert_eq!(by_cpu(&[2, 2]), vec![(2, vec![0, 1])]);
        assert!(by_cpu(&[]).is_empty());
    }
}
