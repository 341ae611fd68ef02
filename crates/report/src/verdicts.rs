//! `schedlab compare`'s verdicts as a table, Markdown (a pull-request comment) or JSON: one
//! row per cell and figure, with both means, each side's %stddev (LKP's columns), the change,
//! the ratio's interval, the permutation p-value adjusted over the whole family, the floor and
//! the verdict (`regressed`, `improved`, `same`, `undecided`; [`schedlab_verdict::judge`]).

use crate::cols::{self, Col};
use crate::compare::{mean_ci, p_value};
use comfy_table::Table;
use schedlab_analysis::{CellComparison, Metric};
use schedlab_verdict::{DeltaSource, Judged, Params, Verdict};
use serde_json::{json, Value};

/// One cell and figure judged.
#[derive(Debug, Clone)]
pub struct Row {
    /// The cell as the comparison of its figure holds it (values, means, intervals).
    pub cell: CellComparison,
    /// The figure.
    pub metric: Metric,
    /// Its verdict and the numbers behind it.
    pub judged: Judged,
}

/// Where the floor of a comparison came from.
#[derive(Debug, Clone)]
pub struct FloorSource {
    /// The noise run that measured it.
    pub run_id: i64,
    /// How long ago, in words.
    pub age: String,
    /// Of the rows, how many had a floor of their own cell and figure.
    pub covered: usize,
}

/// Every row of one comparison, judged as one family.
#[derive(Debug, Clone)]
pub struct Verdicts {
    /// Run A's id and run B's.
    pub runs: (i64, i64),
    /// The rule's parameters.
    pub params: Params,
    /// The rows, cell by cell, figure by figure.
    pub rows: Vec<Row>,
    /// The floor used, if any.
    pub floor: Option<FloorSource>,
    /// The names of sides A and B when they are not two runs (`run --until-decided`: the
    /// baseline level and the level compared with it, both in run `runs.0`).
    pub sides: Option<(String, String)>,
}

impl Verdicts {
    /// The names of side A and side B: `run 3` and `run 4`, or [`Verdicts::sides`].
    pub fn side_names(&self) -> (String, String) {
        match &self.sides {
            Some((a, b)) => (a.clone(), b.clone()),
            None => (format!("run {}", self.runs.0), format!("run {}", self.runs.1)),
        }
    }
}

/// The verdict as a table cell: an arrow for the direction of the value, then the word.
pub fn label(j: &Judged) -> String {
    if j.ratio.is_none() {
        return "not judged".into();
    }
    let arrow = match (j.verdict, j.ratio.unwrap_or(1.0) > 1.0) {
        (Verdict::Regressed | Verdict::Improved, true) => "▲ ",
        (Verdict::Regressed | Verdict::Improved, false) => "▼ ",
        _ => "",
    };
    format!("{arrow}{}", j.verdict.name())
}

fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:+.1}%"),
        _ => "-".into(),
    }
}

/// The columns of the verdict table; `figures` adds the figure's column.
/// The short names of sides A and B: two runs by their ids (`n 3`, `ratio 4/3`), other sides
/// by their names.
fn short_names(v: &Verdicts) -> (String, String) {
    match &v.sides {
        Some(names) => names.clone(),
        None => (v.runs.0.to_string(), v.runs.1.to_string()),
    }
}

/// The ratio's name: `4/3`, or `fifo/other`.
fn ratio_name(v: &Verdicts) -> String {
    let (a, b) = short_names(v);
    format!("{b}/{a}")
}

fn columns(v: &Verdicts, figures: bool) -> Vec<Col<Row>> {
    let (a, b) = short_names(v);
    let (name_a, name_b) = v.side_names();
    let mut c = vec![Col::text("cell", |r: &Row| r.cell.key.clone())];
    if figures {
        c.push(Col::text("figure", |r: &Row| r.metric.name().to_string()));
    }
    let side = |r: &Row, first: bool| {
        r.cell
            .result
            .as_ref()
            .map_or_else(|| "-".into(), |x| mean_ci(if first { &x.a } else { &x.b }))
    };
    let sd = |r: &Row, first: bool| {
        let j = &r.judged;
        match if first { j.stddev_pct_a } else { j.stddev_pct_b } {
            Some(v) => format!("{v:.1}"),
            None => "-".into(),
        }
    };
    c.extend([
        Col::num(format!("n {a}"), |r: &Row| r.cell.a.len().to_string()),
        Col::num(format!("{name_a} mean ±95% CI"), move |r: &Row| side(r, true)),
        Col::num("%sd", move |r: &Row| sd(r, true)),
        Col::num(format!("n {b}"), |r: &Row| r.cell.b.len().to_string()),
        Col::num(format!("{name_b} mean ±95% CI"), move |r: &Row| side(r, false)),
        Col::num("%sd", move |r: &Row| sd(r, false)),
        Col::num("%change", |r: &Row| pct(r.judged.change_pct)),
        Col::num(format!("ratio {b}/{a} [CI]"), |r: &Row| {
            let j = &r.judged;
            match (j.ratio, j.ratio_lo, j.ratio_hi) {
                (Some(x), Some(lo), Some(hi)) => format!("{x:.3} [{lo:.3}, {hi:.3}]"),
                (Some(x), ..) => format!("{x:.3}"),
                _ => "-".into(),
            }
        }),
        Col::num("p adj. (Holm)", |r: &Row| p_value(r.judged.p_adjusted)),
        Col::num("±same / gate", |r: &Row| {
            format!("{:.1}% / {:.1}%", r.judged.delta * 100.0, r.judged.gate * 100.0)
        }),
        Col::text("verdict", |r: &Row| label(&r.judged)),
    ]);
    c
}

