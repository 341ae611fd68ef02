//! Periodic real-time task sets (spec kind `periodic`, issue #6) in the simulator: each task
//! one simulated periodic task, the set's scheduler mapped to a policy, and the results
//! turned into the per-task [`RtTask`] and per-cell [`CellRt`] records the engine stores.
//!
//! How a measured set runs, and how it is modelled:
//!
//! | scheduler | measured | simulated |
//! |---|---|---|
//! | `other` | SCHED_OTHER, nice 0, pinned to the set's CPU | the fair (EEVDF) model on that CPU |
//! | `fifo-rm` | SCHED_FIFO, priority by period | rate monotonic (`rm`) |
//! | `fifo-dm` | SCHED_FIFO, priority by relative deadline | deadline monotonic (`dm`) |
//! | `fifo`, `rr` | SCHED_FIFO, SCHED_RR at each task's own priority | fixed priority (`fifo`, `rr` with the RR quantum) |
//! | `deadline` | SCHED_DEADLINE (runtime C, deadline D, period T), unpinned | EDF + CBS with hard reservations, global on all CPUs |
//! | `edf` | the live dispatcher on a quantum grid | EDF, jobs in whole quanta |
//! | `dwcs` | the live dispatcher on a quantum grid | DWCS (work-conserving), jobs in whole quanta |
//!
//! **Work.** A job needs the CPU for `Periodic::work_ns` (C x `work_fraction`).
//!
//! **Late jobs as measured.** Under `other`, `fifo-*` and `deadline` each worker runs its own
//! job loop, which lets a late job finish and skips a job whose deadline passed before it
//! could start ([`MissAction::Skip`]). The live dispatcher (`edf`, `dwcs`) abandons a job
//! unfinished at its deadline ([`MissAction::Drop`]). Either way a task releases exactly
//! `Periodic::jobs` jobs, the first at its phase.
//!
//! **Quanta.** The dispatcher decides only at quantum boundaries (releases, deadlines, the
//! run limit C) and, without `fill`, leaves the CPU idle from a job's end to the next
//! boundary. With T, D and the phase whole quanta (generated and canonical sets are), a job
//! that needs w of CPU holds the CPU for ceil(w / q) quanta, which is what the simulated job
//! takes: every event then falls on the grid and the simulated schedule is the dispatcher's.
//! The job itself ends w into its last quantum's share, so reported response times (and the
//! CPU time) are the simulated ones less the padding (ceil(w / q) q - w). Switches happen inside the quantum
//! (w = 0.9 C by default leaves room for them), so no switch cost is charged. With
//! `fill = true` the job takes w and the next task starts at once; the live dispatcher
//! takes the CPU back at the next boundary, which the simulation does not (an approximation
//! for `dwcs`, whose quanta are not preempted). Sets whose T, D or phase are not whole
//! quanta are refused for `edf` and `dwcs`.

use schedlab_model::jobs::{JobLog, JobTrace};
use schedlab_model::{CellRt, RtTally, RtTask, RtTimes};
use schedlab_plan::TaskParams;
use schedlab_plan::{Cell, Periodic, PeriodicBody, RtScheduler};
use schedlab_policy::{PolicySpec, Reservation, SchedParams, Window};
use schedlab_sim::{Mapping, MissAction, PeriodicSpec, SimConfig, TaskResult, TaskSpec, WorkSpec};

use crate::model::{CellInput, Unsupported};
use crate::Params;

/// The simulator's policy for a set's scheduler.
pub fn policy_spec(s: RtScheduler, p: &Params) -> PolicySpec {
    match s {
        RtScheduler::Other => PolicySpec::Fair { base_slice: p.fair_slice_ns },
        RtScheduler::FifoRm => PolicySpec::Rm,
        RtScheduler::FifoDm => PolicySpec::Dm,
        RtScheduler::Deadline => PolicySpec::Cbs { hard: true },
        // The same policy whichever actuator carries the dispatcher's choice out.
        RtScheduler::Edf | RtScheduler::EdfScx => PolicySpec::Edf,
        // The engine's dispatcher runs DWCS work-conserving.
        RtScheduler::Dwcs | RtScheduler::DwcsScx => PolicySpec::Dwcs { work_conserving: true },
        RtScheduler::Fifo => PolicySpec::Fifo,
        RtScheduler::Rr => PolicySpec::Rr { quantum: p.rr_quantum_ns },
    }
}

