//! Schedulability at scale (issue #32): over a batch of generated task sets per
//! utilisation, the fraction each scheduler (simulated) and each analytical test accepts,
//! with Wilson score intervals, and the weighted schedulability that sums a curve up in
//! one number; and the seed's violations per process over the same sets. Under `dwcs`, and
//! for the DWCS feasibility test, whose verdicts depend on the tasks' (x, y) windows, a line
//! per window (`dwcs 1/2`).

use crate::{Domain, Summary};
use schedlab_model::sets::TaskSetRow;

/// The two-sided 95% normal quantile, z_{0.975}.
const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of a proportion, `accepted` of `n`, at normal quantile `z`
/// (1.96 for 95%): (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), p = accepted/n.
/// Wilson (1927), "Probable inference, the law of succession, and statistical inference",
/// JASA 22(158); recommended over the normal (Wald) interval, which collapses to a point at 0
/// and n and undercovers near them, by Newcombe (1998), "Two-sided confidence intervals for
/// the single proportion", Statistics in Medicine 17(8), and Brown, Cai & DasGupta (2001),
/// Statistical Science 16(2). It stays inside [0, 1]. (NaN, NaN) for n = 0.
pub fn wilson(accepted: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let (k, n) = (accepted.min(n) as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At 0 and n the bound is exactly 0 or 1 (rounding would leave 1e-18).
    let low = if k == 0.0 { 0.0 } else { (centre - half).max(0.0) };
    let high = if k == n { 1.0 } else { (centre + half).min(1.0) };
    (low, high)
}

/// Weighted schedulability of a curve of (utilisation, acceptance ratio) points:
/// sum U r(U) / sum U, which weighs the high utilisations where schedulers differ more
/// (Bastoni, Brandenburg & Anderson 2010, "Cache-related preemption and migration delays:
/// empirical approximation and impact on schedulability analysis", OSPERT). NaN without a
/// positive utilisation.
pub fn weighted_schedulability(points: &[(f64, f64)]) -> f64 {
    let total: f64 = points.iter().map(|p| p.0).sum();
    if total > 0.0 {
        points.iter().map(|(u, r)| u * r).sum::<f64>() / total
    } else {
        f64::NAN
    }
}

/// One utilisation of an acceptance curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AcceptancePoint {
    /// The utilisation the sets were generated for.
    pub utilisation: f64,
    /// Sets judged.
    pub sets: u64,
    /// Sets accepted.
    pub accepted: u64,
    /// accepted / sets.
    pub ratio: f64,
    /// Lower end of the 95% Wilson interval.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// Acceptance against utilisation: a scheduler's simulated outcome or a test's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptanceCurve {
    /// The CPUs the sets ran on (1, or those they were partitioned over).
    pub cpus: u32,
    /// The scheduler or the test.
    pub name: String,
    /// True for a scheduler's simulated outcome, false for an analytical test.
    pub simulated: bool,
    /// Points in increasing utilisation.
    pub points: Vec<AcceptancePoint>,
    /// [`weighted_schedulability`] of the points.
    pub weighted: f64,
}

/// Schedulers whose verdict depends on the tasks' windows (no window violation): a line per
/// window.
const WINDOW_SCHEDULERS: &[&str] = &["dwcs"];

/// Tests whose verdict depends on the tasks' windows: a line per window.
const WINDOW_TESTS: &[&str] = &["dwcs"];

/// `name`, with the set's window (`dwcs 1/2`) when the verdict depends on it. A generated
/// set's tasks share one window.
fn with_window(name: &str, r: &TaskSetRow, windowed: bool) -> String {
    match r.tasks.first() {
        Some(t) if windowed => format!("{name} {}/{}", t.x, t.y),
        _ => name.to_string(),
    }
}

/// Each line's (utilisation, accepted, n) tallies, in order of first appearance.
type Tallies = Vec<((u32, String, bool), Vec<(f64, u64, u64)>)>;

fn tally(lines: &mut Tallies, key: (u32, String, bool), u: f64, accepted: bool) {
    let i = match lines.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            lines.push((key, Vec::new()));
            lines.len() - 1
        }
    };
    let points = &mut lines[i].1;
    let j = match points.iter().position(|p| p.0 == u) {
        Some(j) => j,
        None => {
            points.push((u, 0, 0));
            points.len() - 1
        }
    };
    points[j].1 += u64::from(accepted);
    points[j].2 += 1;
}