fn many_figures(v: &Verdicts) -> bool {
    v.rows.iter().any(|r| r.metric != v.rows[0].metric)
}

/// The verdicts as a terminal table.
pub fn table(v: &Verdicts) -> Table {
    cols::table(&columns(v, many_figures(v)), &v.rows)
}

/// The verdicts for a terminal: what each row holds, the table and the summary line.
pub fn text(v: &Verdicts, figures: &[Metric]) -> String {
    let labels: Vec<&str> = figures.iter().map(|m| m.label()).collect();
    let notes: String =
        crate::tables::footnotes(&cols::rows(&columns(v, many_figures(v)), &v.rows))
            .iter()
            .map(|n| format!("{n}\n"))
            .collect();
    format!(
        "{}: one value per repetition\nmean ±95% CI and %sd over repetitions; ratio {} of geometric means; \
         p: permutation test, Holm over all rows; ±same: the margin of `same`; gate: the least change called one\n{}\n{notes}{}\n",
        labels.join("; "),
        ratio_name(v),
        table(v),
        summary_line(v)
    )
}

/// What `--fail-on` finds: a line naming the rows whose verdict is among `fail_on` (empty
/// when none is).
pub fn failures(v: &Verdicts, fail_on: &[String]) -> Vec<String> {
    let hits: Vec<String> = v
        .rows
        .iter()
        .filter(|r| fail_on.iter().any(|f| f == r.judged.verdict.name()))
        .map(|r| format!("{} {} {}", r.cell.key, r.metric.name(), r.judged.verdict.name()))
        .collect();
    if hits.is_empty() {
        return hits;
    }
    let head =
        format!("{} of {} rows are {} (--fail-on)", hits.len(), v.rows.len(), fail_on.join(" or "));
    std::iter::once(head).chain(hits).collect()
}

/// Counts of each verdict: (regressed, improved, same, undecided, not judged).
pub fn counts(v: &Verdicts) -> [usize; 5] {
    let mut n = [0; 5];
    for r in &v.rows {
        let i = match (r.judged.ratio, r.judged.verdict) {
            (None, _) => 4,
            (_, Verdict::Regressed) => 0,
            (_, Verdict::Improved) => 1,
            (_, Verdict::Same) => 2,
            (_, Verdict::Undecided) => 3,
        };
        n[i] += 1;
    }
    n
}

/// How `same` was judged, in words: the margin's source.
fn margin(v: &Verdicts) -> String {
    let sources: Vec<DeltaSource> = v.rows.iter().map(|r| r.judged.delta_source).collect();
    match (v.params.same_within, &v.floor) {
        (Some(d), _) => format!("same = the 90% interval of the ratio within ±{:.1}% (--same-within)", d * 100.0),
        (None, Some(f)) => format!(
            "same = the 90% interval within the floor of run {} ({} old; {} of {} rows have one, the others ±5%)",
            f.run_id,
            f.age,
            sources.iter().filter(|s| **s == DeltaSource::Floor).count(),
            v.rows.len()
        ),
        (None, None) => "same = the 90% interval within ±5% (no floor of this machine: `schedlab noise SPEC` measures one)".into(),
    }
}

/// The one-line summary: the counts, the rule and the family.
pub fn summary_line(v: &Verdicts) -> String {
    let [reg, imp, same, und, none] = counts(v);
    let judged = v.rows.len() - none;
    let (name_a, name_b) = v.side_names();
    let mut line = format!(
        "verdicts of {name_b} against {name_a}: {reg} regressed, {imp} improved, {same} same, {und} undecided of {judged} cell-figure pairs \
         (permutation test over repetitions, p adjusted by Holm over all {judged}, alpha {}; changed = significant and beyond the gate; {})",
        v.params.alpha,
        margin(v)
    );
    if none > 0 {
        line.push_str(&format!("; {none} not judged (fewer than 2 repetitions or a value <= 0)"));
    }
    let fewest =
        v.rows.iter().filter(|r| r.judged.p.is_some()).map(|r| (r.judged.n_a, r.judged.n_b)).min();
    if let Some((n_a, n_b)) = fewest.filter(|_| und > 0) {
        let p = smallest_p(n_a, n_b);
        if p * judged as f64 >= v.params.alpha {
            line.push_str(&format!(
                "; with {n_a} and {n_b} repetitions the permutation test's smallest p is {p:.3}, which Holm over {judged} rows never \
                 calls significant: add repetitions (10 a run decide most)"
            ));
        }
    }
    line
}

