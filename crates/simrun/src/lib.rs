//! Simulates schedlab experiment plans: the same [`Plan`] the engine runs, through the
//! discrete-event simulator (`schedlab-sim`), into the same [`CellRecord`]s, so simulated
//! and measured runs are stored, shown and exported alike.
//!
//! Plan + [`Params`] -> per cell a [`CellInput`] ([`model`]) -> [`SimResult`] ->
//! [`CellRecord`] ([`record`]). No printing, no SQLite, no clock reads: the caller
//! calibrates the parameters, stores the records and stamps their wall-clock times.
//!
//! A simulation is deterministic, so every repetition of a cell is the same record
//! (simulated once, copied per repetition and warm-up).
//!
//! ```
//! use schedlab_plan::{Affinity, CgroupSpec, Cell, Class, Group, Order, Plan, Policy, Workload};
//! use schedlab_simrun::{simulate_plan, Params};
//!
//! // What `schedlab-spec` makes of `workload = ["pi"]`, `policy = ["fifo"]`, `processes = [4]`.
//! let fifo = Policy { class: Class::Fifo, priority: 50, nice: 0, deadline: None, slice_ns: None };
//! let group = Group {
//!     name: "main".into(),
//!     workload_name: "pi".into(),
//!     workload: Workload::Pi { iterations: 100_000_000 },
//!     policy_name: "fifo".into(),
//!     policy: fifo,
//!     processes: 4,
//!     affinity: Affinity::All,
//!     cgroup: CgroupSpec::default(),
//!     background: false,
//!     work_scale: None,
//! };
//! let cell = Cell { index: 0, key: "pi/fifo/n4".into(), groups: vec![group], io: None, knobs: Default::default(), cpu_scheduler: None };
//! let mut plan = Plan {
//!     name: "x".into(),
//!     description: None,
//!     source_path: "x.toml".into(),
//!     repetitions: 1,
//!     adaptive: None,
//!     warmup: 0,
//!     order: Order::Sequential,
//!     seed: 1,
//!     timeout: std::time::Duration::from_secs(1800),
//!     dir: None,
//!     scale: 1.0,
//!     device: None,
//!     cpu_dma_latency: Default::default(),
//!     cells: vec![cell],
//!     trace: Default::default(),
//!     knobs: Default::default(),
//!     allow_rt_unthrottled: false,
//! };
//! plan.scale(1e-6); // 100 iterations per worker
//! let params = Params::new(2, 10.0, 0, 0).without_costs();
//! let mut records = Vec::new();
//! simulate_plan(&plan, &params, None, |r| -> Result<(), ()> { records.push(r); Ok(()) }).unwrap();
//! // 4 bursts of 1 us on 2 CPUs: 2 us.
//! assert_eq!(records[0].makespan_s, 2e-6);
//! ```
//!
//! # The model (`model.rs`)
//!
//! | spec | simulated as |
//! |---|---|
//! | `pi` | one CPU burst: iterations x `ns_per_iteration`, or with `--demand-from RUN` the worker's own work CPU in RUN (below) |
//! | `hash` | one CPU burst: hashes x `ns_per_hash`, or the same per-worker demand |
//! | `copy` | per block: `write_cpu_ns` of CPU, then one synchronous write of `write_service_ns` on the device (one FIFO queue for all workers) |
//! | `mixed` | (`write_every` iterations + `write_cpu_ns`) of CPU, then one synchronous write, repeated; left-over iterations are a final burst |
//! | `pipe` (`bench.rs`) | per pair, two tasks passing a word over two channels, `loops` round trips: a writes (`ipc_call_ns` of CPU), wakes b and blocks on the reply; b reads and writes (2 x `ipc_call_ns`), wakes a and blocks. A woken task is ready at once on its waker's CPU, `wakeup_ns` later when it last ran on another; it takes its message when it runs. Each worker runs its own pairs, its tasks on its CPU when it is pinned, wherever the model puts them when not |
//! | `messaging` (`bench.rs`) | per group, `fds` receivers each on one channel all the group's `fds` senders write to; a sender sends `loops` messages to every receiver (`ipc_call_ns` before each), a receiver reads `fds x loops` (`ipc_call_ns` after each). A channel holds `bench::capacity` messages: sockets `net.core.wmem_default` (212,992 bytes) / (`message_bytes` + 576 bytes of `SKB_TRUESIZE` overhead), 315 for 100 bytes; pipes 16 pages of whole messages, 640 for 100 bytes; a full channel blocks its senders, an empty one its receiver. Threads and processes alike; other groups beside a benchmark are refused |
//! | `schbench` | not simulated: refused (its requests' timed sleeps, cache-footprint matrix work and per-CPU lock, and its latency percentiles, need timers and caches the model lacks) |
//! | `command` | not simulated: the cell is refused (or stored as failed with `--skip-unsupported`) |
//! | `udp_flood`, `io_interrupts` | not simulated: refused the same way (the model has no network stack, softirqs or device interrupts); as background groups they are refused as background groups |
//! | `other`, `batch` | the fair (EEVDF) model with nice weights and `fair_slice_ns` |
//! | `idle` | the fair model with SCHED_IDLE's weight 3 |
//! | `fifo`, `rr` | fixed priority; rr with `rr_quantum_ns` |
//! | `deadline` | EDF + hard CBS with the cell's runtime/deadline/period; the kernel's admission test (sum of runtime/period <= CPUs x `rt_share`) fails the cell as the kernel would |
//! | `periodic` (`rt.rs`) | one simulated periodic task per task: C = C x `work_fraction`, T, D, x/y, phase, the set's number of jobs. `other` -> fair model, `fifo-rm` -> rm, `fifo-dm` -> dm, `deadline` -> EDF + hard CBS (runtime C) global on all CPUs with per-task admission, `edf` -> edf, `dwcs` -> dwcs (work-conserving); all but `deadline` pinned to the set's CPU (default the last). Late jobs: skipped when they could start only after their deadline (job-loop schedulers), dropped at the deadline (`edf`, `dwcs`). `edf`/`dwcs` jobs take whole quanta (the live dispatcher's grid; no switch cost charged, it happens inside the quantum); response and CPU times are reported less the idle end of the last quantum. Refused: `body = "read"`, `edf`/`dwcs` sets off the quantum grid, a `cpu` beyond `--cpus`, other groups beside the set |
//! | groups | all groups in one simulation if they map to one policy; every worker pinned to one CPU -> partitioned, none pinned -> global; background groups, cgroup settings and multi-CPU pinning are refused |
//!
//! A `pipe` or `messaging` worker's sample is its tasks merged (CPU, blocks, preemptions,
//! migrations summed; first start to last end), with the benchmark's figures, defined as the
//! measured worker's and kept where it keeps them (`extra.bench`: `show`, `export` and
//! `compare` read both alike): for messaging `time_s` (release to the last task's end), for
//! pipe `us_per_op` (`time_s` x 1e6 / `loops`) and `ops_per_s` (`loops` x pairs /
//! `time_s`). `ipc_call_ns` (`--ipc-call-us`) defaults to 0.775 us: `taskset -c 0 perf bench
//! sched pipe` took 6.5 us per round trip here (docs/BENCHMARKS.md), two hops of a switch
//! (1.7 us) and a write and a read. `wakeup_ns` (`--wakeup-us`) defaults to 34 us, the idle
//! exit measured here against cyclictest: an upper bound for a CPU idle a few microseconds.
//!
//! A new workload kind is one more arm in `model::workload`; periodic sets are modelled whole
//! (`rt::cell_input`), since each task has its own parameters. A periodic task's sample carries
//! its `RtTask` in `extra.rt` (source `sim`: jobs, met, misses, fixed and sliding windows and
//! their violations, % of periods in violation, response mean/max, largest lateness, CPU per
//! job) and counts its completed jobs as work units; the cell's `rt` is its `CellRt`.
//!
//! Not modelled: RT throttling (the kernel caps RT classes at 95% of each CPU), the fair
//! class's tick granularity (the slice is the base slice plus half a tick, its mean), wake-up preemption
//! heuristics, per-CPU runqueues and load balancing, device parallelism and journal group
//! commits (one FIFO device), and the engine's own wake-ups.
//!
//! # Calibrated costs (`overheads.rs`)
//!
//! `schedlab simulate SPEC --calibrated [ID]` sets the model's costs from a stored
//! calibration (`schedlab calibrate`, the newest without ID), at the percentile the
//! `+overheads` tests use: the switch (scheduling + context switch), a periodic job's release
//! latency (it is ready that long after its arrival, due from the arrival) and release
//! interrupt (on its CPU at its arrival), and the tick (on every CPU, every tick period, while
//! anything is unfinished). `--switch-cost-us` still overrides the switch. Sets the live
//! dispatcher runs (`edf`, `dwcs`) are charged none of them, as no switch before: the quantum
//! holds them. Every sample's model names the calibration, and the per-set verdicts of a
//! batch charge the same figures ([`overheads::overheads`]).
//!
//! # Per-worker demand from a measured run (`demand.rs`)
//!
//! `schedlab simulate SPEC --demand-from RUN` gives each worker, as its CPU burst, the work CPU
//! (`user_s + sys_s - setup_user_s - setup_sys_s`) of the same worker in RUN (same `--db`):
//! the cell by key, the worker by group and place in the group (samples by index), repetition
//! r (warm-ups too) from RUN's repetition r. Each repetition is then simulated with its own
//! demands, so the measured spread of demands, repetition by repetition, is what the policy
//! sees: under RR a worker rotates only if its own demand exceeds the quantum (the mean-rate
//! model rotated all of a cell's workers or none, docs/FINDINGS.md). The mean per worker over
//! repetitions is not used: a worker's demand changes between repetitions with the VM's
//! speed, so averaging would narrow the spread. `Params::demand_from_run` says where the
//! demands came from (`show` and the report print it), each sample keeps its own in
//! `extra.sim.demand_ns`, so `trace export` simulates the cell again exactly; the stored
//! `ns_per_iteration` is RUN's mean (total work CPU / total iterations of the pi workers),
//! informative only. Refused (exit 2, before anything is stored, naming the first case): a
//! simulated RUN, a cell, repetition or worker RUN lacks, a repetition that did not run to its
//! end (status not ok, or a worker that exited non-zero or timed out), a worker whose work units differ from the spec's
//! (another `--scale`), and cells with any other workload than `pi` and `hash`: a copy or mixed
//! worker's CPU includes its writes' system time, which one figure cannot split into bursts,
//! and a periodic set's demand is its tasks' own. `--ns-per-iteration` and `--ns-per-hash`
//! cannot be given with it.
//!
//! Setup is not scheduled: the engine releases workers only after every one has exec'd and
//! prepared, so that ~1 ms of CPU per worker never overlaps the measured schedule. Measured
//! `user_s` includes it (and `setup_user_s` says how much); `--setup-us 1000` adds the same to
//! simulated `user_s`/`setup_user_s` for a like-for-like `user` column (default 0).
//!
//! # What a simulated sample means (`record.rs`)
//!
//! The same as a measured one: `start_offset_s` = first dispatch (when a measured worker's
//! release read returns), `end_offset_s` = completion, `wall_s` = end - start (the worker's
//! own clock), `engine_wall_s` = release to completion (turnaround), `user_s` = CPU time
//! (+ setup), `sys_s` = 0, `involuntary_csw` = preemptions (slice/quantum expiries
//! included), `voluntary_csw` = blocks, `cpu_pct` = CPU / wall. `pid`, RSS, faults and
//! /proc/stat deltas are 0. `extra` holds the class, the CPU it ended on, migrations,
//! synchronous writes and `sim.model` (every parameter).
//!
//! The simulation is deterministic: each cell is simulated once and every repetition and
//! warm-up stores the same record (with `--demand-from`, each repetition has its own demands
//! and its own simulation); the same plan and parameters give bit-identical samples.
//! Calibrated rates differ between invocations, so give them explicitly
//! (`--ns-per-iteration`, `--write-cpu-us`, `--write-service-us`) for reproducible runs.
//!
//! A periodic set's hyperperiods that repeat one already simulated are not simulated again:
//! the simulator finds the repetition by comparing its whole state at quiescent instants one
//! hyperperiod apart, and adds the cycle instead (`sim`'s `engine/cycles.rs`). The samples and
//! jobs stored are the same; `--every-cycle` simulates every hyperperiod (and says so in each
//! sample's `sim.model`).
//!
//! Gantt charts (`gantt.rs`): one row per worker, one bar per stretch it ran, coloured by
//! CPU, drawn with plotters (DejaVu Sans embedded for text layout).
//!
//! Tests: the textbook schedules, from spec text through the simulator to records, are
//! integration tests of the root package (`tests/sim_schedules.rs`, `tests/sim_rt_schedules.rs`),
//! since this crate takes a `Plan` (`schedlab-plan`) and does not depend on the TOML parser.
//!
//! `examples/costs.rs` measures the default switch and migration costs:
//! `cargo run --release -p schedlab-simrun --example costs`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bench;
pub mod demand;
pub mod gantt;
pub mod knobs;
pub mod model;
pub mod overheads;
mod params;
pub mod record;
pub mod rt;
pub mod sets;

