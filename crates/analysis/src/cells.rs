//! Per-cell figures across repetitions: the seed study's totals per cell (its Figure 11)
//! and per-process means (its Figure 12), each a [`Summary`] over repetitions, because the
//! repetition, not the process, is the independent unit.

use crate::{coefficient_of_variation, jain_index, max_deviation_from_mean, Domain, Summary};
use schedlab_model::{CellParams, CellRecord, CellStatus};
use std::collections::BTreeMap;

/// Figures of one matrix cell over its measured repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CellStats {
    /// Which cell.
    pub params: CellParams,
    /// Measured repetitions whose figures count (status ok; warm-ups excluded).
    pub reps: usize,
    /// Measured repetitions left out of the figures because they failed (could not start,
    /// workers exited non-zero, died by a signal, timed out).
    pub failed: usize,
    /// The first failure message, if any.
    pub failure: Option<String>,
    /// Of the failed repetitions, those in which the watchdog killed workers.
    pub timed_out: usize,
    /// The CPU wake-up latency its counted repetitions held /dev/cpu_dma_latency at,
    /// microseconds (the largest, if they differed; None: not held).
    pub cpu_dma_latency_us: Option<u32>,
    /// Measured processes that ended by a signal, over all measured repetitions.
    pub signalled: usize,
    /// Measured processes that exited non-zero, over all measured repetitions.
    pub nonzero_exit: usize,
    /// Release to last reap, seconds.
    pub makespan: Summary,
    /// Sum of user CPU seconds over the cell's processes.
    pub user_total: Summary,
    /// Sum of system CPU seconds.
    pub sys_total: Summary,
    /// Work CPU (user + sys less each worker's pre-release setup) / makespan * 100:
    /// how many CPUs' worth the cell's work used between release and last exit.
    pub cpu_pct_total: Summary,
    /// Sum of involuntary context switches ("preempted").
    pub invol_total: Summary,
    /// Sum of voluntary context switches ("blocked").
    pub vol_total: Summary,
    /// Mean wall seconds per process.
    pub wall_per_proc: Summary,
    /// Mean user seconds per process.
    pub user_per_proc: Summary,
    /// Mean system seconds per process.
    pub sys_per_proc: Summary,
    /// Mean CPU percent per process.
    pub cpu_pct_per_proc: Summary,
    /// Mean involuntary switches per process.
    pub involuntary_per_proc: Summary,
    /// Mean voluntary switches per process.
    pub voluntary_per_proc: Summary,
    /// Processes completed per second (processes / makespan).
    pub throughput: Summary,
    /// Work units per second over the cell.
    pub work_rate: Summary,
    /// Mean completion time (end relative to the release) of the measured processes.
    pub completion: Summary,
    /// Jain's fairness index over per-process throughput (work units / own wall time).
    pub jain: Summary,
    /// The seed's "max deviation from mean" of completion time, seconds.
    pub max_dev_completion: Summary,
    /// Coefficient of variation of completion time.
    pub cv_completion: Summary,
    /// Mean time runnable but waiting for a CPU per process, seconds, from the scheduler's
    /// own accounting (`Sample::run_delay_s`); None unless every measured process has it.
    pub run_delay_per_proc: Option<Summary>,
    /// Mean migrations per process from the same accounting; None as for the run delay.
    pub sched_migrations_per_proc: Option<Summary>,
    /// Completion times by rank: element k summarises, over repetitions, the (k+1)-th
    /// earliest completion time (end relative to the release) of the measured processes.
    /// Sorting within a repetition first makes ranks comparable across repetitions, where
    /// process indices are not (which process lands on which CPU is chance). A repetition
    /// with fewer processes does not contribute to the ranks it lacks.
    pub completion_by_rank: Vec<Summary>,
    /// Each group's share of the CPU time all groups used inside the measured window
    /// (release to last measured exit; background groups' lead and stop tail excluded), 0..1.
    pub group_share: Vec<(String, Summary)>,
    /// The share of the CPUs' time the hypervisor stole during the measured repetitions,
    /// percent (/proc/stat's steal, pooled over them); None where they cover less than
    /// [`STEAL_MIN_TICKS`], since one tick of a short cell would read as a large share.
    pub steal_pct: Option<f64>,
    /// The CFS bandwidth throttling its counted repetitions met; None when none was throttled.
    pub throttle: Option<crate::throttle::CellThrottle>,
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The fewest /proc/stat ticks (USER_HZ: 1 s of one CPU's time) a cell's repetitions must
/// cover before their steal is judged.
pub const STEAL_MIN_TICKS: u64 = 100;

/// Groups measured repetitions by cell (in cell order) and summarises each.
/// Cells whose every repetition failed to start are kept with `reps == 0` so a
/// report can say why.
pub fn cell_stats(records: &[CellRecord]) -> Vec<CellStats> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup) {
        by_cell.entry(r.params.cell_id).or_default().push(r);
    }
    by_cell.into_values().filter_map(|reps| summarise(&reps)).collect()
}

