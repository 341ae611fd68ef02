//! A step's verdicts: the pooled records of its runs split into the good arm and the tested
//! one, cells matched by their key without the arm, judged by [`crate::verdicts`] as one
//! family; and the step's lines.

use super::state::{Evidence, Outcome, Tested};
use crate::verdicts::{comparisons, judge_all};
use schedlab_analysis::Metric;
use schedlab_model::CellRecord;
use schedlab_report::verdicts::Verdicts;
use schedlab_spec::Arms;
use schedlab_verdict::{Judged, Params, Verdict};

/// The arm of the good revision, and of the revision tested.
pub const ARMS: [&str; 2] = ["good", "test"];

/// The measured repetitions of `records` (warm-ups and failures left out) split by arm, each
/// renamed to its original workload so that both arms' cells have one key.
pub fn split(records: &[CellRecord], arms: &Arms) -> [Vec<CellRecord>; 2] {
    let mut out: [Vec<CellRecord>; 2] = Default::default();
    for r in records.iter().filter(|r| !r.warmup && r.status.is_ok()) {
        let Some((base, arm)) = arms.arm_of(&r.params.workload) else { continue };
        let mut r = r.clone();
        let named = &r.params.workload;
        r.params.key = r
            .params
            .key
            .split('/')
            .map(|s| if s == named { base } else { s })
            .collect::<Vec<_>>()
            .join("/");
        r.params.workload = base.to_string();
        out[arm].push(r);
    }
    out
}

/// The verdicts of the tested arm against the good one, every cell of every figure one
/// family (`runs`: the first and the last run pooled).
pub fn verdicts(
    records: &[CellRecord],
    arms: &Arms,
    figures: &[Metric],
    params: Params,
    runs: (i64, i64),
) -> Verdicts {
    let [good, test] = split(records, arms);
    let c = comparisons(&good, &test, figures, params.alpha);
    judge_all(runs, &c, params, None, 0.0)
}

/// Whether the good arm has a value of any of `figures`.
pub fn good_has_values(records: &[CellRecord], arms: &Arms, figures: &[Metric]) -> bool {
    let [good, _] = split(records, arms);
    good.iter().any(|r| figures.iter().any(|m| m.value(r).is_some()))
}

/// The step's outcome when the verdicts decide it: bad when any row regressed, good when
/// every row is the same or improved; None while undecided (or with no row).
pub fn decide(v: &Verdicts) -> Option<Outcome> {
    let verdicts: Vec<Verdict> = v.rows.iter().map(|r| r.judged.verdict).collect();
    if verdicts.contains(&Verdict::Regressed) {
        Some(Outcome::Bad)
    } else if !verdicts.is_empty()
        && verdicts.iter().all(|v| matches!(v, Verdict::Same | Verdict::Improved))
    {
        Some(Outcome::Good)
    } else {
        None
    }
}

/// The verdict rows as the state keeps them.
pub fn evidence(v: &Verdicts) -> Vec<Evidence> {
    v.rows
        .iter()
        .map(|r| Evidence {
            cell: r.cell.key.clone(),
            figure: r.metric.name().to_string(),
            judged: r.judged.clone(),
        })
        .collect()
}

/// A p-value in a few characters.
fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p >= 0.001 => format!("p {p:.4}"),
        Some(p) => format!("p {p:.1e}"),
        None => "p -".into(),
    }
}

/// A row in one line: `wall +5.1% [3.9, 6.3] p 0.0002` (the change of the geometric means
/// and its interval, in percent; p adjusted over the family).
pub fn row_text(e: &Evidence) -> String {
    let j: &Judged = &e.judged;
    let pct = |r: f64| (r - 1.0) * 100.0;
    let change = match (j.ratio, j.ratio_lo, j.ratio_hi) {
        (Some(r), Some(lo), Some(hi)) => {
            format!("{:+.1}% [{:.1}, {:.1}]", pct(r), pct(lo), pct(hi))
        }
        (Some(r), ..) => format!("{:+.1}%", pct(r)),
        _ => "not judged".into(),
    };
    format!("{} {change} {}", e.figure, p_text(j.p_adjusted))
}

