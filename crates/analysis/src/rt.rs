//! Real-time figures of a periodic task set's cell across repetitions (seed 003): jobs,
//! deadline misses, DWCS window violations and time in violation per process, and wake-up
//! latency percentiles of the merged histograms, each a [`crate::Summary`] over repetitions
//! (the repetition is the unit of replication; per-process values are averaged within a
//! repetition first, as in [`crate::cell_stats`]). Each figure is one entry of
//! [`FIGURES`] ([`figures`]).

use crate::hist::{cdf_us, merge};
use schedlab_model::{CellParams, CellRecord, CellRt, CellStatus, CpuTheory};
use std::collections::BTreeMap;

pub mod figures;

pub use figures::*;
use figures::{latency, latency_hist, responses};

/// Real-time figures of one cell of a periodic task set.
#[derive(Debug, Clone, PartialEq)]
pub struct RtStats {
    /// Which cell.
    pub params: CellParams,
    /// Who scheduled the set: other, fifo-rm, fifo-dm, deadline, edf or dwcs.
    pub scheduler: String,
    /// The value of the cell's `utilisation` axis (None for a listed or canonical set).
    pub utilisation: Option<f64>,
    /// DWCS minimum utilisation, sum of (1 - x/y) C/T (None when no repetition ran).
    pub min_utilisation: Option<f64>,
    /// Sum of C/T (None when no repetition ran).
    pub plain_utilisation: Option<f64>,
    /// DWCS scheduled the set and its feasibility test guarantees it (canonical, minimum
    /// utilisation <= 1); false under every other scheduler.
    pub guaranteed: bool,
    /// Who counted the jobs: "worker" (each task's own clock) or "dispatcher" (the live
    /// dispatcher's tally: no wake-up latencies).
    pub source: String,
    /// Tasks (worker processes with results) per repetition, the most seen.
    pub tasks: usize,
    /// Measured repetitions with task results whose figures count (status ok).
    pub reps: usize,
    /// Measured repetitions left out because they failed (could not start, the dispatcher
    /// died, workers failed or timed out).
    pub failed: usize,
    /// The first failure message, if any.
    pub failure: Option<String>,
    /// Of the failed repetitions, those in which the watchdog killed workers.
    pub timed_out: usize,
    /// Every figure of [`FIGURES`], summarised over the repetitions (`figures[&MISS_PCT]`).
    pub figures: RtSummaries,
    /// What the latency figures are: "wake-up" (tasks that timed their own releases: when a
    /// job's process ran, less its planned release), "hand-off" (the edf and dwcs dispatchers'
    /// workers: when the worker ran, less when the dispatcher gave it the CPU), both joined by
    /// "/" if the cells differ, or "" when no task recorded either.
    pub latency_kind: String,
    /// Wake-ups recorded over every repetition.
    pub wakeups: u64,
    /// The pooled wake-up latency distribution of every repetition: (microseconds, fraction
    /// of wake-ups at or below), empty without wake-up histograms.
    pub wakeup_cdf: Vec<(f64, f64)>,
    /// Finished jobs in the per-job records of every repetition (0 when the records were not
    /// loaded: see the store's `job_logs`).
    pub finished_jobs: u64,
    /// Jobs in those records that never finished (dropped or skipped).
    pub unfinished_jobs: u64,
    /// The pooled response time distribution (finish - release) of the finished jobs:
    /// (microseconds, fraction at or below), empty without per-job records.
    pub response_cdf: Vec<(f64, f64)>,
    /// A partitioned set's figures on each of its CPUs, ascending; empty when the set ran on
    /// one CPU or globally (SCHED_DEADLINE).
    pub per_cpu: Vec<CpuRt>,
    /// The CPUs the set had (None when no repetition stored its set).
    pub placement: Option<Placement>,
}

