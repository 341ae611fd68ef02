//! `schedlab export`: per-process samples, or per-job records of periodic tasks, as csv,
//! json or markdown.

use super::common::{bad_input, open_existing, pick_run};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id (the newest run without it).
    pub run: Option<i64>,
    /// csv, json or markdown.
    #[arg(long, short, default_value = "csv")]
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
}

/// Runs `schedlab export`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let exporter = schedlab_report::export::by_name(&a.format)
        .ok_or_else(|| bad_input(format!("unknown format \"{}\"; use csv, json or markdown", a.format)))?;
    let store = open_existing(db)?;
    let run = pick_run(&store, a.run)?;
    let cells: Vec<_> = store.cells(run.id)?.into_iter().filter(|c| a.include_warmup || !c.warmup).collect();
    let failed = cells.iter().filter(|c| !c.status.is_ok()).count();
    if failed > 0 {
        let empty = cells.iter().filter(|c| !c.status.is_ok() && c.samples.is_empty()).count();
        eprintln!(
            "note: {failed} of {} cell repetitions of run {} failed: their rows have cell_status != ok and the reason in cell_message{}",
            cells.len(),
            run.id,
            if empty > 0 { format!("; {empty} never started and have no rows (`schedlab show` lists them)") } else { String::new() }
        );
    }
    let rows = if a.jobs {
        let mut rows = Vec::new();
        for c in &cells {
            let logs = store.job_logs(run.id, c.params.cell_id, c.rep, c.warmup)?;
            rows.extend(schedlab_report::flat::flatten_jobs(run.id, c, &logs));
        }
        if rows.is_empty() {
            return Err(bad_input(format!("run {} has no per-job records (they come from periodic workloads)", run.id)));
        }
        schedlab_report::export::values(&rows)
    } else {
        schedlab_report::export::values(&schedlab_report::flat::flatten(run.id, &cells))
    };
    match &a.output {
        Some(p) => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
                .map_err(|e| bad_input(format!("cannot create {}: {e}", p.display())))?;
            let mut w = std::io::BufWriter::new(f);
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
