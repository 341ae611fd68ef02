//! [`Session::simulate`]: a plan through the simulator, stored as a run with mode `sim`
//! beside the measured ones; resumed or new, its batches of generated sets simulated in
//! parallel a chunk at a time, a stop signal taken between chunks.

use crate::resume::{DoneSteps, Which};
use crate::{db, resume, Error, Observer, Session};
use schedlab_model::{CellRecord, Environment, Mode};
use schedlab_simrun::{Demands, Measured, Params};
use schedlab_spec::{Plan, Spec, Workload};
use schedlab_store::{RunStatus, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// An unfinished simulated run `--resume` continues: the database, the run's id, its
/// stored cell repetitions.
pub struct Resumed {
    store: Store,
    id: i64,
    done: DoneSteps,
}

/// What to simulate, and how.
pub struct Simulation<'a> {
    /// The spec (its plan the stored one when resumed).
    pub spec: &'a Spec,
    /// The run it continues.
    pub resumed: Option<Resumed>,
    /// The machine's facts, stored with a new run.
    pub environment: &'a Environment,
    /// The model.
    pub params: &'a Params,
    /// Each worker's CPU demand from a measured run.
    pub demands: Option<&'a Demands>,
    /// The cell whose schedule is kept for a chart.
    pub chart: Option<u32>,
    /// Cells not simulated, said as warnings and stored with the run.
    pub warnings: Vec<String>,
    /// Threads that simulate a batch's sets (None: one per CPU).
    pub threads: Option<usize>,
}

/// How a simulation ended.
pub enum SimEnded {
    /// Every cell and set was simulated; the charted cell's schedule, when it was.
    Complete(Option<schedlab_simrun::SimResult>),
    /// A stop signal came between chunks of sets: the sets simulated are stored.
    Interrupted {
        /// The signal.
        signal: i32,
        /// Sets stored.
        sets: usize,
    },
}

/// A simulated run's outcome: the database with the run, and how it ended.
pub struct Simulated {
    /// The database, open.
    pub store: Store,
    /// The run's id.
    pub run_id: i64,
    /// How it ended.
    pub ended: SimEnded,
}

/// A non-negative, finite flag value in the flag's unit, converted to nanoseconds.
pub fn ns(flag: &str, v: Option<f64>, unit_ns: f64) -> Result<Option<u64>, Error> {
    match v {
        Some(x) if !(x.is_finite() && x >= 0.0) => {
            Err(Error::refused(format!("--{flag} must be a non-negative number, got {x}")))
        }
        Some(x) => Ok(Some((x * unit_ns).round() as u64)),
        None => Ok(None),
    }
}

fn positive(flag: &str, v: Option<f64>) -> Result<Option<f64>, Error> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => {
            Err(Error::refused(format!("--{flag} must be a positive number, got {x}")))
        }
        v => Ok(v),
    }
}

/// Whether any group of `plan` runs a workload `kind` says yes to.
pub fn uses(plan: &Plan, kind: impl Fn(&Workload) -> bool) -> bool {
    plan.cells.iter().flat_map(|c| &c.groups).any(|g| kind(&g.workload))
}

/// The model's parameters as the command line gives them (None: calibrated here, or the
/// default).
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    /// Simulated CPUs (default: this machine's).
    pub cpus: Option<usize>,
    /// CPU ns per pi iteration.
    pub ns_per_iteration: Option<f64>,
    /// CPU ns per hash.
    pub ns_per_hash: Option<f64>,
    /// Device service time of one synchronous 1 KiB write, us.
    pub write_service_us: Option<f64>,
    /// CPU time of one synchronous write, us.
    pub write_cpu_us: Option<f64>,
    /// SCHED_RR quantum, ms.
    pub rr_quantum_ms: Option<f64>,
    /// Slice of the fair model, us.
    pub fair_slice_us: Option<f64>,
    /// Context-switch cost, us.
    pub switch_cost_us: Option<f64>,
    /// Extra cost of a migration, us.
    pub migration_cost_us: Option<f64>,
    /// CPU each worker spends before the release, us.
    pub setup_us: Option<f64>,
    /// CPU of one write or read of a message (pipe, messaging), us.
    pub ipc_call_us: Option<f64>,
    /// Delay of a remote wake-up by a message (pipe, messaging), us.
    pub wakeup_us: Option<f64>,
    /// Simulate every hyperperiod of a periodic set.
    pub every_cycle: bool,
    /// Charge the costs of a stored calibration (`schedlab calibrate`): `Some(None)` the
    /// newest, `Some(Some(id))` calibration `id`. The flags above override its switch cost.
    pub calibrated: Option<Option<i64>>,
}

