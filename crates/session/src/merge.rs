//! `merge`: copying runs (a campaign's shards) into one database, and which shards each
//! campaign touched now has.

use crate::Error;
use schedlab_store::{MergeError, MergeReport, Store};
use std::collections::BTreeMap;
use std::path::Path;

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Copies the runs of `sources` into `output` (created if missing; removed again when this
/// merge created it and failed: an empty database left behind would pass for a merged one).
pub fn merge(output: &Path, sources: &[std::path::PathBuf]) -> Result<(Store, MergeReport), Error> {
    for s in sources {
        if !s.is_file() {
            return Err(Error::Refused(format!("no database at {}", s.display())));
        }
        if same_file(s, output) {
            return Err(Error::Refused(format!(
                "{} is the output: it cannot also be merged into itself",
                s.display()
            )));
        }
    }
    let created = !output.exists();
    let merged = crate::db::open(output).and_then(|mut store| {
        let report = store.merge(sources).map_err(|e| match e {
            MergeError::Refused(m) => Error::Refused(format!("{m}; nothing was merged")),
            MergeError::Db { path, err } => Error::Failed(format!(
                "merging {} into {}: {err}",
                path.display(),
                output.display()
            )),
        })?;
        Ok((store, report))
    });
    if merged.is_err() && created {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = output.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    merged
}

/// Each campaign the merge touched: its number of shards and those `store` still lacks
/// (as `K/N`).
pub fn missing_shards(
    store: &Store,
    report: &MergeReport,
) -> Result<Vec<(String, u32, Vec<String>)>, Error> {
    let mut campaigns: BTreeMap<String, u32> = BTreeMap::new();
    for (c, s) in report.merged.iter().chain(&report.completed).filter_map(|m| m.campaign.as_ref())
    {
        campaigns.insert(c.clone(), s.count);
    }
    let mut out = Vec::new();
    for (c, count) in campaigns {
        let have: Vec<u32> = store
            .campaign_runs(&c)?
            .iter()
            .filter_map(|r| r.identity.shard.map(|s| s.index))
            .collect();
        let missing =
            (0..count).filter(|k| !have.contains(k)).map(|k| format!("{k}/{count}")).collect();
        out.push((c, count, missing));
    }
    Ok(out)
}