fn summarise(all: &[&CellRecord]) -> Option<CellStats> {
    let params = all.first()?.params.clone();
    let failed: Vec<&&CellRecord> = all.iter().filter(|r| !r.status.is_ok()).collect();
    let ran: Vec<&CellRecord> =
        all.iter().copied().filter(|r| r.status.is_ok() && !r.samples.is_empty()).collect();
    let measured_samples = || all.iter().flat_map(|r| &r.samples).filter(|s| !s.background);
    // Every figure is a time, a count or a rate but Jain's index and the shares, in [0, 1].
    let within = |d: Domain, f: &dyn Fn(&CellRecord) -> f64| -> Summary {
        let xs: Vec<f64> = ran.iter().map(|r| f(r)).collect();
        Summary::in_domain(&xs, d).unwrap_or(EMPTY)
    };
    let per = |f: &dyn Fn(&CellRecord) -> f64| within(Domain::NonNegative, f);
    // Background workers are kept in the database but never enter the measured figures.
    let sum = |r: &CellRecord, f: &dyn Fn(&schedlab_model::Sample) -> f64| {
        r.samples.iter().filter(|s| !s.background).map(f).sum::<f64>()
    };
    let avg = |r: &CellRecord, f: &dyn Fn(&schedlab_model::Sample) -> f64| {
        mean(r.samples.iter().filter(|s| !s.background).map(f))
    };
    let measured = |r: &CellRecord, f: &dyn Fn(&schedlab_model::Sample) -> f64| -> Vec<f64> {
        r.samples.iter().filter(|s| !s.background).map(f).collect()
    };
    let nan = f64::NAN;
    // A figure of the scheduler's accounting, when every measured process of the cell has it.
    let known = |f: fn(&schedlab_model::Sample) -> Option<f64>| -> Option<Summary> {
        let mut all = ran.iter().flat_map(|r| &r.samples).filter(|s| !s.background);
        (!ran.is_empty() && all.all(|s| f(s).is_some()))
            .then(|| per(&|r| avg(r, &|s| f(s).unwrap_or(nan))))
    };
    let mut group_names: Vec<String> = Vec::new();
    for s in ran.iter().flat_map(|r| &r.samples) {
        if !group_names.contains(&s.group) {
            group_names.push(s.group.clone());
        }
    }
    let ticks: u64 = ran.iter().map(|r| r.stat.cpu_ticks()).sum();
    let stolen: u64 = ran.iter().map(|r| r.stat.steal).sum();
    Some(CellStats {
        steal_pct: (ticks >= STEAL_MIN_TICKS).then(|| stolen as f64 / ticks as f64 * 100.0),
        throttle: crate::throttle::of(&ran),
        reps: ran.len(),
        failed: failed.len(),
        failure: failed.first().and_then(|r| r.message.clone()),
        timed_out: failed.iter().filter(|r| r.status == CellStatus::TimedOut).count(),
        cpu_dma_latency_us: ran.iter().filter_map(|r| r.cpu_dma_latency_us).max(),
        signalled: measured_samples().filter(|s| s.signal.is_some()).count(),
        nonzero_exit: measured_samples().filter(|s| s.exit_code.is_some_and(|c| c != 0)).count(),
        makespan: per(&|r| r.makespan_s),
        user_total: per(&|r| sum(r, &|s| s.user_s)),
        sys_total: per(&|r| sum(r, &|s| s.sys_s)),
        cpu_pct_total: per(&|r| {
            if r.makespan_s > 0.0 {
                sum(r, &|s| s.work_cpu_s()) / r.makespan_s * 100.0
            } else {
                0.0
            }
        }),
        invol_total: per(&|r| sum(r, &|s| s.involuntary_csw as f64)),
        vol_total: per(&|r| sum(r, &|s| s.voluntary_csw as f64)),
        wall_per_proc: per(&|r| avg(r, &|s| s.wall_s)),
        user_per_proc: per(&|r| avg(r, &|s| s.user_s)),
        sys_per_proc: per(&|r| avg(r, &|s| s.sys_s)),
        cpu_pct_per_proc: per(&|r| avg(r, &|s| s.cpu_pct)),
        involuntary_per_proc: per(&|r| avg(r, &|s| s.involuntary_csw as f64)),
        voluntary_per_proc: per(&|r| avg(r, &|s| s.voluntary_csw as f64)),
        throughput: per(&|r| {
            if r.makespan_s > 0.0 {
                r.samples.iter().filter(|s| !s.background).count() as f64 / r.makespan_s
            } else {
                0.0
            }
        }),
        work_rate: per(&|r| {
            if r.makespan_s > 0.0 {
                sum(r, &|s| s.work_units) / r.makespan_s
            } else {
                0.0
            }
        }),
        completion: per(&|r| avg(r, &|s| s.end_offset_s)),
        jain: within(Domain::FRACTION, &|r| {
            jain_index(&measured(r, &|s| {
                if s.wall_s > 0.0 {
                    s.work_units / s.wall_s
                } else {
                    0.0
                }
            }))
            .unwrap_or(nan)
        }),
        max_dev_completion: per(&|r| {
            max_deviation_from_mean(&measured(r, &|s| s.end_offset_s)).unwrap_or(nan)
        }),
        cv_completion: per(&|r| {
            coefficient_of_variation(&measured(r, &|s| s.end_offset_s)).unwrap_or(nan)
        }),
        run_delay_per_proc: known(|s| s.run_delay_s),
        sched_migrations_per_proc: known(|s| s.migrations.map(|m| m as f64)),
        completion_by_rank: by_rank(ran.iter().map(|r| measured(r, &|s| s.end_offset_s))),
        group_share: group_names
            .iter()
            .map(|g| {
                let share = within(Domain::FRACTION, &|r| {
                    let cpu = |s: &schedlab_model::Sample| s.window_cpu_s;
                    let total: f64 = r.samples.iter().map(cpu).sum();
                    let mine: f64 = r.samples.iter().filter(|s| &s.group == g).map(cpu).sum();
                    if total > 0.0 {
                        mine / total
                    } else {
                        nan
                    }
                });
                (g.clone(), share)
            })
            .collect(),
        params,
    })
}