impl ModelFlags {
    /// Builds the model parameters from the flags, calibrating what is missing and needed
    /// (pi and hash rates not when each worker's demand comes from `demands`), with the costs
    /// of a calibration stored in `db` when asked ([`calibrated`]).
    pub fn params(
        &self,
        db: &Path,
        plan: &Plan,
        environment: &schedlab_model::Environment,
        demands: Option<&Demands>,
        notes: &mut Vec<String>,
    ) -> Result<Params, Error> {
        let cpus = self.cpus.unwrap_or(environment.cpus as usize);
        if cpus == 0 {
            return Err(Error::refused("--cpus must be at least 1"));
        }
        let measured_rate = demands.and_then(|d| d.mean_ns_per_iteration(plan));
        let ns_per_iteration = match positive("ns-per-iteration", self.ns_per_iteration)? {
            Some(v) => v,
            None if demands.is_some() => measured_rate.unwrap_or(1.0),
            None if uses(plan, |w| matches!(w, Workload::Pi { .. } | Workload::Mixed { .. })) => {
                let v = schedlab_workloads::calibrate::pi_ns_per_iteration();
                notes.push(format!("pi: {v:.3} ns of CPU per iteration (calibrated)"));
                v
            }
            None => 1.0,
        };
        let ns_per_hash = match positive("ns-per-hash", self.ns_per_hash)? {
            Some(v) => v,
            None if demands.is_some() => 0.0,
            None if uses(plan, |w| matches!(w, Workload::Hash { .. })) => {
                let v = schedlab_workloads::calibrate::ns_per_hash();
                notes.push(format!("hash: {v:.1} ns of CPU per hash (calibrated)"));
                v
            }
            None => 0.0,
        };
        let (mut write_cpu, mut write_service) = (
            ns("write-cpu-us", self.write_cpu_us, 1e3)?,
            ns("write-service-us", self.write_service_us, 1e3)?,
        );
        if (write_cpu.is_none() || write_service.is_none()) && uses(plan, |w| w.sync_writes() > 0) {
            let parent = plan.dir.clone().unwrap_or_else(std::env::temp_dir);
            let (cpu, service) = schedlab_workloads::calibrate::sync_write(&parent).map_err(|e| {
                Error::Failed(format!("calibrating synchronous writes in {}: {e} (or give --write-cpu-us and --write-service-us)", parent.display()))
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
        p.rr_quantum_ns = match ns("rr-quantum-ms", self.rr_quantum_ms, 1e6)? {
            Some(q) => q,
            None => environment
                .rr_timeslice_ms
                .filter(|&m| m > 0)
                .map(|m| m as u64 * 1_000_000)
                .unwrap_or(p.rr_quantum_ns),
        };
        p.fair_slice_ns = ns("fair-slice-us", self.fair_slice_us, 1e3)?
            .unwrap_or_else(|| schedlab_simrun::fair_slice(cpus, environment.hz));
        if let Some(id) = self.calibrated {
            let cpu_time_jobs = crate::calibrate::cpu_time_jobs(plan);
            p = calibrated(p, db, id, cpu_time_jobs, environment, notes)?;
        }
        p.switch_cost_ns =
            ns("switch-cost-us", self.switch_cost_us, 1e3)?.unwrap_or(p.switch_cost_ns);
        p.every_cycle = self.every_cycle;
        p.migration_cost_ns =
            ns("migration-cost-us", self.migration_cost_us, 1e3)?.unwrap_or(p.migration_cost_ns);
        p.setup_ns = ns("setup-us", self.setup_us, 1e3)?.unwrap_or(0);
        p.ipc_call_ns = ns("ipc-call-us", self.ipc_call_us, 1e3)?.unwrap_or(p.ipc_call_ns);
        p.wakeup_ns = ns("wakeup-us", self.wakeup_us, 1e3)?.unwrap_or(p.wakeup_ns);
        if let (Some(rt), Some(period)) = (environment.rt_runtime_us, environment.rt_period_us) {
            p.rt_share = schedlab_spec::knob::rt_share(rt, period).map_or(1.0, |s| s.min(1.0));
        }
        if let Some(d) = demands {
            p.demand_from_run = Some(d.run());
            if let Some(r) = measured_rate {
                notes.push(format!("pi: {r:.3} ns of CPU per iteration on average in run {} (each worker takes its own)", d.run()));
            }
        }
        p.validate().map_err(|e| Error::refused(e.to_string()))?;
        Ok(p)
    }
}

/// `p` with the costs of calibration `id` (the newest for None) in `db`, as the `+overheads`
/// tests charge them ([`crate::calibrate::Calibration::overheads_for`]: no interrupts when
/// the plan's jobs are CPU time, `cpu_time_jobs`, and the kernel counts interrupts in it),
/// mapped by [`schedlab_simrun::overheads::with_overheads`]; the model records the
/// calibration's id. Said in `notes`, with a warning when the calibration measured another
/// machine than `here`.
pub fn calibrated(
    p: Params,
    db: &Path,
    id: Option<i64>,
    cpu_time_jobs: bool,
    here: &schedlab_model::Environment,
    notes: &mut Vec<String>,
) -> Result<Params, Error> {
    let which = id.map_or("no calibration".to_string(), |id| format!("no calibration {id}"));
    let missing = || {
        Error::refused(format!(
            "--calibrated: {} has {which}: run `schedlab calibrate` first",
            db.display()
        ))
    };
    if !db.exists() {
        return Err(missing());
    }
    let (id, c) = crate::calibrate::stored(db, id)?.ok_or_else(missing)?;
    let p = schedlab_simrun::overheads::with_overheads(
        p,
        &c.overheads_for(id, cpu_time_jobs),
        Some(id),
    );
    p.validate().map_err(|e| Error::refused(format!("--calibrated: calibration {id}: {e}")))?;
    notes.push(format!(
        "costs of calibration {id} (p{} of each figure): switch {} us, release latency {} us, release interrupt {} us, tick {} us every {} us",
        c.percentile,
        p.switch_cost_ns as f64 / 1e3,
        p.release_latency_ns as f64 / 1e3,
        p.release_irq_ns as f64 / 1e3,
        p.tick_ns as f64 / 1e3,
        p.tick_period_ns as f64 / 1e3
    ));
    notes.extend(c.measured_elsewhere(id, here, "this machine"));
    if c.interrupts_free(cpu_time_jobs) {
        notes.push(format!("calibration {id}: the kernel counts interrupts in the interrupted task's CPU time, and the sets' jobs do C of CPU time: no tick or release interrupt charged"));
    }
    Ok(p)
}

/// Each worker's CPU demand from measured run `run` in the database, checked against the
/// plan before anything is stored.
pub fn measured_demands(db: &Path, plan: &Plan, run: i64) -> Result<Demands, Error> {
    let store = db::open_existing(db)?;
    let row = db::pick_run(&store, Some(run))?;
    let records = store.cells(row.id)?;
    let measured =
        Measured { id: row.id, simulated: row.mode == Mode::Sim.as_str(), records: &records };
    schedlab_simrun::demand::from_measured(plan, measured)
        .map_err(|e| Error::refused(format!("--demand-from {run}: {e}")))
}

/// Sets simulated between two looks for a stop request and stored in one transaction.
const SETS_PER_CHUNK: usize = 256;

impl Session {
    /// The unfinished simulated run of this spec text `--resume` continues; `spec` takes its
    /// plan.
    pub fn resume_simulated(&self, spec: &mut Spec) -> Result<Resumed, Error> {
        let store = db::open_existing(&self.db)?;
        let (row, plan) = resume::find(&store, &self.db, &spec.hash, Which::Simulated)?;
        spec.plan = plan;
        let done = store.done_steps(row.id)?.into_iter().collect();
        Ok(Resumed { store, id: row.id, done })
    }

    /// Simulates every cell repetition (and set) not stored yet, storing each as it is made.
    /// Call [`schedlab_runner::signals::block`] first when the plan has batches.
    pub fn simulate(
        &self,
        s: Simulation,
        observer: &mut (dyn Observer + Send),
    ) -> Result<Simulated, Error> {
        let plan = &s.spec.plan;
        if let Some(r) = &s.resumed {
            same_model(&r.store, r.id, plan, s.params)?;
            r.store.reopen_run(r.id)?;
        }
        let announce = |run_id: i64, observer: &mut dyn Observer| {
            observer.detail(&format!(
                "run {run_id}: simulating {} ({} cells x {} repetitions); results in {}",
                plan.name,
                plan.cells.len(),
                plan.repetitions,
                self.db.display()
            ))
        };
        let (resumed, done) = match s.resumed {
            Some(r) => {
                announce(r.id, observer);
                (Some((r.store, r.id)), r.done)
            }
            None => (None, DoneSteps::new()),
        };
        let steps = plan.steps().len();
        let (result, opened) = std::thread::scope(|scope| {
            // Opening the database and recording the run mostly wait for the disk (the first
            // write creates and syncs the WAL file), so they go on beside the simulation of
            // the first cell, which needs neither; the first record waits for them.
            let mut store = match resumed {
                Some((store, id)) => StoreWhenReady::Open(store, id),
                None => StoreWhenReady::Opening(scope.spawn(|| -> Result<(Store, i64), Error> {
                    let store = db::open(&self.db)?;
                    let id = db::create_run(&store, s.spec, Mode::Sim, s.environment)?;
                    Ok((store, id))
                })),
            };
            let result = schedlab_simrun::simulate_plan_with(
                plan,
                s.params,
                s.demands,
                s.chart,
                |mut rec: CellRecord| -> Result<(), Error> {
                    let (store, run_id) = store.get(&mut |id| announce(id, observer))?;
                    rec.started_unix = crate::now_unix();
                    if rec.rep == 0 && !rec.warmup {
                        let what =
                            rec.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
                        observer.detail(&format!(
                            "[{}/{steps}] {}: makespan {:.3} s{what}",
                            rec.ordinal + 1,
                            rec.params.key,
                            rec.makespan_s
                        ));
                    }
                    if !done.contains(&(rec.params.cell_id, rec.rep, rec.warmup)) {
                        store.insert_cell(run_id, &rec)?;
                    }
                    Ok(())
                },
            );
            let ready = store.get(&mut |id| announce(id, observer)).map(|_| ());
            (result, ready.map(|()| store.into_open()))
        });
        let (mut store, run_id) = match (result.as_ref(), opened) {
            (_, Ok(Some(open))) => open,
            // The database could not be opened: the simulation's error says why.
            (Err(_), _) => return Err(result.expect_err("an error")),
            (Ok(_), Err(e)) => return Err(e),
            (Ok(_), Ok(None)) => unreachable!("get() succeeded, so the store is open"),
        };
        let traced = match result {
            Ok(t) => t,
            Err(e) => {
                store.finish_run(run_id, &RunStatus::Failed, &s.warnings)?;
                return Err(Error::context(format!("simulated run {run_id} failed"), e));
            }
        };
        if plan.cells.iter().any(|c| schedlab_simrun::sets::batch(c).is_some()) {
            if let Some(signal) =
                simulate_batches(&mut store, run_id, plan, s.params, s.threads, observer)?
            {
                store.finish_run(run_id, &RunStatus::Interrupted, &s.warnings)?;
                let sets = store.done_task_sets(run_id)?.len();
                return Ok(Simulated {
                    store,
                    run_id,
                    ended: SimEnded::Interrupted { signal, sets },
                });
            }
        }
        store.finish_run(run_id, &RunStatus::Complete, &s.warnings)?;
        Ok(Simulated { store, run_id, ended: SimEnded::Complete(traced) })
    }
}

/// Refuses to resume run `id` under another model than the one its stored cells were
/// simulated with (other `--cpus`, costs or rates): the rest would not match them.
fn same_model(store: &Store, id: i64, plan: &Plan, p: &Params) -> Result<(), Error> {
    for c in store.cells(id)? {
        let Some(stored) = c.samples.iter().find_map(|s| s.extra.sim.as_ref()) else {
            continue;
        };
        let Some(cell) = plan.cells.iter().find(|x| x.index == c.params.cell_id) else {
            continue;
        };
        let now = schedlab_simrun::knobs::params_for(p, &plan.knobs_for(cell));
        if stored.model != now {
            return Err(Error::Refused(format!(
                "run {id} was simulated with the model \"{}\", not \"{}\": give --resume the options (--cpus, costs, rates) it had",
                stored.model.describe(),
                now.describe()
            )));
        }
        return Ok(());
    }
    Ok(())
}

/// Simulates every set of the plan's batches not yet stored, in parallel, storing each
/// chunk as it ends; returns the stop signal when one came (what was stored stays).
fn simulate_batches(
    store: &mut Store,
    run_id: i64,
    plan: &Plan,
    p: &Params,
    threads: Option<usize>,
    observer: &mut (dyn Observer + Send),
) -> Result<Option<i32>, Error> {
    let done = store.done_task_sets(run_id)?;
    let todo = schedlab_simrun::sets::pending(plan, p, &done);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the simulation threads: {e}")))?;
    let before =
        if done.is_empty() { String::new() } else { format!(" ({} stored before)", done.len()) };
    observer.detail(&format!(
        "run {run_id}: simulating {} generated sets on {} threads{before}",
        todo.len(),
        pool.current_num_threads()
    ));
    observer.begin_sets(todo.len());
    // Sets left and schedulable per cell, for a line per cell once its sets are done.
    let mut left: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for &(c, _) in &todo {
        left.entry(c).or_default().0 += 1;
    }
    let outcome = pool.install(|| {
        schedlab_simrun::sets::simulate_sets(plan, p, &todo, SETS_PER_CHUNK, |rows| {
            store.insert_task_sets(run_id, &rows).map_err(|e| Stop::Failed(e.into()))?;
            observer.sets_stored(rows.len());
            for r in &rows {
                let e = left.get_mut(&r.cell_id).expect("a cell of the list");
                e.0 -= 1;
                e.1 += usize::from(r.schedulable);
                if e.0 == 0 {
                    let cell = &plan.cells[r.cell_id as usize];
                    let n = sets_left_of(cell, &done);
                    observer.cell_sets_done(&format!(
                        "{}: {n} sets simulated, {} schedulable",
                        cell.key, e.1
                    ));
                }
            }
            match schedlab_runner::signals::stopped() {
                Some(sig) => Err(Stop::Signal(sig)),
                None => Ok(()),
            }
        })
    });
    observer.end();
    match outcome {
        Ok(()) => Ok(None),
        Err(Stop::Signal(sig)) => Ok(Some(sig)),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// How many of `cell`'s sets were not in `done` (those simulated now).
fn sets_left_of(cell: &schedlab_spec::Cell, done: &BTreeSet<(u32, u32)>) -> usize {
    let all = schedlab_simrun::sets::batch(cell).map_or(0, |b| b.set_count() as usize);
    all - done.iter().filter(|(c, _)| *c == cell.index).count()
}

/// Why the batches stopped early.
enum Stop {
    /// A stop signal (SIGINT, SIGTERM, SIGHUP).
    Signal(i32),
    /// Storing failed.
    Failed(Error),
}

/// The results database, opened by another thread until the first record needs it.
enum StoreWhenReady<'s> {
    Opening(std::thread::ScopedJoinHandle<'s, Result<(Store, i64), Error>>),
    Open(Store, i64),
    Failed,
}

impl StoreWhenReady<'_> {
    /// The open store and the run's id, waiting for them the first time (and then calling
    /// `announce` with the id).
    fn get(&mut self, announce: &mut dyn FnMut(i64)) -> Result<(&mut Store, i64), Error> {
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
            _ => Err(Error::Failed("the results database could not be opened".into())),
        }
    }

    fn into_open(self) -> Option<(Store, i64)> {
        match self {
            StoreWhenReady::Open(store, run_id) => Some((store, run_id)),
            _ => None,
        }
    }
}
