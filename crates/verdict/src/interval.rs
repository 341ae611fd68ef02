//! The ratio of geometric means with a Welch t-interval on the log scale.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::logs::{mean, positive_logs, sample_variance};

/// The ratio of geometric means b / a and its two-sided interval at `level` (0.95 for 95%):
/// `(ratio, lo, hi)`. None unless both samples have at least 2 values, all positive and
/// finite, and 0 < level < 1.
///
/// On the logs, d = mean(ln b) − mean(ln a) with standard error
/// se = sqrt(s²_a/n_a + s²_b/n_b); the interval is d ± t·se with t the Student t quantile at
/// (1 + level)/2 on the Welch–Satterthwaite degrees of freedom, and all three are
/// exponentiated. When both variances are 0 the interval collapses to the point.
pub fn ratio_interval(a: &[f64], b: &[f64], level: f64) -> Option<(f64, f64, f64)> {
    let (la, lb) = (positive_logs(a)?, positive_logs(b)?);
    log_ratio_interval(&la, &lb, level)
}

/// [`ratio_interval`] on values already logged.
pub(crate) fn log_ratio_interval(la: &[f64], lb: &[f64], level: f64) -> Option<(f64, f64, f64)> {
    if la.len() < 2 || lb.len() < 2 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let d = mean(lb) - mean(la);
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let (sa, sb) = (sample_variance(la) / na, sample_variance(lb) / nb);
    let se2 = sa + sb;
    if se2 == 0.0 {
        let r = d.exp();
        return Some((r, r, r));
    }
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(0.5 + level / 2.0);
    let half = t * se2.sqrt();
    Some((d.exp(), (d - half).exp(), (d + half).exp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_against_two_by_hand() {
        // ln a = [0, 0.2], ln b = [0.2, 0.4]: d = 0.2, each variance 0.02, se² = 0.02,
        // df = 0.02² / (0.01²/1 + 0.01²/1) = 2. With 2 degrees of freedom the t quantile
        // has a closed form: t_p = (2p − 1) / sqrt(2p(1 − p)), p = 0.975 → 4.302652…
        let a = [1.0, 0.2_f64.exp()];
        let b = [0.2_f64.exp(), 0.4_f64.exp()];
        let (r, lo, hi) = ratio_interval(&a, &b, 0.95).unwrap();
        let t = 0.95 / (2.0_f64 * 0.975 * 0.025).sqrt();
        let half = t * 0.02_f64.sqrt();
        assert!((r - 0.2_f64.exp()).abs() < 1e-12);
        assert!((lo - (0.2 - half).exp()).abs() < 1e-6, "lo {lo}");
        assert!((hi - (0.2 + half).exp()).abs() < 1e-6, "hi {hi}");
        assert!((lo - 0.664_66).abs() < 1e-4 && (hi - 2.244_45).abs() < 1e-4);
    }

    #[test]
    fn narrower_at_lower_level() {
        let a = [10.0, 10.5, 9.8, 10.2];
        let b = [11.0, 11.3, 10.9, 11.2, 11.1];
        let (_, lo95, hi95) = ratio_interval(&a, &b, 0.95).unwrap();
        let (r, lo90, hi90) = ratio_interval(&a, &b, 0.90).unwrap();
        assert!(lo95 < lo90 && lo90 < r && r < hi90 && hi90 < hi95);
    }

    #[test]
    fn zero_variance_collapses_to_the_point() {
        assert_eq!(ratio_interval(&[2.0, 2.0], &[4.0, 4.0, 4.0], 0.95), Some((2.0, 2.0, 2.0)));
    }

    #[test]
    fn bad_input_is_not_judged() {
        assert_eq!(ratio_interval(&[1.0], &[1.0, 2.0], 0.95), None);
        assert_eq!(ratio_interval(&[1.0, 2.0], &[1.0, f64::NAN], 0.95), None);
        assert_eq!(ratio_interval(&[1.0, 2.0], &[1.0, -2.0], 0.95), None);
        assert_eq!(ratio_interval(&[1.0, 2.0], &[1.0, 2.0], 1.0), None);
        assert_eq!(ratio_interval(&[1.0, 2.0], &[1.0, 2.0], f64::NAN), None);
    }
}
