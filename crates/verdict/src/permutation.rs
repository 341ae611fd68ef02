//! The permutation test over whole repetitions, and the split machinery [`crate::Floor`]
//! shares with it.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::logs::{mean, positive_logs};

/// Splits are enumerated exactly when there are at most this many (C(n_a + n_b, n_a)).
pub const EXACT_SPLITS_LIMIT: u64 = 50_000;

/// Random splits drawn when there are more than [`EXACT_SPLITS_LIMIT`].
pub const MONTE_CARLO_DRAWS: usize = 20_000;

/// The fixed seed of every Monte Carlo draw, so that the same values give the same p.
pub const MONTE_CARLO_SEED: u64 = 0x5C4E_D1AB_7E2D_1C75;

/// The sums of the first group over splits of pooled values into a group of `k` and the rest.
pub(crate) struct Splits {
    /// One sum per split.
    pub sums: Vec<f64>,
    /// Whether `sums` holds every split (else [`MONTE_CARLO_DRAWS`] random ones).
    pub exact: bool,
}

/// C(n, k), or None when it exceeds `limit`.
pub(crate) fn binomial_within(n: usize, k: usize, limit: u64) -> Option<u64> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut c: u128 = 1;
    for i in 0..k {
        // Exact at every step: c · (n − i) is divisible by i + 1.
        c = c * (n - i) as u128 / (i + 1) as u128;
        if c > limit as u128 {
            return None;
        }
    }
    Some(c as u64)
}

/// The first-group sums over all splits, or over [`MONTE_CARLO_DRAWS`] seeded random ones
/// when there are more than [`EXACT_SPLITS_LIMIT`]. `k` must be at most `pooled.len()`.
pub(crate) fn split_sums(pooled: &[f64], k: usize) -> Splits {
    match binomial_within(pooled.len(), k, EXACT_SPLITS_LIMIT) {
        Some(total) => Splits { sums: exact_sums(pooled, k, total as usize), exact: true },
        None => Splits { sums: random_sums(pooled, k), exact: false },
    }
}

/// Every k-subset's sum, the subsets in lexicographic order of their indices.
fn exact_sums(pooled: &[f64], k: usize, total: usize) -> Vec<f64> {
    let n = pooled.len();
    let mut sums = Vec::with_capacity(total);
    let mut idx: Vec<usize> = (0..k).collect();
    loop {
        sums.push(idx.iter().map(|&i| pooled[i]).sum());
        // Advance to the next combination: the rightmost index that can move, moves.
        let Some(pos) = (0..k).rev().find(|&p| idx[p] < n - k + p) else {
            return sums;
        };
        idx[pos] += 1;
        for q in pos + 1..k {
            idx[q] = idx[q - 1] + 1;
        }
    }
}

/// Sums of [`MONTE_CARLO_DRAWS`] random k-subsets drawn from [`MONTE_CARLO_SEED`]: by
/// rejection on random bit masks when the pool is small and k-subsets are a fair share of
/// all subsets (the common 10 v 10 case), else by partial Fisher–Yates shuffles. Both draw
/// uniformly among k-subsets.
fn random_sums(pooled: &[f64], k: usize) -> Vec<f64> {
    let n = pooled.len();
    let share = binomial_within(n, k, u64::MAX).unwrap_or(0) as f64 / (n as f64).exp2();
    if n <= MASK_MAX_POOL && share >= MASK_MIN_SHARE {
        random_sums_by_mask(pooled, k)
    } else {
        random_sums_by_shuffle(pooled, k)
    }
}

/// The largest pool drawn by bit masks (two subset-sum tables of 2^12 entries).
const MASK_MAX_POOL: usize = 24;

/// The smallest share of k-subsets among all subsets for which masks are drawn.
const MASK_MIN_SHARE: f64 = 1.0 / 16.0;

/// The sum of `values` picked by the bits of each mask below 2^len: a table of every
/// subset's sum.
fn subset_sums(values: &[f64]) -> Vec<f64> {
    let mut sums = vec![0.0; 1 << values.len()];
    for mask in 1..sums.len() {
        let low = mask.trailing_zeros() as usize;
        sums[mask] = sums[mask & (mask - 1)] + values[low];
    }
    sums
}

/// Random k-subset sums by rejection: each n-bit chunk of a 64-bit draw is a uniformly
/// random subset, kept when it has exactly k members; its sum comes from two tables (low
/// and high half of the pool).
fn random_sums_by_mask(pooled: &[f64], k: usize) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(MONTE_CARLO_SEED);
    let n = pooled.len();
    let low_len = n / 2;
    let (low, high) = (subset_sums(&pooled[..low_len]), subset_sums(&pooled[low_len..]));
    let chunks = 64 / n;
    let (mask_bits, low_bits) = ((1u64 << n) - 1, (1u64 << low_len) - 1);
    let mut sums = Vec::with_capacity(MONTE_CARLO_DRAWS);
    while sums.len() < MONTE_CARLO_DRAWS {
        let mut bits = rng.next_u64();
        for _ in 0..chunks {
            let mask = bits & mask_bits;
            bits >>= n;
            if mask.count_ones() as usize == k && sums.len() < MONTE_CARLO_DRAWS {
                sums.push(low[(mask & low_bits) as usize] + high[(mask >> low_len) as usize]);
            }
        }
    }
    sums
}

