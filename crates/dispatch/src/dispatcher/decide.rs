//! The decision core: jobs, policy and the running task, with time passed in. No clock reads,
//! no system calls, no allocation after [`Decider::new`]: the loop feeds it CLOCK_MONOTONIC
//! times and worker completions, and a test can feed it a made-up clock.

use crate::calls::Call;
use crate::config::{Config, DispatchPolicy};
use schedlab_model::jobs::JobTrace;
use schedlab_policy::dwcs::Dwcs;
use schedlab_policy::edf::Edf;
use schedlab_policy::jobs::{Job, JobLifecycle, JobSpec, LateJob};
use schedlab_policy::{Arrival, SchedPolicy, Stop};

/// The policy core, kept concrete so DWCS's per-task view can be published.
#[derive(Clone)]
pub(crate) enum Core {
    Dwcs(Dwcs),
    Edf(Edf),
}

impl Core {
    fn new(cfg: &Config) -> Self {
        let mut core = match cfg.policy {
            DispatchPolicy::Dwcs { work_conserving } => Core::Dwcs(Dwcs::new(work_conserving)),
            DispatchPolicy::Edf => Core::Edf(Edf::new()),
        };
        for (i, t) in cfg.tasks.iter().enumerate() {
            core.policy().admit(i, &t.params());
        }
        core
    }

    pub(crate) fn policy(&mut self) -> &mut dyn SchedPolicy {
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

/// Most per-job records a task keeps (64 bytes each), whatever the run's length.
const MAX_TRACE: u64 = 1 << 20;

/// The number a job goes by in the worker's job word (never 0, which means "no job").
pub(crate) fn job_number(index: u64) -> u32 {
    (index % (u32::MAX as u64 >> 1) + 1) as u32
}

/// One task's jobs and what was measured of them.
pub(crate) struct TaskJobs {
    /// The lifecycle shared with the simulator; a job's payload is its record's index.
    pub(crate) jobs: JobLifecycle<Option<usize>>,
    pub(crate) dispatches: u64,
    pub(crate) exited: bool,
    /// The job number to publish in the worker's job word, when it changed.
    pub(crate) new_word: Option<u32>,
    /// Per-job records, allocated (and touched) before the loop; pushing never grows it.
    pub(crate) trace: Vec<JobTrace>,
    pub(crate) unrecorded: u64,
}

impl TaskJobs {
    /// Records a job released at `release` (ns after the start); None when the buffer is full.
    fn record(&mut self, release: u64) -> Option<usize> {
        if self.trace.len() == self.trace.capacity() {
            self.unrecorded += 1;
            return None;
        }
        self.trace.push(JobTrace { release_ns: release, ..Default::default() });
        Some(self.trace.len() - 1)
    }

    /// The live job and its record.
    fn live_trace(&mut self) -> Option<(Job<Option<usize>>, &mut JobTrace)> {
        let job = self.jobs.current()?;
        Some((job, self.trace.get_mut(job.payload?)?))
    }
}

/// The task on the CPU, and how it got there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OnCpu {
    pub(crate) id: usize,
    on_grid: bool,
    limit_end: u64,
}

/// What the dispatcher decides, apart from carrying it out.
pub(crate) struct Decider {
    pub(crate) core: Core,
    pub(crate) tasks: Vec<TaskJobs>,
    pub(crate) running: Option<OnCpu>,
    last_t: u64,
    start: u64,
    end: Option<u64>,
    fill: bool,
    /// Jobs finished while their worker was not the chosen one.
    pub(crate) offcpu: u64,
    /// The policy calls made, when logged; its room is allocated before the run.
    pub(crate) calls: Option<Vec<Call>>,
    /// Calls left out of a full log.
    pub(crate) calls_lost: u64,
}

impl Decider {
    /// Everything the decisions touch is allocated here; the first jobs are due at `start`.
    pub(crate) fn new(cfg: &Config, start: u64) -> Self {
        let core = Core::new(cfg);
        core.warm_up(cfg);
        let tasks = cfg
            .tasks
            .iter()
            .map(|t| {
                // Jobs in the duration, and room for a dispatcher that wakes late at the end.
                let jobs = cfg.duration_ns.map_or(0, |d| (d / t.t_ns) * 9 / 8 + 16).min(MAX_TRACE)
                    as usize;
                let mut trace = Vec::with_capacity(jobs);
                trace.resize(jobs, JobTrace::default());
                trace.clear();
                // D <= T and drops come before releases: never a job queued behind another.
                let spec = JobSpec {
                    period: Some(t.t_ns),
                    deadline: Some(t.deadline()),
                    late: LateJob::Drop,
                    limit: None,
                };
                TaskJobs {
                    jobs: JobLifecycle::judged(spec, start, 1, t.window()),
                    dispatches: 0,
                    exited: false,
                    new_word: None,
                    trace,
                    unrecorded: 0,
                }
            })
            .collect();
        Decider {
            core,
            tasks,
            running: None,
            last_t: 0,
            start,
            end: cfg.duration_ns.map(|d| start + d),
            fill: cfg.fill,
            offcpu: 0,
            calls: None,
            calls_lost: 0,
        }
    }

