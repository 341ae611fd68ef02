//! Figures: what analysis computed, as charts. Each figure is one function from the run's
//! statistics to zero or more [`Chart`]s (none when the run did not measure what it
//! shows); [`FIGURES`] lists them in report order, so adding a figure is adding one
//! function to that list. [`render`] draws a chart as SVG and PNG.

mod io;
mod render;
mod rt;
mod sets;
mod states;

pub use render::{png, svg, PlotError, HEIGHT, PALETTE, WIDTH};

use crate::labels::{self, cgroup, others, pinned, primary};
use schedlab_analysis::{CellStats, NoInterval, RtStats, Summary};

/// What figure functions draw from.
#[derive(Debug, Clone, Copy)]
pub struct FigureInput<'a> {
    /// Per-cell statistics of the run, in cell order.
    pub stats: &'a [CellStats],
    /// Online CPUs of the machine that made the run (for the utilisation ceiling).
    pub cpus: u32,
    /// I/O statistics of the cells that did I/O (empty for other runs).
    pub io: &'a [schedlab_analysis::IoStats],
    /// Real-time statistics of the cells that ran periodic task sets (empty for other runs).
    pub rt: &'a [schedlab_analysis::RtStats],
    /// Kernel trace figures of the traced cells (empty for untraced runs).
    pub traces: &'a [schedlab_analysis::TraceStats],
    /// The generated sets of the run's batches (empty for other runs).
    pub sets: &'a [schedlab_model::sets::TaskSetRow],
}

/// One point of a series: a category on the x axis, a mean and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Index into [`Chart::categories`].
    pub x: usize,
    /// Mean.
    pub y: f64,
    /// Lower end of the error bar (equal to `y` when there is none).
    pub lo: f64,
    /// Upper end of the error bar.
    pub hi: f64,
    /// Why the point has no error bar (too few repetitions, or an interval wider than the mean).
    pub no_bar: Option<NoInterval>,
}

/// One line of a chart (one policy).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order; categories without data are absent.
    pub points: Vec<Point>,
    /// A distribution's curve, (value, cumulative fraction) in value order
    /// ([`ChartKind::Cdf`] charts; empty in the others).
    pub curve: Vec<(f64, f64)>,
    /// Its colour and marker ([`PALETTE`] index, wrapping), so that one thing (a scheduler)
    /// looks the same in every chart; None: by its position.
    pub colour: Option<usize>,
    /// Drawn dashed (an analytical test beside simulated outcomes); lines charts only.
    pub dashed: bool,
}

/// How a chart is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ChartKind {
    /// A line per series over the categories, with error bars.
    Lines,
    /// Bars side by side in each category, a colour per series, with error bars.
    Bars,
    /// Cumulative distributions: each series' `curve`, the x axis logarithmic when `log_x`.
    Cdf {
        /// Logarithmic x axis.
        log_x: bool,
    },
    /// A row per worker over time, each slice filled by the shares of its states
    /// ([`Chart::states`]).
    States,
}

/// A state chart's rows: per worker, a label and per slice of the traced window the shares
/// of it spent running, runnable and blocked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateRows {
    /// The length of a slice, seconds.
    pub slice_s: f64,
    /// (label, shares per slice), top row first.
    pub rows: Vec<(String, Vec<[f64; 3]>)>,
}

/// A chart over categories (process counts, schedulers) with error bars, or of distributions.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// How it is drawn.
    pub kind: ChartKind,
    /// File stem and HTML anchor, e.g. `wall-cpu`.
    pub id: String,
    /// Title drawn above the plot.
    pub title: String,
    /// What the figure shows and how it was computed, for the report.
    pub caption: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description.
    pub y_label: String,
    /// X categories, in order.
    pub categories: Vec<String>,
    /// The lines.
    pub series: Vec<Series>,
    /// A horizontal reference line (value, legend text), e.g. every CPU busy.
    pub reference: Option<(f64, String)>,
    /// The rows of a [`ChartKind::States`] chart (empty in the others).
    pub states: StateRows,
}