/// The CPUs a periodic set ran on: what its figures can be compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Every task on this one CPU (the dispatchers, and the pinned kernel policies).
    One(u32),
    /// The tasks split over this many CPUs, each task pinned to one.
    Partitioned(usize),
    /// The kernel's global scheduling on every CPU of the machine (SCHED_DEADLINE's global
    /// EDF, which migrates tasks to whichever CPU is free).
    Global,
}

impl Placement {
    /// Where a stored set ran.
    pub fn of(c: &CellRt) -> Placement {
        let cpus = schedlab_model::by_cpu(&c.task_cpus).len();
        match (c.cpu, cpus) {
            (cpu, _) if cpu != u32::MAX => Placement::One(cpu),
            (_, 0) => Placement::Global,
            (_, 1) => Placement::One(c.task_cpus[0]),
            (_, n) => Placement::Partitioned(n),
        }
    }

    /// A short note for a table row: "CPU 1 only", "2 CPUs, partitioned", "global EDF, every CPU".
    pub fn note(&self) -> String {
        match self {
            Placement::One(c) => format!("CPU {c} only"),
            Placement::Partitioned(n) => format!("{n} CPUs, partitioned"),
            Placement::Global => "global EDF, every CPU".into(),
        }
    }
}

/// A partitioned set's real-time figures on one CPU: its tasks' jobs, misses and window
/// violations, each a [`Summary`] over repetitions (as the cell's own figures).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRt {
    /// Which CPU.
    pub cpu: u32,
    /// Tasks placed on it.
    pub tasks: usize,
    /// The DWCS feasibility test of its tasks, as the run stored it (None for runs stored
    /// before it was).
    pub theory: Option<CpuTheory>,
    /// Every figure of [`FIGURES`] over its tasks (the per-CPU table shows those marked
    /// `per_cpu`).
    pub figures: RtSummaries,
}

fn is_periodic(r: &CellRecord) -> bool {
    r.rt.is_some() || r.params.workload_kind == "periodic"
}

/// The cells of a run that ran periodic task sets, in cell order. Cells whose every
/// repetition failed are kept with `reps == 0`, so tables can say why.
pub fn rt_stats(records: &[CellRecord]) -> Vec<RtStats> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup && is_periodic(r)) {
        by_cell.entry(r.params.cell_id).or_default().push(r);
    }
    by_cell.into_values().filter_map(|reps| summarise(&reps)).collect()
}

