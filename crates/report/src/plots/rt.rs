//! Seed 003's figures, from the real-time statistics of a run's periodic task sets: window
//! violations per process, time in violation and the deadline miss ratio against the
//! utilisation the sets were generated for, one series per scheduler (and workload, when
//! the run has several); bars per scheduler instead when the run does not sweep
//! utilisation; the scheduling latency and response time distributions, a line per
//! scheduler; and, in a comparison, each shared cell's response times in run A and run B.

use super::{point, series_of, slug, Chart, ChartKind, FigureInput, Series};
use crate::labels::others;
use schedlab_analysis::rt::{self, RtFigure};
use schedlab_analysis::RtStats;

/// The cells drawn: those with at least one measured repetition.
fn drawn<'a>(d: &FigureInput<'a>) -> impl Iterator<Item = &'a RtStats> + 'a {
    d.rt.iter().filter(|s| s.reps > 0)
}

fn several_workloads(d: &FigureInput) -> bool {
    drawn(d).any(|s| s.params.workload != d.rt[0].params.workload)
}

/// The utilisation values of the drawn cells, in increasing order (a listed set, None, first).
fn utilisations(d: &FigureInput) -> Vec<Option<f64>> {
    let mut us: Vec<Option<f64>> = drawn(d).map(|s| s.utilisation).collect();
    us.sort_by(|a, b| a.unwrap_or(f64::NEG_INFINITY).total_cmp(&b.unwrap_or(f64::NEG_INFINITY)));
    us.dedup();
    us
}

fn u_label(u: Option<f64>) -> String {
    u.map_or_else(|| "listed set".into(), |u| u.to_string())
}

/// Whether the drawn cells differ in the groups the set competes with (e.g. quiet and under a
/// UDP flood): then a series names them, and a scheduler no longer has one colour.
fn competition_varies(d: &FigureInput) -> bool {
    let mut o = drawn(d).map(|s| others(&s.params));
    o.next().is_some_and(|first| o.any(|x| x != first))
}

/// `name`, extended by what the cell's set competes with (`dwcs vs 1 flood`) when `varies`.
fn vs(name: String, s: &RtStats, varies: bool) -> String {
    match others(&s.params) {
        o if varies && !o.is_empty() => format!("{name} vs {o}"),
        _ => name,
    }
}

/// The colour of a scheduler: its place among the run's schedulers (in cell order), so it
/// looks the same in every chart, whichever others a chart lacks; None (by position) when
/// the run's sets also differ in what they compete with.
fn scheduler_colour(d: &FigureInput, scheduler: &str) -> Option<usize> {
    if competition_varies(d) {
        return None;
    }
    categories(drawn(d).map(|s| s.scheduler.as_str())).iter().position(|c| c == scheduler)
}