/// Each task's CPU in a simulation of `cpus` CPUs ([`Periodic::placement`] with the last CPU
/// as the default, as the engine picks the last online one). None for `deadline` (global).
pub fn placement(set: &Periodic, cpus: usize) -> Option<Vec<u32>> {
    set.placement(cpus.saturating_sub(1) as u32)
}

/// CPU time a simulated job of `task` takes: its work, in whole quanta when the dispatcher
/// runs the set without filling.
fn sim_exec_ns(set: &Periodic, task: &TaskParams) -> u64 {
    let w = set.work_ns(task);
    if set.scheduler.dispatched() && !set.fill {
        w.div_ceil(set.quantum_ns) * set.quantum_ns
    } else {
        w
    }
}

/// What a task's simulated response times overstate: the idle end of its last quantum.
fn padding_ns(set: &Periodic, task: &TaskParams) -> u64 {
    sim_exec_ns(set, task) - set.work_ns(task)
}

/// The CPU task `i` worked: what it ran less the idle ends of its completed jobs' last
/// quanta (a job dropped at its deadline ran whole quanta, all of them work).
pub fn work_cpu_ns(set: &Periodic, i: usize, t: &TaskResult) -> u64 {
    t.cpu_time.saturating_sub(t.jobs * padding_ns(set, &set.tasks[i]))
}

/// The SCHED_DEADLINE reservations of a set: one per task under `deadline`, none otherwise.
pub fn reservations(set: &Periodic) -> Vec<Reservation> {
    if set.scheduler != RtScheduler::Deadline {
        return Vec::new();
    }
    set.tasks
        .iter()
        .map(|t| Reservation { runtime: t.c_ns, deadline: t.deadline_ns(), period: t.t_ns })
        .collect()
}

/// Why a set cannot be simulated, if it cannot.
fn limits(set: &Periodic, p: &Params) -> Option<String> {
    if let PeriodicBody::Read { bytes } = set.body {
        return Some(format!(
            "its jobs read {bytes} bytes each from the device with the page cache dropped (body = \"read\"); the simulator has no model of that I/O time: use body = \"spin\" or \"fft\""
        ));
    }
    if let Some(cpu) = placement(set, p.cpus).into_iter().flatten().find(|&c| c as usize >= p.cpus)
    {
        return Some(format!(
            "the set is pinned to CPU {cpu}, but the simulation has {} CPUs (--cpus)",
            p.cpus
        ));
    }
    if set.scheduler.dispatched() {
        let q = set.quantum_ns;
        let off = |v: u64| !v.is_multiple_of(q);
        if let Some((i, t)) = set
            .tasks
            .iter()
            .enumerate()
            .find(|(_, t)| off(t.t_ns) || off(t.deadline_ns()) || off(t.phase_ns))
        {
            return Some(format!(
                "{} decides on a grid of {} ms quanta, and task {i} (T = {} ms, D = {} ms, phase = {} ms) is not on it; the simulator models {} sets whose T, D and phase are whole quanta",
                set.scheduler.name(),
                ms(q),
                ms(t.t_ns),
                ms(t.deadline_ns()),
                ms(t.phase_ns),
                set.scheduler.name()
            ));
        }
    }
    None
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The simulator's inputs for a cell whose only group runs the periodic set `set`.
pub(crate) fn cell_input(
    cell: &Cell,
    set: &Periodic,
    p: &Params,
    horizon: u64,
    trace: bool,
) -> Result<CellInput, Unsupported> {
    let refuse = |reason: String| Unsupported { key: cell.key.clone(), reason };
    if cell.groups.len() > 1 {
        return Err(refuse(
            "it runs a periodic set beside other groups; the simulator runs one policy per ready queue, so it models a periodic set alone"
                .to_string(),
        ));
    }
    if let Some(why) = limits(set, p) {
        return Err(refuse(why));
    }
    let on_miss = if set.scheduler.dispatched() { MissAction::Drop } else { MissAction::Skip };
    let tasks: Vec<TaskSpec> = set
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let work = PeriodicSpec {
                wcet: sim_exec_ns(set, t),
                period: t.t_ns,
                deadline: t.d_ns,
                min_exec: None,
                jobs: Some(set.jobs(t)),
                on_miss,
            };
            let mut params =
                SchedParams { window: Window::new(t.x, t.y), ..SchedParams::default() };
            if set.scheduler.explicit_priorities() {
                params.priority = set.priorities[i];
            }
            if set.scheduler == RtScheduler::Deadline {
                params.reservation = Some(Reservation {
                    runtime: t.c_ns,
                    deadline: t.deadline_ns(),
                    period: t.t_ns,
                });
            }
            TaskSpec {
                name: format!("t{i}"),
                arrival: t.phase_ns,
                workload: WorkSpec::Periodic(work),
                params,
            }
        })
        .collect();
    let placement = placement(set, p.cpus);
    // Responses on: the per-job log is kept (sets are short enough for every job to be
    // kept), unless the set is one of a batch that does not ask for it.
    let mut config = SimConfig::new(p.cpus, policy_spec(set.scheduler, p))
        .with_horizon(horizon)
        .recording(trace, set.batch.is_none_or(|b| b.job_records));
    config.skip_cycles = !p.every_cycle;
    if !set.scheduler.dispatched() {
        config.costs = crate::overheads::costs(p);
    }
    if let Some(cpus) = &placement {
        config.mapping = Mapping::Partitioned(cpus.iter().map(|&c| c as usize).collect());
    }
    let placement = (0..tasks.len()).map(|i| (0, placement.as_ref().map(|p| p[i]))).collect();
    Ok(CellInput { config, tasks, placement })
}

