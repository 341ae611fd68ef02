//! The figures of the field's benchmarks, one [`BenchFigure`] each in [`FIGURES`]: its name
//! (in JSON, CSV and `compare --metric`, the names scheduler reviews quote), header, unit,
//! decimals, description and where its value is in a worker's [`BenchFigures`]. A native kind
//! (`messaging`, `pipe`, `schbench`) and a command whose output was parsed (`parse =
//! "hackbench" | "perf-bench-pipe" | "schbench"`) fill the same shape, so an original and its
//! native kind compare name for name. [`BenchStats`] summarises each over a cell's
//! repetitions; `show`, `export --per cell`, `compare` and the report read the list.

use crate::cells::EMPTY;
use crate::{Domain, Summary};
use schedlab_model::{BenchFigures, CellParams, CellRecord};
use std::collections::BTreeMap;

/// One benchmark figure.
#[derive(Debug, Clone, Copy)]
pub struct BenchFigure {
    /// Its name in JSON and CSV (`<name>`, `<name>_ci_low`, `<name>_ci_high`) and as a
    /// `compare --metric`, stable across versions.
    pub name: &'static str,
    /// Its column header.
    pub header: &'static str,
    /// Decimals shown.
    pub digits: usize,
    /// What it is, with its unit (`compare`'s label).
    pub description: &'static str,
    /// Its value in one worker's figures (None: that benchmark does not state it).
    pub value: fn(&BenchFigures) -> Option<f64>,
}

// A figure is its name.
impl PartialEq for BenchFigure {
    fn eq(&self, other: &BenchFigure) -> bool {
        self.name == other.name
    }
}

impl Eq for BenchFigure {}

impl std::hash::Hash for BenchFigure {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h)
    }
}

const fn figure(
    name: &'static str,
    header: &'static str,
    digits: usize,
    description: &'static str,
    value: fn(&BenchFigures) -> Option<f64>,
) -> BenchFigure {
    BenchFigure { name, header, digits, description, value }
}

/// hackbench's `Time:`.
pub const TIME: BenchFigure = figure(
    "time_s",
    "time [s]",
    3,
    "messaging (hackbench) time from the start to the last task's end [s]",
    |b| b.time_s,
);
/// perf's `usecs/op`.
pub const US_PER_OP: BenchFigure =
    figure("us_per_op", "us/op", 3, "pipe (perf bench sched pipe) µs per round trip", |b| {
        b.us_per_op
    });
/// perf's `ops/sec`.
pub const OPS_PER_S: BenchFigure =
    figure("ops_per_s", "ops/s", 0, "pipe (perf bench sched pipe) round trips per second", |b| {
        b.ops_per_s
    });