use schedlab_model::CellRecord;
use schedlab_plan::{Cell, Class, Plan};
use schedlab_policy::{cbs, Reservation, Time};
/// A simulated cell's full schedule (what a Gantt chart draws).
pub use schedlab_sim::SimResult;

pub use demand::{DemandError, Demands, Measured};
pub use model::{cell_input, CellInput, Unsupported};
pub use params::{
    fair_slice, ParamError, Params, DEFAULT_HZ, DEFAULT_MIGRATION_COST_NS, DEFAULT_SWITCH_COST_NS,
    KERNEL_BASE_SLICE_NS,
};

/// One simulated cell: its record (repetition 0) and, if the trace was asked for, the
/// simulator's full result.
#[derive(Debug, Clone)]
pub struct CellSim {
    /// The record to store, once per repetition.
    pub record: CellRecord,
    /// The simulator's result with its trace, when recording was asked for.
    pub traced: Option<SimResult>,
}

/// Every cell of `plan` that cannot be simulated, with the reason.
pub fn unsupported(plan: &Plan, p: &Params) -> Vec<Unsupported> {
    plan.cells.iter().filter_map(|c| model::unsupported(c, p)).collect()
}

/// The cell's watchdog in simulated nanoseconds.
pub fn horizon(plan: &Plan) -> Time {
    u64::try_from(plan.timeout.as_nanos()).unwrap_or(Time::MAX)
}

