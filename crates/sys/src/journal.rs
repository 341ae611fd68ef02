//! The restore journal: every change schedlab makes to the machine is written here (and
//! fsync'd) *before* it is made, and undone in reverse order on every exit path: normal
//! end, error, panic (Drop), SIGINT/SIGTERM, and after SIGKILL or a crash by the next
//! schedlab start or `schedlab restore`, which replay journals whose owner is gone.
//!
//! Journals live in a state directory on tmpfs (`/run/schedlab` for root): what they undo
//! (cgroups, loop devices, mounts) does not survive a reboot either.
//!
//! A journal is append-only, one JSON object a line, so a kill at any instruction leaves a
//! file that says what is still in force:
//!
//! * a change: `{"seq":N,"undo":...}`, written and synced before the change is made;
//! * a marker `{"undone":[N,...]}` once those changes are undone; a kill before the marker
//!   replays them once more, which is harmless because every undo is idempotent (undoing a
//!   change that was never made, or was already undone, succeeds and does nothing);
//! * a last line cut short by the kill is ignored: its change was not made yet.
//!
//! The file is named `journal-<pid>-<start>.jsonl` (start: the process's start time in
//! clock ticks since boot), so a later process that reuses the pid is not taken for its
//! owner. Older schedlab versions named it `journal-<pid>.jsonl` and rewrote it through
//! `journal-<pid>.tmp`; [`recover`] reads both.

use crate::procfs;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One change, described by how to undo it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "snake_case")]
pub enum Entry {
    /// A cgroup directory schedlab created: kill what is left in it, then rmdir.
    RemoveCgroup {
        /// The cgroup directory.
        path: PathBuf,
    },
    /// A file whose content schedlab changed: write `value` back (a file that is gone
    /// went with what it belonged to, and needs nothing).
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
    /// A directory schedlab created on the way to its experiment directory (a parent named
    /// by `dir` that did not exist): remove it if it is empty; one that is not empty keeps
    /// what someone else put there.
    RemoveEmptyDir {
        /// The directory.
        path: PathBuf,
    },
    /// A file schedlab created exclusively: remove it.
    RemoveFile {
        /// The file.
        path: PathBuf,
    },
    /// Files schedlab creates under names it completes only when creating them (a
    /// dispatcher's status region): remove every file in `dir` whose name starts with
    /// `prefix`. Journaled before the first such file exists.
    RemoveFiles {
        /// The directory.
        dir: PathBuf,
        /// The names' common beginning, unique to this process.
        prefix: String,
    },
    /// A tracefs instance schedlab created (`<tracefs>/instances/<name>`): rmdir it, which
    /// frees its buffers and every setting made inside it.
    RemoveTraceInstance {
        /// The instance directory.
        path: PathBuf,
    },
    /// A sched_ext scheduler schedlab started: if that process (pid and start time) still
    /// runs, SIGINT, SIGKILL after a grace period; then wait until `state` reads
    /// `disabled` (the kernel unloaded it).
    StopScheduler {
        /// The scheduler's pid.
        pid: i32,
        /// Its start time (/proc/PID/stat field 22), so a reused pid is left alone.
        start: u64,
        /// `/sys/kernel/sched_ext/state`.
        state: PathBuf,
    },
    /// A process schedlab moved out of its cgroup (the engine, into one with RT runtime,
    /// `probe::place`): if it (pid and start time) still runs, write it back into `cgroup`.
    ReturnToCgroup {
        /// The process.
        pid: i32,
        /// Its start time (/proc/PID/stat field 22), so a reused pid is left alone.
        start: u64,
        /// The cgroup directory it came from.
        cgroup: PathBuf,
    },
}

/// Makes sure `dir` is a directory (not a link) owned by this user that no one else may
/// write: creates it with mode 0700 if it is missing, takes group and other write away from
/// one of ours. The per-user fallback lives in a shared temp dir, where another user could
/// otherwise have made it first and planted journals for `restore` to replay.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let m = std::fs::symlink_metadata(dir)?;
    // SAFETY: no failure mode.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() || m.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the state directory {} is {} (uid {}), not a directory of this user (uid {me}): remove it, or set SCHEDLAB_STATE_DIR",
                dir.display(),
                if m.file_type().is_symlink() {
                    "a symbolic link"
                } else if m.file_type().is_dir() {
                    "owned by another user"
                } else {
                    "not a directory"
                },
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(m.mode() & 0o755))?;
    }
    Ok(())
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

/// The process a journal belongs to: its pid and, where known, its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Owner {
    pid: i32,
    start: Option<u64>,
}

