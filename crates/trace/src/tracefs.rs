//! tracefs: found where it is mounted, or mounted privately (journaled), and an instance of
//! schedlab's own in it (journaled before its mkdir), so the global buffer and its settings,
//! which another tool may be using, are never touched. Every setting schedlab makes is made
//! inside its instance and goes with it.

use crate::raw::CpuStats;
use crate::TraceError;
use schedlab_sys::journal::{Entry, Journal};
use schedlab_sys::Root;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where tracefs is looked for, in order: the standard mount point, then the one debugfs
/// offers. A tracefs mounted anywhere else belongs to someone who may unmount it.
const STANDARD: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The scheduler's events every capture enables, as `system/event`. sched_wakeup is a
/// wake-up's enqueue, where a woken task's runnable wait starts (as the kernel's run_delay
/// does); sched_waking, its start on the waker's CPU, says which task was running there.
/// sched_wakeup_new: a new task's first wake-up.
pub const SCHED_EVENTS: [&str; 8] = [
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_process_fork",
    "sched/sched_process_exec",
    "sched/sched_process_exit",
];

/// The block layer's events a capture of an I/O cell adds.
pub const BLOCK_EVENTS: [&str; 2] = ["block/block_rq_issue", "block/block_rq_complete"];

/// Per-CPU buffer size schedlab's instances get unless told otherwise, KiB. Every pa3 cell
/// at scale 0.25 (500 processes, up to 270k events/s) lost nothing at 2048 with the reader
/// scheduled by [`crate::capture::ReaderPolicy::for_cell`]; 1024 lost events
/// (docs/BENCHMARKS.md). Twice the smallest that held is the default.
pub const DEFAULT_BUFFER_KB: u32 = 4096;

/// The prefix of every instance schedlab creates: `schedlab-<pid>-<start>-<n>`.
pub const INSTANCE_PREFIX: &str = "schedlab-";

/// A mounted tracefs.
#[derive(Debug, Clone)]
pub struct Tracefs {
    dir: PathBuf,
    mounted_here: bool,
}

impl Tracefs {
    /// tracefs at a known directory (a fake tree in tests).
    pub fn at(dir: impl Into<PathBuf>) -> Tracefs {
        Tracefs { dir: dir.into(), mounted_here: false }
    }

    /// tracefs where it is mounted (/sys/kernel/tracing, or under debugfs); else mounts
    /// it at a private mount point beside the journal, `tracefs-<pid>-<start>`, journaling
    /// the directory and the unmount first, so the journal's undo (or a replay) unmounts it.
    pub fn find_or_mount(root: &Root, journal: &mut Journal) -> Result<Tracefs, TraceError> {
        if let Some(dir) = find(root) {
            return Ok(Tracefs { dir, mounted_here: false });
        }
        let state = journal.path().parent().map(Path::to_path_buf).unwrap_or_default();
        let pid = std::process::id() as i32;
        let start = schedlab_sys::procfs::process_start(pid).map(|s| s.0).unwrap_or(0);
        let dir = state.join(format!("tracefs-{pid}-{start}"));
        let io = |what: &str| {
            let what = format!("{what} {}", dir.display());
            move |source| TraceError::Io { what, source }
        };
        journal
            .record(Entry::RemoveEmptyDir { path: dir.clone() })
            .map_err(io("journaling the mount point"))?;
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Not ours to remove: a mount point a killed run of this pid left, or a
                // directory someone made. Mounting over it is harmless; removing it is not.
                journal.retract().map_err(io("journaling"))?;
            }
            r => r.map_err(io("creating the mount point"))?,
        }
        journal
            .record(Entry::Unmount { path: dir.clone() })
            .map_err(io("journaling the mount of tracefs at"))?;
        mount_tracefs(&dir).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) => TraceError::Unavailable(format!(
                "mounting tracefs at {} needs CAP_SYS_ADMIN (run as root)",
                dir.display()
            )),
            Some(libc::ENODEV) => {
                TraceError::Unavailable("this kernel has no tracefs (CONFIG_TRACING)".into())
            }
            _ => {
                TraceError::Io { what: format!("mounting tracefs at {}", dir.display()), source: e }
            }
        })?;
        Ok(Tracefs { dir, mounted_here: true })
    }

    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this process mounted it (and its journal will unmount it).
    pub fn mounted_here(&self) -> bool {
        self.mounted_here
    }

    /// Names of schedlab's instances present now (every process's).
    pub fn schedlab_instances(&self) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.dir.join("instances")) else { return Vec::new() };
        let mut v: Vec<String> = rd
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(INSTANCE_PREFIX))
            .collect();
        v.sort();
        v
    }
}

