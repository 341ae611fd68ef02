//! One flat row per worker process: the sample joined with its cell and run, the shape
//! every exporter writes.

use schedlab_model::columns::{Column, ColumnValue};
use schedlab_model::{CellRecord, RtNumber, RtTask, Sample};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// One process of one cell repetition, with everything needed to analyse it alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatSample {
    /// Run id.
    pub run_id: i64,
    /// Matrix cell index.
    pub cell_id: u32,
    /// Cell key, e.g. `cpu/fifo/n10`.
    pub cell_key: String,
    /// Repetition.
    pub rep: u32,
    /// A warm-up repetition.
    pub warmup: bool,
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
    /// Processes in the cell.
    pub processes: u32,
    /// The process's own figures, one per [`Sample::COLUMNS`] entry up to `end_offset_s`.
    #[serde(flatten)]
    pub process: Columns,
    /// Cell makespan, seconds.
    pub cell_makespan_s: f64,
    /// How the cell repetition ended: ok, failed or timed_out (only ok ones enter the figures).
    pub cell_status: String,
    /// Why it failed or timed out (empty when ok).
    pub cell_message: String,
    /// /proc/stat user jiffies over the cell.
    pub cell_user_jiffies: u64,
    /// /proc/stat system jiffies over the cell.
    pub cell_system_jiffies: u64,
    /// /proc/stat idle jiffies over the cell.
    pub cell_idle_jiffies: u64,
    /// /proc/stat iowait jiffies over the cell.
    pub cell_iowait_jiffies: u64,
    /// Context switches (all CPUs) over the cell.
    pub cell_ctxt: u64,
    /// Interrupts over the cell.
    pub cell_interrupts: u64,
    /// The cell's I/O scheduler setting (its name on the `iosched` axis), if any.
    pub iosched: Option<String>,
    /// The scheduler active on the device queue during the cell (read back), if it did I/O.
    pub io_scheduler: Option<String>,
    /// Bytes this I/O worker moved.
    pub io_bytes: Option<u64>,
    /// Its throughput, MB/s.
    pub io_mb_s: Option<f64>,
    /// Median per-operation latency, microseconds.
    pub io_lat_p50_us: Option<f64>,
    /// 99th percentile latency, microseconds.
    pub io_lat_p99_us: Option<f64>,
    /// 99.9th percentile latency, microseconds.
    pub io_lat_p999_us: Option<f64>,
    /// Maximum latency, microseconds.
    pub io_lat_max_us: Option<f64>,
    /// Who scheduled the cell's periodic task set (other, fifo-rm, fifo-dm, deadline, edf, dwcs).
    pub rt_scheduler: Option<String>,
    /// The value of the cell's utilisation axis.
    pub rt_utilisation: Option<f64>,
    /// The periodic task's figures, one `rt_<name>` column per [`RtTask::EXPORT`] entry
    /// (empty when the process ran none).
    #[serde(flatten)]
    pub rt_task: RtColumns,
    /// Workload extras (policy seen, CPU, estimate, ...), as JSON text.
    pub extra: String,
    /// The process's figures added after the export layout settled, at the end so that no
    /// older column moves.
    #[serde(flatten)]
    pub process_added: Columns,
    /// How the cell's adaptive repetitions ended: only in the rows of runs with any cell
    /// that stopped repeating adaptively, so fixed runs export exactly what they did before.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveColumns>,
}

/// The columns of a run with adaptive repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdaptiveColumns {
    /// Measured repetitions the cell took (empty: it was still repeating).
    pub cell_repetitions: Option<u32>,
    /// Whether its main figure's interval reached the target (empty: still repeating).
    pub cell_target_reached: Option<bool>,
}

/// The last [`Sample::COLUMNS`] entry that exports put before the cell's columns; the
/// entries after it are appended at the end of the row.
const LAST_EARLY_COLUMN: &str = "end_offset_s";

/// The first [`Sample::COLUMNS`] entry of the scheduler's per-process accounting; it and the
/// entries after it are exported only for runs that have it ([`has_sched_accounting`]).
const FIRST_SCHED_COLUMN: &str = "oncpu_s";

