//! The figures of a run's batches of generated task sets (issue #32): acceptance ratio
//! against utilisation, a solid line per scheduler (simulated) and a dashed one per
//! analytical test, with 95% Wilson intervals, one chart per CPU count; and the seed's
//! violations per process against utilisation, the mean over the sets.

use super::{Chart, ChartKind, FigureInput, Point, Series};
use schedlab_analysis::{acceptance as curves, rt, violations_per_process, RtStats};

fn u_label(u: f64) -> String {
    u.to_string()
}

/// The increasing utilisations of `us`, deduplicated.
fn categories(us: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = us.collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn cpus_suffix(cpus: u32) -> (String, String) {
    if cpus == 1 {
        ("-1cpu".into(), "one CPU".into())
    } else {
        (format!("-{cpus}cpus"), format!("{cpus} CPUs (partitioned)"))
    }
}

/// Acceptance ratio against utilisation, per CPU count.
pub(super) fn acceptance(d: &FigureInput) -> Vec<Chart> {
    acceptance_charts(d.sets).into_iter().map(|(_, c)| c).collect()
}

/// The measured sets of a run (`generate = { sets = N, live = k }`: the first k of each
/// batch, measured by `run`) against the acceptance curves of the batches they come from
/// (`report SIM --compare MEASURED`): per CPU count, a line per workload and scheduler of the
/// measured run, the fraction of its measured sets at each utilisation with no deadline miss
/// in any repetition (under dwcs, no violated window), with 95% Wilson intervals; the caption
/// gives the simulated verdicts of the same sets beside them. Only charts with a measured
/// set are drawn.
pub(super) fn acceptance_with_measured(
    sets: &[schedlab_model::sets::TaskSetRow],
    measured: &[RtStats],
    label: &str,
) -> Vec<Chart> {
    let mut out = Vec::new();
    for (cpus, c) in acceptance_charts(sets) {
        let groups = measured_at(measured, cpus, &c.categories, label, |_| true);
        // Per point: measured sets accepted, measured, and accepted in simulation.
        let tallies: Vec<(&String, &String, u64, u64, u64)> = groups
            .iter()
            .map(|((name, x), cells)| {
                let (mut a, mut sim) = (0, 0);
                for s in cells {
                    let clean = if s.scheduler == "dwcs" {
                        &s.figures[&rt::SLIDING_VIOLATIONS]
                    } else {
                        &s.figures[&rt::MISSES]
                    };
                    a += u64::from(clean.n > 0 && clean.mean == 0.0);
                    let set = s.params.groups.first().and_then(|g| g.set);
                    sim += u64::from(sets.iter().any(|r| {
                        Some(r.index) == set
                            && r.cpus == cpus
                            && r.scheduler == s.scheduler
                            && Some(r.utilisation) == s.utilisation
                            && r.schedulable
                    }));
                }
                (name, &c.categories[*x], a, cells.len() as u64, sim)
            })
            .collect();
        let points = groups.iter().zip(&tallies).map(|(((name, x), _), (_, _, a, n, _))| {
            let (lo, hi) = schedlab_analysis::acceptance::wilson(*a, *n, 1.96);
            let y = *a as f64 / *n as f64;
            (name.clone(), Point { x: *x, y, lo, hi, no_bar: None })
        });
        let Some(extra) = super::series_of(points) else { continue };
        let same: Vec<String> = tallies
            .iter()
            .map(|(name, u, a, n, sim)| {
                format!("{name} at {u}: measured {a}/{n}, simulated {sim}/{n}")
            })
            .collect();
        out.push(on_top(c, extra, "acceptance", label, &format!(
            " On top, solid, a line per workload and scheduler of {label}: the fraction of the sets it measured live (the first of each batch) with no deadline miss in any repetition (under dwcs no violated window), Wilson bars. The same sets, measured and simulated: {}.",
            same.join("; ")
        )));
    }
    out
}

/// The measured cells of a run that belong on a chart of `cpus` CPUs whose x axis is
/// `categories` (utilisations), grouped by (series name under `label`, x) in order of
/// appearance: a batch measured live has several sets at a utilisation.
fn measured_at<'a>(
    measured: &'a [RtStats],
    cpus: u32,
    categories: &[String],
    label: &str,
    keep: impl Fn(&RtStats) -> bool,
) -> Vec<((String, usize), Vec<&'a RtStats>)> {
    let mut at: Vec<((String, usize), Vec<&RtStats>)> = Vec::new();
    let cells = measured.iter().filter(|s| s.reps > 0 && s.per_cpu.len().max(1) == cpus as usize);
    for s in cells.filter(|s| keep(s)) {
        let Some(u) = s.utilisation.map(u_label) else { continue };
        let Some(x) = categories.iter().position(|c| *c == u) else { continue };
        let key = (format!("{}/{}, {label}", s.params.workload, s.scheduler), x);
        match at.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(s),
            None => at.push((key, vec![s])),
        }
    }
    at
}

/// Chart `c` with the measured series `extra` on top: its id `kind-measured-...`, its title
/// naming `label`, `caption` appended.
fn on_top(
    mut c: Chart,
    extra: Vec<super::Series>,
    kind: &str,
    label: &str,
    caption: &str,
) -> Chart {
    c.series.extend(extra);
    c.id = c.id.replacen(kind, &format!("{kind}-measured"), 1);
    c.title.push_str(&format!(", with {label}"));
    c.caption.push_str(caption);
    c
}

