//! Simulator results -> the same [`CellRecord`]s and [`Sample`]s the engine stores.
//!
//! Field by field, a simulated sample means what a measured one means:
//! `start_offset_s` is the first dispatch (when a measured worker's release read returns),
//! `end_offset_s` the completion (for a periodic task, the end of its last job: completed,
//! dropped or skipped), `wall_s` their difference (the worker's own clock),
//! `engine_wall_s` release to completion (turnaround), `user_s` the CPU time (plus the
//! modelled setup), `involuntary_csw` preemptions, `voluntary_csw` blocks; the scheduler's
//! own figures come from the schedule: `oncpu_s` the run time (with the setup, as `user_s`),
//! `run_delay_s` the time ready
//! but not running, `timeslices` the dispatches, `migrations` its moves between CPUs (0 on
//! one CPU), `sched_voluntary` blocks and `sched_involuntary` preemptions. What a
//! simulation has no notion of (pid, RSS, faults, /proc/stat, the engine's own cost) is 0.
//! A periodic task's sample counts its completed jobs as work units and carries its
//! [`RtTask`](schedlab_model::RtTask) in `extra.rt`; the cell gets its `CellRt`.

use schedlab_model::detail::SimOrigin;
use schedlab_model::{CellRecord, CellStatus, Detail, Extra, Sample, StatDelta};
use schedlab_plan::{Cell, Group};
use schedlab_policy::Time;
use schedlab_sim::{SimResult, TaskResult};

use crate::Params;

/// Nanoseconds to seconds, correctly rounded (1e9 is exact in binary floating point).
fn secs(t: Time) -> f64 {
    t as f64 / 1e9
}

/// A cell that was not simulated, with the reason (repetition 0, ordinal 0).
pub fn failed(cell: &Cell, message: String) -> CellRecord {
    CellRecord {
        params: cell.params(),
        rep: 0,
        warmup: false,
        ordinal: 0,
        status: CellStatus::Failed,
        message: Some(message),
        started_unix: 0.0,
        makespan_s: 0.0,
        spawn_s: None,
        stat: StatDelta::default(),
        load: None,
        engine_user_s: 0.0,
        engine_sys_s: 0.0,
        engine_max_rss_kb: 0,
        samples: Vec::new(),
        io: None,
        rt: None,
        cpu_dma_latency_us: None,
        knobs: Default::default(),
        trace: None,
        sched_ext: None,
        raw_trace: None,
        throttling: Vec::new(),
    }
}

/// The record of a finished simulation of `cell` that stopped at `horizon` at the latest
/// (repetition 0, ordinal 0, `started_unix` 0: the caller fills them in). `placement` is
/// each task's group and pinned CPU, as [`CellInput`](crate::CellInput) has it. Each task's
/// `job_log` and list of response times are used up (left empty in `result`) task by task,
/// so the memory of one task's outcomes is reused for the next task's per-job records.
pub fn record(
    cell: &Cell,
    p: &Params,
    result: &mut SimResult,
    placement: &[(usize, Option<u32>)],
    horizon: Time,
) -> CellRecord {
    let unfinished = result.tasks.iter().filter(|t| !t.finished).count();
    let makespan = if unfinished > 0 {
        horizon
    } else {
        result.tasks.iter().filter_map(|t| t.ended).max().unwrap_or(0)
    };
    let policy = result.policy.as_str();
    let samples = result
        .tasks
        .iter_mut()
        .zip(placement)
        .enumerate()
        .map(|(i, (t, &(gi, pin)))| {
            let ctx = GroupCtx { group: &cell.groups[gi], pin, p, policy, horizon };
            let mut s = sample(i as u32, t, &ctx);
            if let Some(set) = ctx.group.workload.periodic() {
                // One group per periodic cell: sample i is task i.
                s.work_units = t.jobs as f64;
                s.extra.rt = Some(crate::rt::task_rt(set, i, t));
                let jobs = crate::rt::task_jobs(set, i, t);
                t.job_log = Vec::new();
                t.response.all = Vec::new();
                // A batch keeps per-job records only when it asks for them.
                s.jobs = set.batch.is_none_or(|b| b.job_records).then_some(jobs);
                let cpu = secs(crate::rt::work_cpu_ns(set, i, t));
                s.user_s = cpu + secs(p.setup_ns);
                s.oncpu_s = Some(s.user_s);
                s.window_cpu_s = cpu;
                s.cpu_pct = if s.wall_s > 0.0 { cpu / s.wall_s * 100.0 } else { 0.0 };
            }
            s
        })
        .collect();
    let mut rec = failed(cell, String::new());
    rec.status = if unfinished > 0 { CellStatus::TimedOut } else { CellStatus::Ok };
    rec.message = (unfinished > 0).then(|| {
        format!(
            "simulated watchdog: {unfinished} of {} workers were still running after {:.0} s",
            result.tasks.len(),
            secs(horizon)
        )
    });
    rec.makespan_s = secs(makespan);
    rec.samples = samples;
    rec.rt = cell
        .groups
        .iter()
        .find_map(|g| g.workload.periodic())
        .map(|set| crate::rt::cell_rt(set, p));
    rec
}

