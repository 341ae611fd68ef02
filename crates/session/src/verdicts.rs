//! `compare`'s verdicts: two runs' cells matched by key, every chosen figure of every cell
//! judged as one family by [`schedlab_verdict::judge`], each against this machine's floor of
//! its cell and figure where a noise run measured one.

use crate::floor::Floors;
use crate::subject::Subject;
use schedlab_analysis::{
    compare_runs, CellComparison, Correction, Metric, RunComparison, WithinRun,
};
use schedlab_model::CellRecord;
use schedlab_report::verdicts::{FloorSource, Row, Verdicts};
use schedlab_verdict::{judge, Better, Pair, Params};

/// Which way `metric` is better, as the verdict rule takes it (the figure registries'
/// [`Metric::higher_is_better`]).
pub fn better(metric: Metric) -> Better {
    if metric.higher_is_better() {
        Better::Higher
    } else {
        Better::Lower
    }
}

/// The comparisons of `b` against `a`, one per metric (matched by key, Welch beside them).
pub fn comparisons(
    a: &[CellRecord],
    b: &[CellRecord],
    metrics: &[Metric],
    alpha: f64,
) -> Vec<RunComparison> {
    metrics.iter().filter_map(|m| compare_runs(a, b, *m, alpha, Correction::Holm)).collect()
}

/// `compare A B`'s verdicts: every cell of every figure in `metrics` as one family, against
/// the newest floor of run B's machine when `with_floor`.
pub fn judge_runs(
    store: &schedlab_store::Store,
    (a, b): (&Subject, &Subject),
    metrics: &[Metric],
    params: Params,
    with_floor: bool,
) -> Result<Verdicts, crate::Error> {
    let floors = match with_floor {
        true => crate::floor::newest_for(store, &b.run.env)?,
        false => None,
    };
    let comparisons = comparisons(&a.cells, &b.cells, metrics, params.alpha);
    Ok(judge_all((a.run.id, b.run.id), &comparisons, params, floors.as_ref(), crate::now_unix()))
}

/// Judges every cell of every comparison as one family, with the floors (when given) of
/// each cell and figure.
pub fn judge_all(
    runs: (i64, i64),
    comparisons: &[RunComparison],
    params: Params,
    floors: Option<&Floors>,
    now_unix: f64,
) -> Verdicts {
    // Cell by cell (run A's order), each cell's figures in the order given; a figure the
    // cell does not have (no value in either run) is no row.
    let mut cells: Vec<(usize, usize, Metric, &CellComparison)> = comparisons
        .iter()
        .enumerate()
        .flat_map(|(f, c)| c.cells.iter().enumerate().map(move |(i, cell)| (i, f, c.metric, cell)))
        .filter(|(.., cell)| !(cell.a.is_empty() && cell.b.is_empty()))
        .collect();
    cells.sort_by_key(|(i, f, ..)| (*i, *f));
    let floor_of =
        |metric: Metric, key: &str| floors.and_then(|f| f.get(key, metric.name())).copied();
    let pairs: Vec<Pair> = cells
        .iter()
        .map(|&(_, _, metric, cell)| Pair {
            a: &cell.a,
            b: &cell.b,
            better: better(metric),
            floor: floor_of(metric, &cell.key),
        })
        .collect();
    let covered = pairs.iter().filter(|p| p.floor.is_some()).count();
    let rows: Vec<Row> = cells
        .iter()
        .zip(judge(&pairs, &params))
        .map(|(&(_, _, metric, cell), judged)| Row { cell: cell.clone(), metric, judged })
        .collect();
    Verdicts {
        runs,
        params,
        rows,
        floor: floors.map(|f| FloorSource { run_id: f.run_id, age: f.age(now_unix), covered }),
        sides: None,
    }
}

/// `compare RUN --by AXIS`'s verdicts: each level against the baseline level in every group
/// of cells, as one family, against the floors (when given) of the level's cell, without
/// their drift between runs (both cells are in one run).
pub fn judge_within(
    run_id: i64,
    w: &WithinRun,
    params: Params,
    floors: Option<&Floors>,
    now_unix: f64,
) -> Verdicts {
    let values = |g: &schedlab_analysis::LevelGroup, key: &str| -> Vec<f64> {
        g.cells.iter().find(|c| c.key == key).map(|c| c.values.clone()).unwrap_or_default()
    };
    let mut cells: Vec<CellComparison> = Vec::new();
    for g in &w.groups {
        for p in &g.pairs {
            cells.push(CellComparison {
                key: p.key.clone(),
                params: Default::default(),
                a: values(g, &p.baseline_key),
                b: values(g, &p.key),
                result: p.result,
                p_adjusted: p.p_adjusted,
                alpha: p.alpha,
            });
        }
    }
    let floor_of = |key: &str| {
        let f = floors.and_then(|f| f.get(key, w.metric.name()))?;
        Some(schedlab_verdict::Floor { run_sd: 0.0, ..*f })
    };
    let pairs: Vec<Pair> = cells
        .iter()
        .map(|c| Pair { a: &c.a, b: &c.b, better: better(w.metric), floor: floor_of(&c.key) })
        .collect();
    let covered = pairs.iter().filter(|p| p.floor.is_some()).count();
    let rows: Vec<Row> = cells
        .iter()
        .zip(judge(&pairs, &params))
        .map(|(cell, judged)| Row { cell: cell.clone(), metric: w.metric, judged })
        .collect();
    Verdicts {
        runs: (run_id, run_id),
        params,
        rows,
        floor: floors.map(|f| FloorSource { run_id: f.run_id, age: f.age(now_unix), covered }),
        sides: Some((w.baseline.clone(), {
            let levels: std::collections::BTreeSet<&str> =
                w.groups.iter().flat_map(|g| g.pairs.iter().map(|p| p.level.as_str())).collect();
            match levels.iter().next() {
                Some(l) if levels.len() == 1 => l.to_string(),
                _ => format!("each {}", w.axis),
            }
        })),
    }
}
