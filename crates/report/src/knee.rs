//! The knees of a live run of generated sets (issue #40, item 4) as a table: a row per
//! (scheduler, family), the knee of each of the four methods, and the two
//! conditions as lines.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use schedlab_analysis::knee::{judge, Conditions, Knee, KneeSet, Method, KNEE_TOLERANCE, METHODS};
use serde_json::{json, Value};

/// One knee as a cell: the utilisation, `none` when every set judged was accepted, `-`
/// when none was judged.
fn knee_cell(k: &Knee, m: Method) -> String {
    match (k.judged(m), k.knee(m)) {
        (0, _) => "-".into(),
        (_, Some(u)) => format!("{u}"),
        (_, None) => "none".into(),
    }
}

/// The knees as a terminal table, each test named as [`judge`] names it.
pub fn table(knees: &[Knee]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header([
        "scheduler",
        "family",
        "sets",
        "measured",
        "simulated",
        "plain test",
        "+overheads twin",
        "twin - measured",
    ]);
    for k in knees {
        let (plain, twin) = judge(&k.scheduler).unwrap_or(("", ""));
        let gap = match (k.compared(Method::Overheads), k.compared(Method::Measured)) {
            (Some(o), Some(m)) => {
                let mark = if k.agrees() == Some(true) { "" } else { " (far)" };
                format!("{:+.2}{mark}", o - m)
            }
            _ => "-".into(),
        };
        t.add_row([
            k.scheduler.clone(),
            k.family.clone(),
            k.judged(Method::Measured).to_string(),
            knee_cell(k, Method::Measured),
            knee_cell(k, Method::Simulated),
            format!("{} ({plain})", knee_cell(k, Method::Plain)),
            format!("{} ({twin})", knee_cell(k, Method::Overheads)),
            gap,
        ]);
    }
    for i in 2..t.column_count() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The two live conditions, a line each, with every set that breaks the first.
pub fn condition_lines(c: &Conditions) -> Vec<String> {
    let yes = |ok: bool| if ok { "holds" } else { "does not hold" };
    let mut out = vec![format!(
        "no set a +overheads twin accepts misses when measured: {} ({} of {} sets judged by both accepted by the twin and missed)",
        yes(c.safe()),
        c.accepted_but_missed.len(),
        c.both_judged
    )];
    for s in &c.accepted_but_missed {
        out.push(format!(
            "  accepted but missed: {} / {} at U = {}, set {}",
            s.scheduler, s.family, s.utilisation, s.set
        ));
    }
    out.push(format!(
        "the +overheads knee within {KNEE_TOLERANCE} of the measured for >= {:.0}% of the (scheduler, family) pairs: {} ({} of {}; a method that accepted every set counts one step above the highest utilisation)",
        schedlab_analysis::knee::AGREEING_PAIRS * 100.0,
        yes(c.close()),
        c.agreeing,
        c.pairs
    ));
    out
}

/// A verdict as the exports spell it: yes, no, or null when not judged.
fn word(v: Option<bool>) -> Value {
    v.map_or(Value::Null, |ok| json!(if ok { "yes" } else { "no" }))
}

/// A live run's sets judged four ways, one export row each (`export --per set` of a live
/// run): the plain test and the twin named, then their verdicts.
pub fn set_rows(run: i64, sets: &[KneeSet]) -> Vec<Value> {
    sets.iter()
        .map(|s| {
            let (plain, twin) = judge(&s.scheduler).unwrap_or(("", ""));
            json!({
                "run": run,
                "scheduler": s.scheduler,
                "family": s.family,
                "utilisation": s.utilisation,
                "set": s.set,
                "measured": word(s.verdict(Method::Measured)),
                "simulated": word(s.verdict(Method::Simulated)),
                "plain_test": plain,
                "plain": word(s.verdict(Method::Plain)),
                "twin_test": twin,
                "twin": word(s.verdict(Method::Overheads)),
            })
        })
        .collect()
}

/// The knees' acceptance curves, one export row per (scheduler, family, method,
/// utilisation) (`export --per acceptance` of a live run).
pub fn curve_rows(run: i64, knees: &[Knee]) -> Vec<Value> {
    let mut out = Vec::new();
    for k in knees {
        let (plain, twin) = judge(&k.scheduler).unwrap_or(("", ""));
        for (m, name) in METHODS.iter().zip(["measured", "simulated", plain, twin]) {
            for p in &k.curves[*m as usize] {
                out.push(json!({
                    "run": run,
                    "scheduler": k.scheduler,
                    "family": k.family,
                    "method": name,
                    "utilisation": p.utilisation,
                    "sets": p.judged,
                    "accepted": p.accepted,
                    "knee": k.knee(*m),
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_analysis::knee::{conditions, knees};

    #[test]
    fn the_table_shows_each_knee_and_the_conditions_name_the_unsafe_sets() {
        let y = Some(true);
        let n = Some(false);
        let sets = vec![
            KneeSet {
                scheduler: "fifo-rm".into(),
                family: "8x10-100".into(),
                utilisation: 0.5,
                set: 0,
                verdicts: [y, y, y, y],
            },
            KneeSet {
                scheduler: "fifo-rm".into(),
                family: "8x10-100".into(),
                utilisation: 0.6,
                set: 1,
                verdicts: [n, y, y, y],
            },
        ];
        let k = knees(&sets);
        let text = table(&k).to_string();
        assert!(text.contains("none (rta-rm)"), "{text}");
        assert!(text.contains("none (rta-rm+overheads)"), "{text}");
        assert!(text.contains("+0.10"), "{text}");
        let rows = set_rows(7, &sets);
        assert_eq!(rows[1]["measured"], "no");
        assert_eq!(
            (rows[1]["twin_test"].as_str(), rows[1]["twin"].as_str()),
            (Some("rta-rm+overheads"), Some("yes"))
        );
        let curves = curve_rows(7, &k);
        assert_eq!(curves.len(), 8, "four methods at two utilisations");
        assert_eq!(
            (curves[1]["method"].as_str(), curves[1]["accepted"].as_u64()),
            (Some("measured"), Some(0))
        );
        assert_eq!(curves[1]["knee"], 0.6);
        let lines = condition_lines(&conditions(&sets, &k));
        assert!(lines[0].contains("does not hold (1 of 2"), "{}", lines[0]);
        assert_eq!(lines[1], "  accepted but missed: fifo-rm / 8x10-100 at U = 0.6, set 1");
        assert!(lines[2].contains(": holds (1 of 1;"), "{}", lines[2]);
    }
}

#[cfg(test)]
mod chart_tests {
    use crate::plots::knee_charts;
    use schedlab_analysis::knee::KneeSet;

    #[test]
    fn a_knee_chart_per_scheduler_and_family_draws_the_methods_that_judged() {
        let set = |scheduler: &str, u: f64, v: [Option<bool>; 4]| KneeSet {
            scheduler: scheduler.into(),
            family: "n8".into(),
            utilisation: u,
            set: 0,
            verdicts: v,
        };
        let (y, n) = (Some(true), Some(false));
        // edf: not simulated; its twin rejects at 0.9, measured misses at 0.9 too.
        let sets = [
            set("edf", 0.5, [y, None, y, y]),
            set("edf", 0.9, [n, None, y, n]),
            set("fifo-rm", 0.5, [y, y, y, y]),
        ];
        let charts = knee_charts(&sets);
        let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["knee-edf-n8", "knee-fifo-rm-n8"]);
        let edf = &charts[0];
        let names: Vec<&str> = edf.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["measured", "edf-demand", "edf-dispatcher+overheads"]);
        assert_eq!(edf.categories, ["0.5", "0.9"]);
        assert_eq!(edf.series[2].points.iter().map(|p| p.y).collect::<Vec<_>>(), [1.0, 0.0]);
        assert!(edf.series[2].dashed && !edf.series[0].dashed);
        assert!(
            edf.caption.contains(
                "measured 0.9, simulated not judged, edf-demand none, edf-dispatcher+overheads 0.9"
            ),
            "{}",
            edf.caption
        );
    }
}
