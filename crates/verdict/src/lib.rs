//! Verdicts for run-to-run comparisons: per (cell, figure) one of `regressed`, `improved`,
//! `same` or `undecided`, with the error rates it was built to keep.
//!
//! The unit is the repetition (one run of one cell, one value): nothing finer is ever
//! resampled. Values are positive quantities (times, counts, rates) and are compared on their
//! natural logarithms, so a change is a ratio. The pieces:
//!
//! - [`permutation_p`]: a two-sided permutation test over whole repetitions;
//! - [`ratio_interval`]: the ratio of geometric means with a Welch t-interval;
//! - [`Floor`]: this machine's A/A noise floor for one (cell, figure);
//! - [`judge`]: the verdict rule over a whole family of pairs (see its documentation);
//! - [`repetitions_needed`] and [`next_step`]: how many more repetitions undecided pairs need;
//! - [`lkp`], [`pinpoint`], [`mmtests`], [`welch`]: other tools' rules, for comparing error
//!   rates side by side.
//!
//! Nothing here performs I/O or prints. Monte Carlo uses a fixed seed, so results are
//! deterministic.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod floor;
mod interval;
mod judge;
mod logs;
mod others;
mod permutation;
mod sizing;

#[cfg(test)]
mod simulation;

pub use floor::{run_drift, Floor};
pub use interval::ratio_interval;
pub use judge::{
    judge, Better, DeltaSource, Judged, Pair, Params, Verdict, DEFAULT_ALPHA, DEFAULT_MIN_CHANGE,
    DEFAULT_SAME_WITHIN, MIN_FLOOR_DELTA,
};
pub use others::{
    kolmogorov_smirnov_p, lkp, mann_whitney_p, mmtests, pinpoint, pinpoint_at,
    pinpoint_high_threshold, welch, OtherRule, PINPOINT_LOW_THRESHOLD,
};
pub use permutation::{permutation_p, EXACT_SPLITS_LIMIT, MONTE_CARLO_DRAWS, MONTE_CARLO_SEED};
pub use sizing::{next_step, repetitions_needed, NextStep};
