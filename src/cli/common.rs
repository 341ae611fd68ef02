//! Helpers shared by subcommands: exit codes, loading specs, opening the store.

pub use schedlab_session::db::{open_existing, pick_run};
pub use schedlab_session::{load_spec, repetitions_label, Repetitions};
use std::path::Path;

/// An error with a specific exit status (2 for bad input).
#[derive(Debug)]
pub struct Exit {
    /// Process exit status.
    pub code: u8,
    /// What to tell the user.
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The exit status of a run stopped by signal `sig`: 128 + N, as a shell reports it.
pub fn stopped_by(sig: i32) -> std::process::ExitCode {
    std::process::ExitCode::from(128 + sig.clamp(1, 127) as u8)
}

/// Bad input: exit status 2.
pub fn bad_input(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Exit { code: 2, message: message.to_string() })
}

/// The flags of `schedlab run` that `schedlab slurm` passes on to each shard's run: one
/// declaration for both, so their names, checks and help agree.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunFlags {
    /// Multiply every work amount (iterations, bytes) by this factor.
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Override the number of measured repetitions per cell: a count, or auto (each cell
    /// 3 to 30 times, until the 95% CI of its main figure is within 5% of the mean).
    #[arg(long)]
    pub repetitions: Option<Repetitions>,
    /// Per-cell watchdog in seconds (overrides the spec's timeout_s).
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub rt: RtFlags,
    /// Parent directory for the experiment's files (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Trace the scheduler in every cell repetition (as `trace = true` in the spec):
    /// per-worker figures aggregated in the kernel by schedlab's BPF programs, at a cost
    /// stored with them; `--trace=timeline` (as `trace = "timeline"`) also captures every
    /// event through tracefs, for `schedlab trace export` and the report's state chart.
    /// `schedlab trace` shows what they say. Needs the kernel's BTF and root (or CAP_BPF and
    /// CAP_PERFMON).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "bpf", value_name = "HOW")]
    pub trace: Option<TraceArg>,
    /// The timeline's trace buffer per CPU, KiB (as `trace_buffer_kb` in the spec; default
    /// 4096).
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u32).range(kb(schedlab_spec::TRACE_BUFFER_KB.start())..=kb(schedlab_spec::TRACE_BUFFER_KB.end())))]
    pub trace_buffer_kb: Option<u32>,
    /// The campaign a shard belongs to (default: derived from the spec text, scale,
    /// repetitions and the number of shards, so shards started apart agree).
    #[arg(long, value_name = "ID")]
    pub campaign: Option<String>,
}

/// How a run may treat real-time: `run` takes these flags and `check` asks as `run` would.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RtFlags {
    /// Run real-time cells even though RT throttling is disabled on this machine.
    #[arg(long)]
    pub allow_unthrottled: bool,
    /// Supervise as an ordinary task instead of at SCHED_FIFO 99. The engine's wake-ups
    /// (one per worker exit) then never preempt workers, but RT workers can delay the
    /// watchdog and the reaping times.
    #[arg(long)]
    pub no_engine_rt: bool,
    /// Move the engine (and so its workers) out of a CPU quota or an RT runtime below the
    /// machine's on its cgroup path for the run (journaled, moved back after); `env` and
    /// `check` name such limits.
    #[arg(long)]
    pub escape_limits: bool,
}

/// What a run does with the cells this machine cannot run: `run` takes the flag and `check`
/// asks as `run` would.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SkipFlag {
    /// Leave out the cells this machine cannot run (an I/O scheduler, knob, trace or cgroup
    /// setting it lacks, a privilege, a read-only /sys), saying why and which, and run the
    /// rest, as the built-in experiment does; without it such a file is refused whole.
    #[arg(long)]
    pub skip_unavailable: bool,
}

/// How `--trace` records a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceArg {
    /// Per-worker figures aggregated in the kernel (schedlab's BPF programs).
    Bpf,
    /// The figures, and every scheduler event captured through tracefs.
    Timeline,
}

impl TraceArg {
    /// The plan's mode for it.
    pub fn mode(self) -> schedlab_spec::TraceMode {
        match self {
            TraceArg::Bpf => schedlab_spec::TraceMode::Bpf,
            TraceArg::Timeline => schedlab_spec::TraceMode::TimelineAndBpf,
        }
    }
}

fn kb(x: &u32) -> i64 {
    i64::from(*x)
}

impl RunFlags {
    /// These flags as words of a `schedlab run` command line (`--campaign` aside, which
    /// the caller places), each path quoted by `quote`.
    pub fn to_words(&self, quote: impl Fn(&Path) -> String) -> Vec<String> {
        let mut words = Vec::new();
        if let Some(s) = self.scale {
            words.extend(["--scale".into(), s.to_string()]);
        }
        if let Some(r) = self.repetitions {
            words.extend(["--repetitions".into(), r.to_string()]);
        }
        if let Some(t) = self.timeout {
            words.extend(["--timeout".into(), t.to_string()]);
        }
        match self.trace {
            Some(TraceArg::Bpf) => words.push("--trace".into()),
            Some(TraceArg::Timeline) => words.push("--trace=timeline".into()),
            None => {}
        }
        if let Some(kb) = self.trace_buffer_kb {
            words.extend(["--trace-buffer-kb".into(), kb.to_string()]);
        }
        if self.rt.allow_unthrottled {
            words.push("--allow-unthrottled".into());
        }
        if self.rt.no_engine_rt {
            words.push("--no-engine-rt".into());
        }
        if self.rt.escape_limits {
            words.push("--escape-limits".into());
        }
        if let Some(d) = &self.dir {
            words.extend(["--dir".into(), quote(d)]);
        }
        words
    }
}

/// A simulated run's model in one line, from the parameters its samples keep.
pub fn sim_model(records: &[schedlab_model::CellRecord]) -> Option<String> {
    records
        .iter()
        .flat_map(|r| &r.samples)
        .find_map(|s| s.extra.sim.as_ref())
        .map(|o| o.model.describe())
}

/// Formats unix seconds as UTC `YYYY-MM-DD HH:MM:SS`.
pub fn utc(secs: f64) -> String {
    jiff::Timestamp::from_second(secs as i64)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|_| "?".into())
}
