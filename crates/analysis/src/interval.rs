//! Confidence intervals that stay in their quantity's domain, and when to show none.
//!
//! A Student-t interval `mean ± t·SE` is symmetric, so over few repetitions it reaches below
//! zero for times and counts and past 1 for an index or a share. Here the interval is built
//! on a scale where the quantity is unbounded and transformed back (the delta method):
//! log(mean) for quantities that cannot be negative, logit for bounded ones. To first order
//! both agree with the t interval when the standard error is small against the mean (or the
//! distance to a bound); they differ, and stay inside the domain, when it is not.

use crate::moments::valid_level;
use crate::summary::t_critical;

/// Fewest values for which an interval is shown: at n = 2 the 95% t quantile is 12.7, so an
/// interval says little more than "these two values differ".
pub const MIN_VALUES_FOR_INTERVAL: usize = 3;

/// The values a quantity can take, which decide the shape of its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Domain {
    /// Any real number: the Student-t interval `mean ± t·SE`.
    Real,
    /// Zero or more (times, counts, rates): the interval of log(mean), `mean ×/÷ exp(t·SE/mean)`.
    NonNegative,
    /// Between `lo` and `hi` (an index or a share in [0, 1], a percentage): the interval of
    /// the logit of the mean's position between the bounds.
    Bounded {
        /// Lower bound.
        lo: f64,
        /// Upper bound.
        hi: f64,
    },
}

impl Domain {
    /// [0, 1]: Jain's index, CPU shares, ratios of counts.
    pub const FRACTION: Domain = Domain::Bounded { lo: 0.0, hi: 1.0 };
    /// [0, 100]: percentages of jobs or periods.
    pub const PERCENT: Domain = Domain::Bounded { lo: 0.0, hi: 100.0 };

    /// Whether `x` lies in the domain.
    pub fn contains(self, x: f64) -> bool {
        match self {
            Domain::Real => x.is_finite(),
            Domain::NonNegative => x >= 0.0 && x.is_finite(),
            Domain::Bounded { lo, hi } => x >= lo && x <= hi,
        }
    }

    /// The domain with its bounds multiplied by `k > 0` (a fraction shown as a percentage).
    pub fn scaled(self, k: f64) -> Domain {
        match self {
            Domain::Bounded { lo, hi } => Domain::Bounded { lo: lo * k, hi: hi * k },
            other => other,
        }
    }

    /// How its intervals are computed, for notes and exports.
    pub fn method(self) -> &'static str {
        match self {
            Domain::Real => "Student t",
            Domain::NonNegative => "Student t on the log scale (delta method)",
            Domain::Bounded { .. } => "Student t on the logit scale (delta method)",
        }
    }
}

/// Why no confidence interval is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoInterval {
    /// Fewer than [`MIN_VALUES_FOR_INTERVAL`] values.
    FewValues,
    /// The interval's half-width exceeds the estimate: the values do not pin it down.
    WiderThanEstimate,
}

impl NoInterval {
    /// A short mark for a table cell in place of the interval.
    pub fn mark(self) -> &'static str {
        match self {
            NoInterval::FewValues => "n < 3",
            NoInterval::WiderThanEstimate => "± > mean",
        }
    }

    /// The reason in words, for notes and exports.
    pub fn reason(self) -> &'static str {
        match self {
            NoInterval::FewValues => "fewer than 3 values: too few for a useful interval",
            NoInterval::WiderThanEstimate => "the interval's half-width exceeds the estimate",
        }
    }
}

/// Confidence interval of a mean at `level`, from its sample sd and size, in `domain`.
///
/// NaN bounds when n < 2 (no spread to estimate), `level` is outside (0, 1) or `sd` is
/// negative or NaN; `(mean, mean)` when sd is 0. The caller guarantees `mean` lies in the domain.
pub fn mean_interval(mean: f64, sd: f64, n: usize, level: f64, domain: Domain) -> (f64, f64) {
    if n < 2 || !valid_level(level) || sd.is_nan() || sd < 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let Some(t) = t_critical(level, (n - 1) as f64) else { return (f64::NAN, f64::NAN) };
    let se = sd / (n as f64).sqrt();
    if se == 0.0 {
        return (mean, mean);
    }
    match domain {
        Domain::Real => (mean - t * se, mean + t * se),
        Domain::NonNegative => {
            // Values >= 0 that vary have a mean > 0. d log(m) = dm / m.
            let h = t * se / mean;
            (mean * (-h).exp(), mean * h.exp())
        }
        Domain::Bounded { lo, hi } => {
            // Values inside [lo, hi] that vary put the mean strictly inside.
            let w = hi - lo;
            let p = (mean - lo) / w;
            // d logit(p) = dp / (p (1 - p)).
            let h = t * (se / w) / (p * (1.0 - p));
            let logit = (p / (1.0 - p)).ln();
            let back = |l: f64| lo + w / (1.0 + (-l).exp());
            (back(logit - h), back(logit + h))
        }
    }
}

