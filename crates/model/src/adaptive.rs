//! Adaptive repetitions: the target a cell repeats toward, and how its repetitions ended.

use serde::{Deserialize, Serialize};

/// Repeat each cell until the 95% confidence interval of its main figure is within
/// `ci_pct` percent of the mean (half-width over mean), with at least `min` and at most
/// `max` measured repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveTarget {
    /// Measured repetitions every cell runs before the first decision.
    pub min: u32,
    /// Measured repetitions after which a cell stops even if it has not reached the target.
    pub max: u32,
    /// The largest CI half-width accepted, percent of the mean.
    pub ci_pct: f64,
}

impl AdaptiveTarget {
    /// `run --repetitions auto`: at least 3 (the fewest for which tables show an interval),
    /// at most 30, until the interval is within ±5% of the mean.
    pub const AUTO: AdaptiveTarget = AdaptiveTarget { min: 3, max: 30, ci_pct: 5.0 };

    /// As the spec spells it, e.g. `{ min = 3, max = 30, ci_pct = 5 }`.
    pub fn label(&self) -> String {
        format!("{{ min = {}, max = {}, ci_pct = {} }}", self.min, self.max, self.ci_pct)
    }
}

/// How a cell's adaptive repetitions ended: stored once per cell when it stops repeating.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionOutcome {
    /// Measured repetitions the cell took (failed ones included).
    pub repetitions: u32,
    /// Its main figure's interval came within the target.
    pub reached: bool,
    /// Which figure decided: `wall_per_proc`, `miss_pct` or `mb_s`.
    pub figure: String,
    /// The interval's half-width at the end, percent of the mean (None: no interval).
    pub half_width_pct: Option<f64>,
    /// The target it was held to.
    pub target: AdaptiveTarget,
}
