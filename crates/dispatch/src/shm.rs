//! The shared region between a dispatcher, its workers and status readers.
//!
//! One file per dispatcher, `dispatch-cpu<N>-<pid>-<k>.shm` in a directory on a memory
//! file system (tmpfs: a MAP_SHARED page there is never written back, so writing it never
//! faults), mapped MAP_SHARED by everyone. Layout (`#[repr(C)]`, every field an atomic,
//! each part on its own cache lines so workers and dispatcher do not share a line they write):
//!
//! ```text
//! Header  info     magic, version, header/slot sizes, slot count, cpu, policy, quantum,
//!                  creator and dispatcher pid (+ start time against pid reuse), run state,
//!                  shutdown flag, start and planned end (CLOCK_MONOTONIC ns)
//!         wake     `completions`: the futex word workers bump after each job
//!         live     seqlock + heartbeat, running slot, ticks, decisions, switches, overruns,
//!                  dispatch latency p50/p99/max
//! Slot[i] worker   written by the worker: its pid, `done` (index+1 of its last finished
//!                  job) and `done_ns` (when it finished)
//!         control  written by the dispatcher: the job word (job index+1 << 1 | run bit),
//!                  the futex word the worker sleeps on; when it last set the run bit
//!         params   pid, C, T, D, x, y
//!         status   seqlock + state, x'/y', tag, deadlines, job and window counters
//! ```
//!
//! The magic is written last at creation (release), so a reader that sees it sees a whole
//! header. Status parts are published with a seqlock (writer: odd, fence, fields, even;
//! reader: retry until the count is even and unchanged), so a reader never sees a torn slot.

use crate::error::DispatchError;
use crate::os;
use crate::status::RunState;
use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::*};

/// "SLDISPAT" as a little-endian u64: marks a complete region header.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SLDISPAT");
/// Layout version; readers refuse other versions.
pub const VERSION: u32 = 2;
/// The most tasks one region (one dispatcher) holds: the plan's limit, which specs are checked against.
pub use schedlab_plan::DISPATCH_MAX_TASKS as MAX_TASKS;
/// File name prefix of region files.
pub const FILE_PREFIX: &str = "dispatch-";
/// File name suffix of region files.
pub const FILE_SUFFIX: &str = ".shm";

/// The directory regions go in by default: `/run/schedlab` when /run is a memory file
/// system, else `/dev/shm/schedlab`.
pub fn default_dir() -> PathBuf {
    let run = Path::new("/run");
    if os::is_memory_fs(run).unwrap_or(false) {
        run.join("schedlab")
    } else {
        PathBuf::from("/dev/shm/schedlab")
    }
}

/// How the names of the regions process `pid` creates for CPU `cpu` begin
/// (`dispatch-cpu<N>-<pid>-`): their removal can be journaled before one exists.
pub fn name_prefix(cpu: u32, pid: i32) -> String {
    format!("{FILE_PREFIX}cpu{cpu}-{pid}-")
}

/// A seqlock count: odd while the writer is inside.
#[repr(C)]
pub(crate) struct Seq(AtomicU32);

impl Seq {
    pub(crate) fn write(&self, f: impl FnOnce()) {
        let s = self.0.load(Relaxed);
        self.0.store(s.wrapping_add(1), Relaxed);
        fence(Release);
        f();
        self.0.store(s.wrapping_add(2), Release);
    }

    /// Reads consistently; `None` if the writer never left (it died inside).
    pub(crate) fn read<T>(&self, f: impl Fn() -> T) -> Option<T> {
        for i in 0..100_000u32 {
            let s1 = self.0.load(Acquire);
            if s1 & 1 == 0 {
                let v = f();
                fence(Acquire);
                if self.0.load(Relaxed) == s1 {
                    return Some(v);
                }
            }
            if i % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        None
    }
}

/// Policy codes stored in the header.
pub(crate) const POLICY_EDF: u32 = 1;
pub(crate) const POLICY_DWCS: u32 = 2;
pub(crate) const POLICY_DWCS_NWC: u32 = 3;

pub(crate) fn policy_name(code: u32) -> &'static str {
    match code {
        POLICY_EDF => "edf",
        POLICY_DWCS => "dwcs",
        POLICY_DWCS_NWC => "dwcs (not work-conserving)",
        _ => "none",
    }
}

#[repr(C, align(64))]
pub(crate) struct Info {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub header_size: AtomicU32,
    pub slot_size: AtomicU32,
    pub capacity: AtomicU32,
    pub cpu: AtomicU32,
    pub policy: AtomicU32,
    pub quantum_ns: AtomicU64,
    pub creator_pid: AtomicU32,
    pub dispatcher_pid: AtomicU32,
    pub dispatcher_start: AtomicU64,
    pub state: AtomicU32,
    pub shutdown: AtomicU32,
    pub start_ns: AtomicU64,
    pub end_ns: AtomicU64,
}

#[repr(C, align(64))]
pub(crate) struct WakeWord {
    pub completions: AtomicU32,
}

