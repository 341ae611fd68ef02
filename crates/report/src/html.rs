//! `schedlab report`: one self-contained HTML page (inline CSS, figures inline as SVG, no
//! script, nothing fetched) plus every figure beside it as SVG and PNG. Everything is
//! rendered in memory first; [`crate::output::write_dir`] then writes it.

use crate::cols::{self, Col};
use crate::compare;
use crate::plots::{self, Chart, FigureInput, PlotError};
use crate::tables;
use crate::within;
use minijinja::value::Serde;
use minijinja::{context, Environment, Value};
use schedlab_analysis::{
    CellOutliers, CellStats, Metric, ProcessValue, RunComparison, MODIFIED_Z_THRESHOLD,
};
use schedlab_model::Environment as Machine;
use serde::Serialize;

const TEMPLATE: &str = include_str!("report.html");

/// A stored run's header, as the report shows it (times already formatted).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunMeta {
    /// Run id.
    pub id: i64,
    /// Experiment name.
    pub name: String,
    /// measured or sim.
    pub mode: String,
    /// complete, interrupted, ...
    pub status: String,
    /// Start time, formatted.
    pub started: String,
    /// End time, formatted, if it ended.
    pub finished: Option<String>,
    /// Work multiplier.
    pub scale: f64,
    /// Cell repetitions stored.
    pub cells_done: i64,
    /// Path of the spec file.
    pub spec_path: String,
    /// SHA-256 of the spec text.
    pub spec_hash: String,
    /// Exact spec text.
    pub spec_text: String,
    /// The command line that made the run.
    pub command_line: String,
    /// Warnings raised during the run.
    pub warnings: Vec<String>,
    /// A simulated run's model in one line (`Params::describe`); None for a measured run.
    pub model: Option<String>,
    /// The machine.
    #[serde(skip)]
    pub env: Machine,
}

/// What the report's comparison section shows: this run (A) against another (B).
#[derive(Debug, Clone)]
pub struct CompareSection {
    /// The other run.
    pub other: RunMeta,
    /// One comparison per metric, the chosen one first.
    pub by_metric: Vec<RunComparison>,
    /// The other run's real-time figures (with per-job records loaded), for the response
    /// time figures of the periodic cells both runs have; empty when it has none.
    pub rt: Vec<schedlab_analysis::RtStats>,
}

/// Everything the report draws, as analysis computed it.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// The run.
    pub run: &'a RunMeta,
    /// Per-cell statistics over repetitions.
    pub stats: &'a [CellStats],
    /// Per-cell outlier flags.
    pub outliers: &'a [CellOutliers],
    /// I/O figures of the cells that did I/O.
    pub io: &'a [schedlab_analysis::IoStats],
    /// Real-time figures of the cells that ran periodic task sets.
    pub rt: &'a [schedlab_analysis::RtStats],
    /// Benchmark figures of the cells that ran the field's benchmarks (native or parsed).
    pub bench: &'a [schedlab_analysis::BenchStats],
    /// The comparison with another run, if asked for.
    pub compare: Option<&'a CompareSection>,
    /// Kernel trace figures of the traced cells (empty for an untraced run).
    pub traces: &'a [schedlab_analysis::TraceStats],
    /// "What this run shows": one axis's levels compared within the run on wall time and
    /// on preemptions ([`crate::within::shows`]); None when the run sweeps nothing.
    pub shows: Option<&'a (schedlab_analysis::WithinRun, schedlab_analysis::WithinRun)>,
    /// The generated sets of the run's batches, for the acceptance figures (empty: none).
    pub sets: &'a [schedlab_model::sets::TaskSetRow],
    /// A live run's generated sets judged four ways, for the knee figures (empty: none).
    pub knees: &'a [schedlab_analysis::knee::KneeSet],
}

impl<'a> ReportInput<'a> {
    /// The report of `run` from its cells' `stats` alone: no outliers, I/O, real-time or trace
    /// figures, comparison or "what this run shows" (set those fields on the result).
    pub fn new(run: &'a RunMeta, stats: &'a [CellStats]) -> Self {
        ReportInput {
            run,
            stats,
            outliers: &[],
            io: &[],
            rt: &[],
            bench: &[],
            compare: None,
            traces: &[],
            shows: None,
            sets: &[],
            knees: &[],
        }
    }
}

