//! Periodic real-time workloads in the plan: the task set, the job body, and the scheduler
//! that runs the set (`scheduler` axis).

use crate::{GenError, GenSpec, TaskParams};
use serde::{Deserialize, Serialize};

/// The program that runs the dispatcher of a `dwcs-scx` or `edf-scx` set with schedlab's own
/// sched_ext scheduler (crates/scx-dwcs), found next to the schedlab binary or on PATH.
pub const SCX_DISPATCHER: &str = "schedlab-scx";

/// How a periodic task set is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtScheduler {
    /// The kernel's fair class (SCHED_OTHER), every task at nice 0.
    Other,
    /// SCHED_FIFO, priorities by period: the shorter, the higher (rate monotonic).
    FifoRm,
    /// SCHED_FIFO, priorities by relative deadline (deadline monotonic).
    FifoDm,
    /// SCHED_DEADLINE with runtime C, deadline D, period T.
    Deadline,
    /// schedlab's live dispatcher driving the EDF policy.
    Edf,
    /// schedlab's live dispatcher driving the DWCS policy.
    Dwcs,
    /// schedlab's dispatcher driving the EDF policy through schedlab's own sched_ext
    /// scheduler (`schedlab-scx`) instead of priorities.
    EdfScx,
    /// schedlab's dispatcher driving the DWCS policy through schedlab's own sched_ext
    /// scheduler (`schedlab-scx`) instead of priorities.
    DwcsScx,
    /// SCHED_FIFO at each task's own `priority` (as rt-app gives it).
    Fifo,
    /// SCHED_RR at each task's own `priority`.
    Rr,
}

impl RtScheduler {
    /// Every scheduler, in the order tables list them.
    pub const ALL: [RtScheduler; 10] = [
        RtScheduler::Other,
        RtScheduler::FifoRm,
        RtScheduler::FifoDm,
        RtScheduler::Deadline,
        RtScheduler::Edf,
        RtScheduler::Dwcs,
        RtScheduler::EdfScx,
        RtScheduler::DwcsScx,
        RtScheduler::Fifo,
        RtScheduler::Rr,
    ];

    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            RtScheduler::Other => "other",
            RtScheduler::FifoRm => "fifo-rm",
            RtScheduler::FifoDm => "fifo-dm",
            RtScheduler::Deadline => "deadline",
            RtScheduler::Edf => "edf",
            RtScheduler::Dwcs => "dwcs",
            RtScheduler::EdfScx => "edf-scx",
            RtScheduler::DwcsScx => "dwcs-scx",
            RtScheduler::Fifo => "fifo",
            RtScheduler::Rr => "rr",
        }
    }

    /// Parses a spec name.
    pub fn parse(s: &str) -> Option<RtScheduler> {
        RtScheduler::ALL.into_iter().find(|x| x.name() == s)
    }

    /// True when schedlab's user-space dispatcher runs the set (by priorities or through
    /// its sched_ext scheduler).
    pub fn dispatched(self) -> bool {
        matches!(
            self,
            RtScheduler::Edf | RtScheduler::Dwcs | RtScheduler::EdfScx | RtScheduler::DwcsScx
        )
    }

    /// True when the dispatcher's choice is carried out by schedlab's own sched_ext
    /// scheduler ([`SCX_DISPATCHER`]).
    pub fn sched_ext(self) -> bool {
        matches!(self, RtScheduler::EdfScx | RtScheduler::DwcsScx)
    }

    /// True when the policy is EDF (else a dispatched set runs DWCS).
    pub fn edf(self) -> bool {
        matches!(self, RtScheduler::Edf | RtScheduler::EdfScx)
    }

    /// True when each task runs at the `priority` the spec gives it.
    pub fn explicit_priorities(self) -> bool {
        matches!(self, RtScheduler::Fifo | RtScheduler::Rr)
    }
}

/// What one job of a periodic task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PeriodicBody {
    /// Burn the job's CPU time (thread CPU-time clock).
    Spin,
    /// In-core FFT passes over a large array (rustfft), calibrated to the job's CPU time.
    Fft,
    /// Read `bytes` of a file made beforehand, 4 KiB at a time, each chunk dropped from the
    /// page cache first so it comes from the device (the seed's I/O-bound load).
    Read {
        /// Bytes per job.
        bytes: u64,
    },
}

impl PeriodicBody {
    /// Whether a job's C is its CPU time (the thread CPU-time clock): spin and FFT jobs work
    /// until they have used it, a read job until its bytes are read.
    pub fn in_cpu_time(&self) -> bool {
        !matches!(self, PeriodicBody::Read { .. })
    }

    /// The spec name.
    pub fn name(&self) -> &'static str {
        match self {
            PeriodicBody::Spin => "spin",
            PeriodicBody::Fft => "fft",
            PeriodicBody::Read { .. } => "read",
        }
    }
}

