//! The restore journal: every change schedlab makes to the machine is written here (and
//! fsync'd) *before* it is made, and undone in reverse order on every exit path: normal
//! end, error, panic (Drop), SIGINT/SIGTERM, and after SIGKILL or a crash by the next
//! schedlab start or `schedlab restore`, which replay journals whose owner is gone.
//!
//! Journals live in a state directory on tmpfs (`/run/schedlab` for root): what they undo
//! (cgroups, loop devices, mounts) does not survive a reboot either.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

/// One change, described by how to undo it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "snake_case")]
pub enum Entry {
    /// A cgroup directory schedlab created: kill what is left in it, then rmdir.
    RemoveCgroup {
        /// The cgroup directory.
        path: PathBuf,
    },
    /// A file whose content schedlab changed: write `value` back.
    Restore {
        /// The file.
        path: PathBuf,
        /// Its content before the change.
        value: String,
    },
    /// A directory tree schedlab created exclusively (an experiment directory): remove it.
    RemoveTree {
        /// The directory.
        path: PathBuf,
    },
    /// A filesystem schedlab mounted: unmount it (lazily if it stays busy).
    Unmount {
        /// The mount point.
        path: PathBuf,
    },
    /// A loop device schedlab attached: detach every loop device backed by this file.
    DetachLoop {
        /// The backing file (absolute, canonical).
        backing: PathBuf,
    },
    /// A file schedlab created exclusively (a dispatcher's status region): remove it.
    RemoveFile {
        /// The file.
        path: PathBuf,
    },
}

/// The state directory: `SCHEDLAB_STATE_DIR`, else /run/schedlab (root), else a per-user
/// directory under the runtime or temp dir.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SCHEDLAB_STATE_DIR") {
        return PathBuf::from(d);
    }
    // SAFETY: no failure mode.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from("/run/schedlab");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("schedlab"),
        None => std::env::temp_dir().join(format!("schedlab-state-{uid}")),
    }
}

/// An open journal of this process.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    entries: Vec<Entry>,
}

impl Journal {
    /// Creates this process's journal in `dir`.
    pub fn create(dir: &Path) -> io::Result<Journal> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("journal-{}.jsonl", std::process::id()));
        // A journal left by an earlier process with our pid is replayed first.
        if path.exists() {
            replay(&path);
        }
        let file = OpenOptions::new().append(true).create_new(true).open(&path)?;
        Ok(Journal { path, file, entries: Vec::new() })
    }

    /// Records `e` durably; call before making the change it undoes.
    pub fn record(&mut self, e: Entry) -> io::Result<()> {
        let mut line = serde_json::to_vec(&e).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()?;
        self.entries.push(e);
        Ok(())
    }

    /// Changes recorded and not yet undone.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Undoes the newest entries until `keep` remain (e.g. a cell's cgroups after the cell).
    pub fn undo_to(&mut self, keep: usize) -> Vec<String> {
        let mut errors = Vec::new();
        while self.entries.len() > keep {
            let e = self.entries.pop().expect("len > keep");
            if let Err(err) = undo(&e) {
                errors.push(format!("{e:?}: {err}"));
            }
        }
        // Rewrite the file so a crash from here on replays only what is still in force.
        let _ = self.rewrite();
        errors
    }

    fn rewrite(&mut self) -> io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        for e in &self.entries {
            let mut line = serde_json::to_vec(e).map_err(io::Error::other)?;
            line.push(b'\n');
            f.write_all(&line)?;
        }
        f.sync_data()?;
        std::fs::rename(&tmp, &self.path)?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }

    /// Undoes everything and removes the journal file.
    pub fn close(mut self) -> Vec<String> {
        let errors = self.undo_to(0);
        if errors.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        std::mem::forget(self);
        errors
    }
}

impl Drop for Journal {
    /// The panic and early-return path: undo whatever is still in force.
    fn drop(&mut self) {
        let errors = self.undo_to(0);
        if errors.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        } else {
            for e in errors {
                eprintln!("schedlab: could not undo {e}; run `schedlab restore`");
            }
        }
    }
}

