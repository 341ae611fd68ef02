//! Where the fixed time of a command goes: named marks on CLOCK_MONOTONIC, printed as one
//! line on standard error at the end when `SCHEDLAB_PHASES` is set (benches/run_phases.sh).
//! A mark costs a clock read and a push under a lock; unset, it costs a relaxed load.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// The environment variable that turns the marks on.
pub const VAR: &str = "SCHEDLAB_PHASES";

static MARKS: Mutex<Vec<(&'static str, u64)>> = Mutex::new(Vec::new());
/// 0: not looked yet, 1: off, 2: on.
static ON: AtomicU8 = AtomicU8::new(0);

fn on() -> bool {
    match ON.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os(VAR).is_some();
            ON.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        v => v == 2,
    }
}

/// Marks the end of the phase `name` (the time since the mark before, or since the
/// process started for the first).
pub fn mark(name: &'static str) {
    if on() {
        let now = crate::procfs::monotonic_ns();
        MARKS.lock().unwrap_or_else(|e| e.into_inner()).push((name, now));
    }
}

/// This process's start on CLOCK_MONOTONIC (ns), from /proc/self/stat's start time in
/// clock ticks since boot (CLOCK_BOOTTIME; the two differ only by time spent suspended).
fn process_start_ns() -> Option<u64> {
    let (ticks, _) = crate::procfs::process_start(std::process::id() as i32)?;
    // SAFETY: sysconf has no failure mode for this name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(ticks * 1_000_000_000 / hz)
}

/// The marks as one line, `phases: exec 3.1 ms, spec 0.4 ms, ...`, with the total; None
/// when the marks are off or there are none.
pub fn line() -> Option<String> {
    if !on() {
        return None;
    }
    let marks = MARKS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let first = marks.first()?.1;
    let mut prev = process_start_ns().filter(|s| *s <= first).unwrap_or(first);
    let start = prev;
    let mut parts = Vec::new();
    for (name, t) in &marks {
        parts.push(format!("{name} {:.1} ms", t.saturating_sub(prev) as f64 * 1e-6));
        prev = *t;
    }
    Some(format!(
        "phases: {} (total {:.1} ms since the process started, at tick resolution)",
        parts.join(", "),
        prev.saturating_sub(start) as f64 * 1e-6
    ))
}
