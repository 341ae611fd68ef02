//! The dispatcher: setup, the quantum loop, and the restore on every exit path.
//!
//! Each decision, in this order (the simulator's order: all events of an instant, then one
//! decision):
//! 1. completions: a worker whose `done` reached its live job finished it (on time if its
//!    `done_ns` is by the deadline); the policy hears `Stop::Done` if it was running;
//! 2. at a boundary only: unfinished jobs whose deadline passed are dropped (the worker
//!    abandons them; the policy hears `Stop::Aborted` or `cancel`), then jobs whose release
//!    time came are released (`wake` with `Arrival::Job`), then policy timers fire, then the
//!    running task is stopped if it ran a filler, used up its run limit (`Stop::Expired`),
//!    or the policy wants it preempted;
//! 3. if nobody runs, `pick_next` (at a completion wake-up only with `fill`);
//! 4. priorities change only when the choice changed; status is published.

use crate::config::{Config, DispatchPolicy};
use crate::error::DispatchError;
use crate::metrics::{Latency, Metrics, PolicyView, TaskMetrics, METRICS_SCHEMA};
use crate::os::{self, Wake};
use crate::shm::{self, job_word, Region};
use crate::status::{RunState, TaskState};
use crate::{DISPATCHER_PRIORITY, RUN_PRIORITY};
use hdrhistogram::Histogram;
use schedlab_model::jobs::{JobLog, JobTrace};
use schedlab_policy::dwcs::Dwcs;
use schedlab_policy::edf::Edf;
use schedlab_policy::{Arrival, Policy, Stop, WindowCounter};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::*};

/// A dispatcher for one CPU partition, ready to run.
#[derive(Debug)]
pub struct Dispatcher {
    cfg: Config,
    region: Region,
}

impl Dispatcher {
    /// Validates `cfg` against `region` (one slot per task) and writes the task parameters
    /// into the region, so status readers see them before the run starts.
    pub fn new(cfg: Config, region: Region) -> Result<Dispatcher, DispatchError> {
        cfg.validate()?;
        if region.capacity() != cfg.tasks.len() {
            return Err(DispatchError::Config(format!("{} tasks for a region with {} slots", cfg.tasks.len(), region.capacity())));
        }
        let online = schedlab_sys::cpus::online(&schedlab_sys::Root::default());
        if !online.contains(&cfg.cpu) {
            return Err(DispatchError::Config(format!("CPU {} is not online (online: {online:?})", cfg.cpu)));
        }
        let info = &region.header().info;
        info.cpu.store(cfg.cpu, Relaxed);
        info.quantum_ns.store(cfg.quantum_ns, Relaxed);
        info.policy.store(policy_code(cfg.policy), Relaxed);
        for (i, t) in cfg.tasks.iter().enumerate() {
            let p = &region.slot(i).params;
            p.pid.store(t.pid as u32, Relaxed);
            p.c_ns.store(t.c_ns, Relaxed);
            p.t_ns.store(t.t_ns, Relaxed);
            p.d_ns.store(t.deadline(), Relaxed);
            p.x.store(t.x, Relaxed);
            p.y.store(t.y, Relaxed);
        }
        Ok(Dispatcher { cfg, region })
    }

    /// The region file workers attach to and status readers open.
    pub fn region_path(&self) -> &Path {
        self.region.path()
    }