/// A figure: the run's statistics in, charts out (none when the run did not measure it).
pub type FigureFn = fn(&FigureInput) -> Vec<Chart>;

/// Every figure, in report order.
pub const FIGURES: &[FigureFn] = &[
    wall_per_process,
    involuntary_per_process,
    voluntary_per_process,
    throughput,
    cpu_utilisation,
    jain_index,
    completion_times,
    group_share,
    io::io_time,
    io::io_throughput,
    io::io_p50,
    io::io_p99,
    io::io_p999,
    rt::violations,
    rt::violation_time,
    rt::miss_ratio,
    rt::wakeup_cdf,
    rt::response_cdf,
    sets::acceptance,
    sets::violations,
    states::state_bars,
];

/// All charts of a run, in report order.
pub fn charts(input: &FigureInput) -> Vec<Chart> {
    FIGURES.iter().flat_map(|f| f(input)).collect()
}

/// The batches' acceptance curves and violations per process with the measured cells of
/// another run on top (see `sets::with_measured`).
pub fn sets_with_measured(
    sets: &[schedlab_model::sets::TaskSetRow],
    measured: &[RtStats],
    label: &str,
) -> Vec<Chart> {
    sets::with_measured(sets, measured, label)
}

/// The knee charts of a live run of generated sets: per scheduler and family, the
/// acceptance of its measured sets four ways (see `sets::knees`).
pub fn knee_charts(sets: &[schedlab_analysis::knee::KneeSet]) -> Vec<Chart> {
    sets::knees(sets)
}

/// The charts of a report's comparison section: run A's cells against run B's, matched by key
/// (today the response time distributions of shared periodic cells). `a_label`, `b_label`
/// name the two runs in legends and captions.
pub fn comparison_charts(a: &[RtStats], b: &[RtStats], a_label: &str, b_label: &str) -> Vec<Chart> {
    rt::response_against(a, b, a_label, b_label)
}

const CI_NOTE: &str = "Points are means over repetitions; error bars are 95% confidence intervals of the mean over \
                       repetitions, computed on the log scale for times, counts and rates and on the logit scale for \
                       indices, shares and percentages, so that they stay within the quantity's range.";

/// When the fairness figures are drawn, for their captions.
const FAIRNESS_RULE: &str =
    "Fairness figures are drawn when the run studies fairness: some cell has more than one group \
                             (competing or background), pins processes to CPUs or sets a cgroup.";

/// Seed 000 Figures 1-3: wall time per process against the process count.
fn wall_per_process(d: &FigureInput) -> Vec<Chart> {
    per_workload(d, "wall", "Wall time per process", "wall per process [s]", |s| Some(&s.wall_per_proc), None)
        .map(|c| {
            c.with_caption(
                "Mean elapsed time of a process, on its own clock from the start to the end of its work, so a process \
                 queued behind others (e.g. under SCHED_FIFO) is not charged its wait. The PA3 scheduler study's \
                 \"wall/child\" (its Figures 1-3) is the makespan divided by the processes: the inverse of the \
                 throughput figure.",
            )
        })
        .collect()
}

/// Seed 000 Figures 4-5: involuntary context switches (preemptions) per process.
fn involuntary_per_process(d: &FigureInput) -> Vec<Chart> {
    per_workload(
        d,
        "involuntary",
        "Involuntary context switches per process",
        "preempted per process",
        |s| Some(&s.involuntary_per_proc),
        None,
    )
    .map(|c| {
        c.with_caption(
            "Involuntary context switches (the process was preempted), from wait4, per process.",
        )
    })
    .collect()
}

/// Voluntary context switches (blocking) per process, the companion of Figures 4-5.
fn voluntary_per_process(d: &FigureInput) -> Vec<Chart> {
    per_workload(d, "voluntary", "Voluntary context switches per process", "blocked per process", |s| Some(&s.voluntary_per_proc), None)
        .map(|c| c.with_caption("Voluntary context switches (the process blocked, e.g. on I/O), from wait4, per process."))
        .collect()
}