/// Whether some process of `cells` has the scheduler's accounting (either of its files was
/// read, or it was simulated). Runs stored before it have none, and their exports leave its
/// columns out, so they export exactly what they did before.
pub fn has_sched_accounting(cells: &[CellRecord]) -> bool {
    cells.iter().flat_map(|c| &c.samples).any(|s| s.oncpu_s.is_some() || s.migrations.is_some())
}

/// Some of a sample's plain columns, serialised as fields named after them, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns(pub Vec<(&'static str, ColumnValue)>);

impl Columns {
    /// The columns of `s` from `cols`.
    fn of(s: &Sample, cols: &[Column<Sample>]) -> Columns {
        Columns(cols.iter().map(|c| (c.name, (c.get)(s))).collect())
    }
}

impl Serialize for Columns {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(Some(self.0.len()))?;
        for (name, v) in &self.0 {
            match v {
                ColumnValue::Int(i) => map.serialize_entry(name, i)?,
                ColumnValue::Real(x) => map.serialize_entry(name, x)?,
                ColumnValue::Bool(b) => map.serialize_entry(name, b)?,
                ColumnValue::Text(t) => map.serialize_entry(name, t)?,
                ColumnValue::Cpus(c) => map.serialize_entry(name, &cpulist(c))?,
            }
        }
        map.end()
    }
}