impl Owner {
    fn me() -> Owner {
        let pid = std::process::id() as i32;
        Owner { pid, start: procfs::process_start(pid).map(|s| s.0) }
    }

    /// The journal's file name without its extension.
    fn stem(&self) -> String {
        match self.start {
            Some(start) => format!("journal-{}-{start}", self.pid),
            None => format!("journal-{}", self.pid),
        }
    }

    /// Reads a stem `journal-<pid>-<start>` or an older version's `journal-<pid>`.
    fn parse(stem: &str) -> Option<Owner> {
        let rest = stem.strip_prefix("journal-")?;
        let (pid, start) = match rest.split_once('-') {
            Some((pid, start)) => (pid, Some(start.parse().ok()?)),
            None => (rest, None),
        };
        Some(Owner { pid: pid.parse().ok()?, start })
    }

    /// Whether the owner still runs (and may still undo its own changes). A zombie does not;
    /// a process that reused the pid is not the owner.
    fn alive(&self) -> bool {
        match procfs::process_start(self.pid) {
            None | Some((_, false)) => false,
            Some((start, true)) => match self.start {
                Some(s) => s == start,
                None => runs_schedlab(self.pid),
            },
        }
    }
}

/// For a journal whose name has no start time: whether `pid` runs a program named schedlab
/// (when that cannot be read, it is assumed to, so nothing is undone under a live run).
fn runs_schedlab(pid: i32) -> bool {
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(exe) => {
            let name =
                exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            name.trim_end_matches(" (deleted)") == "schedlab"
        }
        Err(_) => true,
    }
}

/// An open journal of this process.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Bytes of whole lines in the file: a write that fails part-way is cut back to this, so
    /// the next line is not glued to a fragment.
    len: u64,
    /// Changes in force, oldest first, with their sequence numbers.
    entries: Vec<Entry>,
    seqs: Vec<u64>,
    next_seq: u64,
    /// Changes whose undo failed: left in force in the file, for `schedlab restore`.
    unresolved: usize,
    /// A failed write could not be cut back: nothing more may be recorded.
    broken: bool,
    /// Closed: Drop has nothing left to do.
    closed: bool,
}

impl Journal {
    /// Creates this process's journal in `dir`.
    pub fn create(dir: &Path) -> io::Result<Journal> {
        private_dir(dir)?;
        let path = dir.join(format!("{}.jsonl", Owner::me().stem()));
        let file = OpenOptions::new().append(true).create_new(true).open(&path)?;
        Ok(Journal {
            path,
            file,
            len: 0,
            entries: Vec::new(),
            seqs: Vec::new(),
            next_seq: 0,
            unresolved: 0,
            broken: false,
            closed: false,
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `e` durably; call before making the change it undoes.
    pub fn record(&mut self, e: Entry) -> io::Result<()> {
        let seq = self.next_seq;
        self.append(&change_line(seq, &e)?)?;
        self.next_seq += 1;
        self.entries.push(e);
        self.seqs.push(seq);
        Ok(())
    }

    /// Takes back the newest entry without undoing it: its change was not made, and undoing
    /// it would touch what is not ours (a directory that already existed).
    pub fn retract(&mut self) -> io::Result<()> {
        let Some(seq) = self.seqs.pop() else { return Ok(()) };
        self.entries.pop();
        self.append(&undone_line(&[seq]))
    }

    fn append(&mut self, line: &[u8]) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other(format!(
                "{} could not be repaired after a failed write",
                self.path.display()
            )));
        }
        match self.file.write_all(line).and_then(|()| self.file.sync_data()) {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                if self.file.set_len(self.len).is_err() {
                    self.broken = true;
                }
                Err(io::Error::new(
                    e.kind(),
                    format!("cannot write the restore journal {}: {e}", self.path.display()),
                ))
            }
        }
    }

    /// Changes recorded and not yet undone.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Undoes the newest entries until `keep` remain (e.g. a cell's cgroups after the cell).
    /// An entry whose undo fails stays in force in the file, for `schedlab restore`.
    pub fn undo_to(&mut self, keep: usize) -> Vec<String> {
        let mut errors = Vec::new();
        let mut undone = Vec::new();
        while self.entries.len() > keep {
            let e = self.entries.pop().expect("len > keep");
            let seq = self.seqs.pop().expect("one seq per entry");
            match undo(&e) {
                Ok(()) => undone.push(seq),
                Err(err) => {
                    self.unresolved += 1;
                    errors.push(format!("{e:?}: {err}"));
                }
            }
        }
        if undone.is_empty() {
            return errors;
        }
        // Nothing left in force: an empty file says so in one step.
        if self.entries.is_empty()
            && self.unresolved == 0
            && !self.broken
            && self.file.set_len(0).is_ok()
        {
            self.len = 0;
        } else {
            let _ = self.append(&undone_line(&undone));
        }
        errors
    }

    /// Undoes everything and removes the journal file (kept if an undo failed).
    pub fn close(mut self) -> Vec<String> {
        self.finish()
    }

    fn finish(&mut self) -> Vec<String> {
        self.closed = true;
        let errors = self.undo_to(0);
        if self.unresolved == 0 {
            let _ = std::fs::remove_file(&self.path);
        }
        errors
    }
}

