//! `schedlab compare` output: one row per matched cell (both means with their CIs, the
//! ratio B/A with its CI, Welch's p-value raw and adjusted for the number of cells, the
//! verdict) and a summary line, as a terminal table, Markdown or JSON. The same rows feed the
//! report's comparison section.

use crate::cols::{self, Col};
use crate::html::RunMeta;
use crate::tables::offsets;
use comfy_table::Table;
use schedlab_analysis::{
    CellComparison, Change, CompareSummary, Comparison, Correction, NoInterval, Ratio,
    RunComparison, Summary,
};
use serde_json::{json, Value};

/// The confidence level of a comparison's intervals, e.g. `95%`.
pub fn level(c: &RunComparison) -> String {
    let pct = format!("{:.2}", (1.0 - c.alpha) * 100.0);
    format!("{}%", pct.trim_end_matches('0').trim_end_matches('.'))
}

/// The columns of a comparison, naming the two runs.
pub fn columns(c: &RunComparison, a: i64, b: i64) -> Vec<Col<CellComparison>> {
    let l = level(c);
    vec![
        Col::text("cell", |r: &CellComparison| r.key.clone()),
        Col::num(format!("n {a}"), |r: &CellComparison| r.a.len().to_string()),
        Col::num(format!("run {a} mean ±{l} CI"), |r: &CellComparison| side_mean(r, |x| &x.a)),
        Col::num(format!("n {b}"), |r: &CellComparison| r.b.len().to_string()),
        Col::num(format!("run {b} mean ±{l} CI"), |r: &CellComparison| side_mean(r, |x| &x.b)),
        Col::num(format!("ratio {b}/{a} [{l} CI]"), |r: &CellComparison| {
            r.result
                .as_ref()
                .and_then(|x| x.ratio.as_ref())
                .map(ratio_ci)
                .unwrap_or_else(|| "-".into())
        }),
        Col::num("p (Welch)", |r: &CellComparison| {
            r.result.as_ref().map_or_else(|| "-".into(), |x| p_value(x.welch.map(|w| w.p_value)))
        }),
        Col::num(p_adjusted_header(c.correction), |r: &CellComparison| p_value(r.p_adjusted)),
        Col::text("change", |r: &CellComparison| change_label(r.change()).into()),
    ]
}

/// The header of the adjusted p-value column, naming the correction (`p adj. (Holm)`).
pub fn p_adjusted_header(c: Correction) -> String {
    match c {
        Correction::None => "p adj. (none)".into(),
        c => format!("p adj. ({})", short_label(c)),
    }
}

/// The correction as a verdict names it: `Holm`, `BH` or `uncorrected`.
pub fn short_label(c: Correction) -> &'static str {
    match c {
        Correction::Holm => "Holm",
        Correction::BenjaminiHochberg => "BH",
        Correction::None => "uncorrected",
    }
}

/// How a family of `tests` tests was judged, for a summary line: `Welch, alpha 0.05, p-values
/// adjusted for 27 tests by Holm`.
pub fn judged(alpha: f64, correction: Correction, tests: usize) -> String {
    match correction {
        Correction::None => {
            format!("Welch, alpha {alpha}, {} over {tests} tests", correction.label())
        }
        c => format!("Welch, alpha {alpha}, p-values adjusted for {tests} tests by {}", c.label()),
    }
}

/// One side's mean with its interval, `-` without a result.
fn side_mean(r: &CellComparison, side: fn(&Comparison) -> &Summary) -> String {
    r.result.as_ref().map_or_else(|| "-".into(), |x| mean_ci(side(x)))
}

/// Column headers of a comparison, naming the two runs.
pub fn header(c: &RunComparison, a: i64, b: i64) -> Vec<String> {
    cols::header(&columns(c, a, b)).into_iter().map(str::to_string).collect()
}

/// The columns of the comparison summary: one row per metric compared.
pub fn summary_columns() -> Vec<Col<RunComparison>> {
    let count = |header, get: fn(&CompareSummary) -> usize| {
        Col::num(header, move |m: &RunComparison| get(&m.summary()).to_string())
    };
    vec![
        Col::text("metric", |m: &RunComparison| m.metric.label().to_string()),
        count("matched", |s| s.matched),
        count("tested", |s| s.tested),
        count("higher in B", |s| s.higher),
        count("lower in B", |s| s.lower),
        Col::num("geo. mean B/A", |m: &RunComparison| {
            m.summary().geo_mean_ratio.map(num).unwrap_or_else(|| "-".into())
        }),
    ]
}

fn decimals(v: f64) -> usize {
    let a = v.abs();
    if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 || a == 0.0 {
        3
    } else {
        4
    }
}

/// Formats a number with about four significant digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    format!("{v:.*}", decimals(v))
}

