//! `schedlab show`: a stored run as tables.

use super::common::{bad_input, open_existing, pick_run, sim_model, utc};
use schedlab_report::cells;
use schedlab_report::cols::Col;
use schedlab_report::tables;
use schedlab_report::tables::Named;
use schedlab_session::subject::Subject;
use schedlab_store::Store;
use std::path::Path;
use std::process::ExitCode;

/// Output formats of `schedlab show`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Everything, as terminal tables.
    #[default]
    Table,
    /// Everything, the tables in Markdown (for a write-up).
    Markdown,
    /// Only the per-cell summary: a row per cell (key, figures, their 95% interval).
    Csv,
    /// Only the per-cell summary: an array of objects with stable field names.
    Json,
}

/// Arguments of `schedlab show`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id, or a campaign (`campaign:ID` or its id); the newest run without it.
    pub run: Option<String>,
    /// table and markdown show everything; csv and json only the per-cell summary.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Only the cells whose key matches: the key itself (`cpu/fifo:98/n10`, as the `cell`
    /// column shows it) or a glob where `*` stands for any characters (`cpu/fifo*`, `*/n10`).
    #[arg(long, value_name = "PATTERN")]
    pub cell: Option<String>,
    /// Only these figures, comma-separated (`--help` names them all).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', long_help = cells::metric_help())]
    pub metric: Vec<String>,
    /// Every column: the workload, policy and process labels beside each cell's key, and
    /// the I/O and real-time tables' secondary figures.
    #[arg(long)]
    pub wide: bool,
}

/// How `show` draws a run: its format, its columns and the per-cell figures.
pub struct View {
    /// The format.
    pub format: Format,
    /// Every column.
    pub wide: bool,
    /// The per-cell and real-time figures shown.
    pub figures: cells::Chosen,
    /// The line on the newest noise floor of the run's machine, when `show` looked for one.
    pub floor: Option<String>,
}

impl Default for View {
    fn default() -> View {
        View { format: Format::Table, wide: false, figures: cells::Chosen::all(), floor: None }
    }
}

/// Prints the header, the per-cell totals and the per-process means of a run.
pub fn print_run(store: &Store, id: i64) -> anyhow::Result<()> {
    print_subject(&schedlab_session::subject::of_run(store, pick_run(store, Some(id))?)?)
}

/// A stored run's name as a line shows it: control characters as '?', at most
/// [`schedlab_spec::ECHO_CHARS`] characters (a spec may name a run with 100 KB).
pub fn shown_name(name: &str) -> String {
    let plain: String = name.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    schedlab_spec::cut(&plain, schedlab_spec::ECHO_CHARS)
}

/// A campaign's shards: where each ran and which cells each machine measured.
fn print_campaign(s: &Subject) -> anyhow::Result<()> {
    let r = &s.run;
    outln!(
        "{} — {} ({}, {}), {} shard runs, started {} UTC, {} cell repetitions stored, scale {}",
        s.name(),
        shown_name(&r.name),
        r.mode,
        r.status,
        s.shards.len(),
        utc(r.started_unix),
        r.cells_done,
        r.scale
    );
    for sh in &s.shards {
        let e = &sh.env;
        outln!(
            "  shard {}: run {} ({}) on {}: {} CPUs, {}, kernel {}, {} cell repetitions, {}",
            sh.identity.shard.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
            sh.id,
            sh.identity.uuid,
            e.machine.label(),
            e.cpus,
            e.cpu_model,
            e.kernel,
            sh.cells_done,
            sh.status
        );
    }
    outln!("\nMeasured on (repetitions per machine: the cells measured so):");
    for line in s.measured_on_lines(12) {
        outln!("  {line}");
    }
    for w in s.pooling_warnings() {
        outln!("warning: {w}");
    }
    Ok(())
}

/// Prints the header, the per-cell totals and the per-process means of a run or campaign.
pub fn print_subject(subject: &Subject) -> anyhow::Result<()> {
    print_view(subject, &View::default())
}

