//! How a cell repetition ended, judged from its reaped processes: a repetition whose
//! measured workers did not all exit 0 with a report is failed, with the reason, so no
//! figure is ever computed from work that did not happen.

use schedlab_model::{CellStatus, Sample};

/// Why the engine gave up on a repetition before judging its workers, if it did.
#[derive(Debug, Clone, PartialEq)]
pub enum Cut {
    /// Every process ran to its end.
    None,
    /// The watchdog killed workers still running after this many seconds.
    Watchdog(f64),
    /// A live dispatcher ended badly (how), and the engine killed its workers.
    Dispatcher(String),
    /// The engine could not supervise at the watchdog's time (it was stopped or starved):
    /// it looked again `late_s` after the watchdog's `timeout_s`, so the workers ran on
    /// unsupervised and were reaped late; `own_end_s`, the last measured worker's end by its
    /// own clock, where the workers reported one.
    LateWatchdog {
        /// The watchdog, seconds after the release.
        timeout_s: f64,
        /// How late the engine looked.
        late_s: f64,
        /// The last measured worker's own end, seconds after the release.
        own_end_s: Option<f64>,
    },
}

/// A background worker stopped by the engine (SIGTERM, then SIGKILL after its grace)
/// ended as it was told to; any other end is a failure.
fn background_failed(s: &Sample) -> bool {
    match (s.exit_code, s.signal) {
        (Some(c), _) => c != 0,
        (None, Some(sig)) => sig != libc::SIGTERM && sig != libc::SIGKILL,
        _ => false,
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The status of a repetition and, unless it is ok, why: every reason found, most
/// serious first, each with the first worker it applies to.
pub fn judge(samples: &[Sample], cut: &Cut) -> (CellStatus, Option<String>) {
    let measured: Vec<&Sample> = samples.iter().filter(|s| !s.background).collect();
    let mut reasons = Vec::new();
    match cut {
        Cut::None => {}
        Cut::Watchdog(secs) => reasons.push(format!("timed out: workers still running after {secs:.0} s were killed by the watchdog")),
        Cut::Dispatcher(how) => reasons.push(format!("the dispatcher {how}; the engine killed its workers")),
        Cut::LateWatchdog { timeout_s, late_s, own_end_s } => reasons.push(format!(
            "timed out: the watchdog ({timeout_s:.0} s) fired {late_s:.1} s late (the engine was stopped or starved), so the workers \
             ran unsupervised{} and their reap times are not their end times",
            own_end_s.map(|e| format!(" (the last ended {e:.1} s after the release by its own clock)")).unwrap_or_default()
        )),
    }
    let of = measured.len();
    let nonzero: Vec<&&Sample> =
        measured.iter().filter(|s| s.exit_code.is_some_and(|c| c != 0)).collect();
    if let Some(first) = nonzero.first() {
        reasons.push(format!(
            "{} of {of} exited with status != 0 (worker {}: status {})",
            plural(nonzero.len(), "worker", "workers"),
            first.index,
            first.exit_code.unwrap_or_default()
        ));
    }
    // The watchdog's kills are the time-out's reason; after a dead dispatcher the engine's
    // kills are its.
    let engine_killed = matches!(cut, Cut::Dispatcher(_));
    let signalled: Vec<&&Sample> =
        measured.iter().filter(|s| s.signal.is_some() && !s.timed_out && !engine_killed).collect();
    if let Some(first) = signalled.first() {
        reasons.push(format!(
            "{} of {of} killed by a signal (worker {}: signal {})",
            plural(signalled.len(), "worker", "workers"),
            first.index,
            first.signal.unwrap_or_default()
        ));
    }
    // A worker that exited 0 without a report did no measured work we can count.
    let silent: Vec<&&Sample> =
        measured.iter().filter(|s| s.exit_code == Some(0) && s.extra.policy.is_none()).collect();
    if let Some(first) = silent.first() {
        reasons.push(format!(
            "{} of {of} exited without a report (worker {})",
            plural(silent.len(), "worker", "workers"),
            first.index
        ));
    }
    let bg: Vec<&Sample> =
        samples.iter().filter(|s| s.background && background_failed(s)).collect();
    if let Some(first) = bg.first() {
        let how = match (first.exit_code, first.signal) {
            (Some(c), _) => format!("status {c}"),
            (_, Some(sig)) => format!("signal {sig}"),
            _ => "?".into(),
        };
        reasons.push(format!(
            "{} failed (worker {}: {how})",
            plural(bg.len(), "background worker", "background workers"),
            first.index
        ));
    }
    if reasons.is_empty() {
        return (CellStatus::Ok, None);
    }
    let status = if matches!(cut, Cut::Watchdog(_) | Cut::LateWatchdog { .. }) {
        CellStatus::TimedOut
    } else {
        CellStatus::Failed
    };
    (status, Some(reasons.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::Extra;

    fn worker(index: u32, exit: Option<i32>, signal: Option<i32>) -> Sample {
        Sample {
            index,
            exit_code: exit,
            signal,
            extra: Extra { policy: Some("other".into()), ..Default::default() },
            group: "main".into(),
            ..Default::default()
        }
    }

    #[test]
    fn workers_that_all_exit_zero_with_a_report_are_ok() {
        let s = vec![worker(0, Some(0), None), worker(1, Some(0), None)];
        assert_eq!(judge(&s, &Cut::None), (CellStatus::Ok, None));
    }

    #[test]
    fn a_nonzero_exit_fails_the_repetition_and_says_how_many() {
        let s = vec![worker(0, Some(0), None), worker(1, Some(1), None), worker(2, Some(3), None)];
        let (st, why) = judge(&s, &Cut::None);
        assert_eq!(st, CellStatus::Failed);
        assert_eq!(why.unwrap(), "2 workers of 3 exited with status != 0 (worker 1: status 1)");
    }

    #[test]
    fn a_worker_killed_by_a_signal_fails_the_repetition() {
        let s = vec![worker(0, None, Some(libc::SIGSEGV)), worker(1, Some(0), None)];
        let (st, why) = judge(&s, &Cut::None);
        assert_eq!(st, CellStatus::Failed);
        assert!(why.unwrap().contains("1 worker of 2 killed by a signal (worker 0: signal 11)"));
    }

    #[test]
    fn the_watchdog_times_out_without_counting_its_own_kills_as_signals() {
        let mut killed = worker(1, None, Some(libc::SIGKILL));
        killed.timed_out = true;
        let (st, why) = judge(&[worker(0, Some(0), None), killed], &Cut::Watchdog(3.0));
        assert_eq!(st, CellStatus::TimedOut);
        let why = why.unwrap();
        assert!(why.starts_with("timed out"), "{why}");
        assert!(!why.contains("signal"), "{why}");
    }

    #[test]
    fn a_late_watchdog_times_the_repetition_out_and_says_by_how_much() {
        let cut = Cut::LateWatchdog { timeout_s: 10.0, late_s: 27.04, own_end_s: Some(25.9) };
        let (st, why) = judge(&[worker(0, Some(0), None), worker(1, Some(0), None)], &cut);
        assert_eq!(st, CellStatus::TimedOut, "workers that all exited 0 are still not ok");
        let why = why.unwrap();
        assert!(
            why.contains("(10 s) fired 27.0 s late")
                && why.contains("ended 25.9 s after the release"),
            "{why}"
        );
    }

    #[test]
    fn a_worker_without_a_report_fails_the_repetition() {
        let mut silent = worker(0, Some(0), None);
        silent.extra = Extra::default();
        let (st, why) = judge(&[silent], &Cut::None);
        assert_eq!(st, CellStatus::Failed);
        assert!(why.unwrap().contains("without a report"));
    }

    #[test]
    fn background_workers_stopped_by_the_engine_are_not_failures() {
        let mut bg = worker(1, None, Some(libc::SIGTERM));
        bg.background = true;
        let mut bg2 = worker(2, None, Some(libc::SIGKILL));
        bg2.background = true;
        assert_eq!(judge(&[worker(0, Some(0), None), bg, bg2], &Cut::None).0, CellStatus::Ok);
        let mut crashed = worker(3, Some(2), None);
        crashed.background = true;
        let (st, why) = judge(&[worker(0, Some(0), None), crashed], &Cut::None);
        assert_eq!(st, CellStatus::Failed);
        assert!(why.unwrap().contains("1 background worker failed (worker 3: status 2)"));
    }

    #[test]
    fn a_dead_dispatcher_fails_the_repetition() {
        let (st, why) = judge(
            &[worker(0, None, Some(libc::SIGKILL))],
            &Cut::Dispatcher("was killed by signal 9".into()),
        );
        assert_eq!(st, CellStatus::Failed);
        assert_eq!(
            why.unwrap(),
            "the dispatcher was killed by signal 9; the engine killed its workers"
        );
    }
}
