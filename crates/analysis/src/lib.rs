//! Pure statistics for schedlab: descriptive summaries, confidence intervals that stay in
//! their quantity's domain, fairness indices, Welch's t-test, ratio-of-means intervals and outlier
//! detection; per-cell aggregation, I/O and real-time figures, per-process outlier
//! flags, run-to-run and within-run comparisons over stored cell records, and corrections
//! for multiple comparisons.
//!
//! Nothing in this crate performs I/O or prints; callers decide how results
//! are stored and shown. Distribution functions (Student t quantiles and
//! tails) come from `statrs` rather than being re-implemented here.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod acceptance;
mod adaptive;
pub mod bench;
pub mod cells;
mod compare;
mod fairness;
mod flags;
mod hist;
mod interval;
mod io;
pub mod knee;
mod metric;
mod moments;
mod multiple;
pub mod noise;
mod outliers;
mod percentile;
mod ratio;
pub mod rt;
mod runs;
mod summary;
pub mod throttle;
pub mod trace;
mod welch;
mod within;

pub use acceptance::{
    acceptance, violations_per_process, weighted_schedulability, wilson, AcceptanceCurve,
    AcceptancePoint, ViolationCurve,
};
pub use adaptive::{judge, main_figure, Decision, Judgement, MainFigure};
pub use bench::{bench_stats, BenchFigure, BenchStats};
pub use cells::{cell_stats, CellStats};
pub use compare::{compare, Comparison};
pub use fairness::{coefficient_of_variation, jain_index, max_deviation_from_mean};
pub use flags::{cell_outliers, CellOutliers, ProcessOutlier, ProcessValue};
pub use interval::{mean_interval, Domain, NoInterval, MIN_VALUES_FOR_INTERVAL};
pub use io::{io_stats, IoStats};
pub use metric::Metric;
pub use multiple::{adjust, benjamini_hochberg, holm, Correction};
pub use outliers::{modified_z_scores, outliers, MODIFIED_Z_THRESHOLD};
pub use percentile::{percentile, percentiles};
pub use ratio::{ratio_of_means, Ratio};
pub use rt::{rt_stats, CpuRt, Placement, RtFigure, RtStats};
pub use runs::{compare_runs, CellComparison, Change, CompareSummary, RunComparison};
pub use summary::{t_critical, t_interval, Summary, DEFAULT_CONFIDENCE};
pub use trace::{trace_stats, TraceStats};
pub use welch::{welch_t_test, Welch};
pub use within::{
    compare_within, run_axes, AxisLevels, LevelCell, LevelGroup, LevelPair, WithinError, WithinRun,
    NO_VALUE,
};
