//! `schedlab export`: per-process samples, or per-job records of periodic tasks, as csv,
//! json, markdown or Parquet; or a run as hyperfine's JSON (one result per cell).

use super::common::{bad_input, open_existing};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id, or a campaign (`campaign:ID` or its id: every shard's rows, each with the
    /// machine that measured it); the newest run without it.
    pub run: Option<String>,
    /// The format.
    #[arg(long, short, default_value = "csv", value_parser = formats())]
    pub format: String,
    /// Write to this file instead of standard output (must not exist yet).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Include warm-up repetitions.
    #[arg(long)]
    pub include_warmup: bool,
    /// One row per job of every periodic task (release, start, finish, lateness, met)
    /// instead of one row per process.
    #[arg(long)]
    pub jobs: bool,
    /// process: a row per process (the default); cell: the per-cell summary `show` prints,
    /// a row per cell named by its key (csv and json: each figure's mean and 95% interval,
    /// the real-time figures too when the run has periodic sets, as `show --format json`;
    /// markdown: the tables, for a write-up).
    #[arg(long, value_enum, default_value_t = Per::Process)]
    pub per: Per,
}

/// What a row of `schedlab export` is.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    /// A process (or, with --jobs, a job).
    Process,
    /// A cell: its figures over the repetitions.
    Cell,
    /// A generated set of a batch (`generate = { sets = N }`): its tasks, outcome and each
    /// analytical test's verdict.
    Set,
    /// A point of an acceptance curve of the batches: per CPU count, scheduler or test and
    /// utilisation, the sets accepted with the 95% Wilson interval and the weighted
    /// schedulability.
    Acceptance,
}

/// The row formats of the report crate's exporters, then the two written here.
fn formats() -> super::values::Names {
    use clap::builder::PossibleValue;
    let rows = schedlab_report::export::FORMATS
        .iter()
        .map(|(f, also, what)| PossibleValue::new(f).aliases(also.iter().copied()).help(*what));
    super::values::Names::new(
        "format",
        rows.chain([
            PossibleValue::new("parquet").help("Apache Parquet, a column per field (needs --output)"),
            PossibleValue::new("hyperfine").help(
                "hyperfine's --export-json: a result per cell, its repetitions' makespans as the runs",
            ),
        ]),
    )
}

/// Runs `schedlab export`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    // The parser took only the names of `formats()`.
    let exporter = match a.format.as_str() {
        "parquet" | "hyperfine" => None,
        f => Some(schedlab_report::export::by_name(f).expect("a format of formats()")),
    };
    if a.format == "parquet" && a.output.is_none() {
        return Err(bad_input("the parquet format is binary: give a file with --output"));
    }
    if matches!(a.per, Per::Set | Per::Acceptance)
        && (a.jobs || a.format == "hyperfine" || a.format == "parquet")
    {
        return Err(bad_input(
            "--per set and --per acceptance write csv, json or markdown (not with --jobs)",
        ));
    }
    if a.per == Per::Cell && (a.jobs || a.format == "hyperfine" || a.format == "parquet") {
        return Err(bad_input(
            "--per cell writes the per-cell summary as csv, json or markdown (not with --jobs)",
        ));
    }
    if a.format == "hyperfine" && a.jobs {
        return Err(bad_input("--format hyperfine has a result per cell; per-job rows go to csv, json, markdown or parquet"));
    }
    let store = open_existing(db)?;
    let subject = schedlab_session::subject::load(&store, a.run.as_deref())?;
    let name = subject.name();
    for w in subject.pooling_warnings() {
        eprintln!("warning: {w}");
    }
    if a.format == "hyperfine" {
        let (doc, failed) = schedlab_report::hyperfine::document(&subject.cells);
        if failed > 0 {
            eprintln!("note: {failed} failed cell repetitions of {name} are left out (`schedlab show` lists them)");
        }
        return emit(a.output.as_deref(), &(serde_json::to_string_pretty(&doc)? + "\n"));
    }
    if matches!(a.per, Per::Set | Per::Acceptance) {
        let Some(rows) = schedlab_session::knee::export_rows(&store, &subject, a.per == Per::Set)?
        else {
            return Err(bad_input(format!(
                "{name} has no generated sets: they come from `schedlab simulate` of a spec whose `generate` asks for `sets = N`, or its live run (`live = k`)"
            )));
        };
        let mut out = Vec::new();
        exporter.as_ref().expect("csv, json or markdown").write_values(&rows, &mut out)?;
        return emit(a.output.as_deref(), &String::from_utf8(out)?);
    }
    if a.per == Per::Cell {
        let mut subject = subject;
        // Per-job records feed the real-time figures made of them (the response time).
        subject.attach_job_logs(&store)?;
        let stats = schedlab_analysis::cell_stats(&subject.cells);
        let rt = schedlab_analysis::rt_stats(&subject.cells);
        let bench = schedlab_analysis::bench_stats(&subject.cells);
        let figures = schedlab_report::cells::Chosen::all();
        let text = match &exporter {
            Some(_) if a.format == "markdown" || a.format == "md" => {
                let sim = subject.run.mode == schedlab_model::Mode::Sim.as_str();
                schedlab_report::cells::markdown(&stats, &rt, &bench, &figures, sim)
            }
            Some(e) => {
                let mut out = Vec::new();
                e.write_values(
                    &schedlab_report::cells::values(&stats, &rt, &bench, &figures),
                    &mut out,
                )?;
                String::from_utf8(out)?
            }
            None => unreachable!("parquet and hyperfine are refused or written above"),
        };
        return emit(a.output.as_deref(), &text);
    }
    let schedlab_session::subject::Rows { rows, cells, failed, empty } =
        subject.rows(&store, a.jobs, a.include_warmup)?;
    if failed > 0 {
        eprintln!(
            "note: {failed} of {cells} cell repetitions of {name} failed: their rows have cell_status != ok and the reason in cell_message{}",
            if empty > 0 { format!("; {empty} never started and have no rows (`schedlab show` lists them)") } else { String::new() }
        );
    }
    if a.jobs && rows.is_empty() {
        return Err(bad_input(format!(
            "{name} has no per-job records (they come from periodic workloads)"
        )));
    }
    let Some(exporter) = exporter else {
        let p = a.output.as_ref().expect("checked above");
        if rows.is_empty() {
            return Err(bad_input(format!("{name} has no rows to write")));
        }
        let f = create(p)?;
        if let Err(e) = schedlab_report::parquet::write(&rows, f) {
            // Half a file is no export.
            let _ = std::fs::remove_file(p);
            return Err(e.into());
        }
        return Ok(ExitCode::SUCCESS);
    };
    match &a.output {
        Some(p) => {
            let mut w = std::io::BufWriter::new(create(p)?);
            exporter.write_values(&rows, &mut w)?;
            w.flush()?;
        }
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            exporter.write_values(&rows, &mut w)?;
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to the new file `output`, or to standard output.
fn emit(output: Option<&Path>, text: &str) -> anyhow::Result<ExitCode> {
    match output {
        Some(p) => create(p)?.write_all(text.as_bytes())?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Creates the output file, which must not exist yet.
fn create(p: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(p)
        .map_err(|e| bad_input(format!("cannot create {}: {e}", p.display())))
}
