//! Ratio of two sample means with a confidence interval on the log scale.

use crate::interval::{shown, NoInterval};
use crate::moments::{all_finite, mean, sample_variance, satterthwaite_df, valid_level};
use crate::summary::t_critical;

/// Ratio of two means (b / a) of non-negative quantities, with a CI that stays positive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// Point estimate mean(b) / mean(a).
    pub ratio: f64,
    /// Lower confidence bound; NaN when a side has fewer than 2 values.
    pub ci_low: f64,
    /// Upper confidence bound; NaN when a side has fewer than 2 values.
    pub ci_high: f64,
    /// Values on the smaller side, which decides whether the interval is shown.
    pub n: usize,
}

impl Ratio {
    /// The interval as tables show it, or why they show none (as [`crate::Summary::interval`]).
    pub fn interval(&self) -> Result<(f64, f64), NoInterval> {
        shown(self.n, self.ratio, self.ci_low, self.ci_high, true)
    }
}

/// mean(b) / mean(a) of two samples of non-negative values with a confidence interval at `level`.
///
/// The interval is built for log(mean(b)) - log(mean(a)), Welch-style: by the delta method
/// Var(log m) ≈ SE² / m², so the log ratio has variance cv_a²/n_a + cv_b²/n_b (cv = sd / mean),
/// with the Student t quantile at the Welch–Satterthwaite df of those two terms; then
/// `ratio ×/÷ exp(t · sd_log)`. It is never negative, and has zero width only when neither
/// sample varies (or b is all zeros: the ratio is then exactly 0). With fewer than 2 values
/// on a side there is no spread to estimate there, so no interval (NaN bounds).
///
/// None for an empty sample, a negative or non-finite value, `level` outside (0, 1) or mean(a) == 0.
pub fn ratio_of_means(a: &[f64], b: &[f64], level: f64) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() || !all_finite(a) || !all_finite(b) || !valid_level(level) {
        return None;
    }
    if a.iter().chain(b).any(|x| *x < 0.0) {
        return None;
    }
    let ma = mean(a);
    if ma == 0.0 {
        return None;
    }
    let mb = mean(b);
    let ratio = mb / ma;
    let n = a.len().min(b.len());
    if n < 2 {
        return Some(Ratio { ratio, ci_low: f64::NAN, ci_high: f64::NAN, n });
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let from_a = sample_variance(a, ma) / na / (ma * ma);
    // b all zeros: mean 0 and no variance; the ratio is exactly 0 whatever a did.
    let from_b = if mb > 0.0 { sample_variance(b, mb) / nb / (mb * mb) } else { 0.0 };
    let Some(df) = satterthwaite_df(&[(from_a, na - 1.0), (from_b, nb - 1.0)]) else {
        return Some(Ratio { ratio, ci_low: ratio, ci_high: ratio, n });
    };
    if mb == 0.0 {
        return Some(Ratio { ratio, ci_low: 0.0, ci_high: 0.0, n });
    }
    let h = t_critical(level, df)? * (from_a + from_b).sqrt();
    Some(Ratio { ratio, ci_low: ratio * (-h).exp(), ci_high: ratio * h.exp(), n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (tol {tol})");
    }

    #[test]
    fn hand_computed_interval() {
        // a = 10,12,14: mean 12, variance 4, cv_a²/n_a = 4/144/3 = 1/108.
        // b = 18,20,22: mean 20, variance 4, cv_b²/n_b = 4/400/3 = 1/300.
        // r = 20/12 = 1.666667; var_log = 1/108 + 1/300 = 17/1350, sd_log = 0.112217
        // df = (17/1350)² / ((1/108)²/2 + (1/300)²/2) = 1156/353 = 3.274788
        // t(0.975, 3.274788) = 3.036583 (regularized incomplete beta, mpmath); h = 0.340756
        // CI = [r e^-h, r e^h] = [1.185388, 2.343349]
        let r = ratio_of_means(&[10.0, 12.0, 14.0], &[18.0, 20.0, 22.0], 0.95).unwrap();
        close(r.ratio, 20.0 / 12.0, 1e-12);
        close(r.ci_low, 1.185388, 2e-6);
        close(r.ci_high, 2.343349, 2e-6);
        assert_eq!(r.n, 3);
        assert!(r.interval().is_ok());
    }

    #[test]
    fn interval_contains_estimate_and_widens_with_level() {
        let a = [10.0, 12.0, 14.0];
        let b = [18.0, 20.0, 22.0];
        let r90 = ratio_of_means(&a, &b, 0.90).unwrap();
        let r99 = ratio_of_means(&a, &b, 0.99).unwrap();
        assert!(r90.ci_low < r90.ratio && r90.ratio < r90.ci_high);
        assert!(r99.ci_low < r90.ci_low && r90.ci_high < r99.ci_high);
    }

    #[test]
    fn ratio_interval_of_noisy_small_samples_never_goes_negative() {
        // The delta method's symmetric interval was 0.71 ± 1.37 here: [-0.66, 2.08].
        let a = [1.0, 3.0, 8.0];
        let b = [0.5, 3.0, 5.0];
        let r = ratio_of_means(&a, &b, 0.95).unwrap();
        assert!(r.ci_low > 0.0 && r.ci_low < r.ratio && r.ratio < r.ci_high, "{r:?}");
    }

    #[test]
    fn ratio_interval_has_width_when_only_one_side_varies() {
        // The old interval of a constant numerator over a varying denominator was fine, but a
        // varying side must always widen the interval: only two constant sides give a point.
        let r = ratio_of_means(&[4.0, 4.0, 4.0], &[1.0, 2.0, 3.0], 0.95).unwrap();
        assert!(r.ci_high - r.ci_low > 0.1, "{r:?}");
        let r = ratio_of_means(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0], 0.95).unwrap();
        assert!(r.ci_high - r.ci_low > 0.1, "{r:?}");
    }

    #[test]
    fn constant_samples_collapse_to_point() {
        let r = ratio_of_means(&[2.0, 2.0], &[3.0, 3.0, 3.0], 0.95).unwrap();
        assert_eq!(r, Ratio { ratio: 1.5, ci_low: 1.5, ci_high: 1.5, n: 2 });
        assert_eq!(r.interval(), Err(NoInterval::FewValues), "two values on a side: n < 3");
    }

    #[test]
    fn a_single_value_on_a_side_gives_no_interval() {
        let r = ratio_of_means(&[4.0], &[1.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!(r.ratio, 0.5);
        assert!(r.ci_low.is_nan() && r.ci_high.is_nan());
        assert_eq!(r.interval(), Err(NoInterval::FewValues));
    }

    #[test]
    fn zero_numerator_is_exactly_zero() {
        let r = ratio_of_means(&[1.0, 3.0, 2.0], &[0.0, 0.0, 0.0], 0.95).unwrap();
        assert_eq!((r.ratio, r.ci_low, r.ci_high), (0.0, 0.0, 0.0));
    }

    #[test]
    fn a_ratio_interval_wider_than_the_ratio_is_not_shown() {
        let r = ratio_of_means(&[10.0, 11.0, 12.0], &[0.1, 0.2, 30.0], 0.95).unwrap();
        assert!(r.ci_low > 0.0);
        assert_eq!(r.interval(), Err(NoInterval::WiderThanEstimate), "{r:?}");
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(ratio_of_means(&[0.0, 0.0], &[1.0, 2.0], 0.95), None);
        assert_eq!(
            ratio_of_means(&[-1.0, 3.0], &[1.0, 2.0], 0.95),
            None,
            "negative values have no log ratio"
        );
        assert_eq!(ratio_of_means(&[1.0, 3.0], &[-1.0, 2.0], 0.95), None);
        assert_eq!(ratio_of_means(&[], &[1.0], 0.95), None);
        assert_eq!(ratio_of_means(&[1.0], &[], 0.95), None);
        assert_eq!(ratio_of_means(&[1.0, f64::NAN], &[1.0], 0.95), None);
        assert_eq!(ratio_of_means(&[1.0, 2.0], &[1.0, 2.0], 1.0), None);
    }
}
