//! Many generated sets per cell (`generate = { sets = N, .. }`): each set generated from its
//! own seed ([`schedlab_plan::set_seed`]), simulated under the cell's scheduler, judged (no
//! deadline miss; under `dwcs` no window violation) and given each applicable analytical
//! test's verdict (`schedlab_schedulability`): the uniprocessor tests for a set on one CPU,
//! the partitioned and global tests for a set partitioned over several (`cpus`), the test
//! of explicit priorities left out (a generated set has none). The overhead-aware twins
//! charge the simulator's own costs ([`crate::overheads::overheads`]: its switch, and with
//! `simulate --calibrated` the calibration's release latency and interrupts), so they speak
//! of the simulated outcome.
//!
//! Sets are independent, so they run in parallel (rayon, in the caller's thread pool) a
//! chunk at a time; each chunk comes back in index order and each set's result depends on
//! nothing but its cell and index, so the results are the same whatever the thread count.
//! A set that cannot be generated or simulated comes back with a message and no outcome.

use rayon::prelude::*;
use schedlab_model::sets::{SetTask, SetVerdict, TaskSetRow};
use schedlab_plan::{Cell, Periodic, Plan, RtScheduler};
use schedlab_policy::{cbs, Time};
use schedlab_schedulability::{Overheads, Task, Verdict, TESTS};
use std::collections::BTreeSet;

use crate::{knobs, rt, Params};

/// The cell's batch: its periodic set when it asks for many sets.
pub fn batch(cell: &Cell) -> Option<&Periodic> {
    match cell.groups.as_slice() {
        [g] => g.workload.periodic().filter(|p| p.batch.is_some()),
        _ => None,
    }
}

/// The CPUs the analytical tests give a set: those it is partitioned over, else one.
pub fn analysed_cpus(set: &Periodic) -> usize {
    set.cpus.len().max(1)
}

/// Every applicable test's verdict on `set` over `cpus` CPUs under overheads `o`, in
/// [`TESTS`] order.
pub fn verdicts(set: &Periodic, cpus: usize, o: &Overheads) -> Vec<(String, SetVerdict)> {
    let tasks: Vec<Task> = set
        .tasks
        .iter()
        .map(|t| Task::new(t.c_ns, t.t_ns).deadline(t.deadline_ns()).window(t.x, t.y))
        .collect();
    TESTS
        .iter()
        .filter(|t| t.plain_name() != "rta-priority" && t.uniprocessor == (cpus == 1))
        .map(|t| {
            let v = match (t.run)(&tasks, cpus, o).verdict {
                Verdict::Schedulable => SetVerdict::Yes,
                Verdict::NotSchedulable => SetVerdict::No,
                Verdict::Inconclusive => SetVerdict::Unknown,
            };
            (t.name.to_string(), v)
        })
        .collect()
}

