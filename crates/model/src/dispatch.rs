//! The live dispatcher's records: its self-describing metrics (one file per CPU the engine
//! reads back) and what each of its workers reports.

use schedlab_policy::{Window, WindowCounts, WindowReport};
use serde::{Deserialize, Serialize};

/// Identifies the metrics layout in serialised output.
pub const METRICS_SCHEMA: &str = "schedlab.dispatch.metrics/1";

/// A latency distribution, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Number of samples.
    pub samples: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Maximum, ns.
    pub max_ns: u64,
    /// Mean, ns.
    pub mean_ns: f64,
}

impl Latency {
    /// The distribution of a histogram of ns values.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            samples: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
            mean_ns: h.mean(),
        }
    }
}

/// Why a worker stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerExit {
    /// The dispatcher finished and told its workers to exit.
    Shutdown,
    /// The dispatcher died without finishing; the worker demoted itself.
    DispatcherGone,
}

/// What a worker did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// Jobs finished.
    pub jobs_done: u64,
    /// Jobs abandoned because the dispatcher dropped them.
    pub jobs_abandoned: u64,
    /// Why it stopped.
    pub exit: WorkerExit,
    /// Hand-off latency: from the dispatcher giving this worker the CPU (raising it and
    /// setting its run bit) to the worker running, once per grant.
    pub handoff: Latency,
    /// The hand-off latencies as a histogram (`schedlab_model::hist` encoding).
    pub handoff_hist: String,
}

/// The DWCS policy's own view of a task at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyView {
    /// Current window numerator x'.
    pub x_cur: u32,
    /// Current window denominator y'.
    pub y_cur: u32,
    /// Violation tag.
    pub tagged: bool,
    /// Deadlines the policy counted as serviced.
    pub serviced: u64,
    /// Deadlines the policy counted as missed.
    pub missed: u64,
    /// Misses the policy counted as violations (x' was 0).
    pub violations: u64,
}

/// Per-task figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskMetrics {
    /// Slot index (the task id the policy knows).
    pub slot: usize,
    /// Worker process id.
    pub pid: i32,
    /// Service per period C, ns.
    pub c_ns: u64,
    /// Period T, ns.
    pub t_ns: u64,
    /// Relative deadline D, ns.
    pub d_ns: u64,
    /// Window x/y.
    pub window: Window,
    /// Jobs released.
    pub released: u64,
    /// Jobs finished by their deadline.
    pub completed: u64,
    /// Jobs that missed their deadline (dropped unfinished, or finished late).
    pub missed: u64,
    /// Of the misses, jobs the worker finished after the deadline but before the dispatcher dropped them.
    pub late_completions: u64,
    /// Times the task was given the CPU.
    pub dispatches: u64,
    /// Sliding windows (y consecutive deadlines) judged.
    pub windows: u64,
    /// Sliding windows with more than x misses.
    pub window_violations: u64,
    /// Fixed, back-to-back windows of y deadlines judged.
    pub fixed_windows: u64,
    /// Fixed windows with more than x misses.
    pub fixed_window_violations: u64,
    /// Deadlines whose trailing window (the last y, fewer at the start) held more than x misses.
    #[serde(default)]
    pub periods_in_violation: u64,
    /// The DWCS policy's view (None under EDF).
    pub policy: Option<PolicyView>,
    /// Whether the worker disappeared during the run.
    pub exited: bool,
}

impl TaskMetrics {
    /// The window counts as [`schedlab_policy::WindowCounter`] reported them.
    pub fn windows(&self) -> WindowReport {
        WindowReport {
            fixed: WindowCounts {
                windows: self.fixed_windows,
                violations: self.fixed_window_violations,
            },
            sliding: WindowCounts { windows: self.windows, violations: self.window_violations },
            deadlines: self.completed + self.missed,
            periods_in_violation: self.periods_in_violation,
        }
    }
}

/// What a dispatcher run measured. Every field is described in [`Metrics::describe`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// [`METRICS_SCHEMA`].
    pub schema: String,
    /// Policy name.
    pub policy: String,
    /// CPU of the dispatcher and its workers.
    pub cpu: u32,
    /// Quantum, ns.
    pub quantum_ns: u64,
    /// CLOCK_MONOTONIC time of the first boundary, ns.
    pub start_ns: u64,
    /// Time from the start to the last decision, ns.
    pub elapsed_ns: u64,
    /// Quantum boundaries processed.
    pub ticks: u64,
    /// Decisions made: boundaries plus completion wake-ups.
    pub decisions: u64,
    /// Decisions at a completion wake-up (a job finished inside a quantum).
    pub completion_wakeups: u64,
    /// Changes of the task at the RUN priority.
    pub switches: u64,
    /// Dispatch latency: how late the dispatcher woke at each quantum boundary.
    pub dispatch_latency: Latency,
    /// Time the dispatcher spent per decision, from wake-up to going back to sleep.
    pub decision_cost: Latency,
    /// Boundaries the dispatcher woke for more than one quantum late.
    pub overruns: u64,
    /// Boundaries skipped entirely because the dispatcher woke so late.
    pub skipped_ticks: u64,
    /// Minor page faults of the dispatcher thread inside its loop (0 when memory is locked and prefaulted).
    pub minor_faults: u64,
    /// Major page faults of the dispatcher thread inside its loop.
    pub major_faults: u64,
    /// Scheduling-class changes of workers that failed (worker gone, ...).
    pub control_errors: u64,
    /// Jobs a worker finished while it was not the chosen task (a race at a switch).
    pub offcpu_completions: u64,
    /// Per-task figures.
    pub tasks: Vec<TaskMetrics>,
    /// Per task, its per-job records: release, first dispatch, completion, met.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_logs: Vec<crate::jobs::JobLog>,
}

