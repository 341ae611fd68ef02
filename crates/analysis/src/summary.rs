//! Descriptive statistics and Student-t confidence intervals of the mean.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::moments::{all_finite, mean, sample_variance, valid_level};
use crate::percentile::percentile_sorted;

/// Confidence level used by [`Summary::of`].
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Descriptive statistics of one sample, with a Student-t confidence interval of the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of observations.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor n - 1); 0 when n == 1.
    pub sd: f64,
    /// Median (type-7 50th percentile).
    pub median: f64,
    /// Smallest observation.
    pub min: f64,
    /// Largest observation.
    pub max: f64,
    /// Lower bound of the confidence interval of the mean; equal to `mean` when n < 2.
    pub ci_low: f64,
    /// Upper bound of the confidence interval of the mean; equal to `mean` when n < 2.
    pub ci_high: f64,
}

impl Summary {
    /// Summary with a 95% confidence interval; None for empty input or any non-finite value.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        Self::with_confidence(xs, DEFAULT_CONFIDENCE)
    }

    /// Summary with a confidence interval at `level` in (0, 1); None for empty input, any non-finite value or a bad level.
    pub fn with_confidence(xs: &[f64], level: f64) -> Option<Summary> {
        if xs.is_empty() || !all_finite(xs) || !valid_level(level) {
            return None;
        }
        let n = xs.len();
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = mean(xs);
        let sd = sample_variance(xs, mean).sqrt();
        let (ci_low, ci_high) = t_interval(mean, sd, n, level);
        Some(Summary { n, mean, sd, median: percentile_sorted(&sorted, 50.0), min: sorted[0], max: sorted[n - 1], ci_low, ci_high })
    }

    /// Half the width of the confidence interval (the "±" value).
    pub fn ci_half_width(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0
    }

    /// Coefficient of variation sd / |mean|; None when the mean is 0.
    pub fn cv(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.sd / self.mean.abs())
    }

    /// Confidence-interval half-width relative to |mean|; None when the mean is 0.
    pub fn rel_ci(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.ci_half_width() / self.mean.abs())
    }
}

