//! The real-time figures of a periodic set, one [`RtFigure`] each in [`FIGURES`]: its name
//! (in JSON, CSV and `compare --metric`), header, unit, decimals, description, where the
//! tables show it and how one repetition's value is computed. [`super::RtStats`] and its
//! per-CPU breakdown ([`super::CpuRt`]) summarise every figure over the repetitions; the
//! real-time tables, the three-driver table, the per-cell exports and `compare --metric`
//! read the list, so a new figure is one entry here plus the code computing its value.

use crate::cells::EMPTY;
use crate::hist::{merge, quantile_us};
use crate::{Domain, Summary};
use schedlab_model::hist::Histogram;
use schedlab_model::jobs::JobLog;
use schedlab_model::{CellRecord, RtTask, Sample};

/// One repetition's tasks of a periodic set, or the share of them one CPU ran.
#[derive(Debug, Clone)]
pub struct RtRep<'a> {
    /// The measured workers with a task result, in task order.
    pub tasks: Vec<&'a Sample>,
}

impl<'a> RtRep<'a> {
    /// The measured (not background) workers of a repetition that have a task result.
    pub fn of(r: &'a CellRecord) -> RtRep<'a> {
        RtRep { tasks: r.samples.iter().filter(|s| !s.background && s.rt().is_some()).collect() }
    }

    /// Its tasks at positions `idx` (one CPU's share of a partitioned set).
    pub fn subset(&self, idx: &[usize]) -> RtRep<'a> {
        RtRep { tasks: idx.iter().map(|&i| self.tasks[i]).collect() }
    }

    /// The task results.
    pub fn rt(&self) -> impl Iterator<Item = &'a RtTask> + '_ {
        self.tasks.iter().filter_map(|s| s.rt())
    }

    /// The per-job records (present only when the store's `attach_job_logs` loaded them).
    pub fn job_logs(&self) -> impl Iterator<Item = &'a JobLog> + '_ {
        self.tasks.iter().filter_map(|s| s.jobs.as_ref())
    }

    /// A task count summed over the tasks.
    fn sum(&self, f: fn(&RtTask) -> u64) -> u64 {
        self.rt().map(f).sum()
    }

    /// A task figure averaged over the tasks (None without tasks).
    fn mean(&self, f: fn(&RtTask) -> f64) -> Option<f64> {
        let xs: Vec<f64> = self.rt().map(f).collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    }

    /// The `q` quantile of the tasks' scheduling latencies ([`latency`]) merged, µs.
    fn latency_us(&self, q: f64) -> Option<f64> {
        quantile_us(&merge(self.rt().filter_map(latency_hist))?, q)
    }

    /// The `q` quantile of the response times of its finished jobs (per-job records), µs.
    fn response_us(&self, q: f64) -> Option<f64> {
        quantile_us(&responses(self.job_logs()).0, q)
    }
}

/// What a real-time figure counts, which fixes the range its interval stays in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtUnit {
    /// Jobs, misses or violations (a sum, or a mean per task).
    Count,
    /// A percentage, 0 to 100.
    Percent,
    /// Microseconds.
    Micros,
}

impl RtUnit {
    /// The range of its values (intervals stay in it).
    pub fn domain(self) -> Domain {
        match self {
            RtUnit::Count | RtUnit::Micros => Domain::NonNegative,
            RtUnit::Percent => Domain::PERCENT,
        }
    }
}

/// Where the real-time table (`schedlab show`, the report) has a figure's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InTable {
    /// Always.
    Narrow,
    /// In the report, and in `show` with `--wide` only.
    Wide,
    /// Not in the table (exports and `compare --metric` only).
    No,
}

/// One real-time figure of a periodic set's cell.
#[derive(Debug, Clone, Copy)]
pub struct RtFigure {
    /// Its name in JSON and CSV (`<name>`, `<name>_ci_low`, `<name>_ci_high`) and as a
    /// `compare --metric`, stable across versions.
    pub name: &'static str,
    /// Its column header.
    pub header: &'static str,
    /// What it counts.
    pub unit: RtUnit,
    /// Decimals shown.
    pub digits: usize,
    /// What it is, with its unit (`compare`'s label, `--help`).
    pub description: &'static str,
    /// Its value for one repetition (None: that repetition has none, e.g. no latency recorded).
    pub value: fn(&RtRep) -> Option<f64>,
    /// Its column in the real-time table.
    pub in_table: InTable,
    /// In the per-CPU table of partitioned sets too.
    pub per_cpu: bool,
    /// In the three-driver table (dispatcher, sched_ext scheduler, simulation) too.
    pub drivers: bool,
}

// A figure is its name: two entries never share one (`names_are_unique`).
impl PartialEq for RtFigure {
    fn eq(&self, other: &RtFigure) -> bool {
        self.name == other.name
    }
}

