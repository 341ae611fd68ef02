//! What the kernel traces of a cell's repetitions say, across repetitions (issue #17): per
//! process run, runnable and blocked time, involuntary switch-outs and who took the CPU,
//! wake-up latency of the pooled histograms, migrations; each a [`Summary`] over the traced
//! repetitions (per-process values averaged within a repetition first, as in
//! [`crate::cell_stats`]). Background workers are left out, as everywhere.

use crate::cells::EMPTY;
use crate::hist::{merge, quantile_us};
use crate::metric::counts;
use crate::{Domain, Summary};
use schedlab_model::trace::{CellTrace, PreemptedBy, WorkerTrace};
use schedlab_model::{CellParams, CellRecord};
use std::collections::BTreeMap;

/// What a trace figure is made of, which fixes how the tables total and summarise it.
#[derive(Debug, Clone, Copy)]
pub enum Reading {
    /// A number per worker: summed over the workers in the per-worker table's last row, and
    /// for a cell averaged over a repetition's measured workers, then summarised over the
    /// repetitions.
    PerWorker(fn(&WorkerTrace) -> f64),
    /// A wake-up latency quantile, µs: each worker's own, and for a cell the quantile of
    /// each repetition's measured workers pooled, summarised over the repetitions.
    Wakeup {
        /// The quantile.
        q: f64,
        /// A worker's own.
        worker: fn(&WorkerTrace) -> Option<f64>,
    },
    /// Who took the CPU at the involuntary switch-outs, summed.
    PreemptedBy,
    /// The CPUs a worker ran on.
    Cpus,
    /// The wait4 CPU time (user + sys) of the worker's sample, which lies between the trace's
    /// run time and run + untraced.
    Wait4Cpu,
    /// A count of a repetition's whole trace, summed over the repetitions.
    PerTrace(fn(&CellTrace) -> u64),
}

/// What a trace figure counts, which fixes its digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds: 4 decimals.
    Seconds,
    /// Events: whole for a worker, 1 decimal for a mean per process.
    Count,
    /// Microseconds: 1 decimal.
    Micros,
}

impl Unit {
    /// Decimals of one worker's value.
    pub fn worker_digits(self) -> usize {
        match self {
            Unit::Seconds => 4,
            Unit::Count => 0,
            Unit::Micros => 1,
        }
    }

    /// Decimals of a mean per process.
    pub fn mean_digits(self) -> usize {
        match self {
            Unit::Seconds => 4,
            Unit::Count | Unit::Micros => 1,
        }
    }
}

/// One figure of a kernel trace: the one definition from which `schedlab trace`'s per-worker
/// table, the report's per-cell table, [`TraceStats`] and the `compare --metric` trace
/// metrics follow.
#[derive(Debug, Clone, Copy)]
pub struct TraceFigure {
    /// Its name ([`crate::Metric::name`] of the metrics made of it).
    pub name: &'static str,
    /// Its column in the per-worker table (`schedlab trace`); None: not there.
    pub worker_header: Option<&'static str>,
    /// Its column in the report's per-cell table; None: not there.
    pub cell_header: Option<&'static str>,
    /// What it counts.
    pub unit: Unit,
    /// Its label as a `compare --metric` metric ([`crate::Metric::trace_figure`]), if it is one.
    pub metric: Option<&'static str>,
    /// What it is made of.
    pub reading: Reading,
}

impl TraceFigure {
    /// Its value for one repetition (per process, or pooled), when it has one: None for
    /// figures that are not one number per repetition, and for repetitions without a measured
    /// traced worker.
    pub fn of_repetition(&self, r: &CellRecord) -> Option<f64> {
        match self.reading {
            Reading::PerWorker(get) => mean(measured(r).iter().map(|w| get(w))),
            Reading::Wakeup { q, .. } => wakeup_quantile_us(r, q),
            Reading::PreemptedBy | Reading::Cpus | Reading::Wait4Cpu | Reading::PerTrace(_) => None,
        }
    }
}

