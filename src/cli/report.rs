//! `schedlab report`: a self-contained HTML report of a stored run, with every figure
//! beside it as SVG and PNG, and optionally a comparison with another run.

use super::common::{bad_input, open_existing, utc};
use schedlab_analysis::{
    cell_outliers, cell_stats, compare_runs, Correction, Metric, MODIFIED_Z_THRESHOLD,
};
use schedlab_model::CellRecord;
use schedlab_report::html::{self, CompareSection, ReportInput, RunMeta};
use schedlab_report::output::{self, OutputError};
use schedlab_session::subject::Subject;
use schedlab_store::{RunRow, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id, or a campaign (`campaign:ID` or its id); the newest run without it.
    pub run: Option<String>,
    /// Directory to write the report into: created if missing, refused if it is a file, a
    /// link or a non-empty directory.
    #[arg(long, short, value_name = "DIR")]
    pub output: PathBuf,
    /// Write into a non-empty directory, replacing files of the same names.
    #[arg(long)]
    pub force: bool,
    /// Add a comparison section: this run (A) against OTHER_RUN (B, a run or a campaign),
    /// cells matched by key.
    #[arg(long, value_name = "OTHER_RUN")]
    pub compare: Option<String>,
    /// The comparison's first metric.
    #[arg(long, default_value = "wall", value_parser = super::values::metrics())]
    pub metric: String,
    /// Significance level of the comparison's Welch tests.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
}

/// A stored run's header as the report shows it.
pub fn meta(run: &RunRow) -> RunMeta {
    RunMeta {
        id: run.id,
        name: run.name.clone(),
        mode: run.mode.clone(),
        status: run.status.to_string(),
        started: utc(run.started_unix),
        finished: run.finished_unix.map(utc),
        scale: run.scale,
        cells_done: run.cells_done,
        spec_path: run.spec_path.clone(),
        spec_hash: run.spec_hash.clone(),
        spec_text: run.spec_text.clone(),
        command_line: run.command_line.clone(),
        warnings: run.warnings.clone(),
        model: None,
        env: run.env.clone(),
    }
}

/// Refuses a metric `run` cannot have: a trace metric of a run made without `--trace`, a
/// real-time figure of a run without periodic task sets.
pub fn check_metric(metric: Metric, run: &RunRow, records: &[CellRecord]) -> anyhow::Result<()> {
    if metric.needs_trace() && !records.iter().any(|r| r.trace.is_some()) {
        return Err(bad_input(format!(
            "run {} ({}) was not traced: --metric {} comes from kernel traces; make the run with `schedlab run --trace`",
            run.id, run.name, metric
        )));
    }
    if metric.needs_periodic() && schedlab_analysis::rt_stats(records).is_empty() {
        return Err(bad_input(format!(
            "run {} ({}) has no periodic task set: --metric {} is a real-time figure of `kind = \"periodic\"` groups",
            run.id, run.name, metric
        )));
    }
    Ok(())
}

/// Parses `--metric` and `--alpha` (bad input on either).
pub fn metric_and_alpha(metric: &str, alpha: f64) -> anyhow::Result<Metric> {
    let m = Metric::parse(metric).ok_or_else(|| {
        let names: Vec<&str> = Metric::every().map(|m| m.name()).collect();
        bad_input(format!("unknown metric \"{metric}\"; use one of {}", names.join(", ")))
    })?;
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(bad_input(format!("--alpha must be between 0 and 1 (exclusive), got {alpha}")));
    }
    Ok(m)
}

fn output_error(e: OutputError) -> anyhow::Error {
    match e {
        OutputError::Refused(m) => bad_input(m),
        io => anyhow::Error::new(io),
    }
}

fn comparison(
    store: &Store,
    a: &[CellRecord],
    mut other: Subject,
    first: Metric,
    alpha: f64,
) -> anyhow::Result<CompareSection> {
    check_metric(first, &other.run, &other.cells)?;
    other.attach_job_logs(store)?;
    let b = other.cells;
    let other = &other.run;
    let traced = |rs: &[CellRecord]| rs.iter().any(|r| r.trace.is_some());
    let mut metrics = vec![first];
    metrics.extend(Metric::ALL.iter().copied().filter(|m| *m != first));
    if traced(a) && traced(&b) {
        metrics.extend(Metric::TRACE.iter().copied().filter(|m| *m != first));
    }
    let by_metric = metrics
        .into_iter()
        .filter_map(|m| compare_runs(a, &b, m, alpha, Correction::Holm))
        .collect();
    Ok(CompareSection { other: meta(other), by_metric, rt: schedlab_analysis::rt_stats(&b) })
}

/// Runs `schedlab report`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let metric = metric_and_alpha(&a.metric, a.alpha)?;
    output::check_dir(&a.output, a.force).map_err(output_error)?;
    let store = open_existing(db)?;
    let mut subject = schedlab_session::subject::load(&store, a.run.as_deref())?;
    let other = a
        .compare
        .as_deref()
        .map(|id| schedlab_session::subject::load(&store, Some(id)))
        .transpose()?;
    if other.is_some() {
        check_metric(metric, &subject.run, &subject.cells)?;
    }
    // Per-job records feed the response time figure of periodic sets.
    subject.attach_job_logs(&store)?;
    let mut run = subject.run.clone();
    // A campaign says where its cells were measured, and what its figures pool.
    if let Some(c) = &subject.campaign {
        let on = subject.measured_on_lines(40);
        run.warnings.insert(
            0,
            format!(
                "campaign {c}, measured on (repetitions per machine: the cells measured so): {}",
                on.join("; ")
            ),
        );
        run.warnings.extend(subject.pooling_warnings());
    }
    if let Some(o) = &other {
        run.warnings.extend(schedlab_session::subject::machine_warnings(&subject, o));
    }
    run.warnings
        .extend(schedlab_report::noise::noise_warning(&subject.cells, run.env.cpus as usize));
    let knees = schedlab_session::knee::of_run(&store, &subject)?.unwrap_or_default();
    run.warnings.extend(knees.calibration_notes);
    let records = subject.cells;
    let sets = subject.sets;
    let stats = cell_stats(&records);
    let outliers = cell_outliers(&records, MODIFIED_Z_THRESHOLD);
    let compare = other.map(|o| comparison(&store, &records, o, metric, a.alpha)).transpose()?;
    let run_meta = RunMeta { model: super::common::sim_model(&records), ..meta(&run) };
    let io = schedlab_analysis::io_stats(&records);
    let rt = schedlab_analysis::rt_stats(&records);
    let bench = schedlab_analysis::bench_stats(&records);
    let traces = schedlab_analysis::trace_stats(&records);
    let shows = schedlab_report::within::shows(&records, a.alpha);
    let rendered = html::render(&ReportInput {
        run: &run_meta,
        stats: &stats,
        outliers: &outliers,
        compare: compare.as_ref(),
        io: &io,
        rt: &rt,
        bench: &bench,
        traces: &traces,
        shows: shows.as_ref(),
        sets: &sets,
        knees: &knees.sets,
    })?;
    output::write_dir(&a.output, &rendered.files, a.force).map_err(output_error)?;
    outln!(
        "wrote {} ({} figures as SVG and PNG in {})",
        a.output.join("index.html").display(),
        rendered.charts.len(),
        a.output.join("figures").display()
    );
    Ok(ExitCode::SUCCESS)
}
