//! Welch's unequal-variance two-sample t-test.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::moments::{all_finite, mean, sample_variance, satterthwaite_df};

/// Welch's unequal-variance t-test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// Test statistic (mean(a) - mean(b)) / standard error; ±inf when both variances are 0 and the means differ.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (n_a + n_b - 2 when both variances are 0).
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Welch's t-test of equal means; None if either sample has fewer than 2 values or any value is non-finite.
///
/// When both samples have zero variance the t distribution is undefined, so
/// the outcome is decided directly: equal means give t = 0 and p = 1,
/// different means give t = ±inf and p = 0.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 || !all_finite(a) || !all_finite(b) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    // Squared standard errors of each mean.
    let sea = sample_variance(a, ma) / na;
    let seb = sample_variance(b, mb) / nb;

    let Some(df) = satterthwaite_df(&[(sea, na - 1.0), (seb, nb - 1.0)]) else {
        // Both variances are zero: Satterthwaite is 0/0. The pooled df is a
        // finite, conventional stand-in; the verdict does not depend on it.
        let df = na + nb - 2.0;
        return Some(if ma == mb {
            Welch { t: 0.0, df, p_value: 1.0 }
        } else {
            Welch { t: if ma > mb { f64::INFINITY } else { f64::NEG_INFINITY }, df, p_value: 0.0 }
        });
    };

    let t = (ma - mb) / (sea + seb).sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    // sf of |t| instead of 1 - cdf keeps precision for very small p-values.
    let p_value = (2.0 * dist.sf(t.abs())).min(1.0);
    Some(Welch { t, df, p_value })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // Example 1 of the Wikipedia "Welch's t-test" article (15 vs 15 values).
    pub(crate) const A1: [f64; 15] =
        [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4];
    pub(crate) const A2: [f64; 15] =
        [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4];

    #[test]
    fn wikipedia_example_equal_sizes() {
        // By hand: mean1 = 312.3/15 = 20.82, var1 = 7.867429;
        // mean2 = 344.8/15 = 22.986667, var2 = 3.812667.
        // se1^2 = 0.524495, se2^2 = 0.254178, sum = 0.778673.
        // t = -2.166667 / sqrt(0.778673) = -2.455356
        // df = 0.778673^2 / (0.524495^2/14 + 0.254178^2/14) = 24.988529
        // p = 2 * P(T_24.99 > 2.455356) = 0.021378 (article: t -2.46, df 24.9, p 0.021;
        // the precise p was evaluated from the regularized incomplete beta with mpmath).
        let w = welch_t_test(&A1, &A2).unwrap();
        assert!((w.t - -2.455_356_398).abs() < 1e-6, "t = {}", w.t);
        assert!((w.df - 24.988_529_29).abs() < 1e-6, "df = {}", w.df);
        assert!((w.p_value - 0.021_378_001).abs() < 1e-6, "p = {}", w.p_value);
    }

    #[test]
    fn wikipedia_example_unequal_sizes() {
        // Example 2 of the same article (10 vs 20 values):
        // mean1 = 20.61, var1 = 9.041; mean2 = 22.135, var2 = 0.898184.
        // t = -1.525 / sqrt(0.9041 + 0.044909) = -1.565434, df = 9.904741,
        // p = 0.148842 (article: t -1.57, df 9.9, p 0.149).
        let b1 = [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8];
        let b2 = [
            21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5,
            23.6, 21.5, 22.5, 23.5, 21.5, 21.8,
        ];
        let w = welch_t_test(&b1, &b2).unwrap();
        assert!((w.t - -1.565_433_524).abs() < 1e-6, "t = {}", w.t);
        assert!((w.df - 9.904_741_249).abs() < 1e-6, "df = {}", w.df);
        assert!((w.p_value - 0.148_841_697).abs() < 1e-6, "p = {}", w.p_value);
    }

    #[test]
    fn swapping_samples_flips_t_only() {
        let ab = welch_t_test(&A1, &A2).unwrap();
        let ba = welch_t_test(&A2, &A1).unwrap();
        assert!((ab.t + ba.t).abs() < 1e-12);
        assert!((ab.df - ba.df).abs() < 1e-9);
        assert!((ab.p_value - ba.p_value).abs() < 1e-12);
    }

    #[test]
    fn identical_samples_give_p_one() {
        let w = welch_t_test(&A1, &A1).unwrap();
        assert_eq!(w.t, 0.0);
        assert!((w.p_value - 1.0).abs() < 1e-12);
    }

    #[test]
    fn both_constant_and_equal() {
        let w = welch_t_test(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
        assert_eq!(w, Welch { t: 0.0, df: 3.0, p_value: 1.0 });
    }

    #[test]
    fn both_constant_and_different() {
        let w = welch_t_test(&[1.0, 1.0], &[2.0, 2.0]).unwrap();
        assert_eq!(w.t, f64::NEG_INFINITY);
        assert_eq!(w.p_value, 0.0);
        let w = welch_t_test(&[2.0, 2.0], &[1.0, 1.0]).unwrap();
        assert_eq!(w.t, f64::INFINITY);
        assert_eq!(w.p_value, 0.0);
    }

    #[test]
    fn one_constant_sample_uses_the_other_df() {
        // Only b varies, so df collapses to n_b - 1 = 2.
        // t = (0 - 2) / sqrt(1/3) = -3.464102; p = 2 * P(T_2 > 3.464102) = 0.074180
        // (for df = 2 the tail has the closed form 0.5 * (1 - t / sqrt(t^2 + 2))).
        let w = welch_t_test(&[0.0, 0.0, 0.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((w.df - 2.0).abs() < 1e-12);
        assert!((w.t - -12f64.sqrt()).abs() < 1e-12);
        let t = 12f64.sqrt();
        let p = 1.0 - t / (t * t + 2.0).sqrt();
        assert!((w.p_value - p).abs() < 1e-9, "p = {} want {p}", w.p_value);
    }

    #[test]
    fn rejects_small_or_non_finite_samples() {
        assert_eq!(welch_t_test(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(welch_t_test(&[1.0, 2.0], &[]), None);
        assert_eq!(welch_t_test(&[1.0, f64::NAN], &[1.0, 2.0]), None);
        assert_eq!(welch_t_test(&[1.0, 2.0], &[1.0, f64::INFINITY]), None);
    }
}