/// Rendering the report failed (a figure or the template).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderError(pub String);

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot render the report: {}", self.0)
    }
}

impl std::error::Error for RenderError {}

impl From<PlotError> for RenderError {
    fn from(e: PlotError) -> Self {
        RenderError(e.to_string())
    }
}

/// A rendered report: relative path and bytes of each file, `index.html` first.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// Files to write.
    pub files: Vec<(String, Vec<u8>)>,
    /// The charts drawn, in report order.
    pub charts: Vec<Chart>,
}

#[derive(Serialize)]
struct HtmlTable {
    header: Vec<String>,
    rows: Vec<HtmlRow>,
    /// Per column: right-aligned numbers.
    num: Vec<bool>,
}

#[derive(Serialize)]
struct HtmlRow {
    cells: Vec<String>,
    class: &'static str,
}

/// The table of `items` under `cols`: headers, cells and alignment all from the columns.
fn plain<R>(cols: &[Col<R>], items: &[R]) -> HtmlTable {
    HtmlTable {
        num: cols::html_numeric(cols),
        header: cols::header(cols).into_iter().map(str::to_string).collect(),
        rows: cols::rows(cols, items)
            .into_iter()
            .map(|cells| HtmlRow { cells, class: "" })
            .collect(),
    }
}

/// The per-process means with the notes the terminal shows under the totals only.
fn per_process(stats: &[CellStats]) -> HtmlTable {
    let mut cols = tables::per_process_columns_for(stats);
    cols.push(tables::notes_column());
    plain(&cols, &tables::named(stats))
}

/// The most extreme flagged value of a cell, described.
fn most_extreme(c: &CellOutliers) -> String {
    let worst = c.flagged.iter().max_by(|a, b| a.z.abs().total_cmp(&b.z.abs()));
    worst
        .map(|f| {
            format!(
                "rep {} process {}: {} {} vs median {} (z {:.1})",
                f.rep,
                f.index,
                f.value_kind.name(),
                compare::num(f.value),
                compare::num(f.median),
                f.z
            )
        })
        .unwrap_or_default()
}

fn outliers(cells: &[CellOutliers]) -> HtmlTable {
    let mut cols = vec![
        Col::text("cell", |c: &&CellOutliers| c.key.clone()),
        Col::num("processes", |c: &&CellOutliers| c.processes.to_string()),
    ];
    cols.extend(
        ProcessValue::ALL
            .iter()
            .map(|&k| Col::num(k.name(), move |c: &&CellOutliers| c.count(k).to_string())),
    );
    cols.push(Col::text("most extreme", |c: &&CellOutliers| most_extreme(c)));
    let flagged: Vec<&CellOutliers> = cells.iter().filter(|c| !c.flagged.is_empty()).collect();
    plain(&cols, &flagged)
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_else(|| "unknown".into())
}

fn rt_throttling(e: &Machine) -> String {
    match (e.rt_runtime_us, e.rt_period_us) {
        (Some(-1), Some(p)) => format!("disabled (runtime -1 / period {p} us)"),
        (Some(r), Some(p)) => format!("{r} / {p} us"),
        _ => "unknown".into(),
    }
}