/// Categories in order of first appearance.
fn categories<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.iter().any(|c| c == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// One chart of `pick` over the run's periodic cells: against the utilisation, a line per
/// scheduler (and workload), when the run sweeps it; otherwise bars per scheduler, a colour
/// per workload. Error bars stay within the quantity's range (analysis shapes them so).
fn by_utilisation(
    d: &FigureInput,
    id: &str,
    what: &str,
    y_label: &str,
    caption: &str,
    pick: &'static RtFigure,
) -> Vec<Chart> {
    let us = utilisations(d);
    let several = several_workloads(d);
    let competing = competition_varies(d);
    let usable = |s: &&RtStats| s.figures[pick].mean.is_finite();
    let chart = if us.len() > 1 {
        let points = drawn(d).filter(usable).map(|s| {
            let name = if several {
                format!("{}, {}", s.scheduler, s.params.workload)
            } else {
                s.scheduler.clone()
            };
            let x = us.iter().position(|u| *u == s.utilisation).unwrap_or(0);
            (vs(name, s, competing), point(x, &s.figures[pick]))
        });
        let Some(mut series) = series_of(points) else { return Vec::new() };
        if !several {
            for s in &mut series {
                s.colour = scheduler_colour(d, &s.name);
            }
        }
        Chart {
            kind: ChartKind::Lines,
            id: id.into(),
            title: format!("{what} against utilisation"),
            caption: String::new(),
            x_label: "utilisation the set was generated for".into(),
            y_label: y_label.into(),
            categories: us.into_iter().map(u_label).collect(),
            series,
            reference: None,
            states: Default::default(),
        }
    } else {
        let schedulers = categories(drawn(d).filter(usable).map(|s| s.scheduler.as_str()));
        let points = drawn(d).filter(usable).map(|s| {
            let x = schedulers.iter().position(|c| *c == s.scheduler).unwrap_or(0);
            (vs(s.params.workload.clone(), s, competing), point(x, &s.figures[pick]))
        });
        let Some(series) = series_of(points) else { return Vec::new() };
        let at =
            us.first().copied().flatten().map(|u| format!(", utilisation {u}")).unwrap_or_default();
        Chart {
            kind: ChartKind::Bars,
            id: id.into(),
            title: format!("{what} per scheduler{at}"),
            caption: String::new(),
            x_label: "scheduler".into(),
            y_label: y_label.into(),
            categories: schedulers,
            series,
            reference: None,
            states: Default::default(),
        }
    };
    vec![chart.with_caption(caption)]
}

const WINDOWS: &str = "A task's (x, y) window constraint (DWCS) tolerates at most x missed deadlines in any y \
                       consecutive ones; a sliding window ends at each of its deadlines, a fixed window at every y-th.";

/// Seed 003's "Average Violations per Process": violated sliding windows per task.
pub(super) fn violations(d: &FigureInput) -> Vec<Chart> {
    by_utilisation(
        d,
        "rt-violations",
        "Average violations per process",
        "sliding-window violations per process",
        &format!(
            "Violated sliding windows (more than x of y consecutive deadlines missed), averaged over the set's tasks \
             (processes) within each repetition. {WINDOWS} Sliding windows are drawn; the real-time table also \
             gives fixed windows."
        ),
        &rt::SLIDING_VIOLATIONS,
    )
}

/// The share of time a task spends violating its window constraint.
pub(super) fn violation_time(d: &FigureInput) -> Vec<Chart> {
    by_utilisation(
        d,
        "rt-violation-time",
        "Time in violation",
        "time in violation [% of periods]",
        &format!(
            "Percentage of a task's periods during which its last y deadlines held more than x misses, averaged \
             over the set's tasks within each repetition. {WINDOWS}"
        ),
        &rt::IN_VIOLATION_PCT,
    )
}

/// Missed deadlines over jobs released, of the whole set.
pub(super) fn miss_ratio(d: &FigureInput) -> Vec<Chart> {
    by_utilisation(
        d,
        "rt-misses",
        "Deadline miss ratio",
        "missed deadlines [% of jobs]",
        "Jobs that did not finish by their deadline over the jobs released, all tasks of the set together, per \
         repetition.",
        &rt::MISS_PCT,
    )
}

/// What one kind of distribution chart draws, for [`cdf_charts`].
struct CdfKind {
    id: &'static str,
    title: &'static str,
    x_label: &'static str,
    y_label: &'static str,
    /// The cell's distribution (empty: not drawn).
    curve: fn(&RtStats) -> &[(f64, f64)],
    /// The series name of a cell.
    name: fn(&RtStats) -> String,
    /// The caption, given one "scheduler N over R repetitions" note per cell.
    caption: fn(&str) -> String,
    /// How many values a cell's distribution pooled.
    count: fn(&RtStats) -> String,
}

/// One chart per workload and utilisation, a line per scheduler with a non-empty curve.
fn cdf_charts(d: &FigureInput, k: &CdfKind) -> Vec<Chart> {
    let several = several_workloads(d);
    let mut out = Vec::new();
    let workloads = categories(drawn(d).map(|s| s.params.workload.as_str()));
    for w in &workloads {
        for u in utilisations(d) {
            let cells: Vec<&RtStats> = drawn(d)
                .filter(|s| {
                    &s.params.workload == w && s.utilisation == u && !(k.curve)(s).is_empty()
                })
                .collect();
            if cells.is_empty() {
                continue;
            }
            let series: Vec<Series> = cells
                .iter()
                .map(|s| Series {
                    name: vs((k.name)(s), s, competition_varies(d)),
                    points: Vec::new(),
                    curve: (k.curve)(s).to_vec(),
                    colour: scheduler_colour(d, &s.scheduler),
                    dashed: false,
                })
                .collect();
            let positive =
                || series.iter().flat_map(|s| &s.curve).map(|p| p.0).filter(|x| *x > 0.0);
            let (lo, hi) =
                (positive().fold(f64::INFINITY, f64::min), positive().fold(0.0, f64::max));
            let mut id = String::from(k.id);
            let mut title = String::from(k.title);
            if several {
                id.push_str(&format!("-{}", slug(w)));
                title.push_str(&format!(": {w}"));
            }
            if let Some(u) = u {
                id.push_str(&format!("-u{}", slug(&u.to_string())));
                title.push_str(&format!(", utilisation {u}"));
            }
            let pooled: Vec<String> = cells
                .iter()
                .map(|s| format!("{} {} over {}", s.scheduler, (k.count)(s), repetitions(s.reps)))
                .collect();
            out.push(Chart {
                kind: ChartKind::Cdf { log_x: hi > 20.0 * lo },
                id,
                title,
                caption: (k.caption)(&pooled.join(", ")),
                x_label: k.x_label.into(),
                y_label: k.y_label.into(),
                categories: Vec::new(),
                series,
                reference: None,
                states: Default::default(),
            });
        }
    }
    out
}

/// The scheduling latency distribution, a line per scheduler, one chart per workload and
/// utilisation: wake-up latency (actual minus planned release) for tasks that timed their
/// own releases, hand-off latency (dispatcher's grant to the worker running) under edf and dwcs.
pub(super) fn wakeup_cdf(d: &FigureInput) -> Vec<Chart> {
    cdf_charts(
        d,
        &CdfKind {
            id: "rt-wakeup",
            title: "Scheduling latency",
            x_label: "latency [us]",
            y_label: "fraction of latencies at or below",
            curve: |s| &s.wakeup_cdf,
            name: |s| {
                if s.latency_kind == "hand-off" {
                    format!("{} (hand-off)", s.scheduler)
                } else {
                    s.scheduler.clone()
                }
            },
            caption: |pooled| {
                format!(
                    "Cumulative distribution of the scheduling latency, from the HdrHistograms of every task of the set, \
                     merged over the repetitions, a line per scheduler: for tasks that timed their own releases the wake-up \
                     latency (when a job's process ran, less its planned release); for the edf and dwcs dispatchers' workers \
                     the hand-off latency (when the worker ran, less when the dispatcher raised it and set its run bit; the \
                     dispatcher's own lateness at the quantum boundary is in its metrics). Latencies: {pooled}."
                )
            },
            count: |s| s.wakeups.to_string(),
        },
    )
}

/// The response time distribution of the jobs that finished, from the per-job records, a
/// line per scheduler, one chart per workload and utilisation.
pub(super) fn response_cdf(d: &FigureInput) -> Vec<Chart> {
    cdf_charts(
        d,
        &CdfKind {
            id: "rt-response",
            title: "Response time",
            x_label: "response time [us]",
            y_label: "fraction of finished jobs at or below",
            curve: |s| &s.response_cdf,
            name: |s| s.scheduler.clone(),
            caption: |pooled| {
                format!(
                    "Cumulative distribution of the response time (finish less release) of every job that finished, from the \
                     per-job records of every task of the set over the repetitions, a line per scheduler; jobs dropped or \
                     skipped unfinished are not in it (they count as misses). Finished jobs: {pooled}."
                )
            },
            count: |s| format!("{} (+{} unfinished)", s.finished_jobs, s.unfinished_jobs),
        },
    )
}

/// The value at cumulative fraction `q` of a drawn distribution (its points include every
/// whole percent), None when empty.
fn at_fraction(curve: &[(f64, f64)], q: f64) -> Option<f64> {
    curve.iter().find(|p| p.1 >= q - 1e-9).map(|p| p.0)
}

/// "1 repetition", "2 repetitions".
fn repetitions(n: usize) -> String {
    format!("{n} repetition{}", if n == 1 { "" } else { "s" })
}

/// Microseconds to three significant digits, in ms from 1 ms on (histogram values carry
/// three significant digits).
fn three_digits_us(v: f64) -> String {
    let (x, unit) = if v >= 1000.0 { (v / 1000.0, "ms") } else { (v, "us") };
    let decimals = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.decimals$} {unit}")
}