/// Time on a CPU.
pub const RUN: TraceFigure = figure("run", "run [s]", Unit::Seconds, |w| w.run_s);
/// Time before untraced switch-ins that may have been run.
pub const UNTRACED: TraceFigure = TraceFigure {
    cell_header: None,
    ..figure("untraced", "untraced [s]", Unit::Seconds, |w| w.untraced_s)
};
/// The worker's wait4 CPU time, beside the trace's.
pub const WAIT4_CPU: TraceFigure = TraceFigure {
    name: "wait4_cpu",
    worker_header: Some("wait4 cpu [s]"),
    cell_header: None,
    unit: Unit::Seconds,
    metric: None,
    reading: Reading::Wait4Cpu,
};
/// Time runnable but waiting for a CPU.
pub const RUNNABLE: TraceFigure = TraceFigure {
    metric: Some("runnable (waiting) per process [s]"),
    ..figure("runnable", "runnable [s]", Unit::Seconds, |w| w.runnable_s)
};
/// Time blocked or asleep.
pub const BLOCKED: TraceFigure = figure("blocked", "blocked [s]", Unit::Seconds, |w| w.blocked_s);
/// Involuntary switch-outs.
pub const INVOLUNTARY: TraceFigure =
    figure("involuntary", "involuntary", Unit::Count, |w| w.involuntary as f64);
/// Who took the CPU at them.
pub const PREEMPTED_BY: TraceFigure = TraceFigure {
    name: "preempted_by",
    worker_header: Some("preempted by w/e/k/o"),
    cell_header: Some("preempted by: worker / engine / kernel / other"),
    unit: Unit::Count,
    metric: None,
    reading: Reading::PreemptedBy,
};
/// Kernel migrations.
pub const MIGRATIONS: TraceFigure = TraceFigure {
    metric: Some("migrations per process"),
    ..figure("migrations", "migrations", Unit::Count, |w| w.migrations as f64)
};
/// Median wake-up latency.
pub const WAKEUP_P50: TraceFigure =
    wakeup("wakeup_p50", "wake-up p50 [us]", 0.5, |w| w.wakeup_p50_us);
/// 90th percentile wake-up latency (from the worker's histogram; the cell's table only).
pub const WAKEUP_P90: TraceFigure = TraceFigure {
    worker_header: None,
    ..wakeup("wakeup_p90", "wake-up p90 [us]", 0.9, |w| worker_quantile_us(w, 0.9))
};
/// 99th percentile wake-up latency.
pub const WAKEUP_P99: TraceFigure = TraceFigure {
    metric: Some("wake-up latency p99 [µs]"),
    ..wakeup("wakeup_p99", "wake-up p99 [us]", 0.99, |w| w.wakeup_p99_us)
};
/// 99.9th percentile wake-up latency (from the worker's histogram; the cell's table only).
pub const WAKEUP_P999: TraceFigure = TraceFigure {
    worker_header: None,
    ..wakeup("wakeup_p999", "wake-up p99.9 [us]", 0.999, |w| worker_quantile_us(w, 0.999))
};

/// Quantile `q` of one worker's wake-up latencies, µs, from its histogram.
fn worker_quantile_us(w: &WorkerTrace, q: f64) -> Option<f64> {
    merge(w.wakeup_hist.as_deref()).and_then(|h| quantile_us(&h, q))
}
/// The CPUs a worker ran on.
pub const CPUS: TraceFigure = TraceFigure {
    name: "cpus",
    worker_header: Some("cpus"),
    cell_header: None,
    unit: Unit::Count,
    metric: None,
    reading: Reading::Cpus,
};
/// Events the buffers lost (0: the figures are complete).
pub const LOST_EVENTS: TraceFigure = per_trace("lost_events", "lost events", |t| t.lost_events);
/// Switches the trace did not show.
pub const UNTRACED_SWITCHES: TraceFigure =
    per_trace("untraced_switches", "untraced switches", |t| t.untraced_switches);

/// Every trace figure, in the order the tables show them.
pub const FIGURES: &[TraceFigure] = &[
    RUN,
    UNTRACED,
    WAIT4_CPU,
    RUNNABLE,
    BLOCKED,
    INVOLUNTARY,
    PREEMPTED_BY,
    MIGRATIONS,
    WAKEUP_P50,
    WAKEUP_P90,
    WAKEUP_P99,
    WAKEUP_P999,
    CPUS,
    LOST_EVENTS,
    UNTRACED_SWITCHES,
];

/// A per-worker figure in both tables under one header.
const fn figure(
    name: &'static str,
    header: &'static str,
    unit: Unit,
    get: fn(&WorkerTrace) -> f64,
) -> TraceFigure {
    TraceFigure {
        name,
        worker_header: Some(header),
        cell_header: Some(header),
        unit,
        metric: None,
        reading: Reading::PerWorker(get),
    }
}

/// A wake-up latency quantile in both tables.
const fn wakeup(
    name: &'static str,
    header: &'static str,
    q: f64,
    worker: fn(&WorkerTrace) -> Option<f64>,
) -> TraceFigure {
    TraceFigure {
        name,
        worker_header: Some(header),
        cell_header: Some(header),
        unit: Unit::Micros,
        metric: None,
        reading: Reading::Wakeup { q, worker },
    }
}