/// A table drawn as `view` asks (terminal or Markdown), with its footnotes.
fn draw<R>(cols: &[Col<R>], rows: &[R], view: &View, deterministic: bool) -> String {
    let md = view.format == Format::Markdown;
    cells::render(cols, rows, md, deterministic).trim_end().to_string()
}

/// A table drawn as `view` asks; a terminal table wider than [`cells::MAX_WIDTH`] (long
/// cell keys) leaves its spare columns to --wide, in their turn, until it fits.
fn fitted<R>(cols: Vec<Col<R>>, rows: &[R], view: &View, deterministic: bool) -> String {
    let fitting = view.format == Format::Table && !view.wide;
    cells::fit(cols, fitting, |cols| draw(cols, rows, view, deterministic))
}

/// A table named by cell key, drawn as `view` asks, its secondary columns left to --wide.
fn narrowed<'a, T: cells::Keyed>(
    cols: Vec<Col<Named<'a, T>>>,
    rows: &[Named<'a, T>],
    view: &View,
    deterministic: bool,
) -> String {
    fitted(cells::narrow(cols, view.wide, &[]), rows, view, deterministic)
}

/// What a run or campaign is, where it ran, and what its tables' figures mean.
fn print_head(
    subject: &Subject,
    stats: &[schedlab_analysis::CellStats],
    deterministic: bool,
    floor: Option<&str>,
) -> anyhow::Result<()> {
    let (run, cells) = (&subject.run, &subject.cells);
    if subject.campaign.is_some() {
        print_campaign(subject)?;
    } else {
        outln!(
            "run {} — {} ({}, {}), started {} UTC, {} cell repetitions stored, scale {}",
            run.id,
            shown_name(&run.name),
            run.mode,
            run.status,
            utc(run.started_unix),
            run.cells_done,
            run.scale
        );
        outln!(
            "machine: {} CPUs, {}, kernel {}, RT throttling {}/{} us",
            run.env.cpus,
            run.env.cpu_model,
            run.env.kernel,
            run.env.rt_runtime_us.map(|v| v.to_string()).unwrap_or("?".into()),
            run.env.rt_period_us.map(|v| v.to_string()).unwrap_or("?".into())
        );
        for line in schedlab_report::limits::header_lines(&run.env.limits) {
            outln!("{line}");
        }
        if let Some(line) = floor {
            outln!("noise floor: {line}");
        }
    }
    if let Some(model) = sim_model(cells) {
        outln!("model: {model}");
    }
    if let Some(note) = tables::dma_latency_note(stats) {
        outln!("cpu_dma_latency {note}.");
    }
    print_knobs(&run.knobs_before, cells)?;
    sayln!("\nValues are means over n repetitions; {}.", tables::INTERVAL_NOTE);
    if deterministic {
        sayln!("{}.", tables::DETERMINISTIC_NOTE);
    }
    Ok(())
}

