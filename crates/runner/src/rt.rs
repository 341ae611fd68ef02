//! Periodic real-time task sets in the engine (issue #5): the worker side (a task's job loop,
//! or a worker driven by the live dispatcher), the dispatcher process, and the engine's
//! per-task policies and results.
//!
//! * `other`, `fifo-rm`, `fifo-dm`, `deadline`: each worker runs its task's job loop
//!   ([`schedlab_periodic::Runner`]: absolute releases, memory locked, no allocation in the
//!   loop) under the policy the engine applied to it; the worker's own clock measures every job.
//! * `edf`, `dwcs`: the engine creates a status region, starts a dispatcher process
//!   (`schedlab __dispatch`, SCHED_FIFO 98, pinned with its workers) and the workers do their
//!   jobs only when the dispatcher gives them the CPU ([`schedlab_dispatch::run_worker_with`]);
//!   the dispatcher's tally is each task's result.

use crate::protocol::{Report, RtJob, WorkerJob};
use crate::worker::WorkerError;
use schedlab_dispatch::{Config, CpuBurn, DispatchPolicy, JobSteps, Metrics, TaskCfg};
use schedlab_model::detail::{DispatchedDetail, PeriodicDetail};
use schedlab_model::jobs::{JobLog, JobTrace};
use schedlab_model::{CellRt, Detail, Dispatchers, RtParams, RtTally, RtTask, RtTimes};
use schedlab_periodic::{
    build_body, make_file, sleep_until, thread_cpu_ns, BodySpec, FftBody, JobBody, JobRecord,
    OverrunPolicy, RunOptions, Runner,
};
use schedlab_plan::{Class, Periodic, PeriodicBody, Policy, RtScheduler};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The hidden subcommand the engine runs a dispatcher with: `__dispatch REGION CONFIG_JSON OUT`.
pub const DISPATCH_SUBCOMMAND: &str = "__dispatch";

/// File (in the cell directory) the engine writes the set's common start time into, just
/// before the release: CLOCK_MONOTONIC ns, decimal.
pub const START_FILE: &str = "rt-start";

/// How long after the release the first jobs are released: time for every worker to wake,
/// read the start time and go to sleep until it.
pub const START_LEAD_NS: u64 = 50_000_000;

/// A periodic worker, prepared before the release.
pub(crate) enum Prepared {
    /// Its own job loop, whether memory is locked, and the set's last deadline from its
    /// start, ns.
    Loop(Box<Runner<Box<dyn JobBody + Send>>>, bool, u64),
    /// Driven by the dispatcher.
    Dispatched(Box<dyn JobSteps + Send>, PathBuf, usize, bool),
}

/// The FFT job body: passes over the array until the job has used its CPU time (thread CPU
/// clock, read once per pass). A fixed number of passes calibrated beforehand proved unfit:
/// eight tasks' 16 MiB arrays on one CPU evict each other, so a pass costs up to half as much
/// again as in a calibration run, and every job overran its quantum.
struct FftForCpu {
    fft: FftBody,
    work_ns: u64,
    begun_ns: u64,
}

impl FftForCpu {
    fn new(work_ns: u64) -> Result<Self, WorkerError> {
        let fft = FftBody::new(
            schedlab_periodic::DEFAULT_FFT_LEN,
            schedlab_periodic::DEFAULT_FFT_ARRAY_LEN,
        )
        .map_err(WorkerError::other)?;
        Ok(FftForCpu { fft, work_ns, begun_ns: 0 })
    }
}

impl JobBody for FftForCpu {
    fn run_job(&mut self) -> u64 {
        let t0 = thread_cpu_ns();
        let mut passes = 0;
        loop {
            self.fft.pass();
            passes += 1;
            if thread_cpu_ns() - t0 >= self.work_ns {
                return passes;
            }
        }
    }
}

impl JobSteps for FftForCpu {
    fn begin(&mut self) {
        self.begun_ns = thread_cpu_ns();
    }

    fn step(&mut self) -> bool {
        self.fft.pass();
        thread_cpu_ns() - self.begun_ns >= self.work_ns
    }
}

/// A job body in steps, for the dispatcher: one step is one unit of the body (one 4 KiB read).
struct Steps {
    body: Box<dyn JobBody + Send>,
    per_job: u64,
    done: u64,
}

impl JobSteps for Steps {
    fn begin(&mut self) {
        self.done = 0;
    }

    fn step(&mut self) -> bool {
        self.body.run_job();
        self.done += 1;
        self.done >= self.per_job
    }
}

