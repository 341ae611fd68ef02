//! `schedlab simulate`: the same experiment through the discrete-event simulator, stored as
//! a run with mode `sim` beside the measured ones, so `show` and `export` work on both.
//!
//! Parse the spec (same `--scale`/`--repetitions` as `run`), take each worker's CPU demand
//! from a measured run if asked (`--demand-from`), calibrate what was not given (pi and hash
//! CPU cost, synchronous write cost) on this machine, hand the plan to
//! `schedlab-simrun`, store each record, print the tables, and optionally draw a Gantt chart.
//! Periodic task sets need no calibration: their jobs' CPU demand is in the spec
//! (`schedlab_simrun::rt` says how each scheduler is modelled).

use super::common::{bad_input, load_spec, open_existing, open_store, pick_run};
use schedlab_model::{CellRecord, Mode};
use schedlab_simrun::{Demands, Measured, Params};
use schedlab_spec::{Plan, Workload};
use schedlab_store::Store;
use schedlab_sys::{env, Root};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
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

/// A non-negative, finite flag value in the flag's unit, converted to nanoseconds.
fn ns(flag: &str, v: Option<f64>, unit_ns: f64) -> anyhow::Result<Option<u64>> {
    match v {
        Some(x) if !(x.is_finite() && x >= 0.0) => {
            Err(bad_input(format!("--{flag} must be a non-negative number, got {x}")))
        }
        Some(x) => Ok(Some((x * unit_ns).round() as u64)),
        None => Ok(None),
    }
}

fn positive(flag: &str, v: Option<f64>) -> anyhow::Result<Option<f64>> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => {
            Err(bad_input(format!("--{flag} must be a positive number, got {x}")))
        }
        v => Ok(v),
    }
}

fn uses(plan: &Plan, kind: impl Fn(&Workload) -> bool) -> bool {
    plan.cells.iter().flat_map(|c| &c.groups).any(|g| kind(&g.workload))
}

/// Builds the model parameters from the flags, calibrating what is missing and needed
/// (pi and hash rates not when each worker's demand comes from `demands`).
fn params(
    a: &Args,
    plan: &Plan,
    environment: &schedlab_model::Environment,
    demands: Option<&Demands>,
    notes: &mut Vec<String>,
) -> anyhow::Result<Params> {
    let cpus = a.cpus.unwrap_or(environment.cpus as usize);
    if cpus == 0 {
        return Err(bad_input("--cpus must be at least 1"));
    }
    let measured_rate = demands.and_then(|d| d.mean_ns_per_iteration(plan));
    let ns_per_iteration = match positive("ns-per-iteration", a.ns_per_iteration)? {
        Some(v) => v,
        None if demands.is_some() => measured_rate.unwrap_or(1.0),
        None if uses(plan, |w| matches!(w, Workload::Pi { .. } | Workload::Mixed { .. })) => {
            let v = calibrate::pi_ns_per_iteration();
            notes.push(format!("pi: {v:.3} ns of CPU per iteration (calibrated)"));
            v
        }
        None => 1.0,
    };
    let ns_per_hash = match positive("ns-per-hash", a.ns_per_hash)? {
        Some(v) => v,
        None if demands.is_some() => 0.0,
        None if uses(plan, |w| matches!(w, Workload::Hash { .. })) => {
            let v = calibrate::ns_per_hash();
            notes.push(format!("hash: {v:.1} ns of CPU per hash (calibrated)"));
            v
        }
        None => 0.0,
    };
    let (mut write_cpu, mut write_service) = (
        ns("write-cpu-us", a.write_cpu_us, 1e3)?,
        ns("write-service-us", a.write_service_us, 1e3)?,
    );
    if (write_cpu.is_none() || write_service.is_none()) && uses(plan, |w| w.sync_writes() > 0) {
        let parent = plan.dir.clone().unwrap_or_else(std::env::temp_dir);
        let (cpu, service) = calibrate::sync_write(&parent).map_err(|e| {
            anyhow::anyhow!("calibrating synchronous writes in {}: {e} (or give --write-cpu-us and --write-service-us)", parent.display())
        })?;
        notes.push(format!(
            "O_SYNC 1 KiB write: {:.1} us CPU + {:.1} us device (calibrated in {})",
            cpu as f64 / 1e3,
            service as f64 / 1e3,
            parent.display()
        ));
        write_cpu = write_cpu.or(Some(cpu));
        write_service = write_service.or(Some(service));
    }
    let mut p =
        Params::new(cpus, ns_per_iteration, write_cpu.unwrap_or(0), write_service.unwrap_or(0));
    p.ns_per_hash = ns_per_hash;
    p.rr_quantum_ns = match ns("rr-quantum-ms", a.rr_quantum_ms, 1e6)? {
        Some(q) => q,
        None => environment
            .rr_timeslice_ms
            .filter(|&m| m > 0)
            .map(|m| m as u64 * 1_000_000)
            .unwrap_or(p.rr_quantum_ns),
    };
    p.fair_slice_ns = ns("fair-slice-us", a.fair_slice_us, 1e3)?
        .unwrap_or_else(|| schedlab_simrun::fair_slice(cpus, environment.hz));
    p.switch_cost_ns = ns("switch-cost-us", a.switch_cost_us, 1e3)?.unwrap_or(p.switch_cost_ns);
    p.every_cycle = a.every_cycle;
    p.migration_cost_ns =
        ns("migration-cost-us", a.migration_cost_us, 1e3)?.unwrap_or(p.migration_cost_ns);
    p.setup_ns = ns("setup-us", a.setup_us, 1e3)?.unwrap_or(0);
    if let (Some(rt), Some(period)) = (environment.rt_runtime_us, environment.rt_period_us) {
        p.rt_share = if rt < 0 || period <= 0 { 1.0 } else { (rt as f64 / period as f64).min(1.0) };
    }
    if let Some(d) = demands {
        p.demand_from_run = Some(d.run());
        if let Some(r) = measured_rate {
            notes.push(format!("pi: {r:.3} ns of CPU per iteration on average in run {} (each worker takes its own)", d.run()));
        }
    }
    p.validate().map_err(|e| bad_input(e.to_string()))?;
    Ok(p)
}