/// The acceptance charts of `sets`, one per CPU count, with that count.
fn acceptance_charts(sets: &[schedlab_model::sets::TaskSetRow]) -> Vec<(u32, Chart)> {
    let all = curves(sets);
    let mut cpus: Vec<u32> = all.iter().map(|c| c.cpus).collect();
    cpus.dedup();
    cpus.into_iter()
        .map(|m| {
            let mine: Vec<_> = all.iter().filter(|c| c.cpus == m).collect();
            let us = categories(mine.iter().flat_map(|c| c.points.iter().map(|p| p.utilisation)));
            let series = mine
                .iter()
                .enumerate()
                .map(|(i, c)| Series {
                    name: if c.simulated { c.name.clone() } else { format!("{} (test)", c.name) },
                    points: c
                        .points
                        .iter()
                        .map(|p| Point {
                            x: us.iter().position(|u| *u == p.utilisation).unwrap_or(0),
                            y: p.ratio,
                            lo: p.low,
                            hi: p.high,
                            no_bar: None,
                        })
                        .collect(),
                    curve: Vec::new(),
                    colour: Some(i),
                    dashed: !c.simulated,
                })
                .collect();
            let weighted: Vec<String> = mine
                .iter()
                .map(|c| {
                    format!(
                        "{}{} {:.3}",
                        c.name,
                        if c.simulated { "" } else { " (test)" },
                        c.weighted
                    )
                })
                .collect();
            let sets = mine.first().and_then(|c| c.points.first()).map_or(0, |p| p.sets);
            let (id, on) = cpus_suffix(m);
            let chart = Chart {
                kind: ChartKind::Lines,
                id: format!("acceptance{id}"),
                title: format!("Acceptance ratio against utilisation, {on}"),
                caption: format!(
                    "Fraction of the generated sets ({sets} per utilisation) each scheduler schedules in simulation (solid: \
                     no deadline miss, under dwcs no window violation) and each analytical test accepts (dashed; \
                     a sufficient test's unknown counts as not accepted); bars: 95% Wilson intervals. Weighted \
                     schedulability (sum U ratio(U) / sum U, Bastoni, Brandenburg & Anderson 2010): {}.",
                    weighted.join(", ")
                ),
                x_label: "utilisation the sets were generated for".into(),
                y_label: "sets accepted [fraction]".into(),
                categories: us.into_iter().map(u_label).collect(),
                series,
                reference: None,
                states: Default::default(),
            };
            (m, chart)
        })
        .collect()
}

/// The seed's "average violations per process" over the batches, per CPU count.
pub(super) fn violations(d: &FigureInput) -> Vec<Chart> {
    violation_charts(d.sets).into_iter().map(|(_, c)| c).collect()
}

/// [`violations`] with the measured cells of another run on top (`report SIM --compare
/// MEASURED`: the sets `run` measured live), a series per workload and scheduler from its cells' own
/// violations per process, under `label`. Only charts with a measured point are drawn.
pub(super) fn violations_with_measured(
    sets: &[schedlab_model::sets::TaskSetRow],
    measured: &[RtStats],
    label: &str,
) -> Vec<Chart> {
    let mut out = Vec::new();
    for (cpus, c) in violation_charts(sets) {
        let finite = |s: &RtStats| s.figures[&rt::SLIDING_VIOLATIONS].mean.is_finite();
        // Several sets at a utilisation: their mean, the bar their range.
        let points = measured_at(measured, cpus, &c.categories, label, finite).into_iter().map(
            |((name, x), cells)| {
                let vs: Vec<f64> =
                    cells.iter().map(|s| s.figures[&rt::SLIDING_VIOLATIONS].mean).collect();
                let y = vs.iter().sum::<f64>() / vs.len() as f64;
                let (lo, hi) = vs
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
                (name, Point { x, y, lo, hi, no_bar: None })
            },
        );
        let Some(extra) = super::series_of(points) else { continue };
        out.push(on_top(c, extra, "set-violations", label, &format!(
            " On top, a line per workload and scheduler of {label}: the sets it measured live (the first of each batch), each point the mean over those sets of each set's violations per process (itself a mean over its repetitions), the bar their range."
        )));
    }
    out
}

/// The violation charts of `sets`, one per CPU count, with that count.
fn violation_charts(sets: &[schedlab_model::sets::TaskSetRow]) -> Vec<(u32, Chart)> {
    let all = violations_per_process(sets);
    let mut cpus: Vec<u32> = all.iter().map(|c| c.cpus).collect();
    cpus.dedup();
    cpus.into_iter()
        .map(|m| {
            let mine: Vec<_> = all.iter().filter(|c| c.cpus == m).collect();
            let us = categories(mine.iter().flat_map(|c| c.points.iter().map(|p| p.0)));
            let series = mine
                .iter()
                .enumerate()
                .map(|(i, c)| Series {
                    name: c.scheduler.clone(),
                    points: c
                        .points
                        .iter()
                        .map(|(u, s)| Point {
                            x: us.iter().position(|v| v == u).unwrap_or(0),
                            y: s.mean,
                            lo: if s.ci_low.is_finite() { s.ci_low } else { s.mean },
                            hi: if s.ci_high.is_finite() { s.ci_high } else { s.mean },
                            no_bar: None,
                        })
                        .collect(),
                    curve: Vec::new(),
                    colour: Some(i),
                    dashed: false,
                })
                .collect();
            let (id, on) = cpus_suffix(m);
            let chart = Chart {
                kind: ChartKind::Lines,
                id: format!("set-violations{id}"),
                title: format!("Violations per process over the generated sets, {on}"),
                caption: "Sliding-window violations (more than x of y consecutive deadlines missed) per task, the mean \
                          over each utilisation's generated sets, simulated; bars: 95% t intervals over the sets."
                    .into(),
                x_label: "utilisation the sets were generated for".into(),
                y_label: "sliding-window violations per process".into(),
                categories: us.into_iter().map(u_label).collect(),
                series,
                reference: None,
                states: Default::default(),
            };
            (m, chart)
        })
        .collect()
}