/// Task `i`'s jobs as the engine stores them, with source "sim": the judged ones (the jobs
/// of [`task_rt`], a prefix of the releases), the finish less the idle end of its last quantum.
pub fn task_jobs(set: &Periodic, i: usize, t: &TaskResult) -> JobLog {
    let task = &set.tasks[i];
    let pad = padding_ns(set, task);
    let jobs = t
        .job_log
        .iter()
        .take(t.windows.deadlines as usize)
        .map(|j| {
            let finish = j.finish.map(|f| (f - j.release).saturating_sub(pad));
            JobTrace {
                release_ns: j.release,
                start_ns: j.start.map(|s| s - j.release),
                finish_ns: finish,
                cpu_ns: finish.map(|_| set.work_ns(task)),
                met: j.met,
                // The start is when the job first ran, not a wake-up latency.
                slept: false,
            }
        })
        .collect();
    JobLog { source: "sim".into(), d_ns: task.deadline_ns(), jobs, unrecorded: 0 }
}

/// Task `i`'s result as the engine records it in a sample's `extra.rt`, with source "sim".
pub fn task_rt(set: &Periodic, i: usize, t: &TaskResult) -> RtTask {
    let task = &set.tasks[i];
    let w = &t.windows;
    let n = w.deadlines;
    let pad = padding_ns(set, task);
    let d = task.deadline_ns();
    let tally = RtTally {
        jobs: n,
        met: n - t.deadline_misses.min(n),
        misses: t.deadline_misses,
        fixed_windows: w.fixed.windows,
        fixed_violations: w.fixed.violations,
        sliding_windows: w.sliding.windows,
        sliding_violations: w.sliding.violations,
        time_in_violation_pct: w.time_in_violation_pct(),
    };
    RtTask::new(
        "sim",
        schedlab_model::RtParams {
            c_ns: task.c_ns,
            t_ns: task.t_ns,
            d_ns: d,
            x: task.x,
            y: task.y,
        },
        tally,
    )
    .with_times(RtTimes {
        response_mean_ns: t.response.mean.map(|m| m - pad as f64),
        response_max_ns: t.response.max.map(|m| m - pad),
        lateness_max_ns: t.response.max.map(|m| (m - pad) as i64 - d as i64),
        cpu_mean_ns: (t.jobs > 0).then(|| set.work_ns(task) as f64),
    })
}

/// The cell's real-time record ([`Periodic::cell_rt`]): the fields the engine fills, on the
/// simulation's placement; no dispatcher metrics.
pub fn cell_rt(set: &Periodic, p: &Params) -> CellRt {
    set.cell_rt(placement(set, p.cpus).as_deref())
}
