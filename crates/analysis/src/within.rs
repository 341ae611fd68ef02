//! One run's cells compared along one of its axes: "does FIFO beat OTHER within this run?".
//!
//! The cells are grouped by every other axis the run sweeps (workload × process count, say),
//! and within each group every level of the named axis is compared with a baseline level,
//! over repetitions as `compare` does for two runs ([`crate::compare`]). All the pairs of
//! the comparison form one family of tests, adjusted together ([`Correction`]).
//!
//! Which axes a cell has, and its value on each, is the caller's to say (the plan defines
//! the axes): `coords` gives a cell's (axis, value) pairs. An axis whose value follows from
//! the compared one (a policy's class or priority when comparing policies) does not split
//! the groups, nor does one that follows from the axes splitting them already.

use crate::metric::Metric;
use crate::multiple::Correction;
use crate::runs::{adjusted, by_key, change, Change};
use crate::{compare, Comparison};
use schedlab_model::{CellParams, CellRecord};

/// A cell's value on an axis it does not have (a group the cell leaves out).
pub const NO_VALUE: &str = "-";

/// An axis of a run with its levels, in the order of the run's cells (plan order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisLevels {
    /// The axis's name, as the spec sweeps it (`policy`, `processes`, `bg.nice`).
    pub axis: String,
    /// Its values, as the cell key spells them, each once, in plan order.
    pub levels: Vec<String>,
}

/// One cell of a group: one level of the compared axis.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelCell {
    /// The level.
    pub level: String,
    /// The cell's key.
    pub key: String,
    /// Its per-repetition values, in repetition order.
    pub values: Vec<f64>,
}

impl LevelCell {
    /// The mean over repetitions; None without a value.
    pub fn mean(&self) -> Option<f64> {
        (!self.values.is_empty())
            .then(|| self.values.iter().sum::<f64>() / self.values.len() as f64)
    }
}

/// One level against the baseline level within a group.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelPair {
    /// The level compared with the baseline.
    pub level: String,
    /// Its cell's key.
    pub key: String,
    /// The baseline cell's key.
    pub baseline_key: String,
    /// Baseline as A, this level as B: means, ratio level/baseline with its interval, Welch's
    /// test; None when either cell has no value.
    pub result: Option<Comparison>,
    /// The Welch p-value adjusted over every pair of the comparison; None without a test.
    pub p_adjusted: Option<f64>,
    /// The significance level the adjusted p-value is judged at.
    pub alpha: f64,
}

impl LevelPair {
    /// Whether the level differs significantly from the baseline after the correction
    /// (`Higher`: the level's mean is higher).
    pub fn change(&self) -> Change {
        change(self.result.as_ref(), self.p_adjusted, self.alpha)
    }
}

/// The cells that agree on every other axis, one per level.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelGroup {
    /// The group's values on [`WithinRun::group_axes`], in that order.
    pub coords: Vec<String>,
    /// Its cells, in plan order.
    pub cells: Vec<LevelCell>,
    /// Each level's cell against the baseline's, in plan order; empty when the group has no
    /// baseline cell.
    pub pairs: Vec<LevelPair>,
}

impl LevelGroup {
    /// The cell with the lowest mean (the first in plan order on a tie); None when no cell
    /// has a value.
    pub fn lowest(&self) -> Option<&LevelCell> {
        self.cells
            .iter()
            .filter_map(|c| Some((c, c.mean()?)))
            .reduce(|best, c| if c.1 < best.1 { c } else { best })
            .map(|(c, _)| c)
    }

    /// The pair of `level` against the baseline (None for the baseline itself).
    pub fn pair(&self, level: &str) -> Option<&LevelPair> {
        self.pairs.iter().find(|p| p.level == level)
    }
}

