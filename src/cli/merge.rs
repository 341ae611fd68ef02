//! `schedlab merge -o ALL.db A.db B.db ...`: copy runs (a campaign's shards) into one database.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `schedlab merge`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The database to merge into (created if missing; runs already in it stay).
    #[arg(long, short, value_name = "ALL.db")]
    pub output: PathBuf,
    /// Databases whose runs are copied (each run once, by its UUID).
    #[arg(required = true, value_name = "DB")]
    pub sources: Vec<PathBuf>,
    /// Print only the summary line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `schedlab merge`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let (store, report) = schedlab_session::merge::merge(&a.output, &a.sources)?;
    if !a.quiet {
        // A run merged before and gone further since is copied again whole.
        let again = ": it has gone further since it was merged";
        let copied = report
            .merged
            .iter()
            .map(|m| ("merged", "", m))
            .chain(report.completed.iter().map(|m| ("merged again", again, m)));
        for (how, why, m) in copied {
            outln!(
                "{how} run {} of {} as run {} ({}{}, {} cell repetitions){why}",
                m.source_id,
                m.source.display(),
                m.id,
                m.uuid,
                m.campaign
                    .as_ref()
                    .map(|(c, s)| format!(", campaign {c} shard {s}"))
                    .unwrap_or_default(),
                m.cells
            );
        }
        for (src, old, id) in &report.present {
            outln!("run {old} of {} is already here as run {id}: skipped", src.display());
        }
    }
    for (src, old, why) in &report.skipped {
        eprintln!("warning: run {old} of {} not merged: {why}", src.display());
    }
    for (src, table, n) in &report.orphans {
        eprintln!("warning: {n} row(s) of table {table} in {} belong to no cell of it (no run): not merged", src.display());
    }
    // Each campaign touched: which shards it now has.
    for (c, count, missing) in schedlab_session::merge::missing_shards(&store, &report)? {
        if missing.is_empty() {
            outln!("campaign {c}: all {count} shards present");
        } else {
            outln!(
                "campaign {c}: {} of {count} shards present; missing {}",
                count as usize - missing.len(),
                missing.join(", ")
            );
        }
    }
    let mut also = String::new();
    if !report.completed.is_empty() {
        also.push_str(&format!(", {} brought up to date", report.completed.len()));
    }
    if !report.skipped.is_empty() {
        also.push_str(&format!(", {} not merged (see the warnings)", report.skipped.len()));
    }
    outln!(
        "{}: {} runs merged ({} cell repetitions), {} already present{also}",
        a.output.display(),
        report.merged.len(),
        report.merged.iter().map(|m| m.cells).sum::<i64>(),
        report.present.len()
    );
    Ok(ExitCode::SUCCESS)
}