impl Drop for Journal {
    /// The panic and early-return path: undo whatever is still in force.
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        for e in self.finish() {
            eprintln!("schedlab: could not undo {e}; run `schedlab restore`");
        }
    }
}

/// A change's line: its sequence number first, then the entry.
fn change_line(seq: u64, e: &Entry) -> io::Result<Vec<u8>> {
    let mut obj = serde_json::Map::new();
    obj.insert("seq".into(), seq.into());
    match serde_json::to_value(e).map_err(io::Error::other)? {
        serde_json::Value::Object(fields) => obj.extend(fields),
        _ => unreachable!("an internally tagged enum serialises as an object"),
    }
    let mut line = serde_json::to_vec(&obj).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

fn undone_line(seqs: &[u64]) -> Vec<u8> {
    let mut line =
        serde_json::to_vec(&serde_json::json!({ "undone": seqs })).expect("numbers serialise");
    line.push(b'\n');
    line
}

fn undo(e: &Entry) -> io::Result<()> {
    let gone_is_done = |r: io::Result<()>| match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    };
    match e {
        Entry::RemoveCgroup { path } => crate::cgroup::remove_dir(path),
        // Never created: a missing file is not made (a fake tree's too).
        Entry::Restore { path, value } => {
            let r = gone_is_done(
                OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(path)
                    .and_then(|mut f| f.write_all(value.as_bytes())),
            );
            match r {
                Err(e) if still_in_use(path, value, &e) => Ok(()),
                r => r,
            }
        }
        Entry::RemoveTree { path } => {
            // Never delete through a filesystem still mounted inside the tree.
            if crate::blockdev::is_mount_point(&path.join("mnt")) {
                crate::blockdev::unmount(&path.join("mnt"))?;
            }
            gone_is_done(std::fs::remove_dir_all(path))
        }
        Entry::Unmount { path } => crate::blockdev::unmount(path),
        Entry::DetachLoop { backing } => crate::blockdev::loop_detach_backing(backing),
        Entry::RemoveFile { path } => gone_is_done(std::fs::remove_file(path)),
        Entry::RemoveEmptyDir { path } => match std::fs::remove_dir(path) {
            Err(e)
                if e.raw_os_error() == Some(libc::ENOTEMPTY)
                    || e.raw_os_error() == Some(libc::EEXIST) =>
            {
                Ok(())
            }
            r => gone_is_done(r),
        },
        Entry::RemoveFiles { dir, prefix } => {
            let rd = match std::fs::read_dir(dir) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                r => r?,
            };
            for f in rd.filter_map(Result::ok) {
                // Files and links only (a link is removed, never followed); never a directory.
                if f.file_name().to_string_lossy().starts_with(prefix.as_str())
                    && f.file_type().is_ok_and(|t| !t.is_dir())
                {
                    gone_is_done(std::fs::remove_file(f.path()))?;
                }
            }
            Ok(())
        }
        Entry::RemoveTraceInstance { path } => remove_trace_instance(path, &crate::Root::default()),
        Entry::StopScheduler { pid, start, state } => stop_scheduler(*pid, *start, state),
        Entry::ReturnToCgroup { pid, start, cgroup } => {
            crate::probe::return_to(*pid, *start, cgroup)
        }
    }
}

/// How long a sched_ext scheduler has to exit after SIGINT before it is killed.
pub const SCHEDULER_GRACE: Duration = Duration::from_secs(5);
/// How long the kernel has to unload a scheduler whose process is gone.
pub const SCHEDULER_UNLOAD: Duration = Duration::from_secs(30);

