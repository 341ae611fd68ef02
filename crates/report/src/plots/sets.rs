//! The figures of a run's batches of generated task sets (issue #32): acceptance ratio
//! against utilisation, a solid line per scheduler (simulated) and a dashed one per
//! analytical test, with 95% Wilson intervals, one chart per CPU count; and the seed's
//! violations per process against utilisation, the mean over the sets.

use super::{Chart, ChartKind, FigureInput, Point, Series};
use schedlab_analysis::{acceptance as curves, rt, violations_per_process, RtStats};
use schedlab_model::sets::TaskSetRow;

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

/// Charts of the batches, one per CPU count, with that count.
type PerCpus = Vec<(u32, Chart)>;

/// What goes on top of a batch chart `c` of `cpus` CPUs from the measured cells of a run
/// under `label`: the series and what the caption adds; None without a measured point.
type OnTop = fn(&[TaskSetRow], &[RtStats], &str, u32, &Chart) -> Option<(Vec<Series>, String)>;

/// The batches' figures with the measured cells of another run on top (`report SIM --compare
/// MEASURED`: the sets `run` measured live, `generate = { sets = N, live = k }`, under
/// `label`): the acceptance curves, then the violations per process. Only charts with a
/// measured point are drawn.
pub(super) fn with_measured(sets: &[TaskSetRow], measured: &[RtStats], label: &str) -> Vec<Chart> {
    let figures: [(PerCpus, &str, OnTop); 2] = [
        (acceptance_charts(sets), "acceptance", measured_acceptance),
        (violation_charts(sets), "set-violations", measured_violations),
    ];
    let mut out = Vec::new();
    for (charts, kind, extra) in figures {
        for (cpus, c) in charts {
            if let Some((series, caption)) = extra(sets, measured, label, cpus, &c) {
                out.push(on_top(c, series, kind, label, &caption));
            }
        }
    }
    out
}

