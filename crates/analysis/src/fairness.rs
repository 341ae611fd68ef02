//! Fairness and dispersion measures across competing tasks (e.g. per-thread
//! throughput under one scheduler).

use crate::moments::{all_finite, mean, sample_variance};

/// Jain's fairness index (sum x)^2 / (n * sum x^2); 1.0 = perfectly fair, 1/n = worst.
///
/// None for an empty slice, all zeros, any negative or non-finite value:
/// the index is only meaningful for non-negative allocations, and a negative
/// share would let it exceed its [1/n, 1] range.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || !all_finite(xs) || xs.iter().any(|&x| x < 0.0) {
        return None;
    }
    let max = xs.iter().copied().fold(0.0, f64::max);
    if max == 0.0 {
        return None;
    }
    // The index is scale-invariant; dividing by the maximum first keeps the
    // squares from overflowing on huge counters (e.g. bytes or nanoseconds).
    let (sum, sum_sq) = xs.iter().fold((0.0, 0.0), |(s, sq), &x| {
        let y = x / max;
        (s + y, sq + y * y)
    });
    Some(sum * sum / (xs.len() as f64 * sum_sq))
}

/// Largest absolute deviation from the mean, max |x - mean|; None for empty or non-finite input.
pub fn max_deviation_from_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || !all_finite(xs) {
        return None;
    }
    let m = mean(xs);
    Some(xs.iter().map(|x| (x - m).abs()).fold(0.0, f64::max))
}

/// Sample sd (n - 1) divided by |mean|; 0 for a single value, None for empty, non-finite or zero-mean input.
pub fn coefficient_of_variation(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || !all_finite(xs) {
        return None;
    }
    let m = mean(xs);
    if m == 0.0 {
        return None;
    }
    Some(sample_variance(xs, m).sqrt() / m.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
    }

    #[test]
    fn jain_equal_shares_is_one() {
        // (4)^2 / (4 * 4) = 1
        close(jain_index(&[1.0, 1.0, 1.0, 1.0]).unwrap(), 1.0);
    }

    #[test]
    fn jain_single_winner_is_one_over_n() {
        // (1)^2 / (4 * 1) = 0.25
        close(jain_index(&[1.0, 0.0, 0.0, 0.0]).unwrap(), 0.25);
    }

    #[test]
    fn jain_hand_computed() {
        // sum = 10, sum of squares = 1+4+9+16 = 30 -> 100 / (4 * 30) = 0.8333..
        close(jain_index(&[1.0, 2.0, 3.0, 4.0]).unwrap(), 100.0 / 120.0);
    }

    #[test]
    fn jain_is_scale_invariant_and_overflow_safe() {
        let big = [1e300, 2e300, 3e300, 4e300];
        close(jain_index(&big).unwrap(), 100.0 / 120.0);
    }

    #[test]
    fn jain_single_value_is_one() {
        close(jain_index(&[5.0]).unwrap(), 1.0);
    }

    #[test]
    fn jain_rejects_degenerate_input() {
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[1.0, -1.0]), None);
        assert_eq!(jain_index(&[1.0, f64::NAN]), None);
        assert_eq!(jain_index(&[1.0, f64::INFINITY]), None);
    }

    #[test]
    fn max_deviation_hand_computed() {
        // mean of 2,4,4,4,5,5,7,9 is 5; the farthest value is 9 -> 4.
        close(max_deviation_from_mean(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap(), 4.0);
        // mean of 10,20,60 is 30; |10-30| = 20 < |60-30| = 30.
        close(max_deviation_from_mean(&[10.0, 20.0, 60.0]).unwrap(), 30.0);
    }

    #[test]
    fn max_deviation_edge_cases() {
        assert_eq!(max_deviation_from_mean(&[3.0]), Some(0.0));
        assert_eq!(max_deviation_from_mean(&[]), None);
        assert_eq!(max_deviation_from_mean(&[f64::NAN]), None);
    }

    #[test]
    fn cv_hand_computed() {
        // sd = sqrt(32/7) = 2.138090, mean = 5 -> 0.427618
        let cv = coefficient_of_variation(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        close(cv, (32.0f64 / 7.0).sqrt() / 5.0);
    }

    #[test]
    fn cv_edge_cases() {
        assert_eq!(coefficient_of_variation(&[4.0]), Some(0.0));
        assert_eq!(coefficient_of_variation(&[]), None);
        assert_eq!(coefficient_of_variation(&[-1.0, 1.0]), None);
        assert_eq!(coefficient_of_variation(&[1.0, f64::NAN]), None);
    }
}
