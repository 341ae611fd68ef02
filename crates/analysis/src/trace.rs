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

/// The trace figures of one cell over its traced repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStats {
    /// Which cell.
    pub params: CellParams,
    /// Traced repetitions that count (measured, ok).
    pub reps: usize,
    /// Time on a CPU per process, seconds.
    pub run_per_proc: Summary,
    /// Time runnable but waiting for a CPU per process, seconds.
    pub runnable_per_proc: Summary,
    /// Time blocked or asleep per process, seconds.
    pub blocked_per_proc: Summary,
    /// Involuntary switch-outs per process.
    pub involuntary_per_proc: Summary,
    /// Who took the CPU at the involuntary switch-outs, summed over the repetitions.
    pub preempted_by: PreemptedBy,
    /// Kernel migrations per process.
    pub migrations_per_proc: Summary,
    /// Wake-ups timed over every repetition.
    pub wakeups: u64,
    /// Median wake-up latency (woken to running) of each repetition's pooled histogram, µs.
    pub wakeup_p50_us: Summary,
    /// 99th percentile.
    pub wakeup_p99_us: Summary,
    /// Events the buffers lost, summed over the repetitions (0: the figures are complete).
    pub lost_events: u64,
    /// Switches the trace did not show, summed.
    pub untraced_switches: u64,
    /// The first traced repetition (for its state bars): its number and trace, and per worker
    /// of the trace the group of its sample ("" when no sample has its pid).
    pub example: Option<(u32, CellTrace, Vec<String>)>,
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
    merge(measured(r).iter().filter_map(|w| w.wakeup_hist.as_deref())).and_then(|h| quantile_us(&h, q))
}

fn summarise(reps: &[&CellRecord]) -> Option<TraceStats> {
    let first = reps.first()?;
    let workers: Vec<Vec<&WorkerTrace>> = reps.iter().map(|r| measured(r)).collect();
    let per = |f: fn(&WorkerTrace) -> f64| -> Summary {
        let xs: Vec<f64> = workers.iter().filter_map(|ws| mean(ws.iter().map(|w| f(w)))).filter(|x| x.is_finite()).collect();
        Summary::in_domain(&xs, Domain::NonNegative).unwrap_or(EMPTY)
    };
    let lat = |q: f64| {
        let xs: Vec<f64> = reps.iter().filter_map(|r| wakeup_quantile_us(r, q)).collect();
        Summary::in_domain(&xs, Domain::NonNegative).unwrap_or(EMPTY)
    };
    let mut by = PreemptedBy::default();
    for w in workers.iter().flatten() {
        by.worker += w.preempted_by.worker;
        by.engine += w.preempted_by.engine;
        by.kernel += w.preempted_by.kernel;
        by.other += w.preempted_by.other;
    }
    let traces = || reps.iter().filter_map(|r| r.trace.as_ref());
    let example = reps.iter().find_map(|r| {
        let t = r.trace.as_ref()?;
        let groups =
            t.workers.iter().map(|w| r.samples.iter().find(|s| s.pid == w.pid).map(|s| s.group.clone()).unwrap_or_default()).collect();
        Some((r.rep, t.clone(), groups))
    });
    Some(TraceStats {
        params: first.params.clone(),
        reps: reps.len(),
        run_per_proc: per(|w| w.run_s),
        runnable_per_proc: per(|w| w.runnable_s),
        blocked_per_proc: per(|w| w.blocked_s),
        involuntary_per_proc: per(|w| w.involuntary as f64),
        preempted_by: by,
        migrations_per_proc: per(|w| w.migrations as f64),
        wakeups: workers.iter().flatten().map(|w| w.wakeups).sum(),
        wakeup_p50_us: lat(0.5),
        wakeup_p99_us: lat(0.99),
        lost_events: traces().map(|t| t.lost_events).sum(),
        untraced_switches: traces().map(|t| t.untraced_switches).sum(),
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
        let mut r = CellRecord { rep, status: CellStatus::Ok, ..test_record(params, rep, 1.0, samples) };
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
        let recs = [rep(0, [1.0, 3.0, 100.0], true), rep(1, [2.0, 4.0, 100.0], true), rep(2, [9.0, 9.0, 9.0], false)];
        let s = &trace_stats(&recs)[0];
        assert_eq!(s.reps, 2, "the untraced repetition is not counted");
        assert_eq!(s.run_per_proc.mean, 2.5, "(2 + 3) / 2: the background worker's 100 s is left out");
        assert_eq!(s.runnable_per_proc.mean, 0.5);
        assert_eq!(s.preempted_by, PreemptedBy { worker: 12, engine: 4, kernel: 0, other: 0 });
        assert_eq!(s.wakeups, 8);
        assert_eq!(s.lost_events, 2);
        // Each repetition pools 1, 2, 100, 100 µs: the median is 2 µs to three digits.
        assert!((s.wakeup_p50_us.mean - 2.0).abs() < 0.01, "{:?}", s.wakeup_p50_us);
        let (r, t, groups) = s.example.as_ref().unwrap();
        assert_eq!((*r, t.workers.len()), (0, 3));
        assert_eq!(groups, &["main", "main", "bg"]);
    }

    #[test]
    fn an_untraced_run_has_no_trace_figures() {
        assert!(trace_stats(&[rep(0, [1.0, 1.0, 1.0], false)]).is_empty());
    }
}