fn environment(run: &RunMeta, stats: &[CellStats]) -> Vec<(String, String)> {
    let e = &run.env;
    let rt = rt_throttling(e);
    let dma = crate::tables::dma_latency_note(stats).map(|n| ("cpu_dma_latency", n));
    let model = run.model.clone().map(|m| ("simulation model", m));
    [
        ("kernel", format!("{} {}", e.kernel, e.kernel_version)),
        ("CPU", e.cpu_model.clone()),
        ("online CPUs", e.cpus.to_string()),
        (
            "memory",
            e.mem_total_kb
                .map(|k| format!("{:.1} GiB", k as f64 / 1048576.0))
                .unwrap_or_else(|| "unknown".into()),
        ),
        ("CONFIG_HZ", opt(&e.hz)),
        ("RT throttling (runtime / period)", rt),
        (
            "SCHED_RR timeslice",
            e.rr_timeslice_ms.map(|v| format!("{v} ms")).unwrap_or_else(|| "unknown".into()),
        ),
        ("autogroup", opt(&e.autogroup)),
        ("cpufreq governor", opt(&e.governor)),
        (
            "I/O devices (scheduler)",
            if e.io_devices.is_empty() { "none found".into() } else { e.io_devices.join(", ") },
        ),
        ("cgroups", e.cgroup.clone()),
        ("CAP_SYS_NICE", e.cap_sys_nice.to_string()),
        ("schedlab", e.tool_version.clone()),
        ("command line", run.command_line.clone()),
        ("spec file", format!("{} (sha256 {})", run.spec_path, run.spec_hash)),
        ("scale", run.scale.to_string()),
    ]
    .into_iter()
    .chain(dma)
    .chain(model)
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn v<T: Serialize>(x: &T) -> Value {
    Value::from(Serde(x))
}

/// The three-driver table of the comparison: the live drivers from the measured run (run A
/// when both or neither are), the simulation from the other; None without such sets.
fn drivers(run: &RunMeta, rt: &[schedlab_analysis::RtStats], c: &CompareSection) -> Option<Value> {
    let label = |r: &RunMeta| format!("run {}", r.id);
    let (live, sim, live_run, sim_run) = if run.mode == "sim" && c.other.mode != "sim" {
        (&c.rt[..], rt, &c.other, run)
    } else {
        (rt, &c.rt[..], run, &c.other)
    };
    let rows = crate::drivers::rows(live, sim);
    (!rows.is_empty())
        .then(|| v(&plain(&crate::drivers::columns(&label(live_run), &label(sim_run)), &rows)))
}

fn comparison(run: &RunMeta, rt: &[schedlab_analysis::RtStats], c: &CompareSection) -> Value {
    let (a, b) = (run.id, c.other.id);
    let summary = plain(&compare::summary_columns(), &c.by_metric);
    let metrics: Vec<Value> = c
        .by_metric
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let rows = m
                .cells
                .iter()
                .zip(compare::rows(m))
                .map(|(cell, cells)| HtmlRow {
                    cells,
                    class: match cell.change() {
                        schedlab_analysis::Change::Higher => "higher",
                        schedlab_analysis::Change::Lower => "lower",
                        _ => "",
                    },
                })
                .collect();
            let cols = compare::columns(m, a, b);
            let table =
                HtmlTable { num: cols::html_numeric(&cols), header: cols::header(&cols).into_iter().map(str::to_string).collect(), rows };
            context! { label => m.metric.label(), open => i == 0, line => compare::summary_line(m, a, b), table => v(&table) }
        })
        .collect();
    let first = c.by_metric.first();
    context! {
        other => v(&c.other),
        warnings => compare::run_differences(run, &c.other),
        alpha => first.map(|m| m.alpha),
        correction => first.map(|m| m.correction.label()),
        level => first.map(compare::level),
        summary => v(&summary),
        metrics => metrics,
        only_a => first.map(|m| m.only_a.clone()).unwrap_or_default(),
        only_b => first.map(|m| m.only_b.clone()).unwrap_or_default(),
        drivers => drivers(run, rt, c),
    }
}

/// Escapes `& < > " '` (minijinja's default also escapes `/`, which garbles every cell key and link).
fn html_formatter(
    out: &mut minijinja::Output,
    state: &mut minijinja::State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    if value.is_safe() || *state.auto_escape() != minijinja::AutoEscape::Html {
        return minijinja::escape_formatter(out, state, value);
    }
    let text =
        if value.is_none() || value.is_undefined() { String::new() } else { value.to_string() };
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    out.write_str(&escaped)?;
    Ok(())
}

/// Makes every chart id unique (two workloads may share a file-name form).
fn unique_ids(charts: &mut [Chart]) {
    let mut seen = std::collections::HashSet::new();
    for c in charts.iter_mut() {
        let mut id = c.id.clone();
        let mut k = 2;
        while !seen.insert(id.clone()) {
            id = format!("{}-{k}", c.id);
            k += 1;
        }
        c.id = id;
    }
}

