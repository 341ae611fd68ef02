//! What one periodic task did in a cell repetition ([`RtTask`]), the one constructor every
//! path that runs a task set shares (the engine's worker-timed and dispatched tasks, the
//! simulator), and the table of its export columns ([`RtTask::EXPORT`]).

use crate::hist::{self, Histogram};
use crate::LatencySummary;
use serde::{Deserialize, Serialize};

/// What one periodic task did in a cell repetition (a worker sample's `extra.rt`).
/// Times in ns; windows as in DWCS: fixed back-to-back windows of y deadlines, and sliding
/// windows of y consecutive deadlines, violated when more than x of them were missed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RtTask {
    /// Request length C.
    pub c_ns: u64,
    /// Period T.
    pub t_ns: u64,
    /// Relative deadline D.
    pub d_ns: u64,
    /// Window numerator x.
    pub x: u32,
    /// Window denominator y.
    pub y: u32,
    /// Jobs released.
    pub jobs: u64,
    /// Jobs that finished by their deadline.
    pub met: u64,
    /// Jobs that did not.
    pub misses: u64,
    /// Fixed windows judged.
    pub fixed_windows: u64,
    /// Fixed windows violated.
    pub fixed_violations: u64,
    /// Sliding windows judged.
    pub sliding_windows: u64,
    /// Sliding windows violated.
    pub sliding_violations: u64,
    /// Percentage of periods during which the last y deadlines held more than x misses.
    pub time_in_violation_pct: f64,
    /// Mean response time (finish - release) of the jobs that ran.
    pub response_mean_ns: Option<f64>,
    /// Largest response time.
    pub response_max_ns: Option<u64>,
    /// Largest lateness (finish - deadline).
    pub lateness_max_ns: Option<i64>,
    /// Mean CPU time per job.
    pub cpu_mean_ns: Option<f64>,
    /// Wake-up latency (actual minus planned release), when the task timed its own releases.
    pub wakeup: Option<LatencySummary>,
    /// The wake-up latency histogram ([`crate::hist::encode`]), mergeable across tasks and repetitions.
    pub wakeup_hist: Option<String>,
    /// Under the live dispatcher: hand-off latency, from the dispatcher giving the task the
    /// CPU to the task running (the dispatched counterpart of the wake-up latency).
    #[serde(default)]
    pub handoff: Option<LatencySummary>,
    /// The hand-off latency histogram ([`crate::hist::encode`]).
    #[serde(default)]
    pub handoff_hist: Option<String>,
    /// Who counted: "worker" (the task's own clock) or "dispatcher" (the live dispatcher's tally).
    pub source: String,
}

/// A periodic task's parameters: request C, period T, deadline D, window x/y.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtParams {
    /// Request length C, ns.
    pub c_ns: u64,
    /// Period T, ns.
    pub t_ns: u64,
    /// Relative deadline D, ns.
    pub d_ns: u64,
    /// Window numerator x.
    pub x: u32,
    /// Window denominator y.
    pub y: u32,
}

/// What a task's jobs and windows came to, whoever counted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtTally {
    /// Jobs released.
    pub jobs: u64,
    /// Jobs that finished by their deadline.
    pub met: u64,
    /// Jobs that did not.
    pub misses: u64,
    /// Fixed windows judged.
    pub fixed_windows: u64,
    /// Fixed windows violated.
    pub fixed_violations: u64,
    /// Sliding windows judged.
    pub sliding_windows: u64,
    /// Sliding windows violated.
    pub sliding_violations: u64,
    /// Percentage of periods in violation.
    pub time_in_violation_pct: f64,
}

/// A task's response and CPU times, where whoever counted timed them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtTimes {
    /// Mean response time, ns.
    pub response_mean_ns: Option<f64>,
    /// Largest response time, ns.
    pub response_max_ns: Option<u64>,
    /// Largest lateness, ns.
    pub lateness_max_ns: Option<i64>,
    /// Mean CPU time per job, ns.
    pub cpu_mean_ns: Option<f64>,
}

impl RtTask {
    /// A task's record from who counted (`worker`, `dispatcher` or `sim`), its parameters and
    /// its tally; the figures not every counter has are added by the `with_` methods.
    pub fn new(source: &str, p: RtParams, t: RtTally) -> RtTask {
        RtTask {
            c_ns: p.c_ns,
            t_ns: p.t_ns,
            d_ns: p.d_ns,
            x: p.x,
            y: p.y,
            jobs: t.jobs,
            met: t.met,
            misses: t.misses,
            fixed_windows: t.fixed_windows,
            fixed_violations: t.fixed_violations,
            sliding_windows: t.sliding_windows,
            sliding_violations: t.sliding_violations,
            time_in_violation_pct: t.time_in_violation_pct,
            source: source.into(),
            ..Default::default()
        }
    }

    /// With its response and CPU times.
    pub fn with_times(self, t: RtTimes) -> RtTask {
        RtTask {
            response_mean_ns: t.response_mean_ns,
            response_max_ns: t.response_max_ns,
            lateness_max_ns: t.lateness_max_ns,
            cpu_mean_ns: t.cpu_mean_ns,
            ..self
        }
    }

    /// With the wake-up latencies the task timed itself.
    pub fn with_wakeups(self, h: &Histogram<u64>) -> RtTask {
        RtTask { wakeup: Some(hist::summary(h)), wakeup_hist: Some(hist::encode(h)), ..self }
    }

    /// With the hand-off latencies its worker timed under the live dispatcher (an encoded
    /// histogram; None or empty: none timed).
    pub fn with_handoffs(self, encoded: Option<&str>) -> RtTask {
        let encoded = encoded.filter(|h| !h.is_empty());
        RtTask {
            handoff: encoded.and_then(hist::decode).map(|h| hist::summary(&h)),
            handoff_hist: encoded.map(str::to_string),
            ..self
        }
    }
}