fn stop_scheduler(pid: i32, start: u64, state: &Path) -> io::Result<()> {
    let ours = || procfs::process_start(pid).is_some_and(|(s, alive)| alive && s == start);
    for (sig, within) in [(libc::SIGINT, SCHEDULER_GRACE), (libc::SIGKILL, SCHEDULER_GRACE)] {
        if !ours() {
            break;
        }
        // SAFETY: plain kill(2) on the pid checked just above (start time included).
        unsafe { libc::kill(pid, sig) };
        let end = std::time::Instant::now() + within;
        while ours() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if ours() {
        return Err(io::Error::other(format!(
            "the sched_ext scheduler (pid {pid}) survived SIGKILL"
        )));
    }
    // A state file that is gone (a fake tree removed, a kernel without sched_ext) has
    // nothing to wait for.
    if !state.exists() {
        return Ok(());
    }
    crate::scx::wait_for(state, "disabled", SCHEDULER_UNLOAD, || None).map_err(io::Error::other)
}

/// Removes a tracefs instance. Gone is done, but only where tracefs is still mounted to say
/// so: if the mount the path went through is gone, the instance is looked for under every
/// tracefs mounted now, and an error (the entry stays in force) when there is none.
fn remove_trace_instance(path: &Path, root: &crate::Root) -> io::Result<()> {
    let (Some(instances), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not an instance path", path.display()),
        ));
    };
    let candidates: Vec<PathBuf> = if instances.is_dir() {
        vec![path.to_path_buf()]
    } else {
        let mounts = root.read("/proc/self/mountinfo").unwrap_or_default();
        let found: Vec<PathBuf> = crate::blockdev::mounts_of_type(&mounts, "tracefs")
            .into_iter()
            .map(|m| m.join("instances").join(name))
            .collect();
        if found.is_empty() {
            return Err(io::Error::other(format!(
                "tracefs is not mounted: the instance {} may remain; mount tracefs and run `schedlab restore`",
                name.to_string_lossy()
            )));
        }
        found
    };
    for p in candidates {
        // Busy while a reader still holds one of its files open: that reader is ours and is
        // closing, so wait a little before giving up.
        let mut tries = 0;
        loop {
            match std::fs::remove_dir(&p) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                r => {
                    r?;
                    break;
                }
            }
        }
    }
    Ok(())
}

/// A v2 controller schedlab enabled in a `cgroup.subtree_control` that cgroups made since
/// (by others) now use: the kernel refuses to disable it (EBUSY), and it must stay enabled
/// for them, so the undo is done as far as it may be. Without this, every later `restore`
/// would fail on it.
fn still_in_use(path: &Path, value: &str, e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EBUSY)
        && value.starts_with('-')
        && path.file_name().is_some_and(|n| n == "cgroup.subtree_control")
}

/// What a journal file says: the changes still in force (oldest first, with their sequence
/// numbers where the line had one) and how many lines could not be read.
struct Contents {
    in_force: Vec<(Option<u64>, Entry)>,
    unreadable: usize,
    /// Whole records this version does not understand (a newer version's), still in force.
    unknown: Vec<String>,
}

enum Line {
    Change(Option<u64>, Entry),
    Undone(Vec<u64>),
    /// A whole JSON object that is no record this version knows: (its seq, its text).
    Unknown(Option<u64>, String),
}

fn parse_line(line: &[u8]) -> Option<Line> {
    let mut v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let text = v.to_string();
    let obj = v.as_object_mut()?;
    if let Some(u) = obj.get("undone") {
        return Some(
            serde_json::from_value(u.clone())
                .map(Line::Undone)
                .unwrap_or(Line::Unknown(None, text)),
        );
    }
    let seq = obj.remove("seq").and_then(|s| s.as_u64());
    Some(
        serde_json::from_value(v).map(|e| Line::Change(seq, e)).unwrap_or(Line::Unknown(seq, text)),
    )
}

fn read_contents(path: &Path) -> io::Result<Contents> {
    let bytes = std::fs::read(path)?;
    let mut changes = Vec::new();
    let mut undone = HashSet::new();
    let mut unreadable = 0;
    let mut unknown = Vec::new();
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.trim_ascii().is_empty()) {
        match parse_line(line) {
            Some(Line::Change(seq, e)) => changes.push((seq, e)),
            Some(Line::Undone(seqs)) => undone.extend(seqs),
            Some(Line::Unknown(seq, text)) => unknown.push((seq, text)),
            None => unreadable += 1,
        }
    }
    let live = |seq: &Option<u64>| !seq.is_some_and(|s| undone.contains(&s));
    let in_force = changes.into_iter().filter(|(seq, _)| live(seq)).collect();
    let unknown = unknown.into_iter().filter(|(seq, _)| live(seq)).map(|(_, t)| t).collect();
    Ok(Contents { in_force, unreadable, unknown })
}

/// The changes a journal file holds in force, oldest first (what a replay would undo).
pub fn in_force(path: &Path) -> io::Result<Vec<Entry>> {
    Ok(read_contents(path)?.in_force.into_iter().map(|(_, e)| e).collect())
}

