//! From spawned to finished: waiting until every worker is prepared, the background lead,
//! and the reap loop with its watchdog after the release.

use super::reap::{describe_exit, exited_cleanly, kill_and_reap, Reaped, Reaper, EXIT_GRACE};
use super::CellCtx;
use crate::signals::{self, Wake};
use schedlab_plan::Cell;
use schedlab_sys::procfs::{monotonic_ns, TaskSched};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Why the workers were not all prepared.
pub(super) enum Unprepared {
    /// A stop signal arrived.
    Signal(i32),
    /// A process exited, or the time ran out: the message says which.
    Failed(String),
}

/// Waits until `want` workers said they are prepared ([`crate::protocol::ready_line`]):
/// [`READY_TIMEOUT`] after the last time any of `pids` (the workers) got CPU time, and at
/// most [`READY_LIMIT`]. When the time runs out, the message says where each worker is.
///
/// [`READY_TIMEOUT`]: crate::protocol::READY_TIMEOUT
/// [`READY_LIMIT`]: crate::protocol::READY_LIMIT
pub(super) fn wait_prepared(
    prepared: &AtomicUsize,
    want: usize,
    pids: &[i32],
    reaper: &mut Reaper,
    reaped: &mut Vec<Reaped>,
) -> Result<(), Unprepared> {
    use crate::protocol::{READY_LIMIT, READY_TIMEOUT};
    let root = schedlab_sys::Root::default();
    let oncpu = || -> u64 { pids.iter().filter_map(|&p| TaskSched::read(&root, p).oncpu_ns).sum() };
    let t0 = monotonic_ns();
    let (mut progress_at, mut ran) = (t0, oncpu());
    let mut checked = t0;
    loop {
        let ready = prepared.load(Ordering::Acquire);
        if ready >= want {
            return Ok(());
        }
        reaper.reap(reaped);
        let not_all = |why: &str| {
            Unprepared::Failed(format!(
                "the cell's workers were not all prepared ({ready} of {want}): {why}"
            ))
        };
        if !reaped.is_empty() {
            return Err(not_all("a process of the cell exited while they prepared"));
        }
        let now = monotonic_ns();
        if now - checked >= 1_000_000_000 {
            checked = now;
            let r = oncpu();
            if r > ran {
                (progress_at, ran) = (now, r);
            }
        }
        let idle = now - progress_at > READY_TIMEOUT.as_nanos() as u64;
        if idle || now - t0 > READY_LIMIT.as_nanos() as u64 {
            let seen: Vec<String> = pids
                .iter()
                .take(8)
                .filter_map(|&p| schedlab_sys::procfs::task_whereabouts(&root, p))
                .collect();
            let why = if idle {
                format!("none of them ran for {} s", READY_TIMEOUT.as_secs())
            } else {
                format!("not within {} s, though they ran", READY_LIMIT.as_secs())
            };
            return Err(not_all(&format!("{why} (workers: {})", seen.join("; "))));
        }
        // Woken by the last ready line (`signals::wake`) or a child's exit; the timeout is a
        // fallback only.
        if let Wake::Stop(sig) = signals::wait(Duration::from_millis(200)) {
            return Err(Unprepared::Signal(sig));
        }
    }
}

/// Lets the released background groups run alone for `lead`, reaping what exits; a stop
/// signal is returned.
pub(super) fn background_lead(
    lead: Duration,
    reaper: &mut Reaper,
    reaped: &mut Vec<Reaped>,
) -> Result<(), i32> {
    let until = monotonic_ns() + lead.as_nanos() as u64;
    while monotonic_ns() < until {
        if let Wake::Stop(sig) =
            signals::wait(Duration::from_nanos(until.saturating_sub(monotonic_ns()).max(1)))
        {
            return Err(sig);
        }
        reaper.reap(reaped);
    }
    Ok(())
}

/// The cell's processes after the release.
pub(super) struct ReleasedCell<'a> {
    /// Their process group.
    pub(super) pgid: i32,
    /// How many there are (workers and dispatchers).
    pub(super) n: usize,
    /// Background workers and dispatchers, sorted: not waited for.
    pub(super) background: &'a [i32],
    /// The live dispatchers.
    pub(super) dispatchers: &'a [i32],
    /// When the measured workers were released.
    pub(super) release_ns: u64,
}

/// How the reap loop ended without a stop signal.
#[derive(Debug, Default)]
pub(super) struct Ended {
    /// The watchdog killed the stragglers.
    pub(super) timed_out: bool,
    /// How a dispatcher that ended badly ended.
    pub(super) dispatcher_died: Option<String>,
    /// How late after the watchdog's time the engine looked, seconds, when it was later than
    /// [`WATCHDOG_SLACK`] (it was stopped or starved): its kill, or its reap of workers that
    /// ended meanwhile unsupervised.
    pub(super) late_s: Option<f64>,
}