/// Two-sided Student-t critical value t_{(1+level)/2, df}; None unless level is in (0, 1) and df > 0.
pub fn t_critical(level: f64, df: f64) -> Option<f64> {
    if !valid_level(level) || df.is_nan() || df <= 0.0 {
        return None;
    }
    if df.is_infinite() {
        // statrs' inverse CDF does not special-case infinite freedom; the
        // limit is the standard normal quantile.
        let normal = statrs::distribution::Normal::standard();
        return Some(normal.inverse_cdf((1.0 + level) / 2.0));
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(dist.inverse_cdf((1.0 + level) / 2.0))
}

/// Student-t confidence interval `mean ± t_{(1+level)/2, n-1} · sd / √n`.
///
/// Returns `(mean, mean)` when n < 2 (there is no spread to estimate) and
/// `(NaN, NaN)` when `level` is outside (0, 1) or `sd` is negative or NaN.
pub fn t_interval(mean: f64, sd: f64, n: usize, level: f64) -> (f64, f64) {
    if !valid_level(level) || sd.is_nan() || sd < 0.0 {
        return (f64::NAN, f64::NAN);
    }
    if n < 2 {
        return (mean, mean);
    }
    let t = t_critical(level, (n - 1) as f64).unwrap_or(f64::NAN);
    let half = t * sd / (n as f64).sqrt();
    (mean - half, mean + half)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (tol {tol})");
    }

    #[test]
    fn t_critical_matches_tables() {
        // Two-sided 95% values from any t table: df=1 -> 12.7062,
        // df=7 -> 2.3646, df=29 -> 2.0452; two-sided 99% at df=29 -> 2.7564.
        close(t_critical(0.95, 1.0).unwrap(), 12.706_204_736, 1e-6);
        close(t_critical(0.95, 7.0).unwrap(), 2.364_624_252, 1e-6);
        close(t_critical(0.95, 29.0).unwrap(), 2.045_229_642, 1e-6);
        close(t_critical(0.99, 29.0).unwrap(), 2.756_385_904, 1e-6);
    }

    #[test]
    fn t_critical_infinite_df_is_normal_quantile() {
        close(t_critical(0.95, f64::INFINITY).unwrap(), 1.959_963_985, 1e-6);
    }

    #[test]
    fn t_critical_rejects_bad_arguments() {
        assert_eq!(t_critical(0.95, 0.0), None);
        assert_eq!(t_critical(0.95, f64::NAN), None);
        assert_eq!(t_critical(1.0, 5.0), None);
        assert_eq!(t_critical(95.0, 5.0), None);
    }

    #[test]
    fn summary_of_textbook_sample() {
        // xs = 2,4,4,4,5,5,7,9 (n = 8):
        //   mean = 40/8 = 5
        //   squared deviations 9+1+1+1+0+0+4+16 = 32, sd = sqrt(32/7) = 2.138090
        //   t(0.975, 7) = 2.364624, se = 2.138090/sqrt(8) = 0.755929
        //   half-width = 2.364624 * 0.755929 = 1.787488
        //   95% CI = [3.212512, 6.787488]
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        close(s.mean, 5.0, 1e-12);
        close(s.sd, 2.138_089_935, 1e-8);
        close(s.median, 4.5, 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        close(s.ci_low, 3.212_512_082, 1e-6);
        close(s.ci_high, 6.787_487_918, 1e-6);
        close(s.ci_half_width(), 1.787_487_918, 1e-6);
        close(s.cv().unwrap(), 2.138_089_935 / 5.0, 1e-8);
        close(s.rel_ci().unwrap(), 1.787_487_918 / 5.0, 1e-6);
    }

    #[test]
    fn ninety_percent_interval_is_narrower() {
        // t(0.95, 7) = 1.894579, half = 1.894579 * 0.755929 = 1.432167.
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Summary::with_confidence(&xs, 0.90).unwrap();
        close(s.ci_low, 3.567_833_192, 1e-6);
        close(s.ci_high, 6.432_166_808, 1e-6);
    }

    #[test]
    fn single_value_has_degenerate_interval() {
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.sd, 0.0);
        assert_eq!((s.mean, s.median, s.min, s.max), (7.0, 7.0, 7.0, 7.0));
        assert_eq!((s.ci_low, s.ci_high), (7.0, 7.0));
        assert_eq!(s.ci_half_width(), 0.0);
        assert_eq!(s.cv(), Some(0.0));
    }

    #[test]
    fn constant_sample_has_zero_width_interval() {
        let s = Summary::of(&[3.0; 5]).unwrap();
        assert_eq!(s.sd, 0.0);
        assert_eq!((s.ci_low, s.ci_high), (3.0, 3.0));
    }

    #[test]
    fn zero_mean_has_no_relative_measures() {
        let s = Summary::of(&[-1.0, 1.0]).unwrap();
        assert_eq!(s.mean, 0.0);
        assert_eq!(s.cv(), None);
        assert_eq!(s.rel_ci(), None);
    }

    #[test]
    fn negative_mean_gives_positive_relative_measures() {
        let s = Summary::of(&[-2.0, -4.0, -6.0]).unwrap();
        assert!(s.cv().unwrap() > 0.0);
        assert!(s.rel_ci().unwrap() > 0.0);
    }

    #[test]
    fn rejects_empty_non_finite_and_bad_level() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[1.0, f64::INFINITY]), None);
        assert_eq!(Summary::with_confidence(&[1.0, 2.0], 0.0), None);
        assert_eq!(Summary::with_confidence(&[1.0, 2.0], 1.0), None);
        assert_eq!(Summary::with_confidence(&[1.0, 2.0], 95.0), None);
    }

    #[test]
    fn t_interval_edge_cases() {
        assert_eq!(t_interval(4.0, 1.0, 1, 0.95), (4.0, 4.0));
        assert_eq!(t_interval(4.0, 0.0, 0, 0.95), (4.0, 4.0));
        let (lo, hi) = t_interval(4.0, 1.0, 10, 1.5);
        assert!(lo.is_nan() && hi.is_nan());
        let (lo, hi) = t_interval(4.0, -1.0, 10, 0.95);
        assert!(lo.is_nan() && hi.is_nan());
        let (lo, hi) = t_interval(4.0, 1.0, 1, f64::NAN);
        assert!(lo.is_nan() && hi.is_nan());
    }

    #[test]
    fn t_interval_df1_uses_wide_quantile() {
        // n = 2, sd = 1: half = 12.706205 / sqrt(2) = 8.984636.
        let (lo, hi) = t_interval(0.0, 1.0, 2, 0.95);
        close(hi, 8.984_643_532, 1e-6);
        close(lo, -8.984_643_532, 1e-6);
    }
}