/// Undoes a journal file's changes still in force, newest first, and removes the file when
/// all succeeded (else marks those undone, so a later replay retries only the rest);
/// returns a line per action.
pub fn replay(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let contents = match read_contents(path) {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.push(format!("FAILED: reading {}: {e}", path.display()));
            return out;
        }
    };
    if contents.unreadable > 0 {
        out.push(format!(
            "ignored {} unreadable line(s): a record cut short (its change is made only after the whole record)",
            contents.unreadable
        ));
    }
    let mut undone = Vec::new();
    // A newer version's record is kept for that version's `restore`: the journal stays.
    let mut failed = !contents.unknown.is_empty();
    for text in &contents.unknown {
        out.push(format!(
            "FAILED: a record this version does not understand (written by a newer schedlab?) is kept in {}: {text}; \
             run `schedlab restore` with the version that wrote it",
            path.display()
        ));
    }
    for (seq, e) in contents.in_force.iter().rev() {
        // A setting a live run holds now is that run's: writing the old value back would
        // change it under its cell (and that run puts back what it found).
        if let Entry::Restore { path, .. } = e {
            if let Some((pid, cmd)) = crate::lock::held_elsewhere(path) {
                failed = true;
                out.push(format!(
                    "FAILED: {e:?}: {} is held by a live run, process {pid} ({cmd}): run `schedlab restore` after it ends",
                    path.display()
                ));
                continue;
            }
        }
        match undo(e) {
            Ok(()) => {
                out.push(format!("undone: {e:?}"));
                undone.extend(*seq);
            }
            Err(err) => {
                failed = true;
                out.push(format!("FAILED: {e:?}: {err}"));
            }
        }
    }
    if !failed {
        let _ = std::fs::remove_file(path);
    } else if !undone.is_empty() {
        // A leading newline ends a fragment the kill may have left on the last line.
        let mut line = b"\n".to_vec();
        line.extend(undone_line(&undone));
        if let Err(e) =
            OpenOptions::new().append(true).open(path).and_then(|mut f| f.write_all(&line))
        {
            out.push(format!("could not mark the undone changes in {}: {e} (a later replay repeats them, harmlessly)", path.display()));
        }
    }
    out
}

/// The journal files in `dir` by name: (name, stem, extension, owner), in name order.
fn journals(dir: &Path) -> Vec<(String, String, String, Owner)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> =
        rd.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let (stem, ext @ ("jsonl" | "tmp")) = name.rsplit_once('.')? else { return None };
            let owner = Owner::parse(stem)?;
            Some((name.clone(), stem.to_string(), ext.to_string(), owner))
        })
        .collect()
}

/// The processes still running whose journals are in `dir`, by pid (what `recover` with
/// `all` would undo under them).
pub fn live_owners(dir: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = journals(dir)
        .into_iter()
        .filter(|(_, _, _, o)| o.alive())
        .map(|(_, _, _, o)| o.pid)
        .collect();
    pids.dedup();
    pids
}

/// Replays every journal in `dir` whose owner process is gone (or all with `all`);
/// returns a line per action.
pub fn recover(dir: &Path, all: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    // A journal says what to delete and write back: only ones this user alone could have
    // written are replayed.
    if let Err(e) = private_dir(dir) {
        out.push(format!("FAILED: not replaying the journals in {}: {e}", dir.display()));
        return out;
    }
    for (name, stem, ext, owner) in journals(dir) {
        let (stem, ext) = (stem.as_str(), ext.as_str());
        let (journal, tmp) = (dir.join(format!("{stem}.jsonl")), dir.join(format!("{stem}.tmp")));
        // An older version rewrote its journal through `.tmp` + rename: a kill before the
        // rename left the tmp beside the journal, which holds every change the tmp does
        // (and more: replaying them again is harmless); the tmp goes with its journal.
        if ext == "tmp" && journal.exists() {
            continue;
        }
        if !all && owner.alive() {
            continue;
        }
        let path = dir.join(&name);
        out.push(format!("journal of process {} ({}):", owner.pid, path.display()));
        let lines = replay(&path);
        let failed = lines.iter().any(|l| l.starts_with("FAILED"));
        out.extend(lines.into_iter().map(|l| format!("  {l}")));
        if ext == "jsonl" && !failed && tmp.exists() {
            match std::fs::remove_file(&tmp) {
                Ok(()) => out.push(format!(
                    "  removed {} (an unfinished rewrite of the journal)",
                    tmp.display()
                )),
                Err(e) => out.push(format!("  FAILED: removing {}: {e}", tmp.display())),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