impl Eq for RtFigure {}

impl std::hash::Hash for RtFigure {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h)
    }
}

impl RtFigure {
    /// Whether a higher value is better: jobs released; misses, violations and latencies
    /// are better lower.
    pub fn higher_is_better(&self) -> bool {
        *self == JOBS
    }

    /// Its value for one stored repetition (None for warm-ups, failed repetitions and
    /// repetitions without a task result), as [`super::RtStats`] counts it.
    pub fn of_repetition(&self, r: &CellRecord) -> Option<f64> {
        let rep = RtRep::of(r);
        if r.warmup || !r.status.is_ok() || rep.tasks.is_empty() {
            return None;
        }
        (self.value)(&rep).filter(|x| x.is_finite())
    }

    /// Its summary over repetitions.
    pub fn summary(&self, reps: &[RtRep]) -> Summary {
        let xs: Vec<f64> =
            reps.iter().filter_map(|r| (self.value)(r)).filter(|x| x.is_finite()).collect();
        Summary::in_domain(&xs, self.unit.domain()).unwrap_or(EMPTY)
    }
}

/// A figure in the real-time table.
const fn figure(
    name: &'static str,
    header: &'static str,
    unit: RtUnit,
    digits: usize,
    description: &'static str,
    value: fn(&RtRep) -> Option<f64>,
) -> RtFigure {
    RtFigure {
        name,
        header,
        unit,
        digits,
        description,
        value,
        in_table: InTable::Narrow,
        per_cpu: false,
        drivers: false,
    }
}

/// Jobs released.
pub const JOBS: RtFigure = RtFigure {
    per_cpu: true,
    drivers: true,
    ..figure("jobs", "jobs", RtUnit::Count, 0, "jobs released by the set's tasks", |r| {
        Some(r.sum(|x| x.jobs) as f64)
    })
};
/// Deadline misses.
pub const MISSES: RtFigure = RtFigure {
    in_table: InTable::No,
    ..figure("misses", "misses", RtUnit::Count, 0, "deadline misses of the set's tasks", |r| {
        Some(r.sum(|x| x.misses) as f64)
    })
};
/// Misses over jobs.
pub const MISS_PCT: RtFigure = RtFigure {
    per_cpu: true,
    drivers: true,
    ..figure("miss_pct", "missed [%]", RtUnit::Percent, 2, "deadline misses over jobs [%]", |r| {
        let jobs = r.sum(|x| x.jobs);
        (jobs > 0).then(|| 100.0 * r.sum(|x| x.misses) as f64 / jobs as f64)
    })
};
/// Misses per task.
pub const MISSES_PER_PROC: RtFigure = RtFigure {
    in_table: InTable::Wide,
    ..figure(
        "misses_per_proc",
        "misses/proc",
        RtUnit::Count,
        1,
        "deadline misses per task (process)",
        |r| r.mean(|x| x.misses as f64),
    )
};
/// Violated fixed windows per task.
pub const FIXED_VIOLATIONS: RtFigure = RtFigure {
    in_table: InTable::Wide,
    drivers: true,
    ..figure(
        "fixed_violations_per_proc",
        "fixed viol./proc",
        RtUnit::Count,
        1,
        "violated fixed (x, y) windows (back-to-back windows of y deadlines) per task",
        |r| r.mean(|x| x.fixed_violations as f64),
    )
};
/// Violated sliding windows per task.
pub const SLIDING_VIOLATIONS: RtFigure = RtFigure {
    per_cpu: true,
    drivers: true,
    ..figure(
        "sliding_violations_per_proc",
        "sliding viol./proc",
        RtUnit::Count,
        1,
        "violated sliding (x, y) windows (every y consecutive deadlines) per task",
        |r| r.mean(|x| x.sliding_violations as f64),
    )
};
/// Share of periods in violation.
pub const IN_VIOLATION_PCT: RtFigure = RtFigure {
    in_table: InTable::Wide,
    per_cpu: true,
    drivers: true,
    ..figure(
        "in_violation_pct",
        "in violation [%]",
        RtUnit::Percent,
        2,
        "periods spent in violation, mean over tasks [%]",
        |r| r.mean(|x| x.time_in_violation_pct),
    )
};
/// Median scheduling latency.
pub const LATENCY_P50: RtFigure = RtFigure {
    in_table: InTable::Wide,
    ..figure(
        "latency_p50_us",
        "latency p50 [us]",
        RtUnit::Micros,
        1,
        "median scheduling latency (wake-up, or hand-off under the dispatchers) [µs]",
        |r| r.latency_us(0.5),
    )
};
/// 99th percentile scheduling latency.
pub const LATENCY_P99: RtFigure = figure(
    "latency_p99_us",
    "latency p99 [us]",
    RtUnit::Micros,
    1,
    "99th percentile scheduling latency (wake-up, or hand-off under the dispatchers) [µs]",
    |r| r.latency_us(0.99),
);
/// Longest scheduling latency.
pub const LATENCY_MAX: RtFigure = RtFigure {
    in_table: InTable::No,
    ..figure(
        "latency_max_us",
        "latency max [us]",
        RtUnit::Micros,
        1,
        "longest scheduling latency (wake-up, or hand-off under the dispatchers) [µs]",
        |r| r.latency_us(1.0),
    )
};

