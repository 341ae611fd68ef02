//! Two runs side by side: cells matched by key, each compared over its repetitions.
//!
//! The repetition is the unit of replication: each side contributes one value per
//! measured repetition ([`Metric::value`]), never one per process, so the test asks
//! whether the runs differ by more than repetitions of the same run do. The cells' tests
//! form one family: each verdict uses its p-value adjusted for the family's size
//! ([`Correction`]), so that two runs of one configuration do not differ "significantly" in
//! one cell in twenty by chance.

use crate::metric::Metric;
use crate::multiple::{adjust, Correction};
use crate::{compare, Comparison};
use schedlab_model::{CellParams, CellRecord};
use std::collections::BTreeMap;

/// The verdict on one matched cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Significantly higher in B than in A.
    Higher,
    /// Significantly lower in B than in A.
    Lower,
    /// Tested, no significant difference.
    Unchanged,
    /// Not testable (fewer than two repetitions on a side, or no value at all).
    Untested,
}

/// One cell present in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellComparison {
    /// Cell key (the match).
    pub key: String,
    /// The cell's parameters as run A stored them.
    pub params: CellParams,
    /// Run A's per-repetition values, in repetition order.
    pub a: Vec<f64>,
    /// Run B's per-repetition values.
    pub b: Vec<f64>,
    /// Means, CIs, ratio and Welch test; None when either side has no value.
    pub result: Option<Comparison>,
    /// The Welch p-value adjusted over every test of the comparison; None without a test.
    pub p_adjusted: Option<f64>,
    /// The significance level the adjusted p-value is judged at.
    pub alpha: f64,
}

impl CellComparison {
    /// Whether B differs significantly from A after the correction, and in which direction.
    pub fn change(&self) -> Change {
        change(self.result.as_ref(), self.p_adjusted, self.alpha)
    }
}

/// The verdict on a comparison whose Welch p-value, adjusted, is `p_adjusted`.
pub(crate) fn change(result: Option<&Comparison>, p_adjusted: Option<f64>, alpha: f64) -> Change {
    match (result, p_adjusted) {
        (Some(c), Some(p)) if c.welch.is_some() => {
            if p >= alpha {
                Change::Unchanged
            } else if c.b.mean > c.a.mean {
                Change::Higher
            } else {
                Change::Lower
            }
        }
        _ => Change::Untested,
    }
}

/// The p-values of `results` adjusted as one family (None where there is no test).
pub(crate) fn adjusted<'a>(
    results: impl Iterator<Item = Option<&'a Comparison>>,
    correction: Correction,
) -> Vec<Option<f64>> {
    let raw: Vec<Option<f64>> =
        results.map(|r| r.and_then(|c| c.welch).map(|w| w.p_value)).collect();
    adjust(&raw, correction)
}

/// Every matched cell of two runs for one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct RunComparison {
    /// What was compared.
    pub metric: Metric,
    /// Significance level of the Welch tests; intervals are at 1 - alpha.
    pub alpha: f64,
    /// How the cells' p-values were adjusted for their number.
    pub correction: Correction,
    /// Cells in both runs, in run A's cell order.
    pub cells: Vec<CellComparison>,
    /// Keys measured only in run A.
    pub only_a: Vec<String>,
    /// Keys measured only in run B.
    pub only_b: Vec<String>,
}

/// Counts over a [`RunComparison`], for its summary line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareSummary {
    /// Cells in both runs.
    pub matched: usize,
    /// Cells with a Welch test (two or more repetitions on each side).
    pub tested: usize,
    /// Significantly higher in B (after the correction).
    pub higher: usize,
    /// Significantly lower in B (after the correction).
    pub lower: usize,
    /// Tests significant before the correction: what an uncorrected table would have flagged.
    pub raw_significant: usize,
    /// Geometric mean of B/A over cells with a positive ratio; None when there is none.
    pub geo_mean_ratio: Option<f64>,
}

impl RunComparison {
    /// The counts behind the summary line.
    pub fn summary(&self) -> CompareSummary {
        let changes: Vec<Change> = self.cells.iter().map(CellComparison::change).collect();
        let logs: Vec<f64> = self
            .cells
            .iter()
            .filter_map(|c| c.result?.ratio)
            .map(|r| r.ratio)
            .filter(|r| *r > 0.0 && r.is_finite())
            .map(f64::ln)
            .collect();
        CompareSummary {
            matched: self.cells.len(),
            tested: changes.iter().filter(|c| **c != Change::Untested).count(),
            higher: changes.iter().filter(|c| **c == Change::Higher).count(),
            lower: changes.iter().filter(|c| **c == Change::Lower).count(),
            raw_significant: self
                .cells
                .iter()
                .filter(|c| c.result.is_some_and(|r| r.welch.is_some() && r.significant))
                .count(),
            geo_mean_ratio: (!logs.is_empty())
                .then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp()),
        }
    }
}

