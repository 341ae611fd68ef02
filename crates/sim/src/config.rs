//! The plain input structs of a simulation.

use serde::{Deserialize, Serialize};

use schedlab_policy::{Duration, PolicySpec, Reservation, SchedParams, Time, Window};

/// How tasks map to CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mapping {
    /// One ready queue shared by all CPUs; tasks may migrate.
    #[default]
    Global,
    /// One ready queue per CPU; entry `i` is task `i`'s CPU.
    Partitioned(Vec<usize>),
}

/// Overheads charged on the CPU before a dispatched task makes progress, and the
/// interrupts that take it from whatever runs. Every figure is 0 by default (charged
/// nothing). An interrupt is top-priority work on its CPU: the task running there stays on
/// the CPU (no switch, no preemption counted, the policy is not told) and makes no
/// progress until the handler is done; a task dispatched meanwhile starts its switch after
/// it. Not modelled: interrupts on other CPUs than the one named, nested or lost
/// interrupts, and the handler's effect on caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Costs {
    /// Charged when a CPU starts a task other than the last one it ran.
    pub context_switch: Duration,
    /// Charged, on top, when the task last ran on another CPU.
    pub migration: Duration,
    /// Delay from a task's send or receive on a channel to the partner it unblocks becoming
    /// ready, when that partner last ran on another CPU than the task (a remote wake-up: the
    /// IPI and the idle exit). A partner on the same CPU is ready at once.
    pub wakeup: Duration,
    /// Release latency: a periodic job arriving at `a` is ready only at `a` + this (the
    /// timer's expiry, its interrupt and the wake-up), its deadline still `a` + D and its
    /// response time counted from `a`. Jobs of other workloads are ready at their arrival.
    pub release_latency: Duration,
    /// A periodic job's release interrupt: at the job's arrival its CPU (its partition's, under
    /// global scheduling the one it last ran on, else the queue's first) spends this long
    /// in the interrupt handler, before anything else on it.
    pub release: Duration,
    /// The periodic interrupt (the tick): every CPU spends this long in its handler at 0,
    /// `tick_period`, 2 `tick_period`, ..., before anything else on it, while any task is
    /// unfinished. Needs a horizon, and must be shorter than its period; 0: no tick.
    pub tick: Duration,
    /// The tick's period; 0: no tick.
    pub tick_period: Duration,
}

impl Costs {
    /// Whether a tick is charged.
    pub fn ticks(&self) -> bool {
        self.tick > 0 && self.tick_period > 0
    }
}

/// What the simulator records besides the per-task counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Record {
    /// Keep the execution trace (one slice per stretch a task ran on a CPU).
    pub trace: bool,
    /// Keep every job's response time, not only min/mean/max, and every periodic job's release,
    /// start, finish and outcome (`TaskResult::job_log`).
    pub responses: bool,
}

impl Default for Record {
    fn default() -> Self {
        Self { trace: true, responses: true }
    }
}

/// Everything about a simulation except the tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Number of CPUs.
    pub cpus: usize,
    /// Global or partitioned scheduling.
    #[serde(default)]
    pub mapping: Mapping,
    /// The policy, one instance per ready queue.
    pub policy: PolicySpec,
    /// Switch and migration overheads.
    #[serde(default)]
    pub costs: Costs,
    /// Simulated time to stop at; required when a periodic task has no job limit.
    #[serde(default)]
    pub horizon: Option<Time>,
    /// What to record.
    #[serde(default)]
    pub record: Record,
    /// Seed for the execution-time draws of periodic tasks with `min_exec`.
    #[serde(default)]
    pub seed: u64,
    /// Skip hyperperiods that repeat one already simulated (needs a horizon). The result is
    /// the same either way; off simulates every cycle, as a check or to time the core.
    #[serde(default = "yes")]
    pub skip_cycles: bool,
    /// The channels tasks pass messages over ([`Phase::Send`], [`Phase::Recv`]): entry `i`
    /// is channel `i`'s capacity in messages.
    #[serde(default)]
    pub channels: Vec<u32>,
}

fn yes() -> bool {
    true
}

impl SimConfig {
    /// Global scheduling on `cpus` CPUs with no overheads, no horizon, full recording and seed 0.
    pub fn new(cpus: usize, policy: PolicySpec) -> Self {
        Self {
            cpus,
            mapping: Mapping::Global,
            policy,
            costs: Costs::default(),
            horizon: None,
            record: Record::default(),
            seed: 0,
            skip_cycles: true,
            channels: Vec::new(),
        }
    }

