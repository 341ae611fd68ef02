//! The per-task summary a worker reports to the engine (serialised as JSON).

use crate::hist::LatencyPercentiles;
use crate::run::{JobRecord, LoopStats};
use hdrhistogram::Histogram;
use schedlab_plan::TaskParams;
use schedlab_policy::{Window, WindowReport};
use serde::{Deserialize, Serialize};

/// What one periodic task did. Times in ns; window terms as in [`schedlab_policy::windows`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    /// The task's parameters.
    pub params: TaskParams,
    /// Jobs released.
    pub jobs: u64,
    /// Jobs that finished by their deadline.
    pub met: u64,
    /// Jobs that did not (including skipped ones).
    pub misses: u64,
    /// Jobs skipped because their deadline passed before they could start.
    pub skipped: u64,
    /// Jobs that started without sleeping because the previous job overran their release.
    pub late_starts: u64,
    /// DWCS fixed windows examined (a partial tail counts).
    pub fixed_windows: u64,
    /// Fixed windows with more than x misses.
    pub fixed_window_violations: u64,
    /// Sliding windows of y deadlines examined.
    pub sliding_windows: u64,
    /// Sliding windows with more than x misses.
    pub sliding_window_violations: u64,
    /// Percentage of elapsed periods during which the last y deadlines held more than x misses.
    pub time_in_violation_pct: f64,
    /// Mean response time (finish - release) of the jobs that ran.
    pub response_mean_ns: f64,
    /// Largest response time.
    pub response_max_ns: u64,
    /// Largest lateness (finish - deadline; negative when every job was early).
    pub lateness_max_ns: Option<i64>,
    /// Mean thread CPU time per job that ran (the measured C).
    pub cpu_mean_ns: f64,
    /// Wake-up latency percentiles.
    pub wakeup_latency: LatencyPercentiles,
    /// Minor page faults in the loop.
    pub minor_faults_in_loop: u64,
    /// Major page faults in the loop.
    pub major_faults_in_loop: u64,
    /// Voluntary context switches in the loop.
    pub voluntary_switches_in_loop: u64,
    /// Involuntary context switches in the loop.
    pub involuntary_switches_in_loop: u64,
    /// Operations of the job body that failed (I/O errors).
    pub body_errors: u64,
}