    /// Runs in the calling thread until the duration ends or `stop` is set, then puts every
    /// worker back to SCHED_OTHER, tells the workers to exit, and removes the region file.
    ///
    /// Needs CAP_SYS_NICE (FIFO priorities, other processes' classes) and CAP_IPC_LOCK
    /// (mlockall); raising this thread is tried first, so a missing privilege changes nothing.
    pub fn run(self, stop: &AtomicBool) -> Result<Metrics, DispatchError> {
        let Dispatcher { cfg, region } = self;
        let saved = Saved { sched: os::own_sched(), affinity: os::own_affinity(), slack: os::timer_slack() };
        os::set_fifo(0, DISPATCHER_PRIORITY).map_err(|e| privilege("raising the dispatcher to SCHED_FIFO", "CAP_SYS_NICE", e))?;
        let mut guard = Guard { cfg: &cfg, region: &region, saved, unlock: false };
        os::set_timer_slack(1);
        os::pin(0, cfg.cpu).map_err(|e| DispatchError::io(format!("pinning the dispatcher to CPU {}", cfg.cpu), e))?;
        for t in &cfg.tasks {
            os::pin(t.pid, cfg.cpu).map_err(|e| DispatchError::io(format!("pinning worker {} to CPU {}", t.pid, cfg.cpu), e))?;
            os::set_other(t.pid).map_err(|e| DispatchError::io(format!("parking worker {}", t.pid), e))?;
        }
        wait_attached(&cfg, &region, stop)?;
        guard.unlock = os::lock_memory().map_err(|e| privilege("locking the dispatcher's memory (mlockall)", "CAP_IPC_LOCK", e))?;
        let mut lp = Loop::new(&cfg, &region)?;
        lp.run(stop)
    }
}

fn privilege(what: &str, capability: &'static str, e: std::io::Error) -> DispatchError {
    if e.raw_os_error() == Some(libc::EPERM) {
        DispatchError::Privilege { what: what.into(), capability, source: e }
    } else {
        DispatchError::io(what, e)
    }
}

fn policy_code(p: DispatchPolicy) -> u32 {
    match p {
        DispatchPolicy::Edf => shm::POLICY_EDF,
        DispatchPolicy::Dwcs { work_conserving: true } => shm::POLICY_DWCS,
        DispatchPolicy::Dwcs { work_conserving: false } => shm::POLICY_DWCS_NWC,
    }
}