/// Sorts each repetition's values and summarises the k-th smallest over the repetitions that have one.
fn by_rank(reps: impl Iterator<Item = Vec<f64>>) -> Vec<Summary> {
    let mut ranks: Vec<Vec<f64>> = Vec::new();
    for mut xs in reps {
        xs.sort_by(f64::total_cmp);
        for (k, x) in xs.into_iter().enumerate() {
            if ranks.len() <= k {
                ranks.push(Vec::new());
            }
            ranks[k].push(x);
        }
    }
    ranks.iter().map(|xs| Summary::in_domain(xs, Domain::NonNegative).unwrap_or(EMPTY)).collect()
}

/// A measured repetition that ended well, for tests.
#[cfg(test)]
pub(crate) fn test_record(
    params: CellParams,
    rep: u32,
    makespan_s: f64,
    samples: Vec<schedlab_model::Sample>,
) -> CellRecord {
    CellRecord { params, rep, ordinal: rep, makespan_s, samples, ..Default::default() }
}

/// [`test_record`] of cell `cell_id` keyed `key`, one process a sample.
#[cfg(test)]
pub(crate) fn test_cell(
    cell_id: u32,
    key: impl Into<String>,
    rep: u32,
    makespan_s: f64,
    samples: Vec<schedlab_model::Sample>,
) -> CellRecord {
    let processes = samples.len() as u32;
    let params = CellParams { cell_id, key: key.into(), processes, ..Default::default() };
    test_record(params, rep, makespan_s, samples)
}