/// A run's cells compared along one axis, group by group.
#[derive(Debug, Clone, PartialEq)]
pub struct WithinRun {
    /// The compared axis.
    pub axis: String,
    /// Its levels, in plan order.
    pub levels: Vec<String>,
    /// The level every other is compared with.
    pub baseline: String,
    /// What was compared.
    pub metric: Metric,
    /// Significance level of the tests; intervals are at 1 - alpha.
    pub alpha: f64,
    /// How the pairs' p-values were adjusted for their number.
    pub correction: Correction,
    /// The axes that tell the groups apart: every other axis the run sweeps, except those
    /// that follow from the compared one.
    pub group_axes: Vec<String>,
    /// The groups, in plan order.
    pub groups: Vec<LevelGroup>,
}

impl WithinRun {
    /// Every pair of every group, with its group.
    pub fn pairs(&self) -> impl Iterator<Item = (&LevelGroup, &LevelPair)> {
        self.groups.iter().flat_map(|g| g.pairs.iter().map(move |p| (g, p)))
    }
}

/// Why a run cannot be compared along an axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WithinError {
    /// Alpha outside (0, 1).
    BadAlpha,
    /// The run has no such axis; `valid` lists the axes it sweeps (more than one level).
    UnknownAxis {
        /// The name asked for.
        axis: String,
        /// The axes the run sweeps.
        valid: Vec<String>,
    },
    /// The axis has one level in this run: there is nothing to compare it with.
    OneLevel {
        /// The axis.
        axis: String,
        /// Its only level.
        level: String,
        /// The axes the run sweeps.
        valid: Vec<String>,
    },
    /// The baseline is not a level of the axis.
    UnknownLevel {
        /// The axis.
        axis: String,
        /// The level asked for.
        level: String,
        /// The axis's levels.
        valid: Vec<String>,
    },
}

impl std::fmt::Display for WithinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none: every cell of the run has the same settings".to_string()
            } else {
                v.join(", ")
            }
        };
        match self {
            WithinError::BadAlpha => write!(f, "alpha must be between 0 and 1 (exclusive)"),
            WithinError::UnknownAxis { axis, valid } => {
                write!(f, "the run has no axis \"{axis}\"; the axes it sweeps: {}", list(valid))
            }
            WithinError::OneLevel { axis, level, valid } => write!(
                f,
                "the run has one {axis} only ({level}): nothing to compare it with; the axes it sweeps: {}",
                list(valid)
            ),
            WithinError::UnknownLevel { axis, level, valid } => {
                write!(f, "\"{level}\" is not a {axis} of the run; its levels: {}", valid.join(", "))
            }
        }
    }
}

impl std::error::Error for WithinError {}

/// The run's cells with their coordinates, in plan order.
struct PlacedCell {
    key: String,
    coords: Vec<(String, String)>,
    values: Vec<f64>,
}

fn cells(
    records: &[CellRecord],
    coords: &dyn Fn(&CellParams) -> Vec<(String, String)>,
    metric: Metric,
) -> Vec<PlacedCell> {
    let mut sides: Vec<(String, crate::runs::OneRun)> =
        by_key(records, metric).into_iter().collect();
    sides.sort_by_key(|(_, s)| s.order);
    sides
        .into_iter()
        .map(|(key, s)| PlacedCell {
            coords: coords(&s.params),
            values: s.values.into_iter().map(|(_, v)| v).collect(),
            key,
        })
        .collect()
}

fn value<'a>(c: &'a PlacedCell, axis: &str) -> &'a str {
    c.coords.iter().find(|(a, _)| a == axis).map_or(NO_VALUE, |(_, v)| v.as_str())
}

fn push_new(list: &mut Vec<String>, v: &str) {
    if !list.iter().any(|x| x == v) {
        list.push(v.to_string());
    }
}

fn axes_of(cells: &[PlacedCell]) -> Vec<AxisLevels> {
    let mut names = Vec::new();
    for c in cells {
        for (a, _) in &c.coords {
            push_new(&mut names, a);
        }
    }
    names
        .into_iter()
        .map(|axis| {
            let mut levels = Vec::new();
            for c in cells {
                push_new(&mut levels, value(c, &axis));
            }
            AxisLevels { axis, levels }
        })
        .collect()
}

