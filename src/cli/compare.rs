//! `schedlab compare A B`: two stored runs cell by cell (matched by key), with the ratio
//! of means, its CI and Welch's test over repetitions, and a warning for each way the two
//! runs differ (scale, measured or simulated, machine, spec). `schedlab compare RUN --by
//! AXIS`: one run's levels of an axis (policies, say) against a baseline level, within each
//! group of cells that agree on the other axes. Both adjust their p-values for the number
//! of tests (Holm unless `--correction` says otherwise).

use super::common::{bad_input, open_existing, utc};
use super::report::{check_metric, meta, metric_and_alpha};
use schedlab_analysis::{compare_runs, compare_within, Correction};
use schedlab_report::{compare, within};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `schedlab compare`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  schedlab compare 3 4                  run 4 against run 3, cell by cell\n  \
schedlab compare 3 --by policy        run 3's policies against its first, per workload and count\n  \
schedlab compare 3 --by policy --baseline fifo --metric involuntary --correction bh"
)]
pub struct Args {
    /// The baseline run (A): a run id, or a campaign (`campaign:ID` or its id); with --by,
    /// the run whose levels are compared.
    pub a: String,
    /// The run or campaign compared with A (B); ratios are B/A. Give either B or --by.
    #[arg(conflicts_with = "by")]
    pub b: Option<String>,
    /// Compare the levels of this axis within run A instead (policy, processes, workload,
    /// nice, ...: the axes the run sweeps), in each group of cells that agree on the others.
    #[arg(long, value_name = "AXIS")]
    pub by: Option<String>,
    /// With --by: the level the others are compared with (default: the first in plan order).
    #[arg(long, value_name = "LEVEL", requires = "by")]
    pub baseline: Option<String>,
    /// What to compare.
    #[arg(long, short, default_value = "wall", value_parser = super::values::metrics())]
    pub metric: String,
    /// The output's format (csv with --by only).
    #[arg(long, short, default_value = "table", value_parser = formats())]
    pub format: String,
    /// Significance level of the Welch tests; intervals are at 1 - alpha.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
    /// How the p-values of all the cells (pairs) are adjusted for their number: holm
    /// (family-wise error), bh (Benjamini-Hochberg, false discovery rate) or none.
    #[arg(long, default_value = "holm")]
    pub correction: String,
}

/// A run or campaign with what `metric` is made of: the per-job records for a real-time
/// figure (the response time is theirs).
fn load(
    store: &schedlab_store::Store,
    id: &str,
    metric: schedlab_analysis::Metric,
) -> anyhow::Result<schedlab_session::subject::Subject> {
    let mut s = schedlab_session::subject::load(store, Some(id))?;
    if metric.needs_periodic() {
        s.attach_job_logs(store)?;
    }
    Ok(s)
}

/// Parses `--correction` (bad input with the valid names).
fn correction(name: &str) -> anyhow::Result<Correction> {
    Correction::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Correction::ALL.iter().map(|c| c.name()).collect();
        bad_input(format!("unknown correction \"{name}\"; use one of {}", names.join(", ")))
    })
}

/// The formats `compare` writes.
fn formats() -> super::values::Names {
    use clap::builder::PossibleValue;
    super::values::Names::new(
        "format",
        [
            PossibleValue::new("table").help("a table and a summary line"),
            PossibleValue::new("markdown").alias("md").help("a Markdown table"),
            PossibleValue::new("csv").help("CSV, a row per pair (with --by)"),
            PossibleValue::new("json").help("one JSON object"),
        ],
    )
}