/// On an acceptance chart: per workload and scheduler of the measured run, the fraction of
/// its measured sets at each utilisation with no deadline miss in any repetition (under
/// dwcs, no violated window), with 95% Wilson intervals; the caption gives the simulated
/// verdicts of the same sets beside them.
fn measured_acceptance(
    sets: &[TaskSetRow],
    measured: &[RtStats],
    label: &str,
    cpus: u32,
    c: &Chart,
) -> Option<(Vec<Series>, String)> {
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
    let extra = super::series_of(points)?;
    let same: Vec<String> = tallies
        .iter()
        .map(|(name, u, a, n, sim)| format!("{name} at {u}: measured {a}/{n}, simulated {sim}/{n}"))
        .collect();
    Some((extra, format!(
        " On top, solid, a line per workload and scheduler of {label}: the fraction of the sets it measured live (the first of each batch) with no deadline miss in any repetition (under dwcs no violated window), Wilson bars. The same sets, measured and simulated: {}.",
        same.join("; ")
    )))
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

/// `all` by CPU count, the counts in the order they come in.
fn by_cpus<T>(all: &[T], cpus: impl Fn(&T) -> u32) -> Vec<(u32, Vec<&T>)> {
    let mut counts: Vec<u32> = all.iter().map(&cpus).collect();
    counts.dedup();
    counts.into_iter().map(|m| (m, all.iter().filter(|c| cpus(c) == m).collect())).collect()
}

/// A chart of the batches on `cpus` CPUs against the utilisations `us` they were generated
/// for: its id `kind` and its title `what`, each with the CPUs added.
fn batch_chart(
    kind: &str,
    what: &str,
    cpus: u32,
    us: Vec<f64>,
    caption: String,
    y_label: &str,
    series: Vec<Series>,
) -> Chart {
    let (id, on) = cpus_suffix(cpus);
    Chart {
        kind: ChartKind::Lines,
        id: format!("{kind}{id}"),
        title: format!("{what}, {on}"),
        caption,
        x_label: "utilisation the sets were generated for".into(),
        y_label: y_label.into(),
        categories: us.into_iter().map(u_label).collect(),
        series,
        reference: None,
        states: Default::default(),
    }
}

/// The acceptance charts of `sets`, one per CPU count, with that count.
fn acceptance_charts(sets: &[TaskSetRow]) -> PerCpus {
    let all = curves(sets);
    by_cpus(&all, |c| c.cpus)
        .into_iter()
        .map(|(m, mine)| {
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
            let caption = format!(
                    "Fraction of the generated sets ({sets} per utilisation) each scheduler schedules in simulation (solid: \
                     no deadline miss, under dwcs no window violation) and each analytical test accepts (dashed; \
                     a sufficient test's unknown counts as not accepted); bars: 95% Wilson intervals. Weighted \
                     schedulability (sum U ratio(U) / sum U, Bastoni, Brandenburg & Anderson 2010): {}.",
                    weighted.join(", ")
                );
            let title = "Acceptance ratio against utilisation";
            (m, batch_chart("acceptance", title, m, us, caption, "sets accepted [fraction]", series))
        })
        .collect()
}

/// The seed's "average violations per process" over the batches, per CPU count.
pub(super) fn violations(d: &FigureInput) -> Vec<Chart> {
    violation_charts(d.sets).into_iter().map(|(_, c)| c).collect()
}

/// On a [`violations`] chart: a series per workload and scheduler of the measured run from
/// its cells' own violations per process.
fn measured_violations(
    _sets: &[TaskSetRow],
    measured: &[RtStats],
    label: &str,
    cpus: u32,
    c: &Chart,
) -> Option<(Vec<Series>, String)> {
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
    let extra = super::series_of(points)?;
    Some((extra, format!(
        " On top, a line per workload and scheduler of {label}: the sets it measured live (the first of each batch), each point the mean over those sets of each set's violations per process (itself a mean over its repetitions), the bar their range."
    )))
}

/// The violation charts of `sets`, one per CPU count, with that count.
fn violation_charts(sets: &[TaskSetRow]) -> PerCpus {
    let all = violations_per_process(sets);
    by_cpus(&all, |c| c.cpus)
        .into_iter()
        .map(|(m, mine)| {
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
            let caption = "Sliding-window violations (more than x of y consecutive deadlines missed) per task, the mean \
                           over each utilisation's generated sets, simulated; bars: 95% t intervals over the sets."
                .into();
            let title = "Violations per process over the generated sets";
            let y = "sliding-window violations per process";
            (m, batch_chart("set-violations", title, m, us, caption, y, series))
        })
        .collect()
}

/// The knee charts of a live run of generated sets (issue #40, item 4): per scheduler and
/// family, the acceptance of the sets the run measured, four ways side by side (measured,
/// simulated solid; the plain test and its overhead-aware twin dashed), Wilson bars; the
/// caption gives each knee.
pub(super) fn knees(sets: &[schedlab_analysis::knee::KneeSet]) -> Vec<Chart> {
    use schedlab_analysis::knee::{judge, Method, METHODS};
    let mut out = Vec::new();
    for k in schedlab_analysis::knee::knees(sets) {
        let (plain, twin) = judge(&k.scheduler).unwrap_or(("plain test", "twin"));
        let names = ["measured", "simulated", plain, twin];
        let series: Vec<Series> = METHODS
            .iter()
            .zip(names)
            .filter(|(m, _)| k.judged(**m) > 0)
            .map(|(m, name)| Series {
                name: name.to_string(),
                points: k.curves[*m as usize]
                    .iter()
                    .map(|p| {
                        let (lo, hi) =
                            schedlab_analysis::acceptance::wilson(p.accepted, p.judged, 1.96);
                        let x = k.utilisations.iter().position(|u| *u == p.utilisation);
                        let y = p.accepted as f64 / p.judged as f64;
                        Point { x: x.unwrap_or(0), y, lo, hi, no_bar: None }
                    })
                    .collect(),
                curve: Vec::new(),
                colour: Some(*m as usize),
                dashed: matches!(m, Method::Plain | Method::Overheads),
            })
            .collect();
        let knee = |m: Method, name: &str| match (k.judged(m), k.knee(m)) {
            (0, _) => format!("{name} not judged"),
            (_, Some(u)) => format!("{name} {u}"),
            (_, None) => format!("{name} none"),
        };
        let said: Vec<String> = METHODS.iter().zip(names).map(|(m, n)| knee(*m, n)).collect();
        let caption = format!(
            "The sets run {} measured live under {} ({} of them), each judged four ways: measured \
             (no deadline miss in any repetition), simulated (the same set in the newest simulation \
             of the spec), {plain} (its plain test) and {twin} (its twin, with the newest \
             calibration's overheads); bars: 95% Wilson intervals. Knees (the lowest utilisation \
             with a miss or a rejection): {}.",
            k.family,
            k.scheduler,
            k.judged(Method::Measured),
            said.join(", ")
        );
        let mut c = batch_chart(
            &format!("knee-{}-{}", super::slug(&k.scheduler), super::slug(&k.family)),
            &format!("The knee of {} on {}", k.scheduler, k.family),
            1,
            k.utilisations.clone(),
            caption,
            "sets accepted [fraction]",
            series,
        );
        c.id = c.id.trim_end_matches("-1cpu").to_string();
        out.push(c);
    }
    out
}