/// Renders the report: `index.html` and `figures/<id>.svg` / `.png` for every chart.
pub fn render(input: &ReportInput) -> Result<Rendered, RenderError> {
    let mut charts = plots::charts(&FigureInput {
        stats: input.stats,
        cpus: input.run.env.cpus,
        io: input.io,
        rt: input.rt,
        traces: input.traces,
        sets: input.sets,
    });
    charts.extend(plots::knee_charts(input.knees));
    let main_charts = charts.len();
    if let Some(c) = input.compare {
        let label = |r: &RunMeta| {
            format!("run {} ({})", r.id, if r.mode == "sim" { "simulated" } else { "measured" })
        };
        charts.extend(plots::comparison_charts(
            input.rt,
            &c.rt,
            &label(input.run),
            &label(&c.other),
        ));
        charts.extend(plots::sets_with_measured(input.sets, &c.rt, &label(&c.other)));
    }
    unique_ids(&mut charts);
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut figures = Vec::new();
    for c in &charts {
        let svg = plots::svg(c)?;
        let png = plots::png(c)?;
        let (svg_file, png_file) =
            (format!("figures/{}.svg", c.id), format!("figures/{}.png", c.id));
        figures.push(context! {
            id => format!("fig-{}", c.id), title => &c.title, caption => &c.caption,
            svg => &svg, svg_file => &svg_file, png_file => &png_file,
        });
        files.push((svg_file, svg.into_bytes()));
        files.push((png_file, png));
    }
    let compare_figures = figures.split_off(main_charts);
    let empty = input
        .stats
        .iter()
        .filter(|s| s.reps == 0)
        .map(|s| s.params.key.clone())
        .collect::<Vec<_>>();
    let e = &input.run.env;
    let flagged = input.outliers.iter().map(|c| c.flagged.len()).sum::<usize>();
    let ctx = context! {
        run => v(input.run),
        machine => format!("{} CPUs ({}), kernel {}, RT throttling {}.", e.cpus, e.cpu_model, e.kernel, rt_throttling(e)),
        metric_default => Metric::WallPerProc.label(),
        environment => environment(input.run, input.stats),
        figures => figures,
        empty_cells => empty,
        per_process => v(&per_process(input.stats)),
        totals => v(&plain(&tables::totals_columns(), &tables::named(input.stats))),
        io => (!input.io.is_empty()).then(|| v(&plain(&tables::io_columns(), &tables::io_named(input.io)))),
        rt => (!input.rt.is_empty()).then(|| v(&plain(&tables::rt_columns(), &tables::rt_named(input.rt)))),
        rt_placement => tables::rt_placement_note(input.rt, e.cpus),
        bench => (!input.bench.is_empty()).then(|| {
            let cols = crate::bench::columns(input.bench, &schedlab_analysis::bench::FIGURES.iter().collect::<Vec<_>>());
            let cols = std::iter::once(crate::cells::key_column()).chain(cols).collect::<Vec<_>>();
            v(&plain(&cols, &crate::bench::named(input.bench)))
        }),
        bench_note => crate::bench::NOTE,
        traces => (!input.traces.is_empty()).then(|| v(&plain(&tables::trace_cell_columns(), input.traces))),
        rt_cpu => Some(tables::rt_cpu_named(input.rt)).filter(|r| !r.is_empty()).map(|rows| v(&plain(&tables::rt_cpu_columns(), &rows))),
        outliers => v(&outliers(input.outliers)),
        outliers_flagged => flagged,
        outliers_examined => input.outliers.iter().map(|c| c.processes).sum::<usize>(),
        outlier_threshold => MODIFIED_Z_THRESHOLD,
        comparison => input.compare.map(|c| comparison(input.run, input.rt, c)),
        shows => input.shows.map(|(wall, preempted)| context! {
            note => within::shows_note(wall),
            table => v(&plain(&within::shows_columns(wall), &within::shows_rows(wall, preempted))),
        }),
        compare_figures => compare_figures,
    };
    let mut env = Environment::new();
    env.set_formatter(html_formatter);
    env.add_template("report.html", TEMPLATE).map_err(|e| RenderError(format!("template: {e}")))?;
    let html = env
        .get_template("report.html")
        .and_then(|t| t.render(ctx))
        .map_err(|e| RenderError(format!("template: {e:#}")))?;
    files.insert(0, ("index.html".into(), html.into_bytes()));
    Ok(Rendered { files, charts })
}
