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

#![deny(missing_docs)]

pub mod demand;
pub mod gantt;
pub mod knobs;
pub mod model;
mod params;
pub mod record;
pub mod rt;

use schedlab_model::CellRecord;
use schedlab_plan::{Cell, Class, Plan};
use schedlab_policy::{cbs, Reservation, Time};
use schedlab_sim::SimResult;

pub use demand::{DemandError, Demands, Measured};
pub use model::{cell_input, CellInput, Unsupported};
pub use params::{fair_slice, ParamError, Params, DEFAULT_HZ, DEFAULT_MIGRATION_COST_NS, DEFAULT_SWITCH_COST_NS, KERNEL_BASE_SLICE_NS};

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
pub fn simulate_cell_with(cell: &Cell, p: &Params, demand: Option<&[Time]>, horizon: Time, trace: bool) -> CellSim {
    let failed = |message: String| CellSim { record: record::failed(cell, message), traced: None };
    if let Some(reason) = admission_refusal(cell, p) {
        return failed(reason);
    }
    let input = match model::cell_input(cell, p, demand, horizon, trace) {
        Ok(i) => i,
        Err(u) => return failed(format!("cannot be simulated: {}", u.reason)),
    };
    match schedlab_sim::simulate(&input.config, &input.tasks) {
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
                    vec![Reservation { runtime: d.runtime_ns, deadline: d.deadline_ns, period: d.period_ns }; g.processes as usize]
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
        p.cpus as f64 * p.rt_share,
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
    let cell_params: Vec<Params> = plan.cells.iter().map(|c| knobs::params_for(p, &plan.knobs_for(c))).collect();
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
                        record: record::failed(cell, format!("run {} gave no CPU demands for this repetition", d.run())),
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
                    let sim = simulate_cell(&plan.cells[c], p, horizon, trace_cell == Some(step.cell));
                    if sim.traced.is_some() {
                        traced = sim.traced;
                    }
                    done[c] = Some(sim.record);
                }
                left[c] -= 1;
                if left[c] == 0 { done[c].take() } else { done[c].clone() }.expect("simulated above")
            }
        };
        rec.rep = step.rep;
        rec.warmup = step.warmup;
        // The knobs the model took, as a measured cell stores those in force.
        rec.knobs = plan.knobs_for(&plan.cells[c]).iter().map(|(k, v)| (k.clone(), v.label())).collect();
        rec.ordinal = ordinal as u32;
        sink(rec)?;
    }
    Ok(traced)
}