/// A count of the whole trace, in the per-cell table.
const fn per_trace(
    name: &'static str,
    header: &'static str,
    get: fn(&CellTrace) -> u64,
) -> TraceFigure {
    TraceFigure {
        name,
        worker_header: None,
        cell_header: Some(header),
        unit: Unit::Count,
        metric: None,
        reading: Reading::PerTrace(get),
    }
}

/// The trace figures of one cell over its traced repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStats {
    /// Which cell.
    pub params: CellParams,
    /// Traced repetitions that count (measured, ok).
    pub reps: usize,
    /// Per figure of [`FIGURES`] with a value per repetition ([`TraceFigure::of_repetition`]),
    /// by name: its summary over the traced repetitions.
    pub per_rep: Vec<(&'static str, Summary)>,
    /// Per [`Reading::PerTrace`] figure, by name: its sum over the repetitions.
    pub sums: Vec<(&'static str, u64)>,
    /// Who took the CPU at the involuntary switch-outs, summed over the repetitions.
    pub preempted_by: PreemptedBy,
    /// Wake-ups timed over every repetition.
    pub wakeups: u64,
    /// The first traced repetition (for its state bars): its number and trace, and per worker
    /// of the trace the group of its sample ("" when no sample has its pid).
    pub example: Option<(u32, CellTrace, Vec<String>)>,
}

impl TraceStats {
    /// The summary of figure `f` over the repetitions (empty for a figure without one).
    pub fn summary(&self, f: &TraceFigure) -> &Summary {
        self.per_rep.iter().find(|(n, _)| *n == f.name).map_or(&EMPTY, |(_, s)| s)
    }

    /// The sum of a [`Reading::PerTrace`] figure over the repetitions (0 for another figure).
    pub fn sum(&self, f: &TraceFigure) -> u64 {
        self.sums.iter().find(|(n, _)| *n == f.name).map_or(0, |(_, s)| *s)
    }
}

/// The measured workers' traces of a repetition, matched to their samples by pid.
pub(crate) fn measured(r: &CellRecord) -> Vec<&WorkerTrace> {
    let Some(t) = &r.trace else { return Vec::new() };
    t.workers.iter().filter(|w| r.samples.iter().any(|s| s.pid == w.pid && !s.background)).collect()
}

fn mean(xs: impl ExactSizeIterator<Item = f64>) -> Option<f64> {
    let n = xs.len();
    (n > 0).then(|| xs.sum::<f64>() / n as f64)
}

/// The traced cells of a run, in cell order (none when the run was not traced).
pub fn trace_stats(records: &[CellRecord]) -> Vec<TraceStats> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| counts(r) && r.trace.is_some()) {
        by_cell.entry(r.params.cell_id).or_default().push(r);
    }
    by_cell.into_values().filter_map(|reps| summarise(&reps)).collect()
}

/// The `q` quantile of the wake-up latency of a repetition's measured workers, pooled, µs.
pub(crate) fn wakeup_quantile_us(r: &CellRecord, q: f64) -> Option<f64> {
    merge(measured(r).iter().filter_map(|w| w.wakeup_hist.as_deref()))
        .and_then(|h| quantile_us(&h, q))
}