/// Simulates one cell. Cells that cannot be simulated, or whose SCHED_DEADLINE
/// reservations the kernel's admission test would refuse, come back as failed records
/// with the reason, as the engine records a refused cell.
pub fn simulate_cell(cell: &Cell, p: &Params, horizon: Time, trace: bool) -> CellSim {
    simulate_cell_with(cell, p, None, horizon, trace)
}

/// [`simulate_cell`], with each worker's own CPU demand when `demand` is given (ns, one per
/// worker in task order, see [`demand`]); each sample keeps its demand, so the record can
/// be simulated again from what is stored.
pub fn simulate_cell_with(
    cell: &Cell,
    p: &Params,
    demand: Option<&[Time]>,
    horizon: Time,
    trace: bool,
) -> CellSim {
    let failed = |message: String| CellSim { record: record::failed(cell, message), traced: None };
    if let Some(reason) = admission_refusal(cell, p) {
        return failed(reason);
    }
    let input = match model::cell_input(cell, p, demand, horizon, trace) {
        Ok(i) => i,
        Err(u) => return failed(format!("cannot be simulated: {}", u.reason)),
    };
    match schedlab_sim::simulate(&input.config, &input.tasks) {
        Ok(result) if bench::is_bench_cell(cell) => CellSim {
            record: bench::record(cell, p, &result, &input.placement, horizon),
            traced: trace.then_some(result),
        },
        Ok(mut result) => {
            let mut record = record::record(cell, p, &mut result, &input.placement, horizon);
            for (s, &d) in record.samples.iter_mut().zip(demand.unwrap_or_default()) {
                if let Some(origin) = s.extra.sim.as_mut() {
                    origin.demand_ns = Some(d);
                }
            }
            CellSim { record, traced: trace.then_some(result) }
        }
        Err(e) => failed(format!("the simulator refused this cell: {e}")),
    }
}