/// How late the engine may look after the watchdog's time before the cell's timings are not
/// trusted: a wake-up at SCHED_FIFO 99 takes microseconds, a stopped engine seconds.
pub(super) const WATCHDOG_SLACK: Duration = Duration::from_millis(500);

/// How far `at` is past `deadline`, when more than [`WATCHDOG_SLACK`].
fn late(at: u64, deadline: u64) -> Option<f64> {
    let by = at.saturating_sub(deadline);
    (by > WATCHDOG_SLACK.as_nanos() as u64).then_some(by as f64 * 1e-9)
}

/// How many of `reaped` are measured processes (not in `background`, sorted).
pub(super) fn measured_count(reaped: &[Reaped], background: &[i32]) -> usize {
    reaped.iter().filter(|x| background.binary_search(&x.pid).is_err()).count()
}

/// When the last measured process was reaped (the release if none was); `background` sorted.
pub(super) fn measured_end(reaped: &[Reaped], background: &[i32], release_ns: u64) -> u64 {
    reaped
        .iter()
        .filter(|r| background.binary_search(&r.pid).is_err())
        .map(|r| r.at_ns)
        .max()
        .unwrap_or(release_ns)
}

/// Reaps until every measured worker is done, the watchdog fires or a dispatcher ends
/// badly; a stop signal is returned (the caller abandons the cell).
pub(super) fn supervise(
    cx: &mut CellCtx,
    cell: &Cell,
    p: &ReleasedCell,
    reaper: &mut Reaper,
    reaped: &mut Vec<Reaped>,
) -> Result<Ended, i32> {
    let measured = p.n - p.background.len();
    let deadline = p.release_ns + cx.timeout.as_nanos() as u64;
    let mut end = Ended::default();
    // Counted as they are reaped: the wake-ups of a large cell are many.
    let mut done = measured_count(reaped, p.background);
    loop {
        let from = reaped.len();
        reaper.reap(reaped);
        done += measured_count(&reaped[from..], p.background);
        if done >= measured {
            // Reaped long after the watchdog's time: they ran on unsupervised.
            end.late_s = late(measured_end(reaped, p.background, p.release_ns), deadline);
            break;
        }
        let ended: Vec<&Reaped> = match p.dispatchers {
            [] => Vec::new(),
            d => reaped.iter().filter(|r| d.contains(&r.pid)).collect(),
        };
        if let Some(d) = ended.iter().find(|d| !exited_cleanly(d.status)) {
            // The workers demote themselves when their dispatcher is gone; the engine does
            // not wait for that: it kills them (and the other CPUs' dispatchers) at once.
            end.dispatcher_died = Some(describe_exit(d.status));
            kill_and_reap(p.pgid, p.n, reaped, false);
            break;
        }
        // Finished dispatchers told their workers to exit: they have EXIT_GRACE to do so.
        if let Some(last) =
            ended.iter().map(|d| d.at_ns).max().filter(|_| ended.len() == p.dispatchers.len())
        {
            if monotonic_ns() > last + EXIT_GRACE.as_nanos() as u64 {
                cx.warnings.push(format!(
                    "cell {}: workers still running {} s after their dispatcher finished were killed",
                    cell.key,
                    EXIT_GRACE.as_secs()
                ));
                kill_and_reap(p.pgid, p.n, reaped, false);
                break;
            }
        }
        let now = monotonic_ns();
        if now >= deadline {
            end.timed_out = true;
            end.late_s = late(now, deadline);
            kill_and_reap(p.pgid, p.n, reaped, true);
            break;
        }
        let wait = Duration::from_nanos((deadline - now).min(250_000_000));
        if let Wake::Stop(sig) = signals::wait(wait) {
            return Err(sig);
        }
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaped(pid: i32, at_ns: u64) -> Reaped {
        // SAFETY: rusage is plain data.
        Reaped {
            pid,
            status: 0,
            ru: unsafe { std::mem::zeroed() },
            at_ns,
            timed_out: false,
            sched: Default::default(),
        }
    }

    #[test]
    fn background_processes_neither_finish_the_cell_nor_end_its_window() {
        let bg = [5, 6];
        let r = [reaped(1, 100), reaped(5, 900), reaped(2, 300)];
        assert_eq!(measured_count(&r, &bg), 2, "two of three measured");
        assert_eq!(measured_count(&r[1..2], &bg), 0, "a background exit is not a measured one");
        assert_eq!(measured_end(&r, &bg, 50), 300, "the last measured reap, not the background's");
        assert_eq!(measured_end(&r[1..2], &bg, 50), 50, "none measured: the release");
    }

    #[test]
    fn the_engine_is_late_only_past_the_slack() {
        let slack = WATCHDOG_SLACK.as_nanos() as u64;
        assert_eq!(late(1_000, 2_000), None, "before the watchdog's time");
        assert_eq!(late(2_000 + slack, 2_000), None, "within the slack");
        assert_eq!(late(2_000 + 3_000_000_000, 2_000), Some(3.0));
    }
}
