//! One number per cell repetition, by name: the unit `schedlab compare` replicates over.
//!
//! Each metric turns one measured repetition into one value, with the same definitions
//! as [`crate::CellStats`] (per-process figures are means over the repetition's processes),
//! so a comparison and a table of the same run agree.

use crate::rt::{self, RtFigure};
use crate::trace::{self, TraceFigure};
use schedlab_model::{CellRecord, Sample};

/// A per-repetition figure of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Mean wall seconds per process.
    WallPerProc,
    /// Release to last reap, seconds.
    Makespan,
    /// Mean involuntary context switches per process (`show`'s `preempted_per_proc`; its
    /// `preempted` is the cell's total).
    InvoluntaryPerProc,
    /// Mean voluntary context switches per process (`show`'s `blocked_per_proc`; its
    /// `blocked` is the cell's total).
    VoluntaryPerProc,
    /// Mean user CPU seconds per process.
    UserPerProc,
    /// Processes completed per second (processes / makespan).
    Throughput,
    /// Mean time runnable but waiting for a CPU per process, from the kernel trace, seconds.
    RunnablePerProc,
    /// The 99th percentile wake-up latency (woken to running) of the repetition's processes
    /// pooled, from the kernel trace, microseconds.
    WakeupP99,
    /// Mean kernel migrations per process, from the kernel trace.
    MigrationsPerProc,
    /// Mean time runnable but waiting for a CPU per process, from the scheduler's own
    /// accounting at each exit (`Sample::run_delay_s`), seconds: no trace needed.
    RunDelayPerProc,
    /// Mean migrations per process, from the scheduler's own accounting (`Sample::migrations`).
    SchedMigrationsPerProc,
    /// A real-time figure of a periodic set ([`crate::rt::FIGURES`]), per repetition as
    /// [`crate::RtStats`] counts it.
    Rt(&'static RtFigure),
    /// A benchmark figure ([`crate::bench::FIGURES`]: hackbench's time, perf's pipe, schbench's
    /// percentiles), per repetition the mean over the workers that state it.
    Bench(&'static crate::BenchFigure),
}

impl Metric {
    /// Every metric, in the order reports list them.
    pub const ALL: [Metric; 6] = [
        Metric::WallPerProc,
        Metric::Makespan,
        Metric::InvoluntaryPerProc,
        Metric::VoluntaryPerProc,
        Metric::UserPerProc,
        Metric::Throughput,
    ];

    /// The metrics from the scheduler's own per-process accounting: every run stored since
    /// it was recorded has them, traced or not (None for older runs).
    pub const SCHED: [Metric; 2] = [Metric::RunDelayPerProc, Metric::SchedMigrationsPerProc];

    /// Every metric [`Metric::parse`] knows: [`Metric::ALL`], [`Metric::SCHED`],
    /// [`Metric::TRACE`], then every real-time figure.
    pub fn every() -> impl Iterator<Item = Metric> {
        let rt = rt::FIGURES.iter().map(Metric::Rt);
        let bench = crate::bench::FIGURES.iter().map(Metric::Bench);
        Metric::ALL.into_iter().chain(Metric::SCHED).chain(Metric::TRACE).chain(rt).chain(bench)
    }

    /// Whether only periodic task sets have it.
    pub fn needs_periodic(self) -> bool {
        matches!(self, Metric::Rt(_))
    }

    /// The metrics only traced repetitions have (`run --trace`).
    pub const TRACE: [Metric; 3] =
        [Metric::RunnablePerProc, Metric::WakeupP99, Metric::MigrationsPerProc];

    /// Whether only traced repetitions have it.
    pub fn needs_trace(self) -> bool {
        Metric::TRACE.contains(&self)
    }

    /// The trace figure a trace metric is made of, which gives its name, label and value.
    pub fn trace_figure(self) -> Option<&'static TraceFigure> {
        match self {
            Metric::RunnablePerProc => Some(&trace::RUNNABLE),
            Metric::WakeupP99 => Some(&trace::WAKEUP_P99),
            Metric::MigrationsPerProc => Some(&trace::MIGRATIONS),
            _ => None,
        }
    }

    /// The name used on the command line and in exports.
    pub fn name(self) -> &'static str {
        if let Some(f) = self.trace_figure() {
            return f.name;
        }
        match self {
            Metric::Rt(f) => f.name,
            Metric::Bench(f) => f.name,
            Metric::WallPerProc => "wall",
            Metric::Makespan => "makespan",
            Metric::InvoluntaryPerProc => "involuntary",
            Metric::VoluntaryPerProc => "voluntary",
            Metric::UserPerProc => "user",
            Metric::Throughput => "throughput",
            Metric::RunDelayPerProc => "run_delay",
            Metric::SchedMigrationsPerProc => "sched_migrations",
            Metric::RunnablePerProc | Metric::WakeupP99 | Metric::MigrationsPerProc => {
                unreachable!("a trace metric's name is its figure's")
            }
        }
    }

    /// Whether a higher value is the better one (throughput, requests and jobs per second,
    /// jobs released); otherwise lower is better (times, latencies, switches, migrations,
    /// misses, violations). A verdict calls a change in the worse direction a regression.
    pub fn higher_is_better(self) -> bool {
        match self {
            Metric::Throughput => true,
            Metric::Bench(f) => f.higher_is_better(),
            Metric::Rt(f) => f.higher_is_better(),
            _ => false,
        }
    }

    /// A label with its unit, for table headers and axes.
    pub fn label(self) -> &'static str {
        if let Some(label) = self.trace_figure().and_then(|f| f.metric) {
            return label;
        }
        match self {
            Metric::Rt(f) => f.description,
            Metric::Bench(f) => f.description,
            Metric::WallPerProc => "wall per process [s]",
            Metric::Makespan => "makespan [s]",
            Metric::InvoluntaryPerProc => "involuntary switches per process",
            Metric::VoluntaryPerProc => "voluntary switches per process",
            Metric::UserPerProc => "user CPU per process [s]",
            Metric::Throughput => "throughput [processes/s]",
            Metric::RunDelayPerProc => "run delay per process [s]",
            Metric::SchedMigrationsPerProc => "migrations per process (scheduler's count)",
            Metric::RunnablePerProc | Metric::WakeupP99 | Metric::MigrationsPerProc => {
                unreachable!("a trace metric's label is its figure's")
            }
        }
    }

    /// The other names [`Metric::parse`] accepts for it (`invol`, `vol`, the `*_per_proc`
    /// spellings). `preempted` and `blocked` are none: in `show` they are a cell's totals, and
    /// these metrics are means per process (`preempted_per_proc`, `blocked_per_proc`).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Metric::WallPerProc => &["wall_per_proc"],
            Metric::InvoluntaryPerProc => &["invol", "invol_per_proc", "preempted_per_proc"],
            Metric::VoluntaryPerProc => &["vol", "vol_per_proc", "blocked_per_proc"],
            Metric::UserPerProc => &["user_per_proc"],
            Metric::RunnablePerProc => &["runnable_per_proc", "waiting"],
            Metric::WakeupP99 => &["wakeup"],
            Metric::MigrationsPerProc => &["migrations_per_proc"],
            Metric::RunDelayPerProc => &["run_delay_per_proc"],
            Metric::SchedMigrationsPerProc => &["k_migrations"],
            Metric::Makespan | Metric::Throughput | Metric::Rt(_) | Metric::Bench(_) => &[],
        }
    }

    /// Parses a name or one of its [`Metric::aliases`].
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::every().find(|m| m.name() == name || m.aliases().contains(&name))
    }

    /// The metric's value for one repetition; None for warm-ups, failed starts and empty repetitions.
    pub fn value(self, r: &CellRecord) -> Option<f64> {
        if !counts(r) {
            return None;
        }
        // Background workers are stored but never in the measured figures (as in cell_stats).
        let measured: Vec<&Sample> = r.samples.iter().filter(|s| !s.background).collect();
        if measured.is_empty() {
            return None;
        }
        let per_proc = |f: fn(&Sample) -> f64| {
            measured.iter().map(|s| f(s)).sum::<f64>() / measured.len() as f64
        };
        // A figure some process lacks (a run stored before it) gives no value.
        let per_proc_known = |f: fn(&Sample) -> Option<f64>| {
            measured.iter().map(|s| f(s)).sum::<Option<f64>>().map(|t| t / measured.len() as f64)
        };
        let v = match self {
            Metric::WallPerProc => per_proc(|s| s.wall_s),
            Metric::Makespan => r.makespan_s,
            Metric::InvoluntaryPerProc => per_proc(|s| s.involuntary_csw as f64),
            Metric::VoluntaryPerProc => per_proc(|s| s.voluntary_csw as f64),
            Metric::UserPerProc => per_proc(|s| s.user_s),
            Metric::Throughput => {
                if r.makespan_s > 0.0 {
                    measured.len() as f64 / r.makespan_s
                } else {
                    return None;
                }
            }
            Metric::RunDelayPerProc => per_proc_known(|s| s.run_delay_s)?,
            Metric::SchedMigrationsPerProc => per_proc_known(|s| s.migrations.map(|m| m as f64))?,
            Metric::RunnablePerProc | Metric::WakeupP99 | Metric::MigrationsPerProc => {
                self.trace_figure()?.of_repetition(r)?
            }
            Metric::Rt(f) => f.of_repetition(r)?,
            Metric::Bench(f) => f.of_repetition(r)?,
        };
        v.is_finite().then_some(v)
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a stored repetition is one the statistics count (as in [`crate::cell_stats`]).
pub(crate) fn counts(r: &CellRecord) -> bool {
    !r.warmup && r.status.is_ok() && !r.samples.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell_stats;
    use crate::cells::{test_cell, test_record, test_samples};
    use schedlab_model::{CellParams, CellStatus};

    fn rec(warmup: bool, status: CellStatus, makespan: f64, walls: &[f64]) -> CellRecord {
        let samples = test_samples(walls, |i, w| Sample {
            wall_s: w,
            user_s: w / 2.0,
            involuntary_csw: 10 * i as i64,
            voluntary_csw: 3,
            ..Default::default()
        });
        CellRecord { warmup, status, ..test_cell(0, "k", 0, makespan, samples) }
    }

    #[test]
    fn values_by_hand() {
        let r = rec(false, CellStatus::Ok, 4.0, &[1.0, 2.0, 3.0, 6.0]);
        assert_eq!(Metric::WallPerProc.value(&r), Some(3.0));
        assert_eq!(Metric::Makespan.value(&r), Some(4.0));
        assert_eq!(Metric::InvoluntaryPerProc.value(&r), Some(15.0)); // (0 + 10 + 20 + 30) / 4
        assert_eq!(Metric::VoluntaryPerProc.value(&r), Some(3.0));
        assert_eq!(Metric::UserPerProc.value(&r), Some(1.5));
        assert_eq!(Metric::Throughput.value(&r), Some(1.0)); // 4 processes in 4 s
    }

    #[test]
    fn warmups_failures_and_empty_repetitions_have_no_value() {
        assert_eq!(Metric::WallPerProc.value(&rec(true, CellStatus::Ok, 1.0, &[1.0])), None);
        assert_eq!(Metric::WallPerProc.value(&rec(false, CellStatus::Failed, 1.0, &[1.0])), None);
        assert_eq!(Metric::WallPerProc.value(&rec(false, CellStatus::Ok, 1.0, &[])), None);
        assert_eq!(Metric::Throughput.value(&rec(false, CellStatus::Ok, 0.0, &[1.0])), None);
        // A timed-out repetition did not finish its work: left out, as in cell_stats.
        assert_eq!(Metric::WallPerProc.value(&rec(false, CellStatus::TimedOut, 1.0, &[2.0])), None);
    }

    #[test]
    fn means_agree_with_cell_stats() {
        let recs = [
            rec(false, CellStatus::Ok, 4.0, &[1.0, 2.0, 3.0, 6.0]),
            rec(false, CellStatus::Ok, 5.0, &[2.0, 2.0, 4.0, 4.0]),
        ];
        let s = &cell_stats(&recs)[0];
        let mean = |m: Metric| recs.iter().filter_map(|r| m.value(r)).sum::<f64>() / 2.0;
        assert_eq!(mean(Metric::WallPerProc), s.wall_per_proc.mean);
        assert_eq!(mean(Metric::Makespan), s.makespan.mean);
        assert_eq!(mean(Metric::InvoluntaryPerProc), s.involuntary_per_proc.mean);
        assert_eq!(mean(Metric::VoluntaryPerProc), s.voluntary_per_proc.mean);
        assert_eq!(mean(Metric::UserPerProc), s.user_per_proc.mean);
        assert_eq!(mean(Metric::Throughput), s.throughput.mean);
    }

    #[test]
    fn background_workers_are_left_out() {
        let mut r = rec(false, CellStatus::Ok, 2.0, &[1.0, 3.0, 50.0]);
        r.samples[2].background = true;
        assert_eq!(Metric::WallPerProc.value(&r), Some(2.0));
        assert_eq!(Metric::Throughput.value(&r), Some(1.0), "2 measured processes in 2 s");
        let s = &cell_stats(&[r.clone()])[0];
        assert_eq!(Metric::InvoluntaryPerProc.value(&r), Some(s.involuntary_per_proc.mean));
    }

    #[test]
    fn trace_metrics_come_from_the_measured_workers_traces_only() {
        use schedlab_model::trace::{CellTrace, WorkerTrace};
        let mut r = rec(false, CellStatus::Ok, 4.0, &[1.0, 2.0, 3.0]);
        for m in Metric::TRACE {
            assert_eq!(m.value(&r), None, "{m}: an untraced repetition has no value");
            assert!(m.needs_trace());
        }
        assert!(!Metric::WallPerProc.needs_trace());
        for (i, s) in r.samples.iter_mut().enumerate() {
            s.pid = 100 + i as i32;
        }
        r.samples[2].background = true;
        let w = |pid: i32, runnable_s: f64, migrations: u64| WorkerTrace {
            pid,
            runnable_s,
            migrations,
            ..Default::default()
        };
        r.trace = Some(CellTrace {
            workers: vec![w(100, 1.0, 2), w(101, 3.0, 4), w(102, 50.0, 50)],
            ..Default::default()
        });
        assert_eq!(Metric::RunnablePerProc.value(&r), Some(2.0));
        assert_eq!(Metric::MigrationsPerProc.value(&r), Some(3.0));
        assert_eq!(Metric::WakeupP99.value(&r), None, "no wake-up was timed");
    }

    #[test]
    fn sched_metrics_are_means_of_the_free_figures_and_empty_when_one_is_missing() {
        let mut r = rec(false, CellStatus::Ok, 4.0, &[1.0, 2.0]);
        assert_eq!(Metric::RunDelayPerProc.value(&r), None, "a run stored before them");
        for (s, (delay, moves)) in r.samples.iter_mut().zip([(0.5, 2), (1.5, 4)]) {
            s.run_delay_s = Some(delay);
            s.migrations = Some(moves);
        }
        assert_eq!(Metric::RunDelayPerProc.value(&r), Some(1.0));
        assert_eq!(Metric::SchedMigrationsPerProc.value(&r), Some(3.0));
        assert!(!Metric::RunDelayPerProc.needs_trace());
        r.samples[1].migrations = None;
        assert_eq!(Metric::SchedMigrationsPerProc.value(&r), None);
        assert_eq!(Metric::parse("k_migrations"), Some(Metric::SchedMigrationsPerProc));
    }

    #[test]
    fn names_round_trip() {
        for m in Metric::every() {
            assert_eq!(Metric::parse(m.name()), Some(m));
        }
        assert_eq!(Metric::parse("invol"), Some(Metric::InvoluntaryPerProc));
        assert_eq!(Metric::parse("latency"), None);
        let mut all: Vec<&str> = Metric::every()
            .flat_map(|m| std::iter::once(m.name()).chain(m.aliases().iter().copied()))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a name or alias of two metrics");
    }

    #[test]
    fn preempted_and_blocked_are_show_totals_not_per_process_metrics() {
        // `show --metric preempted` is a cell's total; a per-process mean has its own name.
        assert_eq!(Metric::parse("preempted"), None);
        assert_eq!(Metric::parse("blocked"), None);
        assert_eq!(Metric::parse("preempted_per_proc"), Some(Metric::InvoluntaryPerProc));
        assert_eq!(Metric::parse("blocked_per_proc"), Some(Metric::VoluntaryPerProc));
    }

    #[test]
    fn real_time_metrics_are_the_figures_of_rt_stats_per_repetition() {
        use schedlab_model::{CellRt, Extra, RtTask};
        let task = |jobs: u64, misses: u64| Sample {
            extra: Extra {
                rt: Some(RtTask { jobs, misses, met: jobs - misses, ..Default::default() }),
                ..Default::default()
            },
            ..Default::default()
        };
        let periodic = |rep: u32, tasks: Vec<Sample>| {
            let params = CellParams {
                cell_id: 1,
                key: "set/edf".into(),
                workload_kind: "periodic".into(),
                ..Default::default()
            };
            let rt = Some(CellRt { scheduler: "edf".into(), ..Default::default() });
            CellRecord { rt, ..test_record(params, rep, 1.0, tasks) }
        };
        // 10% and 20% missed; 0.5 and 1.5 misses per task.
        let recs =
            [periodic(0, vec![task(5, 0), task(5, 1)]), periodic(1, vec![task(10, 3), task(5, 0)])];
        let stats = &crate::rt_stats(&recs)[0];
        for f in rt::FIGURES {
            let m = Metric::parse(f.name).expect("every real-time figure is a metric");
            assert!(m.needs_periodic() && !m.needs_trace(), "{m}");
            let values: Vec<f64> = recs.iter().filter_map(|r| m.value(r)).collect();
            let s = &stats.figures[f];
            assert_eq!(values.len(), s.n, "{m}");
            if s.n > 0 {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                assert!((mean - s.mean).abs() < 1e-9, "{m}: {mean} against {}", s.mean);
            }
        }
        assert_eq!(Metric::parse("miss_pct").and_then(|m| m.value(&recs[1])), Some(20.0));
        assert_eq!(Metric::Rt(&rt::MISS_PCT).value(&rec(false, CellStatus::Ok, 1.0, &[1.0])), None);
    }
}