impl Metrics {
    /// Each serialised field of [`Metrics`] with its unit and meaning.
    pub fn describe() -> &'static [(&'static str, &'static str)] {
        &[
            ("schema", "layout identifier of this record"),
            ("policy", "policy the dispatcher ran (edf, dwcs)"),
            ("cpu", "CPU of the dispatcher and its workers"),
            ("quantum_ns", "quantum length, ns"),
            ("start_ns", "CLOCK_MONOTONIC time of the first quantum boundary, ns"),
            ("elapsed_ns", "time from the start to the last decision, ns"),
            ("ticks", "quantum boundaries processed"),
            ("decisions", "decisions made: boundaries plus completion wake-ups"),
            ("completion_wakeups", "decisions made because a job finished inside a quantum"),
            ("switches", "changes of the worker at the RUN priority"),
            ("dispatch_latency", "wake-up lateness of the dispatcher at quantum boundaries: samples, p50/p99/max/mean in ns"),
            ("decision_cost", "dispatcher time per decision, wake-up to sleep: samples, p50/p99/max/mean in ns"),
            ("overruns", "boundaries the dispatcher woke for more than a quantum late"),
            ("skipped_ticks", "boundaries skipped because the dispatcher woke so late"),
            ("minor_faults", "minor page faults of the dispatcher thread inside its loop (must be 0)"),
            ("major_faults", "major page faults of the dispatcher thread inside its loop (must be 0)"),
            ("control_errors", "failed scheduling-class changes of workers"),
            ("offcpu_completions", "jobs finished by a worker that was not the chosen one (switch race)"),
            ("tasks", "per task: parameters, released/completed/missed jobs, dispatches, sliding and fixed window violations, DWCS view"),
            (
                "job_logs",
                "per task: every job's release, first dispatch (ns after release), completion and whether it met its deadline; encoded",
            ),
        ]
    }

    /// Jobs missed over all tasks.
    pub fn total_missed(&self) -> u64 {
        self.tasks.iter().map(|t| t.missed).sum()
    }

    /// Jobs released over all tasks.
    pub fn total_released(&self) -> u64 {
        self.tasks.iter().map(|t| t.released).sum()
    }

    /// Sliding windows judged over all tasks.
    pub fn total_windows(&self) -> u64 {
        self.tasks.iter().map(|t| t.windows).sum()
    }

    /// Sliding-window violations over all tasks.
    pub fn total_window_violations(&self) -> u64 {
        self.tasks.iter().map(|t| t.window_violations).sum()
    }

    /// Violated sliding windows as a fraction of all judged (0 when none was judged).
    pub fn violation_ratio(&self) -> f64 {
        let w = self.total_windows();
        if w == 0 {
            0.0
        } else {
            self.total_window_violations() as f64 / w as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_carries_the_whole_window_report() {
        // 1/3 over o x x o x x o: trailing windows o, ox, then oxx, xxo, xox, oxx, xxo, all
        // violated: five of seven periods in violation.
        let window = Window::new(1, 3);
        let missed = [false, true, true, false, true, true, false];
        let mut c = schedlab_policy::WindowCounter::new(window);
        missed.iter().for_each(|&m| c.push(m));
        let r = c.report();
        let t = TaskMetrics {
            slot: 0,
            pid: 1,
            c_ns: 1,
            t_ns: 10,
            d_ns: 10,
            window,
            released: 8,
            completed: 3,
            missed: 4,
            late_completions: 0,
            dispatches: 3,
            windows: r.sliding.windows,
            window_violations: r.sliding.violations,
            fixed_windows: r.fixed.windows,
            fixed_window_violations: r.fixed.violations,
            periods_in_violation: r.periods_in_violation,
            policy: None,
            exited: false,
        };
        assert_eq!(t.windows(), r);
        // Judged over the 7 deadlines, not the 8 released jobs (the last was unfinished).
        assert!((t.windows().time_in_violation_pct() - 500.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn every_metrics_field_is_described() {
        let m = Metrics {
            schema: METRICS_SCHEMA.into(),
            policy: "edf".into(),
            cpu: 0,
            quantum_ns: 1,
            start_ns: 0,
            elapsed_ns: 0,
            ticks: 0,
            decisions: 0,
            completion_wakeups: 0,
            switches: 0,
            dispatch_latency: Latency::default(),
            decision_cost: Latency::default(),
            overruns: 0,
            skipped_ticks: 0,
            minor_faults: 0,
            major_faults: 0,
            control_errors: 0,
            offcpu_completions: 0,
            tasks: vec![],
            job_logs: vec![Default::default()],
        };
        let v = serde_json::to_value(&m).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        let described: Vec<&str> = Metrics::describe().iter().map(|d| d.0).collect();
        assert_eq!(keys.len(), described.len());
        for k in keys {
            assert!(described.contains(&k.as_str()), "{k} has no description");
        }
    }
}
