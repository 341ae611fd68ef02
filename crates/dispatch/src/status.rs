//! Status readers: what `schedlab dwcs status` shows, read from a dispatcher's region.

use crate::error::DispatchError;
use crate::os;
use crate::shm::{
    dispatcher_alive, open_and_check, policy_name, SharedMapping, FILE_PREFIX, FILE_SUFFIX,
    POLICY_DWCS, POLICY_DWCS_NWC,
};
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::*;

/// Run state of a region's dispatcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Created; the dispatcher has not started its loop.
    Created,
    /// The dispatcher loop is running.
    Running,
    /// The dispatcher finished (normally or after an error) and restored its workers.
    Finished,
}

impl RunState {
    pub(crate) fn from_u32(v: u32) -> Self {
        match v {
            1 => RunState::Running,
            2 => RunState::Finished,
            _ => RunState::Created,
        }
    }

    pub(crate) fn as_u32(self) -> u32 {
        match self {
            RunState::Created => 0,
            RunState::Running => 1,
            RunState::Finished => 2,
        }
    }
}

/// What a task is doing, as the status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// No job released yet, or its last job finished or was dropped: waiting for a release (parked).
    Idle,
    /// Has a released job but is parked: another task holds the CPU.
    Ready,
    /// Chosen: at the RUN priority, working on its job.
    Running,
    /// The worker process is gone.
    Exited,
}

impl TaskState {
    pub(crate) fn as_u32(self) -> u32 {
        match self {
            TaskState::Idle => 0,
            TaskState::Ready => 1,
            TaskState::Running => 2,
            TaskState::Exited => 3,
        }
    }

    pub(crate) fn from_u32(v: u32) -> Self {
        match v {
            1 => TaskState::Ready,
            2 => TaskState::Running,
            3 => TaskState::Exited,
            _ => TaskState::Idle,
        }
    }
}

/// One task's status, as `schedlab dwcs status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskStatus {
    /// Slot index (the task id the policy knows).
    pub slot: usize,
    /// Worker process id.
    pub pid: i32,
    /// Service per period C, ns.
    pub c_ns: u64,
    /// Period T, ns.
    pub t_ns: u64,
    /// Relative deadline D, ns.
    pub d_ns: u64,
    /// Window numerator x: misses tolerated per window.
    pub x: u32,
    /// Window denominator y: window length in deadlines.
    pub y: u32,
    /// Current window x' (DWCS only).
    pub x_cur: Option<u32>,
    /// Current window y' (DWCS only).
    pub y_cur: Option<u32>,
    /// DWCS violation tag.
    pub tagged: bool,
    /// The policy's current deadline for the task, ns after the run's start (DWCS), or the live job's (EDF).
    pub deadline_ns: Option<u64>,
    /// Deadline of the job released and not yet finished or dropped, ns after the start.
    pub job_deadline_ns: Option<u64>,
    /// What the task is doing.
    pub state: TaskState,
    /// Jobs released so far.
    pub released: u64,
    /// Jobs finished by their deadline.
    pub completed: u64,
    /// Jobs that missed their deadline (finished late or dropped).
    pub missed: u64,
    /// Window violations: DWCS's own count (misses with x' = 0); under EDF, the sliding-window count.
    pub violations: u64,
    /// Sliding windows of y consecutive deadlines judged so far.
    pub windows: u64,
    /// Sliding windows holding more than x misses.
    pub window_violations: u64,
    /// Times the task was given the CPU.
    pub dispatches: u64,
    /// When the dispatcher last published this slot, ns after the start.
    pub last_decision_ns: u64,
}