    /// Sets the channels' capacities in messages (entry `i` is channel `i`).
    pub fn with_channels(mut self, capacities: Vec<u32>) -> Self {
        self.channels = capacities;
        self
    }

    /// Stops the simulation at `horizon`.
    pub fn with_horizon(mut self, horizon: Time) -> Self {
        self.horizon = Some(horizon);
        self
    }

    /// Pins task `i` to CPU `cpu_of_task[i]`.
    pub fn partitioned(mut self, cpu_of_task: Vec<usize>) -> Self {
        self.mapping = Mapping::Partitioned(cpu_of_task);
        self
    }

    /// Sets the context-switch and migration costs.
    pub fn with_costs(mut self, context_switch: Duration, migration: Duration) -> Self {
        self.costs = Costs { context_switch, migration, ..self.costs };
        self
    }

    /// Sets the remote wake-up delay of channel partners ([`Costs::wakeup`]).
    pub fn with_wakeup(mut self, wakeup: Duration) -> Self {
        self.costs.wakeup = wakeup;
        self
    }

    /// Turns trace and response-list recording on or off.
    pub fn recording(mut self, trace: bool, responses: bool) -> Self {
        self.record = Record { trace, responses };
        self
    }

    /// Sets the random seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

/// One step of a scripted workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Run on a CPU for this long.
    Compute(Duration),
    /// Block on the I/O device, which serves requests one at a time in FIFO order, for this long.
    Io(Duration),
    /// Put one message into a channel (its index in [`SimConfig::channels`]), taking no
    /// time; a full channel blocks the task until a receiver takes a message. A receiver
    /// blocked on the channel is woken (after [`Costs::wakeup`] if it is remote).
    Send(u32),
    /// Take one message from a channel, taking no time; an empty channel blocks the task
    /// until a sender puts one. A sender blocked on the full channel is woken.
    Recv(u32),
}

/// What a late periodic job does at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissAction {
    /// Keep running until done (soft deadlines).
    #[default]
    Continue,
    /// Drop the job at its deadline (firm deadlines, DWCS's lost packets).
    Drop,
    /// Let a late job run to completion, but skip a queued job whose deadline has passed
    /// (or is reached) by the time it could start: it never runs and counts as a dropped,
    /// missed job (a periodic job loop catching up with its release grid).
    Skip,
}

/// A periodic task: a job of `wcet` every `period`, due `deadline` after release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodicSpec {
    /// Execution time C of each job (its worst case when `min_exec` is set).
    pub wcet: Duration,
    /// Period T.
    pub period: Duration,
    /// Relative deadline D; the period when absent.
    #[serde(default)]
    pub deadline: Option<Duration>,
    /// When set, each job's execution time is drawn uniformly from `min_exec..=wcet`.
    #[serde(default)]
    pub min_exec: Option<Duration>,
    /// Number of jobs; unlimited (up to the horizon) when absent.
    #[serde(default)]
    pub jobs: Option<u64>,
    /// What a job still unfinished at its deadline does.
    #[serde(default)]
    pub on_miss: MissAction,
}

impl PeriodicSpec {
    /// The relative deadline D.
    pub fn relative_deadline(&self) -> Duration {
        self.deadline.unwrap_or(self.period)
    }
}

/// The work a task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkSpec {
    /// One CPU burst of the given length.
    Burst {
        /// Length of the burst.
        length: Duration,
    },
    /// `rounds` times (compute, then one I/O request of `service`), then a final compute.
    Io {
        /// Length of each compute stretch.
        compute: Duration,
        /// Device service time of each I/O request.
        service: Duration,
        /// Number of I/O requests.
        rounds: u32,
    },
    /// Any sequence of compute and I/O phases.
    Mixed {
        /// The phases, in order.
        phases: Vec<Phase>,
    },
    /// A sequence of phases done `rounds` times over (a message loop).
    Repeat {
        /// The phases of one round, in order.
        phases: Vec<Phase>,
        /// How many rounds.
        rounds: u64,
    },
    /// Periodic jobs.
    Periodic(PeriodicSpec),
}