/// tracefs at a standard place, from mountinfo.
fn find(root: &Root) -> Option<PathBuf> {
    let mounts =
        schedlab_sys::blockdev::mounts_of_type(&root.read("/proc/self/mountinfo").ok()?, "tracefs");
    STANDARD
        .iter()
        .map(PathBuf::from)
        .find(|p| mounts.contains(p))
        .map(|p| root.path(&p.to_string_lossy()))
}

fn mount_tracefs(dir: &Path) -> io::Result<()> {
    schedlab_sys::blockdev::mount_private_from("nodev", dir, "tracefs", libc::MS_NOEXEC)
}

/// The layout files a capture is decoded with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layouts {
    /// `events/header_page`.
    pub header_page: String,
    /// `events/header_event`.
    pub header_event: String,
    /// Each enabled event's `format`, in the order enabled.
    pub formats: Vec<String>,
}

/// How an instance is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSettings {
    /// Per-CPU buffer size, KiB.
    pub buffer_kb: u32,
    /// Enable the block layer's request events too.
    pub block: bool,
    /// How full (percent) a CPU's buffer gets before the reader is woken; it also wakes on
    /// its own every poll interval.
    pub buffer_percent: u32,
}

impl Default for InstanceSettings {
    fn default() -> Self {
        InstanceSettings { buffer_kb: DEFAULT_BUFFER_KB, block: false, buffer_percent: 25 }
    }
}

/// Instances this process made so far: the last part of their names.
static SEQ: AtomicU32 = AtomicU32::new(0);

/// A tracefs instance of schedlab's own.
#[derive(Debug)]
pub struct Instance {
    path: PathBuf,
    events: Vec<&'static str>,
    removed: bool,
}