fn summarise(reps: &[&CellRecord]) -> Option<TraceStats> {
    let first = reps.first()?;
    let workers: Vec<Vec<&WorkerTrace>> = reps.iter().map(|r| measured(r)).collect();
    let per_rep = FIGURES
        .iter()
        .filter(|f| matches!(f.reading, Reading::PerWorker(_) | Reading::Wakeup { .. }))
        .map(|f| {
            let xs: Vec<f64> =
                reps.iter().filter_map(|r| f.of_repetition(r)).filter(|x| x.is_finite()).collect();
            (f.name, Summary::in_domain(&xs, Domain::NonNegative).unwrap_or(EMPTY))
        })
        .collect();
    let traces = || reps.iter().filter_map(|r| r.trace.as_ref());
    let sums = FIGURES
        .iter()
        .filter_map(|f| match f.reading {
            Reading::PerTrace(get) => Some((f.name, traces().map(get).sum())),
            _ => None,
        })
        .collect();
    let example = reps.iter().find_map(|r| {
        let t = r.trace.as_ref()?;
        let groups = t
            .workers
            .iter()
            .map(|w| {
                r.samples
                    .iter()
                    .find(|s| s.pid == w.pid)
                    .map(|s| s.group.clone())
                    .unwrap_or_default()
            })
            .collect();
        Some((r.rep, t.clone(), groups))
    });
    Some(TraceStats {
        params: first.params.clone(),
        reps: reps.len(),
        per_rep,
        sums,
        preempted_by: workers.iter().flatten().map(|w| &w.preempted_by).sum(),
        wakeups: workers.iter().flatten().map(|w| w.wakeups).sum(),
        example,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::test_record;
    use schedlab_model::hist::{self, Histogram};
    use schedlab_model::{CellStatus, Sample};

    fn hist_of(values: &[u64]) -> String {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        hist::encode(&h)
    }

    /// A repetition of two measured workers (pids 10, 11) and one background (12).
    fn rep(rep: u32, run: [f64; 3], traced: bool) -> CellRecord {
        let params = CellParams { cell_id: 3, key: "k".into(), processes: 2, ..Default::default() };
        let samples = (0..3)
            .map(|i| Sample {
                index: i,
                pid: 10 + i as i32,
                background: i == 2,
                group: if i == 2 { "bg".into() } else { "main".into() },
                wall_s: 1.0,
                ..Default::default()
            })
            .collect();
        let mut r =
            CellRecord { rep, status: CellStatus::Ok, ..test_record(params, rep, 1.0, samples) };
        if traced {
            let workers = (0..3)
                .map(|i| WorkerTrace {
                    pid: 10 + i as i32,
                    run_s: run[i],
                    runnable_s: 0.5,
                    involuntary: 4,
                    preempted_by: PreemptedBy { worker: 3, engine: 1, kernel: 0, other: 0 },
                    wakeups: 2,
                    wakeup_hist: Some(hist_of(&[1000 * (i as u64 + 1), 100_000])),
                    ..Default::default()
                })
                .collect();
            r.trace = Some(CellTrace { workers, lost_events: 1, ..Default::default() });
        }
        r
    }

    #[test]
    fn traced_repetitions_are_summarised_without_the_background_workers() {
        let recs = [
            rep(0, [1.0, 3.0, 100.0], true),
            rep(1, [2.0, 4.0, 100.0], true),
            rep(2, [9.0, 9.0, 9.0], false),
        ];
        let s = &trace_stats(&recs)[0];
        assert_eq!(s.reps, 2, "the untraced repetition is not counted");
        assert_eq!(
            s.summary(&RUN).mean,
            2.5,
            "(2 + 3) / 2: the background worker's 100 s is left out"
        );
        assert_eq!(s.summary(&RUNNABLE).mean, 0.5);
        assert_eq!(s.preempted_by, PreemptedBy { worker: 12, engine: 4, kernel: 0, other: 0 });
        assert_eq!(s.wakeups, 8);
        assert_eq!(s.sum(&LOST_EVENTS), 2);
        // Each repetition pools 1, 2, 100, 100 µs: the median is 2 µs to three digits.
        assert!((s.summary(&WAKEUP_P50).mean - 2.0).abs() < 0.01, "{:?}", s.summary(&WAKEUP_P50));
        let (r, t, groups) = s.example.as_ref().unwrap();
        assert_eq!((*r, t.workers.len()), (0, 3));
        assert_eq!(groups, &["main", "main", "bg"]);
    }

    #[test]
    fn the_tail_of_the_wake_ups_reads_each_workers_histogram() {
        // 1,000 wake-ups of 1 µs and 10 of 1 ms: p90 is 1 µs, p99.9 is 1 ms.
        let mut values = vec![1_000; 1_000];
        values.extend([1_000_000; 10]);
        let w = WorkerTrace { wakeup_hist: Some(hist_of(&values)), ..Default::default() };
        let at = |f: &TraceFigure| match f.reading {
            Reading::Wakeup { worker, .. } => worker(&w).unwrap(),
            _ => unreachable!(),
        };
        assert!((at(&WAKEUP_P90) - 1.0).abs() < 0.01, "{}", at(&WAKEUP_P90));
        assert!((at(&WAKEUP_P999) - 1000.0).abs() < 1.0, "{}", at(&WAKEUP_P999));
        let none = WorkerTrace::default();
        assert!(worker_quantile_us(&none, 0.9).is_none(), "no wake-ups, no figure");
    }

    #[test]
    fn an_untraced_run_has_no_trace_figures() {
        assert!(trace_stats(&[rep(0, [1.0, 1.0, 1.0], false)]).is_empty());
    }
}
