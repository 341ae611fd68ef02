//! How many repetitions a comparison needs: the sequential step after undecided verdicts.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use crate::judge::{Judged, Params, Verdict};

/// The fewest repetitions per run [`repetitions_needed`] ever asks for.
const MIN_REPETITIONS: usize = 3;

/// The standard normal quantile at `p` (0 < p < 1).
fn z(p: f64) -> f64 {
    Normal::standard().inverse_cdf(p)
}

/// Repetitions per run for a two-sided test at `alpha_per_test` to detect a change of
/// `delta` (a fraction, 0.02 = 2%) with probability `power`, on log values whose
/// within-run standard deviation is `sd_log`.
///
/// Normal approximation: n = 2 · (z_{1−α/2} + z_{power})² · sd² / ln(1 + δ)², rounded up and
/// at least 3. None when sd_log is negative or not finite, δ is not positive and finite, or
/// alpha or power is outside (0, 1).
pub fn repetitions_needed(
    sd_log: f64,
    delta: f64,
    alpha_per_test: f64,
    power: f64,
) -> Option<usize> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    let valid = sd_log.is_finite()
        && sd_log >= 0.0
        && delta.is_finite()
        && delta > 0.0
        && in_unit(alpha_per_test)
        && in_unit(power);
    if !valid {
        return None;
    }
    let zs = z(1.0 - alpha_per_test / 2.0) + z(power);
    let n = 2.0 * zs * zs * sd_log * sd_log / delta.ln_1p().powi(2);
    // `as` saturates: an absurd n stays a (huge) usize.
    Some((n.ceil() as usize).max(MIN_REPETITIONS))
}

/// What to do after a round of verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStep {
    /// Repetitions to add to each run (0 when nothing undecided can be helped).
    pub more_per_run: usize,
    /// Pairs still undecided.
    pub undecided: usize,
    /// Whether `more_per_run` was cut to the cap (some pairs would need more).
    pub capped: bool,
}

/// How many more repetitions per run the undecided pairs of a family need, at most
/// `max_more`.
///
/// For each `Undecided` pair with a standard deviation of its logs:
/// [`repetitions_needed`]`(sd_log, delta, alpha / m, power)` minus the repetitions it has
/// (the smaller run), where δ is the pair's margin and m the number of pairs that have a
/// p-value (Holm's first, strictest step, so the estimate is conservative). A pair with
/// fewer than 2 repetitions in a run needs at least 3. Pairs not judged for their values
/// (empty runs, values that are not positive) are counted undecided but no repetition
/// count helps them. The answer is the largest need, capped at `max_more`.
pub fn next_step(judged: &[Judged], params: &Params, power: f64, max_more: usize) -> NextStep {
    let family = judged.iter().filter(|j| j.p.is_some()).count().max(1);
    let alpha_per_test = params.alpha / family as f64;
    let undecided: Vec<&Judged> =
        judged.iter().filter(|j| j.verdict == Verdict::Undecided).collect();
    let need = undecided
        .iter()
        .filter_map(|j| {
            let have = j.n_a.min(j.n_b);
            let needed = match j.sd_log {
                Some(sd) => repetitions_needed(sd, j.delta, alpha_per_test, power)?,
                None if j.mean_a.is_some() && j.mean_b.is_some() => MIN_REPETITIONS,
                None => return None,
            };
            Some(needed.saturating_sub(have))
        })
        .max()
        .unwrap_or(0);
    NextStep {
        more_per_run: need.min(max_more),
        undecided: undecided.len(),
        capped: need > max_more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{judge, Better, Pair};

    #[test]
    fn against_the_formula() {
        // sd 2%, δ 2%, α 0.05, power 0.8: z = 1.959964 + 0.841621 = 2.801585,
        // n = 2 · 7.848879 · 0.0004 / ln(1.02)² = 0.006279103 / 0.000392155 = 16.01 → 17.
        assert_eq!(repetitions_needed(0.02, 0.02, 0.05, 0.8), Some(17));
        // Halving the noise quarters n: 4.003 → 5.
        assert_eq!(repetitions_needed(0.01, 0.02, 0.05, 0.8), Some(5));
        // Never fewer than 3.
        assert_eq!(repetitions_needed(0.0, 0.02, 0.05, 0.8), Some(3));
        assert_eq!(repetitions_needed(0.001, 0.5, 0.05, 0.8), Some(3));
        // A stricter alpha (Bonferroni over 20) needs more.
        assert!(repetitions_needed(0.02, 0.02, 0.0025, 0.8).unwrap() > 17);
    }

    #[test]
    fn bad_input_gives_none() {
        assert_eq!(repetitions_needed(f64::NAN, 0.02, 0.05, 0.8), None);
        assert_eq!(repetitions_needed(-0.1, 0.02, 0.05, 0.8), None);
        assert_eq!(repetitions_needed(0.02, 0.0, 0.05, 0.8), None);
        assert_eq!(repetitions_needed(0.02, 0.02, 1.0, 0.8), None);
        assert_eq!(repetitions_needed(0.02, 0.02, 0.05, 0.0), None);
    }

    #[test]
    fn next_step_takes_the_largest_need_and_caps_it() {
        // Undecided 3 v 3 noisy pair and a Same pair.
        let noisy_a = [100.0, 104.0, 97.0];
        let noisy_b = [101.0, 96.0, 105.0];
        let quiet = [100.0, 100.1, 99.9, 100.0];
        let items = [
            Pair { a: &noisy_a, b: &noisy_b, better: Better::Lower, floor: None },
            Pair { a: &quiet, b: &quiet, better: Better::Lower, floor: None },
        ];
        let params = Params { same_within: Some(0.02), ..Params::default() };
        let judged = judge(&items, &params);
        assert_eq!(judged[0].verdict, Verdict::Undecided);
        assert_eq!(judged[1].verdict, Verdict::Same);
        let sd = judged[0].sd_log.unwrap();
        let needed = repetitions_needed(sd, 0.02, 0.05 / 2.0, 0.8).unwrap();
        let step = next_step(&judged, &params, 0.8, 1000);
        assert_eq!(step, NextStep { more_per_run: needed - 3, undecided: 1, capped: false });
        let step = next_step(&judged, &params, 0.8, 2);
        assert_eq!(step, NextStep { more_per_run: 2, undecided: 1, capped: true });
    }

    #[test]
    fn next_step_for_single_repetitions_and_bad_values() {
        let items = [
            Pair { a: &[100.0], b: &[100.0], better: Better::Lower, floor: None },
            Pair { a: &[-1.0], b: &[100.0], better: Better::Lower, floor: None },
        ];
        let judged = judge(&items, &Params::default());
        let step = next_step(&judged, &Params::default(), 0.8, 10);
        assert_eq!(step, NextStep { more_per_run: 2, undecided: 2, capped: false });
        let nothing = next_step(&[], &Params::default(), 0.8, 10);
        assert_eq!(nothing, NextStep { more_per_run: 0, undecided: 0, capped: false });
    }
}
