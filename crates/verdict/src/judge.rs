//! The verdict rule over a family of (cell, figure) pairs.

use serde::{Deserialize, Serialize};

use crate::floor::Floor;
use crate::interval::log_ratio_interval;
use crate::logs::{mean, pooled_sd, positive_logs, sample_variance};
use crate::permutation::log_permutation_p;

/// The default family-wise error rate.
pub const DEFAULT_ALPHA: f64 = 0.05;
/// The default magnitude gate: changes of 1% or less are never reported (as LKP).
pub const DEFAULT_MIN_CHANGE: f64 = 0.01;
/// The equivalence margin when none is given and no floor is known: 5%.
pub const DEFAULT_SAME_WITHIN: f64 = 0.05;
/// The smallest equivalence margin a floor may set: floors of 0 are not credible.
pub const MIN_FLOOR_DELTA: f64 = 0.005;

/// Which direction is good for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better (times, latencies).
    Lower,
    /// Higher is better (throughput, requests per second).
    Higher,
}

/// The verdict on one (cell, figure) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Changed in the bad direction.
    Regressed,
    /// Changed in the good direction.
    Improved,
    /// Equivalent within the margin.
    Same,
    /// Neither shown changed nor shown equivalent: more repetitions may decide.
    Undecided,
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 4] =
        [Verdict::Regressed, Verdict::Improved, Verdict::Same, Verdict::Undecided];

    /// The name used in exports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Same => "same",
            Verdict::Undecided => "undecided",
        }
    }

    /// Whether the verdict is a change (regressed or improved).
    pub fn is_change(self) -> bool {
        matches!(self, Verdict::Regressed | Verdict::Improved)
    }

    /// The change verdict for a ratio b / a that is above 1 (`rise`) or below.
    pub fn of_change(rise: bool, better: Better) -> Verdict {
        match (rise, better) {
            (true, Better::Lower) | (false, Better::Higher) => Verdict::Regressed,
            (true, Better::Higher) | (false, Better::Lower) => Verdict::Improved,
        }
    }
}

/// Where the equivalence margin δ came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeltaSource {
    /// Given by the user (`Params::same_within`).
    Given,
    /// This machine's A/A floor, scaled to the pair's repetitions.
    Floor,
    /// [`DEFAULT_SAME_WITHIN`].
    Default,
}

/// The knobs of [`judge`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Params {
    /// The family-wise error rate (0 < alpha < 0.5); default 0.05.
    pub alpha: f64,
    /// The equivalence margin δ as a fraction (0.02 = 2%), when the user gives one.
    pub same_within: Option<f64>,
    /// The smallest change reported, as a fraction; default 0.01.
    pub min_change: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { alpha: DEFAULT_ALPHA, same_within: None, min_change: DEFAULT_MIN_CHANGE }
    }
}

impl Params {
    /// Why these parameters cannot be used, if they cannot.
    pub fn problem(&self) -> Option<&'static str> {
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            Some("alpha outside (0, 0.5)")
        } else if self.same_within.is_some_and(|d| !(d.is_finite() && d > 0.0)) {
            Some("same-within is not a positive number")
        } else if !(self.min_change.is_finite() && self.min_change >= 0.0) {
            Some("min-change is not a number at least 0")
        } else {
            None
        }
    }
}

/// One (cell, figure) to judge: one value per repetition in each run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair<'v> {
    /// The baseline run's values (A).
    pub a: &'v [f64],
    /// The candidate run's values (B).
    pub b: &'v [f64],
    /// Which direction is good for the figure.
    pub better: Better,
    /// This machine's A/A floor for the (cell, figure), if measured.
    pub floor: Option<Floor>,
}