/// Set `index` of `cell`'s batch `batch`, generated, analysed and simulated.
pub fn simulate_set(
    cell: &Cell,
    batch: &Periodic,
    index: u32,
    p: &Params,
    horizon: Time,
) -> TaskSetRow {
    let spec_seed = match &batch.source {
        schedlab_plan::TaskSource::Generated(g) => g.seed,
        _ => 0,
    };
    let mut row = TaskSetRow {
        cell_id: cell.index,
        index,
        seed: schedlab_plan::set_seed(spec_seed, index, batch.utilisation.unwrap_or(0.0)),
        scheduler: batch.scheduler.name().into(),
        utilisation: batch.utilisation.unwrap_or(f64::NAN),
        plain_utilisation: f64::NAN,
        min_utilisation: f64::NAN,
        cpus: analysed_cpus(batch) as u32,
        tasks: Vec::new(),
        jobs: 0,
        misses: 0,
        violations: 0,
        schedulable: false,
        tests: Vec::new(),
        message: None,
        jobs_log: None,
    };
    let set = match batch.nth_set(index) {
        Some(Ok((seed, set))) => {
            row.seed = seed;
            set
        }
        Some(Err(e)) => {
            row.message = Some(format!("cannot generate set {index}: {e}"));
            return row;
        }
        None => {
            row.message = Some("not a generated batch".into());
            return row;
        }
    };
    row.tasks = set
        .tasks
        .iter()
        .map(|t| SetTask { c_ns: t.c_ns, t_ns: t.t_ns, d_ns: t.deadline_ns(), x: t.x, y: t.y })
        .collect();
    let f = schedlab_plan::feasibility(&set.tasks);
    row.plain_utilisation = f.utilisation;
    row.min_utilisation = f.min_utilisation;
    row.tests = verdicts(&set, row.cpus as usize, &crate::overheads::overheads(p));
    let reservations = rt::reservations(&set);
    if !reservations.is_empty() && !cbs::admission(&reservations, p.cpus, p.rt_share) {
        row.message = Some("SCHED_DEADLINE admission refused (simulated)".into());
        return row;
    }
    let job_records = set.batch.is_some_and(|b| b.job_records);
    let input = match rt::cell_input(cell, &set, p, horizon, false) {
        Ok(i) => i,
        Err(u) => {
            row.message = Some(format!("cannot be simulated: {}", u.reason));
            return row;
        }
    };
    let result = match schedlab_sim::simulate(&input.config, &input.tasks) {
        Ok(r) => r,
        Err(e) => {
            row.message = Some(format!("the simulator refused this set: {e}"));
            return row;
        }
    };
    for t in &result.tasks {
        row.jobs += t.windows.deadlines;
        row.misses += t.deadline_misses;
        row.violations += t.windows.sliding.violations;
    }
    row.schedulable = match set.scheduler {
        RtScheduler::Dwcs => row.violations == 0,
        _ => row.misses == 0,
    };
    if job_records {
        row.jobs_log =
            Some(result.tasks.iter().enumerate().map(|(i, t)| rt::task_jobs(&set, i, t)).collect());
    }
    row
}

/// The sets of `plan` still to simulate (not in `done`), as (cell, index) in cell order;
/// none of a cell that cannot be simulated (stored failed with `--skip-unsupported`).
pub fn pending(plan: &Plan, p: &Params, done: &BTreeSet<(u32, u32)>) -> Vec<(u32, u32)> {
    plan.cells
        .iter()
        .filter(|c| crate::model::unsupported(c, p).is_none())
        .filter_map(|c| batch(c).map(|b| (c, b)))
        .flat_map(|(c, b)| (0..b.set_count()).map(move |i| (c.index, i)))
        .filter(|k| !done.contains(k))
        .collect()
}

/// Simulates the sets `todo` of `plan` ([`pending`]) in parallel, `chunk` at a time, handing
/// each chunk to `sink` in order; stops early, with what `sink` says, when it fails (the
/// caller's way to stop on a signal between chunks). While `sink` takes one chunk (the
/// store's transaction, on the calling thread) the next is already being simulated, so the
/// threads do not wait for the database.
pub fn simulate_sets<E: Send>(
    plan: &Plan,
    p: &Params,
    todo: &[(u32, u32)],
    chunk: usize,
    mut sink: impl FnMut(Vec<TaskSetRow>) -> Result<(), E> + Send,
) -> Result<(), E> {
    let horizon = crate::horizon(plan);
    let params: Vec<Params> =
        plan.cells.iter().map(|c| knobs::params_for(p, &plan.knobs_for(c))).collect();
    let simulate = |part: &[(u32, u32)]| -> Vec<TaskSetRow> {
        part.par_iter()
            .map(|&(c, i)| {
                let cell = &plan.cells[c as usize];
                let b = batch(cell).expect("pending lists batch cells only");
                simulate_set(cell, b, i, &params[c as usize], horizon)
            })
            .collect()
    };
    let mut done: Option<Vec<TaskSetRow>> = None;
    for part in todo.chunks(chunk.max(1)) {
        let (rows, sunk) = rayon::join(|| simulate(part), || done.take().map_or(Ok(()), &mut sink));
        sunk?;
        done = Some(rows);
    }
    done.map_or(Ok(()), sink)
}
