//! Figures: what analysis computed, as charts. Each figure is one function from the run's
//! statistics to zero or more [`Chart`]s (none when the run did not measure what it
//! shows); [`FIGURES`] lists them in report order, so adding a figure is adding one
//! function to that list. [`render`] draws a chart as SVG and PNG.

mod render;

pub use render::{png, svg, PlotError, HEIGHT, PALETTE, WIDTH};

use crate::tables::policy_label;
use schedlab_analysis::{CellStats, Summary};

/// What figure functions draw from.
#[derive(Debug, Clone, Copy)]
pub struct FigureInput<'a> {
    /// Per-cell statistics of the run, in cell order.
    pub stats: &'a [CellStats],
    /// Online CPUs of the machine that made the run (for the utilisation ceiling).
    pub cpus: u32,
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
}

/// One line of a chart (one policy).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order; categories without data are absent.
    pub points: Vec<Point>,
}

/// A line chart over categories (process counts), with error bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
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
}

/// A figure: the run's statistics in, charts out (none when the run did not measure it).
pub type FigureFn = fn(&FigureInput) -> Vec<Chart>;

/// Every figure, in report order.
pub const FIGURES: &[FigureFn] = &[wall_per_process, involuntary_per_process, voluntary_per_process, throughput, cpu_utilisation];

/// All charts of a run, in report order.
pub fn charts(input: &FigureInput) -> Vec<Chart> {
    FIGURES.iter().flat_map(|f| f(input)).collect()
}

const CI_NOTE: &str = "Points are means over repetitions; error bars are 95% Student-t confidence intervals over repetitions.";

/// Seed 000 Figures 1-3: wall time per process against the process count.
fn wall_per_process(d: &FigureInput) -> Vec<Chart> {
    per_workload(d, "wall", "Wall time per process", "wall per process [s]", |s| &s.wall_per_proc, |_| None)
        .map(|c| {
            c.with_caption(
                "Mean elapsed time of a process, on its own clock from the start to the end of its work, so a process \
                 queued behind others (e.g. under SCHED_FIFO) is not charged its wait. Seed 000's \"wall/child\" is the \
                 makespan divided by the processes: the inverse of the throughput figure.",
            )
        })
        .collect()
}

/// Seed 000 Figures 4-5: involuntary context switches (preemptions) per process.
fn involuntary_per_process(d: &FigureInput) -> Vec<Chart> {
    per_workload(d, "involuntary", "Involuntary context switches per process", "preempted per process", |s| &s.invol_per_proc, |_| None)
        .map(|c| c.with_caption("Involuntary context switches (the process was preempted), from wait4, per process."))
        .collect()
}

/// Voluntary context switches (blocking) per process, the companion of Figures 4-5.
fn voluntary_per_process(d: &FigureInput) -> Vec<Chart> {
    per_workload(d, "voluntary", "Voluntary context switches per process", "blocked per process", |s| &s.vol_per_proc, |_| None)
        .map(|c| c.with_caption("Voluntary context switches (the process blocked, e.g. on I/O), from wait4, per process."))
        .collect()
}

/// Seed 000 Figures 6-8: processes completed per second.
fn throughput(d: &FigureInput) -> Vec<Chart> {
    per_workload(d, "throughput", "Throughput", "processes completed per second", |s| &s.throughput, |_| None)
        .map(|c| c.with_caption("Processes in the cell divided by its makespan (release to the last exit)."))
        .collect()
}

/// Seed 000 Figures 9-10: CPU utilisation of the cell's work.
fn cpu_utilisation(d: &FigureInput) -> Vec<Chart> {
    let ceiling = (d.cpus > 0).then(|| (d.cpus as f64 * 100.0, format!("all {} CPUs", d.cpus)));
    per_workload(d, "cpu", "CPU utilisation", "CPU [% of one CPU]", |s| &s.cpu_pct_total, |_| ceiling.clone())
        .map(|c| {
            c.with_caption(
                "CPU time of the cell's work (user + system, less each worker's pre-release setup) over the makespan; \
                 100% is one CPU busy for the whole makespan.",
            )
        })
        .collect()
}

impl Chart {
    fn with_caption(mut self, what: &str) -> Chart {
        self.caption = format!("{what} {CI_NOTE}");
        self
    }
}

/// One chart per workload (in cell order): `pick` against the process count, a series per policy.
fn per_workload<'a>(
    d: &'a FigureInput,
    id: &'a str,
    title: &'a str,
    y_label: &'a str,
    pick: fn(&CellStats) -> &Summary,
    reference: impl Fn(&str) -> Option<(f64, String)> + 'a,
) -> impl Iterator<Item = Chart> + 'a {
    let mut workloads: Vec<&str> = Vec::new();
    for s in d.stats {
        if !workloads.contains(&s.params.workload.as_str()) {
            workloads.push(&s.params.workload);
        }
    }
    workloads.into_iter().filter_map(move |w| {
        let cells: Vec<&CellStats> = d.stats.iter().filter(|s| s.params.workload == w).collect();
        let mut counts: Vec<u32> = cells.iter().map(|s| s.params.processes).collect();
        counts.sort_unstable();
        counts.dedup();
        let mut series: Vec<Series> = Vec::new();
        for s in &cells {
            let v = pick(s);
            if s.reps == 0 || !v.mean.is_finite() {
                continue;
            }
            let name = policy_label(s);
            let x = counts.iter().position(|c| *c == s.params.processes).unwrap_or(0);
            let p = Point { x, y: v.mean, lo: finite_or(v.ci_low, v.mean), hi: finite_or(v.ci_high, v.mean) };
            match series.iter_mut().find(|x| x.name == name) {
                Some(x) => x.points.push(p),
                None => series.push(Series { name, points: vec![p] }),
            }
        }
        if series.is_empty() {
            return None;
        }
        for s in &mut series {
            s.points.sort_by_key(|p| p.x);
        }
        let kind = cells.first().map(|s| s.params.workload_kind.as_str()).unwrap_or("");
        Some(Chart {
            id: format!("{id}-{}", slug(w)),
            title: format!("{title}: {w} ({kind})"),
            caption: String::new(),
            x_label: "processes".into(),
            y_label: y_label.into(),
            categories: counts.iter().map(u32::to_string).collect(),
            series,
            reference: reference(w),
        })
    })
}

fn finite_or(v: f64, or: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        or
    }
}

/// A file-name-safe form of a name: ASCII alphanumerics kept, anything else as `_`.
pub fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '_' }).collect()
}

#[cfg(test)]
mod tests;