/// The acceptance curves of a run's stored sets: per CPU count, a curve per scheduler (its
/// simulated verdicts) and one per analytical test. The tests see the same sets under every
/// scheduler, so each set (by CPU count, utilisation and seed) is counted once for them.
/// Sets that could not be generated are left out; a set the scheduler refused (admission)
/// counts as not accepted. Curves by CPU count, schedulers first, in order of appearance.
pub fn acceptance(rows: &[TaskSetRow]) -> Vec<AcceptanceCurve> {
    let mut lines: Tallies = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in rows.iter().filter(|r| !r.tasks.is_empty()) {
        let name = with_window(&r.scheduler, r, WINDOW_SCHEDULERS.contains(&r.scheduler.as_str()));
        tally(&mut lines, (r.cpus, name, true), r.utilisation, r.schedulable);
        for (test, v) in &r.tests {
            let windowed = WINDOW_TESTS.contains(&test.as_str());
            // The same set under another scheduler (or, for a test that ignores windows,
            // with another window) is counted once.
            let tasks: Vec<(u64, u64, u64, u32, u32)> = r
                .tasks
                .iter()
                .map(|t| {
                    (
                        t.c_ns,
                        t.t_ns,
                        t.d_ns,
                        if windowed { t.x } else { 0 },
                        if windowed { t.y } else { 0 },
                    )
                })
                .collect();
            if seen.insert((r.cpus, r.utilisation.to_bits(), r.seed, test.clone(), tasks)) {
                let name = with_window(test, r, windowed);
                tally(&mut lines, (r.cpus, name, false), r.utilisation, v.accepted());
            }
        }
    }
    let mut curves: Vec<AcceptanceCurve> = lines
        .into_iter()
        .map(|((cpus, name, simulated), mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let points: Vec<AcceptancePoint> = pts
                .into_iter()
                .map(|(utilisation, accepted, sets)| {
                    let (low, high) = wilson(accepted, sets, Z95);
                    AcceptancePoint {
                        utilisation,
                        sets,
                        accepted,
                        ratio: accepted as f64 / sets as f64,
                        low,
                        high,
                    }
                })
                .collect();
            let weighted = weighted_schedulability(
                &points.iter().map(|p| (p.utilisation, p.ratio)).collect::<Vec<_>>(),
            );
            AcceptanceCurve { cpus, name, simulated, points, weighted }
        })
        .collect();
    // Stable: within a CPU count, schedulers then tests, each in order of appearance.
    curves.sort_by_key(|c| (c.cpus, !c.simulated));
    curves
}

/// The seed's figure over a batch: sliding-window violations per process (per task of the
/// set) at each utilisation, per CPU count and scheduler, as the mean over the sets with its
/// 95% interval.
pub fn violations_per_process(rows: &[TaskSetRow]) -> Vec<ViolationCurve> {
    let mut groups: Vec<((u32, String), ByUtilisation)> = Vec::new();
    for r in rows.iter().filter(|r| !r.tasks.is_empty() && r.message.is_none()) {
        let windowed = WINDOW_SCHEDULERS.contains(&r.scheduler.as_str());
        let key = (r.cpus, with_window(&r.scheduler, r, windowed));
        let i = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                groups.push((key, Vec::new()));
                groups.len() - 1
            }
        };
        let value = r.violations as f64 / r.tasks.len() as f64;
        match groups[i].1.iter_mut().find(|(u, _)| *u == r.utilisation) {
            Some((_, v)) => v.push(value),
            None => groups[i].1.push((r.utilisation, vec![value])),
        }
    }
    groups.sort_by_key(|((cpus, _), _)| *cpus);
    groups
        .into_iter()
        .map(|((cpus, name), mut by_u)| {
            by_u.sort_by(|a, b| a.0.total_cmp(&b.0));
            let points = by_u
                .into_iter()
                .filter_map(|(u, v)| Summary::in_domain(&v, Domain::NonNegative).map(|s| (u, s)))
                .collect();
            ViolationCurve { cpus, scheduler: name, points }
        })
        .collect()
}

/// Values per utilisation, in order of appearance.
type ByUtilisation = Vec<(f64, Vec<f64>)>;

/// A scheduler's violations per process against utilisation over a batch's sets.
#[derive(Debug, Clone, PartialEq)]
pub struct ViolationCurve {
    /// The CPUs the sets ran on.
    pub cpus: u32,
    /// The scheduler.
    pub scheduler: String,
    /// (utilisation, the mean over the sets with its interval), increasing utilisation.
    pub points: Vec<(f64, Summary)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::sets::{SetTask, SetVerdict};

