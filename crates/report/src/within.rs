//! `schedlab compare RUN --by AXIS` output and the report's "What this run shows": one run's
//! levels of an axis compared group by group (one row per level against the baseline, with
//! the ratio, its interval and Welch's p-value raw and adjusted), as a terminal table,
//! Markdown, CSV or JSON; and per group, which level had the lowest wall time and the fewest
//! preemptions.

use crate::cols::{self, Col};
use crate::compare::{
    change_label, change_name, judged, mean_ci, p_adjusted_header, p_value, ratio_and_welch,
    ratio_ci, short_label, summary_json,
};
use crate::export::csv_quote;
use comfy_table::Table;
use schedlab_analysis::{Change, Correction, LevelGroup, LevelPair, Metric, WithinRun};
use schedlab_model::{CellParams, CellRecord, GroupParams};
use schedlab_plan::axis::{Scope, AXES, DEFAULT_RT_PRIORITY, MAIN, POLICY, SCHEDULER};
use serde_json::{json, Value};

/// A cell's place in its run's matrix: its value on every axis of the plan, as the cell key
/// spells it (`policy` = `fifo:10` for an RT policy at a priority other than the default),
/// the main group's axes by their names, another group's as `NAME.AXIS`, and each swept
/// scheduler knob by its name.
pub fn coords(p: &CellParams) -> Vec<(String, String)> {
    let record = CellRecord { params: p.clone(), ..Default::default() };
    let fallback;
    let groups: &[GroupParams] = if p.groups.is_empty() {
        fallback = [GroupParams {
            name: MAIN.into(),
            workload: p.workload.clone(),
            workload_kind: p.workload_kind.clone(),
            policy: p.policy.clone(),
            class: p.class.clone(),
            priority: p.priority,
            nice: p.nice,
            processes: p.processes,
            ..Default::default()
        }];
        &fallback
    } else {
        &p.groups
    };
    let mut out = Vec::new();
    for a in AXES.iter().filter(|a| a.scope == Scope::Cell) {
        if let Some(v) = (a.stored)(&record, &groups[0]) {
            out.push((a.name.to_string(), v));
        }
    }
    for g in groups {
        let periodic = g.workload_kind == "periodic";
        for a in AXES.iter().filter(|a| a.scope == Scope::Group) {
            // A periodic group's policy is its scheduler: one axis, by the name the spec uses.
            if (**a == POLICY && periodic) || (**a == SCHEDULER && !periodic) {
                continue;
            }
            let Some(mut v) = (a.stored)(&record, g) else { continue };
            let rt = g.class == "fifo" || g.class == "rr";
            if **a == POLICY && rt && g.priority != DEFAULT_RT_PRIORITY as i32 {
                v = format!("{v}:{}", g.priority);
            }
            let name =
                if g.name == MAIN { a.name.to_string() } else { format!("{}.{}", g.name, a.name) };
            out.push((name, v));
        }
    }
    out.extend(p.knobs.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// A group's name, e.g. `workload=cpu processes=4`; `all cells` when the run sweeps
/// nothing else.
pub fn group_label(w: &WithinRun, g: &LevelGroup) -> String {
    if w.group_axes.is_empty() {
        return "all cells".into();
    }
    w.group_axes
        .iter()
        .zip(&g.coords)
        .map(|(a, v)| format!("{a}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The confidence level of the intervals, e.g. `95%`.
fn level(w: &WithinRun) -> String {
    let pct = format!("{:.2}", (1.0 - w.alpha) * 100.0);
    format!("{}%", pct.trim_end_matches('0').trim_end_matches('.'))
}

/// One row of the table: a pair with its group's name.
pub struct Row {
    /// The group's name.
    pub group: String,
    /// The level against the baseline.
    pub pair: LevelPair,
}

/// The rows of a comparison, group by group.
pub fn rows(w: &WithinRun) -> Vec<Row> {
    w.pairs().map(|(g, pair)| Row { group: group_label(w, g), pair: pair.clone() }).collect()
}

/// The columns of a within-run comparison.
pub fn columns(w: &WithinRun) -> Vec<Col<Row>> {
    let l = level(w);
    let base = w.baseline.clone();
    let side = |r: &Row, f: fn(&schedlab_analysis::Comparison) -> &schedlab_analysis::Summary| {
        r.pair.result.as_ref().map_or_else(|| "-".into(), |c| mean_ci(f(c)))
    };
    vec![
        Col::text("group", |r: &Row| r.group.clone()),
        Col::text(w.axis.clone(), |r: &Row| r.pair.level.clone()),
        Col::num("n", |r: &Row| r.pair.result.map_or(0, |c| c.b.n).to_string()),
        Col::num(format!("mean ±{l} CI"), move |r: &Row| side(r, |c| &c.b)),
        Col::num(format!("n {base}"), |r: &Row| r.pair.result.map_or(0, |c| c.a.n).to_string()),
        Col::num(format!("{base} mean ±{l} CI"), move |r: &Row| side(r, |c| &c.a)),
        Col::num(format!("ratio /{} [{l} CI]", w.baseline), |r: &Row| {
            r.pair.result.and_then(|c| c.ratio).as_ref().map_or_else(|| "-".into(), ratio_ci)
        }),
        Col::num("p (Welch)", |r: &Row| {
            p_value(r.pair.result.and_then(|c| c.welch).map(|w| w.p_value))
        }),
        Col::num(p_adjusted_header(w.correction), |r: &Row| p_value(r.pair.p_adjusted)),
        Col::text("change", |r: &Row| change_label(r.pair.change()).into()),
    ]
}

/// The one-line verdict over all pairs.
pub fn summary_line(w: &WithinRun) -> String {
    let changes: Vec<Change> = w.pairs().map(|(_, p)| p.change()).collect();
    let count = |c: Change| changes.iter().filter(|x| **x == c).count();
    let tested = changes.len() - count(Change::Untested);
    let mut line = format!(
        "{} by {}, against {}: {} pairs in {} groups, {} tested: {} significantly higher, {} lower, {} unchanged ({})",
        w.metric.label(),
        w.axis,
        w.baseline,
        changes.len(),
        w.groups.len(),
        tested,
        count(Change::Higher),
        count(Change::Lower),
        count(Change::Unchanged),
        judged(w.alpha, w.correction, tested)
    );
    let lone = w.groups.iter().filter(|g| g.pairs.is_empty()).count();
    if lone > 0 {
        line.push_str(&format!("; {lone} groups without a {} cell or another level", w.baseline));
    }
    line
}

/// What the table's columns mean, one line.
pub fn legend(w: &WithinRun) -> String {
    format!(
        "{} per repetition; cells grouped by {}; each {} against {} in its group: mean ±{} CI over repetitions, ratio of means {}/{} [CI], Welch's t-test:",
        w.metric.label(),
        if w.group_axes.is_empty() { "nothing (the run sweeps one axis)".into() } else { w.group_axes.join(", ") },
        w.axis,
        w.baseline,
        level(w),
        w.axis,
        w.baseline
    )
}

/// The footnotes of the comparison's table, a line each (see [`crate::tables::footnotes`]).
pub fn notes(w: &WithinRun) -> String {
    let rows = cols::rows(&columns(w), &rows(w));
    crate::tables::footnotes(&rows).iter().map(|n| format!("{n}\n")).collect()
}

/// The comparison as a terminal table.
pub fn table(w: &WithinRun) -> Table {
    cols::table(&columns(w), &rows(w))
}

/// The comparison as GitHub-flavoured Markdown: the table, then the summary line.
pub fn markdown(w: &WithinRun) -> String {
    // A `*` mark would read as emphasis.
    let esc = |s: &str| s.replace('|', "\\|").replace('*', "\\*");
    let cols = columns(w);
    let line = |cells: Vec<String>| {
        format!("| {} |\n", cells.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | "))
    };
    let mut out = line(cols::header(&cols).into_iter().map(str::to_string).collect());
    out.push_str(&format!("|{}\n", cols::markdown_rule(&cols)));
    let rows = cols::rows(&cols, &rows(w));
    let notes = crate::tables::footnotes(&rows);
    for r in rows {
        out.push_str(&line(r));
    }
    for n in notes {
        out.push_str(&format!("\n{}\n", esc(n)));
    }
    out.push_str(&format!("\n{}\n", summary_line(w)));
    out
}

/// The comparison as CSV: one row per pair, plain numbers (empty where there is none).
pub fn csv(w: &WithinRun) -> String {
    let f = |v: Option<f64>| v.filter(|x| x.is_finite()).map(|x| x.to_string()).unwrap_or_default();
    let mut out = format!(
        "group,{},key,baseline,baseline_key,metric,n,mean,n_baseline,mean_baseline,ratio,ratio_ci_low,ratio_ci_high,p_welch,p_adjusted,correction,change\n",
        csv_quote(&w.axis)
    );
    for (g, p) in w.pairs() {
        let c = p.result.as_ref();
        let r = c.and_then(|c| c.ratio);
        let fields = [
            group_label(w, g),
            p.level.clone(),
            p.key.clone(),
            w.baseline.clone(),
            p.baseline_key.clone(),
            w.metric.name().into(),
            c.map_or(0, |c| c.b.n).to_string(),
            f(c.map(|c| c.b.mean)),
            c.map_or(0, |c| c.a.n).to_string(),
            f(c.map(|c| c.a.mean)),
            f(r.map(|r| r.ratio)),
            f(r.map(|r| r.ci_low)),
            f(r.map(|r| r.ci_high)),
            f(c.and_then(|c| c.welch).map(|w| w.p_value)),
            f(p.p_adjusted),
            w.correction.name().into(),
            change_name(p.change()).into(),
        ];
        out.push_str(&fields.iter().map(|s| csv_quote(s)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// The comparison as JSON: every number behind the table, per-repetition values included.
pub fn json(w: &WithinRun, run: i64) -> Value {
    let groups: Vec<Value> = w
        .groups
        .iter()
        .map(|g| {
            let pairs: Vec<Value> = g
                .pairs
                .iter()
                .map(|p| {
                    let c = p.result.as_ref();
                    let (ratio, welch) = ratio_and_welch(c);
                    json!({
                        "level": p.level,
                        "key": p.key,
                        "baseline_key": p.baseline_key,
                        "level_stats": c.map(|c| summary_json(&c.b)),
                        "baseline_stats": c.map(|c| summary_json(&c.a)),
                        "ratio": ratio,
                        "welch": welch,
                        "p_adjusted": p.p_adjusted,
                        "change": change_name(p.change()),
                    })
                })
                .collect();
            json!({
                "group": group_label(w, g),
                "coords": w.group_axes.iter().zip(&g.coords).map(|(a, v)| (a.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "cells": g.cells.iter().map(|c| json!({"level": c.level, "key": c.key, "values": c.values})).collect::<Vec<_>>(),
                "lowest": g.lowest().map(|c| c.level.clone()),
                "pairs": pairs,
            })
        })
        .collect();
    json!({
        "run": run,
        "axis": w.axis,
        "levels": w.levels,
        "baseline": w.baseline,
        "group_axes": w.group_axes,
        "metric": w.metric.name(),
        "metric_label": w.metric.label(),
        "alpha": w.alpha,
        "correction": w.correction.name(),
        "unit": "repetition (per-process values are averaged within a repetition first)",
        "groups": groups,
        "summary": summary_line(w),
    })
}

/// Which level of a group was lowest on the comparison's metric, against the baseline:
/// `fifo: 0.912× other [0.850, 0.978], significant after Holm (p 0.0030)`; when the baseline
/// was lowest, the next lowest level against it.
pub fn lowest(w: &WithinRun, g: &LevelGroup) -> String {
    let Some(best) = g.lowest() else { return "-".into() };
    let verdict = |p: &LevelPair| {
        let base = &w.baseline;
        let ratio = match p.result.and_then(|c| c.ratio) {
            None => format!("no ratio to {base}"),
            Some(r) => match r.interval() {
                Ok((lo, hi)) => format!("{:.3}× {base} [{lo:.3}, {hi:.3}]", r.ratio),
                Err(why) => format!("{:.3}{}× {base}", r.ratio, crate::tables::mark(why)),
            },
        };
        let how = match w.correction {
            Correction::None => "uncorrected".to_string(),
            c => format!("after {}", short_label(c)),
        };
        let p_adj = p_value(p.p_adjusted);
        let judged = match p.change() {
            Change::Untested => "untested (fewer than 2 repetitions)".to_string(),
            Change::Unchanged => format!("not significant {how} (p {p_adj})"),
            _ => format!("significant {how} (p {p_adj})"),
        };
        format!("{ratio}, {judged}")
    };
    if best.level != w.baseline {
        return match g.pair(&best.level) {
            Some(p) => format!("{}: {}", best.level, verdict(p)),
            None => best.level.clone(),
        };
    }
    let next = g
        .pairs
        .iter()
        .filter_map(|p| Some((p, p.result?.b.mean)))
        .filter(|(_, m)| m.is_finite())
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match next {
        Some((p, _)) => format!("{}; next {}: {}", best.level, p.level, verdict(p)),
        None => best.level.clone(),
    }
}

/// The report's "What this run shows": one row per group (the run's other axes), naming the
/// level of the compared axis with the lowest wall time and the one with the fewest
/// preemptions, each against the baseline. `wall` and `preempted` compare the same axis on
/// [`Metric::WallPerProc`] and [`Metric::InvoluntaryPerProc`].
pub fn shows_columns(wall: &WithinRun) -> Vec<Col<(String, String, String)>> {
    vec![
        Col::text(
            if wall.group_axes.is_empty() {
                "cells".to_string()
            } else {
                wall.group_axes.join(" × ")
            },
            |r: &(String, String, String)| r.0.clone(),
        ),
        Col::text("lowest wall time per process", |r: &(String, String, String)| r.1.clone()),
        Col::text("fewest preemptions per process", |r: &(String, String, String)| r.2.clone()),
    ]
}

/// The rows of "What this run shows" (see [`shows_columns`]): group name, lowest wall,
/// fewest preemptions.
pub fn shows_rows(wall: &WithinRun, preempted: &WithinRun) -> Vec<(String, String, String)> {
    wall.groups
        .iter()
        .map(|g| {
            let name = if wall.group_axes.is_empty() {
                "all cells".to_string()
            } else {
                g.coords.join(" × ")
            };
            let p = preempted.groups.iter().find(|x| x.coords == g.coords);
            (name, lowest(wall, g), p.map_or_else(|| "-".into(), |p| lowest(preempted, p)))
        })
        .collect()
}

/// The sentence under "What this run shows": what was compared and how it was judged.
pub fn shows_note(wall: &WithinRun) -> String {
    format!(
        "Each {} of the run against {} within each group of cells that agree on every other setting, over repetitions: the ratio of means with its {} interval, and whether it differs significantly by Welch's t-test at alpha {} with the p-values of all the comparisons adjusted by {} (wall time and preemptions adjusted separately; the intervals are not, so an interval that excludes 1 may still not be significant). Lower is better for both. The same comparison for any metric: schedlab compare RUN --by {}.",
        wall.axis,
        wall.baseline,
        level(wall),
        wall.alpha,
        wall.correction.label(),
        wall.axis
    )
}

/// Which axis "What this run shows" compares: `policy` when the run has more than one, else
/// the run's first axis with more than one level; None when it sweeps nothing.
pub fn shows_axis(axes: &[schedlab_analysis::AxisLevels]) -> Option<String> {
    let swept = |a: &&schedlab_analysis::AxisLevels| a.levels.len() > 1;
    axes.iter()
        .filter(swept)
        .find(|a| a.axis == POLICY.name)
        .or_else(|| axes.iter().find(swept))
        .map(|a| a.axis.clone())
}

/// Both comparisons "What this run shows" is built from: the chosen axis (see
/// [`shows_axis`]) on wall time and on preemptions, baseline its first level, Holm; None
/// when the run sweeps nothing.
pub fn shows(records: &[CellRecord], alpha: f64) -> Option<(WithinRun, WithinRun)> {
    let axis = shows_axis(&schedlab_analysis::run_axes(records, &coords))?;
    let go = |m: Metric| {
        schedlab_analysis::compare_within(records, &coords, &axis, None, m, alpha, Correction::Holm)
            .ok()
    };
    Some((go(Metric::WallPerProc)?, go(Metric::InvoluntaryPerProc)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::pa3_records;
    use schedlab_analysis::compare_within;

    fn pa3(metric: Metric, correction: Correction) -> WithinRun {
        compare_within(&pa3_records(1.0), &coords, "policy", None, metric, 0.05, correction)
            .unwrap()
    }

    #[test]
    fn coords_spell_values_as_the_cell_key() {
        let recs = pa3_records(1.0);
        let fifo = recs.iter().find(|r| r.params.policy == "fifo").unwrap();
        let c = coords(&fifo.params);
        let get = |a: &str| c.iter().find(|(x, _)| x == a).map(|(_, v)| v.as_str());
        assert_eq!(
            get("policy"),
            Some("fifo:98"),
            "an RT priority other than 50, as in {}",
            fifo.params.key
        );
        assert_eq!(get("workload"), Some("cpu"));
        assert_eq!(get("processes"), Some("10"));
        assert_eq!(get("scheduler"), None, "a non-periodic group's policy is its policy axis");
    }

    #[test]
    fn pa3_policies_compare_per_workload_and_count() {
        let w = pa3(Metric::WallPerProc, Correction::Holm);
        assert_eq!(w.levels, ["other", "fifo:98", "rr:98"]);
        assert_eq!(w.group_axes, ["workload", "processes"], "priority follows the policy");
        assert_eq!(w.groups.len(), 9);
        assert_eq!(w.pairs().count(), 18);
        let header = cols::header(&columns(&w)).join(" | ");
        assert_eq!(
            header,
            "group | policy | n | mean ±95% CI | n other | other mean ±95% CI | ratio /other [95% CI] | p (Welch) | p adj. (Holm) | change"
        );
        let first = &cols::rows(&columns(&w), &rows(&w))[0];
        assert_eq!(first[0], "workload=cpu processes=10");
        assert_eq!(first[1], "fifo:98");
        assert!(summary_line(&w).contains("18 pairs in 9 groups"), "{}", summary_line(&w));
        assert!(summary_line(&w).contains("adjusted for 18 tests by Holm"), "{}", summary_line(&w));
        let csv = csv(&w);
        assert_eq!(csv.lines().count(), 19);
        assert!(csv.starts_with("group,policy,key,baseline,"), "{csv}");
        let j = json(&w, 7);
        assert_eq!(j["correction"], "holm");
        assert_eq!(j["groups"][0]["pairs"].as_array().unwrap().len(), 2);
        assert_eq!(j["groups"][0]["lowest"], "other");
    }

    #[test]
    fn what_this_run_shows_names_the_lowest_level_per_group() {
        let (wall, preempted) = shows(&pa3_records(1.0), 0.05).unwrap();
        assert_eq!(wall.axis, "policy");
        let rows = shows_rows(&wall, &preempted);
        assert_eq!(rows.len(), 9);
        // cpu, 10 processes: other's 1.284 s is the lowest wall time (rr 1.868 next); fifo's
        // 5 preemptions per process are the fewest (other 687).
        assert_eq!(rows[0].0, "cpu × 10");
        assert!(rows[0].1.starts_with("other; next rr:98: 1.455× other ["), "{}", rows[0].1);
        assert!(rows[0].2.starts_with("fifo:98: 0.007× other ["), "{}", rows[0].2);
        assert!(rows[0].2.contains(", significant after Holm (p "), "{}", rows[0].2);
        assert!(shows_note(&wall).contains("--by policy"));
    }

    #[test]
    fn what_this_run_shows_takes_the_first_swept_axis_without_policies() {
        let recs: Vec<CellRecord> =
            pa3_records(1.0).into_iter().filter(|r| r.params.policy == "other").collect();
        let (wall, _) = shows(&recs, 0.05).unwrap();
        assert_eq!(wall.axis, "workload");
        assert_eq!(wall.group_axes, ["processes"]);
        let one: Vec<CellRecord> = recs.into_iter().filter(|r| r.params.cell_id == 0).collect();
        assert!(shows(&one, 0.05).is_none(), "a run of one cell sweeps nothing");
    }

    #[test]
    fn the_report_shows_it_near_the_top() {
        use crate::html::{render, ReportInput};
        let recs = pa3_records(1.0);
        let shows = shows(&recs, 0.05);
        let (run, stats) = (crate::testdata::run_meta(1), schedlab_analysis::cell_stats(&recs));
        let r = render(&ReportInput { shows: shows.as_ref(), ..ReportInput::new(&run, &stats) })
            .unwrap();
        let html = String::from_utf8(r.files[0].1.clone()).unwrap();
        let at = html.find("<h2 id=\"shows\">What this run shows</h2>").expect("the section");
        assert!(at < html.find("<h2 id=\"figures\">").unwrap(), "before the figures");
        assert!(html.contains("<th>lowest wall time per process</th>"));
        assert!(html.contains("<td>cpu × 10</td>"));
        assert!(html.contains("href=\"#shows\""), "the navigation links it");
    }
}
