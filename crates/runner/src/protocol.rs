//! What the engine tells a worker (argv) and what a worker tells the engine: lines on its
//! stdout, each written with a single write(2) so lines from many workers never interleave.
//! A worker writes its [ready line](ready_line) once prepared, then, after the release, its
//! JSON [`Report`].

use schedlab_plan::Workload;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The hidden subcommand the engine execs itself with.
pub const WORKER_SUBCOMMAND: &str = "__worker";

/// Everything one worker needs, passed as one JSON argument.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerJob {
    /// Worker index within the cell.
    pub index: u32,
    /// The plan's seed.
    pub seed: u64,
    /// The cell's work directory (outputs go here).
    pub dir: PathBuf,
    /// Input file for copy.
    pub input: Option<PathBuf>,
    /// What to do.
    pub workload: Workload,
    /// Repeat the work until SIGTERM (a background worker), then report.
    #[serde(default)]
    pub repeat: bool,
    /// The engine's pid: a worker whose parent is no longer the engine exits at once.
    #[serde(default)]
    pub engine_pid: i32,
    /// Where a par_read worker finds its input files (`r<index>-<file>`).
    #[serde(default)]
    pub read_dir: Option<PathBuf>,
    /// A periodic worker's task and, under edf/dwcs, its dispatcher slot.
    #[serde(default)]
    pub rt: Option<RtJob>,
    /// The soft RLIMIT_NOFILE to put back first: the engine raised its own for the pidfds it
    /// watches a large cell with, and what a worker execs should see the user's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nofile_soft: Option<u64>,
}

/// Which task of a periodic set a worker runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RtJob {
    /// Index of the task in the set.
    pub task: u32,
    /// The dispatcher's region file and this worker's slot in it (edf, dwcs).
    pub dispatch: Option<(PathBuf, usize)>,
}

/// A worker's report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// Worker index.
    pub i: u32,
    /// CLOCK_MONOTONIC at the start of the work, ns.
    pub start_ns: u64,
    /// CLOCK_MONOTONIC at the end of the work, ns (0 for an exec'd command).
    pub end_ns: u64,
    /// Work units done.
    pub units: f64,
    /// The scheduling class the worker saw itself under, after release.
    pub policy: String,
    /// Its nice value after release.
    pub nice: i32,
    /// The CPU it was on at the end (at exec for a command).
    pub cpu: i32,
    /// CPUs seen between chunks of work.
    #[serde(default)]
    pub cpus: Vec<u32>,
    /// What the workload measured (pi estimate, synchronous writes, I/O summary, ...).
    #[serde(default)]
    pub detail: Option<schedlab_model::Detail>,
    /// A periodic task's results from its own job loop.
    #[serde(default)]
    pub rt: Option<schedlab_model::RtTask>,
    /// A periodic task's per-job records from its own job loop (compact: see
    /// `schedlab_model::jobs`).
    #[serde(default)]
    pub jobs: Option<schedlab_model::jobs::JobLog>,
    /// A benchmark kind's figures.
    #[serde(default)]
    pub bench: Option<schedlab_model::BenchFigures>,
    /// The worker's own rusage at the release (exec, setup and the wait itself), so
    /// the engine can tell the work from its preparation: [user_s, sys_s, voluntary, involuntary].
    #[serde(default)]
    pub setup: [f64; 4],
    /// Setup or work failure.
    #[serde(default)]
    pub error: Option<String>,
    /// A report too long for one atomic pipe write is written to this file instead, and the
    /// line carries only `i` and this path.
    #[serde(default)]
    pub spill: Option<PathBuf>,
}

/// Longest line written to the result pipe: below PIPE_BUF (4096), so writes stay atomic.
pub const MAX_LINE: usize = 4000;

/// How long the engine waits for a cell's workers to be prepared while none of them gets any
/// CPU time, before it gives up.
pub const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
/// The longest the engine waits for a cell's workers to be prepared while they still work at
/// it (on a machine many times slower than usual: an emulator, a loaded host).
pub const READY_LIMIT: std::time::Duration = std::time::Duration::from_secs(1200);

/// The line worker `i` writes once it is prepared (files written, buffers filled, memory
/// locked) and waits for its release. A report is JSON, so it never starts like this.
pub fn ready_line(i: u32) -> String {
    format!("ready {i}\n")
}

/// The worker index of a [`ready_line`] (with or without its newline).
pub fn parse_ready(line: &str) -> Option<u32> {
    line.strip_prefix("ready ")?.trim_end().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines_round_trip_and_reports_are_not_ready_lines() {
        assert_eq!(parse_ready(&ready_line(1999)), Some(1999));
        assert_eq!(parse_ready("ready 7"), Some(7));
        let report = serde_json::to_string(&Report { i: 3, ..Default::default() }).unwrap();
        assert_eq!(parse_ready(&report), None);
        assert_eq!(parse_ready("ready"), None);
        assert_eq!(parse_ready("ready x"), None);
    }
}
