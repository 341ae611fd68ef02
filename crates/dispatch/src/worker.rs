//! The worker side: a process that does the jobs the dispatcher releases to it.
//!
//! The worker sleeps on its slot's job word. When the word names a job it has not done
//! and its run bit is set, it does the job in short steps ([`JobSteps`]; by default
//! [`CpuBurn`]: the job's CPU time on CLOCK_THREAD_CPUTIME_ID, so time spent preempted does
//! not count), checking the word between steps: a cleared run
//! bit pauses the job (kept for its next turn), a changed job number abandons it (the
//! dispatcher dropped it at its deadline). A finished job is published as `done_ns`, then
//! `done` (release), then a bump of the header's completion word, which wakes the dispatcher.
//!
//! Safety net: whenever it has waited a while, or burned a while, the worker checks that its
//! dispatcher is alive; if the dispatcher is gone it puts itself back to SCHED_OTHER and
//! exits, so a crashed dispatcher never leaves a worker at a real-time priority.

use crate::error::DispatchError;
use crate::os::{self, FutexWake};
use crate::shm::{self, split_word, Header, WorkerRegion};
use hdrhistogram::Histogram;
use schedlab_model::dispatch::Latency;
pub use schedlab_model::dispatch::{WorkerExit, WorkerStats};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::*};

/// How long a waiting worker sleeps before it checks on its dispatcher, ns.
pub const WORKER_POLL_NS: u64 = 100_000_000;
/// A heartbeat older than this makes a burning worker check on its dispatcher, ns.
pub const STALE_HEARTBEAT_NS: u64 = 200_000_000;
const BURN_CHECK_NS: u64 = 2_000_000;

enum Burn {
    Done,
    Paused,
    DispatcherGone,
}

/// A job done in short steps, so the worker can pause it between two steps when the
/// dispatcher takes the CPU away, and resume it at its next turn.
pub trait JobSteps {
    /// A new job starts (the previous one finished or was abandoned).
    fn begin(&mut self);
    /// Does a short piece of the current job (well under a millisecond of CPU, or one
    /// blocking operation); returns true when the job is complete.
    fn step(&mut self) -> bool;
}

/// The default job: burn `work_ns` of thread CPU time. The thread CPU clock stands still
/// while the worker is preempted or parked, so the job's CPU time is simply the clock's
/// advance since the job began (everything the worker does for it counts, checks included).
#[derive(Debug, Clone, Copy)]
pub struct CpuBurn {
    work_ns: u64,
    begun_ns: u64,
}

impl CpuBurn {
    /// A job of `work_ns` CPU time.
    pub fn new(work_ns: u64) -> Self {
        CpuBurn { work_ns, begun_ns: 0 }
    }
}

impl JobSteps for CpuBurn {
    fn begin(&mut self) {
        self.begun_ns = os::thread_cpu_ns();
    }

    fn step(&mut self) -> bool {
        spin();
        os::thread_cpu_ns() - self.begun_ns >= self.work_ns
    }
}

/// Runs a worker for slot `slot` of the region at `path`: each job burns `work_ns` of CPU
/// time. Returns when the dispatcher finishes or dies.
pub fn run_worker(path: &Path, slot: usize, work_ns: u64) -> Result<WorkerStats, DispatchError> {
    run_worker_with(path, slot, &mut CpuBurn::new(work_ns))
}

/// Runs a worker for slot `slot` of the region at `path`, each job done by `body`.
/// Returns when the dispatcher finishes or dies.
pub fn run_worker_with(
    path: &Path,
    slot: usize,
    body: &mut dyn JobSteps,
) -> Result<WorkerStats, DispatchError> {
    let region = WorkerRegion::attach(path, slot)?;
    let h = region.header();
    let s = region.slot();
    s.worker.pid.store(os::getpid() as u32, Release);
    let mut stats = WorkerStats {
        jobs_done: 0,
        jobs_abandoned: 0,
        exit: WorkerExit::Shutdown,
        handoff: Latency::default(),
        handoff_hist: String::new(),
    };
    let mut handoff =
        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds");
    let mut last_grant = s.control.granted_ns.load(Relaxed);
    let mut done_job = s.worker.done.load(Relaxed);
    let mut current: Option<u32> = None;
    let finish = |mut stats: WorkerStats, h: &Histogram<u64>| {
        stats.handoff = Latency::of(h);
        stats.handoff_hist = schedlab_model::hist::encode(h);
        stats
    };
    loop {
        if h.info.shutdown.load(Acquire) != 0 {
            return Ok(finish(stats, &handoff));
        }
        let w = s.control.word.load(Acquire);
        let (job, run) = split_word(w);
        if current.is_some_and(|j| j != job) {
            stats.jobs_abandoned += 1;
            current = None;
        }
        if current.is_none() && job != 0 && job != done_job {
            body.begin();
            current = Some(job);
        }
        if run && job != 0 {
            // A new grant (its time written before the word we read): time the hand-off.
            let granted = s.control.granted_ns.load(Relaxed);
            if granted != last_grant {
                last_grant = granted;
                handoff.saturating_record(os::monotonic_ns().saturating_sub(granted));
            }
        }
        match current {
            Some(j) if run => match burn(body, &s.control.word, w, h) {
                Burn::Done => {
                    s.worker.done_ns.store(os::monotonic_ns(), Relaxed);
                    s.worker.done.store(j, Release);
                    done_job = j;
                    current = None;
                    stats.jobs_done += 1;
                    h.wake.completions.fetch_add(1, Release);
                    os::futex_wake(&h.wake.completions, 1);
                }
                Burn::Paused => {}
                Burn::DispatcherGone => return Ok(gone(finish(stats, &handoff))),
            },
            _ => {
                if os::futex_wait(&s.control.word, w, WORKER_POLL_NS) == FutexWake::TimedOut
                    && dispatcher_gone(h)
                {
                    return Ok(gone(finish(stats, &handoff)));
                }
            }
        }
    }
}

fn gone(mut stats: WorkerStats) -> WorkerStats {
    if os::scheduler_of(0).is_ok_and(os::is_rt_policy) {
        let _ = os::set_other(0);
    }
    stats.exit = WorkerExit::DispatcherGone;
    stats
}

fn dispatcher_gone(h: &Header) -> bool {
    h.info.shutdown.load(Acquire) == 0 && !shm::dispatcher_alive(&h.info)
}

/// Does steps of the current job while the job word stays `w`; every 2 ms (wall clock, so
/// blocking jobs are covered too) checks that the dispatcher is alive when its heartbeat is old.
fn burn(body: &mut dyn JobSteps, word: &AtomicU32, w: u32, h: &Header) -> Burn {
    let mut next_check = os::monotonic_ns() + BURN_CHECK_NS;
    loop {
        if body.step() {
            return Burn::Done;
        }
        if word.load(Relaxed) != w {
            return Burn::Paused;
        }
        let now = os::monotonic_ns();
        if now >= next_check {
            next_check = now + BURN_CHECK_NS;
            let age = now.saturating_sub(h.live.heartbeat_ns.load(Relaxed));
            if age > STALE_HEARTBEAT_NS && dispatcher_gone(h) {
                return Burn::DispatcherGone;
            }
        }
    }
}

/// About 25 us of work here. The thread CPU clock is read once per spin: on some kernels
/// (seen on this project's VM) reading CLOCK_THREAD_CPUTIME_ID every microsecond or so
/// makes it run up to 30% slower than the time the thread really spends on the CPU, so a
/// job would take longer than its budget says.
#[inline(never)]
fn spin() {
    let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..4000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x);
}
