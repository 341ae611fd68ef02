//! The plain result structs, and the counters that fill them.

use serde::{Deserialize, Serialize};

use schedlab_policy::{Duration, TaskId, Time, Window};

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

/// Windows of y consecutive deadlines that held more than x misses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WindowViolations {
    /// Counted over back-to-back windows: deadlines 1..y, y+1..2y, and so on.
    pub fixed: u64,
    /// Counted over every window of y consecutive deadlines.
    pub sliding: u64,
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
    /// Jobs released.
    pub released: u64,
    /// Jobs completed.
    pub jobs: u64,
    /// Jobs that finished after their deadline, were dropped, or were unfinished at a deadline before the end.
    pub deadline_misses: u64,
    /// Jobs dropped at their deadline ([`MissAction::Drop`](crate::MissAction)) or skipped ([`MissAction::Skip`](crate::MissAction)).
    pub dropped: u64,
    /// Window-constraint violations against the task's x/y (0/0 counts every miss).
    pub window_violations: WindowViolations,
    /// Deadlines judged, met or missed: the sequence the windows are cut from.
    #[serde(default)]
    pub deadlines: u64,
    /// Deadlines at which the last y deadlines (fewer before the y-th) held more than x
    /// misses: the periods the task spent in violation.
    #[serde(default)]
    pub periods_in_violation: u64,
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

/// Streams job outcomes into fixed and sliding window-violation counts.
#[derive(Debug, Clone)]
pub(crate) struct WindowCounter {
    x: u32,
    y: usize,
    ring: Vec<bool>,
    pos: usize,
    filled: usize,
    ring_misses: u32,
    block_len: usize,
    block_misses: u32,
    pub(crate) counts: WindowViolations,
    pub(crate) judged: u64,
    pub(crate) in_violation: u64,
}

impl WindowCounter {
    /// A 0/0 window tolerates nothing, which is the same as 0 of every 1.
    pub(crate) fn new(w: Window) -> Self {
        let (x, y) = if w.y == 0 { (0, 1) } else { (w.x, w.y as usize) };
        Self {
            x,
            y,
            ring: vec![false; y],
            pos: 0,
            filled: 0,
            ring_misses: 0,
            block_len: 0,
            block_misses: 0,
            counts: WindowViolations::default(),
            judged: 0,
            in_violation: 0,
        }
    }

    pub(crate) fn push(&mut self, missed: bool) {
        self.block_len += 1;
        self.block_misses += u32::from(missed);
        if self.block_len == self.y {
            if self.block_misses > self.x {
                self.counts.fixed += 1;
            }
            self.block_len = 0;
            self.block_misses = 0;
        }
        if self.filled == self.y {
            self.ring_misses -= u32::from(self.ring[self.pos]);
        } else {
            self.filled += 1;
        }
        self.ring[self.pos] = missed;
        self.ring_misses += u32::from(missed);
        self.pos = (self.pos + 1) % self.y;
        self.judged += 1;
        if self.ring_misses > self.x {
            self.in_violation += 1;
            if self.filled == self.y {
                self.counts.sliding += 1;
            }
        }
    }

    /// Counts a last, incomplete window that already holds more than x misses.
    pub(crate) fn finish(&mut self) {
        if self.block_len > 0 && self.block_misses > self.x {
            self.counts.fixed += 1;
        }
        if self.filled < self.y && self.ring_misses > self.x {
            self.counts.sliding += 1;
        }
    }
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
    pub(crate) fn push(&mut self, r: Duration, keep: bool) {
        self.count += 1;
        self.sum += u128::from(r);
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        self.max = Some(self.max.map_or(r, |m| m.max(r)));
        if keep {
            self.all.push(r);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn count(w: Window, outcomes: &str) -> WindowViolations {
        let mut c = WindowCounter::new(w);
        for ch in outcomes.chars() {
            c.push(ch == 'M');
        }
        c.finish();
        c.counts
    }

    #[test]
    fn deadlines_in_violation_count_partial_windows_at_the_start() {
        // 1/2: trailing windows M, MM (violated), M., .M, MM (violated).
        let mut c = WindowCounter::new(Window::new(1, 2));
        for ch in "MM.MM".chars() {
            c.push(ch == 'M');
        }
        assert_eq!((c.judged, c.in_violation), (5, 2));
        // 0/0 counts every miss.
        let mut c = WindowCounter::new(Window::HARD);
        for ch in ".M.M".chars() {
            c.push(ch == 'M');
        }
        assert_eq!((c.judged, c.in_violation), (4, 2));
    }

    #[test]
    fn fixed_and_sliding_windows() {
        let w = Window::new(1, 2);
        // Windows [.M][M.] are fine; sliding [MM] in the middle is not.
        assert_eq!(count(w, ".MM."), WindowViolations { fixed: 0, sliding: 1 });
        assert_eq!(count(w, "MM.."), WindowViolations { fixed: 1, sliding: 1 });
        // A hard window counts every miss.
        assert_eq!(count(Window::HARD, ".M.M"), WindowViolations { fixed: 2, sliding: 2 });
        // An incomplete last window with too many misses counts.
        assert_eq!(count(Window::new(1, 4), "MM").fixed, 1);
        assert_eq!(count(Window::new(1, 4), "MM").sliding, 1);
        assert_eq!(count(Window::new(1, 4), "M").sliding, 0);
    }
}
