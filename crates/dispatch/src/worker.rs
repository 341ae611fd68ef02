//! The worker side: a process that does the jobs the dispatcher releases to it.
//!
//! The worker sleeps on its slot's job word. When the word names a job it has not done
//! and its run bit is set, it burns the job's CPU time (CLOCK_THREAD_CPUTIME_ID, so time
//! spent preempted does not count), checking the word between short slices: a cleared run
//! bit pauses the job (kept for its next turn), a changed job number abandons it (the
//! dispatcher dropped it at its deadline). A finished job is published as `done_ns`, then
//! `done` (release), then a bump of the header's completion word, which wakes the dispatcher.
//!
//! Safety net: whenever it has waited a while, or burned a while, the worker checks that its
//! dispatcher is alive; if the dispatcher is gone it puts itself back to SCHED_OTHER and
//! exits, so a crashed dispatcher never leaves a worker at a real-time priority.

use crate::error::DispatchError;
use crate::os::{self, Wake};
use crate::shm::{self, split_word, Header, WorkerRegion};
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::*};

/// How long a waiting worker sleeps before it checks on its dispatcher, ns.
pub const WORKER_POLL_NS: u64 = 100_000_000;
/// A heartbeat older than this makes a burning worker check on its dispatcher, ns.
pub const STALE_HEARTBEAT_NS: u64 = 200_000_000;
const BURN_CHECK_NS: u64 = 2_000_000;

/// Why a worker stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerExit {
    /// The dispatcher finished and told its workers to exit.
    Shutdown,
    /// The dispatcher died without finishing; the worker demoted itself.
    DispatcherGone,
}

/// What a worker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkerStats {
    /// Jobs finished.
    pub jobs_done: u64,
    /// Jobs abandoned because the dispatcher dropped them.
    pub jobs_abandoned: u64,
    /// Why it stopped.
    pub exit: WorkerExit,
}

enum Burn {
    Done,
    Paused(u64),
    DispatcherGone,
}

/// Runs a worker for slot `slot` of the region at `path`: each job burns `work_ns` of CPU
/// time. Returns when the dispatcher finishes or dies.
pub fn run_worker(path: &Path, slot: usize, work_ns: u64) -> Result<WorkerStats, DispatchError> {
    let region = WorkerRegion::attach(path, slot)?;
    let h = region.header();
    let s = region.slot();
    s.worker.pid.store(os::getpid() as u32, Release);
    let mut stats = WorkerStats { jobs_done: 0, jobs_abandoned: 0, exit: WorkerExit::Shutdown };
    let mut done_job = s.worker.done.load(Relaxed);
    let mut current: Option<(u32, u64)> = None;
    loop {
        if h.info.shutdown.load(Acquire) != 0 {
            return Ok(stats);
        }
        let w = s.control.word.load(Acquire);
        let (job, run) = split_word(w);
        if current.is_some_and(|(j, _)| j != job) {
            stats.jobs_abandoned += 1;
            current = None;
        }
        if current.is_none() && job != 0 && job != done_job {
            current = Some((job, work_ns));
        }
        match current {
            Some((j, left)) if run => match burn(left, &s.control.word, w, h) {
                Burn::Done => {
                    s.worker.done_ns.store(os::monotonic_ns(), Relaxed);
                    s.worker.done.store(j, Release);
                    done_job = j;
                    current = None;
                    stats.jobs_done += 1;
                    h.wake.completions.fetch_add(1, Release);
                    os::futex_wake(&h.wake.completions, 1);
                }
                Burn::Paused(left) => current = Some((j, left)),
                Burn::DispatcherGone => return Ok(gone(stats)),
            },
            _ => {
                if os::futex_wait(&s.control.word, w, WORKER_POLL_NS) == Wake::TimedOut && dispatcher_gone(h) {
                    return Ok(gone(stats));
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

/// Burns up to `budget` ns of thread CPU time while the job word stays `w`.
fn burn(budget: u64, word: &AtomicU32, w: u32, h: &Header) -> Burn {
    let t0 = os::thread_cpu_ns();
    let mut next_check = BURN_CHECK_NS;
    loop {
        spin();
        let used = os::thread_cpu_ns() - t0;
        if used >= budget {
            return Burn::Done;
        }
        if word.load(Relaxed) != w {
            return Burn::Paused(budget - used);
        }
        if used >= next_check {
            next_check += BURN_CHECK_NS;
            let age = os::monotonic_ns().saturating_sub(h.live.heartbeat_ns.load(Relaxed));
            if age > STALE_HEARTBEAT_NS && dispatcher_gone(h) {
                return Burn::DispatcherGone;
            }
        }
    }
}

#[inline(never)]
fn spin() {
    let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x);
}