/// A mean with its interval as tables show it, `-` without one.
pub(crate) fn mean_ci(s: &Summary) -> String {
    if s.n == 0 || !s.mean.is_finite() {
        return "-".into();
    }
    let d = decimals(s.mean);
    match s.interval() {
        Ok((lo, hi)) => format!("{} {}", num(s.mean), offsets(s.mean, lo, hi, d)),
        Err(why) => format!("{}{}", num(s.mean), crate::tables::mark(why)),
    }
}

/// A ratio with its interval as tables show it: `0.912 [0.850, 0.978]`.
pub(crate) fn ratio_ci(r: &Ratio) -> String {
    match r.interval() {
        Ok((lo, hi)) => format!("{:.3} [{:.3}, {:.3}]", r.ratio, lo, hi),
        Err(why) => format!("{:.3}{}", r.ratio, crate::tables::mark(why)),
    }
}

/// A p-value for tables: four decimals, `<0.0001` below that, `-` when there is no test.
pub fn p_value(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

/// The verdict as shown: `▲ higher`, `▼ lower`, blank, or `n < 2`.
pub fn change_label(c: Change) -> &'static str {
    match c {
        Change::Higher => "▲ higher",
        Change::Lower => "▼ lower",
        Change::Unchanged => "",
        Change::Untested => "n < 2",
    }
}

/// One row of cells per matched cell, in the order of [`header`].
pub fn rows(c: &RunComparison) -> Vec<Vec<String>> {
    // The headers name the runs; the cells do not.
    cols::rows(&columns(c, 0, 0), &c.cells)
}

/// The one-line verdict over all matched cells.
pub fn summary_line(c: &RunComparison, a: i64, b: i64) -> String {
    let s = c.summary();
    let unchanged = s.tested - s.higher - s.lower;
    let mut line = format!(
        "{}: {} matched cells, {} tested: {} significantly higher in run {b}, {} lower, {} unchanged ({})",
        c.metric.label(),
        s.matched,
        s.tested,
        s.higher,
        s.lower,
        unchanged,
        judged(c.alpha, c.correction, s.tested)
    );
    if c.correction != Correction::None && s.raw_significant != s.higher + s.lower {
        line.push_str(&format!("; {} significant before the correction", s.raw_significant));
    }
    if let Some(g) = s.geo_mean_ratio {
        line.push_str(&format!("; geometric mean ratio {b}/{a} = {}", num(g)));
    }
    if s.tested < s.matched {
        line.push_str(&format!(
            "; {} cells untested (fewer than 2 repetitions on a side)",
            s.matched - s.tested
        ));
    }
    for (which, keys) in [(a, &c.only_a), (b, &c.only_b)] {
        if !keys.is_empty() {
            line.push_str(&format!("; {} only in run {which}", keys.len()));
        }
    }
    line
}

/// The footnotes of the comparison's table, a line each (see [`crate::tables::footnotes`]).
pub fn notes(c: &RunComparison) -> String {
    crate::tables::footnotes(&rows(c)).iter().map(|n| format!("{n}\n")).collect()
}

/// The comparison as a terminal table.
pub fn table(c: &RunComparison, a: i64, b: i64) -> Table {
    cols::table(&columns(c, a, b), &c.cells)
}

/// The comparison as GitHub-flavoured Markdown: the `warnings` about the two runs (see
/// [`run_differences`]) as quoted lines, the table, then the summary line.
pub fn markdown(c: &RunComparison, a: i64, b: i64, warnings: &[String]) -> String {
    // A `*` mark would read as emphasis.
    let esc = |s: &str| s.replace('|', "\\|").replace('*', "\\*");
    let cols = columns(c, a, b);
    let mut out: String = warnings.iter().map(|w| format!("> **Warning:** {w}\n>\n")).collect();
    if !warnings.is_empty() {
        out.truncate(out.len() - 2);
        out.push('\n');
    }
    out.push_str(&format!(
        "| {} |\n",
        cols::header(&cols).iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
    ));
    out.push_str(&format!("|{}\n", cols::markdown_rule(&cols)));
    for r in cols::rows(&cols, &c.cells) {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
        ));
    }
    for n in crate::tables::footnotes(&rows(c)) {
        out.push_str(&format!("\n{}\n", n.replace('*', "\\*")));
    }
    out.push_str(&format!("\n{}\n", summary_line(c, a, b)));
    out
}

/// Why a table shows no interval, for JSON (null when it shows one).
pub(crate) fn no_interval(i: Result<(f64, f64), NoInterval>) -> Option<&'static str> {
    i.err().map(NoInterval::reason)
}

/// A summary's numbers for JSON.
pub(crate) fn summary_json(s: &Summary) -> Value {
    json!({
        "n": s.n, "mean": s.mean, "sd": s.sd, "ci_low": s.ci_low, "ci_high": s.ci_high,
        "ci_method": s.domain.method(), "no_interval": no_interval(s.interval()),
    })
}

