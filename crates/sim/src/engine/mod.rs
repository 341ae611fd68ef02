//! The simulation engine: state, the event loop, and the final tally.
//!
//! Each step takes every event at the earliest pending time, applies them all
//! (releases, completions, wake-ups, timers), and only then lets each touched
//! ready queue make its decisions. Deciding once per instant is what keeps a
//! burst of simultaneous releases from producing zero-length runs and
//! phantom preemptions.

mod cycles;
mod dispatch;
mod work;

use std::collections::VecDeque;

use schedlab_policy::jobs::{JobLifecycle, JobSpec, LateJob};
use schedlab_policy::{Clock, Duration, SchedPolicy, TaskId, Time, VirtualClock};

use crate::config::{Mapping, MissAction, SimConfig, TaskSpec, WorkSpec};
use crate::event::{EventClass, EventQueue};
use crate::result::{CpuResult, JobOutcome, ResponseAcc, SimResult, Slice, TaskResult};
use crate::rng::SplitMix64;

/// Indices are u32 so that an event, and the queue's entries, stay small.
#[derive(Debug, Clone, Copy)]
enum Ev {
    Release(u32),
    Cpu {
        cpu: u32,
    },
    IoDone,
    Timer {
        domain: u32,
    },
    Deadline(u32),
    /// A task blocked on a channel may try again (its partner sent or received).
    Wake(u32),
    /// A periodic job's release latency is over: it becomes ready.
    Ready(u32),
    /// The periodic interrupt on every CPU.
    Tick,
}

/// One ready queue (one policy instance) and the CPUs it feeds.
struct ReadyDomain<P> {
    policy: P,
    cpus: Vec<usize>,
    dirty: bool,
    timer: Option<Time>,
}

#[derive(Debug, Default)]
struct Cpu {
    domain: usize,
    running: Option<TaskId>,
    work_start: Time,
    limit_end: Option<Time>,
    last_task: Option<TaskId>,
    /// When the interrupt handlers taken on this CPU are done.
    irq_until: Time,
    // A task stopped involuntarily in this step; it counts as preempted unless it resumes here.
    stopped: Option<TaskId>,
    last_slice: Option<usize>,
    result: CpuResult,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Waiting,
    Ready,
    Running,
    Blocked,
    Finished,
}

/// A job; its payload is the work it needs.
type SimJob = schedlab_policy::jobs::Job<Duration>;

#[derive(Debug)]
struct TaskRt {
    domain: usize,
    state: St,
    phase: usize,
    remaining: Duration,
    /// Woken from a channel: its current phase is tried again when it runs.
    retry: bool,
    announced: bool,
    last_cpu: Option<usize>,
    jobs: JobLifecycle<Duration>,
    first_release: Option<Time>,
    first_run: Option<Time>,
    completion: Option<Time>,
    ended: Option<Time>,
    cpu_time: Duration,
    preemptions: u64,
    blocks: u64,
    migrations: u64,
    /// When it last became ready (meaningful while `state` is `St::Ready`).
    ready_since: Time,
    runnable: Duration,
    dispatches: u64,
    responses: ResponseAcc,
    job_log: Vec<JobOutcome>,
}

/// A channel of messages between tasks: how many it holds, and who waits on it.
#[derive(Debug, Default)]
struct Channel {
    capacity: u32,
    held: u32,
    /// Tasks blocked on an empty channel, in the order they came.
    receivers: VecDeque<TaskId>,
    /// Tasks blocked on a full channel, in the order they came.
    senders: VecDeque<TaskId>,
}

#[derive(Debug, Default)]
struct Device {
    queue: VecDeque<(TaskId, Duration)>,
    busy: bool,
}

/// The engine is generic over the policy, so each policy's calls are direct and inlined.
pub(crate) struct Simulator<'a, P> {
    cfg: &'a SimConfig,
    specs: &'a [TaskSpec],
    clock: VirtualClock,
    horizon: Time,
    events: EventQueue<Ev>,
    domains: Vec<ReadyDomain<P>>,
    cpus: Vec<Cpu>,
    tasks: Vec<TaskRt>,
    device: Device,
    channels: Vec<Channel>,
    rng: SplitMix64,
    trace: Vec<Slice>,
    changed: Vec<usize>,
    handled: u64,
    /// The latest time of a timer that was replaced or cancelled before it was due.
    dropped_until: Time,
    cycles: cycles::Cycles,
}

