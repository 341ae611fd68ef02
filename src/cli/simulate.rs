//! `schedlab simulate`: the same experiment through the discrete-event simulator, stored as
//! a run with mode `sim` beside the measured ones, so `show` and `export` work on both.
//!
//! Parse the spec (same `--scale`/`--repetitions` as `run`), take each worker's CPU demand
//! from a measured run if asked (`--demand-from`), calibrate what was not given (pi and hash
//! CPU cost, synchronous write cost) on this machine, hand the plan to
//! `schedlab-simrun`, store each record, print the tables, and optionally draw a Gantt chart.
//! Periodic task sets need no calibration: their jobs' CPU demand is in the spec
//! (`schedlab_simrun::rt` says how each scheduler is modelled).

use super::common::{bad_input, load_spec};
use schedlab_session::gantt::GanttRequest;
use schedlab_session::simulate::{measured_demands, ns, uses, ModelFlags, SimEnded, Simulation};
use schedlab_session::Session;
use schedlab_spec::Plan;
use schedlab_sys::{env, Root};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab simulate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Experiment file (TOML). Without it, the built-in quick experiment is simulated.
    pub file: Option<PathBuf>,
    /// Simulated CPUs, one global ready queue (default: this machine's CPUs). A periodic set
    /// runs on one of them (its `cpu`, else the last), except under `deadline`: on all.
    #[arg(long)]
    pub cpus: Option<usize>,
    /// Multiply every work amount (iterations, bytes) by this factor, as `run` does.
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Override the number of repetitions per cell (all identical: the simulation is deterministic).
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// CPU nanoseconds per pi iteration (default: calibrated here for ~50 ms).
    #[arg(long, allow_negative_numbers = true)]
    pub ns_per_iteration: Option<f64>,
    /// CPU nanoseconds per hash of the hash workload (default: calibrated here when needed).
    #[arg(long, allow_negative_numbers = true)]
    pub ns_per_hash: Option<f64>,
    /// Each worker's CPU demand is its work CPU in this measured run of the same spec (same
    /// --db; cell by key, worker by group and place, repetition r from repetition r),
    /// instead of iterations x one rate. pi and hash cells only.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["ns_per_iteration", "ns_per_hash"])]
    pub demand_from: Option<i64>,
    /// Device service time of one synchronous 1 KiB write, microseconds (default: calibrated).
    #[arg(long, allow_negative_numbers = true)]
    pub write_service_us: Option<f64>,
    /// CPU time of one synchronous write, microseconds (default: calibrated with the service time).
    #[arg(long, allow_negative_numbers = true)]
    pub write_cpu_us: Option<f64>,
    /// SCHED_RR quantum in ms (default: /proc/sys/kernel/sched_rr_timeslice_ms).
    #[arg(long, allow_negative_numbers = true)]
    pub rr_quantum_ms: Option<f64>,
    /// Slice of the fair model in us (default: the kernel's base slice for the CPUs plus half a tick).
    #[arg(long, allow_negative_numbers = true)]
    pub fair_slice_us: Option<f64>,
    /// Context-switch cost in us (default: measured on the development machine, docs/BENCHMARKS.md).
    #[arg(long, allow_negative_numbers = true)]
    pub switch_cost_us: Option<f64>,
    /// Extra cost of a migration in us (default: measured on the development machine).
    #[arg(long, allow_negative_numbers = true)]
    pub migration_cost_us: Option<f64>,
    /// CPU each worker spends before the release (exec, setup), us: added to user time, never scheduled (default 0).
    #[arg(long, allow_negative_numbers = true)]
    pub setup_us: Option<f64>,
    /// CPU of one write or read of a message in pipe and messaging cells, us (default:
    /// from perf's pipe ping-pong measured on the development machine, docs/BENCHMARKS.md).
    #[arg(long, allow_negative_numbers = true)]
    pub ipc_call_us: Option<f64>,
    /// Delay before a task woken by a message runs on another CPU than its waker's, us
    /// (default: the idle exit measured on the development machine).
    #[arg(long, allow_negative_numbers = true)]
    pub wakeup_us: Option<f64>,
    /// Charge the costs `schedlab calibrate` measured (calibration ID, default the newest): switch, release latency, release and tick interrupts.
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub calibrated: Option<Option<i64>>,
    /// Store cells that cannot be simulated (e.g. command workloads) as failed instead of refusing the file.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// Simulate every hyperperiod of a periodic set, also those that repeat one already
    /// simulated (by default they are skipped: the schedule and figures are the same).
    #[arg(long)]
    pub every_cycle: bool,
    /// Write a Gantt chart (SVG) of one cell to this new file.
    #[arg(long, value_name = "FILE.svg")]
    pub gantt: Option<PathBuf>,
    /// The cell to chart, by key (e.g. `cpu/fifo:98/n10`); optional when the plan has one cell.
    /// With --demand-from, its first repetition is charted.
    #[arg(long, value_name = "KEY")]
    pub gantt_cell: Option<String>,
    /// Start of the charted range, seconds of simulated time after the release.
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub from: Option<f64>,
    /// End of the charted range, seconds (default: the cell's end).
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub to: Option<f64>,
    /// Threads that simulate a batch's sets (`generate = { sets = N }`); default: one per
    /// CPU, or RAYON_NUM_THREADS. The results are the same whatever the count.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Continue the newest unfinished simulated run of this file (interrupted by Ctrl-C):
    /// cell repetitions and sets already stored are not simulated again.
    #[arg(long, conflicts_with_all = ["scale", "repetitions", "demand_from", "gantt"])]
    pub resume: bool,
    /// No calibration report, no tables: only errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The model's flags, as the session takes them.