/// Where the task set came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum TaskSource {
    /// Listed task by task.
    Explicit,
    /// Generated for a utilisation (the `utilisation` axis regenerates it).
    Generated(GenSpec),
    /// A canonical DWCS set: C = the quantum.
    Canonical,
}

/// A periodic task set: one worker process per task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Periodic {
    /// The tasks (for a generated set, drawn at this cell's utilisation).
    pub tasks: Vec<TaskParams>,
    /// How the set was made.
    pub source: TaskSource,
    /// The job body.
    pub body: PeriodicBody,
    /// How long the set runs, ns (the work amount `--scale` multiplies).
    pub duration_ns: u64,
    /// The dispatcher's quantum, ns (edf, dwcs; canonical sets use it as C).
    pub quantum_ns: u64,
    /// The CPU every task (and the dispatcher) is pinned to; None = the last online CPU.
    pub cpu: Option<u32>,
    /// The CPUs the set is partitioned over (`cpus`; empty unless given): each task pinned
    /// to one of them by [`crate::partition`], one dispatcher per CPU.
    #[serde(default)]
    pub cpus: Vec<u32>,
    /// A job's CPU demand as parts per million of C (spin and fft bodies).
    pub work_ppm: u32,
    /// The dispatcher gives the rest of a quantum to the next ready task when a job finishes early.
    pub fill: bool,
    /// Who schedules the set (from the group's `scheduler` setting or axis).
    pub scheduler: RtScheduler,
    /// The utilisation the set was generated for, when a `utilisation` was applied.
    pub utilisation: Option<f64>,
    /// Each listed task's own SCHED_FIFO/SCHED_RR priority, in task order (empty when the
    /// tasks give none); used under the `fifo` and `rr` schedulers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub priorities: Vec<u32>,
    /// Many generated sets per cell (`generate = { sets = N, .. }`); None: the one set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<SetBatch>,
    /// Which set of its batch this cell measures live, for the cells `live = k` adds beside
    /// the batch's own (set 0): sets 1 to k - 1, each a cell `KEY/set=i` of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_set: Option<u32>,
}

/// A generated workload's many sets per cell: set i is generated with its own seed
/// ([`crate::set_seed`] of the generator's seed, i and the cell's utilisation), so every
/// scheduler of a run gets the same sets at a utilisation. The cell's `tasks` are set 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetBatch {
    /// Sets per cell.
    pub sets: u32,
    /// How many of them (the first) `run` measures live; `simulate` runs them all.
    pub live: u32,
    /// Whether each set's per-job records are stored (by default only its totals).
    pub job_records: bool,
    /// Each set simulated over min(duration, hyperperiod) instead of the duration.
    pub hyperperiod: bool,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Highest SCHED_FIFO priority a periodic task gets under fifo-rm / fifo-dm.
pub const RM_TOP_PRIORITY: u32 = 90;

/// SCHED_FIFO priority of the live dispatcher: below the engine (99), above its workers.
pub const DISPATCHER_PRIORITY: u32 = 98;
/// SCHED_FIFO priority of the worker the live dispatcher chose to run.
pub const DISPATCH_RUN_PRIORITY: u32 = 97;
/// The most tasks one dispatched set (one dispatcher's shared region) holds.
pub const DISPATCH_MAX_TASKS: usize = 256;

impl Periodic {
    /// Each task's CPU: partitioned over `cpus` when several are given, else all on `cpus`'s
    /// one CPU, on `cpu`, or on `default_cpu` (the engine's last online CPU). None under
    /// `deadline`: SCHED_DEADLINE tasks run on every CPU. `fifo-rm` and `fifo-dm` sets are
    /// partitioned by their own test ([`Self::rta_placement`]), every other scheduler's by
    /// C/T ([`Self::pinned_placement`]). The engine and the simulator both pin by this.
    pub fn placement(&self, default_cpu: u32) -> Option<Vec<u32>> {
        match self.scheduler {
            RtScheduler::Deadline => None,
            RtScheduler::FifoRm | RtScheduler::FifoDm if self.cpus.len() > 1 => {
                Some(self.rta_placement())
            }
            _ => Some(self.pinned_placement(default_cpu)),
        }
    }

    /// Each task's CPU of `cpus` by RTA admission, as the `ffd-dm` test places them:
    /// first-fit decreasing by density C/min(D, T), a task going to the first CPU where
    /// exact response-time analysis (rate-monotonic under `fifo-rm`, deadline-monotonic
    /// otherwise, no overheads) still accepts the CPU's tasks; a task no CPU accepts goes to
    /// the least dense CPU ([`schedlab_schedulability::place`]).
    pub fn rta_placement(&self) -> Vec<u32> {
        use schedlab_schedulability::{place, response_times, Fit, Size};
        let by = self.rta_priority();
        let fit = place(&self.analysed(), self.cpus.len(), Fit::First, Size::Density, |s| {
            response_times(s, by)
        });
        fit.cpu_of_task.into_iter().map(|b| self.cpus[b]).collect()
    }