fn body_spec(
    p: &Periodic,
    dir: &Path,
    index: u32,
    seed: u64,
    steps: bool,
) -> Result<BodySpec, WorkerError> {
    Ok(match p.body {
        PeriodicBody::Spin => BodySpec::Spin,
        PeriodicBody::Fft => {
            return Err(WorkerError::Internal("internal: the FFT body is built by FftForCpu"))
        }
        PeriodicBody::Read { bytes } => {
            let path = dir.join(format!("rt-read-{index}"));
            // 16 jobs' worth, at least 4 MiB: the reads cycle through it.
            make_file(&path, (bytes * 16).max(4 << 20), seed ^ u64::from(index))
                .map_err(WorkerError::step(format!("creating {}", path.display())))?;
            let chunks = (bytes / 4096).max(1) as u32;
            BodySpec::ReadFile {
                path,
                chunk_bytes: 4096,
                chunks_per_job: if steps { 1 } else { chunks },
                drop_cache: true,
            }
        }
    })
}

/// Setup before the release: the body (an FFT calibrates here), memory locked, records allocated.
pub(crate) fn prepare(job: &WorkerJob, p: &Periodic, rt: &RtJob) -> Result<Prepared, WorkerError> {
    let task = *p
        .tasks
        .get(rt.task as usize)
        .ok_or(WorkerError::NoSuchTask { task: rt.task, len: p.tasks.len() })?;
    let work = p.work_ns(&task);
    // Locked memory keeps page faults out of the loop; without the privilege the run goes on
    // and the report says so.
    let locked = schedlab_periodic::lock_memory().is_ok();
    match &rt.dispatch {
        None => {
            let body: Box<dyn JobBody + Send> = match p.body {
                PeriodicBody::Fft => Box::new(FftForCpu::new(work)?),
                _ => build_body(&body_spec(p, &job.dir, job.index, job.seed, false)?, work)
                    .map_err(WorkerError::other)?,
            };
            let jobs = p.jobs(&task) as usize;
            let opts = RunOptions {
                lock_memory: false,
                warm_up: true,
                overrun: OverrunPolicy::SkipMissed,
            };
            let runner = Runner::prepare(task, jobs, body, opts).map_err(WorkerError::other)?;
            Ok(Prepared::Loop(Box::new(runner), locked, p.last_deadline_ns()))
        }
        Some((region, slot)) => {
            let steps: Box<dyn JobSteps + Send> = match p.body {
                PeriodicBody::Spin => Box::new(CpuBurn::new(work)),
                PeriodicBody::Fft => Box::new(FftForCpu::new(work)?),
                PeriodicBody::Read { bytes } => {
                    let spec = body_spec(p, &job.dir, job.index, job.seed, true)?;
                    let body = build_body(&spec, work).map_err(WorkerError::other)?;
                    Box::new(Steps { body, per_job: (bytes / 4096).max(1), done: 0 })
                }
            };
            Ok(Prepared::Dispatched(steps, region.clone(), *slot, locked))
        }
    }
}