impl<'a, P: SchedPolicy> Simulator<'a, P> {
    /// Builds the engine for inputs that [`validate`](crate::validate) accepted, with one
    /// policy from `policy` per ready queue.
    pub(crate) fn new(cfg: &'a SimConfig, specs: &'a [TaskSpec], policy: impl Fn() -> P) -> Self {
        let domain = |cpus| ReadyDomain { policy: policy(), cpus, dirty: false, timer: None };
        let (domains, domain_of_task): (Vec<ReadyDomain<P>>, Vec<usize>) = match &cfg.mapping {
            Mapping::Global => (vec![domain((0..cfg.cpus).collect())], vec![0; specs.len()]),
            Mapping::Partitioned(map) => {
                ((0..cfg.cpus).map(|c| domain(vec![c])).collect(), map.clone())
            }
        };
        let mut cpus: Vec<Cpu> = (0..cfg.cpus).map(|_| Cpu::default()).collect();
        for (d, dom) in domains.iter().enumerate() {
            for &c in &dom.cpus {
                cpus[c].domain = d;
            }
        }
        let tasks =
            specs.iter().zip(&domain_of_task).map(|(s, &d)| TaskRt::new(d, s, cfg)).collect();
        let ndomains = domains.len();
        let horizon = cfg.horizon.unwrap_or(Time::MAX);
        let period = if cfg.skip_cycles && cfg.horizon.is_some() {
            let tick = cfg.costs.ticks().then_some(cfg.costs.tick_period);
            cycles::hyperperiod(specs.iter().map(|s| cycles::period_of(&s.workload)).chain([tick]))
        } else {
            None
        };
        let mut engine = Self {
            cfg,
            specs,
            clock: VirtualClock::new(0),
            horizon,
            // A slot per CPU timer, then one per ready queue's policy timer.
            events: EventQueue::with_capacity(2 * specs.len() + 16, cfg.cpus + ndomains),
            dropped_until: 0,
            domains,
            cpus,
            tasks,
            device: Device::default(),
            channels: cfg
                .channels
                .iter()
                .map(|&capacity| Channel { capacity, ..Channel::default() })
                .collect(),
            rng: SplitMix64::new(cfg.seed),
            trace: Vec::new(),
            changed: Vec::with_capacity(cfg.cpus),
            handled: 0,
            cycles: cycles::Cycles::new(period, horizon),
        };
        for (id, s) in specs.iter().enumerate() {
            let d = engine.tasks[id].domain;
            engine.domains[d].policy.admit(id, &s.effective_params());
            if s.arrival <= engine.horizon {
                engine.events.push(s.arrival, EventClass::Arrival, Ev::Release(id as u32));
            }
        }
        if cfg.costs.ticks() {
            engine.events.push(0, EventClass::Arrival, Ev::Tick);
        }
        engine
    }

    /// Notes an instant the run asked for (see `cycles`).
    #[inline]
    fn asked(&mut self, at: Time) {
        self.cycles.asked = self.cycles.asked.max(at);
    }

    /// Runs to the horizon (or until nothing is left to happen) and tallies the results,
    /// with the number of whole cycles skipped (see `cycles`).
    pub(crate) fn run(mut self) -> (SimResult, u64) {
        while let Some(now) = self.events.peek_time() {
            if now > self.horizon {
                break;
            }
            self.clock.set(now);
            while let Some(ev) = self.events.pop_at(now) {
                self.handled += 1;
                self.handle(ev, now);
            }
            for d in 0..self.domains.len() {
                if self.domains[d].dirty {
                    self.domains[d].dirty = false;
                    self.resched(d, now);
                }
            }
            if self.cycles.due(now) {
                self.look_for_cycle(now);
            }
        }
        // Without a horizon the run ends at its last event, a timer replaced or cancelled
        // before its time included (as when it stayed queued and was skipped then), and so
        // does a timer a policy left to a wake-up that never came.
        let end = if self.horizon == Time::MAX {
            let deferred =
                self.domains.iter().filter_map(|d| d.policy.latest_timer()).max().unwrap_or(0);
            self.clock.now().max(self.dropped_until).max(deferred)
        } else {
            self.horizon
        };
        let skipped = self.cycles.skipped;
        (self.finish(end), skipped)
    }