/// A schbench percentile: `$field.$p` of the worker's figures.
macro_rules! percentile {
    ($(#[$doc:meta])* $id:ident, $name:literal, $header:literal, $field:ident . $p:ident, $what:literal) => {
        $(#[$doc])*
        pub const $id: BenchFigure =
            figure($name, $header, 1, concat!("schbench ", $what), |b| b.$field.map(|x| x.$p));
    };
}

percentile!(
    /// schbench's wake-up latency, median.
    WAKEUP_P50, "wakeup_p50_us", "wakeup p50 [us]", wakeup_us.p50, "wake-up latency p50 [µs]"
);
percentile!(
    /// schbench's wake-up latency, 90th percentile.
    WAKEUP_P90, "wakeup_p90_us", "wakeup p90 [us]", wakeup_us.p90, "wake-up latency p90 [µs]"
);
percentile!(
    /// schbench's wake-up latency, 99th percentile: its headline.
    WAKEUP_P99, "wakeup_p99_us", "wakeup p99 [us]", wakeup_us.p99, "wake-up latency p99 [µs]"
);
percentile!(
    /// schbench's wake-up latency, 99.9th percentile.
    WAKEUP_P999, "wakeup_p999_us", "wakeup p99.9 [us]", wakeup_us.p999, "wake-up latency p99.9 [µs]"
);
percentile!(
    /// schbench's request latency, median.
    REQUEST_P50, "request_p50_us", "request p50 [us]", request_us.p50, "request latency p50 [µs]"
);
percentile!(
    /// schbench's request latency, 90th percentile.
    REQUEST_P90, "request_p90_us", "request p90 [us]", request_us.p90, "request latency p90 [µs]"
);
percentile!(
    /// schbench's request latency, 99th percentile.
    REQUEST_P99, "request_p99_us", "request p99 [us]", request_us.p99, "request latency p99 [µs]"
);
percentile!(
    /// schbench's request latency, 99.9th percentile.
    REQUEST_P999, "request_p999_us", "request p99.9 [us]", request_us.p999, "request latency p99.9 [µs]"
);
percentile!(
    /// schbench's requests per second, 20th percentile of its one-second samples.
    RPS_P20, "rps_p20", "rps p20", rps.p20, "requests per second, p20 of 1 s samples"
);
percentile!(
    /// schbench's requests per second, median of its one-second samples: its headline.
    RPS_P50, "rps_p50", "rps p50", rps.p50, "requests per second, p50 of 1 s samples"
);
percentile!(
    /// schbench's requests per second, 90th percentile of its one-second samples.
    RPS_P90, "rps_p90", "rps p90", rps.p90, "requests per second, p90 of 1 s samples"
);

/// Every benchmark figure, in the order tables show them.
pub const FIGURES: &[BenchFigure] = &[
    TIME,
    US_PER_OP,
    OPS_PER_S,
    WAKEUP_P50,
    WAKEUP_P90,
    WAKEUP_P99,
    WAKEUP_P999,
    REQUEST_P50,
    REQUEST_P90,
    REQUEST_P99,
    REQUEST_P999,
    RPS_P20,
    RPS_P50,
    RPS_P90,
];

impl BenchFigure {
    /// Whether a higher value is better: rates (round trips and requests per second); every
    /// time and latency is better lower.
    pub fn higher_is_better(&self) -> bool {
        [OPS_PER_S, RPS_P20, RPS_P50, RPS_P90].contains(self)
    }

    /// Its value for one stored repetition: the mean over the measured workers that state it
    /// (one, for a benchmark kind or a command run once); None for warm-ups, failed
    /// repetitions and repetitions without it.
    pub fn of_repetition(&self, r: &CellRecord) -> Option<f64> {
        if r.warmup || !r.status.is_ok() {
            return None;
        }
        let xs: Vec<f64> = r
            .samples
            .iter()
            .filter(|s| !s.background)
            .filter_map(|s| s.bench().and_then(self.value))
            .filter(|x| x.is_finite())
            .collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// A cell's benchmark figures over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchStats {
    /// Which cell.
    pub params: CellParams,
    /// Where its figures come from (`messaging`, `hackbench`, ...), as its workers said.
    pub source: String,
    /// Repetitions with figures.
    pub reps: usize,
    /// Each figure of [`FIGURES`], in that order (empty where the benchmark has none).
    summaries: Vec<Summary>,
}

impl BenchStats {
    /// Each figure with its summary.
    pub fn iter(&self) -> impl Iterator<Item = (&'static BenchFigure, &Summary)> {
        FIGURES.iter().zip(&self.summaries)
    }
}

impl std::ops::Index<&BenchFigure> for BenchStats {
    type Output = Summary;

    /// Panics for a figure not in [`FIGURES`].
    fn index(&self, f: &BenchFigure) -> &Summary {
        match FIGURES.iter().position(|g| g == f) {
            Some(i) => &self.summaries[i],
            None => panic!("{} is not in bench::FIGURES", f.name),
        }
    }
}

/// The cells of a run whose workers stated benchmark figures, in cell order.
pub fn bench_stats(records: &[CellRecord]) -> Vec<BenchStats> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup) {
        by_cell.entry(r.params.cell_id).or_default().push(r);
    }
    by_cell
        .into_values()
        .filter_map(|reps| {
            let source = reps
                .iter()
                .flat_map(|r| r.samples.iter().filter_map(|s| s.bench()))
                .map(|b| b.source.clone())
                .next()?;
            let summaries: Vec<Summary> = FIGURES
                .iter()
                .map(|f| {
                    let xs: Vec<f64> = reps.iter().filter_map(|r| f.of_repetition(r)).collect();
                    Summary::in_domain(&xs, Domain::NonNegative).unwrap_or(EMPTY)
                })
                .collect();
            let with = |r: &&&CellRecord| FIGURES.iter().any(|f| f.of_repetition(r).is_some());
            Some(BenchStats {
                params: reps[0].params.clone(),
                source,
                reps: reps.iter().filter(with).count(),
                summaries,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