/// Prints a run or campaign as `view` asks: everything as terminal or Markdown tables, or
/// the per-cell summary as CSV or JSON.
pub fn print_view(subject: &Subject, view: &View) -> anyhow::Result<()> {
    let run = &subject.run;
    let cells = &subject.cells;
    let stats = schedlab_analysis::cell_stats(cells);
    let rt = schedlab_analysis::rt_stats(cells);
    let bench = schedlab_analysis::bench_stats(cells);
    let deterministic = run.mode == schedlab_model::Mode::Sim.as_str();
    if let Some(name) = match view.format {
        Format::Csv => Some("csv"),
        Format::Json => Some("json"),
        Format::Table | Format::Markdown => None,
    } {
        let rows = cells::values(&stats, &rt, &bench, &view.figures);
        let exporter = schedlab_report::export::by_name(name).expect("csv and json exist");
        let mut out = std::io::stdout().lock();
        exporter.write_values(&rows, &mut out).map_err(super::out::stdout_error)?;
        return Ok(());
    }
    print_head(subject, &stats, deterministic, view.floor.as_deref())?;
    let named = tables::named(&stats);
    if cells::any_of(&view.figures.cell, &tables::TOTALS) {
        sayln!("\nPer cell, totals over its processes (mean ±95% CI over n repetitions; preempted = involuntary, blocked = voluntary context switches):");
        let cols = cells::totals_columns(view.wide, &view.figures.cell);
        outln!("{}", fitted(cols, &named, view, deterministic));
    }
    if cells::any_of(&view.figures.cell, &tables::PER_PROCESS) {
        let sched = stats.iter().any(|s| s.run_delay_per_proc.is_some()) && !view.wide;
        sayln!(
            "\nPer process (mean of each repetition's per-process mean, ±95% CI over n repetitions{}):",
            if sched { "; --wide adds the kernel's run delay and migrations" } else { "" }
        );
        let cols = cells::per_process_columns(&stats, view.wide, &view.figures.cell);
        outln!("{}", fitted(cols, &named, view, deterministic));
    }
    let grouped = stats.iter().any(|s| {
        s.params.groups.len() > 1
            || s.params.groups.iter().any(|g| {
                g.affinity != "all"
                    || g.cpu_weight.is_some()
                    || g.cpu_max.is_some()
                    || g.cpuset.is_some()
            })
            || s.params.workload_kind == "hash"
    });
    if grouped {
        sayln!("\nThroughput and fairness (measured groups only; background groups count only in the CPU shares):");
        let cols = tables::fairness_columns();
        outln!("{}", fitted(cols, &stats, view, deterministic));
    }
    let io = schedlab_analysis::io_stats(cells);
    if !io.is_empty() {
        sayln!(
            "\nI/O (mean ±95% CI over n repetitions; MB/s = bytes of the cell / its time; latency per read/write call, percentiles of each repetition's merged histogram; device counters from /sys/block/<dev>/stat):"
        );
        let table = narrowed(tables::io_columns(), &tables::io_named(&io), view, deterministic);
        outln!("{table}");
    }
    if !rt.is_empty() && !view.figures.rt.is_empty() {
        sayln!(
            "\nReal-time task sets (mean ±95% CI over n repetitions; per process = averaged over the set's tasks; missed = misses / jobs; violations of (x, y) windows, fixed and sliding; latency = scheduling latency (wake-up, or hand-off under the edf and dwcs dispatchers), percentiles of each repetition's merged histogram; every job: export --jobs):"
        );
        let cols = cells::rt_columns(view.wide, &view.figures);
        let table = fitted(cols, &tables::rt_named(&rt), view, deterministic);
        outln!("{table}");
        if let Some(note) = tables::rt_placement_note(&rt, run.env.cpus) {
            sayln!("{note}.");
        }
        let per_cpu = tables::rt_cpu_named(&rt);
        if !per_cpu.is_empty() {
            sayln!("\nPartitioned sets, per CPU (the same figures for each CPU's tasks; C/T and min util. = that CPU's share):");
            outln!("{}", draw(&tables::rt_cpu_columns(), &per_cpu, view, deterministic));
        }
    }
    if !bench.is_empty() && !view.figures.bench.is_empty() {
        sayln!("\nBenchmarks ({}):", schedlab_report::bench::NOTE);
        let cols = cells::bench_columns(&bench, view.wide, &view.figures);
        outln!("{}", fitted(cols, &schedlab_report::bench::named(&bench), view, deterministic));
    }
    if !subject.sets.is_empty() {
        let curves = schedlab_analysis::acceptance(&subject.sets);
        sayln!("\n{}:", schedlab_report::sets::ACCEPTANCE_NOTE);
        outln!("{}", schedlab_report::sets::acceptance_table(&curves, view.wide));
        sayln!("Every set: `schedlab export --per set`; these curves: `export --per acceptance`.");
    }
    if let Some(note) = tables::repetitions_note(cells.iter().map(|c| &c.params)) {
        outln!("\n{note}.");
    }
    print_failures(cells)?;
    if !run.warnings.is_empty() {
        outln!("\n{} warning(s) during the run:", run.warnings.len());
        for w in run.warnings.iter().take(20) {
            outln!("  - {w}");
        }
    }
    if let Some(w) = schedlab_report::noise::noise_warning(cells, run.env.cpus as usize) {
        outln!("\nwarning: {w}");
    }
    let limits = schedlab_report::limits::throttle_warning(&stats)
        .into_iter()
        .chain(schedlab_report::limits::rt_warning(&run.env.limits, &stats));
    for w in limits {
        outln!("\nwarning: {w}");
    }
    Ok(())
}