#[repr(C, align(64))]
pub(crate) struct Live {
    pub seq: Seq,
    pub running: AtomicU32,
    pub heartbeat_ns: AtomicU64,
    pub ticks: AtomicU64,
    pub decisions: AtomicU64,
    pub switches: AtomicU64,
    pub overruns: AtomicU64,
    pub lat_p50_ns: AtomicU64,
    pub lat_p99_ns: AtomicU64,
    pub lat_max_ns: AtomicU64,
}

#[repr(C)]
pub(crate) struct Header {
    pub info: Info,
    pub wake: WakeWord,
    pub live: Live,
}

#[repr(C, align(64))]
pub(crate) struct WorkerPart {
    pub pid: AtomicU32,
    pub done: AtomicU32,
    pub done_ns: AtomicU64,
}

#[repr(C, align(64))]
pub(crate) struct Control {
    pub word: AtomicU32,
    /// When the dispatcher last gave the worker the CPU (set before the word), so the worker
    /// can time the hand-off.
    pub granted_ns: AtomicU64,
}

#[repr(C, align(64))]
pub(crate) struct RegionParams {
    pub pid: AtomicU32,
    pub x: AtomicU32,
    pub y: AtomicU32,
    pub c_ns: AtomicU64,
    pub t_ns: AtomicU64,
    pub d_ns: AtomicU64,
}

#[repr(C, align(64))]
pub(crate) struct Status {
    pub seq: Seq,
    pub state: AtomicU32,
    pub x_cur: AtomicU32,
    pub y_cur: AtomicU32,
    pub tagged: AtomicU32,
    pub deadline_ns: AtomicU64,
    pub job_deadline_ns: AtomicU64,
    pub released: AtomicU64,
    pub completed: AtomicU64,
    pub missed: AtomicU64,
    pub violations: AtomicU64,
    pub windows: AtomicU64,
    pub window_violations: AtomicU64,
    pub dispatches: AtomicU64,
    pub last_decision_ns: AtomicU64,
}

#[repr(C)]
pub(crate) struct TaskSlot {
    pub worker: WorkerPart,
    pub control: Control,
    pub params: RegionParams,
    pub status: Status,
}

pub(crate) const HEADER_SIZE: usize = std::mem::size_of::<Header>();
pub(crate) const SLOT_SIZE: usize = std::mem::size_of::<TaskSlot>();

/// The job word: `(job index + 1) << 1 | run`; job 0 means "no job".
pub(crate) fn job_word(job: u32, run: bool) -> u32 {
    (job << 1) | u32::from(run)
}

/// Splits a job word into (job, run).
pub(crate) fn split_word(w: u32) -> (u32, bool) {
    (w >> 1, w & 1 == 1)
}

/// A MAP_SHARED mapping of a region file.
pub(crate) struct SharedMapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is only accessed through atomics (see Header and Slot), which are Sync.
unsafe impl Send for SharedMapping {}
// SAFETY: as above.
unsafe impl Sync for SharedMapping {}

impl SharedMapping {
    fn new(file: &File, len: usize, writable: bool) -> std::io::Result<SharedMapping> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a fresh shared mapping of an open file of at least `len` bytes.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, file.as_raw_fd(), 0)
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedMapping { ptr: ptr.cast(), len })
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned and at least HEADER_SIZE long; Header is all
        // atomics, valid for any bit pattern (including the zeros of a fresh file).
        unsafe { &*(self.ptr as *const Header) }
    }

    pub(crate) fn slot(&self, i: usize) -> &TaskSlot {
        assert!(HEADER_SIZE + (i + 1) * SLOT_SIZE <= self.len, "slot {i} beyond the mapping");
        // SAFETY: in bounds (checked), 64-byte aligned (HEADER_SIZE and SLOT_SIZE are
        // multiples of 64), all atomics.
        unsafe { &*(self.ptr.add(HEADER_SIZE + i * SLOT_SIZE) as *const TaskSlot) }
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from mmap and nothing borrows the mapping past its owner.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn region_len(capacity: usize) -> usize {
    HEADER_SIZE + capacity * SLOT_SIZE
}

pub(crate) fn open_and_check(
    path: &Path,
    writable: bool,
) -> Result<(SharedMapping, usize), DispatchError> {
    let file = OpenOptions::new()
        .read(true)
        .write(writable)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| DispatchError::io(format!("opening {}", path.display()), e))?;
    let len = file
        .metadata()
        .map_err(|e| DispatchError::io(format!("stat {}", path.display()), e))?
        .len() as usize;
    let bad = |why: String| DispatchError::BadRegion { path: path.to_path_buf(), why };
    if len < HEADER_SIZE {
        return Err(bad(format!("{len} bytes, shorter than a header ({HEADER_SIZE})")));
    }
    let map = SharedMapping::new(&file, len, writable)
        .map_err(|e| DispatchError::io(format!("mapping {}", path.display()), e))?;
    let info = &map.header().info;
    if info.magic.load(Acquire) != MAGIC {
        return Err(bad(
            "no schedlab dispatcher magic (not a region, or still being created)".into()
        ));
    }
    let version = info.version.load(Relaxed);
    if version != VERSION {
        return Err(bad(format!("layout version {version}, this build reads {VERSION}")));
    }
    let (hs, ss) = (info.header_size.load(Relaxed) as usize, info.slot_size.load(Relaxed) as usize);
    if hs != HEADER_SIZE || ss != SLOT_SIZE {
        return Err(bad(format!(
            "header/slot sizes {hs}/{ss}, expected {HEADER_SIZE}/{SLOT_SIZE}"
        )));
    }
    let capacity = info.capacity.load(Relaxed) as usize;
    if capacity > MAX_TASKS || len < region_len(capacity) {
        return Err(bad(format!("{capacity} slots do not fit in {len} bytes")));
    }
    Ok((map, capacity))
}