    /// The tasks as the schedulability tests take them: (C, T, D) in ns.
    pub fn analysed(&self) -> Vec<schedlab_schedulability::Task> {
        let task = |t: &TaskParams| {
            schedlab_schedulability::Task::new(t.c_ns, t.t_ns).deadline(t.deadline_ns())
        };
        self.tasks.iter().map(task).collect()
    }

    /// The fixed priorities response-time analysis gives the set: rate-monotonic under
    /// `fifo-rm`, deadline-monotonic otherwise.
    pub fn rta_priority(&self) -> schedlab_schedulability::Priority {
        match self.scheduler {
            RtScheduler::FifoRm => schedlab_schedulability::Priority::Rate,
            _ => schedlab_schedulability::Priority::Deadline,
        }
    }

    /// Each task's CPU when the set is pinned, whatever its scheduler (see [`Self::placement`]).
    pub fn pinned_placement(&self, default_cpu: u32) -> Vec<u32> {
        if self.cpus.len() > 1 {
            let bins = crate::partition(&self.tasks, self.cpus.len());
            return bins.into_iter().map(|b| self.cpus[b]).collect();
        }
        let cpu = self.cpus.first().copied().or(self.cpu).unwrap_or(default_cpu);
        vec![cpu; self.tasks.len()]
    }

    /// The cell's real-time record as the engine and the simulator store it, without
    /// dispatcher metrics: scheduler, theory (the DWCS guarantee holds when it holds on every
    /// CPU of `placement`, each task's CPU; a partitioned set keeps each CPU's test), the one
    /// CPU of the set (`u32::MAX` when it is global or partitioned) and the quantum.
    pub fn cell_rt(&self, placement: Option<&[u32]>) -> schedlab_model::CellRt {
        let f = crate::feasibility(&self.tasks);
        // One entry on u32::MAX without a placement, one per CPU with one.
        let per_cpu = self.feasibility_per_cpu(placement);
        let (cpu, cpu_theory) = match per_cpu.as_slice() {
            [(cpu, _, _)] => (*cpu, Vec::new()),
            several => (
                u32::MAX,
                several
                    .iter()
                    .map(|(cpu, _, f)| schedlab_model::CpuTheory {
                        cpu: *cpu,
                        plain_utilisation: f.utilisation,
                        min_utilisation: f.min_utilisation,
                        guaranteed: f.guaranteed,
                    })
                    .collect(),
            ),
        };
        schedlab_model::CellRt {
            scheduler: self.scheduler.name().into(),
            utilisation: self.utilisation,
            min_utilisation: f.min_utilisation,
            plain_utilisation: f.utilisation,
            guaranteed: per_cpu.iter().all(|(_, _, f)| f.guaranteed),
            not_canonical: f.not_canonical_because,
            cpu,
            task_cpus: placement.map(<[u32]>::to_vec).unwrap_or_default(),
            cpu_theory,
            quantum_ns: self.quantum_ns,
            dispatcher: None,
        }
    }

    /// The DWCS feasibility test of each CPU's tasks under `placement` (each task's CPU):
    /// (CPU, its task indices, their test), CPUs ascending; without a placement, the whole
    /// set as one entry on CPU `u32::MAX`.
    pub fn feasibility_per_cpu(
        &self,
        placement: Option<&[u32]>,
    ) -> Vec<(u32, Vec<usize>, crate::Feasibility)> {
        let Some(placement) = placement else {
            return vec![(
                u32::MAX,
                (0..self.tasks.len()).collect(),
                crate::feasibility(&self.tasks),
            )];
        };
        schedlab_model::by_cpu(placement)
            .into_iter()
            .map(|(c, idx)| {
                let tasks: Vec<TaskParams> = idx.iter().map(|&i| self.tasks[i]).collect();
                let f = crate::feasibility(&tasks);
                (c, idx, f)
            })
            .collect()
    }

    /// The CPU work one job of `task` does, ns.
    pub fn work_ns(&self, task: &TaskParams) -> u64 {
        ((task.c_ns as u128 * self.work_ppm as u128) / 1_000_000).max(1) as u64
    }

    /// Jobs task `task` releases in the set's duration (at least one).
    pub fn jobs(&self, task: &TaskParams) -> u64 {
        (self.duration_ns.saturating_sub(task.phase_ns) / task.t_ns).max(1)
    }