/// Lists the measured repetitions left out of the figures because they failed, with why.
/// The knobs the run found and put back, and each set of values in force (read back).
fn print_knobs(
    before: &std::collections::BTreeMap<String, String>,
    cells: &[schedlab_model::CellRecord],
) -> anyhow::Result<()> {
    let list = |m: &std::collections::BTreeMap<String, String>| {
        m.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
    };
    if !before.is_empty() {
        outln!("knobs before the run (put back after it): {}", list(before));
    }
    let mut seen: Vec<(&std::collections::BTreeMap<String, String>, usize)> = Vec::new();
    for c in cells.iter().filter(|c| !c.knobs.is_empty()) {
        match seen.iter_mut().find(|(k, _)| *k == &c.knobs) {
            Some((_, n)) => *n += 1,
            None => seen.push((&c.knobs, 1)),
        }
    }
    for (k, n) in seen {
        outln!("knobs in force (read back) in {n} cell repetition(s): {}", list(k));
    }
    Ok(())
}

fn print_failures(cells: &[schedlab_model::CellRecord]) -> anyhow::Result<()> {
    let measured: Vec<_> = cells.iter().filter(|c| !c.warmup).collect();
    let failed: Vec<_> = measured.iter().filter(|c| !c.status.is_ok()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    outln!(
        "
{} of {} measured cell repetitions FAILED and are left out of the figures above:",
        failed.len(),
        measured.len()
    );
    // One line per cell and reason: the repetitions of a cell that failed alike share it.
    let mut lines: Vec<(&str, Vec<u32>, &str, &str)> = Vec::new();
    for c in &failed {
        let (key, status) = (c.params.key.as_str(), c.status.as_str());
        let why = c.message.as_deref().unwrap_or("?");
        match lines.iter_mut().find(|l| l.0 == key && l.2 == status && l.3 == why) {
            Some(l) => l.1.push(c.rep + 1),
            None => lines.push((key, vec![c.rep + 1], status, why)),
        }
    }
    const SHOWN: usize = 20;
    for (key, reps, status, why) in lines.iter().take(SHOWN) {
        let reps = reps.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        let rep = if reps.contains(',') { "reps" } else { "rep" };
        outln!("  - {key} {rep} {reps}: {status}: {why}");
    }
    if lines.len() > SHOWN {
        outln!(
            "  ... and {} more (`schedlab export` has every one: cell_status, cell_message)",
            lines.len() - SHOWN
        );
    }
    Ok(())
}

/// Runs `schedlab show`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let figures = cells::chosen(&a.metric).map_err(bad_input)?;
    let store = open_existing(db)?;
    let mut subject = schedlab_session::subject::load(&store, a.run.as_deref())?;
    if let Some(p) = &a.cell {
        subject.keep_cells(p)?;
    }
    // Per-job records feed the real-time figures made of them (the response time), which
    // the narrow table leaves out.
    if a.wide || matches!(a.format, Format::Csv | Format::Json) {
        subject.attach_job_logs(&store)?;
    }
    // A measured run's header names the newest noise floor of its machine (`compare` uses it).
    let floor = (subject.run.mode == schedlab_model::Mode::Measured.as_str()).then(|| {
        let f = schedlab_session::floor::newest_for(&store, &subject.run.env).ok().flatten();
        super::envcmd::floor_line(f.as_ref(), "the run's machine")
    });
    print_view(&subject, &View { format: a.format, wide: a.wide, figures, floor })?;
    let knees = schedlab_session::knee::of_run(&store, &subject)?;
    for line in knees.filter(|_| a.format == Format::Table).iter().flat_map(|k| k.lines()) {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