impl WorkSpec {
    /// Phase `i` of a non-periodic workload (periodic jobs are one compute each).
    pub fn phase(&self, i: usize) -> Option<Phase> {
        match self {
            WorkSpec::Burst { length } => (i == 0).then_some(Phase::Compute(*length)),
            WorkSpec::Io { compute, service, rounds } => {
                if i > 2 * *rounds as usize {
                    None
                } else if i.is_multiple_of(2) {
                    Some(Phase::Compute(*compute))
                } else {
                    Some(Phase::Io(*service))
                }
            }
            WorkSpec::Mixed { phases } => phases.get(i).copied(),
            WorkSpec::Repeat { phases, rounds } => match phases.len() {
                0 => None,
                n if (i / n) as u64 >= *rounds => None,
                n => Some(phases[i % n]),
            },
            WorkSpec::Periodic(p) => (i == 0).then_some(Phase::Compute(p.wcet)),
        }
    }
}

/// One task of a simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Name shown in results.
    pub name: String,
    /// First release (the phase of a periodic task).
    #[serde(default)]
    pub arrival: Time,
    /// The work.
    pub workload: WorkSpec,
    /// Scheduling parameters; for periodic tasks the simulator fills period, deadline and wcet.
    #[serde(default)]
    pub params: SchedParams,
}

impl TaskSpec {
    /// A task with `workload`, arriving at 0 with default parameters.
    pub fn new(name: impl Into<String>, workload: WorkSpec) -> Self {
        Self { name: name.into(), arrival: 0, workload, params: SchedParams::default() }
    }

    /// A periodic task with C = `wcet`, T = D = `period`.
    pub fn periodic(name: impl Into<String>, wcet: Duration, period: Duration) -> Self {
        Self::new(
            name,
            WorkSpec::Periodic(PeriodicSpec {
                wcet,
                period,
                deadline: None,
                min_exec: None,
                jobs: None,
                on_miss: MissAction::Continue,
            }),
        )
    }

    /// A single CPU burst.
    pub fn burst(name: impl Into<String>, length: Duration) -> Self {
        Self::new(name, WorkSpec::Burst { length })
    }

    /// An I/O-bound task: `rounds` x (compute, I/O of `service`), then compute.
    pub fn io(name: impl Into<String>, compute: Duration, service: Duration, rounds: u32) -> Self {
        Self::new(name, WorkSpec::Io { compute, service, rounds })
    }

    /// Sets the first release.
    pub fn at(mut self, arrival: Time) -> Self {
        self.arrival = arrival;
        self
    }

    /// Sets the relative deadline (of a periodic task's jobs, or of a one-shot task).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        match &mut self.workload {
            WorkSpec::Periodic(p) => p.deadline = Some(deadline),
            _ => self.params.deadline = Some(deadline),
        }
        self
    }

    /// Sets the window constraint x/y.
    pub fn window(mut self, x: u32, y: u32) -> Self {
        self.params.window = Window::new(x, y);
        self
    }

    /// Sets the real-time priority (fifo, rr).
    pub fn priority(mut self, priority: u32) -> Self {
        self.params.priority = priority;
        self
    }

    /// Sets the nice value (fair).
    pub fn nice(mut self, nice: i32) -> Self {
        self.params.nice = nice;
        self
    }

    /// Sets a SCHED_DEADLINE reservation (cbs).
    pub fn reservation(mut self, runtime: Duration, deadline: Duration, period: Duration) -> Self {
        self.params.reservation = Some(Reservation { runtime, deadline, period });
        self
    }

    /// Limits a periodic task to `jobs` jobs.
    pub fn jobs(mut self, jobs: u64) -> Self {
        if let WorkSpec::Periodic(p) = &mut self.workload {
            p.jobs = Some(jobs);
        }
        self
    }

    /// Sets what a periodic task's late jobs do.
    pub fn on_miss(mut self, action: MissAction) -> Self {
        if let WorkSpec::Periodic(p) = &mut self.workload {
            p.on_miss = action;
        }
        self
    }

    /// Draws each periodic job's execution time from `min_exec..=wcet`.
    pub fn min_exec(mut self, min_exec: Duration) -> Self {
        if let WorkSpec::Periodic(p) = &mut self.workload {
            p.min_exec = Some(min_exec);
        }
        self
    }

    /// The parameters the policy sees: a periodic workload fills period, deadline and wcet.
    pub fn effective_params(&self) -> SchedParams {
        let mut params = self.params.clone();
        if let WorkSpec::Periodic(p) = &self.workload {
            params.period = Some(p.period);
            params.deadline = Some(p.relative_deadline());
            params.wcet = Some(p.wcet);
        }
        params
    }
}
