//! Percentiles with linear interpolation between closest ranks
//! (Hyndman–Fan type 7, the default of numpy and R).

/// The `p`-th percentile (`p` in [0, 100]) of `xs`, interpolating linearly between closest ranks.
///
/// Matches `numpy.percentile(xs, p)` and R's `quantile(xs, p/100, type = 7)`.
/// Sorts a copy, so `xs` may be in any order. Returns None for an empty
/// slice, a NaN value, or `p` outside [0, 100].
pub fn percentile(xs: &[f64], p: f64) -> Option<f64> {
    percentiles(xs, &[p]).map(|v| v[0])
}

/// Several percentiles of `xs` at once, sorting only one copy; None under the same conditions as [`percentile`].
pub fn percentiles(xs: &[f64], ps: &[f64]) -> Option<Vec<f64>> {
    if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    if !ps.iter().all(|p| (0.0..=100.0).contains(p)) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(ps.iter().map(|&p| percentile_sorted(&sorted, p)).collect())
}

/// Type-7 percentile of an already sorted, non-empty, NaN-free slice.
pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let frac = h - lo as f64;
    match sorted.get(lo + 1) {
        // Skipping the blend when frac == 0 keeps exact ranks exact even
        // next to an infinite neighbour (0 * inf would be NaN).
        Some(&hi) if frac > 0.0 => sorted[lo] + frac * (hi - sorted[lo]),
        _ => sorted[lo],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-12;

    #[test]
    fn matches_numpy_type7_on_five_values() {
        // Sorted: 15 20 35 40 50, n - 1 = 4, position h = 4p/100.
        // p=40 -> h=1.6 -> 20 + 0.6*(35-20) = 29
        // p=25 -> h=1.0 -> 20
        // p=90 -> h=3.6 -> 40 + 0.6*(50-40) = 46
        // p=50 -> h=2.0 -> 35
        // numpy.percentile([50,15,40,20,35], [40,25,90,50]) = [29, 20, 46, 35].
        let xs = [50.0, 15.0, 40.0, 20.0, 35.0];
        for (p, want) in [(40.0, 29.0), (25.0, 20.0), (90.0, 46.0), (50.0, 35.0)] {
            let got = percentile(&xs, p).unwrap();
            assert!((got - want).abs() < TOL, "p{p}: got {got}, want {want}");
        }
    }

    #[test]
    fn matches_numpy_type7_on_even_count() {
        // 1 2 3 4: p=50 -> h=1.5 -> 2.5; p=10 -> h=0.3 -> 1.3;
        // p=75 -> h=2.25 -> 3.25 (numpy gives the same three values).
        let xs = [4.0, 3.0, 2.0, 1.0];
        assert!((percentile(&xs, 50.0).unwrap() - 2.5).abs() < TOL);
        assert!((percentile(&xs, 10.0).unwrap() - 1.3).abs() < TOL);
        assert!((percentile(&xs, 75.0).unwrap() - 3.25).abs() < TOL);
    }

    #[test]
    fn extremes_are_min_and_max() {
        let xs = [3.0, -1.0, 7.5, 2.0];
        assert_eq!(percentile(&xs, 0.0), Some(-1.0));
        assert_eq!(percentile(&xs, 100.0), Some(7.5));
    }

    #[test]
    fn single_value_is_every_percentile() {
        for p in [0.0, 37.0, 100.0] {
            assert_eq!(percentile(&[4.2], p), Some(4.2));
        }
    }

    #[test]
    fn input_is_not_reordered() {
        let xs = [3.0, 1.0, 2.0];
        let _ = percentile(&xs, 50.0);
        assert_eq!(xs, [3.0, 1.0, 2.0]);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0, f64::NAN], 50.0), None);
        assert_eq!(percentile(&[1.0, 2.0], -0.1), None);
        assert_eq!(percentile(&[1.0, 2.0], 100.1), None);
        assert_eq!(percentile(&[1.0, 2.0], f64::NAN), None);
    }

    #[test]
    fn infinite_maximum_keeps_exact_ranks() {
        let xs = [1.0, 2.0, f64::INFINITY];
        assert_eq!(percentile(&xs, 50.0), Some(2.0));
        assert_eq!(percentile(&xs, 100.0), Some(f64::INFINITY));
    }

    #[test]
    fn batch_matches_single_calls() {
        let xs = [50.0, 15.0, 40.0, 20.0, 35.0];
        let ps = [25.0, 40.0, 90.0];
        let got = percentiles(&xs, &ps).unwrap();
        assert_eq!(got.len(), ps.len());
        for (g, p) in got.iter().zip(ps) {
            assert_eq!(Some(*g), percentile(&xs, p));
        }
        assert_eq!(percentiles(&xs, &[50.0, 101.0]), None);
    }
}
