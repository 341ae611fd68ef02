//! Signal handling for the engine without async handlers: SIGCHLD, SIGINT, SIGTERM and
//! SIGHUP are blocked in every engine thread and collected with sigtimedwait, so the reap
//! loop wakes on a child's exit or a stop request and nothing runs in signal context.
//! Workers get an empty mask (std resets it in the child before exec).

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

static STOP: AtomicI32 = AtomicI32::new(0);

/// Why the engine woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A child changed state.
    Child,
    /// SIGINT, SIGTERM or SIGHUP: stop the run.
    Stop(i32),
    /// The timeout passed.
    Timeout,
}

fn set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        for sig in [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut s, sig);
        }
        s
    }
}

/// Blocks the engine's signals in the calling thread. Call before any thread is
/// spawned so every thread inherits the mask.
pub fn block() {
    let s = set();
    // SAFETY: valid set pointer; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &s, std::ptr::null_mut()) };
}

/// Wakes this process's [`wait`] as a child event would (a SIGCHLD to itself, which every
/// thread blocks and only `wait` takes): for a thread with news for the engine, so the engine
/// need not poll. A spurious wake-up is harmless: every waiter re-checks its condition.
pub fn wake() {
    // SAFETY: sending a blocked, ignored-by-default signal to our own process.
    unsafe { libc::kill(libc::getpid(), libc::SIGCHLD) };
}

/// Waits up to `timeout` for a child event or a stop request.
pub fn wait(timeout: Duration) -> Wake {
    if let Some(sig) = stopped() {
        return Wake::Stop(sig);
    }
    let s = set();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: valid set and timespec; siginfo is not needed.
    let sig = unsafe { libc::sigtimedwait(&s, std::ptr::null_mut(), &ts) };
    match sig {
        libc::SIGCHLD => Wake::Child,
        s if s > 0 => {
            STOP.store(s, Ordering::SeqCst);
            Wake::Stop(s)
        }
        _ => Wake::Timeout,
    }
}

/// The stop signal received so far, polling pending signals without waiting.
/// A pending SIGCHLD is left for the reap loop.
pub fn stopped() -> Option<i32> {
    let prior = STOP.load(Ordering::SeqCst);
    if prior != 0 {
        return Some(prior);
    }
    // SAFETY: plain data sets and a zero timeout.
    unsafe {
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            if libc::sigismember(&pending, sig) == 1 {
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, sig);
                let ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                libc::sigtimedwait(&one, std::ptr::null_mut(), &ts);
                STOP.store(sig, Ordering::SeqCst);
                return Some(sig);
            }
        }
    }
    None
}