    fn handle(&mut self, ev: Ev, now: Time) {
        match ev {
            Ev::Release(id) => self.release(id as TaskId, now),
            Ev::Cpu { cpu } => self.cpu_timer(cpu as usize, now),
            Ev::IoDone => self.io_done(now),
            Ev::Timer { domain } => {
                let dom = &mut self.domains[domain as usize];
                dom.timer = None;
                dom.policy.on_timer(now);
                dom.dirty = true;
            }
            Ev::Deadline(task) => self.deadline_check(task as TaskId, now),
            Ev::Wake(task) => self.woken(task as TaskId, now),
            Ev::Ready(task) => self.latency_over(task as TaskId, now),
            Ev::Tick => self.tick(now),
        }
    }

    fn finish(mut self, end: Time) -> SimResult {
        if end > self.clock.now() {
            self.clock.set(end);
        }
        for cpu in 0..self.cpus.len() {
            self.account(cpu, end);
        }
        for t in &mut self.tasks {
            t.jobs.finish(end);
        }
        self.trace.sort_by_key(|s| (s.start, s.cpu));
        let tasks = self.tasks.into_iter().zip(self.specs).map(|(t, s)| t.into_result(s)).collect();
        SimResult {
            policy: self.cfg.policy.name().to_string(),
            end,
            events: self.handled,
            tasks,
            cpus: self.cpus.iter().map(|c| c.result).collect(),
            trace: self.trace,
        }
    }
}

/// How many jobs a task will release (bounded, for reserving its records once rather than
/// growing them job by job: each growth copies and touches fresh pages).
fn expected_jobs(spec: &TaskSpec, horizon: Option<Time>) -> usize {
    const MOST: u64 = 1 << 20;
    let n = match &spec.workload {
        WorkSpec::Periodic(p) => {
            let by_horizon =
                horizon.map_or(u64::MAX, |h| h.saturating_sub(spec.arrival) / p.period + 1);
            p.jobs.unwrap_or(u64::MAX).min(by_horizon)
        }
        _ => 1,
    };
    n.min(MOST) as usize
}

/// A periodic task's jobs on their grid; any other task has a single job, released at arrival.
fn job_spec(spec: &TaskSpec) -> JobSpec {
    match &spec.workload {
        WorkSpec::Periodic(p) => JobSpec {
            period: Some(p.period),
            deadline: Some(p.relative_deadline()),
            late: match p.on_miss {
                MissAction::Continue => LateJob::Continue,
                MissAction::Drop => LateJob::Drop,
                MissAction::Skip => LateJob::Skip,
            },
            limit: p.jobs,
        },
        _ => JobSpec {
            period: None,
            deadline: spec.params.deadline,
            late: LateJob::Continue,
            limit: Some(1),
        },
    }
}

impl TaskRt {
    fn new(domain: usize, spec: &TaskSpec, cfg: &SimConfig) -> Self {
        let kept = if cfg.record.responses { expected_jobs(spec, cfg.horizon) } else { 0 };
        Self {
            domain,
            state: St::Waiting,
            phase: 0,
            remaining: 0,
            retry: false,
            announced: false,
            last_cpu: None,
            jobs: JobLifecycle::judged(job_spec(spec), spec.arrival, 0, spec.params.window),
            first_release: None,
            first_run: None,
            completion: None,
            ended: None,
            cpu_time: 0,
            preemptions: 0,
            blocks: 0,
            migrations: 0,
            ready_since: 0,
            runnable: 0,
            dispatches: 0,
            responses: ResponseAcc::with_capacity(kept),
            job_log: Vec::with_capacity(if matches!(spec.workload, WorkSpec::Periodic(_)) {
                kept
            } else {
                0
            }),
        }
    }

    fn into_result(self, spec: &TaskSpec) -> TaskResult {
        let counts = self.jobs.counts();
        TaskResult {
            name: spec.name.clone(),
            release: self.first_release,
            started: self.first_run,
            last_cpu: self.last_cpu,
            completion: self.completion,
            ended: self.ended,
            wall: self.completion.zip(self.first_release).map(|(c, r)| c - r),
            finished: self.state == St::Finished,
            cpu_time: self.cpu_time,
            preemptions: self.preemptions,
            blocks: self.blocks,
            migrations: self.migrations,
            runnable: self.runnable,
            dispatches: self.dispatches,
            released: counts.released,
            jobs: counts.completed(),
            deadline_misses: counts.missed(),
            dropped: counts.dropped,
            windows: self.jobs.windows(),
            response: self.responses.into_stats(),
            job_log: self.job_log,
        }
    }
}
