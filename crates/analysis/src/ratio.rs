//! Ratio of two sample means with a delta-method confidence interval.

use crate::moments::{all_finite, mean, sample_variance, satterthwaite_df, valid_level};
use crate::summary::t_critical;

/// Ratio of two means (b / a) with an approximate CI (delta method on independent samples, Student t with Welch df).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// Point estimate mean(b) / mean(a).
    pub ratio: f64,
    /// Lower confidence bound.
    pub ci_low: f64,
    /// Upper confidence bound.
    pub ci_high: f64,
}

/// mean(b) / mean(a) with a confidence interval at `level`.
///
/// First-order delta method for independent samples:
/// Var(r) ≈ (SE_b² + r²·SE_a²) / mean(a)², using the t quantile at the
/// Welch–Satterthwaite df of those two variance terms. A sample of one value
/// contributes no variance (as in [`crate::Summary`]), so with n = 1 the
/// interval is optimistic; when neither sample varies it collapses to the
/// point estimate. The approximation degrades when mean(a) is not well away
/// from 0 relative to its standard error.
///
/// None for an empty sample, a non-finite value, `level` outside (0, 1) or mean(a) == 0.
pub fn ratio_of_means(a: &[f64], b: &[f64], level: f64) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() || !all_finite(a) || !all_finite(b) || !valid_level(level) {
        return None;
    }
    let ma = mean(a);
    if ma == 0.0 {
        return None;
    }
    let mb = mean(b);
    let ratio = mb / ma;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let ma2 = ma * ma;
    // This form (rather than r² · (cv_a² + cv_b²)) stays defined when mean(b) is 0.
    let from_a = ratio * ratio * sample_variance(a, ma) / na / ma2;
    let from_b = sample_variance(b, mb) / nb / ma2;

    let Some(df) = satterthwaite_df(&[(from_a, na - 1.0), (from_b, nb - 1.0)]) else {
        return Some(Ratio { ratio, ci_low: ratio, ci_high: ratio });
    };
    let half = t_critical(level, df)? * (from_a + from_b).sqrt();
    Some(Ratio { ratio, ci_low: ratio - half, ci_high: ratio + half })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (tol {tol})");
    }

    #[test]
    fn hand_computed_interval() {
        // a = 10,12,14: mean 12, variance 4, SE_a² = 4/3.
        // b = 18,20,22: mean 20, variance 4, SE_b² = 4/3.
        // r = 20/12 = 1.666667
        // from_b = (4/3)/144 = 0.00925926, from_a = r²·(4/3)/144 = 0.02572016
        // se = sqrt(0.03497942) = 0.18702787
        // df = (sum)² / (from_a²/2 + from_b²/2) = 2·(34/9)² / (706/81) = 1156/353 = 3.274788
        // t(0.975, 3.274788) = 3.036583 (regularized incomplete beta, mpmath)
        // CI = 1.666667 ± 0.567926 = [1.098741, 2.234592]
        let r = ratio_of_means(&[10.0, 12.0, 14.0], &[18.0, 20.0, 22.0], 0.95).unwrap();
        close(r.ratio, 20.0 / 12.0, 1e-12);
        close(r.ci_low, 1.098_741_041, 1e-6);
        close(r.ci_high, 2.234_592_292, 1e-6);
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
    fn constant_samples_collapse_to_point() {
        let r = ratio_of_means(&[2.0, 2.0], &[3.0, 3.0, 3.0], 0.95).unwrap();
        assert_eq!(r, Ratio { ratio: 1.5, ci_low: 1.5, ci_high: 1.5 });
    }

    #[test]
    fn single_value_denominator_uses_numerator_df() {
        // a = [4] adds no variance: se = sqrt(var_b / n_b) / 4 with df = n_b - 1 = 2.
        // b = 1,2,3: var 1, se = sqrt(1/3)/4 = 0.144338; t(0.975, 2) = 4.302653.
        let r = ratio_of_means(&[4.0], &[1.0, 2.0, 3.0], 0.95).unwrap();
        close(r.ratio, 0.5, 1e-12);
        let half = 4.302_652_730 * (1.0f64 / 3.0).sqrt() / 4.0;
        close(r.ci_high - r.ratio, half, 1e-6);
        close(r.ratio - r.ci_low, half, 1e-6);
    }

    #[test]
    fn zero_numerator_mean_is_fine() {
        let r = ratio_of_means(&[1.0, 3.0], &[-1.0, 1.0], 0.95).unwrap();
        assert_eq!(r.ratio, 0.0);
        assert!(r.ci_low < 0.0 && r.ci_high > 0.0);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(ratio_of_means(&[-1.0, 1.0], &[1.0, 2.0], 0.95), None);
        assert_eq!(ratio_of_means(&[], &[1.0], 0.95), None);
        assert_eq!(ratio_of_means(&[1.0], &[], 0.95), None);
        assert_eq!(ratio_of_means(&[1.0, f64::NAN], &[1.0], 0.95), None);
        assert_eq!(ratio_of_means(&[1.0, 2.0], &[1.0, 2.0], 1.0), None);
    }
}
