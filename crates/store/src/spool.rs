//! The spool: where a finished cell repetition goes when the database refuses it (locked
//! past every retry, read-only, disk full), so nothing measured is lost. One file per run
//! beside the database, one JSON line per record, appended and fsync'd; `schedlab run
//! SPEC --resume` imports it into the database first and removes it.

use schedlab_model::jobs::JobLog;
use schedlab_model::CellRecord;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

/// One spooled record: the cell repetition and its per-job records, which `CellRecord`'s
/// serialisation leaves out.
#[derive(Serialize, Deserialize)]
struct Line {
    run_id: i64,
    record: CellRecord,
    /// (worker index, its per-job records).
    jobs: Vec<(u32, JobLog)>,
}

/// The spool file of `run_id` beside the database `db`.
pub fn path(db: &Path, run_id: i64) -> PathBuf {
    let name = db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "schedlab.db".into());
    db.with_file_name(format!("{name}.spool-run{run_id}.jsonl"))
}

/// Appends `rec` to `file` durably (created if needed, never through a symlink).
pub fn append(file: &Path, run_id: i64, rec: &CellRecord) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let jobs = rec.samples.iter().filter_map(|s| s.jobs.clone().map(|j| (s.index, j))).collect();
    let mut line = serde_json::to_vec(&Line { run_id, record: rec.clone(), jobs }).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new().append(true).create(true).custom_flags(libc::O_NOFOLLOW).open(file)?;
    f.write_all(&line)?;
    f.sync_data()
}

/// The records spooled for `run_id` in `file`, in the order they were written. A torn last
/// line (a kill while appending) is skipped: its record was never acknowledged.
pub fn read(file: &Path, run_id: i64) -> io::Result<Vec<CellRecord>> {
    let f = std::fs::File::open(file)?;
    let mut out = Vec::new();
    for line in io::BufReader::new(f).lines() {
        let line = line?;
        let Ok(l) = serde_json::from_str::<Line>(&line) else { continue };
        if l.run_id != run_id {
            continue;
        }
        let mut rec = l.record;
        for (idx, log) in l.jobs {
            if let Some(s) = rec.samples.iter_mut().find(|s| s.index == idx) {
                s.jobs = Some(log);
            }
        }
        out.push(rec);
    }
    Ok(out)
}