/// A process's periodic task figures ([`RtTask::EXPORT`]), serialised as `rt_<name>` fields.
#[derive(Debug, Clone, PartialEq)]
pub struct RtColumns(pub Vec<(&'static str, Option<RtNumber>)>);

impl RtColumns {
    /// The columns of `t` (all empty without a task).
    fn of(t: Option<&RtTask>) -> RtColumns {
        RtColumns(RtTask::EXPORT.iter().map(|c| (c.name, t.and_then(c.get))).collect())
    }
}

impl Serialize for RtColumns {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut map = ser.serialize_map(Some(self.0.len()))?;
        for (name, v) in &self.0 {
            let key = format!("rt_{name}");
            match v {
                None => map.serialize_entry(&key, &None::<u64>)?,
                Some(RtNumber::Count(n)) => map.serialize_entry(&key, n)?,
                Some(RtNumber::Real(x)) => map.serialize_entry(&key, x)?,
            }
        }
        map.end()
    }
}

fn cpulist(c: &[u32]) -> String {
    c.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

/// Flattens stored cells into one row per process, with the scheduler's accounting columns
/// if some process of `cells` has them.
pub fn flatten(run_id: i64, cells: &[CellRecord]) -> Vec<FlatSample> {
    flatten_with(run_id, cells, has_sched_accounting(cells))
}

/// Flattens stored cells into one row per process; `sched`: with the columns of the
/// scheduler's accounting (decided for a whole run, so that all its rows have one shape).
pub fn flatten_with(run_id: i64, cells: &[CellRecord], sched: bool) -> Vec<FlatSample> {
    let position = |name| Sample::COLUMNS.iter().position(|c| c.name == name);
    let split = position(LAST_EARLY_COLUMN).map_or(0, |i| i + 1);
    let end = match position(FIRST_SCHED_COLUMN) {
        Some(i) if !sched => i,
        _ => Sample::COLUMNS.len(),
    };
    let (early, added) = Sample::COLUMNS[..end].split_at(split);
    let adaptive = cells.iter().any(|c| c.params.repetitions.is_some());
    let mut out = Vec::new();
    for c in cells {
        let p = &c.params;
        for s in &c.samples {
            let io = s.io();
            out.push(FlatSample {
                run_id,
                cell_id: p.cell_id,
                cell_key: p.key.clone(),
                rep: c.rep,
                warmup: c.warmup,
                workload: p.workload.clone(),
                workload_kind: p.workload_kind.clone(),
                policy: p.policy.clone(),
                class: p.class.clone(),
                priority: p.priority,
                nice: p.nice,
                processes: p.processes,
                process: Columns::of(s, early),
                cell_makespan_s: c.makespan_s,
                cell_status: c.status.as_str().to_string(),
                cell_message: c.message.clone().unwrap_or_default(),
                cell_user_jiffies: c.stat.user,
                cell_system_jiffies: c.stat.system,
                cell_idle_jiffies: c.stat.idle,
                cell_iowait_jiffies: c.stat.iowait,
                cell_ctxt: c.stat.ctxt,
                cell_interrupts: c.stat.interrupts,
                iosched: p.iosched.clone(),
                io_scheduler: c.io.as_ref().map(|x| x.scheduler.clone()),
                io_bytes: io.as_ref().map(|x| x.bytes),
                io_mb_s: io.as_ref().map(|x| x.mb_s),
                io_lat_p50_us: io.as_ref().map(|x| x.lat_ns.p50 / 1e3),
                io_lat_p99_us: io.as_ref().map(|x| x.lat_ns.p99 / 1e3),
                io_lat_p999_us: io.as_ref().map(|x| x.lat_ns.p999 / 1e3),
                io_lat_max_us: io.as_ref().map(|x| x.lat_ns.max / 1e3),
                rt_scheduler: c.rt.as_ref().map(|x| x.scheduler.clone()),
                rt_utilisation: c.rt.as_ref().and_then(|x| x.utilisation),
                rt_task: RtColumns::of(s.rt()),
                extra: s.extra.to_stored(),
                process_added: Columns::of(s, added),
                adaptive: adaptive.then(|| AdaptiveColumns {
                    cell_repetitions: p.repetitions.as_ref().map(|o| o.repetitions),
                    cell_target_reached: p.repetitions.as_ref().map(|o| o.reached),
                }),
            });
        }
    }
    out
}

/// One job of one periodic task in one cell repetition (`schedlab export --jobs`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatJob {
    /// Run id.
    pub run_id: i64,
    /// Matrix cell index.
    pub cell_id: u32,
    /// Cell key.
    pub cell_key: String,
    /// Repetition.
    pub rep: u32,
    /// A warm-up repetition.
    pub warmup: bool,
    /// Who scheduled the set (other, fifo-rm, ..., dwcs).
    pub rt_scheduler: Option<String>,
    /// Worker index (= the task's index in the set).
    pub index: u32,
    /// Who timed the jobs: worker or dispatcher.
    pub source: String,
    /// Job number, from 0.
    pub job: u64,
    /// Release, ms after the set's start.
    pub release_ms: f64,
    /// First ran, us after the release (empty: never ran).
    pub start_us: Option<f64>,
    /// Finished, us after the release (= response time; empty: dropped unfinished).
    pub finish_us: Option<f64>,
    /// Finish minus deadline, us (negative: early).
    pub lateness_us: Option<f64>,
    /// CPU time used, us (jobs timed by the worker).
    pub cpu_us: Option<f64>,
    /// Met its deadline.
    pub met: bool,
    /// The task slept until the release, so `start_us` is its wake-up latency.
    pub slept: bool,
}

/// Flattens one cell repetition's per-job records (from the store's `job_logs`).
pub fn flatten_jobs(
    run_id: i64,
    cell: &CellRecord,
    logs: &[(u32, schedlab_model::jobs::JobLog)],
) -> Vec<FlatJob> {
    let us = |ns: u64| ns as f64 / 1e3;
    let mut out = Vec::new();
    for (index, log) in logs {
        for (k, j) in log.jobs.iter().enumerate() {
            out.push(FlatJob {
                run_id,
                cell_id: cell.params.cell_id,
                cell_key: cell.params.key.clone(),
                rep: cell.rep,
                warmup: cell.warmup,
                rt_scheduler: cell.rt.as_ref().map(|r| r.scheduler.clone()),
                index: *index,
                source: log.source.clone(),
                job: k as u64,
                release_ms: j.release_ns as f64 / 1e6,
                start_us: j.start_ns.map(us),
                finish_us: j.finish_ns.map(us),
                lateness_us: j.lateness_ns(log.d_ns).map(|l| l as f64 / 1e3),
                cpu_us: j.cpu_ns.map(us),
                met: j.met,
                slept: j.slept,
            });
        }
    }
    out
}