/// Everything a status reader sees of one dispatcher at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// The region file.
    pub path: PathBuf,
    /// Layout version.
    pub version: u32,
    /// Policy name.
    pub policy: String,
    /// The CPU the dispatcher and its workers run on.
    pub cpu: u32,
    /// Quantum, ns.
    pub quantum_ns: u64,
    /// The dispatcher's process id.
    pub dispatcher_pid: i32,
    /// Whether the dispatcher is alive (process exists and has not finished).
    pub dispatcher_alive: bool,
    /// Run state the dispatcher published.
    pub state: RunState,
    /// CLOCK_MONOTONIC time of the run's first quantum boundary, ns (0 before the run).
    pub start_ns: u64,
    /// Planned end, ns after the start, if the run has a duration.
    pub end_ns: Option<u64>,
    /// Time since the start when this snapshot was taken, ns (0 before the start).
    pub elapsed_ns: u64,
    /// Age of the dispatcher's last decision, ns.
    pub heartbeat_age_ns: Option<u64>,
    /// Slot at the RUN priority.
    pub running: Option<usize>,
    /// Quantum boundaries processed.
    pub ticks: u64,
    /// Decisions made (boundaries and completion wake-ups).
    pub decisions: u64,
    /// Changes of the running task.
    pub switches: u64,
    /// Boundaries the dispatcher woke up for more than a quantum late.
    pub overruns: u64,
    /// Dispatch latency (wake-up lateness at boundaries) p50 so far, ns.
    pub latency_p50_ns: u64,
    /// Dispatch latency p99 so far, ns.
    pub latency_p99_ns: u64,
    /// Dispatch latency maximum so far, ns.
    pub latency_max_ns: u64,
    /// False if some part was being written by a dispatcher that died inside the write.
    pub consistent: bool,
    /// One entry per task slot.
    pub tasks: Vec<TaskStatus>,
}

/// Opens a region read-only and takes [`Snapshot`]s of it.
pub struct StatusReader {
    map: SharedMapping,
    path: PathBuf,
    capacity: usize,
}

impl std::fmt::Debug for StatusReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusReader").field("path", &self.path).finish()
    }
}

impl StatusReader {
    /// Opens a region file read-only, checking its magic, version and sizes.
    pub fn open(path: &Path) -> Result<StatusReader, DispatchError> {
        let (map, capacity) = open_and_check(path, false)?;
        Ok(StatusReader { map, path: path.to_path_buf(), capacity })
    }