    /// Logs every policy call from now on, with room for a run of `cfg`'s duration
    /// (a run without one: an hour of quanta).
    pub(crate) fn log_calls(&mut self, cfg: &Config) {
        let span = cfg.duration_ns.unwrap_or(3_600_000_000_000);
        let ticks = span / cfg.quantum_ns * 9 / 8 + 16;
        let jobs: u64 = cfg.tasks.iter().map(|t| span / t.t_ns * 9 / 8 + 16).sum();
        let room = ticks * 4 + jobs * 6;
        let mut calls = Vec::with_capacity(room.min(1 << 24) as usize);
        calls.resize(calls.capacity(), Call::Timer { t: 0 });
        calls.clear();
        self.calls = Some(calls);
    }

    fn log(&mut self, call: Call) {
        if let Some(calls) = &mut self.calls {
            if calls.len() < calls.capacity() {
                calls.push(call);
            } else {
                self.calls_lost += 1;
            }
        }
    }

    fn stop(&mut self, task: usize, t: u64, why: Stop) {
        self.core.policy().stop(task, t, why);
        self.log(Call::Stop { task, t, why });
    }

    fn cancel(&mut self, task: usize, t: u64) {
        self.core.policy().cancel(task, t);
        self.log(Call::Cancel { task, t });
    }

    /// Policy time: the policy must never see time go backwards.
    fn at(&mut self, t: u64) -> u64 {
        self.last_t = self.last_t.max(t);
        self.last_t
    }

    /// One decision at `now`: on a quantum boundary (`tick`, the boundary at `boundary`) or at
    /// a completion wake-up. `done(i)` reads worker i's last finished job and when it finished.
    pub(crate) fn decide(
        &mut self,
        now: u64,
        tick: bool,
        boundary: u64,
        done: impl Fn(usize) -> (u32, u64),
    ) {
        self.completions(now, done);
        if tick {
            self.deadlines_and_releases(now);
            let t = self.at(now);
            if self.core.policy().next_timer().is_some_and(|at| at <= now) {
                self.core.policy().on_timer(t);
                self.log(Call::Timer { t });
            }
            if let Some(r) = self.running {
                let why = if !r.on_grid {
                    Some(Stop::Preempted)
                } else if r.limit_end <= boundary {
                    Some(Stop::Expired)
                } else {
                    let preempt = self.core.policy().should_preempt(r.id, t);
                    self.log(Call::ShouldPreempt { task: r.id, t, preempt });
                    preempt.then_some(Stop::Preempted)
                };
                if let Some(why) = why {
                    self.stop(r.id, t, why);
                    self.running = None;
                }
            }
        }
        if self.running.is_none() && (tick || self.fill) {
            let t = self.at(now);
            let picked = self.core.policy().pick_next(t);
            self.log(Call::Pick { t, task: picked });
            if let Some(id) = picked {
                let from = if tick { boundary } else { now };
                let limit_end = self
                    .core
                    .policy()
                    .run_limit(id, t)
                    .map_or(u64::MAX, |l| from.saturating_add(l));
                self.running = Some(OnCpu { id, on_grid: tick, limit_end });
                let task = &mut self.tasks[id];
                task.dispatches += 1;
                if let Some((job, r)) = task.live_trace().filter(|(_, r)| r.start_ns.is_none()) {
                    r.start_ns = Some(now.saturating_sub(job.release));
                }
            }
        }
    }