    /// The last deadline of the set's jobs, from its start: every task's last job is due by
    /// then ([`Self::jobs`] of each, released every T from its phase).
    pub fn last_deadline_ns(&self) -> u64 {
        self.tasks
            .iter()
            .map(|t| t.phase_ns + (self.jobs(t) - 1) * t.t_ns + t.deadline_ns())
            .max()
            .unwrap_or(0)
    }

    /// SCHED_FIFO priorities for fifo-rm (by period) or fifo-dm (by deadline): the shortest
    /// gets [`RM_TOP_PRIORITY`], each longer distinct value one less (equal values share a
    /// priority), never below 1.
    pub fn fifo_priorities(&self, by_deadline: bool) -> Vec<u32> {
        let key = |t: &TaskParams| if by_deadline { t.deadline_ns() } else { t.t_ns };
        let mut distinct: Vec<u64> = self.tasks.iter().map(key).collect();
        distinct.sort_unstable();
        distinct.dedup();
        self.tasks
            .iter()
            .map(|t| {
                let rank = distinct.binary_search(&key(t)).unwrap_or(0) as u32;
                RM_TOP_PRIORITY.saturating_sub(rank).max(1)
            })
            .collect()
    }

    /// Each task's real-time priority under the set's scheduler: its own under `fifo` and
    /// `rr`, by period or deadline under `fifo-rm` and `fifo-dm`; None for the others.
    pub fn task_priorities(&self) -> Option<Vec<u32>> {
        match self.scheduler {
            RtScheduler::Fifo | RtScheduler::Rr => Some(self.priorities.clone()),
            RtScheduler::FifoRm => Some(self.fifo_priorities(false)),
            RtScheduler::FifoDm => Some(self.fifo_priorities(true)),
            _ => None,
        }
    }

    /// Sum of runtime/period over the set: what SCHED_DEADLINE admission adds up.
    pub fn deadline_bandwidth(&self) -> f64 {
        self.tasks.iter().map(|t| t.c_ns as f64 / t.t_ns as f64).sum()
    }

    /// How many sets the cell holds: its batch's, else one.
    pub fn set_count(&self) -> u32 {
        self.batch.map_or(1, |b| b.sets)
    }

    /// Set `index` of a batch: its seed and tasks, the rest of the workload as it is (the
    /// duration cut to the hyperperiod when the batch asks). None unless the set is generated
    /// with a batch.
    pub fn nth_set(&self, index: u32) -> Option<Result<(u64, Periodic), GenError>> {
        let (TaskSource::Generated(spec), Some(batch)) = (&self.source, self.batch) else {
            return None;
        };
        let seed = crate::set_seed(spec.seed, index, spec.utilisation);
        let spec = GenSpec { seed, ..spec.clone() };
        Some(spec.generate().map(|tasks| {
            let mut p = Periodic { tasks, ..self.clone() };
            if batch.hyperperiod {
                if let Some(h) = p.hyperperiod_ns() {
                    let longest = p.tasks.iter().map(|t| t.t_ns + t.phase_ns).max().unwrap_or(1);
                    p.duration_ns = p.duration_ns.min(h.max(longest));
                }
            }
            (seed, p)
        }))
    }

    /// The index of the batch's set this cell's tasks are: 0 for a batch's own cell, i for
    /// the cell of its live set i; None for a set without a batch.
    pub fn set_index(&self) -> Option<u32> {
        self.live_set.or(self.batch.map(|_| 0))
    }

    /// The cells `run` measures of a batch beside its own (set 0): sets 1 to `live` - 1,
    /// each with its tasks and no batch of its own (`simulate` simulates each as the one
    /// set it is, so the measured and the simulated cell of one set share a key).
    pub fn live_sets(&self) -> Vec<Result<Periodic, GenError>> {
        let live = self.batch.map_or(1, |b| b.live);
        (1..live)
            .filter_map(|i| {
                self.nth_set(i)
                    .map(|r| r.map(|(_, p)| Periodic { batch: None, live_set: Some(i), ..p }))
            })
            .collect()
    }

    /// The least common multiple of the periods, None when it overflows 64 bits.
    pub fn hyperperiod_ns(&self) -> Option<u64> {
        self.tasks.iter().try_fold(1u64, |h, t| {
            let g = gcd(h, t.t_ns);
            (h / g).checked_mul(t.t_ns)
        })
    }

    /// The set with its duration multiplied by `factor`: at least one period of its longest task.
    pub fn scaled(&self, factor: f64) -> Periodic {
        let longest = self.tasks.iter().map(|t| t.t_ns + t.phase_ns).max().unwrap_or(1);
        let d = ((self.duration_ns as f64 * factor).round() as u64).max(longest);
        Periodic { duration_ns: d, ..self.clone() }
    }
}