/// A number in an export column: a count or a real.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RtNumber {
    /// A count.
    Count(u64),
    /// A real number.
    Real(f64),
}

/// One export column of a task's record: `rt_<name>` in every flat row, empty where the
/// task has no value (or the process ran no periodic task).
pub struct RtColumn {
    /// The name, after `rt_`.
    pub name: &'static str,
    /// Reads it.
    pub get: fn(&RtTask) -> Option<RtNumber>,
}

/// Nanoseconds as microseconds.
fn us(ns: f64) -> RtNumber {
    RtNumber::Real(ns / 1e3)
}

impl RtTask {
    /// The task's export columns, in export order (new ones go at the end, so that no older
    /// column moves).
    pub const EXPORT: &'static [RtColumn] = &[
        RtColumn { name: "jobs", get: |t| Some(RtNumber::Count(t.jobs)) },
        RtColumn { name: "met", get: |t| Some(RtNumber::Count(t.met)) },
        RtColumn { name: "misses", get: |t| Some(RtNumber::Count(t.misses)) },
        RtColumn { name: "fixed_violations", get: |t| Some(RtNumber::Count(t.fixed_violations)) },
        RtColumn {
            name: "sliding_violations",
            get: |t| Some(RtNumber::Count(t.sliding_violations)),
        },
        RtColumn {
            name: "time_in_violation_pct",
            get: |t| Some(RtNumber::Real(t.time_in_violation_pct)),
        },
        RtColumn { name: "wakeup_p50_us", get: |t| t.wakeup.map(|x| us(x.p50)) },
        RtColumn { name: "wakeup_p99_us", get: |t| t.wakeup.map(|x| us(x.p99)) },
        RtColumn { name: "handoff_p50_us", get: |t| t.handoff.map(|x| us(x.p50)) },
        RtColumn { name: "handoff_p99_us", get: |t| t.handoff.map(|x| us(x.p99)) },
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally() -> RtTally {
        RtTally {
            jobs: 10,
            met: 8,
            misses: 2,
            fixed_windows: 5,
            fixed_violations: 1,
            sliding_windows: 9,
            sliding_violations: 2,
            time_in_violation_pct: 20.0,
        }
    }

    #[test]
    fn new_fills_the_parameters_and_tally_and_nothing_else() {
        let p = RtParams { c_ns: 1, t_ns: 10, d_ns: 9, x: 1, y: 2 };
        let t = RtTask::new("sim", p, tally());
        assert_eq!((t.c_ns, t.t_ns, t.d_ns, t.x, t.y), (1, 10, 9, 1, 2));
        assert_eq!(
            (t.jobs, t.met, t.misses, t.fixed_violations, t.sliding_windows),
            (10, 8, 2, 1, 9)
        );
        assert_eq!(t.source, "sim");
        assert_eq!((t.response_mean_ns, t.wakeup, t.handoff_hist), (None, None, None));
    }

    #[test]
    fn the_with_methods_add_their_figures() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in [1000, 2000, 3000] {
            h.record(v).unwrap();
        }
        let t = RtTask::new("worker", RtParams::default(), tally())
            .with_times(RtTimes { response_max_ns: Some(7), ..Default::default() })
            .with_wakeups(&h);
        assert_eq!(t.response_max_ns, Some(7));
        assert_eq!(t.wakeup.map(|w| w.count), Some(3));
        assert_eq!(t.wakeup_hist.as_deref().and_then(hist::decode).map(|h| h.len()), Some(3));
        let encoded = hist::encode(&h);
        let d =
            RtTask::new("dispatcher", RtParams::default(), tally()).with_handoffs(Some(&encoded));
        assert_eq!(
            (d.handoff.map(|x| x.count), d.handoff_hist.as_deref()),
            (Some(3), Some(encoded.as_str()))
        );
        assert_eq!(
            RtTask::default().with_handoffs(Some("")),
            RtTask::default(),
            "an empty histogram is none"
        );
    }

    #[test]
    fn export_columns_are_unique_and_read_their_field() {
        let mut names: Vec<&str> = RtTask::EXPORT.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RtTask::EXPORT.len());
        let t = RtTask::new("sim", RtParams::default(), tally());
        let get = |n: &str| (RtTask::EXPORT.iter().find(|c| c.name == n).unwrap().get)(&t);
        assert_eq!(
            (get("misses"), get("time_in_violation_pct"), get("wakeup_p50_us")),
            (Some(RtNumber::Count(2)), Some(RtNumber::Real(20.0)), None)
        );
    }

    /// docs/ADDING-A-FIGURE.md's per-task example, compiled: its column as written there, at
    /// the end of a list like `RtTask::EXPORT` (the doc quotes this source;
    /// `adding_a_figure_quotes_code_that_compiles` checks that it still does).
    const WITH_LATENESS: &[RtColumn] = &[
        RtColumn { name: "misses", get: |t| Some(RtNumber::Count(t.misses)) },
        RtColumn { name: "lateness_max_us", get: |t| t.lateness_max_ns.map(|x| us(x as f64)) },
    ];

    #[test]
    fn adding_a_figures_export_column_reads_its_field() {
        let t = RtTask::new("worker", RtParams::default(), tally())
            .with_times(RtTimes { lateness_max_ns: Some(-1500), ..Default::default() });
        let lateness = &WITH_LATENESS[1];
        assert_eq!((lateness.get)(&t), Some(RtNumber::Real(-1.5)));
        assert_eq!((lateness.get)(&RtTask::default()), None);
    }
}