/// The kernel's SCHED_DEADLINE admission test for the cell's workers, as a refusal message.
fn admission_refusal(cell: &Cell, p: &Params) -> Option<String> {
    let all: Vec<Reservation> = cell
        .groups
        .iter()
        .flat_map(|g| match g.workload.periodic() {
            // A periodic set's tasks each have their own reservation.
            Some(set) => rt::reservations(set),
            None => match (g.policy.class, g.policy.deadline) {
                (Class::Deadline, Some(d)) => {
                    vec![
                        Reservation {
                            runtime: d.runtime_ns,
                            deadline: d.deadline_ns,
                            period: d.period_ns
                        };
                        g.processes as usize
                    ]
                }
                _ => Vec::new(),
            },
        })
        .collect();
    if all.is_empty() || cbs::admission(&all, p.cpus, p.rt_share) {
        return None;
    }
    let total: f64 = all.iter().map(|r| r.runtime as f64 / r.period as f64).sum();
    Some(format!(
        "SCHED_DEADLINE admission refused (simulated): {} workers' runtime/period add up to {total:.3}, over the limit {:.3} ({} CPUs x {})",
        all.len(),
        cbs::admission_limit(p.cpus, p.rt_share),
        p.cpus,
        p.rt_share
    ))
}

/// Simulates every step of `plan` (warm-ups included, so the stored run has the plan's
/// shape) and hands each record to `sink` in execution order. Each cell is simulated
/// once; `trace_cell` names the cell whose full result (with its trace) is returned.
pub fn simulate_plan<E>(
    plan: &Plan,
    p: &Params,
    trace_cell: Option<u32>,
    sink: impl FnMut(CellRecord) -> Result<(), E>,
) -> Result<Option<SimResult>, E> {
    simulate_plan_with(plan, p, None, trace_cell, sink)
}