fn undo(e: &Entry) -> io::Result<()> {
    match e {
        Entry::RemoveCgroup { path } => crate::cgroup::remove_dir(path),
        Entry::Restore { path, value } => std::fs::write(path, value),
        Entry::RemoveTree { path } => {
            // Never delete through a filesystem still mounted inside the tree.
            if crate::blockdev::is_mount_point(&path.join("mnt")) {
                crate::blockdev::unmount(&path.join("mnt"))?;
            }
            match std::fs::remove_dir_all(path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                r => r,
            }
        }
        Entry::Unmount { path } => crate::blockdev::unmount(path),
        Entry::DetachLoop { backing } => crate::blockdev::loop_detach_backing(backing),
        Entry::RemoveFile { path } => match std::fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        },
    }
}

/// Undoes a journal file's entries in reverse order; returns what was done and what failed.
pub fn replay(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(f) = File::open(path) else { return out };
    let entries: Vec<Entry> = io::BufReader::new(f).lines().map_while(Result::ok).filter_map(|l| serde_json::from_str(&l).ok()).collect();
    let mut failed = false;
    for e in entries.iter().rev() {
        match undo(e) {
            Ok(()) => out.push(format!("undone: {e:?}")),
            Err(err) => {
                failed = true;
                out.push(format!("FAILED: {e:?}: {err}"));
            }
        }
    }
    if !failed {
        let _ = std::fs::remove_file(path);
    }
    out
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// Replays every journal in `dir` whose owner process is gone (or all with `all`);
/// returns a line per action.
pub fn recover(dir: &Path, all: bool) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("journal-").and_then(|s| s.strip_suffix(".jsonl")).and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if all || !pid_alive(pid) {
            out.push(format!("journal of process {pid} ({}):", e.path().display()));
            out.extend(replay(&e.path()).into_iter().map(|l| format!("  {l}")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("schedlab-journal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn undoes_in_reverse_and_removes_itself() {
        let d = dir("rev");
        let f = d.join("setting");
        std::fs::write(&f, "original").unwrap();
        let mut j = Journal::create(&d.join("state")).unwrap();
        j.record(Entry::Restore { path: f.clone(), value: "original".into() }).unwrap();
        std::fs::write(&f, "first").unwrap();
        j.record(Entry::Restore { path: f.clone(), value: "first".into() }).unwrap();
        std::fs::write(&f, "second").unwrap();
        assert!(j.close().is_empty());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "original");
        assert_eq!(std::fs::read_dir(d.join("state")).unwrap().count(), 0, "journal file removed");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_journal_left_behind_is_replayed_by_recover() {
        let d = dir("stale");
        let tree = d.join("experiment");
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        let state = d.join("state");
        std::fs::create_dir_all(&state).unwrap();
        // As if process 999999 (not alive) had crashed after recording.
        let line = serde_json::to_string(&Entry::RemoveTree { path: tree.clone() }).unwrap();
        std::fs::write(state.join("journal-999999.jsonl"), format!("{line}\n")).unwrap();
        let report = recover(&state, false);
        assert!(report.iter().any(|l| l.contains("undone")), "{report:?}");
        assert!(!tree.exists());
        assert!(!state.join("journal-999999.jsonl").exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn undo_to_keeps_older_entries() {
        let d = dir("partial");
        let (a, b) = (d.join("a"), d.join("b"));
        std::fs::write(&a, "a0").unwrap();
        std::fs::write(&b, "b0").unwrap();
        let mut j = Journal::create(&d.join("state")).unwrap();
        j.record(Entry::Restore { path: a.clone(), value: "a0".into() }).unwrap();
        std::fs::write(&a, "a1").unwrap();
        j.record(Entry::Restore { path: b.clone(), value: "b0".into() }).unwrap();
        std::fs::write(&b, "b1").unwrap();
        assert!(j.undo_to(1).is_empty());
        assert_eq!((std::fs::read_to_string(&a).unwrap(), std::fs::read_to_string(&b).unwrap()), ("a1".into(), "b0".into()));
        drop(j); // the Drop path undoes the rest
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "a0");
        std::fs::remove_dir_all(d).unwrap();
    }
}