/// Seed 000 Figures 6-8: processes completed per second.
fn throughput(d: &FigureInput) -> Vec<Chart> {
    per_workload(
        d,
        "throughput",
        "Throughput",
        "processes completed per second",
        |s| Some(&s.throughput),
        None,
    )
    .map(|c| {
        c.with_caption("Processes in the cell divided by its makespan (release to the last exit).")
    })
    .collect()
}

/// Seed 000 Figures 9-10: CPU utilisation of the cell's work.
fn cpu_utilisation(d: &FigureInput) -> Vec<Chart> {
    let ceiling = (d.cpus > 0).then(|| (d.cpus as f64 * 100.0, format!("all {} CPUs", d.cpus)));
    per_workload(d, "cpu", "CPU utilisation", "CPU [% of one CPU]", |s| Some(&s.cpu_pct_total), ceiling)
        .map(|c| {
            c.with_caption(
                "CPU time of the cell's work (user + system, less each worker's pre-release setup) over the makespan; \
                 100% is one CPU busy for the whole makespan.",
            )
        })
        .collect()
}

/// Seed 004 ("fairness"): Jain's index over the measured processes of each cell.
fn jain_index(d: &FigureInput) -> Vec<Chart> {
    if !measures_fairness(d.stats) {
        return Vec::new();
    }
    let fair = Some((1.0, "perfectly fair".into()));
    per_workload(d, "jain", "Jain's fairness index", "Jain's index", |s| (s.params.processes >= 2).then_some(&s.jain), fair)
        .map(|c| {
            c.with_caption(&format!(
                "Jain's index (sum x)^2 / (n sum x^2) over the throughputs x of a repetition's measured processes (work \
                 units per second of each process's own wall time): 1 when all progressed at the same rate (the grey \
                 line), 1/n when one process got everything. Cells with one measured process are \
                 left out. {FAIRNESS_RULE}"
            ))
        })
        .collect()
}

/// Seed 004 Figures 1-2: every measured process's completion time, by completion rank.
fn completion_times(d: &FigureInput) -> Vec<Chart> {
    if !measures_fairness(d.stats) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in panels(d.stats) {
        let labels = p.labels();
        let mut counts: Vec<u32> =
            p.cells.iter().map(|s| s.params.processes).filter(|n| *n >= 2).collect();
        counts.sort_unstable();
        counts.dedup();
        for n in counts {
            let cells =
                p.cells.iter().zip(&labels).filter(|(s, _)| s.params.processes == n && s.reps > 0);
            let ranks = cells.clone().map(|(s, _)| s.completion_by_rank.len()).max().unwrap_or(0);
            let points = cells.flat_map(|(s, l)| {
                s.completion_by_rank.iter().enumerate().map(move |(k, v)| (l, k, v))
            });
            let Some(series) = series_of(
                points
                    .filter(|(_, _, v)| v.mean.is_finite())
                    .map(|(l, k, v)| (l.clone(), point(k, v))),
            ) else {
                continue;
            };
            let chart = Chart {
                kind: ChartKind::Lines,
                id: p.id("completion", &format!("n{n}")),
                title: p.title("Completion times", Some(n)),
                caption: String::new(),
                x_label: "process, by completion rank (1 = first done)".into(),
                y_label: "completion [s after release]".into(),
                categories: (1..=ranks).map(|k| k.to_string()).collect(),
                series,
                reference: None,
                states: StateRows::default(),
            };
            out.push(chart.with_caption(&format!(
                "The measured processes' completion times (end of work, seconds after the release), sorted within each \
                 repetition: rank 1 is the first process done, rank {n} the last. Sorting first makes ranks comparable \
                 across repetitions, where process numbers are not (which process lands on which CPU is chance); a flat \
                 line is a fair cell, a rising one an unfair cell. {FAIRNESS_RULE}"
            )));
        }
    }
    out
}