/// The row that tells a step's story: the regressed row with the smallest p for a bad
/// revision, else the row that moved most.
fn telling(t: &Tested) -> Option<&Evidence> {
    let p = |e: &&Evidence| e.judged.p_adjusted.unwrap_or(1.0);
    let moved = |e: &&Evidence| e.judged.ratio.map_or(0.0, |r| r.ln().abs());
    match t.outcome {
        Outcome::Bad => t
            .evidence
            .iter()
            .filter(|e| e.judged.verdict == Verdict::Regressed)
            .min_by(|a, b| p(a).total_cmp(&p(b))),
        _ => t.evidence.iter().max_by(|a, b| moved(a).total_cmp(&moved(b))),
    }
}

/// A step's line: `[3/6] abc1234: regressed wall +5.1% [3.9, 6.3] p 0.0002 (10 per arm)`.
pub fn step_line(step: usize, of: usize, t: &Tested) -> String {
    let short = &t.rev[..t.rev.len().min(7)];
    let what = match t.outcome {
        Outcome::Skipped => {
            return format!("[{step}/{of}] {short}: skipped: {}", t.why.as_deref().unwrap_or("?"))
        }
        Outcome::Bad => "regressed",
        Outcome::Good => "good",
        Outcome::UndecidedAtCap => "undecided at the cap (counted good)",
    };
    let row = telling(t).map(|e| {
        let cells: Vec<&str> = t.evidence.iter().map(|e| e.cell.as_str()).collect();
        let many = cells.iter().any(|c| *c != cells[0]);
        format!(" {}{}", row_text(e), if many { format!(" in {}", e.cell) } else { String::new() })
    });
    format!("[{step}/{of}] {short}: {what}{} ({} per arm)", row.unwrap_or_default(), t.per_arm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::{CellParams, Sample};

    fn rec(workload: &str, rep: u32, wall: f64) -> CellRecord {
        CellRecord {
            params: CellParams {
                key: format!("{workload}/other/n1"),
                workload: workload.into(),
                ..Default::default()
            },
            rep,
            makespan_s: wall,
            samples: vec![Sample { wall_s: wall, pid: 1, ..Default::default() }],
            ..Default::default()
        }
    }

    fn arms() -> Arms {
        let w = |n: &str, arm| (format!("work-{n}"), "work".to_string(), arm);
        Arms { text: String::new(), workloads: vec![w("good", 0), w("test", 1)] }
    }

    fn records(slower: f64) -> Vec<CellRecord> {
        let mut out = Vec::new();
        for i in 0..6 {
            let jitter = 1.0 + 0.002 * (i % 3) as f64;
            out.push(rec("work-good", i, jitter));
            out.push(rec("work-test", i, jitter * slower));
        }
        out
    }

    #[test]
    fn the_arms_meet_in_one_cell_without_their_names() {
        let [good, test] = split(&records(1.0), &arms());
        assert_eq!(good.len(), 6);
        assert!(good
            .iter()
            .chain(&test)
            .all(|r| r.params.key == "work/other/n1" && r.params.workload == "work"));
    }

    #[test]
    fn a_slower_revision_is_bad_and_an_equal_one_good() {
        let figures = [Metric::WallPerProc];
        let v = verdicts(&records(1.3), &arms(), &figures, Params::default(), (1, 2));
        assert_eq!(v.rows.len(), 1);
        assert_eq!(decide(&v), Some(Outcome::Bad));
        let t = Tested {
            rev: "0123456789".into(),
            outcome: Outcome::Bad,
            per_arm: 6,
            runs: vec![1, 2],
            evidence: evidence(&v),
            why: None,
        };
        let line = step_line(3, 6, &t);
        assert!(line.starts_with("[3/6] 0123456: regressed wall +30."), "{line}");
        assert!(line.ends_with("(6 per arm)"), "{line}");
        let v = verdicts(&records(1.0), &arms(), &figures, Params::default(), (1, 2));
        assert_eq!(decide(&v), Some(Outcome::Good));
        assert!(good_has_values(&records(1.0), &arms(), &figures));
    }
}