impl TaskSummary {
    /// Summarises one run: its records, wake-up latency histogram and loop counters.
    pub fn new(
        params: &TaskParams,
        records: &[JobRecord],
        latency: &Histogram<u64>,
        stats: &LoopStats,
        body_errors: u64,
    ) -> Self {
        let windows =
            WindowReport::of(Window::new(params.x, params.y), records.iter().map(|r| !r.met()));
        let ran: Vec<&JobRecord> = records.iter().filter(|r| !r.skipped).collect();
        let mean = |f: &dyn Fn(&JobRecord) -> u64| {
            if ran.is_empty() {
                0.0
            } else {
                ran.iter().map(|r| f(r) as f64).sum::<f64>() / ran.len() as f64
            }
        };
        let met_count = records.iter().filter(|r| r.met()).count() as u64;
        TaskSummary {
            params: *params,
            jobs: records.len() as u64,
            met: met_count,
            misses: records.len() as u64 - met_count,
            skipped: (records.len() - ran.len()) as u64,
            late_starts: ran.iter().filter(|r| !r.slept).count() as u64,
            fixed_windows: windows.fixed.windows,
            fixed_window_violations: windows.fixed.violations,
            sliding_windows: windows.sliding.windows,
            sliding_window_violations: windows.sliding.violations,
            time_in_violation_pct: windows.time_in_violation_pct(),
            response_mean_ns: mean(&|r| r.response_ns().unwrap_or(0)),
            response_max_ns: ran.iter().filter_map(|r| r.response_ns()).max().unwrap_or(0),
            lateness_max_ns: ran.iter().filter_map(|r| r.lateness_ns()).max(),
            cpu_mean_ns: mean(&|r| r.cpu_ns),
            wakeup_latency: LatencyPercentiles::of(latency, stats.latency_overflow),
            minor_faults_in_loop: stats.minor_faults_in_loop,
            major_faults_in_loop: stats.major_faults_in_loop,
            voluntary_switches_in_loop: stats.voluntary_switches_in_loop,
            involuntary_switches_in_loop: stats.involuntary_switches_in_loop,
            body_errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::new_latency_histogram;

    /// Job k of a T = 100 task released at 100 k, starting 5 late and taking `length`.
    fn job(k: u64, length: u64) -> JobRecord {
        let release_ns = 100 * k;
        JobRecord {
            index: k,
            release_ns,
            deadline_ns: release_ns + 100,
            start_ns: release_ns + 5,
            finish_ns: release_ns + 5 + length,
            cpu_ns: length,
            work: 1,
            slept: true,
            skipped: false,
        }
    }

    #[test]
    fn summary_of_a_hand_made_run() {
        let params = TaskParams::new(50, 100).with_window(1, 3);
        // Met, missed (lateness 20), met, skipped, met, missed (lateness 5, started late).
        let skipped = JobRecord { skipped: true, slept: false, cpu_ns: 0, ..job(3, 0) };
        let late = JobRecord { slept: false, ..job(5, 100) };
        let records = [job(0, 50), job(1, 115), job(2, 60), skipped, job(4, 40), late];
        let mut h = new_latency_histogram();
        for _ in 0..4 {
            h.record(5).unwrap();
        }
        let stats =
            LoopStats { minor_faults_in_loop: 2, latency_overflow: 0, ..Default::default() };
        let s = TaskSummary::new(&params, &records, &h, &stats, 0);
        assert_eq!((s.jobs, s.met, s.misses, s.skipped, s.late_starts), (6, 3, 3, 1, 1));
        // met: o x o x o x. Fixed 1/3: [o x o] ok, [x o x] violated.
        assert_eq!((s.fixed_windows, s.fixed_window_violations), (2, 1));
        // Sliding: oxo, xox V, oxo, xox V.
        assert_eq!((s.sliding_windows, s.sliding_window_violations), (4, 2));
        // Trailing windows end at 0..5: o, ox, oxo, xox V, oxo, xox V.
        assert!((s.time_in_violation_pct - 100.0 / 3.0).abs() < 1e-9);
        // Responses (5 + length) of the five jobs that ran: 55, 120, 65, 45, 105.
        assert_eq!(s.response_mean_ns, 78.0);
        assert_eq!(s.response_max_ns, 120);
        assert_eq!(s.lateness_max_ns, Some(20));
        assert_eq!(s.cpu_mean_ns, 73.0);
        assert_eq!((s.wakeup_latency.samples, s.wakeup_latency.p50_ns), (4, 5));
        assert_eq!(s.minor_faults_in_loop, 2);
    }

    #[test]
    fn empty_run_summarises_to_zeros() {
        let s = TaskSummary::new(
            &TaskParams::new(1, 10),
            &[],
            &new_latency_histogram(),
            &LoopStats::default(),
            0,
        );
        assert_eq!((s.jobs, s.misses, s.response_max_ns, s.lateness_max_ns), (0, 0, 0, None));
        assert_eq!(s.time_in_violation_pct, 0.0);
    }

    #[test]
    fn serialised_field_names_describe_themselves() {
        let s = TaskSummary::new(
            &TaskParams::new(50, 100),
            &[job(0, 10)],
            &new_latency_histogram(),
            &LoopStats::default(),
            0,
        );
        let v: serde_json::Value = serde_json::to_value(&s).unwrap();
        for key in [
            "jobs",
            "misses",
            "fixed_window_violations",
            "sliding_window_violations",
            "time_in_violation_pct",
            "wakeup_latency",
            "minor_faults_in_loop",
        ] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        assert!(v["wakeup_latency"].get("p999_ns").is_some());
        let back: TaskSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
