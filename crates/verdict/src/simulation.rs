//! Seeded simulations of the error rates: false alarms on A/A families, power on real
//! shifts, and "same" on no change. They print what they measured (see with
//! `cargo test -p schedlab-verdict -- --nocapture`).

use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::judge::{judge, Better, Pair, Params, Verdict};
use crate::others::{standard_normal, OtherRule};

/// `n` lognormal repetitions around `median` with log standard deviation `sd`.
fn lognormal(rng: &mut Xoshiro256PlusPlus, n: usize, median: f64, sd: f64) -> Vec<f64> {
    (0..n).map(|_| median * (sd * standard_normal(rng)).exp()).collect()
}

/// Per family: whether judge raised any change, and per other rule the number of pairs it
/// called changed and whether it called any.
struct FamilyOutcome {
    judge_changes: usize,
    other_changes: [usize; 4],
}

/// One A/A family of `pairs` pairs of `n` repetitions, seeded by `seed`.
fn aa_family(seed: u64, pairs: usize, n: usize, sd: f64) -> FamilyOutcome {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let data: Vec<(Vec<f64>, Vec<f64>)> = (0..pairs)
        .map(|_| (lognormal(&mut rng, n, 100.0, sd), lognormal(&mut rng, n, 100.0, sd)))
        .collect();
    let items: Vec<Pair> =
        data.iter().map(|(a, b)| Pair { a, b, better: Better::Lower, floor: None }).collect();
    let judge_changes =
        judge(&items, &Params::default()).iter().filter(|j| j.verdict.is_change()).count();
    let mut other_changes = [0; 4];
    for (count, rule) in other_changes.iter_mut().zip(OtherRule::ALL) {
        *count = data.iter().filter(|(a, b)| rule.call(a, b, Better::Lower).is_change()).count();
    }
    FamilyOutcome { judge_changes, other_changes }
}

#[test]
fn aa_families_rarely_raise_false_alarms() {
    const FAMILIES: u64 = 500;
    const PAIRS: usize = 20;
    const N: usize = 10;
    const SD: f64 = 0.02;
    // Two threads, each family seeded by its index: the result does not depend on the split.
    let outcomes: Vec<FamilyOutcome> = std::thread::scope(|s| {
        let halves: Vec<_> = (0..2u64)
            .map(|t| {
                s.spawn(move || {
                    (0..FAMILIES)
                        .filter(|f| f % 2 == t)
                        .map(|f| aa_family(1000 + f, PAIRS, N, SD))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().expect("simulation thread")).collect()
    });
    let families = outcomes.len() as f64;
    let pairs = families * PAIRS as f64;
    let family_share = outcomes.iter().filter(|o| o.judge_changes > 0).count() as f64 / families;
    let pair_share = outcomes.iter().map(|o| o.judge_changes).sum::<usize>() as f64 / pairs;
    println!(
        "A/A, {FAMILIES} families of {PAIRS} pairs, {N} v {N} repetitions, lognormal sd {SD}:"
    );
    println!("  judge: family-wise false alarms {family_share:.4}, per pair {pair_share:.5}");
    for (i, rule) in OtherRule::ALL.iter().enumerate() {
        let fam = outcomes.iter().filter(|o| o.other_changes[i] > 0).count() as f64 / families;
        let per = outcomes.iter().map(|o| o.other_changes[i]).sum::<usize>() as f64 / pairs;
        println!("  {}: family-wise false alarms {fam:.4}, per pair {per:.5}", rule.name());
    }
    // Holm keeps the family-wise rate at most alpha = 0.05; over 20 independent null tests
    // its true rate is about 1 − (1 − 0.05/20)^20 ≈ 0.049, right at the bound, so a seeded
    // estimate from 500 families lands on either side of 0.05 by chance (it read 0.050 with
    // one Monte Carlo stream and 0.052 with another). The assertion allows two binomial
    // standard errors above alpha: it still fails for any real inflation (no Holm gives
    // about 0.64, as the uncorrected Welch line shows).
    let tolerance = 2.0 * (0.05_f64 * 0.95 / families).sqrt();
    println!("  (bound: 0.05 + two standard errors {tolerance:.4})");
    assert!(family_share <= 0.05 + tolerance, "family-wise false alarm share {family_share}");
    assert!(pair_share <= 0.05 / PAIRS as f64 * 1.5, "per-pair false alarm share {pair_share}");
}

/// The share of `trials` single-pair judgements of an `n` v `n` comparison with B shifted by
/// `factor` that end in `verdict`.
fn share(trials: u64, n: usize, sd: f64, factor: f64, params: &Params, verdict: Verdict) -> f64 {
    let hits = (0..trials)
        .filter(|&t| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(77_000 + t);
            let a = lognormal(&mut rng, n, 100.0, sd);
            let b = lognormal(&mut rng, n, 100.0 * factor, sd);
            judge(&[Pair { a: &a, b: &b, better: Better::Lower, floor: None }], params)[0].verdict
                == verdict
        })
        .count();
    hits as f64 / trials as f64
}

#[test]
fn real_shifts_are_found() {
    let params = Params::default();
    let five = share(200, 10, 0.02, 1.05, &params, Verdict::Regressed);
    let two = share(200, 10, 0.02, 1.02, &params, Verdict::Regressed);
    let faster = share(200, 10, 0.02, 1.0 / 1.05, &params, Verdict::Improved);
    println!("power, 10 v 10, sd 2%, alone: 5% slower {five:.3}, 2% slower {two:.3}, 5% faster {faster:.3}");
    assert!(five >= 0.95, "power at 5%: {five}");
    assert!(faster >= 0.95, "power at −5%: {faster}");
    assert!(two > 0.2 && two < five, "power at 2%: {two}");
}

#[test]
fn no_change_is_mostly_same() {
    let params = Params { same_within: Some(0.05), ..Params::default() };
    let same = share(200, 10, 0.01, 1.0, &params, Verdict::Same);
    let regressed = share(200, 10, 0.01, 1.0, &params, Verdict::Regressed);
    println!("no change, 10 v 10, sd 1%, δ 5%: same {same:.3}, regressed {regressed:.3}");
    assert!(same >= 0.9, "same share {same}");
    assert!(regressed <= 0.05);
    // A 10% change is never called the same within 5%.
    let wrong = share(100, 10, 0.01, 1.10, &params, Verdict::Same);
    assert_eq!(wrong, 0.0);
}