/// A region as its dispatcher holds it: read-write, and the file is removed when it is dropped.
pub struct Region {
    map: SharedMapping,
    path: PathBuf,
    capacity: usize,
    remove: bool,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("path", &self.path)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl Region {
    /// Creates a region for `tasks` workers of the dispatcher of `cpu`, exclusively (never
    /// following or reusing an existing path), in `dir` (created if missing), which must be on
    /// tmpfs or ramfs.
    pub fn create(dir: &Path, cpu: u32, tasks: usize) -> Result<Region, DispatchError> {
        if tasks == 0 || tasks > MAX_TASKS {
            return Err(DispatchError::Config(format!(
                "{tasks} tasks: a region holds 1..={MAX_TASKS}"
            )));
        }
        fs::create_dir_all(dir)
            .map_err(|e| DispatchError::io(format!("creating {}", dir.display()), e))?;
        if !os::is_memory_fs(dir)
            .map_err(|e| DispatchError::io(format!("statfs {}", dir.display()), e))?
        {
            return Err(DispatchError::NotMemoryFs(dir.to_path_buf()));
        }
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let name =
            format!("{}{}{FILE_SUFFIX}", name_prefix(cpu, os::getpid()), SEQ.fetch_add(1, Relaxed));
        let path = dir.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| DispatchError::io(format!("creating {}", path.display()), e))?;
        let len = region_len(tasks);
        let init = || -> std::io::Result<SharedMapping> {
            file.set_len(len as u64)?;
            SharedMapping::new(&file, len, true)
        };
        let map = match init() {
            Ok(m) => m,
            Err(e) => {
                let _ = fs::remove_file(&path);
                return Err(DispatchError::io(format!("sizing and mapping {}", path.display()), e));
            }
        };
        let info = &map.header().info;
        info.version.store(VERSION, Relaxed);
        info.header_size.store(HEADER_SIZE as u32, Relaxed);
        info.slot_size.store(SLOT_SIZE as u32, Relaxed);
        info.capacity.store(tasks as u32, Relaxed);
        info.cpu.store(cpu, Relaxed);
        let pid = os::getpid();
        info.creator_pid.store(pid as u32, Relaxed);
        info.dispatcher_pid.store(pid as u32, Relaxed);
        info.dispatcher_start.store(os::process_start(pid).map_or(0, |s| s.0), Relaxed);
        info.magic.store(MAGIC, Release);
        Ok(Region { map, path, capacity: tasks, remove: true })
    }

    /// Opens an existing region read-write to run its dispatcher in this process (the region
    /// was created by another, e.g. the engine). This handle removes the file when dropped.
    pub fn open(path: &Path) -> Result<Region, DispatchError> {
        let (map, capacity) = open_and_check(path, true)?;
        Ok(Region { map, path: path.to_path_buf(), capacity, remove: true })
    }

    /// The region file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of task slots.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Unmaps without removing the file, handing it over to the process that will
    /// [`open`](Region::open) it; returns its path.
    pub fn disown(mut self) -> PathBuf {
        self.remove = false;
        self.path.clone()
    }

    pub(crate) fn header(&self) -> &Header {
        self.map.header()
    }

    pub(crate) fn slot(&self, i: usize) -> &TaskSlot {
        assert!(i < self.capacity, "slot {i} of {}", self.capacity);
        self.map.slot(i)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.remove {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A worker's view of its slot: read-write, never removes the file.
pub(crate) struct WorkerRegion {
    map: SharedMapping,
    slot: usize,
}

impl WorkerRegion {
    pub(crate) fn attach(path: &Path, slot: usize) -> Result<WorkerRegion, DispatchError> {
        let (map, capacity) = open_and_check(path, true)?;
        if slot >= capacity {
            return Err(DispatchError::Config(format!("slot {slot} of a region with {capacity}")));
        }
        Ok(WorkerRegion { map, slot })
    }

    pub(crate) fn header(&self) -> &Header {
        self.map.header()
    }

    pub(crate) fn slot(&self) -> &TaskSlot {
        self.map.slot(self.slot)
    }
}

/// Whether the dispatcher of a header is alive: its process exists (same start time, not a
/// zombie) and it has not marked the region finished.
pub(crate) fn dispatcher_alive(info: &Info) -> bool {
    let state = RunState::from_u32(info.state.load(Acquire));
    state != RunState::Finished
        && os::process_alive(
            info.dispatcher_pid.load(Relaxed) as i32,
            info.dispatcher_start.load(Relaxed),
        )
}