/// What every sample of a group shares.
struct GroupCtx<'a> {
    group: &'a Group,
    pin: Option<u32>,
    p: &'a Params,
    policy: &'a str,
    horizon: Time,
}

fn sample(index: u32, t: &TaskResult, cx: &GroupCtx) -> Sample {
    let g = cx.group;
    let release = t.release.unwrap_or(0);
    let end = t.ended.unwrap_or(cx.horizon);
    let start = t.started.unwrap_or(end).min(end);
    let wall = end - start;
    let setup = secs(cx.p.setup_ns);
    let extra = Extra {
        policy: Some(g.policy.class.name().into()),
        nice: Some(g.policy.nice),
        cpu: t.last_cpu.map(|c| c as i32),
        migrations: Some(t.migrations),
        detail: Some(Detail::Writes {
            sync_writes: if t.finished { g.workload.sync_writes() } else { 0 },
        }),
        sim: Some(SimOrigin {
            policy: cx.policy.to_string(),
            model: cx.p.clone(),
            demand_ns: None,
        }),
        ..Default::default()
    };
    Sample {
        index,
        group: g.name.clone(),
        background: g.background,
        allowed_cpus: cx.pin.into_iter().collect(),
        cpus_seen: Vec::new(),
        pid: 0,
        exit_code: t.finished.then_some(0),
        signal: (!t.finished).then_some(9),
        timed_out: !t.finished,
        wall_s: secs(wall),
        engine_wall_s: secs(end - release),
        user_s: secs(t.cpu_time) + setup,
        sys_s: 0.0,
        cpu_pct: if wall > 0 { secs(t.cpu_time) / secs(wall) * 100.0 } else { 0.0 },
        voluntary_csw: t.blocks as i64,
        involuntary_csw: t.preemptions as i64,
        max_rss_kb: 0,
        minor_faults: 0,
        major_faults: 0,
        block_in: 0,
        block_out: 0,
        oncpu_s: Some(secs(t.cpu_time) + setup),
        run_delay_s: Some(secs(t.runnable)),
        timeslices: Some(t.dispatches as i64),
        migrations: Some(t.migrations as i64),
        sched_voluntary: Some(t.blocks as i64),
        sched_involuntary: Some(t.preemptions as i64),
        setup_user_s: setup,
        setup_sys_s: 0.0,
        setup_voluntary_csw: 0,
        setup_involuntary_csw: 0,
        window_cpu_s: secs(t.cpu_time),
        work_units: if t.finished { g.workload.work_units() as f64 } else { 0.0 },
        start_offset_s: secs(start - release),
        end_offset_s: secs(end - release),
        extra,
        jobs: None,
    }
}