impl Instance {
    /// Creates `schedlab-<pid>-<start>-<n>` (journaled before the mkdir), stopped, on the
    /// CLOCK_MONOTONIC trace clock (`mono`), with `s`'s buffer size and events enabled.
    /// Tracing is switched on by [`Instance::set_on`].
    pub fn create(
        tfs: &Tracefs,
        journal: &mut Journal,
        s: &InstanceSettings,
    ) -> Result<Instance, TraceError> {
        let pid = std::process::id() as i32;
        let start = schedlab_sys::procfs::process_start(pid).map(|s| s.0).unwrap_or(0);
        let name =
            format!("{INSTANCE_PREFIX}{pid}-{start}-{}", SEQ.fetch_add(1, Ordering::Relaxed));
        let instances = tfs.dir.join("instances");
        if !instances.is_dir() {
            return Err(TraceError::Unavailable(format!(
                "{} has no instances directory: not a tracefs mount",
                tfs.dir.display()
            )));
        }
        let path = instances.join(&name);
        let io = |what: String| move |source| TraceError::Io { what, source };
        journal
            .record(Entry::RemoveTraceInstance { path: path.clone() })
            .map_err(io(format!("journaling the instance {name}")))?;
        if let Err(e) = std::fs::create_dir(&path) {
            // Nothing was made: an existing directory of that name is not ours to remove.
            let _ = journal.retract();
            return Err(match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => TraceError::Unavailable(format!(
                    "creating the tracefs instance {} needs root",
                    path.display()
                )),
                _ => TraceError::Io {
                    what: format!("creating the tracefs instance {}", path.display()),
                    source: e,
                },
            });
        }
        let mut inst = Instance { path, events: Vec::new(), removed: false };
        inst.write("tracing_on", "0")?;
        inst.write("trace_clock", "mono")?;
        inst.write("buffer_size_kb", &s.buffer_kb.to_string())?;
        inst.write("buffer_percent", &s.buffer_percent.to_string())?;
        // An instance copies the global `record-cmd` (on by default), which hooks every
        // switch and wake-up to save comms in a table the decoder never reads (the events
        // carry their comms): the largest single cost of tracing measured here
        // (docs/BENCHMARKS.md). Should a kernel refuse it, tracing works the same, dearer.
        let _ = inst.write("trace_options", "norecord-cmd");
        let block: &[&'static str] = if s.block { &BLOCK_EVENTS } else { &[] };
        for ev in SCHED_EVENTS.iter().chain(block) {
            inst.write(&format!("events/{ev}/enable"), "1").map_err(|e| match e {
                TraceError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                    TraceError::Unavailable(format!("this kernel has no tracepoint {ev}"))
                }
                e => e,
            })?;
            inst.events.push(ev);
        }
        Ok(inst)
    }

    /// The instance's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The events enabled, as `system/event`.
    pub fn events(&self) -> &[&'static str] {
        &self.events
    }

    /// Writes a setting file of the instance (never creates one).
    fn write(&self, file: &str, value: &str) -> Result<(), TraceError> {
        let p = self.path.join(file);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .and_then(|mut f| f.write_all(value.as_bytes()))
            .map_err(|source| TraceError::Io {
                what: format!("writing {value:?} to {}", p.display()),
                source,
            })
    }

    fn read(&self, file: &str) -> Result<String, TraceError> {
        let p = self.path.join(file);
        read_whole(&p)
            .map_err(|source| TraceError::Io { what: format!("reading {}", p.display()), source })
    }

    /// Switches recording on or off.
    pub fn set_on(&self, on: bool) -> Result<(), TraceError> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// The CPUs the instance has buffers for, ascending.
    pub fn cpus(&self) -> Result<Vec<u32>, TraceError> {
        let p = self.path.join("per_cpu");
        let rd = std::fs::read_dir(&p).map_err(|source| TraceError::Io {
            what: format!("listing {}", p.display()),
            source,
        })?;
        let mut v: Vec<u32> = rd
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    /// One CPU's buffer counters.
    pub fn stats(&self, cpu: u32) -> Result<CpuStats, TraceError> {
        Ok(CpuStats::parse(&self.read(&format!("per_cpu/cpu{cpu}/stats"))?))
    }

    /// One CPU's binary pipe.
    pub fn pipe_path(&self, cpu: u32) -> PathBuf {
        self.path.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))
    }

    /// The page layout, the event header's and the enabled events' formats.
    pub fn layouts(&self) -> Result<Layouts, TraceError> {
        Ok(Layouts {
            header_page: self.read("events/header_page")?,
            header_event: self.read("events/header_event")?,
            formats: self
                .events
                .iter()
                .map(|ev| self.read(&format!("events/{ev}/format")))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Bytes per page: the instance's sub-buffer size where the kernel has the setting,
    /// else what header_page says.
    pub fn page_size(&self, header_page: &str) -> Result<usize, TraceError> {
        if let Ok(kb) = self.read("buffer_subbuf_size_kb") {
            if let Ok(kb) = kb.trim().parse::<usize>() {
                return Ok(kb * 1024);
            }
        }
        Ok(crate::format::HeaderPage::parse(header_page)?.page_size())
    }

    /// Removes the instance now (its journal entry stays in force, harmlessly: removing
    /// what is gone succeeds).
    pub fn remove(mut self) -> Result<(), TraceError> {
        self.removed = true;
        remove_dir(&self.path)
    }
}

impl Drop for Instance {
    /// An instance left by an error path is removed at once; if that fails, the journal's
    /// undo removes it.
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.set_on(false);
            let _ = remove_dir(&self.path);
        }
    }
}

