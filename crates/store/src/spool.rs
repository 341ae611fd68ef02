//! The spool: where a finished cell repetition goes when the database refuses it (locked
//! past every retry, read-only, disk full), so nothing measured is lost. One file per run
//! beside the database, one JSON line per record, appended and fsync'd; `schedlab run
//! SPEC --resume` imports it into the database first and removes it. A kept kernel capture
//! is not JSON: it goes to a file of its own beside the spool (`<spool>.trace-<cell>-<rep>`),
//! written and fsync'd before the line that names it.

use schedlab_model::jobs::JobLog;
use schedlab_model::trace::{RawTrace, RawTraceMeta};
use schedlab_model::CellRecord;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One spooled record: the cell repetition, its per-job records and where its kept capture
/// is, which `CellRecord`'s serialisation leaves out.
#[derive(Serialize, Deserialize)]
struct SpoolLine<R> {
    run_id: i64,
    record: R,
    /// (worker index, its per-job records).
    jobs: Vec<(u32, JobLog)>,
    /// The kept capture's file (a name beside the spool) and what it needs besides its bytes.
    #[serde(default)]
    raw_trace: Option<(String, RawTraceMeta)>,
}

/// The spool file of `run_id` beside the database `db`.
pub fn path(db: &Path, run_id: i64) -> PathBuf {
    let name = db
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "schedlab.db".into());
    db.with_file_name(format!("{name}.spool-run{run_id}.jsonl"))
}

/// The prefix of the names of the capture files beside the spool `file`.
fn trace_prefix(file: &Path) -> String {
    format!(
        "{}.trace-",
        file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    )
}

/// Appends `rec` to `file` durably (created if needed, never through a symlink); its kept
/// capture first goes to a file of its own.
pub fn append(file: &Path, run_id: i64, rec: &CellRecord) -> io::Result<()> {
    let jobs = rec.samples.iter().filter_map(|s| s.jobs.clone().map(|j| (s.index, j))).collect();
    let raw_trace = match &rec.raw_trace {
        Some(raw) => {
            let name = format!(
                "{}{}-{}{}",
                trace_prefix(file),
                rec.params.cell_id,
                rec.rep,
                if rec.warmup { "-w" } else { "" }
            );
            let capture = file.with_file_name(&name);
            if let Err(e) = write_durably(&capture, &raw.zstd) {
                let _ = std::fs::remove_file(capture);
                return Err(e);
            }
            Some((name, raw.meta.clone()))
        }
        None => None,
    };
    let capture = raw_trace.as_ref().map(|(name, _)| file.with_file_name(name));
    let appended = append_line(file, &SpoolLine { run_id, record: rec, jobs, raw_trace });
    if let (Err(_), Some(capture)) = (&appended, capture) {
        let _ = std::fs::remove_file(capture);
    }
    appended
}

/// Appends one line to `file`, or leaves the file as it was: a torn line would join the next
/// record's, and a spool file this append made stays only with a line in it.
fn append_line(file: &Path, line: &SpoolLine<&CellRecord>) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(io::Error::other)?;
    bytes.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)?;
    let before = f.metadata()?.len();
    let written = f.write_all(&bytes).and_then(|_| f.sync_data());
    if written.is_err() {
        let _ = f.set_len(before);
        if before == 0 {
            let _ = std::fs::remove_file(file);
        }
    }
    written
}

/// Writes `bytes` to `path` (replacing a file an unacknowledged attempt left, never
/// following a link) and makes the file and its name durable.
fn write_durably(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir)?.sync_all()
}

/// The records spooled for `run_id` in `file`, in the order they were written, each with
/// its kept capture. A torn last line (a kill while appending) is skipped: its record was
/// never acknowledged. A capture file a line names but that is gone is an error.
pub fn read(file: &Path, run_id: i64) -> io::Result<Vec<CellRecord>> {
    let f = std::fs::File::open(file)?;
    let mut out = Vec::new();
    for line in io::BufReader::new(f).lines() {
        let line = line?;
        let Ok(l) = serde_json::from_str::<SpoolLine<CellRecord>>(&line) else { continue };
        if l.run_id != run_id {
            continue;
        }
        let mut rec = l.record;
        for (idx, log) in l.jobs {
            if let Some(s) = rec.samples.iter_mut().find(|s| s.index == idx) {
                s.jobs = Some(log);
            }
        }
        if let Some((name, meta)) = l.raw_trace {
            let at = file.with_file_name(&name);
            let zstd = std::fs::read(&at).map_err(|e| {
                io::Error::new(e.kind(), format!("the kept kernel trace {}: {e}", at.display()))
            })?;
            rec.raw_trace = Some(RawTrace { meta, zstd });
        }
        out.push(rec);
    }
    Ok(out)
}

/// Removes the spool `file` and the capture files beside it (after an import).
pub fn remove(file: &Path) -> io::Result<()> {
    let prefix = trace_prefix(file);
    let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            std::fs::remove_file(e.path())?;
        }
    }
    std::fs::remove_file(file)
}
