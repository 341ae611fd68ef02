//! `schedlab compare A B`: two stored runs cell by cell (matched by key), with the ratio
//! of means, its CI and Welch's test over repetitions, and a warning for each way the two
//! runs differ (scale, measured or simulated, machine, spec).

use super::common::{bad_input, open_existing, utc};
use super::report::{check_traced, meta, metric_and_alpha};
use schedlab_analysis::compare_runs;
use schedlab_report::compare;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `schedlab compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The baseline run (A): a run id, or a campaign (`campaign:ID` or its id).
    pub a: String,
    /// The run or campaign compared with it (B); ratios are B/A.
    pub b: String,
    /// What to compare.
    #[arg(long, short, default_value = "wall", value_parser = super::values::metrics())]
    pub metric: String,
    /// The output's format.
    #[arg(long, short, default_value = "table", value_parser = formats())]
    pub format: String,
    /// Significance level of the Welch tests; intervals are at 1 - alpha.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
}

/// The formats `run` writes.
fn formats() -> super::values::Names {
    use clap::builder::PossibleValue;
    super::values::Names::new(
        "format",
        [
            PossibleValue::new("table").help("a table and a summary line"),
            PossibleValue::new("markdown").alias("md").help("a Markdown table"),
            PossibleValue::new("json").help("one JSON object"),
        ],
    )
}

/// Runs `schedlab compare`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let metric = metric_and_alpha(&a.metric, a.alpha)?;
    let store = open_existing(db)?;
    let (sa, sb) =
        (super::campaign::load(&store, Some(&a.a))?, super::campaign::load(&store, Some(&a.b))?);
    let (ra, rb) = (&sa.run, &sb.run);
    let (cells_a, cells_b) = (&sa.cells, &sb.cells);
    check_traced(metric, ra, cells_a)?;
    check_traced(metric, rb, cells_b)?;
    let c = compare_runs(cells_a, cells_b, metric, a.alpha).expect("alpha was checked");
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
    warnings.extend(super::campaign::machine_warnings(&sa, &sb));
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
                "{} per repetition, mean ±{} CI over repetitions (+up/-down where it is not symmetric; n < 3: too few \
                 repetitions for an interval; ± > mean: its half-width exceeds the mean); ratio B/A [CI]; Welch's t-test:",
                metric.label(),
                compare::level(&c)
            )?;
            writeln!(out, "{}", compare::table(&c, ra.id, rb.id))?;
            writeln!(out, "{}", compare::summary_line(&c, ra.id, rb.id))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
