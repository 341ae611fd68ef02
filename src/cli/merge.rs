//! `schedlab merge -o ALL.db A.db B.db ...`: copy runs (a campaign's shards) into one database.

use super::common::{bad_input, open_store};
use schedlab_store::MergeError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Runs `schedlab merge`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    for s in &a.sources {
        if !s.is_file() {
            return Err(bad_input(format!("no database at {}", s.display())));
        }
        if same_file(s, &a.output) {
            return Err(bad_input(format!(
                "{} is the output: it cannot also be merged into itself",
                s.display()
            )));
        }
    }
    // An output this merge creates goes again if the merge fails: an empty database left
    // behind would pass for a merged one.
    let created = !a.output.exists();
    let merged = open_store(&a.output).and_then(|mut store| {
        let report = store.merge(&a.sources).map_err(|e| match e {
            MergeError::Refused(m) => bad_input(format!("{m}; nothing was merged")),
            MergeError::Db { path, err } => {
                anyhow::anyhow!("merging {} into {}: {err}", path.display(), a.output.display())
            }
        })?;
        Ok((store, report))
    });
    let (store, report) = match merged {
        Ok(m) => m,
        Err(e) => {
            if created {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = a.output.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
            return Err(e);
        }
    };
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
    let mut campaigns: BTreeMap<String, u32> = BTreeMap::new();
    for (c, s) in report.merged.iter().chain(&report.completed).filter_map(|m| m.campaign.as_ref())
    {
        campaigns.insert(c.clone(), s.count);
    }
    for (c, count) in &campaigns {
        let have: Vec<u32> = store
            .campaign_runs(c)?
            .iter()
            .filter_map(|r| r.identity.shard.map(|s| s.index))
            .collect();
        let missing: Vec<String> =
            (0..*count).filter(|k| !have.contains(k)).map(|k| format!("{k}/{count}")).collect();
        if missing.is_empty() {
            outln!("campaign {c}: all {count} shards present");
        } else {
            outln!(
                "campaign {c}: {} of {count} shards present; missing {}",
                *count as usize - missing.len(),
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