/// The verdict on one pair, with everything it was decided on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// Repetitions in A.
    pub n_a: usize,
    /// Repetitions in B.
    pub n_b: usize,
    /// Arithmetic mean of A (None when A is empty or has a value that is not positive).
    pub mean_a: Option<f64>,
    /// Arithmetic mean of B.
    pub mean_b: Option<f64>,
    /// (mean_b / mean_a − 1) · 100.
    pub change_pct: Option<f64>,
    /// Sample standard deviation of A over its mean, · 100 (LKP's %stddev).
    pub stddev_pct_a: Option<f64>,
    /// Sample standard deviation of B over its mean, · 100.
    pub stddev_pct_b: Option<f64>,
    /// Pooled within-run standard deviation of the log values (what sizing uses).
    pub sd_log: Option<f64>,
    /// Ratio of geometric means B / A.
    pub ratio: Option<f64>,
    /// Lower end of the (1 − alpha) interval of the ratio.
    pub ratio_lo: Option<f64>,
    /// Upper end of the (1 − alpha) interval of the ratio.
    pub ratio_hi: Option<f64>,
    /// Lower end of the (1 − 2·alpha) interval the equivalence verdict is judged on.
    pub same_lo: Option<f64>,
    /// Upper end of the (1 − 2·alpha) interval.
    pub same_hi: Option<f64>,
    /// Permutation p-value over whole repetitions.
    pub p: Option<f64>,
    /// `p` adjusted by Holm over the whole family.
    pub p_adjusted: Option<f64>,
    /// The equivalence margin used, as a fraction.
    pub delta: f64,
    /// Where `delta` came from.
    pub delta_source: DeltaSource,
    /// The magnitude gate used, as a fraction.
    pub gate: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// A short reason for the verdict.
    pub why: String,
}

