//! Descriptive statistics and confidence intervals of the mean, in the quantity's domain.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::interval::{mean_interval, shown, Domain, NoInterval};
use crate::moments::{all_finite, mean, sample_variance, valid_level};
use crate::percentile::percentile_sorted;

/// Confidence level used by [`Summary::of`].
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Descriptive statistics of one sample, with a confidence interval of the mean in its domain.
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
    /// Lower bound of the confidence interval of the mean (see [`Domain`]); NaN when n < 2.
    pub ci_low: f64,
    /// Upper bound of the confidence interval of the mean; NaN when n < 2.
    pub ci_high: f64,
    /// The values the quantity can take, which shaped the interval.
    pub domain: Domain,
}

impl Summary {
    /// The summary of no data: n = 0, everything NaN, so tables print "-".
    pub const EMPTY: Summary = Summary {
        n: 0,
        mean: f64::NAN,
        sd: f64::NAN,
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
        ci_low: f64::NAN,
        ci_high: f64::NAN,
        domain: Domain::Real,
    };

    /// Summary with a 95% Student-t interval; None for empty input or any non-finite value.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        Self::with_confidence(xs, DEFAULT_CONFIDENCE)
    }

    /// Summary with a Student-t interval at `level` in (0, 1); None for empty input, any non-finite value or a bad level.
    pub fn with_confidence(xs: &[f64], level: f64) -> Option<Summary> {
        Self::in_domain_at(xs, Domain::Real, level)
    }

    /// Summary of a quantity in `domain` with a 95% interval that stays in it; None for empty
    /// input or a value outside the domain.
    pub fn in_domain(xs: &[f64], domain: Domain) -> Option<Summary> {
        Self::in_domain_at(xs, domain, DEFAULT_CONFIDENCE)
    }

    /// [`Summary::in_domain`] at confidence `level` in (0, 1).
    pub fn in_domain_at(xs: &[f64], domain: Domain, level: f64) -> Option<Summary> {
        if xs.is_empty()
            || !all_finite(xs)
            || !valid_level(level)
            || !xs.iter().all(|x| domain.contains(*x))
        {
            return None;
        }
        let n = xs.len();
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = mean(xs).clamp(sorted[0], sorted[n - 1]);
        let sd = sample_variance(xs, mean).sqrt();
        let (ci_low, ci_high) = mean_interval(mean, sd, n, level, domain);
        Some(Summary {
            n,
            mean,
            sd,
            median: percentile_sorted(&sorted, 50.0),
            min: sorted[0],
            max: sorted[n - 1],
            ci_low,
            ci_high,
            domain,
        })
    }

    /// The interval as tables and figures show it, or why they show none: fewer than 3
    /// values, or, for a quantity that cannot be negative, a half-width beyond the mean.
    pub fn interval(&self) -> Result<(f64, f64), NoInterval> {
        shown(self.n, self.mean, self.ci_low, self.ci_high, self.domain == Domain::NonNegative)
    }

    /// The same summary with every value multiplied by `k > 0` (a fraction as a percentage).
    pub fn scaled(&self, k: f64) -> Summary {
        Summary {
            n: self.n,
            mean: self.mean * k,
            sd: self.sd * k,
            median: self.median * k,
            min: self.min * k,
            max: self.max * k,
            ci_low: self.ci_low * k,
            ci_high: self.ci_high * k,
            domain: self.domain.scaled(k),
        }
    }

    /// Half the width of the confidence interval (NaN without one).
    pub fn ci_half_width(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0
    }

    /// Coefficient of variation sd / |mean|; None when the mean is 0.
    pub fn cv(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.sd / self.mean.abs())
    }

    /// Confidence-interval half-width relative to |mean|; None when the mean is 0 or there is no interval (n < 2).
    pub fn rel_ci(&self) -> Option<f64> {
        (self.mean != 0.0 && !self.ci_low.is_nan()).then(|| self.ci_half_width() / self.mean.abs())
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
    fn single_value_has_no_interval_rather_than_a_zero_width_one() {
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.sd, 0.0);
        assert_eq!((s.mean, s.median, s.min, s.max), (7.0, 7.0, 7.0, 7.0));
        assert!(s.ci_low.is_nan() && s.ci_high.is_nan());
        assert_eq!(s.interval(), Err(NoInterval::FewValues));
        assert_eq!(s.rel_ci(), None);
        assert_eq!(s.cv(), Some(0.0));
    }

    #[test]
    fn constant_sample_has_zero_width_interval() {
        let s = Summary::of(&[3.0; 5]).unwrap();
        assert_eq!(s.sd, 0.0);
        assert_eq!((s.ci_low, s.ci_high), (3.0, 3.0));
        assert_eq!(
            Summary::in_domain(&[3.0; 5], Domain::NonNegative).unwrap().interval(),
            Ok((3.0, 3.0))
        );
    }

    #[test]
    fn two_repetitions_with_a_large_spread_show_no_interval_and_none_below_zero() {
        // pa3 at n = 2: t(0.975, 1) = 12.71 made the symmetric interval [-24.7, 32.7] around 4.
        let s = Summary::in_domain(&[2.0, 6.0], Domain::NonNegative).unwrap();
        let t = Summary::of(&[2.0, 6.0]).unwrap();
        assert!(t.ci_low < 0.0, "the Student-t interval went negative: {}", t.ci_low);
        assert!(
            s.ci_low > 0.0 && s.ci_low < 4.0 && s.ci_high > 4.0,
            "[{}, {}]",
            s.ci_low,
            s.ci_high
        );
        assert_eq!(s.interval(), Err(NoInterval::FewValues), "n < 3 is shown as such");
    }

    #[test]
    fn an_interval_wider_than_the_mean_is_not_shown() {
        // Voluntary switches 0, 0, 9: mean 3, sd 5.196, SE 3; h = 4.303 * 3 / 3 = 4.303, so the
        // log interval is [0.04, 221]: in the domain, but it says nothing.
        let s = Summary::in_domain(&[0.0, 0.0, 9.0], Domain::NonNegative).unwrap();
        assert!(s.ci_low > 0.0 && s.ci_high > 100.0, "[{}, {}]", s.ci_low, s.ci_high);
        assert_eq!(s.interval(), Err(NoInterval::WiderThanEstimate));
        let tight = Summary::in_domain(&[10.0, 11.0, 12.0], Domain::NonNegative).unwrap();
        assert!(tight.interval().is_ok());
    }

    #[test]
    fn values_outside_the_domain_are_refused() {
        assert_eq!(Summary::in_domain(&[1.0, -0.5], Domain::NonNegative), None);
        assert_eq!(Summary::in_domain(&[0.5, 1.2], Domain::FRACTION), None);
        assert!(
            Summary::in_domain(&[0.0, 1.0], Domain::FRACTION).is_some(),
            "the bounds are in the domain"
        );
    }

    #[test]
    fn scaling_a_fraction_scales_its_interval_and_bounds() {
        let s = Summary::in_domain(&[0.2, 0.3, 0.4], Domain::FRACTION).unwrap();
        let p = s.scaled(100.0);
        assert_eq!(p.domain, Domain::PERCENT);
        assert!(
            (p.ci_low - 100.0 * s.ci_low).abs() < 1e-9
                && (p.ci_high - 100.0 * s.ci_high).abs() < 1e-9
        );
        assert_eq!(p.interval().is_ok(), s.interval().is_ok());
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