/// Reads a tracefs file with reads of 64 KiB: some (header_page) return everything on the
/// first read and nothing at any later offset, so the small first read `read_to_string`
/// makes would cut them short.
fn read_whole(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// rmdir of an instance; busy while a reader still holds one of its files, which ours
/// closes before it asks.
fn remove_dir(path: &Path) -> Result<(), TraceError> {
    for _ in 0..20 {
        match std::fs::remove_dir(path) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            r => {
                return r.map_err(|source| TraceError::Io {
                    what: format!("removing the tracefs instance {}", path.display()),
                    source,
                })
            }
        }
    }
    Err(TraceError::Io {
        what: format!("removing the tracefs instance {}", path.display()),
        source: io::Error::from_raw_os_error(libc::EBUSY),
    })
}

/// Whether this process could trace: root (tracefs is root's) and a kernel with tracefs.
/// The error names what is missing, before anything is changed.
pub fn preflight(root: &Root) -> Result<(), TraceError> {
    // SAFETY: no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        return Err(TraceError::Unavailable(
            "tracing needs root: tracefs and its instances are root's (CAP_SYS_ADMIN to mount it)"
                .into(),
        ));
    }
    let fs = root.read("/proc/filesystems").unwrap_or_default();
    if !fs.lines().any(|l| l.split_whitespace().last() == Some("tracefs")) {
        return Err(TraceError::Unavailable(
            "this kernel has no tracefs (CONFIG_TRACING): tracing is not possible".into(),
        ));
    }
    // A mounted tracefs is used as it is: its instances directory must take a new one.
    if let Some(why) = find(root).and_then(|d| schedlab_sys::env::unwritable(&d.join("instances")))
    {
        return Err(TraceError::Unavailable(format!(
            "a timeline is captured in a tracefs instance of its own, but {why}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(mountinfo: &str) -> (PathBuf, Root) {
        let d = std::env::temp_dir().join(format!(
            "schedlab-tracefs-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(d.join("proc/self")).unwrap();
        std::fs::write(d.join("proc/self/mountinfo"), mountinfo).unwrap();
        (d.clone(), Root::new(d))
    }

    #[test]
    fn tracefs_is_taken_only_at_a_standard_place() {
        let (d, root) = fake(
            "40 30 0:12 / /sys/kernel/debug/tracing rw - tracefs tracefs rw\n41 30 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw\n",
        );
        assert_eq!(
            find(&root),
            Some(d.join("sys/kernel/tracing")),
            "the standard mount point first"
        );
        std::fs::write(
            d.join("proc/self/mountinfo"),
            "40 30 0:12 / /sys/kernel/debug/tracing rw - tracefs tracefs rw\n",
        )
        .unwrap();
        assert_eq!(find(&root), Some(d.join("sys/kernel/debug/tracing")));
        // Another run's private mount (or anyone's elsewhere) may be unmounted under us.
        std::fs::write(
            d.join("proc/self/mountinfo"),
            "40 30 0:12 / /run/schedlab/tracefs-9-9 rw - tracefs nodev rw\n",
        )
        .unwrap();
        assert_eq!(find(&root), None);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn an_instance_needs_a_tracefs_with_instances() {
        let (d, _) = fake("");
        let mut j = Journal::create(&d.join("state")).unwrap();
        let e =
            Instance::create(&Tracefs::at(d.join("nothing")), &mut j, &InstanceSettings::default())
                .unwrap_err();
        assert!(e.to_string().contains("not a tracefs mount"), "{e}");
        assert!(j.entries().is_empty(), "nothing journaled for nothing made");
        drop(j);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn an_instance_that_cannot_be_set_up_is_removed_and_its_entry_kept() {
        // A fake tracefs: mkdir makes an empty directory, so the first setting is missing.
        let (d, _) = fake("");
        std::fs::create_dir_all(d.join("t/instances")).unwrap();
        let mut j = Journal::create(&d.join("state")).unwrap();
        let e = Instance::create(&Tracefs::at(d.join("t")), &mut j, &InstanceSettings::default())
            .unwrap_err();
        assert!(e.to_string().contains("tracing_on"), "{e}");
        assert!(matches!(j.entries(), [Entry::RemoveTraceInstance { .. }]), "{:?}", j.entries());
        assert!(
            Tracefs::at(d.join("t")).schedlab_instances().is_empty(),
            "removed on the error path"
        );
        assert!(j.close().is_empty(), "undoing it again is harmless");
        std::fs::remove_dir_all(d).unwrap();
    }
}