fn wait_attached(cfg: &Config, region: &Region, stop: &AtomicBool) -> Result<(), DispatchError> {
    let t0 = os::monotonic_ns();
    for (i, t) in cfg.tasks.iter().enumerate() {
        while region.slot(i).worker.pid.load(Acquire) as i32 != t.pid {
            let waited = os::monotonic_ns() - t0;
            if waited > cfg.attach_timeout_ns || stop.load(Relaxed) || os::process_start(t.pid).is_none() {
                return Err(DispatchError::AttachTimeout { slot: i, pid: t.pid, waited_ms: waited / 1_000_000 });
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    Ok(())
}

struct Saved {
    sched: (i32, i32),
    affinity: Option<libc::cpu_set_t>,
    slack: libc::c_int,
}

/// Restores everything on every way out of `run` (return, error, panic).
struct Guard<'a> {
    cfg: &'a Config,
    region: &'a Region,
    saved: Saved,
    unlock: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let h = self.region.header();
        h.info.shutdown.store(1, Release);
        for (i, t) in self.cfg.tasks.iter().enumerate() {
            let _ = os::set_other(t.pid);
            let word = &self.region.slot(i).control.word;
            word.store(0, Release);
            os::futex_wake(word, i32::MAX);
        }
        h.info.state.store(RunState::Finished.as_u32(), Release);
        os::restore_own_sched(self.saved.sched);
        if let Some(set) = &self.saved.affinity {
            os::restore_affinity(set);
        }
        os::set_timer_slack(self.saved.slack.max(1) as libc::c_ulong);
        if self.unlock {
            os::unlock_memory();
        }
    }
}

/// The policy core, kept concrete so DWCS's per-task view can be published.
#[derive(Clone)]
enum Core {
    Dwcs(Dwcs),
    Edf(Edf),
}

impl Core {
    fn policy(&mut self) -> &mut dyn Policy {
        match self {
            Core::Dwcs(d) => d,
            Core::Edf(e) => e,
        }
    }

    /// Runs a copy through the calls the loop makes, so the allocations the policy makes on
    /// first use (ready-set nodes, per-task vectors) happen, and are freed for reuse, before
    /// the loop: the loop then never grows the heap (no page faults).
    fn warm_up(&self, cfg: &Config) {
        let mut copy = self.clone();
        let p = copy.policy();
        let n = cfg.tasks.len();
        for round in 0..2u64 {
            let t = 1 + round * 10;
            for (i, task) in cfg.tasks.iter().enumerate() {
                p.wake(i, t, Arrival::Job { release: t, deadline: Some(t + task.deadline()) });
            }
            for _ in 0..n {
                match p.pick_next(t + 1) {
                    Some(id) if round == 0 => p.stop(id, t + 2, Stop::Done),
                    Some(id) => p.stop(id, t + 2, Stop::Preempted),
                    None => break,
                }
            }
            for i in 0..n {
                p.cancel(i, t + 3);
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Job {
    number: u32,
    deadline: u64,
    release: u64,
    /// Its per-job record (None when the record buffer was full).
    trace: Option<usize>,
}

/// Most per-job records a task keeps (64 bytes each), whatever the run's length.
const MAX_TRACE: u64 = 1 << 20;

struct TaskRt {
    pid: i32,
    period: u64,
    deadline: u64,
    next_index: u64,
    next_release: u64,
    live: Option<Job>,
    word_job: u32,
    word_run: bool,
    released: u64,
    completed: u64,
    missed: u64,
    late: u64,
    dispatches: u64,
    /// Judges its deadlines (fixed and sliding windows): measurement, not the policy's view.
    windows: WindowCounter,
    exited: bool,
    /// Per-job records, allocated (and touched) before the loop; pushing never grows it.
    trace: Vec<JobTrace>,
    unrecorded: u64,
}

impl TaskRt {
    /// Records a job released at `release` (ns after the start); None when the buffer is full.
    fn record(&mut self, release: u64) -> Option<usize> {
        if self.trace.len() == self.trace.capacity() {
            self.unrecorded += 1;
            return None;
        }
        self.trace.push(JobTrace { release_ns: release, ..Default::default() });
        Some(self.trace.len() - 1)
    }

    /// The live job's record.
    fn live_trace(&mut self) -> Option<&mut JobTrace> {
        let at = self.live?.trace?;
        self.trace.get_mut(at)
    }

    fn outcome(&mut self, missed: bool) {
        if missed {
            self.missed += 1;
        } else {
            self.completed += 1;
        }
        self.windows.push(missed);
    }
}

#[derive(Debug, Clone, Copy)]
struct Run {
    id: usize,
    on_grid: bool,
    limit_end: u64,
}

struct Loop<'a> {
    cfg: &'a Config,
    region: &'a Region,
    core: Core,
    tasks: Vec<TaskRt>,
    q: u64,
    start: u64,
    end: Option<u64>,
    last_t: u64,
    running: Option<Run>,
    on_cpu: Option<usize>,
    latency: Histogram<u64>,
    cost: Histogram<u64>,
    lat_cache: [u64; 3],
    publish_every: u64,
    ticks: u64,
    decisions: u64,
    completion_wakeups: u64,
    switches: u64,
    overruns: u64,
    skipped: u64,
    control_errors: u64,
    offcpu: u64,
}

const HIST_MAX_NS: u64 = 60_000_000_000;

impl<'a> Loop<'a> {
    /// Everything the loop touches is allocated here.
    fn new(cfg: &'a Config, region: &'a Region) -> Result<Self, DispatchError> {
        let hist = || Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds");
        let mut core = match cfg.policy {
            DispatchPolicy::Dwcs { work_conserving } => Core::Dwcs(Dwcs::new(work_conserving)),
            DispatchPolicy::Edf => Core::Edf(Edf::new()),
        };
        for (i, t) in cfg.tasks.iter().enumerate() {
            core.policy().admit(i, &t.params());
        }
        core.warm_up(cfg);
        let now = os::monotonic_ns();
        let start = match cfg.start_ns {
            Some(s) if s <= now => return Err(DispatchError::Config(format!("start time passed {} us ago", (now - s) / 1000))),
            Some(s) => s,
            None => now + (2 * cfg.quantum_ns).max(20_000_000),
        };
        let tasks = cfg
            .tasks
            .iter()
            .map(|t| {
                // Jobs in the duration, and room for a dispatcher that wakes late at the end.
                let jobs = cfg.duration_ns.map_or(0, |d| (d / t.t_ns) * 9 / 8 + 16).min(MAX_TRACE) as usize;
                let mut trace = Vec::with_capacity(jobs);
                trace.resize(jobs, JobTrace::default());
                trace.clear();
                TaskRt {
                    pid: t.pid,
                    period: t.t_ns,
                    deadline: t.deadline(),
                    next_index: 0,
                    next_release: start,
                    live: None,
                    word_job: 0,
                    word_run: false,
                    released: 0,
                    completed: 0,
                    missed: 0,
                    late: 0,
                    dispatches: 0,
                    windows: WindowCounter::new(t.window()),
                    exited: false,
                    trace,
                    unrecorded: 0,
                }
            })
            .collect();
        Ok(Loop {
            cfg,
            region,
            core,
            tasks,
            q: cfg.quantum_ns,
            start,
            end: cfg.duration_ns.map(|d| start + d),
            last_t: 0,
            running: None,
            on_cpu: None,
            latency: hist(),
            cost: hist(),
            lat_cache: [0; 3],
            publish_every: (100_000_000 / cfg.quantum_ns).max(1),
            ticks: 0,
            decisions: 0,
            completion_wakeups: 0,
            switches: 0,
            overruns: 0,
            skipped: 0,
            control_errors: 0,
            offcpu: 0,
        })
    }

    /// Policy time: the policy must never see time go backwards.
    fn at(&mut self, t: u64) -> u64 {
        self.last_t = self.last_t.max(t);
        self.last_t
    }

    fn run(&mut self, stop: &AtomicBool) -> Result<Metrics, DispatchError> {
        let info = &self.region.header().info;
        let pid = os::getpid();
        info.dispatcher_pid.store(pid as u32, Relaxed);
        info.dispatcher_start.store(os::process_start(pid).map_or(0, |s| s.0), Relaxed);
        info.start_ns.store(self.start, Relaxed);
        info.end_ns.store(self.end.unwrap_or(0), Relaxed);
        info.state.store(RunState::Running.as_u32(), Release);
        let completions = &self.region.header().wake.completions;
        os::prefault_stack();
        self.publish(os::monotonic_ns());
        let faults0 = os::thread_faults();
        let mut next_tick = self.start;
        let mut seen = completions.load(Acquire);
        let mut now;
        loop {
            let woke = os::futex_wait_until(completions, seen, next_tick);
            now = os::monotonic_ns();
            let tick = now >= next_tick;
            let current = completions.load(Acquire);
            if !tick && current == seen {
                continue; // a signal or a spurious wake-up: nothing to decide
            }
            seen = current;
            let mut boundary = 0;
            if tick {
                let late = now - next_tick;
                if woke == Wake::TimedOut {
                    self.latency.saturating_record(late);
                }
                if late > self.q {
                    self.overruns += 1;
                }
                let skipped = late / self.q;
                self.skipped += skipped;
                boundary = next_tick + skipped * self.q;
                next_tick = boundary + self.q;
                self.ticks += 1;
            } else {
                self.completion_wakeups += 1;
            }
            self.decide(now, tick, boundary);
            self.decisions += 1;
            self.publish(now);
            self.cost.saturating_record(os::monotonic_ns() - now);
            // Percentiles walk the histogram (a few us): every 100 ms, after the measured decision.
            if tick && self.ticks % self.publish_every == 0 {
                self.lat_cache = [self.latency.value_at_quantile(0.5), self.latency.value_at_quantile(0.99), self.latency.max()];
            }
            if stop.load(Relaxed) || self.end.is_some_and(|e| now >= e) {
                break;
            }
        }
        let faults1 = os::thread_faults();
        Ok(self.finish(now, (faults1.0 - faults0.0, faults1.1 - faults0.1)))
    }

    fn decide(&mut self, now: u64, tick: bool, boundary: u64) {
        self.completions(now);
        if tick {
            self.deadlines_and_releases(now);
            let t = self.at(now);
            if self.core.policy().next_timer().is_some_and(|at| at <= now) {
                self.core.policy().on_timer(t);
            }
            if let Some(r) = self.running {
                let why = if !r.on_grid {
                    Some(Stop::Preempted)
                } else if r.limit_end <= boundary {
                    Some(Stop::Expired)
                } else if self.core.policy().should_preempt(r.id, t) {
                    Some(Stop::Preempted)
                } else {
                    None
                };
                if let Some(why) = why {
                    self.core.policy().stop(r.id, t, why);
                    self.running = None;
                }
            }
        }
        if self.running.is_none() && (tick || self.cfg.fill) {
            let t = self.at(now);
            if let Some(id) = self.core.policy().pick_next(t) {
                let from = if tick { boundary } else { now };
                let limit_end = self.core.policy().run_limit(id, t).map_or(u64::MAX, |l| from.saturating_add(l));
                self.running = Some(Run { id, on_grid: tick, limit_end });
                let task = &mut self.tasks[id];
                task.dispatches += 1;
                let release = task.live.map_or(now, |j| j.release);
                if let Some(r) = task.live_trace().filter(|r| r.start_ns.is_none()) {
                    r.start_ns = Some(now.saturating_sub(release));
                }
            }
        }
        self.apply(now);
    }

    fn completions(&mut self, now: u64) {
        for i in 0..self.tasks.len() {
            let Some(job) = self.tasks[i].live else { continue };
            let w = &self.region.slot(i).worker;
            if w.done.load(Acquire) != job.number {
                continue;
            }
            let done_at = w.done_ns.load(Relaxed);
            let late = done_at > job.deadline;
            let task = &mut self.tasks[i];
            if let Some(r) = task.live_trace() {
                r.finish_ns = Some(done_at.saturating_sub(job.release));
                r.met = !late;
            }
            task.outcome(late);
            task.late += u64::from(late);
            task.live = None;
            if self.running.is_some_and(|r| r.id == i) {
                let t = self.at(done_at.min(now));
                self.core.policy().stop(i, t, Stop::Done);
                self.running = None;
            } else {
                self.offcpu += 1;
                let t = self.at(now);
                self.core.policy().cancel(i, t);
            }
        }
    }

    /// Drops jobs whose deadline passed and releases the jobs that are due, task by task.
    ///
    /// As in the simulator, a task whose late job is dropped at the instant its next job is
    /// released stays ready: waking it again replaces the job and keeps its first-come-first-served
    /// place (the policy's documented semantics). Only a task left with no job is cancelled.
    fn deadlines_and_releases(&mut self, now: u64) {
        for i in 0..self.tasks.len() {
            let mut withdraw = false;
            if self.tasks[i].live.is_some_and(|j| j.deadline <= now) {
                self.tasks[i].outcome(true);
                self.tasks[i].live = None;
                self.set_word(i, 0, self.tasks[i].word_run);
                if self.running.is_some_and(|r| r.id == i) {
                    let t = self.at(now);
                    self.core.policy().stop(i, t, Stop::Aborted);
                    self.running = None;
                } else {
                    withdraw = true;
                }
            }
            // Only jobs released before the end are the run's: a dispatcher woken late at the
            // end must not release (and count as missed) jobs after it.
            let last = self.end.unwrap_or(u64::MAX);
            while !self.tasks[i].exited && self.tasks[i].next_release <= now && self.tasks[i].next_release < last {
                let task = &mut self.tasks[i];
                let release = task.next_release;
                let deadline = release + task.deadline;
                let number = (task.next_index % (u32::MAX as u64 >> 1) + 1) as u32;
                task.next_index += 1;
                task.next_release += task.period;
                task.released += 1;
                let trace = task.record(release - self.start);
                if deadline <= now {
                    // Released and due while the dispatcher was late: never announced.
                    task.outcome(true);
                    continue;
                }
                task.live = Some(Job { number, deadline, release, trace });
                self.set_word(i, number, self.tasks[i].word_run);
                let t = self.at(now);
                self.core.policy().wake(i, t, Arrival::Job { release, deadline: Some(deadline) });
                withdraw = false;
            }
            if withdraw {
                let t = self.at(now);
                self.core.policy().cancel(i, t);
            }
        }
    }

    /// Publishes task `i`'s job word, waking the worker when it may now work.
    fn set_word(&mut self, i: usize, job: u32, run: bool) {
        let task = &mut self.tasks[i];
        task.word_job = job;
        task.word_run = run;
        let control = &self.region.slot(i).control;
        if run && job != 0 {
            control.granted_ns.store(os::monotonic_ns(), Relaxed);
        }
        control.word.store(job_word(job, run), Release);
        if run && job != 0 {
            os::futex_wake(&control.word, 1);
        }
    }

    /// Makes the scheduling classes match the decision: only on a change of the chosen task.
    fn apply(&mut self, now: u64) {
        let want = self.running.map(|r| r.id);
        if want == self.on_cpu {
            return;
        }
        if let Some(old) = self.on_cpu.take() {
            self.set_word(old, self.tasks[old].word_job, false);
            if let Err(e) = os::set_other(self.tasks[old].pid) {
                self.control_failed(old, &e, now);
            }
        }
        if let Some(new) = want {
            match os::set_fifo(self.tasks[new].pid, RUN_PRIORITY) {
                Ok(()) => {
                    self.set_word(new, self.tasks[new].word_job, true);
                    self.on_cpu = Some(new);
                }
                Err(e) => self.control_failed(new, &e, now),
            }
        }
        self.switches += 1;
    }

    fn control_failed(&mut self, i: usize, e: &std::io::Error, now: u64) {
        self.control_errors += 1;
        if !os::is_gone(e) || self.tasks[i].exited {
            return;
        }
        self.tasks[i].exited = true;
        self.tasks[i].live = None;
        let t = self.at(now);
        if self.running.is_some_and(|r| r.id == i) {
            self.core.policy().stop(i, t, Stop::Exited);
            self.running = None;
        } else {
            self.core.policy().retire(i, t);
        }
    }

    fn publish(&self, now: u64) {
        let h = self.region.header();
        h.live.seq.write(|| {
            let l = &h.live;
            l.running.store(self.on_cpu.map_or(0, |i| i as u32 + 1), Relaxed);
            l.heartbeat_ns.store(now, Relaxed);
            l.ticks.store(self.ticks, Relaxed);
            l.decisions.store(self.decisions, Relaxed);
            l.switches.store(self.switches, Relaxed);
            l.overruns.store(self.overruns, Relaxed);
            l.lat_p50_ns.store(self.lat_cache[0], Relaxed);
            l.lat_p99_ns.store(self.lat_cache[1], Relaxed);
            l.lat_max_ns.store(self.lat_cache[2], Relaxed);
        });
        for (i, task) in self.tasks.iter().enumerate() {
            let st = &self.region.slot(i).status;
            let state = if task.exited {
                TaskState::Exited
            } else if self.on_cpu == Some(i) {
                TaskState::Running
            } else if task.live.is_some() {
                TaskState::Ready
            } else {
                TaskState::Idle
            };
            let job_deadline = task.live.map_or(0, |j| j.deadline);
            let sliding = task.windows.report().sliding;
            let (cur, deadline, violations) = match &self.core {
                Core::Dwcs(d) => match d.view(i) {
                    Some(v) => ((v.current.x, v.current.y, v.current.tagged), v.deadline.unwrap_or(0), v.violations),
                    None => ((0, 0, false), 0, 0),
                },
                Core::Edf(_) => ((0, 0, false), job_deadline, sliding.violations),
            };
            st.seq.write(|| {
                st.state.store(state.as_u32(), Relaxed);
                st.x_cur.store(cur.0, Relaxed);
                st.y_cur.store(cur.1, Relaxed);
                st.tagged.store(u32::from(cur.2), Relaxed);
                st.deadline_ns.store(deadline, Relaxed);
                st.job_deadline_ns.store(job_deadline, Relaxed);
                st.released.store(task.released, Relaxed);
                st.completed.store(task.completed, Relaxed);
                st.missed.store(task.missed, Relaxed);
                st.violations.store(violations, Relaxed);
                st.windows.store(sliding.windows, Relaxed);
                st.window_violations.store(sliding.violations, Relaxed);
                st.dispatches.store(task.dispatches, Relaxed);
                st.last_decision_ns.store(now, Relaxed);
            });
        }
    }

    /// Counts jobs already due at the end as missed and builds the record (allocating is fine here).
    fn finish(&mut self, now: u64, faults: (u64, u64)) -> Metrics {
        self.running = None;
        self.apply(now);
        for t in &mut self.tasks {
            if let Some(job) = t.live {
                if job.deadline <= now {
                    t.live = None;
                    t.outcome(true);
                } else if let Some(at) = job.trace {
                    // Neither met nor missed when the run ended: not a job of the result.
                    t.trace.truncate(at);
                }
            }
        }
        self.publish(now);
        let tasks = self
            .cfg
            .tasks
            .iter()
            .zip(&self.tasks)
            .enumerate()
            .map(|(i, (c, t))| (i, c, t, t.windows.report()))
            .map(|(i, c, t, w)| TaskMetrics {
                slot: i,
                pid: c.pid,
                c_ns: c.c_ns,
                t_ns: c.t_ns,
                d_ns: c.deadline(),
                window: c.window(),
                released: t.released,
                completed: t.completed,
                missed: t.missed,
                late_completions: t.late,
                dispatches: t.dispatches,
                windows: w.sliding.windows,
                window_violations: w.sliding.violations,
                fixed_windows: w.fixed.windows,
                fixed_window_violations: w.fixed.violations,
                periods_in_violation: w.periods_in_violation,
                policy: match &self.core {
                    Core::Dwcs(d) => d.view(i).map(|v| PolicyView {
                        x_cur: v.current.x,
                        y_cur: v.current.y,
                        tagged: v.current.tagged,
                        serviced: v.serviced,
                        missed: v.missed,
                        violations: v.violations,
                    }),
                    Core::Edf(_) => None,
                },
                exited: t.exited,
            })
            .collect();
        Metrics {
            schema: METRICS_SCHEMA.into(),
            policy: self.cfg.policy.name().into(),
            cpu: self.cfg.cpu,
            quantum_ns: self.q,
            start_ns: self.start,
            elapsed_ns: now.saturating_sub(self.start),
            ticks: self.ticks,
            decisions: self.decisions,
            completion_wakeups: self.completion_wakeups,
            switches: self.switches,
            dispatch_latency: Latency::of(&self.latency),
            decision_cost: Latency::of(&self.cost),
            overruns: self.overruns,
            skipped_ticks: self.skipped,
            minor_faults: faults.0,
            major_faults: faults.1,
            control_errors: self.control_errors,
            offcpu_completions: self.offcpu,
            tasks,
            job_logs: self
                .cfg
                .tasks
                .iter()
                .zip(&self.tasks)
                .map(|(c, t)| {
                    let log = JobLog { source: "dispatcher".into(), d_ns: c.deadline(), jobs: t.trace.clone(), unrecorded: t.unrecorded };
                    log.to_base64()
                })
                .collect(),
        }
    }
}