/// Random k-subset sums by partial Fisher–Yates shuffles. Each 64-bit draw gives two
/// indices, one per 32-bit half, by Lemire's multiply-shift (the bias, below n/2^32, is
/// nothing at these sizes).
fn random_sums_by_shuffle(pooled: &[f64], k: usize) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(MONTE_CARLO_SEED);
    let mut work = pooled.to_vec();
    let n = work.len() as u64;
    let k = k as u64;
    let mut sums = Vec::with_capacity(MONTE_CARLO_DRAWS);
    for _ in 0..MONTE_CARLO_DRAWS {
        let mut sum = 0.0;
        let mut bits = 0u64;
        for i in 0..k {
            if i % 2 == 0 {
                bits = rng.next_u64();
            }
            let half = if i % 2 == 0 { bits >> 32 } else { bits & 0xFFFF_FFFF };
            let j = (i + ((half * (n - i)) >> 32)) as usize;
            work.swap(i as usize, j);
            sum += work[i as usize];
        }
        sums.push(sum);
    }
    sums
}

/// The difference of group means (second − first) of a split whose first group of `k`
/// values sums to `sum_first`, out of `n` values summing to `total`.
pub(crate) fn split_difference(sum_first: f64, total: f64, k: usize, n: usize) -> f64 {
    (total - sum_first) / (n - k) as f64 - sum_first / k as f64
}

/// Two-sided permutation p-value of the difference of mean log values, over whole
/// repetitions; None unless both samples have at least 2 values, all positive and finite.
///
/// The statistic is mean(ln b) − mean(ln a). Every split of the pooled repetitions into
/// groups of n_a and n_b is enumerated when there are at most [`EXACT_SPLITS_LIMIT`] of them,
/// and p = #(splits with |stat| ≥ |observed|) / #splits, the observed split included (a
/// relative tolerance of 1e-12 lets float ties count). Otherwise [`MONTE_CARLO_DRAWS`] random
/// splits are drawn from [`MONTE_CARLO_SEED`] and p = (1 + #as extreme) / (1 + draws).
///
/// The smallest attainable p is honest and coarse at small n: 2/20 = 0.1 at 3 v 3, 2/252 at
/// 5 v 5.
pub fn permutation_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (la, lb) = (positive_logs(a)?, positive_logs(b)?);
    if la.len() < 2 || lb.len() < 2 {
        return None;
    }
    Some(log_permutation_p(&la, &lb))
}