/// The interval `(lo, hi)` of an estimate from `n` values as tables and figures show it, or
/// why they show none: too few values, or (for a quantity that cannot be negative, `positive`)
/// a half-width beyond the estimate. NaN bounds count as too few values.
pub fn shown(
    n: usize,
    estimate: f64,
    lo: f64,
    hi: f64,
    positive: bool,
) -> Result<(f64, f64), NoInterval> {
    if n < MIN_VALUES_FOR_INTERVAL || lo.is_nan() || hi.is_nan() {
        return Err(NoInterval::FewValues);
    }
    if positive && (hi - lo) / 2.0 > estimate {
        return Err(NoInterval::WiderThanEstimate);
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (tol {tol})");
    }

    #[test]
    fn log_interval_by_hand() {
        // mean 10, sd 2, n 4: SE 1, t(0.975, 3) = 3.182446, h = 0.3182446,
        // [10 e^-h, 10 e^h] = [7.274, 13.747]; the t interval would be [6.818, 13.182].
        let (lo, hi) = mean_interval(10.0, 2.0, 4, 0.95, Domain::NonNegative);
        close(lo, 10.0 * (-0.318_244_6f64).exp(), 1e-6);
        close(hi, 10.0 * 0.318_244_6f64.exp(), 1e-6);
    }

    #[test]
    fn logit_interval_by_hand() {
        // mean 0.8 of [0, 1], sd 0.1, n 4: SE 0.05, logit(0.8) = ln 4, h = 3.182446 * 0.05 / 0.16.
        let (lo, hi) = mean_interval(0.8, 0.1, 4, 0.95, Domain::FRACTION);
        let h = 3.182_446_305 * 0.05 / 0.16;
        let expit = |l: f64| 1.0 / (1.0 + (-l).exp());
        close(lo, expit(4f64.ln() - h), 1e-6);
        close(hi, expit(4f64.ln() + h), 1e-6);
        // The same on [0, 100] is the same interval, scaled.
        let (plo, phi) = mean_interval(80.0, 10.0, 4, 0.95, Domain::PERCENT);
        close(plo, 100.0 * lo, 1e-6);
        close(phi, 100.0 * hi, 1e-6);
    }

    #[test]
    fn interval_of_a_positive_mean_with_a_huge_spread_stays_above_zero() {
        // pa3 at n = 3 with one repetition far off: the t interval is [-9.4, 22.7].
        let xs = [1.0, 1.5, 17.5];
        let m = 20.0 / 3.0;
        let sd = crate::moments::sample_variance(&xs, m).sqrt();
        let (tlo, _) = mean_interval(m, sd, 3, 0.95, Domain::Real);
        assert!(tlo < 0.0, "the symmetric interval goes negative: {tlo}");
        let (lo, hi) = mean_interval(m, sd, 3, 0.95, Domain::NonNegative);
        assert!(lo > 0.0 && lo < m && m < hi, "[{lo}, {hi}]");
    }

    #[test]
    fn interval_of_an_index_near_its_bound_stays_inside_it() {
        // Jain's index 0.99, 0.93, 1.0: the t interval reaches past 1.
        let xs = [0.99, 0.93, 1.0];
        let m = xs.iter().sum::<f64>() / 3.0;
        let sd = crate::moments::sample_variance(&xs, m).sqrt();
        let (_, thi) = mean_interval(m, sd, 3, 0.95, Domain::Real);
        assert!(thi > 1.0, "the symmetric interval leaves [0, 1]: {thi}");
        let (lo, hi) = mean_interval(m, sd, 3, 0.95, Domain::FRACTION);
        assert!(lo > 0.0 && lo < m && m < hi && hi < 1.0, "[{lo}, {hi}]");
    }

    #[test]
    fn constant_values_give_a_point_and_too_few_give_none() {
        for d in [Domain::Real, Domain::NonNegative, Domain::FRACTION] {
            assert_eq!(mean_interval(0.5, 0.0, 5, 0.95, d), (0.5, 0.5));
            let (lo, hi) = mean_interval(0.5, 0.1, 1, 0.95, d);
            assert!(lo.is_nan() && hi.is_nan());
        }
        // A count that is 0 in every repetition, an index that is 1 in every one.
        assert_eq!(mean_interval(0.0, 0.0, 3, 0.95, Domain::NonNegative), (0.0, 0.0));
        assert_eq!(mean_interval(1.0, 0.0, 3, 0.95, Domain::FRACTION), (1.0, 1.0));
    }

    #[test]
    fn bad_level_or_sd_gives_nan() {
        for (sd, level) in [(1.0, 1.5), (-1.0, 0.95), (f64::NAN, 0.95), (1.0, f64::NAN)] {
            let (lo, hi) = mean_interval(4.0, sd, 10, level, Domain::NonNegative);
            assert!(lo.is_nan() && hi.is_nan(), "sd {sd} level {level}");
        }
    }

    #[test]
    fn shown_only_from_three_values_and_never_wider_than_the_estimate() {
        assert_eq!(shown(2, 1.0, 0.5, 1.5, true), Err(NoInterval::FewValues));
        assert_eq!(shown(3, 1.0, f64::NAN, f64::NAN, true), Err(NoInterval::FewValues));
        assert_eq!(shown(3, 1.0, 0.5, 1.5, true), Ok((0.5, 1.5)));
        assert_eq!(shown(3, 1.0, 0.2, 2.4, true), Err(NoInterval::WiderThanEstimate));
        assert_eq!(
            shown(3, 0.01, 0.001, 0.1, false),
            Ok((0.001, 0.1)),
            "a bounded quantity keeps its interval"
        );
    }

    #[test]
    fn domains() {
        assert!(Domain::NonNegative.contains(0.0) && !Domain::NonNegative.contains(-1e-9));
        assert!(Domain::FRACTION.contains(1.0) && !Domain::FRACTION.contains(1.01));
        assert_eq!(Domain::FRACTION.scaled(100.0), Domain::PERCENT);
        assert_eq!(Domain::NonNegative.scaled(100.0), Domain::NonNegative);
    }
}