fn summarise(all: &[&CellRecord]) -> Option<RtStats> {
    let first = all.first()?;
    let failed: Vec<&&CellRecord> = all.iter().filter(|r| !r.status.is_ok()).collect();
    let ran: Vec<(&CellRecord, RtRep)> = all
        .iter()
        .filter(|r| r.status.is_ok())
        .map(|r| (*r, RtRep::of(r)))
        .filter(|(_, t)| !t.tasks.is_empty())
        .collect();
    let reps: Vec<RtRep> = ran.iter().map(|(_, t)| t.clone()).collect();
    let mut kinds: Vec<&str> =
        reps.iter().flat_map(|t| t.rt()).filter_map(latency).map(|(kind, _)| kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let pooled = merge(reps.iter().flat_map(|t| t.rt().filter_map(latency_hist)));
    let (responses, unfinished_jobs) = responses(reps.iter().flat_map(|t| t.job_logs()));
    let cell_rt = ran
        .iter()
        .find_map(|(r, _)| r.rt.as_ref())
        .or_else(|| all.iter().find_map(|r| r.rt.as_ref()));
    let mut sources: Vec<&str> =
        reps.iter().flat_map(|t| t.rt().map(|x| x.source.as_str())).collect();
    sources.sort_unstable();
    sources.dedup();
    Some(RtStats {
        params: first.params.clone(),
        scheduler: cell_rt
            .map(|c| c.scheduler.clone())
            .unwrap_or_else(|| first.params.policy.clone()),
        utilisation: match cell_rt {
            Some(c) => c.utilisation,
            // Every start failed, so no repetition stored the set: its group says.
            None => first.params.groups.iter().find_map(|g| g.utilisation),
        },
        min_utilisation: cell_rt.map(|c| c.min_utilisation),
        plain_utilisation: cell_rt.map(|c| c.plain_utilisation),
        // The guarantee is the DWCS scheduler's: another scheduler of the same set has none.
        guaranteed: cell_rt
            .is_some_and(|c| c.guaranteed && matches!(c.scheduler.as_str(), "dwcs" | "dwcs-scx")),
        source: sources.join("/"),
        tasks: reps.iter().map(|t| t.tasks.len()).max().unwrap_or(0),
        reps: reps.len(),
        failed: failed.len(),
        failure: failed.first().and_then(|r| r.message.clone()),
        timed_out: failed.iter().filter(|r| r.status == CellStatus::TimedOut).count(),
        figures: RtSummaries::of(&reps),
        latency_kind: kinds.join("/"),
        wakeups: pooled.as_ref().map_or(0, |h| h.len()),
        wakeup_cdf: pooled.as_ref().map(cdf_us).unwrap_or_default(),
        finished_jobs: responses.len(),
        unfinished_jobs,
        response_cdf: cdf_us(&responses),
        per_cpu: cell_rt.map(|c| per_cpu(c, &reps)).unwrap_or_default(),
        placement: cell_rt.map(Placement::of),
    })
}

/// Each CPU's figures when the cell's `task_cpus` spread the set over several CPUs. Task k is
/// the k-th measured worker with a result (the engine and the simulator store them in task
/// order); a repetition missing a task's result cannot be split by CPU and is left out here.
fn per_cpu(c: &CellRt, reps: &[RtRep]) -> Vec<CpuRt> {
    let task_cpus = &c.task_cpus;
    let by_cpu = schedlab_model::by_cpu(task_cpus);
    if by_cpu.len() < 2 {
        return Vec::new();
    }
    let complete: Vec<&RtRep> = reps.iter().filter(|t| t.tasks.len() == task_cpus.len()).collect();
    if complete.is_empty() {
        return Vec::new();
    }
    by_cpu
        .into_iter()
        .map(|(cpu, idx)| {
            let on: Vec<RtRep> = complete.iter().map(|t| t.subset(&idx)).collect();
            CpuRt {
                cpu,
                tasks: idx.len(),
                theory: c.cpu_theory.iter().find(|t| t.cpu == cpu).cloned(),
                figures: RtSummaries::of(&on),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::test_record;
    use schedlab_model::{hist, CellRt, RtTask, Sample};

    /// A task with `jobs` jobs, `misses` misses, (fixed, sliding) violations, % in violation
    /// and wake-up latencies in us (none: a dispatcher task).
    fn task(jobs: u64, misses: u64, viol: (u64, u64), pct: f64, wake_us: &[u64]) -> Sample {
        let hist = (!wake_us.is_empty()).then(|| {
            let mut h = hist::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
            for v in wake_us {
                h.record(v * 1000).unwrap();
            }
            hist::encode(&h)
        });
        let rt = RtTask {
            x: 1,
            y: 2,
            jobs,
            met: jobs - misses,
            misses,
            fixed_violations: viol.0,
            sliding_violations: viol.1,
            time_in_violation_pct: pct,
            wakeup_hist: hist,
            source: if wake_us.is_empty() { "dispatcher" } else { "worker" }.into(),
            ..Default::default()
        };
        Sample {
            extra: schedlab_model::Extra { rt: Some(rt), ..Default::default() },
            ..Default::default()
        }
    }

    fn rec(rep: u32, warmup: bool, samples: Vec<Sample>) -> CellRecord {
        let params = CellParams {
            cell_id: 3,
            key: "set/fifo-rm/utilisation=0.5/n2".into(),
            workload: "set".into(),
            workload_kind: "periodic".into(),
            policy: "fifo-rm".into(),
            class: "fifo".into(),
            processes: 2,
            ..Default::default()
        };
        let rt = CellRt {
            scheduler: "fifo-rm".into(),
            utilisation: Some(0.5),
            min_utilisation: 0.5,
            plain_utilisation: 1.0,
            guaranteed: true,
            ..Default::default()
        };
        CellRecord { warmup, rt: Some(rt), ..test_record(params, rep, 1.0, samples) }
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
    }

    #[test]
    fn misses_violations_and_time_in_violation_over_repetitions() {
        let recs = vec![
            // rep 0: 100 + 50 jobs, 10 + 5 misses: 10% missed; 7.5 misses, 2.5 fixed and 4.5
            // sliding violations per process; (20 + 10) / 2 = 15% in violation.
            rec(
                0,
                false,
                vec![task(100, 10, (3, 6), 20.0, &[10, 20]), task(50, 5, (2, 3), 10.0, &[30, 40])],
            ),
            // rep 1: 100 + 100 jobs, 30 + 0 misses: 15%; 15 misses, 4 fixed and 8 sliding per
            // process; (50 + 0) / 2 = 25% in violation.
            rec(
                1,
                false,
                vec![task(100, 30, (8, 16), 50.0, &[50, 60]), task(100, 0, (0, 0), 0.0, &[70, 80])],
            ),
            // A warm-up with every job missed: never counted.
            rec(0, true, vec![task(10, 10, (5, 9), 100.0, &[9999])]),
        ];
        let s = &rt_stats(&recs)[0];
        assert_eq!((s.reps, s.tasks, s.failed), (2, 2, 0));
        assert_eq!(
            (s.scheduler.as_str(), s.utilisation, s.min_utilisation),
            ("fifo-rm", Some(0.5), Some(0.5))
        );
        assert!(!s.guaranteed, "the guarantee is DWCS's, and fifo-rm scheduled this set");
        assert_eq!(s.source, "worker");
        close(s.figures[&JOBS].mean, 175.0);
        close(s.figures[&MISSES].mean, 22.5);
        close(s.figures[&MISS_PCT].mean, 12.5);
        close(s.figures[&MISSES_PER_PROC].mean, 11.25);
        close(s.figures[&FIXED_VIOLATIONS].mean, 3.25);
        close(s.figures[&SLIDING_VIOLATIONS].mean, 6.25);
        close(s.figures[&IN_VIOLATION_PCT].mean, 20.0);
        // Two repetitions 10% and 15%: the t interval 12.5 ± 12.706205 * 2.5 = 12.5 ± 31.8 went
        // below 0%; on the logit scale it is [0.78%, 72.3%], and not shown at n = 2.
        assert!(
            s.figures[&MISS_PCT].ci_low > 0.0 && s.figures[&MISS_PCT].ci_high < 100.0,
            "{:?}",
            s.figures[&MISS_PCT]
        );
        assert_eq!(s.figures[&MISS_PCT].interval(), Err(crate::NoInterval::FewValues));
        // Wake-ups 10..40 us (rep 0) and 50..80 us (rep 1): medians (the 2nd of 4 values) 20 and 60 us, maxima 40 and 80.
        // (HdrHistogram at 3 significant digits reports a bucket's highest value: 80 us is 80.063.)
        assert!((s.figures[&LATENCY_P50].mean - 40.0).abs() < 0.1, "{:?}", s.figures[&LATENCY_P50]);
        assert!((s.figures[&LATENCY_MAX].mean - 60.0).abs() < 0.1, "{:?}", s.figures[&LATENCY_MAX]);
        assert!((s.figures[&LATENCY_P99].mean - 60.0).abs() < 0.1, "{:?}", s.figures[&LATENCY_P99]);
        assert_eq!(s.wakeups, 8, "the warm-up's wake-up is not pooled");
        let last = s.wakeup_cdf.last().unwrap();
        assert!((last.0 - 80.0).abs() < 0.1 && last.1 == 1.0, "{last:?}");
        let median = s.wakeup_cdf[50];
        assert!(
            (median.0 - 40.0).abs() < 0.1 && median.1 == 0.5,
            "pooled median 40 us: {median:?}"
        );
    }

    #[test]
    fn a_partitioned_set_is_also_summarised_per_cpu() {
        let placed = |rep: u32, tasks: Vec<Sample>, cpus: &[u32]| {
            let mut r = rec(rep, false, tasks);
            let rt = r.rt.as_mut().unwrap();
            rt.task_cpus = cpus.to_vec();
            // Each CPU's test as the run stores it: (10/40 + 5/50) on CPU 0, 10/20 on CPU 1, x/y = 1/2.
            let theory = |cpu: u32, u: f64| CpuTheory {
                cpu,
                plain_utilisation: u,
                min_utilisation: u / 2.0,
                guaranteed: true,
            };
            rt.cpu_theory = if cpus.iter().any(|&c| c != cpus[0]) {
                vec![theory(0, 0.25 + 0.1), theory(1, 0.5)]
            } else {
                Vec::new()
            };
            r
        };
        let three = |a: (u64, u64, (u64, u64), f64),
                     b: (u64, u64, (u64, u64), f64),
                     c: (u64, u64, (u64, u64), f64)| {
            vec![
                task(a.0, a.1, a.2, a.3, &[]),
                task(b.0, b.1, b.2, b.3, &[]),
                task(c.0, c.1, c.2, c.3, &[]),
            ]
        };
        let cpus = [0, 1, 0];
        let mut recs = vec![
            placed(
                0,
                three((100, 10, (1, 2), 5.0), (50, 0, (0, 0), 0.0), (100, 30, (3, 6), 20.0)),
                &cpus,
            ),
            placed(
                1,
                three((100, 0, (0, 0), 0.0), (50, 5, (1, 1), 10.0), (100, 10, (1, 2), 4.0)),
                &cpus,
            ),
        ];
        // A repetition that lost a task's result cannot be split by CPU: left out.
        let mut short =
            three((100, 100, (9, 9), 90.0), (50, 50, (9, 9), 90.0), (0, 0, (0, 0), 0.0));
        short.pop();
        recs.push(placed(2, short, &cpus));
        let s = &rt_stats(&recs)[0];
        assert_eq!(s.reps, 3, "the cell's own figures keep every repetition");
        assert_eq!(s.per_cpu.len(), 2);
        let (c0, c1) = (&s.per_cpu[0], &s.per_cpu[1]);
        assert_eq!((c0.cpu, c0.tasks, c1.cpu, c1.tasks), (0, 2, 1, 1));
        let (t0, t1) = (c0.theory.as_ref().unwrap(), c1.theory.as_ref().unwrap());
        assert!((t0.plain_utilisation - (0.25 + 0.1)).abs() < 1e-12);
        assert!(
            (t0.min_utilisation - 0.5 * (0.25 + 0.1)).abs() < 1e-12,
            "x/y = 1/2 halves each share"
        );
        assert!((t1.plain_utilisation - 0.5).abs() < 1e-12);
        assert_eq!((c0.figures[&JOBS].n, c0.figures[&JOBS].mean), (2, 200.0));
        assert!(
            (c0.figures[&MISS_PCT].mean - 12.5).abs() < 1e-9,
            "20% and 5%: {:?}",
            c0.figures[&MISS_PCT]
        );
        assert!(
            (c1.figures[&MISS_PCT].mean - 5.0).abs() < 1e-9,
            "0% and 10%: {:?}",
            c1.figures[&MISS_PCT]
        );
        assert!(
            (c0.figures[&SLIDING_VIOLATIONS].mean - 2.5).abs() < 1e-9,
            "(2 + 6) / 2 and (0 + 2) / 2"
        );
        assert!((c1.figures[&IN_VIOLATION_PCT].mean - 5.0).abs() < 1e-9);

        // One CPU, or no placement (SCHED_DEADLINE): no breakdown.
        for one in [vec![1, 1, 1], vec![]] {
            let r = placed(
                0,
                three((10, 0, (0, 0), 0.0), (10, 0, (0, 0), 0.0), (10, 0, (0, 0), 0.0)),
                &one,
            );
            assert!(rt_stats(&[r])[0].per_cpu.is_empty(), "{one:?}");
        }
    }

    #[test]
    fn the_p99_response_time_is_of_each_repetitions_finished_jobs() {
        use schedlab_model::jobs::{JobLog, JobTrace};
        // Responses 1..=100 us in repetition 0 (p99: 99 us), 200 us each in repetition 1; a
        // job that never finished counts in neither.
        let logged = |rep: u32, responses: Vec<Option<u64>>| {
            let mut s = task(10, 0, (0, 0), 0.0, &[5]);
            let jobs = responses
                .into_iter()
                .map(|f| JobTrace { finish_ns: f.map(|us| us * 1000), ..Default::default() })
                .collect();
            s.jobs = Some(JobLog { jobs, ..Default::default() });
            rec(rep, false, vec![s])
        };
        let mut first: Vec<Option<u64>> = (1..=100).map(Some).collect();
        first.push(None);
        let recs = [logged(0, first), logged(1, vec![Some(200); 10])];
        let s = &rt_stats(&recs)[0];
        let p99 = &s.figures[&RESPONSE_P99];
        assert_eq!(p99.n, 2);
        assert!((p99.mean - (99.0 + 200.0) / 2.0).abs() < 0.2, "{p99:?}");
        assert_eq!((s.finished_jobs, s.unfinished_jobs), (110, 1));
        assert_eq!(RESPONSE_P99.of_repetition(&recs[1]).map(|x| x.round()), Some(200.0));
        // Without per-job records (not loaded, or none kept): no value.
        assert_eq!(
            rt_stats(&[rec(0, false, vec![task(10, 0, (0, 0), 0.0, &[5])])])[0].figures
                [&RESPONSE_P99]
                .n,
            0
        );
    }

    #[test]
    fn dispatcher_tasks_have_no_wake_ups() {
        let s = &rt_stats(&[rec(
            0,
            false,
            vec![task(20, 4, (1, 2), 5.0, &[]), task(20, 0, (0, 0), 0.0, &[])],
        )])[0];
        assert_eq!(s.source, "dispatcher");
        close(s.figures[&MISS_PCT].mean, 10.0);
        close(s.figures[&SLIDING_VIOLATIONS].mean, 1.0);
        assert_eq!((s.figures[&LATENCY_P50].n, s.wakeups), (0, 0));
        assert!(s.figures[&LATENCY_P50].mean.is_nan() && s.wakeup_cdf.is_empty());
        assert!(s.figures[&MISS_PCT].ci_low.is_nan(), "one repetition has no interval");
    }

    #[test]
    fn failed_starts_are_counted_and_other_runs_have_no_rt_figures() {
        let mut f = rec(0, false, Vec::new());
        f.status = CellStatus::Failed;
        f.message = Some("SCHED_DEADLINE admission refused".into());
        f.rt = None;
        f.params.key = "set/deadline/utilisation=0.9/n2".into();
        f.params.groups =
            vec![schedlab_model::GroupParams { utilisation: Some(0.9), ..Default::default() }];
        f.params.policy = "deadline".into();
        let s = &rt_stats(&[f.clone()])[0];
        assert_eq!(
            (s.reps, s.failed, s.scheduler.as_str(), s.utilisation),
            (0, 1, "deadline", Some(0.9))
        );
        assert_eq!(s.failure.as_deref(), Some("SCHED_DEADLINE admission refused"));
        assert!(s.figures[&JOBS].mean.is_nan() && s.min_utilisation.is_none());
        f.params.workload_kind = "pi".into();
        assert!(rt_stats(&[f]).is_empty(), "not a periodic cell");
    }
}
