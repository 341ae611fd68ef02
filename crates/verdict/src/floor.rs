//! This machine's A/A noise floor for one (cell, figure).

use serde::{Deserialize, Serialize};

use crate::logs::{mean, pooled_sd, positive_logs};
use crate::permutation::{split_difference, split_sums};

/// The share of splits the floor's `q95` covers.
const FLOOR_QUANTILE: f64 = 0.95;

/// How far two identical arms drift apart on this machine, for one (cell, figure), measured
/// from the two arms of a `schedlab noise` run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// Repetitions in the first arm it was measured with.
    pub n_a: usize,
    /// Repetitions in the second arm it was measured with.
    pub n_b: usize,
    /// The observed ratio of geometric means between the arms (second / first).
    pub ratio: f64,
    /// The 0.95 quantile of |mean ln(group 1) − mean ln(group 2)| over the splits of the
    /// pooled repetitions into groups of `n_a` and `n_b` (all splits, or 20,000 seeded
    /// random ones): how far two identical arms drift apart at that n, in log units.
    pub q95: f64,
    /// The pooled within-arm standard deviation of the log values.
    pub sd_log: f64,
    /// How far a whole run's mean drifts from another run's beyond what its repetitions'
    /// spread explains: the between-run standard deviation of the mean log value, from the
    /// runs of `schedlab noise --runs K` ([`run_drift`]); 0 when one run was measured. Two
    /// separate runs differ by it on top of their sampling error, which no test over the
    /// repetitions of one run can see.
    #[serde(default)]
    pub run_sd: f64,
}

impl Floor {
    /// Measures the floor from the two identical arms of an A/A run; None unless both have
    /// at least 2 repetitions, all positive and finite.
    pub fn measure(a: &[f64], b: &[f64]) -> Option<Floor> {
        let (la, lb) = (positive_logs(a)?, positive_logs(b)?);
        if la.len() < 2 || lb.len() < 2 {
            return None;
        }
        let pooled: Vec<f64> = la.iter().chain(&lb).copied().collect();
        let (n, k) = (pooled.len(), la.len());
        let total: f64 = pooled.iter().sum();
        let mut drifts: Vec<f64> = split_sums(&pooled, k)
            .sums
            .iter()
            .map(|&s| split_difference(s, total, k, n).abs())
            .collect();
        drifts.sort_by(f64::total_cmp);
        Some(Floor {
            n_a: la.len(),
            n_b: lb.len(),
            ratio: (mean(&lb) - mean(&la)).exp(),
            q95: quantile_of_sorted(&drifts, FLOOR_QUANTILE),
            sd_log: pooled_sd(&la, &lb),
            run_sd: 0.0,
        })
    }

    /// The floor at another sample size, as a fraction (0.018 = 1.8%): `q95` scaled by
    /// sqrt((1/n_a + 1/n_b) / (1/floor.n_a + 1/floor.n_b)), then exp(q) − 1. Infinite when
    /// any of the four sizes is 0 (nothing is known then).
    pub fn delta_at(&self, n_a: usize, n_b: usize) -> f64 {
        if n_a == 0 || n_b == 0 || self.n_a == 0 || self.n_b == 0 {
            return f64::INFINITY;
        }
        let inverse = |x: usize, y: usize| 1.0 / x as f64 + 1.0 / y as f64;
        let scale = (inverse(n_a, n_b) / inverse(self.n_a, self.n_b)).sqrt();
        (self.q95 * scale).exp_m1()
    }
}

/// The between-run standard deviation of the mean log value beyond sampling, from the
/// values of one (cell, figure) in each of several identical runs: var(run means) less the
/// mean of each run's variance of its mean, at least 0. None with fewer than 2 runs of 2
/// positive values each.
pub fn run_drift(runs: &[Vec<f64>]) -> Option<f64> {
    let logs: Vec<Vec<f64>> = runs.iter().map(|r| positive_logs(r)).collect::<Option<_>>()?;
    if logs.len() < 2 || logs.iter().any(|l| l.len() < 2) {
        return None;
    }
    let means: Vec<f64> = logs.iter().map(|l| mean(l)).collect();
    let sampling: f64 =
        logs.iter().map(|l| crate::logs::sample_variance(l) / l.len() as f64).sum::<f64>()
            / logs.len() as f64;
    Some((crate::logs::sample_variance(&means) - sampling).max(0.0).sqrt())
}