/// A pair's values, checked.
enum Checked {
    /// Both runs have values, all positive and finite: their logs.
    Logs(Vec<f64>, Vec<f64>),
    /// Not judged, for this reason.
    Not(&'static str),
}

/// Checks a pair's values and takes their logs.
fn check(pair: &Pair) -> Checked {
    if pair.a.is_empty() || pair.b.is_empty() {
        return Checked::Not("no repetitions in one run");
    }
    match (positive_logs(pair.a), positive_logs(pair.b)) {
        (Some(la), Some(lb)) => Checked::Logs(la, lb),
        _ => Checked::Not("not judged: a value is not a positive finite number"),
    }
}

/// Judges every pair of a family (the whole matrix of cells × figures compared) and returns
/// one [`Judged`] per pair, in order.
///
/// Values are compared on their natural logs, one value per repetition; a pair with an
/// empty run or a value that is not positive and finite is `Undecided` and not judged.
/// The rule, in this order:
///
/// 1. **p-values.** Each pair with at least 2 repetitions per run gets a two-sided
///    permutation p-value over whole repetitions ([`crate::permutation_p`]); all of them are
///    adjusted together by Holm, so the chance of any false "changed" in the family stays
///    at most `alpha`.
/// 2. **Margin δ.** `same_within` when given; else the pair's floor scaled to its
///    repetitions ([`Floor::delta_at`], at least [`MIN_FLOOR_DELTA`]); else
///    [`DEFAULT_SAME_WITHIN`].
/// 3. **Gate.** max(`min_change`, the floor scaled to the pair's repetitions when a floor is
///    known): a change smaller than the noise two identical runs show is never reported.
/// 4. **Changed** when the Holm-adjusted p < `alpha` and |ratio − 1| > gate, with ratio the
///    ratio of geometric means B / A: `Regressed` when it moved in the bad direction for
///    `better`, `Improved` otherwise.
/// 5. **Same** (two one-sided tests, TOST) when the (1 − 2·alpha) interval of the ratio
///    ([`crate::ratio_interval`], 90% at alpha 0.05, not adjusted) lies inside
///    [1/(1 + δ), 1 + δ]. This needs at least 2 repetitions per run.
/// 6. Otherwise **Undecided**: the data show neither a change nor equivalence; more
///    repetitions may decide ([`crate::next_step`]).
///
/// Invalid `params` ([`Params::problem`]) leave every pair `Undecided` with the reason.
pub fn judge(items: &[Pair], params: &Params) -> Vec<Judged> {
    let checked: Vec<Checked> = items.iter().map(check).collect();
    // With a floor that measured the drift between runs, the larger of the permutation p and
    // the drift-aware p: each is valid under its own model of two runs.
    let p: Vec<Option<f64>> = items
        .iter()
        .zip(&checked)
        .map(|(pair, c)| match c {
            Checked::Logs(la, lb) if la.len() >= 2 && lb.len() >= 2 => {
                let drift = pair.floor.map_or(0.0, |f| f.run_sd);
                Some(log_permutation_p(la, lb).max(drift_p(la, lb, drift).unwrap_or(0.0)))
            }
            _ => None,
        })
        .collect();
    let adjusted = holm_family(&p);
    let problem = params.problem();
    items
        .iter()
        .zip(&checked)
        .zip(p.iter().zip(&adjusted))
        .map(|((pair, checked), (&p, &p_adjusted))| {
            let mut judged = describe(pair, checked, params, p, p_adjusted);
            if let Some(problem) = problem {
                judged.verdict = Verdict::Undecided;
                judged.why = problem.to_string();
            } else if let Checked::Logs(..) = checked {
                decide(&mut judged, pair.better, params);
            }
            judged
        })
        .collect()
}

/// The two-sided p-value of a difference of mean logs against sampling error plus the
/// drift between two runs (`run_sd`, each run's mean off by it): a normal test of
/// d / sqrt(s²(1/n_a + 1/n_b) + 2 run_sd²). None without drift.
fn drift_p(la: &[f64], lb: &[f64], run_sd: f64) -> Option<f64> {
    if run_sd <= 0.0 || !run_sd.is_finite() {
        return None;
    }
    let sd = pooled_sd(la, lb);
    let var = sd * sd * (1.0 / la.len() as f64 + 1.0 / lb.len() as f64) + 2.0 * run_sd * run_sd;
    let z = (mean(lb) - mean(la)).abs() / var.sqrt();
    Some(2.0 * (1.0 - statrs::distribution::ContinuousCDF::cdf(&standard_normal(), z)))
}

fn standard_normal() -> statrs::distribution::Normal {
    statrs::distribution::Normal::new(0.0, 1.0).expect("a standard normal")
}

/// A ratio interval (ratio, lo, hi) at `level` widened by the drift between two runs: its
/// half-width on the log scale and the drift's (z · sqrt(2) · run_sd) added in quadrature.
fn widened(interval: (f64, f64, f64), level: f64, run_sd: f64) -> (f64, f64, f64) {
    use statrs::distribution::ContinuousCDF;
    let (ratio, lo, hi) = interval;
    if run_sd <= 0.0 {
        return interval;
    }
    let z = standard_normal().inverse_cdf(1.0 - (1.0 - level) / 2.0);
    let extra = z * std::f64::consts::SQRT_2 * run_sd;
    let (c, down, up) = (ratio.ln(), ratio.ln() - lo.ln(), hi.ln() - ratio.ln());
    let (down, up) = ((down * down + extra * extra).sqrt(), (up * up + extra * extra).sqrt());
    (ratio, (c - down).exp(), (c + up).exp())
}

/// Holm over the pairs that have a p-value, in place; None where there is none.
fn holm_family(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let family: Vec<f64> = p.iter().flatten().copied().collect();
    let mut adjusted = schedlab_analysis::holm(&family).into_iter();
    p.iter().map(|p| p.and_then(|_| adjusted.next())).collect()
}

/// Everything but the verdict: descriptive figures, intervals, margin and gate.
fn describe(
    pair: &Pair,
    checked: &Checked,
    params: &Params,
    p: Option<f64>,
    p_adjusted: Option<f64>,
) -> Judged {
    let (n_a, n_b) = (pair.a.len(), pair.b.len());
    let floor_delta =
        pair.floor.map(|f| f.delta_at(n_a, n_b)).filter(|d| d.is_finite() && *d >= 0.0);
    let (delta, delta_source) = margin(params, floor_delta);
    let gate = floor_delta.map_or(params.min_change, |f| f.max(params.min_change));
    let mut judged = Judged {
        n_a,
        n_b,
        mean_a: None,
        mean_b: None,
        change_pct: None,
        stddev_pct_a: None,
        stddev_pct_b: None,
        sd_log: None,
        ratio: None,
        ratio_lo: None,
        ratio_hi: None,
        same_lo: None,
        same_hi: None,
        p,
        p_adjusted,
        delta,
        delta_source,
        gate,
        verdict: Verdict::Undecided,
        why: String::new(),
    };
    let (la, lb) = match checked {
        Checked::Logs(la, lb) => (la, lb),
        Checked::Not(why) => {
            judged.why = why.to_string();
            return judged;
        }
    };
    let (ma, mb) = (mean(pair.a), mean(pair.b));
    judged.mean_a = Some(ma);
    judged.mean_b = Some(mb);
    judged.change_pct = Some((mb / ma - 1.0) * 100.0);
    judged.stddev_pct_a = percent_stddev(pair.a, ma);
    judged.stddev_pct_b = percent_stddev(pair.b, mb);
    judged.ratio = Some((mean(lb) - mean(la)).exp());
    if la.len() >= 2 && lb.len() >= 2 {
        judged.sd_log = Some(pooled_sd(la, lb));
    }
    let drift = pair.floor.map_or(0.0, |f| f.run_sd);
    let at = |level: f64| log_ratio_interval(la, lb, level).map(|i| widened(i, level, drift));
    if let Some((_, lo, hi)) = at(1.0 - params.alpha) {
        (judged.ratio_lo, judged.ratio_hi) = (Some(lo), Some(hi));
    }
    if let Some((_, lo, hi)) = at(1.0 - 2.0 * params.alpha) {
        (judged.same_lo, judged.same_hi) = (Some(lo), Some(hi));
    }
    judged
}

/// The equivalence margin and where it came from.
fn margin(params: &Params, floor_delta: Option<f64>) -> (f64, DeltaSource) {
    match (params.same_within, floor_delta) {
        (Some(d), _) => (d, DeltaSource::Given),
        (None, Some(f)) => (f.max(MIN_FLOOR_DELTA), DeltaSource::Floor),
        (None, None) => (DEFAULT_SAME_WITHIN, DeltaSource::Default),
    }
}

/// Sample standard deviation over the mean, · 100; None with fewer than 2 values.
fn percent_stddev(values: &[f64], mean: f64) -> Option<f64> {
    (values.len() >= 2).then(|| sample_variance(values).sqrt() / mean * 100.0)
}

/// Sets the verdict and its reason on a described, judgeable pair (steps 4 to 6).
fn decide(judged: &mut Judged, better: Better, params: &Params) {
    let Some(ratio) = judged.ratio else { return };
    let limit = pct(judged.delta);
    let gate_name = if judged.gate > params.min_change { "floor" } else { "gate" };
    let significant = judged.p_adjusted.is_some_and(|p| p < params.alpha);
    let beyond_gate = (ratio - 1.0).abs() > judged.gate;
    if significant && beyond_gate {
        judged.verdict = Verdict::of_change(ratio > 1.0, better);
        judged.why = format!(
            "p {} after Holm, {:+.1}% beyond the {gate_name} {}",
            fmt_p(judged.p_adjusted.unwrap_or(f64::NAN)),
            (ratio - 1.0) * 100.0,
            pct(judged.gate)
        );
        return;
    }
    if let (Some(lo), Some(hi)) = (judged.same_lo, judged.same_hi) {
        if lo >= 1.0 / (1.0 + judged.delta) && hi <= 1.0 + judged.delta {
            judged.verdict = Verdict::Same;
            judged.why =
                format!("{:.0}% interval inside ±{limit}", (1.0 - 2.0 * params.alpha) * 100.0);
            return;
        }
    }
    judged.verdict = Verdict::Undecided;
    judged.why = match judged.p_adjusted {
        None => "fewer than 2 repetitions".to_string(),
        Some(p) if significant => format!(
            "p {} after Holm but within the {gate_name} {}, interval wider than ±{limit}",
            fmt_p(p),
            pct(judged.gate)
        ),
        Some(p) => {
            format!("not significant after Holm (p {}) and interval wider than ±{limit}", fmt_p(p))
        }
    };
}

/// A fraction as a percentage with one decimal ("1.8%").
fn pct(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// A p-value with about two significant digits.
fn fmt_p(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else if p >= 0.0001 {
        format!("{p:.4}")
    } else {
        format!("{p:.0e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `base` scaled by `factor`, with a small fixed wobble per repetition.
    fn reps(base: f64, factor: f64, n: usize, wobble: f64) -> Vec<f64> {
        (0..n).map(|i| base * factor * (1.0 + wobble * ((i * 7 % 5) as f64 - 2.0))).collect()
    }

    fn pair<'v>(a: &'v [f64], b: &'v [f64], better: Better) -> Pair<'v> {
        Pair { a, b, better, floor: None }
    }

    #[test]
    fn five_percent_shift_regresses_or_improves_by_direction() {
        let a = reps(100.0, 1.0, 10, 0.001);
        let b = reps(100.0, 1.05, 10, 0.001);
        let params = Params::default();
        let lower = judge(&[pair(&a, &b, Better::Lower)], &params);
        let higher = judge(&[pair(&a, &b, Better::Higher)], &params);
        assert_eq!(lower[0].verdict, Verdict::Regressed, "{}", lower[0].why);
        assert_eq!(higher[0].verdict, Verdict::Improved, "{}", higher[0].why);
        let back = judge(&[pair(&b, &a, Better::Lower)], &params);
        assert_eq!(back[0].verdict, Verdict::Improved);
        let j = &lower[0];
        assert!((j.change_pct.unwrap() - 5.0).abs() < 1e-9);
        assert!((j.ratio.unwrap() - 1.05).abs() < 1e-9);
        assert!(j.ratio_lo.unwrap() < 1.05 && 1.05 < j.ratio_hi.unwrap());
        assert!(j.why.starts_with("p ") && j.why.contains("beyond the gate 1.0%"), "{}", j.why);
    }

    #[test]
    fn tiny_significant_change_is_gated() {
        // 0.5% shift with almost no noise: significant, but under the 1% gate; and inside a
        // 2% margin, so Same.
        let a = reps(100.0, 1.0, 10, 0.0001);
        let b = reps(100.0, 1.005, 10, 0.0001);
        let params = Params { same_within: Some(0.02), ..Params::default() };
        let j = &judge(&[pair(&a, &b, Better::Lower)], &params)[0];
        assert!(j.p_adjusted.unwrap() < 0.05);
        assert_eq!(j.verdict, Verdict::Same, "{}", j.why);
        assert_eq!(j.delta_source, DeltaSource::Given);
        assert_eq!(j.why, "90% interval inside ±2.0%");
        // With a margin below the change: neither.
        let params = Params { same_within: Some(0.001), ..Params::default() };
        let j = &judge(&[pair(&a, &b, Better::Lower)], &params)[0];
        assert_eq!(j.verdict, Verdict::Undecided);
        assert!(j.why.contains("within the gate 1.0%"), "{}", j.why);
    }

    #[test]
    fn holm_takes_the_family_into_account() {
        // 5 v 5, fully separated by 5%: exact p = 2/252 ≈ 0.0079 < 0.05 alone, but with
        // 19 unchanged pairs Holm multiplies it by 20 (0.16).
        let a = reps(100.0, 1.0, 5, 0.001);
        let b = reps(100.0, 1.05, 5, 0.001);
        let alone = judge(&[pair(&a, &b, Better::Lower)], &Params::default());
        assert_eq!(alone[0].verdict, Verdict::Regressed);
        assert!((alone[0].p.unwrap() - 2.0 / 252.0).abs() < 1e-12);
        let same = reps(100.0, 1.0, 5, 0.01);
        let mut family = vec![pair(&a, &b, Better::Lower)];
        family.extend((0..19).map(|_| pair(&same, &same, Better::Lower)));
        let judged = judge(&family, &Params::default());
        assert!((judged[0].p_adjusted.unwrap() - 20.0 * 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(judged[0].verdict, Verdict::Undecided, "{}", judged[0].why);
        assert!(judged[0].why.starts_with("not significant after Holm"));
    }

    #[test]
    fn floor_sets_margin_and_gate() {
        // A floor of q95 = ln 1.03 at 5 v 5, judged at 5 v 5: δ = gate = 3%.
        let floor =
            Floor { n_a: 5, n_b: 5, ratio: 1.0, q95: 1.03_f64.ln(), sd_log: 0.01, run_sd: 0.0 };
        let a = reps(100.0, 1.0, 5, 0.001);
        let b = reps(100.0, 1.02, 5, 0.001);
        let j = &judge(
            &[Pair { floor: Some(floor), ..pair(&a, &b, Better::Lower) }],
            &Params::default(),
        )[0];
        assert!((j.delta - 0.03).abs() < 1e-12 && (j.gate - 0.03).abs() < 1e-12);
        assert_eq!(j.delta_source, DeltaSource::Floor);
        // 2% is significant (p = 2/252) but inside the 3% floor: not a change.
        assert_ne!(j.verdict, Verdict::Regressed, "{}", j.why);
        // A 5% change goes beyond the floor.
        let b = reps(100.0, 1.05, 5, 0.001);
        let j = &judge(
            &[Pair { floor: Some(floor), ..pair(&a, &b, Better::Lower) }],
            &Params::default(),
        )[0];
        assert_eq!(j.verdict, Verdict::Regressed);
        assert!(j.why.contains("beyond the floor 3.0%"), "{}", j.why);
        // A floor of 0 is not credible as a margin.
        let zero = Floor { q95: 0.0, ..floor };
        let j = &judge(
            &[Pair { floor: Some(zero), ..pair(&a, &a, Better::Lower) }],
            &Params::default(),
        )[0];
        assert_eq!(j.delta, MIN_FLOOR_DELTA);
        assert_eq!(j.gate, DEFAULT_MIN_CHANGE);
    }

    #[test]
    fn default_margin_is_five_percent() {
        let a = reps(100.0, 1.0, 10, 0.002);
        let j = &judge(&[pair(&a, &a, Better::Higher)], &Params::default())[0];
        assert_eq!((j.delta, j.delta_source), (DEFAULT_SAME_WITHIN, DeltaSource::Default));
        assert_eq!(j.verdict, Verdict::Same);
        assert_eq!(j.p, Some(1.0));
    }

    #[test]
    fn one_repetition_is_undecided() {
        let a = [100.0];
        let b = [105.0, 106.0];
        let j = &judge(&[pair(&a, &b, Better::Lower)], &Params::default())[0];
        assert_eq!(j.verdict, Verdict::Undecided);
        assert_eq!(j.why, "fewer than 2 repetitions");
        assert_eq!((j.p, j.p_adjusted, j.ratio_lo), (None, None, None));
        assert!(j.ratio.is_some() && j.stddev_pct_a.is_none() && j.stddev_pct_b.is_some());
    }

    #[test]
    fn bad_input_is_not_judged_and_leaves_the_family_alone() {
        let good_a = reps(100.0, 1.0, 5, 0.001);
        let good_b = reps(100.0, 1.05, 5, 0.001);
        let negative = [1.0, -1.0, 2.0];
        let nan = [1.0, f64::NAN];
        let items = [
            pair(&[], &good_b, Better::Lower),
            pair(&negative, &good_b, Better::Lower),
            pair(&good_a, &nan, Better::Lower),
            pair(&good_a, &good_b, Better::Lower),
        ];
        let judged = judge(&items, &Params::default());
        assert_eq!(judged.len(), 4);
        assert_eq!(judged[0].why, "no repetitions in one run");
        assert!(judged[1].why.starts_with("not judged"));
        assert!(judged[2].why.starts_with("not judged"));
        for j in &judged[..3] {
            assert_eq!(j.verdict, Verdict::Undecided);
            assert_eq!((j.p, j.mean_a, j.ratio), (None, None, None));
        }
        // The family is the one judgeable pair: its p is not adjusted upwards.
        assert_eq!(judged[3].p, judged[3].p_adjusted);
        assert_eq!(judged[3].verdict, Verdict::Regressed);
        assert!(judge(&[], &Params::default()).is_empty());
    }

    #[test]
    fn bad_params_leave_everything_undecided() {
        let a = reps(100.0, 1.0, 5, 0.001);
        let b = reps(100.0, 1.5, 5, 0.001);
        for params in [
            Params { alpha: 0.0, ..Params::default() },
            Params { alpha: f64::NAN, ..Params::default() },
            Params { same_within: Some(-0.1), ..Params::default() },
            Params { min_change: f64::NAN, ..Params::default() },
        ] {
            let j = &judge(&[pair(&a, &b, Better::Lower)], &params)[0];
            assert_eq!(j.verdict, Verdict::Undecided);
            assert_eq!(Some(j.why.as_str()), params.problem());
        }
    }

    #[test]
    fn names_and_json() {
        let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(names, ["regressed", "improved", "same", "undecided"]);
        for v in Verdict::ALL {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{}\"", v.name()));
        }
        assert_eq!(serde_json::to_string(&Better::Lower).unwrap(), "\"lower\"");
        assert_eq!(serde_json::to_string(&DeltaSource::Floor).unwrap(), "\"floor\"");
        let params: Params = serde_json::from_str(r#"{"same_within": 0.02}"#).unwrap();
        assert_eq!(params, Params { same_within: Some(0.02), ..Params::default() });
        let a = reps(100.0, 1.0, 5, 0.001);
        let j = judge(&[pair(&a, &a, Better::Lower)], &params).remove(0);
        let json = serde_json::to_string(&j).unwrap();
        assert!(json.contains(r#""verdict":"same""#) && json.contains(r#""delta_source":"given""#));
        let back: Judged = serde_json::from_str(&json).unwrap();
        assert_eq!((back.verdict, back.why.as_str(), back.n_a), (j.verdict, j.why.as_str(), 5));
        assert!((back.same_lo.unwrap() - j.same_lo.unwrap()).abs() < 1e-15);
    }

    #[test]
    fn p_formatting() {
        assert_eq!(fmt_p(0.5), "0.50");
        assert_eq!(fmt_p(0.0004), "0.0004");
        assert_eq!(fmt_p(0.00004), "4e-5");
    }

    #[test]
    fn a_floor_with_run_drift_keeps_a_shift_of_that_size_between_runs_undecided() {
        // Two runs of one configuration whose means sit 4% apart, as separate runs here do.
        let a = reps(100.0, 1.0, 10, 0.002);
        let b = reps(100.0, 1.04, 10, 0.002);
        let within = Floor { n_a: 10, n_b: 10, ratio: 1.0, q95: 0.005, sd_log: 0.004, run_sd: 0.0 };
        let alone = judge(
            &[Pair { floor: Some(within), ..pair(&a, &b, Better::Lower) }],
            &Params::default(),
        );
        assert_eq!(alone[0].verdict, Verdict::Regressed, "{}", alone[0].why);
        let drifting = Floor { run_sd: 0.04, ..within };
        let j = &judge(
            &[Pair { floor: Some(drifting), ..pair(&a, &b, Better::Lower) }],
            &Params::default(),
        )[0];
        assert_eq!(j.verdict, Verdict::Undecided, "{}", j.why);
        assert!(j.ratio_lo.unwrap() < 1.0 && j.ratio_hi.unwrap() > 1.08, "widened: {j:?}");
        // A change far beyond the drift is still found.
        let c = reps(100.0, 1.5, 10, 0.002);
        let j = &judge(
            &[Pair { floor: Some(drifting), ..pair(&a, &c, Better::Lower) }],
            &Params::default(),
        )[0];
        assert_eq!(j.verdict, Verdict::Regressed, "{}", j.why);
    }
}
