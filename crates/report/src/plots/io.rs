//! Seed 002's figures, from the I/O statistics of a run: per I/O scheduler (categories, in
//! the order the run listed them), one series per case (workload): the time the case took,
//! its aggregate throughput, and per-call latency percentiles. Error bars are 95% CIs over
//! repetitions, on the log scale (they stay above zero).

use super::{point, series_of, Chart, ChartKind, FigureInput};
use schedlab_analysis::{IoStats, Summary};

fn sched_label(s: &IoStats) -> String {
    s.params.iosched.clone().unwrap_or_else(|| s.schedulers.join("/"))
}

fn by_scheduler(
    d: &FigureInput,
    id: &str,
    title: &str,
    y_label: &str,
    caption: &str,
    pick: fn(&IoStats) -> &Summary,
) -> Vec<Chart> {
    let mut cats: Vec<String> = Vec::new();
    for s in d.io {
        let l = sched_label(s);
        if !cats.contains(&l) {
            cats.push(l);
        }
    }
    let points = d.io.iter().filter_map(|s| {
        let v = pick(s);
        if s.reps == 0 || !v.mean.is_finite() {
            return None;
        }
        let x = cats.iter().position(|c| *c == sched_label(s))?;
        Some((s.params.workload.clone(), point(x, v)))
    });
    let Some(series) = series_of(points) else { return Vec::new() };
    vec![Chart {
        kind: ChartKind::Lines,
        id: id.into(),
        title: title.into(),
        caption: String::new(),
        x_label: "I/O scheduler".into(),
        y_label: y_label.into(),
        categories: cats,
        series,
        reference: None,
        states: Default::default(),
    }
    .with_caption(caption)]
}

/// Seed 002 Figures 1-3: time to finish each case, per scheduler.
pub(super) fn io_time(d: &FigureInput) -> Vec<Chart> {
    by_scheduler(
        d,
        "io-time",
        "Time to finish, per I/O scheduler",
        "time [s]",
        "Release to the last worker's exit.",
        |s| &s.makespan,
    )
}

/// Aggregate throughput per scheduler.
pub(super) fn io_throughput(d: &FigureInput) -> Vec<Chart> {
    by_scheduler(
        d,
        "io-mbs",
        "Throughput, per I/O scheduler",
        "MB/s",
        "All bytes of the cell / its time (10^6 B/s).",
        |s| &s.mb_s,
    )
}

/// Median per-call latency per scheduler.
pub(super) fn io_p50(d: &FigureInput) -> Vec<Chart> {
    by_scheduler(
        d,
        "io-p50",
        "Median latency of a read/write call",
        "p50 [us]",
        "Percentile of each repetition's merged HdrHistogram.",
        |s| &s.lat_p50_us,
    )
}

/// 99th percentile latency per scheduler.
pub(super) fn io_p99(d: &FigureInput) -> Vec<Chart> {
    by_scheduler(
        d,
        "io-p99",
        "99th-percentile latency of a read/write call",
        "p99 [us]",
        "Percentile of each repetition's merged HdrHistogram.",
        |s| &s.lat_p99_us,
    )
}

/// 99.9th percentile latency per scheduler.
pub(super) fn io_p999(d: &FigureInput) -> Vec<Chart> {
    by_scheduler(
        d,
        "io-p999",
        "99.9th-percentile latency of a read/write call",
        "p99.9 [us]",
        "Percentile of each repetition's merged HdrHistogram.",
        |s| &s.lat_p999_us,
    )
}