/// A sample per value, made by `sample` from its index and the value, for tests.
#[cfg(test)]
pub(crate) fn test_samples<T: Copy>(
    values: &[T],
    sample: impl Fn(u32, T) -> schedlab_model::Sample,
) -> Vec<schedlab_model::Sample> {
    let indexed = |(i, &v): (usize, &T)| {
        let index = i as u32;
        schedlab_model::Sample { index, ..sample(index, v) }
    };
    values.iter().enumerate().map(indexed).collect()
}

/// The summary of no data: n = 0, everything NaN, so tables print "-".
pub const EMPTY: Summary = Summary::EMPTY;

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::{Sample, StatDelta};

    fn rec(cell_id: u32, rep: u32, warmup: bool, makespan: f64, invol: &[i64]) -> CellRecord {
        let sample = |_, c| Sample {
            involuntary_csw: c,
            user_s: 1.0,
            wall_s: makespan,
            ..Default::default()
        };
        let samples = test_samples(invol, sample);
        CellRecord { warmup, ..test_cell(cell_id, format!("k{cell_id}"), rep, makespan, samples) }
    }

    #[test]
    fn the_hypervisors_steal_is_its_share_of_the_cpus_time_pooled_over_repetitions() {
        let mut a = rec(0, 0, false, 2.0, &[1]);
        a.stat = StatDelta { user: 90, idle: 5, steal: 5, ..Default::default() };
        let mut b = rec(0, 1, false, 2.0, &[1]);
        b.stat = StatDelta { user: 85, idle: 0, steal: 15, ..Default::default() };
        assert_eq!(cell_stats(&[a.clone(), b])[0].steal_pct, Some(10.0)); // 20 of 200 ticks
        a.stat = StatDelta { user: 3, steal: 1, ..Default::default() };
        assert_eq!(cell_stats(&[a])[0].steal_pct, None, "4 ticks are too few to judge");
    }

    #[test]
    fn totals_and_per_process_means_over_repetitions() {
        let recs = vec![
            rec(0, 0, false, 2.0, &[10, 30]),
            rec(0, 1, false, 4.0, &[20, 40]),
            rec(0, 0, true, 100.0, &[1000, 1000]),
        ];
        let s = &cell_stats(&recs)[0];
        assert_eq!(s.reps, 2, "the warm-up is excluded");
        assert_eq!(s.invol_total.mean, 50.0); // (40 + 60) / 2
        assert_eq!(s.involuntary_per_proc.mean, 25.0); // (20 + 30) / 2
        assert_eq!(s.makespan.mean, 3.0);
        // 2 CPU-seconds over 2 s = 100%, over 4 s = 50%
        assert_eq!(s.cpu_pct_total.mean, 75.0);
        assert_eq!(s.throughput.mean, 0.75); // (2/2 + 2/4) / 2
    }

    #[test]
    fn background_is_kept_out_of_the_figures_but_counted_in_cpu_shares() {
        let mut r = rec(0, 0, false, 2.0, &[10, 10, 99]);
        r.samples[2].background = true;
        r.samples[2].group = "bg".into();
        r.samples[2].user_s = 2.0;
        r.samples[2].window_cpu_s = 2.0;
        for s in &mut r.samples[..2] {
            s.group = "main".into();
            s.window_cpu_s = 1.0;
            s.work_units = 100.0;
            s.end_offset_s = 2.0;
        }
        r.samples[1].work_units = 300.0; // throughputs 50 and 150: Jain = 200^2 / (2 * 25000) = 0.8
        r.samples[1].end_offset_s = 1.0;
        let s = &cell_stats(&[r])[0];
        assert_eq!(s.invol_total.mean, 20.0, "the background worker's switches are not counted");
        assert_eq!(s.throughput.mean, 1.0, "2 measured processes in 2 s");
        assert!((s.jain.mean - 0.8).abs() < 1e-12, "{}", s.jain.mean);
        assert_eq!(s.max_dev_completion.mean, 0.5);
        let shares: Vec<(&str, f64)> =
            s.group_share.iter().map(|(g, x)| (g.as_str(), x.mean)).collect();
        assert_eq!(shares, vec![("main", 0.5), ("bg", 0.5)], "1+1 CPU-s against 2 CPU-s");
    }

    #[test]
    fn completion_times_are_ranked_within_each_repetition() {
        let mut a = rec(0, 0, false, 3.0, &[0, 0, 0]);
        let mut b = rec(0, 1, false, 3.0, &[0, 0]);
        for (r, ends) in [(&mut a, &[3.0, 1.0, 2.0][..]), (&mut b, &[2.0, 4.0][..])] {
            for (s, e) in r.samples.iter_mut().zip(ends) {
                s.end_offset_s = *e;
            }
        }
        a.samples.push(Sample { end_offset_s: 0.1, background: true, ..Default::default() });
        let s = &cell_stats(&[a, b])[0];
        let ranks: Vec<(f64, usize)> = s.completion_by_rank.iter().map(|x| (x.mean, x.n)).collect();
        // rep 0 sorted 1, 2, 3 (the background worker is not ranked); rep 1 sorted 2, 4.
        assert_eq!(ranks, vec![(1.5, 2), (3.0, 2), (3.0, 1)]);
    }

    #[test]
    fn repetitions_with_failed_workers_are_left_out_of_the_means_and_counted() {
        let ok = rec(1, 0, false, 2.0, &[1, 1]);
        let mut bad = rec(1, 1, false, 9.0, &[9, 9]);
        bad.samples[1].exit_code = Some(1);
        bad.status = CellStatus::Failed;
        bad.message = Some("1 worker of 2 exited with status != 0 (worker 1: status 1)".into());
        let mut slow = rec(1, 2, false, 30.0, &[30, 30]);
        slow.samples[0].signal = Some(9);
        slow.samples[0].timed_out = true;
        slow.status = CellStatus::TimedOut;
        let s = &cell_stats(&[ok, bad, slow])[0];
        assert_eq!((s.reps, s.failed, s.timed_out, s.nonzero_exit, s.signalled), (1, 2, 1, 1, 1));
        assert_eq!(s.makespan.mean, 2.0, "only the ok repetition counts");
        assert_eq!(s.wall_per_proc.mean, 2.0);
        assert!(s.failure.as_deref().unwrap().contains("exited with status != 0"));
    }

    #[test]
    fn failed_repetitions_are_counted_not_averaged() {
        let mut f = rec(1, 0, false, 0.0, &[]);
        f.status = CellStatus::Failed;
        f.message = Some("admission refused".into());
        let s = &cell_stats(&[f])[0];
        assert_eq!((s.reps, s.failed), (0, 1));
        assert_eq!(s.failure.as_deref(), Some("admission refused"));
        assert!(s.makespan.mean.is_nan());
    }
}
