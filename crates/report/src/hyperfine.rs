//! The hyperfine export: a run as hyperfine's `--export-json` document, one result per cell
//! and one "run" per repetition (the makespan: release to last reap), so hyperfine's own
//! scripts (plot_whisker.py, plot_parametrized.py, advanced_statistics.py) read schedlab runs.

use schedlab_model::CellRecord;
use serde::Serialize;
use std::collections::BTreeMap;

/// hyperfine's JSON document.
#[derive(Debug, Serialize)]
pub struct Document {
    /// One result per cell, in cell order.
    pub results: Vec<HyperfineResult>,
}

/// One benchmark, as hyperfine writes it.
#[derive(Debug, Serialize)]
pub struct HyperfineResult {
    /// The cell key (hyperfine's command line).
    pub command: String,
    /// Mean makespan, seconds.
    pub mean: f64,
    /// Sample standard deviation of the makespans (null from one repetition, as hyperfine).
    pub stddev: Option<f64>,
    /// Median makespan.
    pub median: f64,
    /// Mean user CPU time of the cell's measured processes per repetition, seconds.
    pub user: f64,
    /// Mean system CPU time, likewise.
    pub system: f64,
    /// Shortest makespan.
    pub min: f64,
    /// Longest makespan.
    pub max: f64,
    /// Every repetition's makespan, in order.
    pub times: Vec<f64>,
    /// Every repetition's exit code (0: only ok repetitions are exported).
    pub exit_codes: Vec<i32>,
    /// The cell's settings, as hyperfine's `--parameter-scan` / `-L` values.
    pub parameters: BTreeMap<String, String>,
}

/// The document for a run's cells: measured (not warm-up), ok repetitions only; also the
/// number of failed repetitions left out.
pub fn document(cells: &[CellRecord]) -> (Document, usize) {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    let mut failed = 0;
    for c in cells.iter().filter(|c| !c.warmup) {
        if c.status.is_ok() {
            by_cell.entry(c.params.cell_id).or_default().push(c);
        } else {
            failed += 1;
        }
    }
    let results = by_cell
        .into_values()
        .map(|mut reps| {
            reps.sort_by_key(|c| c.rep);
            let times: Vec<f64> = reps.iter().map(|c| c.makespan_s).collect();
            let n = times.len() as f64;
            let mean = times.iter().sum::<f64>() / n;
            let stddev = (times.len() > 1).then(|| {
                (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            });
            let mut sorted = times.clone();
            sorted.sort_by(f64::total_cmp);
            let mid = sorted.len() / 2;
            let median = if sorted.len() % 2 == 1 {
                sorted[mid]
            } else {
                (sorted[mid - 1] + sorted[mid]) / 2.0
            };
            let cpu = |f: fn(&schedlab_model::Sample) -> f64| {
                reps.iter()
                    .map(|c| c.samples.iter().filter(|s| !s.background).map(f).sum::<f64>())
                    .sum::<f64>()
                    / n
            };
            let p = &reps[0].params;
            let mut parameters = BTreeMap::from([
                ("workload".to_string(), p.workload.clone()),
                ("policy".to_string(), p.policy.clone()),
                ("processes".to_string(), p.processes.to_string()),
            ]);
            if let Some(io) = &p.iosched {
                parameters.insert("iosched".into(), io.clone());
            }
            HyperfineResult {
                command: p.key.clone(),
                mean,
                stddev,
                median,
                user: cpu(|s| s.user_s),
                system: cpu(|s| s.sys_s),
                min: sorted[0],
                max: sorted[sorted.len() - 1],
                exit_codes: vec![0; times.len()],
                times,
                parameters,
            }
        })
        .collect();
    (Document { results }, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::{CellParams, CellStatus, Sample};

    fn rep(cell_id: u32, rep: u32, makespan_s: f64, ok: bool) -> CellRecord {
        let s =
            |user_s, background| Sample { user_s, sys_s: 0.5, background, ..Default::default() };
        CellRecord {
            params: CellParams {
                cell_id,
                key: format!("cpu/other/n{cell_id}"),
                workload: "cpu".into(),
                policy: "other".into(),
                processes: 2,
                ..Default::default()
            },
            rep,
            makespan_s,
            status: if ok { CellStatus::Ok } else { CellStatus::Failed },
            samples: vec![s(1.0, false), s(2.0, false), s(9.0, true)],
            ..Default::default()
        }
    }

    #[test]
    fn a_result_per_cell_over_its_ok_repetitions() {
        let cells = [
            rep(0, 1, 3.0, true),
            rep(0, 0, 1.0, true),
            rep(0, 2, 2.0, true),
            rep(1, 0, 5.0, true),
            rep(1, 1, 7.0, false),
        ];
        let (doc, failed) = document(&cells);
        assert_eq!(failed, 1);
        assert_eq!(doc.results.len(), 2);
        let r = &doc.results[0];
        assert_eq!(
            (r.command.as_str(), r.times.as_slice()),
            ("cpu/other/n0", [1.0, 3.0, 2.0].as_slice())
        );
        assert_eq!((r.mean, r.median, r.min, r.max, r.stddev), (2.0, 2.0, 1.0, 3.0, Some(1.0)));
        assert_eq!((r.user, r.system), (3.0, 1.0), "the background worker is left out");
        assert_eq!(r.exit_codes, [0, 0, 0]);
        assert_eq!(r.parameters["processes"], "2");
        assert_eq!(doc.results[1].stddev, None, "one repetition has no spread");
    }
}