/// Reads the set's start time the engine wrote before the release.
fn read_start(dir: &Path) -> Result<u64, WorkerError> {
    let path = dir.join(START_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(WorkerError::step(format!("reading {}", path.display())))?;
    text.trim().parse::<u64>().map_err(WorkerError::step(path.display().to_string()))
}

/// Runs the prepared task after the release and fills the report.
pub(crate) fn run(
    job: &WorkerJob,
    prep: &mut Prepared,
    report: &mut Report,
) -> Result<(), WorkerError> {
    match prep {
        Prepared::Loop(runner, locked, last_deadline) => {
            let start = read_start(&job.dir)?;
            runner.run(start).map_err(WorkerError::other)?;
            // Its last job is done, not the set's: the report and the exit (at this task's
            // priority, or charged to its reservation) would take the CPU from the tasks
            // still running theirs. So the worker sleeps until the set's last deadline, when
            // no job can still meet its own, and leaves its real-time class before the rest
            // (always allowed; should it fail, the report still goes out).
            sleep_until(start.saturating_add(*last_deadline));
            let _ = schedlab_sys::sched::apply(0, &Policy::OTHER, false);
            let log = job_log(runner.records(), start, runner.params().deadline_ns());
            let s = runner.summary();
            let rt = RtTask::new(
                "worker",
                RtParams {
                    c_ns: s.params.c_ns,
                    t_ns: s.params.t_ns,
                    d_ns: s.params.deadline_ns(),
                    x: s.params.x,
                    y: s.params.y,
                },
                RtTally {
                    jobs: s.jobs,
                    met: s.met,
                    misses: s.misses,
                    fixed_windows: s.fixed_windows,
                    fixed_violations: s.fixed_window_violations,
                    sliding_windows: s.sliding_windows,
                    sliding_violations: s.sliding_window_violations,
                    time_in_violation_pct: s.time_in_violation_pct,
                },
            )
            .with_times(RtTimes {
                response_mean_ns: Some(s.response_mean_ns),
                response_max_ns: Some(s.response_max_ns),
                lateness_max_ns: s.lateness_max_ns,
                cpu_mean_ns: Some(s.cpu_mean_ns),
            })
            .with_wakeups(runner.latency_histogram());
            report.units += (s.jobs - s.skipped) as f64;
            report.rt = Some(rt);
            report.jobs = Some(log);
            report.detail = Some(Detail::Periodic(PeriodicDetail {
                memory_locked: *locked,
                skipped: s.skipped,
                late_starts: s.late_starts,
                body_errors: s.body_errors,
                minor_faults_in_loop: s.minor_faults_in_loop,
                major_faults_in_loop: s.major_faults_in_loop,
                latency_overflow: runner.stats().latency_overflow,
            }));
        }
        Prepared::Dispatched(steps, region, slot, locked) => {
            let stats = schedlab_dispatch::run_worker_with(region, *slot, steps.as_mut())
                .map_err(WorkerError::other)?;
            report.units += stats.jobs_done as f64;
            report.detail = Some(Detail::Dispatched(DispatchedDetail {
                dispatch: stats,
                memory_locked: *locked,
            }));
        }
    }
    Ok(())
}

/// The per-job records of a worker's own loop, times from the set's start `start_ns`.
fn job_log(records: &[JobRecord], start_ns: u64, d_ns: u64) -> JobLog {
    let jobs = records
        .iter()
        .map(|r| {
            let ran = !r.skipped;
            JobTrace {
                release_ns: r.release_ns.saturating_sub(start_ns),
                start_ns: ran.then(|| r.start_ns.saturating_sub(r.release_ns)),
                finish_ns: ran.then(|| r.finish_ns.saturating_sub(r.release_ns)),
                cpu_ns: ran.then_some(r.cpu_ns),
                met: r.met(),
                slept: r.slept,
            }
        })
        .collect();
    JobLog { source: "worker".into(), d_ns, jobs, unrecorded: 0 }
}

/// The policy the engine applies to worker `i` of a periodic set before the release.
pub(crate) fn worker_policy(p: &Periodic, i: usize) -> Policy {
    match p.scheduler {
        // edf/dwcs workers wait at SCHED_OTHER: the dispatcher raises the chosen one (or,
        // under edf-scx/dwcs-scx, lets only the chosen one run on sched_ext).
        RtScheduler::Other
        | RtScheduler::Edf
        | RtScheduler::Dwcs
        | RtScheduler::EdfScx
        | RtScheduler::DwcsScx => Policy::OTHER,
        RtScheduler::FifoRm | RtScheduler::FifoDm | RtScheduler::Fifo | RtScheduler::Rr => {
            let class = if p.scheduler == RtScheduler::Rr { Class::Rr } else { Class::Fifo };
            Policy::rt(class, p.task_priorities().expect("a fixed-priority set")[i])
        }
        RtScheduler::Deadline => p.tasks[i].deadline_policy(),
    }
}

/// The configuration of the dispatcher on `cpu` for the set's `tasks` (indices, in slot
/// order), whose workers have `pids`.
pub(crate) fn dispatch_config(p: &Periodic, cpu: u32, tasks: &[usize], pids: &[i32]) -> Config {
    let tasks = tasks
        .iter()
        .map(|&i| &p.tasks[i])
        .zip(pids)
        .map(|(t, &pid)| TaskCfg {
            pid,
            c_ns: t.c_ns,
            t_ns: t.t_ns,
            d_ns: t.deadline_ns(),
            x: t.x,
            y: t.y,
        })
        .collect();
    let policy = if p.scheduler.edf() {
        DispatchPolicy::Edf
    } else {
        DispatchPolicy::Dwcs { work_conserving: true }
    };
    let mut cfg = Config::new(cpu, policy, tasks);
    cfg.quantum_ns = p.quantum_ns;
    cfg.duration_ns = Some(p.duration_ns);
    cfg.fill = p.fill;
    // Workers attach after the release, once prepared, which the engine waits for as long
    // as they make progress (up to READY_LIMIT); its watchdog covers a hang after that.
    cfg.attach_timeout_ns =
        (crate::protocol::READY_LIMIT + crate::protocol::READY_TIMEOUT).as_nanos() as u64;
    cfg
}

/// A task's result from the dispatcher's tally, with the hand-off latencies its worker
/// timed (`detail`: what the worker reported).
pub(crate) fn task_from_metrics(
    m: &Metrics,
    slot: usize,
    detail: Option<&Detail>,
) -> Option<RtTask> {
    let t = m.tasks.get(slot)?;
    let handoff_hist = match detail {
        Some(Detail::Dispatched(d)) => Some(d.dispatch.handoff_hist.as_str()),
        _ => None,
    };
    let tally = RtTally {
        jobs: t.completed + t.missed,
        met: t.completed,
        misses: t.missed,
        fixed_windows: t.fixed_windows,
        fixed_violations: t.fixed_window_violations,
        sliding_windows: t.windows,
        sliding_violations: t.window_violations,
        time_in_violation_pct: t.windows().time_in_violation_pct(),
    };
    let params =
        RtParams { c_ns: t.c_ns, t_ns: t.t_ns, d_ns: t.d_ns, x: t.window.x, y: t.window.y };
    Some(RtTask::new("dispatcher", params, tally).with_handoffs(handoff_hist))
}

/// The cell's real-time record ([`Periodic::cell_rt`]) with the dispatchers' metrics: one
/// object, or an array of one per CPU when the set was partitioned.
pub(crate) fn cell_rt(
    p: &Periodic,
    placement: Option<&[u32]>,
    metrics: &[Option<Metrics>],
) -> CellRt {
    let dispatcher = match metrics {
        [] => None,
        [one] => one.clone().map(|m| Dispatchers::One(Box::new(m))),
        several => Some(Dispatchers::PerCpu(several.to_vec())),
    };
    CellRt { dispatcher, ..p.cell_rt(placement) }
}

/// The environment variable that gives a dispatcher its engine's pid: a dispatcher whose
/// engine died before it could ask to die with it exits at once.
pub const ENGINE_PID_ENV: &str = "SCHEDLAB_ENGINE_PID";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// The dispatcher process: `__dispatch REGION CONFIG_JSON OUT`. Runs the dispatcher on the
/// region the engine created, until its duration ends or SIGTERM, and writes its metrics as
/// JSON to OUT. Returns the exit code.
pub fn dispatcher_main(region: &str, config: &str, out: &str) -> i32 {
    // SAFETY: as in the worker: clear the engine's signal mask, die with the engine, and a
    // handler that only stores to an atomic.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        let engine = std::env::var(ENGINE_PID_ENV).ok().and_then(|p| p.parse::<i32>().ok());
        if engine.is_some_and(|pid| libc::getppid() != pid) {
            return 3;
        }
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
    }
    let result = (|| -> Result<Metrics, WorkerError> {
        let cfg: Config =
            serde_json::from_str(config).map_err(WorkerError::step("dispatcher configuration"))?;
        let region =
            schedlab_dispatch::Region::open(Path::new(region)).map_err(WorkerError::other)?;
        schedlab_dispatch::Dispatcher::new(cfg, region)
            .and_then(|d| d.run(&STOP))
            .map_err(WorkerError::other)
    })();
    match result {
        Ok(m) => match std::fs::write(out, serde_json::to_vec(&m).unwrap_or_default()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("schedlab dispatcher: writing {out}: {e}");
                1
            }
        },
        Err(e) => {
            eprintln!("schedlab dispatcher: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_plan::{PeriodicBody, TaskSource};

    fn set(scheduler: RtScheduler) -> Periodic {
        let task = |t_ms: u64| schedlab_periodic::TaskParams {
            c_ns: 1_000_000,
            t_ns: t_ms * 1_000_000,
            d_ns: None,
            x: 0,
            y: 0,
            phase_ns: 0,
        };
        Periodic {
            tasks: vec![task(4), task(6)],
            source: TaskSource::Explicit,
            body: PeriodicBody::Spin,
            duration_ns: 1_000_000_000,
            quantum_ns: 1_000_000,
            cpu: Some(0),
            cpus: Vec::new(),
            work_ppm: 1_000_000,
            fill: false,
            scheduler,
            utilisation: None,
            priorities: vec![10, 20],
            batch: None,
            live_set: None,
        }
    }

    #[test]
    fn fifo_and_rr_workers_run_at_their_own_priorities_and_fifo_rm_ones_by_period() {
        let of = |s: RtScheduler| {
            (0..2)
                .map(|i| worker_policy(&set(s), i))
                .map(|p| (p.class, p.priority))
                .collect::<Vec<_>>()
        };
        assert_eq!(of(RtScheduler::Fifo), [(Class::Fifo, 10), (Class::Fifo, 20)]);
        assert_eq!(of(RtScheduler::Rr), [(Class::Rr, 10), (Class::Rr, 20)]);
        assert_eq!(
            of(RtScheduler::FifoRm),
            [(Class::Fifo, 90), (Class::Fifo, 89)],
            "the task's own priority is not RM's"
        );
    }
}
