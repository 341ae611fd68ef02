//! The plain result structs, and the response-time accumulator that fills them.

use serde::{Deserialize, Serialize};

use schedlab_policy::{Duration, TaskId, Time, WindowReport};

/// One stretch of time a task ran on a CPU, for Gantt charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    /// The CPU.
    pub cpu: usize,
    /// The task's index in the input.
    pub task: TaskId,
    /// When the task started making progress (after any switch or migration cost).
    pub start: Time,
    /// When it stopped.
    pub end: Time,
    /// Why it stopped (None: the run ended with it on the CPU, or it went on without a switch).
    #[serde(default)]
    pub stop: Option<schedlab_policy::Stop>,
}

/// Response times (completion - release) of a task's completed jobs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResponseStats {
    /// Number of completed jobs measured.
    pub count: u64,
    /// Shortest response time.
    pub min: Option<Duration>,
    /// Mean response time in ns.
    pub mean: Option<f64>,
    /// Longest response time.
    pub max: Option<Duration>,
    /// Every response time in job order, when [`Record::responses`](crate::Record) is on.
    pub all: Vec<Duration>,
}

/// What happened to one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task's name.
    pub name: String,
    /// Release of its first job, if it arrived before the end.
    pub release: Option<Time>,
    /// When it first made progress on a CPU (after any switch or migration cost).
    pub started: Option<Time>,
    /// The CPU it last ran on.
    pub last_cpu: Option<usize>,
    /// When its last completed job (or its whole workload) finished.
    pub completion: Option<Time>,
    /// When it finished all its work: its last job completed, was dropped or was skipped
    /// (for a one-shot workload, its completion); None while unfinished.
    #[serde(default)]
    pub ended: Option<Time>,
    /// completion - release.
    pub wall: Option<Duration>,
    /// Whether it finished all its work.
    pub finished: bool,
    /// Time it spent making progress on a CPU.
    pub cpu_time: Duration,
    /// Involuntary switches: it was taken off its CPU while still ready (preempted, quantum or budget used up).
    pub preemptions: u64,
    /// Voluntary switches: it blocked on I/O or slept until its next job.
    pub blocks: u64,
    /// Dispatches on a CPU other than the one it last ran on.
    pub migrations: u64,
    /// Time ready but not running (waiting for a CPU): the kernel's run_delay.
    #[serde(default)]
    pub runnable: Duration,
    /// Times it was given a CPU: the kernel's timeslices (schedstat's pcount).
    #[serde(default)]
    pub dispatches: u64,
    /// Jobs released.
    pub released: u64,
    /// Jobs completed.
    pub jobs: u64,
    /// Jobs that finished after their deadline, were dropped, or were unfinished at a deadline before the end.
    pub deadline_misses: u64,
    /// Jobs dropped at their deadline ([`MissAction::Drop`](crate::MissAction)) or skipped ([`MissAction::Skip`](crate::MissAction)).
    pub dropped: u64,
    /// Its deadlines judged against its x/y (0/0 counts every miss): fixed and sliding
    /// windows, deadlines judged, periods in violation. The live runs use the same counter.
    pub windows: WindowReport,
    /// Response times of completed jobs.
    pub response: ResponseStats,
    /// A periodic task's jobs in release order, when [`Record::responses`](crate::Record) is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_log: Vec<JobOutcome>,
}

/// One job of a periodic task as simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobOutcome {
    /// Release.
    pub release: Time,
    /// When it first made progress on a CPU (None: it never ran).
    pub start: Option<Time>,
    /// When it completed (None: dropped, skipped, or unfinished at the end).
    pub finish: Option<Time>,
    /// Completed by its deadline (a job without a deadline: completed).
    pub met: bool,
}

/// What happened to one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuResult {
    /// Time spent running tasks.
    pub busy: Duration,
    /// Time spent on switch and migration costs.
    pub overhead: Duration,
    /// Dispatches of a task other than the last one this CPU ran.
    pub switches: u64,
    /// Time spent in interrupt handlers (ticks and releases, `Costs`).
    #[serde(default)]
    pub interrupts: Duration,
}

/// Everything a simulation produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimResult {
    /// The policy's name.
    pub policy: String,
    /// When the simulation stopped (the horizon, or the last event).
    pub end: Time,
    /// Events handled.
    pub events: u64,
    /// Per task, in input order.
    pub tasks: Vec<TaskResult>,
    /// Per CPU.
    pub cpus: Vec<CpuResult>,
    /// Execution slices ordered by start time, then CPU (empty unless recording the trace).
    pub trace: Vec<Slice>,
}

impl SimResult {
    /// Jobs completed by all tasks.
    pub fn total_jobs(&self) -> u64 {
        self.tasks.iter().map(|t| t.jobs).sum()
    }

    /// Deadline misses of all tasks.
    pub fn total_misses(&self) -> u64 {
        self.tasks.iter().map(|t| t.deadline_misses).sum()
    }

    /// The trace of one task, in time order.
    pub fn slices_of(&self, task: TaskId) -> Vec<(usize, Time, Time)> {
        self.trace.iter().filter(|s| s.task == task).map(|s| (s.cpu, s.start, s.end)).collect()
    }
}

/// Where a [`ResponseAcc`] stood.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResponseMark {
    count: u64,
    sum: u128,
    kept: usize,
}

/// Running min/sum/max of response times.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResponseAcc {
    count: u64,
    sum: u128,
    min: Option<Duration>,
    max: Option<Duration>,
    all: Vec<Duration>,
}

impl ResponseAcc {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self { all: Vec::with_capacity(n), ..Self::default() }
    }

    pub(crate) fn push(&mut self, r: Duration, keep: bool) {
        self.count += 1;
        self.sum += u128::from(r);
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        self.max = Some(self.max.map_or(r, |m| m.max(r)));
        if keep {
            self.all.push(r);
        }
    }

    /// How far the accumulator has come, for [`repeat`](Self::repeat).
    pub(crate) fn mark(&self) -> ResponseMark {
        ResponseMark { count: self.count, sum: self.sum, kept: self.all.len() }
    }

    /// Pushes again, `k` times over, every response since `m` (min and max stay as they are).
    pub(crate) fn repeat(&mut self, m: ResponseMark, k: u64) {
        self.count += k * (self.count - m.count);
        self.sum += u128::from(k) * (self.sum - m.sum);
        let n = self.all.len();
        self.all.reserve((n - m.kept) * k as usize);
        for _ in 0..k {
            self.all.extend_from_within(m.kept..n);
        }
    }

    pub(crate) fn into_stats(self) -> ResponseStats {
        ResponseStats {
            count: self.count,
            min: self.min,
            mean: (self.count > 0).then(|| self.sum as f64 / self.count as f64),
            max: self.max,
            all: self.all,
        }
    }
}
