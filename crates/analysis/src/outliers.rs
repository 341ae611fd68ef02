//! Robust outlier detection with Iglewicz–Hoaglin modified z-scores.

use crate::percentile::percentile;

/// The cut-off Iglewicz and Hoaglin recommend for [`outliers`].
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// 0.6745 ≈ Φ⁻¹(0.75): scales the MAD so the score is comparable to a
/// standard z-score for normally distributed data.
const MAD_TO_SD: f64 = 0.6745;

/// Iglewicz–Hoaglin modified z-scores 0.6745·(x − median)/MAD, in input order.
///
/// Empty input gives an empty vector. When the MAD is 0 (more than half the
/// values identical) there is no robust scale to measure against, so every
/// score is 0.0. Any NaN in the input makes every score NaN.
pub fn modified_z_scores(xs: &[f64]) -> Vec<f64> {
    let Some(median) = percentile(xs, 50.0) else {
        // Empty input, or a NaN that leaves the median undefined.
        return vec![f64::NAN; xs.len()];
    };
    let deviations: Vec<f64> = xs.iter().map(|x| (x - median).abs()).collect();
    let mad = percentile(&deviations, 50.0).unwrap_or(f64::NAN);
    if mad == 0.0 {
        return vec![0.0; xs.len()];
    }
    xs.iter().map(|x| MAD_TO_SD * (x - median) / mad).collect()
}

/// Flags values whose |modified z-score| exceeds `threshold` ([`MODIFIED_Z_THRESHOLD`] is the usual choice).
pub fn outliers(xs: &[f64], threshold: f64) -> Vec<bool> {
    modified_z_scores(xs).into_iter().map(|z| z.abs() > threshold).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_scores() {
        // xs = 1,2,3,4,100: median 3; |x - 3| = 2,1,0,1,97 -> sorted 0,1,1,2,97,
        // MAD = 1. Scores: 0.6745·(x - 3) = -1.349, -0.6745, 0, 0.6745, 65.4265.
        let z = modified_z_scores(&[1.0, 2.0, 3.0, 4.0, 100.0]);
        let want = [-1.349, -0.6745, 0.0, 0.6745, 65.4265];
        assert_eq!(z.len(), want.len());
        for (g, w) in z.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "got {g}, want {w}");
        }
    }

    #[test]
    fn scores_with_fractional_mad() {
        // xs = 10,12,14,16,40: median 14; deviations 4,2,0,2,26 -> MAD 2.
        // 40 scores 0.6745·26/2 = 8.7685; 10 scores 0.6745·(-4)/2 = -1.349.
        let z = modified_z_scores(&[10.0, 12.0, 14.0, 16.0, 40.0]);
        assert!((z[4] - 8.7685).abs() < 1e-12);
        assert!((z[0] - -1.349).abs() < 1e-12);
    }

    #[test]
    fn flags_only_the_far_value() {
        let flags = outliers(&[1.0, 2.0, 3.0, 4.0, 100.0], MODIFIED_Z_THRESHOLD);
        assert_eq!(flags, vec![false, false, false, false, true]);
    }

    #[test]
    fn threshold_is_strict() {
        // 4 scores exactly 0.6745, which must not exceed a 0.6745 threshold.
        let flags = outliers(&[1.0, 2.0, 3.0, 4.0, 100.0], 0.6745);
        assert_eq!(flags, vec![true, false, false, false, true]);
    }

    #[test]
    fn zero_mad_gives_zero_scores() {
        assert_eq!(modified_z_scores(&[5.0, 5.0, 5.0, 9.0]), vec![0.0, 0.0, 0.0, 0.0]);
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 9.0], 3.5), vec![false; 4]);
    }

    #[test]
    fn empty_and_nan_input() {
        assert!(modified_z_scores(&[]).is_empty());
        assert!(outliers(&[], 3.5).is_empty());
        let z = modified_z_scores(&[1.0, f64::NAN, 3.0]);
        assert_eq!(z.len(), 3);
        assert!(z.iter().all(|v| v.is_nan()));
        assert_eq!(outliers(&[1.0, f64::NAN, 3.0], 3.5), vec![false; 3]);
    }

    #[test]
    fn single_value_is_not_an_outlier() {
        assert_eq!(modified_z_scores(&[42.0]), vec![0.0]);
    }
}
