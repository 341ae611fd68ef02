//! The two-sample verdict behind `schedlab compare`.

use crate::interval::Domain;
use crate::moments::valid_level;
use crate::ratio::{ratio_of_means, Ratio};
use crate::summary::Summary;
use crate::welch::{welch_t_test, Welch};

/// A comparison verdict used by `schedlab compare`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Summary of the baseline sample, CI at level 1 − alpha.
    pub a: Summary,
    /// Summary of the candidate sample, CI at level 1 − alpha.
    pub b: Summary,
    /// mean(b) / mean(a) with a 1 − alpha CI; None when mean(a) is 0.
    pub ratio: Option<Ratio>,
    /// Welch's t-test of a against b; None when either sample has fewer than 2 values.
    pub welch: Option<Welch>,
    /// True when the Welch test exists and its p-value is below alpha.
    pub significant: bool,
}

/// Compares baseline `a` with candidate `b`, samples of a non-negative quantity (a time, a
/// count, a rate), at significance `alpha` in (0, 1); None for empty, negative or non-finite
/// samples or a bad alpha.
///
/// All intervals use level 1 − alpha so that they agree with the test's
/// verdict (alpha = 0.05 gives the usual 95% intervals), and stay above zero (see [`Domain`]).
pub fn compare(a: &[f64], b: &[f64], alpha: f64) -> Option<Comparison> {
    if !valid_level(alpha) {
        return None;
    }
    let level = 1.0 - alpha;
    let sa = Summary::in_domain_at(a, Domain::NonNegative, level)?;
    let sb = Summary::in_domain_at(b, Domain::NonNegative, level)?;
    let welch = welch_t_test(a, b);
    Some(Comparison {
        a: sa,
        b: sb,
        ratio: ratio_of_means(a, b, level),
        welch,
        significant: welch.is_some_and(|w| w.p_value < alpha),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    // Welch example 1 (see welch.rs): p = 0.021378.
    use crate::welch::tests::{A1, A2};

    #[test]
    fn significance_depends_on_alpha() {
        let c = compare(&A1, &A2, 0.05).unwrap();
        assert!(c.significant);
        assert!((c.welch.unwrap().p_value - 0.021_378).abs() < 1e-4);
        let c = compare(&A1, &A2, 0.01).unwrap();
        assert!(!c.significant);
    }

    #[test]
    fn parts_match_the_standalone_functions() {
        let c = compare(&A1, &A2, 0.05).unwrap();
        assert_eq!(c.a, Summary::in_domain(&A1, Domain::NonNegative).unwrap());
        assert_eq!(c.b, Summary::in_domain(&A2, Domain::NonNegative).unwrap());
        assert_eq!(c.welch, welch_t_test(&A1, &A2));
        assert_eq!(c.ratio, ratio_of_means(&A1, &A2, 0.95));
        // mean(A2) / mean(A1) = 22.986667 / 20.82 = 1.104067
        assert!((c.ratio.unwrap().ratio - 344.8 / 312.3).abs() < 1e-12);
    }

    #[test]
    fn single_runs_compare_without_a_test() {
        let c = compare(&[10.0], &[12.0], 0.05).unwrap();
        assert_eq!(c.welch, None);
        assert!(!c.significant);
        assert_eq!(c.ratio.unwrap().ratio, 1.2);
    }

    #[test]
    fn zero_baseline_has_no_ratio() {
        let c = compare(&[0.0, 0.0], &[1.0, 2.0], 0.05).unwrap();
        assert_eq!(c.ratio, None);
        assert!(c.welch.is_some());
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(compare(&[], &[1.0], 0.05), None);
        assert_eq!(compare(&[1.0], &[f64::NAN], 0.05), None);
        assert_eq!(
            compare(&[1.0, 2.0], &[-1.0, 2.0], 0.05),
            None,
            "a time or a count is never negative"
        );
        assert_eq!(compare(&[1.0, 2.0], &[1.0, 2.0], 0.0), None);
        assert_eq!(compare(&[1.0, 2.0], &[1.0, 2.0], 1.0), None);
    }
}
