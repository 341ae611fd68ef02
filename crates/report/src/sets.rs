//! The tables of a run's batches of generated task sets (issue #32): the acceptance
//! curves (`show`, `export --per acceptance`) and one row per set (`export --per set`).

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use schedlab_analysis::AcceptanceCurve;
use schedlab_model::sets::TaskSetRow;
use serde_json::{json, Value};

/// What the acceptance table shows, for the line above it.
pub const ACCEPTANCE_NOTE: &str = "Acceptance of the generated sets (accepted / sets at each utilisation the sets were generated for; --wide adds the 95% Wilson interval; sim = the scheduler simulated: no deadline miss, under dwcs no window violation; test = an analytical test's verdict, unknown counted as not accepted; weighted = sum U ratio(U) / sum U, Bastoni et al. 2010)";

/// The utilisations of all curves, increasing.
fn utilisations(curves: &[AcceptanceCurve]) -> Vec<f64> {
    let mut us: Vec<f64> =
        curves.iter().flat_map(|c| c.points.iter().map(|p| p.utilisation)).collect();
    us.sort_by(f64::total_cmp);
    us.dedup();
    us
}

/// The acceptance curves as a terminal table: a row per CPU count and scheduler or test, a
/// column per utilisation, then the weighted schedulability; each ratio with its interval
/// when `wide` (160 columns hold about six utilisations so).
pub fn acceptance_table(curves: &[AcceptanceCurve], wide: bool) -> Table {
    let us = utilisations(curves);
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    let mut header = vec!["CPUs".to_string(), "scheduler / test".into(), "kind".into()];
    header.extend(us.iter().map(|u| format!("U = {u}")));
    header.push("weighted".into());
    t.set_header(header);
    for c in curves {
        let mut row = vec![
            c.cpus.to_string(),
            c.name.clone(),
            if c.simulated { "sim" } else { "test" }.to_string(),
        ];
        row.extend(us.iter().map(|u| match c.points.iter().find(|p| p.utilisation == *u) {
            Some(p) if wide => format!("{:.3} [{:.3}, {:.3}]", p.ratio, p.low, p.high),
            Some(p) => format!("{:.3}", p.ratio),
            None => "-".into(),
        }));
        row.push(format!("{:.3}", c.weighted));
        t.add_row(row);
    }
    for i in 3..t.column_count() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The acceptance curves as export rows: one per CPU count, line and utilisation.
pub fn acceptance_rows(run: i64, curves: &[AcceptanceCurve]) -> Vec<Value> {
    curves
        .iter()
        .flat_map(|c| {
            c.points.iter().map(move |p| {
                json!({
                    "run": run,
                    "cpus": c.cpus,
                    "name": c.name,
                    "kind": if c.simulated { "sim" } else { "test" },
                    "utilisation": p.utilisation,
                    "sets": p.sets,
                    "accepted": p.accepted,
                    "ratio": p.ratio,
                    "ratio_low": p.low,
                    "ratio_high": p.high,
                    "weighted": c.weighted,
                })
            })
        })
        .collect()
}

/// Each stored set as an export row: its parameters, outcome and every test's verdict (a
/// column `test_NAME` each, `yes`, `no` or `unknown`); tasks as `C/T/D/x/y` in ms, `;`
/// between tasks.
pub fn set_rows(run: i64, rows: &[TaskSetRow]) -> Vec<Value> {
    let ms = |ns: u64| ns as f64 / 1e6;
    rows.iter()
        .map(|r| {
            let tasks: Vec<String> = r
                .tasks
                .iter()
                .map(|t| format!("{}/{}/{}/{}/{}", ms(t.c_ns), ms(t.t_ns), ms(t.d_ns), t.x, t.y))
                .collect();
            let mut v = json!({
                "run": run,
                "cell_id": r.cell_id,
                "set": r.index,
                "seed": r.seed,
                "scheduler": r.scheduler,
                "cpus": r.cpus,
                "utilisation": r.utilisation,
                "plain_utilisation": r.plain_utilisation,
                "min_utilisation": r.min_utilisation,
                "tasks_ms": tasks.join(";"),
                "jobs": r.jobs,
                "misses": r.misses,
                "violations": r.violations,
                "schedulable": r.schedulable,
                "message": r.message,
            });
            for (name, verdict) in &r.tests {
                let word = match verdict {
                    schedlab_model::sets::SetVerdict::Yes => "yes",
                    schedlab_model::sets::SetVerdict::No => "no",
                    schedlab_model::sets::SetVerdict::Unknown => "unknown",
                };
                v[format!("test_{name}")] = json!(word);
            }
            v
        })
        .collect()
}