/// The axes of a run's cells (every axis `coords` names), each with its levels in plan
/// order; an axis the run sweeps has more than one.
pub fn run_axes(
    records: &[CellRecord],
    coords: &dyn Fn(&CellParams) -> Vec<(String, String)>,
) -> Vec<AxisLevels> {
    axes_of(&cells(records, coords, Metric::WallPerProc))
}

/// The level a baseline names: itself, or the one level it names without its `:suffix`
/// (`fifo` for `fifo:50`).
fn find_level<'a>(levels: &'a [String], name: &str) -> Option<&'a String> {
    if let Some(l) = levels.iter().find(|l| *l == name) {
        return Some(l);
    }
    let mut short = levels.iter().filter(|l| l.split(':').next() == Some(name));
    let first = short.next();
    first.filter(|_| short.next().is_none())
}

/// Compares the levels of `axis` within `records` (one run) on `metric`: the cells are
/// grouped by every other swept axis and each level's cell is compared with the `baseline`
/// level's (default: the first level in plan order) at significance `alpha`, all pairs'
/// p-values adjusted together by `correction`.
pub fn compare_within(
    records: &[CellRecord],
    coords: &dyn Fn(&CellParams) -> Vec<(String, String)>,
    axis: &str,
    baseline: Option<&str>,
    metric: Metric,
    alpha: f64,
    correction: Correction,
) -> Result<WithinRun, WithinError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(WithinError::BadAlpha);
    }
    let cells = cells(records, coords, metric);
    let axes = axes_of(&cells);
    let swept: Vec<String> =
        axes.iter().filter(|a| a.levels.len() > 1).map(|a| a.axis.clone()).collect();
    let Some(by) = axes.iter().find(|a| a.axis == axis) else {
        return Err(WithinError::UnknownAxis { axis: axis.into(), valid: swept });
    };
    if by.levels.len() < 2 {
        let level = by.levels.first().cloned().unwrap_or_else(|| NO_VALUE.into());
        return Err(WithinError::OneLevel { axis: axis.into(), level, valid: swept });
    }
    let levels = by.levels.clone();
    let baseline = match baseline {
        None => levels[0].clone(),
        Some(b) => find_level(&levels, b).cloned().ok_or_else(|| WithinError::UnknownLevel {
            axis: axis.into(),
            level: b.into(),
            valid: levels.clone(),
        })?,
    };
    // An axis splits the groups unless its value follows from the compared axis (a policy's
    // priority) or from the axes already splitting them (no group is named twice).
    let follows = |from: &[&str], other: &str| {
        let mut seen: Vec<(Vec<&str>, &str)> = Vec::new();
        cells.iter().all(|c| {
            let at: Vec<&str> = from.iter().map(|a| value(c, a)).collect();
            let v = value(c, other);
            match seen.iter().find(|(k, _)| *k == at) {
                Some((_, first)) => *first == v,
                None => {
                    seen.push((at, v));
                    true
                }
            }
        })
    };
    let mut group_axes: Vec<String> = Vec::new();
    for a in swept.iter().filter(|a| *a != axis) {
        let kept: Vec<&str> = group_axes.iter().map(String::as_str).collect();
        if !follows(&[axis], a) && (kept.is_empty() || !follows(&kept, a)) {
            group_axes.push(a.clone());
        }
    }
    let mut groups: Vec<LevelGroup> = Vec::new();
    for c in &cells {
        let at: Vec<String> = group_axes.iter().map(|a| value(c, a).to_string()).collect();
        let cell = LevelCell {
            level: value(c, axis).to_string(),
            key: c.key.clone(),
            values: c.values.clone(),
        };
        match groups.iter_mut().find(|g| g.coords == at) {
            Some(g) => g.cells.push(cell),
            None => groups.push(LevelGroup { coords: at, cells: vec![cell], pairs: Vec::new() }),
        }
    }
    for g in &mut groups {
        let Some(base) = g.cells.iter().find(|c| c.level == baseline) else { continue };
        g.pairs = g
            .cells
            .iter()
            .filter(|c| c.level != baseline)
            .map(|c| LevelPair {
                level: c.level.clone(),
                key: c.key.clone(),
                baseline_key: base.key.clone(),
                result: compare(&base.values, &c.values, alpha),
                p_adjusted: None,
                alpha,
            })
            .collect();
    }
    let p = adjusted(groups.iter().flat_map(|g| &g.pairs).map(|p| p.result.as_ref()), correction);
    for (pair, p) in groups.iter_mut().flat_map(|g| &mut g.pairs).zip(p) {
        pair.p_adjusted = p;
    }
    Ok(WithinRun {
        axis: axis.into(),
        levels,
        baseline,
        metric,
        alpha,
        correction,
        group_axes,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::test_record;
    use schedlab_model::Sample;

    /// A cell `workload/policy/nN` with one record per wall value (one process each); the
    /// policy's class follows the policy, as a spec's `[policies]` would make it.
    fn cell(id: u32, workload: &str, policy: &str, procs: u32, walls: &[f64]) -> Vec<CellRecord> {
        let params = CellParams {
            cell_id: id,
            key: format!("{workload}/{policy}/n{procs}"),
            workload: workload.into(),
            policy: policy.into(),
            class: if policy == "fast" { "fifo".into() } else { policy.into() },
            processes: procs,
            ..Default::default()
        };
        walls
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let s = Sample { wall_s: w, ..Default::default() };
                test_record(params.clone(), i as u32, 1.0, vec![s])
            })
            .collect()
    }

    fn coords(p: &CellParams) -> Vec<(String, String)> {
        [
            ("workload", p.workload.clone()),
            ("policy", p.policy.clone()),
            ("class", p.class.clone()),
            ("processes", p.processes.to_string()),
        ]
        .into_iter()
        .map(|(a, v)| (a.to_string(), v))
        .collect()
    }

    fn run() -> Vec<CellRecord> {
        [
            cell(0, "cpu", "other", 2, &[10.0, 11.0, 12.0]),
            cell(1, "cpu", "other", 4, &[20.0, 21.0, 22.0]),
            cell(2, "cpu", "fast", 2, &[5.0, 6.0, 7.0]),
            cell(3, "cpu", "fast", 4, &[20.0, 22.0, 21.0]),
            cell(4, "io", "other", 2, &[1.0, 2.0, 3.0]),
            cell(5, "io", "fast", 2, &[1.0, 2.0, 3.0]),
        ]
        .concat()
    }

    fn within(
        axis: &str,
        baseline: Option<&str>,
        correction: Correction,
    ) -> Result<WithinRun, WithinError> {
        compare_within(&run(), &coords, axis, baseline, Metric::WallPerProc, 0.05, correction)
    }

    #[test]
    fn cells_group_by_every_other_swept_axis() {
        let w = within("policy", None, Correction::Holm).unwrap();
        assert_eq!(w.levels, vec!["other", "fast"]);
        assert_eq!(w.baseline, "other", "the first level in plan order");
        // class follows the policy: it does not split the groups.
        assert_eq!(w.group_axes, vec!["workload", "processes"]);
        let coords: Vec<Vec<&str>> =
            w.groups.iter().map(|g| g.coords.iter().map(String::as_str).collect()).collect();
        assert_eq!(coords, [["cpu", "2"], ["cpu", "4"], ["io", "2"]]);
        let g = &w.groups[0];
        assert_eq!(
            g.cells.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
            ["cpu/other/n2", "cpu/fast/n2"]
        );
        assert_eq!(g.pairs.len(), 1);
        let p = &g.pairs[0];
        assert_eq!((p.level.as_str(), p.baseline_key.as_str()), ("fast", "cpu/other/n2"));
        // fast / other = 6 / 11.
        assert!((p.result.unwrap().ratio.unwrap().ratio - 6.0 / 11.0).abs() < 1e-12);
        assert_eq!(g.lowest().unwrap().level, "fast");
        assert_eq!(w.groups[2].lowest().unwrap().level, "other", "a tie goes to plan order");
        assert_eq!(w.pairs().count(), 3);
    }

    #[test]
    fn the_pairs_form_one_family_for_the_correction() {
        let raw = within("policy", None, Correction::None).unwrap();
        let holm = within("policy", None, Correction::Holm).unwrap();
        let p: Vec<Option<f64>> = raw.pairs().map(|(_, p)| p.p_adjusted).collect();
        let want = crate::multiple::adjust(&p, Correction::Holm);
        let got: Vec<Option<f64>> = holm.pairs().map(|(_, p)| p.p_adjusted).collect();
        assert_eq!(got, want);
        // cpu n2: 10,11,12 against 5,6,7: t = 6.124, df 4, p = 0.0036; three tests: 0.0108.
        assert_eq!(holm.groups[0].pairs[0].change(), Change::Lower);
        assert_eq!(holm.groups[2].pairs[0].change(), Change::Unchanged);
    }

    #[test]
    fn a_baseline_by_name_or_without_its_priority() {
        let w = within("policy", Some("fast"), Correction::BenjaminiHochberg).unwrap();
        assert_eq!(w.baseline, "fast");
        assert_eq!(w.groups[0].pairs[0].level, "other");
        let levels = vec!["other".to_string(), "fifo:50".to_string(), "rr:10".to_string()];
        assert_eq!(find_level(&levels, "fifo"), Some(&levels[1]));
        assert_eq!(find_level(&levels, "rr:10"), Some(&levels[2]));
        assert_eq!(find_level(&levels, "deadline"), None);
    }

    #[test]
    fn by_processes_groups_by_workload_and_policy() {
        let w = within("processes", None, Correction::Holm).unwrap();
        assert_eq!(w.group_axes, vec!["workload", "policy"], "class follows the policy");
        assert_eq!(w.groups.len(), 4);
        // io has no n4 cell: a group with the baseline only has no pair.
        assert_eq!(w.pairs().count(), 2);
    }

    #[test]
    fn unknown_axes_levels_and_single_levels_are_refused_with_the_valid_ones() {
        let go = |axis: &str, base: Option<&str>| within(axis, base, Correction::Holm).unwrap_err();
        let swept: Vec<String> =
            ["workload", "policy", "class", "processes"].map(String::from).to_vec();
        assert_eq!(
            go("nice", None),
            WithinError::UnknownAxis { axis: "nice".into(), valid: swept }
        );
        let e = go("policy", Some("deadline"));
        assert!(e.to_string().contains("its levels: other, fast"), "{e}");
        let one = cell(0, "cpu", "other", 2, &[1.0, 2.0]);
        let e = compare_within(
            &one,
            &coords,
            "policy",
            None,
            Metric::WallPerProc,
            0.05,
            Correction::Holm,
        )
        .unwrap_err();
        assert!(matches!(e, WithinError::OneLevel { ref level, .. } if level == "other"), "{e}");
        assert!(e.to_string().contains("one policy only (other)"), "{e}");
        assert_eq!(
            compare_within(
                &one,
                &coords,
                "policy",
                None,
                Metric::WallPerProc,
                1.0,
                Correction::Holm
            ),
            Err(WithinError::BadAlpha)
        );
    }

    #[test]
    fn run_axes_list_levels_in_plan_order() {
        let axes = run_axes(&run(), &coords);
        let procs = axes.iter().find(|a| a.axis == "processes").unwrap();
        assert_eq!(procs.levels, vec!["2", "4"]);
        assert_eq!(
            axes[0],
            AxisLevels { axis: "workload".into(), levels: vec!["cpu".into(), "io".into()] }
        );
    }
}
