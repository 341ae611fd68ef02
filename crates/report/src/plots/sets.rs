//! The figures of a run's batches of generated task sets (issue #32): acceptance ratio
//! against utilisation, a solid line per scheduler (simulated) and a dashed one per
//! analytical test, with 95% Wilson intervals, one chart per CPU count; and the seed's
//! violations per process against utilisation, the mean over the sets.

use super::{point, Chart, ChartKind, FigureInput, Point, Series};
use schedlab_analysis::{acceptance as curves, violations_per_process, RtStats};

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
    let all = curves(d.sets);
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
            Chart {
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
            }
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
    for (cpus, mut c) in violation_charts(sets) {
        let points = measured
            .iter()
            .filter(|s| s.reps > 0 && s.per_cpu.len().max(1) == cpus as usize)
            .filter(|s| s.sliding_violations_per_proc.mean.is_finite())
            .filter_map(|s| {
                let u = s.utilisation.map(u_label)?;
                let x = c.categories.iter().position(|c| *c == u)?;
                let name = format!("{}/{}, {label}", s.params.workload, s.scheduler);
                Some((name, point(x, &s.sliding_violations_per_proc)))
            });
        let Some(extra) = super::series_of(points) else { continue };
        c.series.extend(extra);
        c.id = c.id.replace("set-violations", "set-violations-measured");
        c.title.push_str(&format!(", with {label}"));
        c.caption.push_str(&format!(
            " On top, a line per workload and scheduler of {label}: the sets it measured live (set 0 of each cell), each point that cell's own violations per process, mean over its repetitions."
        ));
        out.push(c);
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