    fn completions(&mut self, now: u64, done: impl Fn(usize) -> (u32, u64)) {
        for i in 0..self.tasks.len() {
            let Some(job) = self.tasks[i].jobs.current() else { continue };
            let (number, done_at) = done(i);
            if number != job_number(job.index) {
                continue;
            }
            let task = &mut self.tasks[i];
            let finished = task.jobs.complete(done_at).expect("a current job");
            if let Some(r) = job.payload.and_then(|at| task.trace.get_mut(at)) {
                r.finish_ns = Some(done_at.saturating_sub(job.release));
                r.met = finished.met;
            }
            if self.running.is_some_and(|r| r.id == i) {
                let t = self.at(done_at.min(now));
                self.stop(i, t, Stop::Done);
                self.running = None;
            } else {
                self.offcpu += 1;
                let t = self.at(now);
                self.cancel(i, t);
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
            if self.tasks[i].jobs.expire(now).current.is_some() {
                self.tasks[i].new_word = Some(0);
                if self.running.is_some_and(|r| r.id == i) {
                    let t = self.at(now);
                    self.stop(i, t, Stop::Aborted);
                    self.running = None;
                } else {
                    withdraw = true;
                }
            }
            // Only jobs released before the end are the run's: a dispatcher woken late at the
            // end must not release (and count as missed) jobs after it.
            let last = self.end.unwrap_or(u64::MAX);
            while let Some(release) =
                self.tasks[i].jobs.next_release().filter(|&r| r <= now && r < last)
            {
                let task = &mut self.tasks[i];
                let trace = task.record(release - self.start);
                let released = task.jobs.release(now, trace).expect("a due job");
                if released.dropped {
                    // Released and due while the dispatcher was late: never announced.
                    continue;
                }
                let job = released.job;
                task.new_word = Some(job_number(job.index));
                let t = self.at(now);
                let deadline = job.deadline;
                self.core.policy().wake(i, t, Arrival::Job { release, deadline });
                self.log(Call::Release { task: i, t, release, deadline });
                withdraw = false;
            }
            if withdraw {
                let t = self.at(now);
                self.cancel(i, t);
            }
        }
    }

    /// Task `i`'s worker is gone: no more jobs, and the policy forgets it.
    pub(crate) fn gone(&mut self, i: usize, now: u64) {
        if self.tasks[i].exited {
            return;
        }
        self.tasks[i].exited = true;
        self.tasks[i].jobs.retire();
        let t = self.at(now);
        if self.running.is_some_and(|r| r.id == i) {
            self.stop(i, t, Stop::Exited);
            self.running = None;
        } else {
            self.core.policy().retire(i, t);
            self.log(Call::Retire { task: i, t });
        }
    }

    /// The run ended at `now`: jobs already due count as missed; a job not yet due is neither
    /// met nor missed, so not a job of the result.
    pub(crate) fn finish(&mut self, now: u64) {
        self.running = None;
        for t in &mut self.tasks {
            if let Some(at) = t.jobs.finish(now).and_then(|j| j.payload) {
                t.trace.truncate(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TaskCfg;
    use schedlab_policy::PolicySpec;
    use schedlab_sim::{simulate, MissAction, SimConfig, TaskSpec};

    /// One quantum; every C and T is a whole number of quanta, so the simulator's events all
    /// fall on the dispatcher's boundaries and both see the same instants.
    const Q: u64 = 1_000_000;
    const START: u64 = 5 * Q;

    /// Per task, per job: release, first run and finish (both ns after the release), met.
    type Outcomes = Vec<Vec<(u64, Option<u64>, Option<u64>, bool)>>;

    /// An overloaded set (U = 1.15): some jobs finish, some are dropped at their deadline.
    fn tasks() -> Vec<TaskCfg> {
        [(2, 4, 1, 2), (3, 7, 1, 3), (2, 9, 0, 1)]
            .iter()
            .enumerate()
            .map(|(i, &(c, t, x, y))| TaskCfg {
                pid: i as i32 + 1,
                c_ns: c * Q,
                t_ns: t * Q,
                d_ns: 0,
                x,
                y,
            })
            .collect()
    }

    /// The simulator, firm deadlines, to `horizon`; releases rebased to the dispatcher's start.
    fn simulated(policy: PolicySpec, horizon: u64) -> Outcomes {
        let specs: Vec<TaskSpec> = tasks()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut s =
                    TaskSpec::periodic(format!("t{i}"), t.c_ns, t.t_ns).on_miss(MissAction::Drop);
                s.params = t.params();
                s
            })
            .collect();
        let r = simulate(&SimConfig::new(1, policy).with_horizon(horizon), &specs)
            .expect("a valid set");
        let job = |j: &schedlab_sim::JobOutcome| {
            (j.release, j.start.map(|s| s - j.release), j.finish.map(|f| f - j.release), j.met)
        };
        r.tasks.iter().map(|t| t.job_log.iter().map(job).collect()).collect()
    }

    /// The dispatcher's decision core on a test clock, with workers that do exactly C of work
    /// per job while chosen (the canonical one-job-per-quantum model).
    fn dispatched(policy: DispatchPolicy, horizon: u64) -> Outcomes {
        let (_, d) = drive(policy, horizon, false);
        d.tasks
            .iter()
            .map(|t| {
                t.trace.iter().map(|j| (j.release_ns, j.start_ns, j.finish_ns, j.met)).collect()
            })
            .collect()
    }

    /// The decision core run to `horizon` as [`dispatched`] runs it, logging its policy calls
    /// when `log`.
    fn drive(policy: DispatchPolicy, horizon: u64, log: bool) -> (Config, Decider) {
        let cfg = Config {
            tasks: tasks(),
            quantum_ns: Q,
            cpu: 0,
            start_ns: Some(START),
            duration_ns: Some(horizon),
            policy,
            fill: false,
            attach_timeout_ns: 0,
        };
        let mut d = Decider::new(&cfg, START);
        if log {
            d.log_calls(&cfg);
        }
        let n = cfg.tasks.len();
        // Each worker: the job it works on and the work left; its last finished job and when.
        let mut work: Vec<(Option<u64>, u64)> = vec![(None, 0); n];
        let mut done: Vec<(u32, u64)> = vec![(0, 0); n];
        let mut now = START;
        while now < START + horizon {
            if let Some(r) = d.running {
                let (job, left) = &mut work[r.id];
                if let Some(index) = *job {
                    *left -= Q;
                    if *left == 0 {
                        done[r.id] = (job_number(index), now);
                    }
                }
            }
            d.decide(now, true, now, |i| done[i]);
            for (i, t) in d.tasks.iter().enumerate() {
                let current = t.jobs.current().map(|j| j.index);
                if current != work[i].0 {
                    work[i] = (current, cfg.tasks[i].c_ns);
                }
            }
            now += Q;
        }
        d.finish(now);
        (cfg, d)
    }

    /// Jobs whose outcome is settled well before the end (the two drivers stop differently).
    fn settled(mut o: Outcomes, end: u64) -> Outcomes {
        for jobs in &mut o {
            jobs.retain(|j| j.0 + 9 * Q < end);
        }
        o
    }

    fn assert_same_lifecycle(sim: PolicySpec, live: DispatchPolicy) {
        // Three hyperperiods (lcm of 4, 7 and 9 quanta).
        let horizon = 3 * 252 * Q;
        let s = settled(simulated(sim, horizon), horizon);
        let l = settled(dispatched(live, horizon), horizon);
        let jobs = s.iter().flatten();
        assert!(
            jobs.clone().any(|j| j.3) && jobs.clone().any(|j| j.2.is_none()),
            "the trace has met and dropped jobs"
        );
        assert!(s.iter().all(|jobs| jobs.len() > 60), "three hyperperiods of jobs");
        for (i, (s, l)) in s.iter().zip(&l).enumerate() {
            assert_eq!(
                s, l,
                "task {i}: (release, start, finish, met) per job, simulator vs dispatcher"
            );
        }
    }

    #[test]
    fn simulator_and_dispatcher_agree_job_by_job_under_edf() {
        assert_same_lifecycle(PolicySpec::Edf, DispatchPolicy::Edf);
    }

    #[test]
    fn simulator_and_dispatcher_agree_job_by_job_under_dwcs() {
        assert_same_lifecycle(
            PolicySpec::Dwcs { work_conserving: true },
            DispatchPolicy::Dwcs { work_conserving: true },
        );
    }

    /// The logged calls of an overloaded run, replayed through a fresh policy, give the same
    /// decisions; a log with one pick changed does not.
    #[test]
    fn a_fresh_policy_fed_the_logged_calls_decides_the_same_every_time() {
        use crate::calls::{Call, CallLog};
        for (policy, fresh) in [
            (DispatchPolicy::Dwcs { work_conserving: true }, Core::Dwcs(Dwcs::new(true))),
            (DispatchPolicy::Edf, Core::Edf(Edf::new())),
        ] {
            let (cfg, mut d) = drive(policy, 252 * Q, true);
            let calls = d.calls.take().unwrap();
            let log = CallLog { cpu: 0, policy, tasks: cfg.tasks, calls, lost: d.calls_lost };
            assert_eq!(log.lost, 0);
            let picks = log.calls.iter().filter(|c| matches!(c, Call::Pick { .. })).count();
            assert!(picks >= 100, "a pick whenever nothing runs: {picks}");
            let decisions = log.replay(fresh.clone().policy()).unwrap();
            assert!(decisions >= picks);
            let mut changed = log.clone();
            let at = changed
                .calls
                .iter()
                .position(|c| matches!(c, Call::Pick { task: Some(0), .. }))
                .unwrap();
            let Call::Pick { t, .. } = changed.calls[at] else { unreachable!() };
            changed.calls[at] = Call::Pick { t, task: Some(1) };
            assert_eq!(changed.replay(fresh.clone().policy()).unwrap_err().at, at);
        }
    }
}