/// The smallest p-value a two-sided permutation test over `n_a` and `n_b` repetitions can
/// give: the observed split and, for equal sizes, its mirror, over every split.
fn smallest_p(n_a: usize, n_b: usize) -> f64 {
    let splits = (1..=n_a).fold(1.0, |c, i| c * (n_b + i) as f64 / i as f64);
    if n_a == n_b {
        2.0 / splits
    } else {
        1.0 / splits
    }
}

/// The verdicts as GitHub-flavoured Markdown, a pull-request comment: the warnings, a
/// headline, the table, then the summary line.
pub fn markdown(v: &Verdicts, warnings: &[String]) -> String {
    let esc = |s: &str| s.replace('|', "\\|").replace('*', "\\*");
    let cols = columns(v, many_figures(v));
    let [reg, imp, ..] = counts(v);
    let mut out: String = warnings.iter().map(|w| format!("> **Warning:** {w}\n\n")).collect();
    out.push_str(&match (reg, imp) {
        (0, 0) => "**schedlab: no regression**\n\n".to_string(),
        (r, i) => format!("**schedlab: {r} regressed, {i} improved**\n\n"),
    });
    out.push_str(&format!(
        "| {} |\n",
        cols::header(&cols).iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
    ));
    out.push_str(&format!("|{}\n", cols::markdown_rule(&cols)));
    for r in cols::rows(&cols, &v.rows) {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out.push_str(&format!("\n{}\n", summary_line(v)));
    out
}

/// The verdicts for JSON: a list of rows with every number behind them.
pub fn json(v: &Verdicts) -> Value {
    let [reg, imp, same, und, none] = counts(v);
    let rows: Vec<Value> = v
        .rows
        .iter()
        .map(|r| {
            json!({
                "key": r.cell.key,
                "figure": r.metric.name(),
                "higher_is_better": r.metric.higher_is_better(),
                "a_values": r.cell.a,
                "b_values": r.cell.b,
                "verdict": r.judged.verdict.name(),
                "judged": r.judged,
            })
        })
        .collect();
    json!({
        "params": v.params,
        "unit": "repetition (per-process values are averaged within a repetition first)",
        "floor": v.floor.as_ref().map(|f| json!({"run": f.run_id, "age": f.age, "rows_with_floor": f.covered})),
        "rows": rows,
        "counts": {"regressed": reg, "improved": imp, "same": same, "undecided": und, "not_judged": none},
        "line": summary_line(v),
    })
}

/// The line `env` and `show` give the newest noise floor of a machine (`whose`: "this
/// machine", "the run's machine"): (noise run, its age in words, cell-figure pairs), or None
/// when none was measured.
pub fn floor_line(newest: Option<(i64, &str, usize)>, whose: &str) -> String {
    match newest {
        Some((run, age, pairs)) => format!(
            "run {run}'s, measured {age} ago on {whose} ({pairs} cell-figure pairs); `compare` judges against it"
        ),
        None => format!("none measured on {whose} (`schedlab noise SPEC` measures one; until then `compare`'s margin of `same` is ±5%)"),
    }
}

/// A noise run's floors as a table: per cell and figure, the repetitions per arm, the
/// between-arm ratio and the floor (how far apart two identical arms drift, 95th percentile
/// of the split distribution) with the within-arm spread.
pub fn floor_table(
    floors: &std::collections::BTreeMap<(String, String), schedlab_verdict::Floor>,
) -> Table {
    let rows: Vec<Vec<String>> = floors
        .iter()
        .map(|((key, figure), f)| {
            vec![
                key.clone(),
                figure.clone(),
                format!("{}/{}", f.n_a, f.n_b),
                format!("{:.3}", f.ratio),
                format!("±{:.2}%", (f.q95.exp() - 1.0) * 100.0),
                format!("{:.2}%", f.sd_log * 100.0),
                format!("{:.2}%", f.run_sd * 100.0),
            ]
        })
        .collect();
    let mut t = Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED).set_header([
        "cell",
        "figure",
        "n per arm",
        "A/A ratio",
        "floor (p95)",
        "sd within",
        "drift between runs",
    ]);
    for r in rows {
        t.add_row(r);
    }
    t
}