/// [`permutation_p`] on values already logged (at least 2 each).
pub(crate) fn log_permutation_p(la: &[f64], lb: &[f64]) -> f64 {
    let observed = (mean(lb) - mean(la)).abs();
    let pooled: Vec<f64> = la.iter().chain(lb).copied().collect();
    let (n, k) = (pooled.len(), la.len());
    let total: f64 = pooled.iter().sum();
    let scale = pooled.iter().fold(observed, |m, v| m.max(v.abs()));
    let threshold = observed - 1e-12 * scale;
    let splits = split_sums(&pooled, k);
    let extreme = splits
        .sums
        .iter()
        .filter(|&&s| split_difference(s, total, k, n).abs() >= threshold)
        .count();
    if splits.exact {
        extreme as f64 / splits.sums.len() as f64
    } else {
        (1 + extreme) as f64 / (1 + splits.sums.len()) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomials() {
        assert_eq!(binomial_within(6, 3, 1000), Some(20));
        assert_eq!(binomial_within(10, 5, 1000), Some(252));
        assert_eq!(binomial_within(20, 10, 1_000_000), Some(184_756));
        assert_eq!(binomial_within(20, 10, EXACT_SPLITS_LIMIT), None);
        assert_eq!(binomial_within(5, 0, 10), Some(1));
        assert_eq!(binomial_within(5, 5, 10), Some(1));
    }

    #[test]
    fn exact_sums_enumerate_every_subset_once() {
        let sums = exact_sums(&[1.0, 10.0, 100.0, 1000.0], 2, 6);
        assert_eq!(sums, vec![11.0, 101.0, 1001.0, 110.0, 1010.0, 1100.0]);
    }

    #[test]
    fn three_against_three_is_the_most_extreme_of_twenty() {
        // ln is monotone, so the observed split (the three smallest against the three
        // largest) and its mirror are the two most extreme of C(6,3) = 20: p = 2/20.
        let p = permutation_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-15, "p = {p}");
        let p = permutation_p(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-15, "p = {p}");
    }

    #[test]
    fn five_against_five_minimum_is_two_in_252() {
        let p = permutation_p(&[1.0, 1.1, 1.2, 1.3, 1.4], &[2.0, 2.1, 2.2, 2.3, 2.4]).unwrap();
        assert!((p - 2.0 / 252.0).abs() < 1e-15, "p = {p}");
    }

    #[test]
    fn identical_samples_give_p_one() {
        assert_eq!(permutation_p(&[2.0, 2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(permutation_p(&[1.0, 2.0], &[2.0, 1.0]), Some(1.0));
    }

    #[test]
    fn monte_carlo_is_deterministic_and_bounded() {
        // C(24, 12) = 2,704,156 splits: Monte Carlo.
        let a: Vec<f64> = (0..12).map(|i| 100.0 + i as f64).collect();
        let b: Vec<f64> = (0..12).map(|i| 106.0 + i as f64).collect();
        let p1 = permutation_p(&a, &b).unwrap();
        let p2 = permutation_p(&a, &b).unwrap();
        assert_eq!(p1, p2);
        assert!(p1 >= 1.0 / (1.0 + MONTE_CARLO_DRAWS as f64));
        assert!(p1 < 0.05, "p = {p1}");
        // Perfectly separated: nothing random is as extreme, so p is the floor 1/(1+draws).
        let b: Vec<f64> = (0..12).map(|i| 1000.0 + i as f64).collect();
        let p = permutation_p(&a, &b).unwrap();
        assert_eq!(p, 1.0 / (1.0 + MONTE_CARLO_DRAWS as f64));
    }

    /// p from given first-group sums, the Monte Carlo way.
    fn p_from_sums(sums: &[f64], pooled: &[f64], k: usize, observed: f64) -> f64 {
        let total: f64 = pooled.iter().sum();
        let hits = sums
            .iter()
            .filter(|&&s| split_difference(s, total, k, pooled.len()).abs() >= observed - 1e-12)
            .count();
        (1 + hits) as f64 / (1 + sums.len()) as f64
    }

    #[test]
    fn monte_carlo_agrees_with_exact_in_distribution() {
        // 8 v 8 has 12,870 splits: exact. The same data through both Monte Carlo samplers
        // must give nearly the same p.
        let a = [1.00, 1.03, 0.98, 1.01, 0.99, 1.02, 1.04, 0.97];
        let b = [1.02, 1.05, 1.00, 1.03, 1.01, 1.04, 1.06, 0.99];
        let exact = permutation_p(&a, &b).unwrap();
        let (la, lb) = (positive_logs(&a).unwrap(), positive_logs(&b).unwrap());
        let pooled: Vec<f64> = la.iter().chain(&lb).copied().collect();
        let observed = (mean(&lb) - mean(&la)).abs();
        let by_mask = p_from_sums(&random_sums_by_mask(&pooled, 8), &pooled, 8, observed);
        let by_shuffle = p_from_sums(&random_sums_by_shuffle(&pooled, 8), &pooled, 8, observed);
        assert!((exact - by_mask).abs() < 0.01, "exact {exact}, masks {by_mask}");
        assert!((exact - by_shuffle).abs() < 0.01, "exact {exact}, shuffles {by_shuffle}");
        // Unbalanced: 3 of 16 (560 splits).
        let exact3 = p_from_sums(&exact_sums(&pooled, 3, 560), &pooled, 3, 0.02);
        let exact3 = exact3 * 561.0 / 560.0 - 1.0 / 560.0; // back to #hits / #splits
        let mask3 = p_from_sums(&random_sums_by_mask(&pooled, 3), &pooled, 3, 0.02);
        let shuffle3 = p_from_sums(&random_sums_by_shuffle(&pooled, 3), &pooled, 3, 0.02);
        assert!((exact3 - mask3).abs() < 0.01, "exact {exact3}, masks {mask3}");
        assert!((exact3 - shuffle3).abs() < 0.01, "exact {exact3}, shuffles {shuffle3}");
    }

    #[test]
    fn subset_sum_tables() {
        assert_eq!(
            subset_sums(&[1.0, 10.0, 100.0]),
            vec![0.0, 1.0, 10.0, 11.0, 100.0, 101.0, 110.0, 111.0]
        );
    }

    #[test]
    fn both_samplers_are_used() {
        // 10 v 10: masks (share 0.18); 4 v 20: shuffles (share 10626/2^24).
        let ten: Vec<f64> = (0..20).map(f64::from).collect();
        assert_eq!(random_sums(&ten, 10), random_sums_by_mask(&ten, 10));
        let many: Vec<f64> = (0..24).map(f64::from).collect();
        assert_eq!(random_sums(&many, 4), random_sums_by_shuffle(&many, 4));
        assert_eq!(random_sums(&many, 4).len(), MONTE_CARLO_DRAWS);
        // Every mask draw has exactly k members: sums of 10 of 0..19 lie in [45, 145].
        assert!(random_sums(&ten, 10).iter().all(|&s| (45.0..=145.0).contains(&s)));
    }

    #[test]
    fn bad_input_is_not_judged() {
        assert_eq!(permutation_p(&[], &[1.0, 2.0]), None);
        assert_eq!(permutation_p(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(permutation_p(&[1.0, -1.0], &[1.0, 2.0]), None);
        assert_eq!(permutation_p(&[1.0, 0.0], &[1.0, 2.0]), None);
        assert_eq!(permutation_p(&[1.0, f64::NAN], &[1.0, 2.0]), None);
    }
}