/// One run's stored repetitions of a cell.
pub(crate) struct OneRun {
    pub(crate) params: CellParams,
    pub(crate) order: (u32, u32),
    pub(crate) values: Vec<(u32, f64)>,
}

pub(crate) fn by_key(records: &[CellRecord], metric: Metric) -> BTreeMap<String, OneRun> {
    let mut out: BTreeMap<String, OneRun> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup) {
        let side = out.entry(r.params.key.clone()).or_insert_with(|| OneRun {
            params: r.params.clone(),
            order: (r.params.cell_id, r.ordinal),
            values: Vec::new(),
        });
        if let Some(v) = metric.value(r) {
            side.values.push((r.rep, v));
        }
    }
    for s in out.values_mut() {
        s.values.sort_by_key(|(rep, _)| *rep);
    }
    out
}

/// Compares run `b` with baseline run `a` on `metric`, cell by cell (matched by key), at
/// significance `alpha` in (0, 1), the cells' p-values adjusted by `correction`; None for a
/// bad alpha.
pub fn compare_runs(
    a: &[CellRecord],
    b: &[CellRecord],
    metric: Metric,
    alpha: f64,
    correction: Correction,
) -> Option<RunComparison> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let sa = by_key(a, metric);
    let sb = by_key(b, metric);
    let mut cells: Vec<CellComparison> = Vec::new();
    let mut only_a: Vec<(&(u32, u32), String)> = Vec::new();
    for (key, side_a) in &sa {
        let Some(side_b) = sb.get(key) else {
            only_a.push((&side_a.order, key.clone()));
            continue;
        };
        let va: Vec<f64> = side_a.values.iter().map(|(_, v)| *v).collect();
        let vb: Vec<f64> = side_b.values.iter().map(|(_, v)| *v).collect();
        cells.push(CellComparison {
            key: key.clone(),
            params: side_a.params.clone(),
            result: compare(&va, &vb, alpha),
            a: va,
            b: vb,
            p_adjusted: None,
            alpha,
        });
    }
    cells.sort_by_key(|c| sa[&c.key].order);
    let p = adjusted(cells.iter().map(|c| c.result.as_ref()), correction);
    for (c, p) in cells.iter_mut().zip(p) {
        c.p_adjusted = p;
    }
    only_a.sort();
    let mut only_b: Vec<(&(u32, u32), String)> = sb
        .iter()
        .filter(|(k, _)| !sa.contains_key(*k))
        .map(|(k, s)| (&s.order, k.clone()))
        .collect();
    only_b.sort();
    Some(RunComparison {
        metric,
        alpha,
        correction,
        cells,
        only_a: only_a.into_iter().map(|(_, k)| k).collect(),
        only_b: only_b.into_iter().map(|(_, k)| k).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{test_cell, test_samples};
    use schedlab_model::Sample;

    fn rep(cell_id: u32, key: &str, rep: u32, invol: &[i64]) -> CellRecord {
        let samples =
            test_samples(invol, |_, c| Sample { involuntary_csw: c, ..Default::default() });
        test_cell(cell_id, key, rep, 2.0, samples)
    }

    #[test]
    fn per_repetition_means_are_the_replicates() {
        // A: repetition means 15, 25, 35 (mean 25, sd 10); B: 45, 55, 65 (mean 55, sd 10).
        // t = -30 / sqrt(100/3 + 100/3) = -3.674235 and df = 4 (equal variances and sizes).
        let a = [rep(0, "k", 0, &[10, 20]), rep(0, "k", 1, &[20, 30]), rep(0, "k", 2, &[30, 40])];
        let b = [rep(3, "k", 0, &[40, 50]), rep(3, "k", 1, &[50, 60]), rep(3, "k", 2, &[60, 70])];
        let c = compare_runs(&a, &b, Metric::InvoluntaryPerProc, 0.05, Correction::Holm).unwrap();
        assert_eq!(c.cells.len(), 1);
        let cell = &c.cells[0];
        assert_eq!(cell.a, vec![15.0, 25.0, 35.0]);
        assert_eq!(cell.b, vec![45.0, 55.0, 65.0]);
        let r = cell.result.unwrap();
        let w = r.welch.unwrap();
        assert!((w.t - -3.674_234_614).abs() < 1e-6, "t = {}", w.t);
        assert!((w.df - 4.0).abs() < 1e-9);
        // For 4 df, P(|T| > t) = 1 - (3/2 s - 1/2 s^3) with s = t / sqrt(t^2 + 4) (closed form).
        let s = 3.674_234_614 / (3.674_234_614f64.powi(2) + 4.0).sqrt();
        assert!(
            (w.p_value - (1.0 - (1.5 * s - 0.5 * s.powi(3)))).abs() < 1e-6,
            "p = {}",
            w.p_value
        );
        assert_eq!(r.ratio.unwrap().ratio, 2.2);
        assert_eq!(cell.change(), Change::Higher);
        let s = c.summary();
        assert_eq!((s.matched, s.tested, s.higher, s.lower), (1, 1, 1, 0));
        assert!((s.geo_mean_ratio.unwrap() - 2.2).abs() < 1e-12);
    }

    #[test]
    fn cells_match_by_key_not_by_id() {
        let a = [rep(0, "x", 0, &[1]), rep(0, "x", 1, &[2]), rep(1, "only-a", 0, &[1])];
        let b = [rep(7, "x", 0, &[1]), rep(7, "x", 1, &[2]), rep(8, "only-b", 0, &[1])];
        let c = compare_runs(&a, &b, Metric::InvoluntaryPerProc, 0.05, Correction::Holm).unwrap();
        assert_eq!(c.cells.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(), vec!["x"]);
        assert_eq!(c.only_a, vec!["only-a".to_string()]);
        assert_eq!(c.only_b, vec!["only-b".to_string()]);
        assert_eq!(
            c.cells[0].change(),
            Change::Unchanged,
            "identical repetitions differ by nothing"
        );
    }

    #[test]
    fn single_repetitions_are_untested() {
        let c = compare_runs(
            &[rep(0, "x", 0, &[1])],
            &[rep(0, "x", 0, &[9])],
            Metric::InvoluntaryPerProc,
            0.05,
            Correction::Holm,
        )
        .unwrap();
        assert_eq!(c.cells[0].change(), Change::Untested);
        assert_eq!(c.summary().tested, 0);
    }

    fn walls(cell_id: u32, key: &str, walls: &[f64]) -> Vec<CellRecord> {
        let sample = |w: f64| Sample { wall_s: w, ..Default::default() };
        let rep = |(i, &w): (usize, &f64)| test_cell(cell_id, key, i as u32, 1.0, vec![sample(w)]);
        walls.iter().enumerate().map(rep).collect()
    }

    #[test]
    fn a_cell_significant_alone_is_not_after_holm_over_three_cells() {
        // Welch example 1 (welch.rs): p = 0.021378 < 0.05 alone; two more cells that do not
        // differ (p = 1) make a family of 3, and Holm multiplies the smallest p by 3: 0.064.
        const A1: [f64; 15] = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        const A2: [f64; 15] = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let same = [1.0, 2.0, 3.0];
        let a: Vec<CellRecord> =
            [walls(0, "x", &A1), walls(1, "y", &same), walls(2, "z", &same)].concat();
        let b: Vec<CellRecord> =
            [walls(0, "x", &A2), walls(1, "y", &same), walls(2, "z", &same)].concat();
        let raw = compare_runs(&a, &b, Metric::WallPerProc, 0.05, Correction::None).unwrap();
        assert_eq!(raw.cells[0].change(), Change::Higher);
        let holm = compare_runs(&a, &b, Metric::WallPerProc, 0.05, Correction::Holm).unwrap();
        assert!((holm.cells[0].p_adjusted.unwrap() - 3.0 * 0.021_378).abs() < 1e-4);
        assert_eq!(holm.cells[0].change(), Change::Unchanged);
        let s = holm.summary();
        assert_eq!((s.tested, s.higher, s.raw_significant), (3, 0, 1));
        assert_eq!(holm.correction, Correction::Holm);
    }

    #[test]
    fn bad_alpha_is_refused() {
        assert!(compare_runs(&[], &[], Metric::WallPerProc, 0.0, Correction::Holm).is_none());
        assert!(compare_runs(&[], &[], Metric::WallPerProc, 1.0, Correction::Holm).is_none());
    }
}