    #[test]
    fn wilson_matches_newcombes_worked_values() {
        // Newcombe (1998), Table I: 81/263 -> 0.2553 to 0.3662; 0/20 -> 0 to 0.1611.
        let (lo, hi) = wilson(81, 263, Z95);
        assert!((lo - 0.2553).abs() < 5e-5 && (hi - 0.3662).abs() < 5e-5, "{lo} {hi}");
        let (lo, hi) = wilson(0, 20, Z95);
        assert!(lo == 0.0 && (hi - 0.1611).abs() < 5e-5, "{lo} {hi}");
        // Symmetric: n/n mirrors 0/n.
        let (lo1, hi1) = wilson(20, 20, Z95);
        assert!((lo1 - (1.0 - 0.1611)).abs() < 5e-5 && hi1 == 1.0);
        assert!(wilson(0, 0, Z95).0.is_nan());
    }

    #[test]
    fn weighted_schedulability_of_a_hand_example() {
        // (0.5 x 1 + 1.0 x 0.5) / (0.5 + 1.0) = 2/3.
        let w = weighted_schedulability(&[(0.5, 1.0), (1.0, 0.5)]);
        assert!((w - 2.0 / 3.0).abs() < 1e-12, "{w}");
        assert_eq!(weighted_schedulability(&[(0.25, 1.0), (0.75, 1.0)]), 1.0);
        assert!(weighted_schedulability(&[]).is_nan());
    }

    fn row(scheduler: &str, u: f64, seed: u64, ok: bool, test: SetVerdict) -> TaskSetRow {
        TaskSetRow {
            cell_id: 0,
            index: seed as u32,
            seed,
            scheduler: scheduler.into(),
            utilisation: u,
            plain_utilisation: u,
            min_utilisation: u,
            cpus: 1,
            tasks: vec![SetTask { c_ns: 1, t_ns: 2, d_ns: 2, x: 0, y: 0 }; 2],
            jobs: 10,
            misses: u64::from(!ok),
            violations: 2 * u64::from(!ok),
            schedulable: ok,
            tests: vec![("edf-qpa".into(), test)],
            message: None,
            jobs_log: None,
        }
    }

    #[test]
    fn curves_count_each_set_once_per_test_and_once_per_scheduler() {
        use SetVerdict::{No, Unknown, Yes};
        let rows = vec![
            row("edf", 0.5, 1, true, Yes),
            row("edf", 0.5, 2, true, Yes),
            row("edf", 1.0, 3, true, Yes),
            row("edf", 1.0, 4, false, No),
            // The same sets under rm: the test's verdicts are not counted again.
            row("fifo-rm", 0.5, 1, true, Yes),
            row("fifo-rm", 0.5, 2, true, Yes),
            row("fifo-rm", 1.0, 3, false, Yes),
            row("fifo-rm", 1.0, 4, false, Unknown),
        ];
        let c = acceptance(&rows);
        let names: Vec<(&str, bool)> = c.iter().map(|c| (c.name.as_str(), c.simulated)).collect();
        assert_eq!(names, [("edf", true), ("fifo-rm", true), ("edf-qpa", false)]);
        let ratios = |i: usize| c[i].points.iter().map(|p| (p.sets, p.ratio)).collect::<Vec<_>>();
        assert_eq!(ratios(0), [(2, 1.0), (2, 0.5)]);
        assert_eq!(ratios(1), [(2, 1.0), (2, 0.0)]);
        assert_eq!(ratios(2), [(2, 1.0), (2, 0.5)], "counted once, from the first scheduler");
        assert!((c[0].weighted - 2.0 / 3.0).abs() < 1e-12);
        assert!((c[1].weighted - 1.0 / 3.0).abs() < 1e-12);
        let p = c[0].points[1];
        assert_eq!((p.low, p.high), wilson(1, 2, Z95));
        // DWCS with two windows over the same sets: a line per window, the test once per set
        // but per window, edf-qpa not counted again.
        let mut windows = rows.clone();
        for (k, w) in [(1, 2), (0, 1)] {
            for mut r in [row("dwcs", 0.5, 1, k == 1, Yes), row("dwcs", 0.5, 2, true, Yes)] {
                r.tests.push(("dwcs".into(), if k == 1 { Yes } else { No }));
                r.tasks.iter_mut().for_each(|t| (t.x, t.y) = (k, w));
                windows.push(r);
            }
        }
        let c = acceptance(&windows);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["edf", "fifo-rm", "dwcs 1/2", "dwcs 0/1", "edf-qpa", "dwcs 1/2", "dwcs 0/1"]
        );
        assert_eq!(c[4].points[0].sets, 2, "edf-qpa: the same two sets at 0.5");
        assert_eq!((c[3].points[0].sets, c[3].points[0].accepted), (2, 1));
        assert_eq!((c[6].points[0].sets, c[6].points[0].accepted), (2, 0));
        let v = violations_per_process(&rows);
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[1].points[1].1.mean, 1.0,
            "rm at 1.0: two sets, each 2 violations over 2 tasks"
        );
    }
}
