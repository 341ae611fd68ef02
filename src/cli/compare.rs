//! `schedlab compare A B`: two stored runs cell by cell (matched by key), with the ratio
//! of means, its CI and Welch's test over repetitions, and a warning for each way the two
//! runs differ (scale, measured or simulated, machine, spec). `schedlab compare RUN --by
//! AXIS`: one run's levels of an axis (policies, say) against a baseline level, within each
//! group of cells that agree on the other axes. Both adjust their p-values for the number
//! of tests (Holm unless `--correction` says otherwise).

use super::common::{bad_input, open_existing, utc};
use super::report::{check_metric, meta, metric_and_alpha};
use schedlab_analysis::{compare_runs, compare_within, Correction, Metric};
use schedlab_report::{compare, verdicts as report_verdicts, within};
use schedlab_session::verdicts;
use schedlab_verdict::Params;
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
    /// What to compare: a figure, or several separated by commas (`wall,makespan`); the
    /// verdicts judge every cell of every figure as one family (--by takes one).
    #[arg(long, short, default_value = "wall", value_delimiter = ',', value_parser = super::values::metrics())]
    pub metric: Vec<String>,
    /// Call a pair `same` when the ratio's 90% interval lies within ±this (`2%` or `0.02`);
    /// default: this machine's A/A floor of the cell and figure (`schedlab noise`), else 5%.
    #[arg(long, value_name = "PCT", value_parser = fraction)]
    pub same_within: Option<f64>,
    /// Exit 1 when any pair gets one of these verdicts (regressed, improved, undecided),
    /// for CI: `--fail-on regressed`.
    #[arg(long, value_delimiter = ',', value_name = "VERDICT", value_parser = ["regressed", "improved", "undecided"])]
    pub fail_on: Vec<String>,
    /// Judge without this machine's floor: `--same-within` (or 5%) and a 1% gate only.
    #[arg(long)]
    pub no_floor: bool,
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
    metrics: &[Metric],
) -> anyhow::Result<schedlab_session::subject::Subject> {
    let mut s = schedlab_session::subject::load(store, Some(id))?;
    if metrics.iter().any(|m| m.needs_periodic()) {
        s.attach_job_logs(store)?;
    }
    Ok(s)
}

/// Parses `--same-within`: `2%` or `0.02`, a fraction in (0, 1).
pub(super) fn fraction(text: &str) -> anyhow::Result<f64> {
    let (num, scale) = match text.trim().strip_suffix('%') {
        Some(p) => (p, 0.01),
        None => (text.trim(), 1.0),
    };
    match num.trim().parse::<f64>().map(|v| v * scale) {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        Ok(_) => Err(anyhow::anyhow!("must be between 0 and 100% (exclusive), got {text}")),
        Err(_) => Err(anyhow::anyhow!("not a share: \"{text}\" (e.g. 2% or 0.02)")),
    }
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
    let metrics: Vec<Metric> =
        a.metric.iter().map(|m| metric_and_alpha(m, a.alpha)).collect::<anyhow::Result<_>>()?;
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
        let [metric] = metrics[..] else {
            return Err(bad_input("--by compares one figure at a time: give one --metric"));
        };
        // The tables' name for the process count.
        let by = if by == "procs" { "processes" } else { by };
        return by_axis(&open_existing(db)?, &a, by, metric, correction);
    };
    let store = open_existing(db)?;
    let (sa, sb) = (load(&store, &a.a, &metrics)?, load(&store, b, &metrics)?);
    let (ra, rb) = (&sa.run, &sb.run);
    let (cells_a, cells_b) = (&sa.cells, &sb.cells);
    for m in &metrics {
        check_metric(*m, ra, cells_a)?;
        check_metric(*m, rb, cells_b)?;
    }
    let c =
        compare_runs(cells_a, cells_b, metrics[0], a.alpha, correction).expect("alpha was checked");
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
    let params = Params { alpha: a.alpha, same_within: a.same_within, ..Params::default() };
    let v = verdicts::judge_runs(&store, (&sa, &sb), &metrics, params, !a.no_floor)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match a.format.as_str() {
        "json" => {
            let mut j = compare::json(&c, ra.id, rb.id, &warnings);
            j["verdicts"] = report_verdicts::json(&v);
            serde_json::to_writer_pretty(&mut out, &j)?;
            writeln!(out)?;
        }
        "markdown" => write!(out, "{}", report_verdicts::markdown(&v, &warnings))?,
        _ => {
            for (side, s, r) in [("A", &sa, ra), ("B", &sb, rb)] {
                writeln!(
                    out,
                    "{side} = {} ({}, {}, started {} UTC)",
                    s.name(),
                    r.name,
                    r.status,
                    utc(r.started_unix)
                )?;
            }
            write!(out, "{}", report_verdicts::text(&v, &metrics))?;
        }
    }
    out.flush()?;
    failed(&v, &a.fail_on)
}

/// `schedlab compare RUN --by AXIS`: the run's levels of `by` against a baseline level.
fn by_axis(
    store: &schedlab_store::Store,
    a: &Args,
    by: &str,
    metric: Metric,
    correction: Correction,
) -> anyhow::Result<ExitCode> {
    let s = load(store, &a.a, &[metric])?;
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
    let floors = match a.no_floor {
        true => None,
        false => schedlab_session::floor::newest_for(store, &s.run.env)?,
    };
    let params = Params { alpha: a.alpha, same_within: a.same_within, ..Params::default() };
    let now = schedlab_session::now_unix();
    let v = verdicts::judge_within(s.run.id, &w, params, floors.as_ref(), now);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match a.format.as_str() {
        "json" => {
            let mut j = within::json(&w, s.run.id);
            j["verdicts"] = report_verdicts::json(&v);
            serde_json::to_writer_pretty(&mut out, &j)?;
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
            write!(out, "\nverdicts, each level against {}: ", w.baseline)?;
            write!(out, "{}", report_verdicts::text(&v, &[metric]))?;
        }
    }
    out.flush()?;
    failed(&v, &a.fail_on)
}

/// Exit status 1 when a row's verdict is among `fail_on` (said on stderr), else 0.
fn failed(v: &report_verdicts::Verdicts, fail_on: &[String]) -> anyhow::Result<ExitCode> {
    let failed = report_verdicts::failures(v, fail_on);
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("compare: {}; exit status 1", failed.join(", "));
    Ok(ExitCode::from(1))
}