/// The response time distributions of the periodic cells two runs share (matched by key),
/// run A's and run B's finished jobs as two lines of one chart per cell: a measured run
/// against the simulation of the same experiment file puts theory beside measurement.
pub(super) fn response_against(
    a: &[RtStats],
    b: &[RtStats],
    a_label: &str,
    b_label: &str,
) -> Vec<Chart> {
    a.iter()
        .filter(|sa| !sa.response_cdf.is_empty())
        .filter_map(|sa| {
            let sb = b.iter().find(|s| s.params.key == sa.params.key && !s.response_cdf.is_empty())?;
            let sides = [(a_label, sa), (b_label, sb)];
            let series: Vec<Series> = sides
                .iter()
                .enumerate()
                .map(|(i, (label, s))| Series {
                    name: label.to_string(),
                    points: Vec::new(),
                    curve: s.response_cdf.clone(),
                    colour: Some(i),
                    dashed: false,
                })
                .collect();
            let positive = || series.iter().flat_map(|s| &s.curve).map(|p| p.0).filter(|x| *x > 0.0);
            let (lo, hi) = (positive().fold(f64::INFINITY, f64::min), positive().fold(0.0, f64::max));
            let us = |v: Option<f64>| v.map_or("-".to_string(), three_digits_us);
            let side = |(label, s): &(&str, &RtStats)| {
                format!(
                    "{label}: median {}, 99th percentile {}, {} finished jobs (+{} unfinished) over {}",
                    us(at_fraction(&s.response_cdf, 0.5)),
                    us(at_fraction(&s.response_cdf, 0.99)),
                    s.finished_jobs,
                    s.unfinished_jobs,
                    repetitions(s.reps)
                )
            };
            Some(Chart {
                kind: ChartKind::Cdf { log_x: hi > 20.0 * lo },
                id: format!("compare-rt-response-{}", slug(&sa.params.key)),
                title: format!("Response time, A against B: {}", sa.params.key),
                caption: format!(
                    "Cumulative distribution of the response time (finish less release) of every finished job of the set \
                     under {}, from the per-job records of both runs, cell {}. {}; {}.",
                    sa.scheduler,
                    sa.params.key,
                    side(&sides[0]),
                    side(&sides[1])
                ),
                x_label: "response time [us]".into(),
                y_label: "fraction of finished jobs at or below".into(),
                categories: Vec::new(),
                series,
                reference: None,
                states: Default::default(),
            })
        })
        .collect()
}