    /// The region files in `dir`, sorted (an absent directory has none).
    pub fn discover(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for e in entries {
            let e = e?;
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(FILE_PREFIX)
                && name.ends_with(FILE_SUFFIX)
                && e.file_type()?.is_file()
            {
                out.push(e.path());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Whether the region's dispatcher is alive.
    pub fn dispatcher_alive(&self) -> bool {
        dispatcher_alive(&self.map.header().info)
    }

    /// Reads the whole region consistently (each part under its seqlock).
    pub fn snapshot(&self) -> Snapshot {
        let h = self.map.header();
        let info = &h.info;
        let now = os::monotonic_ns();
        let start = info.start_ns.load(Relaxed);
        let rel = |t: u64| t.saturating_sub(start);
        let end = info.end_ns.load(Relaxed);
        let policy_code = info.policy.load(Relaxed);
        let mut consistent = true;
        let live = h
            .live
            .seq
            .read(|| {
                let l = &h.live;
                (
                    l.running.load(Relaxed),
                    l.heartbeat_ns.load(Relaxed),
                    [
                        l.ticks.load(Relaxed),
                        l.decisions.load(Relaxed),
                        l.switches.load(Relaxed),
                        l.overruns.load(Relaxed),
                    ],
                    [
                        l.lat_p50_ns.load(Relaxed),
                        l.lat_p99_ns.load(Relaxed),
                        l.lat_max_ns.load(Relaxed),
                    ],
                )
            })
            .unwrap_or_else(|| {
                consistent = false;
                (0, 0, [0; 4], [0; 3])
            });
        let (running, heartbeat, [ticks, decisions, switches, overruns], [p50, p99, max]) = live;
        let dwcs = matches!(policy_code, POLICY_DWCS | POLICY_DWCS_NWC);
        let mut tasks = Vec::with_capacity(self.capacity);
        for i in 0..self.capacity {
            let s = self.map.slot(i);
            let p = &s.params;
            let st = &s.status;
            let read = st.seq.read(|| {
                (
                    [
                        st.state.load(Relaxed),
                        st.x_cur.load(Relaxed),
                        st.y_cur.load(Relaxed),
                        st.tagged.load(Relaxed),
                    ],
                    [
                        st.deadline_ns.load(Relaxed),
                        st.job_deadline_ns.load(Relaxed),
                        st.released.load(Relaxed),
                        st.completed.load(Relaxed),
                        st.missed.load(Relaxed),
                        st.violations.load(Relaxed),
                        st.windows.load(Relaxed),
                        st.window_violations.load(Relaxed),
                        st.dispatches.load(Relaxed),
                        st.last_decision_ns.load(Relaxed),
                    ],
                )
            });
            let (
                [state, x_cur, y_cur, tagged],
                [dl, jdl, released, completed, missed, violations, windows, wviol, dispatches, last],
            ) = read.unwrap_or_else(|| {
                consistent = false;
                ([0; 4], [0; 10])
            });
            tasks.push(TaskStatus {
                slot: i,
                pid: p.pid.load(Relaxed) as i32,
                c_ns: p.c_ns.load(Relaxed),
                t_ns: p.t_ns.load(Relaxed),
                d_ns: p.d_ns.load(Relaxed),
                x: p.x.load(Relaxed),
                y: p.y.load(Relaxed),
                x_cur: dwcs.then_some(x_cur),
                y_cur: dwcs.then_some(y_cur),
                tagged: tagged != 0,
                deadline_ns: (dl != 0).then(|| rel(dl)),
                job_deadline_ns: (jdl != 0).then(|| rel(jdl)),
                state: TaskState::from_u32(state),
                released,
                completed,
                missed,
                violations,
                windows,
                window_violations: wviol,
                dispatches,
                last_decision_ns: rel(last),
            });
        }
        Snapshot {
            path: self.path.clone(),
            version: info.version.load(Relaxed),
            policy: policy_name(policy_code).to_string(),
            cpu: info.cpu.load(Relaxed),
            quantum_ns: info.quantum_ns.load(Relaxed),
            dispatcher_pid: info.dispatcher_pid.load(Relaxed) as i32,
            dispatcher_alive: dispatcher_alive(info),
            state: RunState::from_u32(info.state.load(Acquire)),
            start_ns: start,
            end_ns: (end != 0).then(|| rel(end)),
            elapsed_ns: if start == 0 { 0 } else { rel(now) },
            heartbeat_age_ns: (heartbeat != 0).then(|| now.saturating_sub(heartbeat)),
            running: running.checked_sub(1).map(|r| r as usize),
            ticks,
            decisions,
            switches,
            overruns,
            latency_p50_ns: p50,
            latency_p99_ns: p99,
            latency_max_ns: max,
            consistent,
            tasks,
        }
    }
}

impl std::fmt::Display for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        writeln!(
            f,
            "{} on CPU {}: {} quantum {:.1} ms, dispatcher {} ({}), {:?}, t = {:.1} s",
            self.path.display(),
            self.cpu,
            self.policy,
            ms(self.quantum_ns),
            self.dispatcher_pid,
            if self.dispatcher_alive { "alive" } else { "gone" },
            self.state,
            self.elapsed_ns as f64 / 1e9
        )?;
        writeln!(
            f,
            "decisions {}  switches {}  overruns {}  latency p50 {:.0} us  p99 {:.0} us  max {:.0} us",
            self.decisions,
            self.switches,
            self.overruns,
            self.latency_p50_ns as f64 / 1e3,
            self.latency_p99_ns as f64 / 1e3,
            self.latency_max_ns as f64 / 1e3
        )?;
        writeln!(
            f,
            "{:>4} {:>8} {:>8} {:>7} {:>9} {:>10} {:>8} {:>8} {:>7} {:>6} {:>8}",
            "slot",
            "pid",
            "state",
            "x/y",
            "x'/y'",
            "deadline",
            "released",
            "done",
            "missed",
            "viol",
            "win-viol"
        )?;
        for t in &self.tasks {
            let cur = match (t.x_cur, t.y_cur) {
                (Some(x), Some(y)) => format!("{x}/{y}{}", if t.tagged { "*" } else { "" }),
                _ => "-".into(),
            };
            let dl = t.deadline_ns.map_or("-".into(), |d| format!("{:.1}ms", ms(d)));
            writeln!(
                f,
                "{:>4} {:>8} {:>8} {:>7} {:>9} {:>10} {:>8} {:>8} {:>7} {:>6} {:>8}",
                t.slot,
                t.pid,
                format!("{:?}", t.state).to_lowercase(),
                format!("{}/{}", t.x, t.y),
                cur,
                dl,
                t.released,
                t.completed,
                t.missed,
                t.violations,
                t.window_violations
            )?;
        }
        Ok(())
    }
}

/// Removes the region files in `dir` whose dispatcher is gone (its process died without
/// cleaning up, or it finished), and files that are not readable regions whose creator (named
/// in the file name) is gone; returns what it removed.
pub fn remove_stale(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for path in StatusReader::discover(dir)? {
        let stale = match open_and_check(&path, false) {
            Ok((map, _)) => !dispatcher_alive(&map.header().info),
            Err(_) => creator_from_name(&path).is_some_and(|pid| !os::process_alive(pid, 0)),
        };
        if stale && fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    Ok(removed)
}

// dispatch-cpu<N>-<pid>-<k>.shm -> pid
fn creator_from_name(path: &Path) -> Option<i32> {
    let name = path.file_name()?.to_str()?;
    let mid = name.strip_prefix(FILE_PREFIX)?.strip_suffix(FILE_SUFFIX)?;
    mid.split('-').nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::{Region, TaskSlot, HEADER_SIZE, SLOT_SIZE};
    use crate::DispatchError;

    fn tempdir(tag: &str) -> PathBuf {
        let d = PathBuf::from(format!("/dev/shm/schedlab-dispatch-unit-{tag}-{}", os::getpid()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn layout_is_cache_line_aligned() {
        assert_eq!(HEADER_SIZE % 64, 0);
        assert_eq!(SLOT_SIZE % 64, 0);
        assert_eq!(std::mem::align_of::<TaskSlot>(), 64);
    }

    #[test]
    fn create_read_and_remove() {
        let dir = tempdir("crr");
        let r = Region::create(&dir, 1, 3).unwrap();
        let path = r.path().to_path_buf();
        assert_eq!(creator_from_name(&path), Some(os::getpid()));
        r.slot(2).params.pid.store(42, Relaxed);
        r.slot(2).status.seq.write(|| r.slot(2).status.released.store(7, Relaxed));
        let reader = StatusReader::open(&path).unwrap();
        let s = reader.snapshot();
        assert_eq!(s.tasks.len(), 3);
        assert_eq!((s.tasks[2].pid, s.tasks[2].released), (42, 7));
        assert_eq!(s.state, RunState::Created);
        assert!(s.dispatcher_alive, "the creator counts as the dispatcher until one starts");
        assert_eq!(StatusReader::discover(&dir).unwrap(), vec![path.clone()]);
        // Our own live region is not stale.
        assert!(remove_stale(&dir).unwrap().is_empty());
        drop(r);
        assert!(!path.exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_foreign_files_and_existing_paths() {
        let dir = tempdir("foreign");
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("dispatch-cpu0-1-0.shm");
        fs::write(&p, vec![0u8; 8192]).unwrap();
        assert!(matches!(StatusReader::open(&p), Err(DispatchError::BadRegion { .. })));
        // pid 1 never dies, so this unreadable file is not stale.
        assert!(remove_stale(&dir).unwrap().is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_a_disk_directory() {
        let dir = std::env::temp_dir();
        if os::is_memory_fs(&dir).unwrap_or(true) {
            schedlab_testkit::skip(format!("{} is a memory file system here", dir.display()));
            return;
        }
        assert!(matches!(Region::create(&dir, 0, 1), Err(DispatchError::NotMemoryFs(_))));
    }

    #[test]
    fn seqlock_reader_never_sees_a_torn_pair() {
        let dir = tempdir("seq");
        let r = Region::create(&dir, 0, 1).unwrap();
        let reader = StatusReader::open(r.path()).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let st = &r.slot(0).status;
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    i += 1;
                    st.seq.write(|| {
                        st.released.store(i, Relaxed);
                        st.completed.store(i, Relaxed);
                    });
                }
            });
            for _ in 0..20_000 {
                let t = &reader.snapshot().tasks[0];
                assert_eq!(t.released, t.completed);
            }
            stop.store(true, Relaxed);
        });
        drop(r);
        let _ = fs::remove_dir_all(&dir);
    }
}