/// [`simulate_plan`], with each worker's own CPU demand per repetition when `demands` is
/// given: then every step is simulated with its own demands, and the returned trace is
/// of `trace_cell`'s first measured repetition. A step `demands` lacks is stored failed.
pub fn simulate_plan_with<E>(
    plan: &Plan,
    p: &Params,
    demands: Option<&Demands>,
    trace_cell: Option<u32>,
    mut sink: impl FnMut(CellRecord) -> Result<(), E>,
) -> Result<Option<SimResult>, E> {
    let horizon = horizon(plan);
    let steps = plan.steps();
    // Steps left per cell: the last one takes the record instead of a copy of it.
    let mut left = vec![0usize; plan.cells.len()];
    for s in &steps {
        left[s.cell as usize] += 1;
    }
    let mut done: Vec<Option<CellRecord>> = vec![None; plan.cells.len()];
    let mut traced = None;
    // Each cell's model, with the scheduler knobs it sets.
    let cell_params: Vec<Params> =
        plan.cells.iter().map(|c| knobs::params_for(p, &plan.knobs_for(c))).collect();
    for (ordinal, step) in steps.into_iter().enumerate() {
        let c = step.cell as usize;
        let p = &cell_params[c];
        let mut rec = match demands {
            // Each repetition has its own demands: simulated on its own.
            Some(d) => {
                let cell = &plan.cells[c];
                let trace = trace_cell == Some(step.cell) && step.rep == 0 && !step.warmup;
                let sim = match d.get(step.cell, step.rep, step.warmup) {
                    Some(demand) => simulate_cell_with(cell, p, Some(demand), horizon, trace),
                    None => CellSim {
                        record: record::failed(
                            cell,
                            format!("run {} gave no CPU demands for this repetition", d.run()),
                        ),
                        traced: None,
                    },
                };
                if sim.traced.is_some() {
                    traced = sim.traced;
                }
                sim.record
            }
            None => {
                if done[c].is_none() {
                    let sim =
                        simulate_cell(&plan.cells[c], p, horizon, trace_cell == Some(step.cell));
                    if sim.traced.is_some() {
                        traced = sim.traced;
                    }
                    done[c] = Some(sim.record);
                }
                left[c] -= 1;
                if left[c] == 0 { done[c].take() } else { done[c].clone() }
                    .expect("simulated above")
            }
        };
        rec.rep = step.rep;
        rec.warmup = step.warmup;
        // The knobs the model took, as a measured cell stores those in force.
        rec.knobs =
            plan.knobs_for(&plan.cells[c]).iter().map(|(k, v)| (k.clone(), v.label())).collect();
        rec.ordinal = ordinal as u32;
        sink(rec)?;
    }
    Ok(traced)
}