/// The `q` quantile of sorted values, as the inverse of their empirical distribution (the
/// smallest value with at least a share q at or below it). `sorted` must not be empty.
fn quantile_of_sorted(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_is_the_inverse_ecdf() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(quantile_of_sorted(&v, 0.95), 19.0);
        assert_eq!(quantile_of_sorted(&v, 1.0), 20.0);
        assert_eq!(quantile_of_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_of_sorted(&[3.0], 0.95), 3.0);
    }

    #[test]
    fn two_against_two_by_hand() {
        // ln values 0, 0, ln 2, ln 2 (x = ln 2). The 6 splits into 2 and 2: two put {0, 0}
        // against {x, x} (drift x), four mix them (drift 0). The 0.95 quantile is x.
        let f = Floor::measure(&[1.0, 2.0], &[1.0, 2.0]).unwrap();
        assert_eq!((f.n_a, f.n_b), (2, 2));
        assert!((f.ratio - 1.0).abs() < 1e-15);
        assert!((f.q95 - 2.0_f64.ln()).abs() < 1e-12, "q95 {}", f.q95);
        // Pooled sd: each arm's variance of logs is x²/2.
        assert!((f.sd_log - 2.0_f64.ln() / 2.0_f64.sqrt()).abs() < 1e-12);
        assert!((f.delta_at(2, 2) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn delta_scales_with_the_square_root_of_n() {
        let f = Floor { n_a: 5, n_b: 5, ratio: 1.0, q95: 0.02, sd_log: 0.01, run_sd: 0.0 };
        assert!((f.delta_at(5, 5) - 0.02_f64.exp_m1()).abs() < 1e-15);
        // Four times the repetitions: half the drift.
        assert!((f.delta_at(20, 20) - 0.01_f64.exp_m1()).abs() < 1e-15);
        // Unequal arms: (1/10 + 1/40) / (1/5 + 1/5) = 0.3125.
        assert!((f.delta_at(10, 40) - (0.02 * 0.3125_f64.sqrt()).exp_m1()).abs() < 1e-15);
        assert_eq!(f.delta_at(0, 5), f64::INFINITY);
    }

    #[test]
    fn noisier_arms_have_a_higher_floor() {
        let quiet = Floor::measure(&[100.0, 101.0, 99.0, 100.5], &[100.2, 99.8, 100.4, 99.6]);
        let noisy = Floor::measure(&[100.0, 110.0, 90.0, 105.0], &[102.0, 98.0, 104.0, 96.0]);
        let (quiet, noisy) = (quiet.unwrap(), noisy.unwrap());
        assert!(noisy.q95 > 5.0 * quiet.q95, "{quiet:?} {noisy:?}");
        assert!(noisy.sd_log > 5.0 * quiet.sd_log);
    }

    #[test]
    fn large_arms_use_the_seeded_draws() {
        let a: Vec<f64> = (0..15).map(|i| 100.0 + (i % 5) as f64).collect();
        let b: Vec<f64> = (0..15).map(|i| 100.0 + (i % 3) as f64).collect();
        let f1 = Floor::measure(&a, &b).unwrap();
        assert_eq!(f1, Floor::measure(&a, &b).unwrap());
        assert!(f1.q95 > 0.0 && f1.q95 < 0.03);
    }

    #[test]
    fn round_trips_through_json() {
        let f = Floor { n_a: 5, n_b: 6, ratio: 1.01, q95: 0.02, sd_log: 0.01, run_sd: 0.0 };
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Floor>(&json).unwrap(), f);
    }

    #[test]
    fn bad_input_is_not_measured() {
        assert_eq!(Floor::measure(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(Floor::measure(&[1.0, 0.0], &[1.0, 2.0]), None);
        assert_eq!(Floor::measure(&[1.0, 2.0], &[f64::NAN, 2.0]), None);
    }

    #[test]
    fn run_drift_is_the_spread_of_run_means_beyond_their_sampling() {
        // Two runs with no spread inside, means e^0 and e^0.1 apart: var of means 0.005.
        let runs = [vec![1.0, 1.0], vec![0.1_f64.exp(), 0.1_f64.exp()]];
        let d = run_drift(&runs).unwrap();
        assert!((d - 0.005_f64.sqrt()).abs() < 1e-12, "{d}");
        // Runs that agree as well as their repetitions allow drift by nothing.
        let runs = [vec![1.0, 2.0], vec![2.0, 1.0]];
        assert_eq!(run_drift(&runs), Some(0.0));
        assert_eq!(run_drift(&[vec![1.0, 2.0]]), None, "one run says nothing");
        assert_eq!(run_drift(&[vec![1.0], vec![2.0]]), None);
        assert_eq!(run_drift(&[vec![1.0, -2.0], vec![2.0, 1.0]]), None);
    }
}