/// The measured (primary) group's share of the CPU time all groups used while it was measured.
fn group_share(d: &FigureInput) -> Vec<Chart> {
    if !measures_fairness(d.stats) {
        return Vec::new();
    }
    per_workload(d, "share", "Group CPU share", "share of the groups' CPU time", primary_share, None)
        .map(|c| {
            c.with_caption(&format!(
                "CPU time of the cell's measured group (the first, e.g. the hashing processes) over the CPU time of all \
                 its groups, background ones included, between the release and the last measured exit; 1 = the other \
                 groups got nothing. Cells whose measured group runs alone are left out. \
                 {FAIRNESS_RULE}"
            ))
        })
        .collect()
}

impl Chart {
    /// The caption: what the figure shows, how its error bars are made, and which points have none.
    fn with_caption(mut self, what: &str) -> Chart {
        self.caption = format!("{what} {CI_NOTE}{}", self.missing_bars());
        self
    }

    /// A note on the points drawn without an error bar, and why; empty when every point has one.
    fn missing_bars(&self) -> String {
        let points: Vec<&Point> = self.series.iter().flat_map(|s| &s.points).collect();
        let mut note = String::new();
        for why in [NoInterval::FewValues, NoInterval::WiderThanEstimate] {
            let k = points.iter().filter(|p| p.no_bar == Some(why)).count();
            if k == 0 {
                continue;
            }
            let which = if k == points.len() {
                "any point".to_string()
            } else {
                format!("{k} of the {} points", points.len())
            };
            note.push_str(&match why {
                NoInterval::FewValues => {
                    format!(" No error bar on {which}: fewer than 3 repetitions (n < 3).")
                }
                NoInterval::WiderThanEstimate => {
                    format!(" No error bar on {which}: the interval's half-width exceeds the mean.")
                }
            });
        }
        note
    }
}

/// True when the run studies fairness: some cell has more than one group (competing or
/// background), pins processes to CPUs or sets a cgroup. A single-group run such as pa3
/// compares policies, not shares, and gets no fairness figures.
pub fn measures_fairness(stats: &[CellStats]) -> bool {
    stats.iter().any(|s| {
        s.params.groups.len() > 1
            || s.params.groups.iter().any(|g| pinned(g) || !cgroup(g).is_empty() || g.background)
    })
}

fn primary_share(s: &CellStats) -> Option<&Summary> {
    let name = &s.params.groups.get(primary(&s.params)?)?.name;
    if s.group_share.len() < 2 {
        return None;
    }
    s.group_share.iter().find(|(g, _)| g == name).map(|(_, v)| v)
}

/// Cells drawn in one chart: one workload of the primary group, competing with the same other groups.
struct Panel<'a> {
    workload: &'a str,
    kind: &'a str,
    /// The other groups, e.g. `8 bg`; empty when the primary group runs alone.
    others: String,
    cells: Vec<&'a CellStats>,
}

impl Panel<'_> {
    fn id(&self, figure: &str, extra: &str) -> String {
        let parts =
            [figure.to_string(), slug(self.workload), extra.to_string(), slug(&self.others)];
        parts.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
    }

    /// `what: workload (kind)`, the kind only when it says more than the name, and the other groups.
    fn title(&self, what: &str, processes: Option<u32>) -> String {
        let mut t = format!("{what}: ");
        if let Some(n) = processes {
            t.push_str(&format!("{n} "));
        }
        t.push_str(self.workload);
        if self.kind != self.workload && !self.kind.is_empty() {
            t.push_str(&format!(" ({})", self.kind));
        }
        if !self.others.is_empty() {
            t.push_str(&format!(", with {}", self.others));
        }
        t
    }

    /// Each cell's series name: its policy, affinity and cgroup, leaving out what all cells share
    /// (the policy alone when they share everything).
    fn labels(&self) -> Vec<String> {
        let columns: Vec<[String; 3]> = self
            .cells
            .iter()
            .map(|s| {
                let [aff, cg] = labels::placement(&s.params);
                [labels::policy(&s.params), aff, cg]
            })
            .collect();
        let varies = labels::varying(&columns);
        columns
            .iter()
            .map(|c| {
                if varies.is_empty() {
                    c[0].clone()
                } else {
                    varies.iter().map(|&i| c[i].as_str()).collect::<Vec<_>>().join(", ")
                }
            })
            .collect()
    }
}

