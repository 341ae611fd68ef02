//! Shared building blocks: input validation and the first two moments.

/// True when every value is finite; NaN or infinities would silently poison
/// every moment, so public entry points refuse such input instead.
pub(crate) fn all_finite(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

/// True for a confidence level strictly inside (0, 1); NaN fails too.
pub(crate) fn valid_level(level: f64) -> bool {
    level > 0.0 && level < 1.0
}

/// Arithmetic mean; callers guarantee a non-empty slice.
pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (divisor n - 1) around a precomputed mean, 0 when n < 2.
///
/// Two passes (mean first, then squared deviations) avoid the catastrophic
/// cancellation of the sum-of-squares shortcut on large, tightly clustered
/// values such as nanosecond timestamps.
pub(crate) fn sample_variance(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    ss / (xs.len() - 1) as f64
}

/// Welch–Satterthwaite degrees of freedom for a sum of independent variance
/// components `(component, its df)`.
///
/// Written in terms of each component's share of the total so that tiny
/// variances do not underflow when squared; zero components are skipped,
/// which is what lets a sample with n = 1 (df 0) contribute nothing instead
/// of producing 0/0. Returns None when the total variance is zero.
pub(crate) fn satterthwaite_df(components: &[(f64, f64)]) -> Option<f64> {
    let total: f64 = components.iter().map(|&(c, _)| c).sum();
    if total <= 0.0 {
        return None;
    }
    let denom: f64 = components
        .iter()
        .filter(|&&(c, _)| c > 0.0)
        .map(|&(c, df)| {
            let w = c / total;
            w * w / df
        })
        .sum();
    Some(1.0 / denom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_variance_of_textbook_sample() {
        // 2,4,4,4,5,5,7,9: sum 40 -> mean 5; squared deviations sum to 32,
        // so the sample variance is 32/7.
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let m = mean(&xs);
        assert_eq!(m, 5.0);
        assert!((sample_variance(&xs, m) - 32.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn variance_of_single_value_is_zero() {
        assert_eq!(sample_variance(&[3.0], 3.0), 0.0);
    }

    #[test]
    fn variance_survives_large_offset() {
        // Same spread as [1,2,3] (variance 1) shifted by 1e9: the naive
        // E[x^2] - E[x]^2 formula loses most digits here.
        let xs = [1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0];
        let m = mean(&xs);
        assert!((sample_variance(&xs, m) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn satterthwaite_equal_components_adds_dfs() {
        // Two equal components with df 9 each: 1 / (0.25/9 + 0.25/9) = 18.
        let df = satterthwaite_df(&[(2.0, 9.0), (2.0, 9.0)]).unwrap();
        assert!((df - 18.0).abs() < 1e-12);
    }

    #[test]
    fn satterthwaite_skips_zero_components_and_rejects_zero_total() {
        let df = satterthwaite_df(&[(0.0, 0.0), (1.0, 4.0)]).unwrap();
        assert!((df - 4.0).abs() < 1e-12);
        assert_eq!(satterthwaite_df(&[(0.0, 3.0), (0.0, 4.0)]), None);
    }

    #[test]
    fn level_validation() {
        assert!(valid_level(0.95));
        assert!(!valid_level(0.0));
        assert!(!valid_level(1.0));
        assert!(!valid_level(95.0));
        assert!(!valid_level(f64::NAN));
    }

    #[test]
    fn finiteness_check() {
        assert!(all_finite(&[1.0, -2.0]));
        assert!(!all_finite(&[1.0, f64::NAN]));
        assert!(!all_finite(&[f64::INFINITY]));
    }
}