/// A comparison's ratio and Welch test for JSON (null without them).
pub(crate) fn ratio_and_welch(r: Option<&Comparison>) -> (Value, Value) {
    let welch =
        r.and_then(|r| r.welch).map(|w| json!({"t": w.t, "df": w.df, "p_value": w.p_value}));
    (json!(r.and_then(|r| r.ratio).as_ref().map(ratio_json)), json!(welch))
}

/// A ratio's numbers for JSON.
pub(crate) fn ratio_json(r: &Ratio) -> Value {
    json!({
        "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high,
        "ci_method": "Student t on the log ratio, Welch-Satterthwaite df (delta method)",
        "no_interval": no_interval(r.interval()),
    })
}

/// What the reader of a comparison of run `a` with run `b` should know before reading it:
/// the runs differ in scale, mode (measured or simulated: allowed, that is how measurement
/// meets the model), machine (CPU model, online CPUs, kernel; no host name is stored) or
/// spec text. Empty when they agree on all.
pub fn run_differences(a: &RunMeta, b: &RunMeta) -> Vec<String> {
    let mut out = Vec::new();
    if a.scale != b.scale {
        out.push(format!(
            "the runs differ in scale (run {}: {}, run {}: {}): times, counts and rates grow with the work, so the ratios \
             show the scale as well as any change",
            a.id, a.scale, b.id, b.scale
        ));
    }
    if a.mode != b.mode {
        let how = |m: &str| if m == "sim" { "simulated" } else { "measured" };
        out.push(format!(
            "run {} was {} and run {} {}: this compares a measurement with the simulator's model, not two measurements",
            a.id,
            how(&a.mode),
            b.id,
            how(&b.mode)
        ));
    }
    let (ea, eb) = (&a.env, &b.env);
    let mut machine = Vec::new();
    if ea.cpu_model != eb.cpu_model {
        machine.push(format!("CPU {} vs {}", ea.cpu_model, eb.cpu_model));
    }
    if ea.cpus != eb.cpus {
        machine.push(format!("{} vs {} online CPUs", ea.cpus, eb.cpus));
    }
    if ea.kernel != eb.kernel {
        machine.push(format!("kernel {} vs {}", ea.kernel, eb.kernel));
    }
    if !machine.is_empty() {
        out.push(format!(
            "the runs were made on different machines ({}): a difference may be the machine's",
            machine.join("; ")
        ));
    }
    if a.spec_hash != b.spec_hash {
        let short = |h: &str| h.chars().take(12).collect::<String>();
        out.push(format!(
            "the runs come from different spec texts (sha256 {} vs {}): cells are matched by key, and a key does not name \
             every setting (work per process, durations, other groups' workloads)",
            short(&a.spec_hash),
            short(&b.spec_hash)
        ));
    }
    out
}

/// The verdict's name in JSON: `higher`, `lower`, `unchanged` or `untested`.
pub(crate) fn change_name(x: Change) -> &'static str {
    match x {
        Change::Higher => "higher",
        Change::Lower => "lower",
        Change::Unchanged => "unchanged",
        Change::Untested => "untested",
    }
}

/// The comparison as JSON: every number behind the table, per-repetition values included,
/// and the `warnings` about the two runs (see [`run_differences`]).
pub fn json(c: &RunComparison, a: i64, b: i64, warnings: &[String]) -> Value {
    let s = c.summary();
    let cells: Vec<Value> = c
        .cells
        .iter()
        .map(|cell| {
            let r = cell.result.as_ref();
            let (ratio, welch) = ratio_and_welch(r);
            json!({
                "key": cell.key,
                "a_values": cell.a,
                "b_values": cell.b,
                "a": r.map(|r| summary_json(&r.a)),
                "b": r.map(|r| summary_json(&r.b)),
                "ratio": ratio,
                "welch": welch,
                "p_adjusted": cell.p_adjusted,
                "significant": matches!(cell.change(), Change::Higher | Change::Lower),
                "significant_uncorrected": r.is_some_and(|r| r.significant),
                "change": change_name(cell.change()),
            })
        })
        .collect();
    json!({
        "run_a": a,
        "run_b": b,
        "metric": c.metric.name(),
        "metric_label": c.metric.label(),
        "warnings": warnings,
        "alpha": c.alpha,
        "correction": c.correction.name(),
        "unit": "repetition (per-process values are averaged within a repetition first)",
        "cells": cells,
        "only_in_a": c.only_a,
        "only_in_b": c.only_b,
        "summary": {
            "matched": s.matched,
            "tested": s.tested,
            "higher": s.higher,
            "lower": s.lower,
            "significant_uncorrected": s.raw_significant,
            "geo_mean_ratio": s.geo_mean_ratio,
            "line": summary_line(c, a, b),
        },
    })
}