/// The run's cells by (primary workload, other groups), in cell order.
fn panels(stats: &[CellStats]) -> Vec<Panel<'_>> {
    let mut out: Vec<Panel> = Vec::new();
    // Cells of an I/O-scheduler sweep differ by scheduler, not by process count: the I/O
    // figures draw them. Periodic task sets differ by scheduler and utilisation: the
    // real-time figures draw them.
    for s in
        stats.iter().filter(|s| s.params.iosched.is_none() && s.params.workload_kind != "periodic")
    {
        let o = others(&s.params);
        match out.iter_mut().find(|p| p.workload == s.params.workload && p.others == o) {
            Some(p) => p.cells.push(s),
            None => out.push(Panel {
                workload: &s.params.workload,
                kind: &s.params.workload_kind,
                others: o,
                cells: vec![s],
            }),
        }
    }
    out
}

/// A mean with its interval as analysis shaped it, or no error bar and why.
fn point(x: usize, v: &Summary) -> Point {
    match v.interval() {
        Ok((lo, hi)) => Point { x, y: v.mean, lo, hi, no_bar: None },
        Err(why) => Point { x, y: v.mean, lo: v.mean, hi: v.mean, no_bar: Some(why) },
    }
}

/// Points grouped into series by name (in order of first appearance), each sorted by x; None when there are none.
fn series_of(points: impl Iterator<Item = (String, Point)>) -> Option<Vec<Series>> {
    let mut series: Vec<Series> = Vec::new();
    for (name, p) in points {
        match series.iter_mut().find(|x| x.name == name) {
            Some(x) => x.points.push(p),
            None => series.push(Series {
                name,
                points: vec![p],
                curve: Vec::new(),
                colour: None,
                dashed: false,
            }),
        }
    }
    for s in &mut series {
        s.points.sort_by_key(|p| p.x);
    }
    (!series.is_empty()).then_some(series)
}

/// One chart per workload and set of other groups (in cell order): `pick` against the
/// process count, a series per policy (and affinity or cgroup where the cells differ in them).
/// Cells for which `pick` gives None are not drawn, nor are their process counts.
fn per_workload<'a>(
    d: &'a FigureInput,
    id: &'a str,
    title: &'a str,
    y_label: &'a str,
    pick: fn(&CellStats) -> Option<&Summary>,
    reference: Option<(f64, String)>,
) -> impl Iterator<Item = Chart> + 'a {
    panels(d.stats).into_iter().filter_map(move |p| {
        let labels = p.labels();
        let mut counts: Vec<u32> =
            p.cells.iter().filter(|s| pick(s).is_some()).map(|s| s.params.processes).collect();
        counts.sort_unstable();
        counts.dedup();
        let points = p.cells.iter().zip(&labels).filter_map(|(s, name)| {
            let v = pick(s).filter(|v| s.reps > 0 && v.mean.is_finite())?;
            let x = counts.iter().position(|c| *c == s.params.processes).unwrap_or(0);
            Some((name.clone(), point(x, v)))
        });
        let series = series_of(points)?;
        Some(Chart {
            kind: ChartKind::Lines,
            id: p.id(id, ""),
            title: p.title(title, None),
            caption: String::new(),
            x_label: "processes".into(),
            y_label: y_label.into(),
            categories: counts.iter().map(u32::to_string).collect(),
            series,
            reference: reference.clone(),
            states: StateRows::default(),
        })
    })
}

/// A file-name-safe form of a name: ASCII alphanumerics kept, anything else as `_`.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests;