/// Runs `schedlab compare`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let metric = metric_and_alpha(&a.metric, a.alpha)?;
    let correction = correction(&a.correction)?;
    if a.format == "csv" && a.by.is_none() {
        return Err(bad_input("two runs compare as table, markdown or json (csv with --by)"));
    }
    let Some(b) = a.b.as_deref() else {
        let Some(by) = a.by.as_deref() else {
            return Err(bad_input(format!(
                "compare needs a second run or an axis: `schedlab compare {0} RUN_B` compares two runs cell by cell, \
                 `schedlab compare {0} --by policy` compares run {0}'s policies (or another axis it sweeps) within it",
                a.a
            )));
        };
        // The tables' name for the process count.
        let by = if by == "procs" { "processes" } else { by };
        return by_axis(&open_existing(db)?, &a, by, metric, correction);
    };
    let store = open_existing(db)?;
    let (sa, sb) = (load(&store, &a.a, metric)?, load(&store, b, metric)?);
    let (ra, rb) = (&sa.run, &sb.run);
    let (cells_a, cells_b) = (&sa.cells, &sb.cells);
    check_metric(metric, ra, cells_a)?;
    check_metric(metric, rb, cells_b)?;
    let c = compare_runs(cells_a, cells_b, metric, a.alpha, correction).expect("alpha was checked");
    if c.cells.is_empty() {
        return Err(bad_input(format!(
            "{} ({}) and {} ({}) have no cell in common: cells are matched by key (e.g. cpu/other/n10); compare runs of the same experiment",
            sa.name(),
            ra.name,
            sb.name(),
            rb.name
        )));
    }
    let mut warnings = compare::run_differences(&meta(ra), &meta(rb));
    warnings.extend(schedlab_session::subject::machine_warnings(&sa, &sb));
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match a.format.as_str() {
        "json" => {
            serde_json::to_writer_pretty(&mut out, &compare::json(&c, ra.id, rb.id, &warnings))?;
            writeln!(out)?;
        }
        "markdown" => write!(out, "{}", compare::markdown(&c, ra.id, rb.id, &warnings))?,
        _ => {
            writeln!(
                out,
                "A = {} ({}, {}, started {} UTC)",
                sa.name(),
                ra.name,
                ra.status,
                utc(ra.started_unix)
            )?;
            writeln!(
                out,
                "B = {} ({}, {}, started {} UTC)",
                sb.name(),
                rb.name,
                rb.status,
                utc(rb.started_unix)
            )?;
            writeln!(
                out,
                "{} per repetition, mean ±{} CI over repetitions (+up/-down where it is not symmetric); ratio B/A [CI]; Welch's t-test, \
                 p-values adjusted for the number of cells ({}):",
                metric.label(),
                compare::level(&c),
                c.correction.label()
            )?;
            writeln!(out, "{}", compare::table(&c, ra.id, rb.id))?;
            write!(out, "{}", compare::notes(&c))?;
            writeln!(out, "{}", compare::summary_line(&c, ra.id, rb.id))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `schedlab compare RUN --by AXIS`: the run's levels of `by` against a baseline level.
fn by_axis(
    store: &schedlab_store::Store,
    a: &Args,
    by: &str,
    metric: schedlab_analysis::Metric,
    correction: Correction,
) -> anyhow::Result<ExitCode> {
    let s = load(store, &a.a, metric)?;
    check_metric(metric, &s.run, &s.cells)?;
    let w = compare_within(
        &s.cells,
        &within::coords,
        by,
        a.baseline.as_deref(),
        metric,
        a.alpha,
        correction,
    )
    .map_err(|e| bad_input(format!("{} ({}): {e}", s.name(), s.run.name)))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match a.format.as_str() {
        "json" => {
            serde_json::to_writer_pretty(&mut out, &within::json(&w, s.run.id))?;
            writeln!(out)?;
        }
        "csv" => write!(out, "{}", within::csv(&w))?,
        "markdown" | "md" => write!(out, "{}", within::markdown(&w))?,
        _ => {
            writeln!(
                out,
                "{} ({}, {}, started {} UTC)",
                s.name(),
                s.run.name,
                s.run.status,
                utc(s.run.started_unix)
            )?;
            writeln!(out, "{}", within::legend(&w))?;
            writeln!(out, "{}", within::table(&w))?;
            write!(out, "{}", within::notes(&w))?;
            writeln!(out, "{}", within::summary_line(&w))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