/// 99th percentile response time of the finished jobs.
pub const RESPONSE_P99: RtFigure = RtFigure {
    in_table: InTable::Wide,
    ..figure(
        "response_p99_us",
        "response p99 [us]",
        RtUnit::Micros,
        1,
        "99th percentile response time (finish - release) of the finished jobs [µs]",
        |r| r.response_us(0.99),
    )
};

/// Every real-time figure, in the order the tables show them.
pub const FIGURES: &[RtFigure] = &[
    JOBS,
    MISSES,
    MISS_PCT,
    MISSES_PER_PROC,
    FIXED_VIOLATIONS,
    SLIDING_VIOLATIONS,
    IN_VIOLATION_PCT,
    LATENCY_P50,
    LATENCY_P99,
    LATENCY_MAX,
    RESPONSE_P99,
];

/// Each figure of [`FIGURES`] summarised over the repetitions of a cell (or of a CPU's
/// share of it), in that order; indexed by figure (`stats.figures[&MISS_PCT]`).
#[derive(Debug, Clone, PartialEq)]
pub struct RtSummaries(Vec<Summary>);

impl RtSummaries {
    /// Every figure's summary over `reps`.
    pub fn of(reps: &[RtRep]) -> RtSummaries {
        RtSummaries(FIGURES.iter().map(|f| f.summary(reps)).collect())
    }

    /// Each figure with its summary.
    pub fn iter(&self) -> impl Iterator<Item = (&'static RtFigure, &Summary)> {
        FIGURES.iter().zip(&self.0)
    }
}

impl std::ops::Index<&RtFigure> for RtSummaries {
    type Output = Summary;

    /// Panics for a figure not in [`FIGURES`]: `every_figure_is_in_the_list` names it.
    fn index(&self, f: &RtFigure) -> &Summary {
        match FIGURES.iter().position(|g| g == f) {
            Some(i) => &self.0[i],
            None => panic!("{} is not in rt::FIGURES", f.name),
        }
    }
}

/// A task's scheduling latency, kind and histogram: its wake-up latency when it timed its own
/// releases, else the hand-off latency its worker timed under the dispatcher.
pub(crate) fn latency(x: &RtTask) -> Option<(&'static str, &str)> {
    recorded(&x.wakeup_hist)
        .map(|h| ("wake-up", h))
        .or_else(|| recorded(&x.handoff_hist).map(|h| ("hand-off", h)))
}

/// An encoded histogram that was recorded (not absent or empty).
fn recorded(h: &Option<String>) -> Option<&str> {
    h.as_deref().filter(|h| !h.is_empty())
}

/// [`latency`]'s histogram alone.
pub(crate) fn latency_hist(x: &RtTask) -> Option<&str> {
    latency(x).map(|(_, h)| h)
}

/// The response times (finish - release, ns) of the finished jobs in `logs`, and the count of
/// jobs that never finished.
pub(crate) fn responses<'a>(logs: impl Iterator<Item = &'a JobLog>) -> (Histogram<u64>, u64) {
    let mut h = Histogram::new(3).expect("3 significant digits is valid");
    let mut unfinished = 0;
    for j in logs.flat_map(|l| &l.jobs) {
        match j.finish_ns {
            // An auto-resizing histogram grows to take any value (saturating_record would not grow it).
            Some(f) => {
                let _ = h.record(f);
            }
            None => unfinished += 1,
        }
    }
    (h, unfinished)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = FIGURES.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FIGURES.len(), "two figures share a name");
    }

    #[test]
    fn summaries_follow_the_list() {
        let s = RtSummaries::of(&[]);
        assert_eq!(
            s.iter().map(|(f, _)| f.name).collect::<Vec<_>>(),
            FIGURES.iter().map(|f| f.name).collect::<Vec<_>>()
        );
        assert_eq!(s[&MISS_PCT].n, 0, "no repetition: empty");
    }

    #[test]
    #[should_panic(expected = "not in rt::FIGURES")]
    fn a_figure_left_out_of_the_list_has_no_summary() {
        let stray = RtFigure { name: "stray", ..JOBS };
        let _ = &RtSummaries::of(&[])[&stray];
    }
}