fn model_flags(a: &Args) -> ModelFlags {
    ModelFlags {
        cpus: a.cpus,
        ns_per_iteration: a.ns_per_iteration,
        ns_per_hash: a.ns_per_hash,
        write_service_us: a.write_service_us,
        write_cpu_us: a.write_cpu_us,
        rr_quantum_ms: a.rr_quantum_ms,
        fair_slice_us: a.fair_slice_us,
        switch_cost_us: a.switch_cost_us,
        migration_cost_us: a.migration_cost_us,
        setup_us: a.setup_us,
        ipc_call_us: a.ipc_call_us,
        wakeup_us: a.wakeup_us,
        every_cycle: a.every_cycle,
        calibrated: a.calibrated,
    }
}

/// The chart `--gantt` asks for, checked before anything is simulated.
fn gantt_request(a: &Args, plan: &Plan) -> anyhow::Result<Option<GanttRequest>> {
    let Some(path) = a.gantt.clone() else {
        if a.gantt_cell.is_some() || a.from.is_some() || a.to.is_some() {
            return Err(bad_input("--gantt-cell, --from and --to need --gantt FILE.svg"));
        }
        return Ok(None);
    };
    let (from, to) = (ns("from", a.from, 1e9)?.unwrap_or(0), ns("to", a.to, 1e9)?);
    Ok(Some(GanttRequest::new(plan, path, a.gantt_cell.as_deref(), from, to)?))
}

/// Runs `schedlab simulate`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    schedlab_session::db::check_dir(db)?;
    keep_freed_memory();
    let mut spec = load_spec(
        a.file.as_deref(),
        a.scale,
        a.repetitions.map(super::common::Repetitions::Count),
    )?;
    let session =
        Session::new(db, super::run::resume_command_of("simulate", db, a.file.as_deref()));
    let resumed = if a.resume { Some(session.resume_simulated(&mut spec)?) } else { None };
    let plan = &spec.plan;
    if plan.cells.iter().any(|c| schedlab_simrun::sets::batch(c).is_some()) {
        // Before any thread exists, so every thread inherits the mask: a stop request is
        // taken between chunks of sets, which are then stored and resumable.
        schedlab_runner::signals::block();
    }
    let environment = env::environment(&Root::default());
    if a.cpus == Some(0) {
        return Err(bad_input("--cpus must be at least 1"));
    }
    let gantt = gantt_request(&a, plan)?;
    let demands = a.demand_from.map(|run| measured_demands(db, plan, run)).transpose()?;
    let mut notes = Vec::new();
    let p = model_flags(&a).params(db, plan, &environment, demands.as_ref(), &mut notes)?;
    if let Some(t) = &plan.adaptive {
        notes.push(format!(
            "repetitions = {}: each cell is simulated min = {} times (the simulation is deterministic: more would repeat its figures)",
            t.label(),
            t.min
        ));
    }
    let mut warnings = Vec::new();
    for u in schedlab_simrun::unsupported(plan, &p) {
        if gantt.as_ref().is_some_and(|g| plan.cells[g.cell as usize].key == u.key) {
            return Err(bad_input(format!("cannot chart {u}")));
        }
        if !a.skip_unsupported {
            return Err(bad_input(format!("{u}. Pass --skip-unsupported to simulate the other cells and store this one as failed")));
        }
        warnings.push(format!("not simulated: {u}"));
    }
    if !a.quiet {
        notes.push(format!("model: {}", p.describe()));
        if uses(plan, |w| w.periodic().is_some()) {
            notes.push(format!(
                "periodic sets: pinned to one CPU (deadline: global EDF + CBS on {}); other, fifo-rm, fifo-dm and deadline skip jobs that cannot start by their deadline, edf and dwcs drop jobs late at their deadline and run in whole quanta",
                p.cpus
            ));
        }
        for n in &notes {
            eprintln!("{n}");
        }
        for w in &warnings {
            eprintln!("warning: {w}");
        }
    }
    let s = Simulation {
        spec: &spec,
        resumed,
        environment: &environment,
        params: &p,
        demands: demands.as_ref(),
        chart: gantt.as_ref().map(|g| g.cell),
        warnings,
        threads: a.threads,
    };
    let done = session.simulate(s, &mut super::run::Terminal::new(a.quiet))?;
    let run_id = done.run_id;
    let traced = match done.ended {
        SimEnded::Complete(traced) => traced,
        SimEnded::Interrupted { signal, sets } => {
            eprintln!(
                "interrupted by signal {signal}: {sets} simulated sets of run {run_id} are stored. Finish it with `{}`",
                session.resume_command
            );
            return Ok(super::common::stopped_by(signal));
        }
    };
    if let Some(g) = gantt {
        g.write(traced, plan, run_id)?;
        if !a.quiet {
            eprintln!(
                "Gantt chart of {} written to {}",
                plan.cells[g.cell as usize].key,
                g.path.display()
            );
        }
    }
    if !a.quiet {
        super::show::print_run(&done.store, run_id)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Lets freed memory be reused instead of returned to the kernel: a simulated cell's per-job
/// records pass through several buffers of megabytes, and on a VM every first touch of a
/// fresh page (a page fault) costs microseconds.
fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets allocator thresholds; 32 MiB is glibc's largest mmap threshold.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}
