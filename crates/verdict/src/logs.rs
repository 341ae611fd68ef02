//! Checked logarithms and the moments the other modules share.

/// The natural logarithms of `values`; None if any value is not a positive finite number.
pub(crate) fn positive_logs(values: &[f64]) -> Option<Vec<f64>> {
    values.iter().map(|&v| (v.is_finite() && v > 0.0).then(|| v.ln())).collect()
}

/// Whether every value is finite.
pub(crate) fn all_finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

/// The arithmetic mean; NaN for an empty slice.
pub(crate) fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// The sample variance (n − 1 in the denominator); NaN with fewer than 2 values.
pub(crate) fn sample_variance(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return f64::NAN;
    }
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64
}

/// The pooled within-group standard deviation of two groups of at least 2 values each.
pub(crate) fn pooled_sd(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let ss = (na - 1.0) * sample_variance(a) + (nb - 1.0) * sample_variance(b);
    (ss / (na + nb - 2.0)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_reject_non_positive_and_non_finite() {
        assert_eq!(positive_logs(&[1.0, std::f64::consts::E]), Some(vec![0.0, 1.0]));
        assert_eq!(positive_logs(&[1.0, 0.0]), None);
        assert_eq!(positive_logs(&[1.0, -2.0]), None);
        assert_eq!(positive_logs(&[f64::NAN]), None);
        assert_eq!(positive_logs(&[f64::INFINITY]), None);
        assert_eq!(positive_logs(&[]), Some(vec![]));
    }

    #[test]
    fn moments_by_hand() {
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
        assert_eq!(sample_variance(&[1.0, 2.0, 3.0]), 1.0);
        assert!(sample_variance(&[1.0]).is_nan());
        // Pooled: ss = 2·1 + 1·2 = 4 over 5 − 2 = 3 degrees of freedom.
        let sd = pooled_sd(&[1.0, 2.0, 3.0], &[0.0, 2.0]);
        assert!((sd - (4.0_f64 / 3.0).sqrt()).abs() < 1e-15);
    }
}