/// Each worker's CPU demand from measured run `run` in the database, checked against the
/// plan before anything is stored.
fn measured_demands(db: &Path, plan: &Plan, run: i64) -> anyhow::Result<Demands> {
    let store = open_existing(db)?;
    let row = pick_run(&store, Some(run))?;
    let records = store.cells(row.id)?;
    let measured =
        Measured { id: row.id, simulated: row.mode == Mode::Sim.as_str(), records: &records };
    schedlab_simrun::demand::from_measured(plan, measured)
        .map_err(|e| bad_input(format!("--demand-from {run}: {e}")))
}

/// The Gantt chart request, checked against the plan before anything is simulated.
struct GanttRequest {
    path: PathBuf,
    cell: u32,
    from: u64,
    to: Option<u64>,
}

fn gantt_request(a: &Args, plan: &Plan) -> anyhow::Result<Option<GanttRequest>> {
    let Some(path) = a.gantt.clone() else {
        if a.gantt_cell.is_some() || a.from.is_some() || a.to.is_some() {
            return Err(bad_input("--gantt-cell, --from and --to need --gantt FILE.svg"));
        }
        return Ok(None);
    };
    let keys = || plan.cells.iter().take(12).map(|c| c.key.as_str()).collect::<Vec<_>>().join(", ");
    let cell =
        match &a.gantt_cell {
            Some(k) => plan.cells.iter().find(|c| &c.key == k).ok_or_else(|| {
                bad_input(format!("no cell `{k}` in this plan; cells: {}", keys()))
            })?,
            None if plan.cells.len() == 1 => &plan.cells[0],
            None => {
                return Err(bad_input(format!(
                    "--gantt needs --gantt-cell KEY: this plan has {} cells ({})",
                    plan.cells.len(),
                    keys()
                )))
            }
        };
    let from = ns("from", a.from, 1e9)?.unwrap_or(0);
    let to = ns("to", a.to, 1e9)?;
    if to.is_some_and(|t| t <= from) {
        return Err(bad_input("--to must be after --from"));
    }
    if path.exists() {
        return Err(bad_input(format!(
            "{} already exists; choose a new file for the chart",
            path.display()
        )));
    }
    Ok(Some(GanttRequest { path, cell: cell.index, from, to }))
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Runs `schedlab simulate`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    super::common::check_db_dir(db)?;
    keep_freed_memory();
    let mut spec = load_spec(
        a.file.as_deref(),
        a.scale,
        a.repetitions.map(super::common::Repetitions::Count),
    )?;
    let resumed = if a.resume { Some(resumed_run(db, &mut spec)?) } else { None };
    let plan = &spec.plan;
    let batches = plan.cells.iter().any(|c| schedlab_simrun::sets::batch(c).is_some());
    if batches {
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
    let p = params(&a, plan, &environment, demands.as_ref(), &mut notes)?;
    if let Some((store, id, _)) = &resumed {
        same_model(store, *id, plan, &p)?;
        store.reopen_run(*id)?;
    }
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

    let plan_json = serde_json::to_string(plan)?;
    let steps = plan.steps().len();
    let announce = |run_id: i64| {
        if !a.quiet {
            eprintln!(
                "run {run_id}: simulating {} ({} cells x {} repetitions); results in {}",
                plan.name,
                plan.cells.len(),
                plan.repetitions,
                db.display()
            );
        }
    };
    let (resumed, done) = match resumed {
        Some((store, id, done)) => {
            announce(id);
            (Some((store, id)), done)
        }
        None => (None, HashSet::new()),
    };
    let (result, opened) = std::thread::scope(|scope| {
        // Opening the database and recording the run mostly wait for the disk (the first
        // write creates and syncs the WAL file), so they go on beside the simulation of the
        // first cell, which needs neither; the first record waits for them.
        let mut store = match resumed {
            Some((store, id)) => StoreWhenReady::Open(store, id),
            None => StoreWhenReady::Opening(scope.spawn(|| -> anyhow::Result<(Store, i64)> {
                let store = open_store(db)?;
                let run_id =
                    super::common::create_run(&store, &spec, Mode::Sim, &environment, &plan_json)?;
                Ok((store, run_id))
            })),
        };
        let result = schedlab_simrun::simulate_plan_with(
            plan,
            &p,
            demands.as_ref(),
            gantt.as_ref().map(|g| g.cell),
            |mut rec: CellRecord| -> anyhow::Result<()> {
                let (store, run_id) = store.get(&announce)?;
                rec.started_unix = unix_now();
                if !a.quiet && rec.rep == 0 && !rec.warmup {
                    let what =
                        rec.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
                    eprintln!(
                        "[{}/{steps}] {}: makespan {:.3} s{what}",
                        rec.ordinal + 1,
                        rec.params.key,
                        rec.makespan_s
                    );
                }
                if !done.contains(&(rec.params.cell_id, rec.rep, rec.warmup)) {
                    store.insert_cell(run_id, &rec)?;
                }
                Ok(())
            },
        );
        let ready = store.get(&announce).map(|_| ());
        let opened = ready.map(|()| store.into_open());
        (result, opened)
    });
    let (mut store, run_id) = match (result.as_ref(), opened) {
        (_, Ok(Some(open))) => open,
        // The database could not be opened: the simulation's error says why.
        (Err(_), _) => return result.map(|_| ExitCode::FAILURE),
        (Ok(_), Err(e)) => return Err(e),
        (Ok(_), Ok(None)) => unreachable!("get() succeeded, so the store is open"),
    };
    let traced = match result {
        Ok(t) => t,
        Err(e) => {
            store.finish_run(run_id, &schedlab_store::RunStatus::Failed, &warnings)?;
            return Err(e.context(format!("simulated run {run_id} failed")));
        }
    };
    if batches {
        if let Some(sig) = simulate_batches(&mut store, run_id, plan, &p, &a)? {
            store.finish_run(run_id, &schedlab_store::RunStatus::Interrupted, &warnings)?;
            let done = store.done_task_sets(run_id)?.len();
            eprintln!(
                "interrupted by signal {sig}: {done} simulated sets of run {run_id} are stored. Finish it with `{}`",
                super::run::resume_command_of("simulate", db, a.file.as_deref())
            );
            return Ok(ExitCode::from(128 + sig.clamp(1, 127) as u8));
        }
    }
    store.finish_run(run_id, &schedlab_store::RunStatus::Complete, &warnings)?;
    if let Some(g) = gantt {
        let key = &plan.cells[g.cell as usize].key;
        let traced = traced
            .ok_or_else(|| anyhow::anyhow!("no chart: cell {key} was not simulated (see its message in `schedlab show {run_id}`)"))?;
        let to = g.to.unwrap_or(traced.end);
        let svg = schedlab_simrun::gantt::svg(
            &traced,
            &format!("{} — {key} (simulated, run {run_id})", plan.name),
            g.from,
            to,
        )
        .map_err(|e| bad_input(e.to_string()))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&g.path)
            .map_err(|e| bad_input(format!("cannot create {}: {e}", g.path.display())))?;
        f.write_all(svg.as_bytes())?;
        if !a.quiet {
            eprintln!("Gantt chart of {key} written to {}", g.path.display());
        }
    }
    if !a.quiet {
        super::show::print_run(&store, run_id)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// (cell, repetition, warm-up) of the cell repetitions a run has stored.
type DoneSteps = HashSet<(u32, u32, bool)>;

/// The unfinished simulated run of this spec text `--resume` continues: the database open,
/// the run's id, its stored cell repetitions; `spec` takes its plan.
fn resumed_run(
    db: &Path,
    spec: &mut schedlab_spec::Spec,
) -> anyhow::Result<(Store, i64, DoneSteps)> {
    let store = open_existing(db)?;
    let row = store.resumable_in_mode(&spec.hash, Mode::Sim)?.ok_or_else(|| {
        bad_input(format!(
            "nothing to resume: no unfinished simulated run of this experiment file in {}",
            db.display()
        ))
    })?;
    spec.plan = serde_json::from_str(&row.plan_json).map_err(|e| {
        anyhow::anyhow!(
            "run {} was stored by another version of schedlab and cannot be resumed: {e}",
            row.id
        )
    })?;
    let done = store.done_steps(row.id)?.into_iter().collect();
    Ok((store, row.id, done))
}

/// Refuses to resume run `id` under another model than the one its stored cells were
/// simulated with (other `--cpus`, costs or rates): the rest would not match them.
fn same_model(store: &Store, id: i64, plan: &Plan, p: &Params) -> anyhow::Result<()> {
    for c in store.cells(id)? {
        let Some(stored) = c.samples.iter().find_map(|s| s.extra.sim.as_ref()) else {
            continue;
        };
        let Some(cell) = plan.cells.iter().find(|x| x.index == c.params.cell_id) else {
            continue;
        };
        let now = schedlab_simrun::knobs::params_for(p, &plan.knobs_for(cell));
        if stored.model != now {
            return Err(bad_input(format!(
                "run {id} was simulated with the model \"{}\", not \"{}\": give --resume the options (--cpus, costs, rates) it had",
                stored.model.describe(),
                now.describe()
            )));
        }
        return Ok(());
    }
    Ok(())
}

/// Sets simulated between two looks for a stop request and stored in one transaction.
const SETS_PER_CHUNK: usize = 256;

/// Simulates every set of the plan's batches not yet stored, in parallel, storing each
/// chunk as it ends; returns the stop signal when one came (what was stored stays).
fn simulate_batches(
    store: &mut Store,
    run_id: i64,
    plan: &Plan,
    p: &Params,
    a: &Args,
) -> anyhow::Result<Option<i32>> {
    use indicatif::{ProgressBar, ProgressStyle};
    use std::io::IsTerminal;
    let done = store.done_task_sets(run_id)?;
    let todo = schedlab_simrun::sets::pending(plan, p, &done);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the simulation threads: {e}"))?;
    if !a.quiet {
        let before = if done.is_empty() {
            String::new()
        } else {
            format!(" ({} stored before)", done.len())
        };
        eprintln!(
            "run {run_id}: simulating {} generated sets on {} threads{before}",
            todo.len(),
            pool.current_num_threads()
        );
    }
    let bar = (!a.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(todo.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} sets  ETA {eta}",
            )
            .expect("valid template"),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    });
    // Without a bar (stderr not a terminal), a line per cell once its sets are done.
    let mut left: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for &(c, _) in &todo {
        left.entry(c).or_default().0 += 1;
    }
    let outcome = pool.install(|| {
        schedlab_simrun::sets::simulate_sets(plan, p, &todo, SETS_PER_CHUNK, |rows| {
            store.insert_task_sets(run_id, &rows).map_err(|e| Stop::Failed(e.into()))?;
            if let Some(b) = &bar {
                b.inc(rows.len() as u64);
            }
            for r in &rows {
                let e = left.get_mut(&r.cell_id).expect("a cell of the list");
                e.0 -= 1;
                e.1 += usize::from(r.schedulable);
                if e.0 == 0 && bar.is_none() && !a.quiet {
                    let cell = &plan.cells[r.cell_id as usize];
                    let n = sets_left_of(cell, &done);
                    eprintln!("{}: {n} sets simulated, {} schedulable", cell.key, e.1);
                }
            }
            match schedlab_runner::signals::stopped() {
                Some(sig) => Err(Stop::Signal(sig)),
                None => Ok(()),
            }
        })
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match outcome {
        Ok(()) => Ok(None),
        Err(Stop::Signal(sig)) => Ok(Some(sig)),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// How many of `cell`'s sets were not in `done` (those simulated now).
fn sets_left_of(
    cell: &schedlab_spec::Cell,
    done: &std::collections::BTreeSet<(u32, u32)>,
) -> usize {
    let all = schedlab_simrun::sets::batch(cell).map_or(0, |b| b.set_count() as usize);
    all - done.iter().filter(|(c, _)| *c == cell.index).count()
}

/// Why the batches stopped early.
enum Stop {
    /// A stop signal (SIGINT, SIGTERM, SIGHUP).
    Signal(i32),
    /// Storing failed.
    Failed(anyhow::Error),
}

/// The results database, opened by another thread until the first record needs it.
enum StoreWhenReady<'s> {
    Opening(std::thread::ScopedJoinHandle<'s, anyhow::Result<(Store, i64)>>),
    Open(Store, i64),
    Failed,
}

impl StoreWhenReady<'_> {
    /// The open store and the run's id, waiting for them the first time (and then calling
    /// `announce` with the id).
    fn get(&mut self, announce: &impl Fn(i64)) -> anyhow::Result<(&mut Store, i64)> {
        if matches!(self, StoreWhenReady::Opening(_)) {
            let StoreWhenReady::Opening(opening) = std::mem::replace(self, StoreWhenReady::Failed)
            else {
                unreachable!()
            };
            let (store, run_id) =
                opening.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            announce(run_id);
            *self = StoreWhenReady::Open(store, run_id);
        }
        match self {
            StoreWhenReady::Open(store, run_id) => Ok((store, *run_id)),
            _ => Err(anyhow::anyhow!("the results database could not be opened")),
        }
    }

    fn into_open(self) -> Option<(Store, i64)> {
        match self {
            StoreWhenReady::Open(store, run_id) => Some((store, run_id)),
            _ => None,
        }
    }
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

/// Measurements on this machine that give the model its rates.
mod calibrate {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Path;

    /// CPU time of the calling thread, ns (unaffected by other load on the machine).
    fn thread_cpu_ns() -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: ts is a valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// Grows the amount of work until one run takes ~50 ms of CPU; returns CPU ns per unit.
    fn per_unit(mut work: impl FnMut(u64)) -> f64 {
        const TARGET_NS: u64 = 50_000_000;
        let mut n = 1u64 << 14;
        loop {
            let t0 = thread_cpu_ns();
            work(n);
            let dt = thread_cpu_ns().saturating_sub(t0).max(1);
            if dt >= TARGET_NS * 9 / 10 || n >= 1 << 40 {
                return dt as f64 / n as f64;
            }
            n = (n as f64 * (TARGET_NS as f64 / dt as f64).clamp(2.0, 1000.0)) as u64;
        }
    }

    /// CPU ns per pi iteration, with the workers' own pi code.
    pub fn pi_ns_per_iteration() -> f64 {
        per_unit(|n| {
            std::hint::black_box(schedlab_workloads::pi(n, 1, 0, &mut schedlab_workloads::NoProbe));
        })
    }

    /// CPU ns per hash of the hash workload.
    pub fn ns_per_hash() -> f64 {
        let mut buf = [0x5au8; schedlab_workloads::HASH_BUFFER];
        per_unit(|n| {
            std::hint::black_box(schedlab_workloads::hash(
                n,
                &mut buf,
                &mut schedlab_workloads::NoProbe,
            ));
        })
    }

    /// (CPU ns, device ns) of one O_SYNC 1 KiB write: 40 timed writes after 4 warm-ups in a
    /// fresh directory under `parent`; the device time is the median of wall - CPU.
    pub fn sync_write(parent: &Path) -> std::io::Result<(u64, u64)> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = parent.join(format!("schedlab-calibrate-{}-{stamp}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let file = dir.join("sync-writes");
        let outcome = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_SYNC)
                .open(&file)?;
            let block = [0xa5u8; 1024];
            let (mut cpu, mut device) = (Vec::new(), Vec::new());
            for i in 0..44 {
                let (w0, c0) = (std::time::Instant::now(), thread_cpu_ns());
                f.write_all(&block)?;
                let (wall, c) =
                    (w0.elapsed().as_nanos() as u64, thread_cpu_ns().saturating_sub(c0));
                if i >= 4 {
                    cpu.push(c);
                    device.push(wall.saturating_sub(c));
                }
            }
            device.sort_unstable();
            Ok((cpu.iter().sum::<u64>() / cpu.len() as u64, device[device.len() / 2]))
        })();
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_dir(&dir);
        outcome
    }
}
