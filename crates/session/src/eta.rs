//! Elapsed time and the time left, for progress lines a log can keep.

use std::time::Duration;

/// The time left for `total - done` steps at the pace of the `done` finished in `elapsed`;
/// None before the first step finished.
pub fn eta(elapsed: Duration, done: usize, total: usize) -> Option<Duration> {
    (done > 0).then(|| elapsed.mul_f64(total.saturating_sub(done) as f64 / done as f64))
}

/// `m:ss`, or `h:mm:ss` from an hour on.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s / 3600 {
        0 => format!("{}:{:02}", s / 60, s % 60),
        h => format!("{h}:{:02}:{:02}", s / 60 % 60, s % 60),
    }
}

/// One step's progress line, e.g. `[3/24] pi/fifo:50/n4 rep 2  elapsed 0:41  ETA 4:12`.
pub fn step_line(what: &str, done: usize, total: usize, elapsed: Duration) -> String {
    let left = eta(elapsed, done, total).map_or_else(|| "?".to_string(), clock);
    format!("[{}/{total}] {what}  elapsed {}  ETA {left}", done + 1, clock(elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_pace_so_far_times_the_steps_left() {
        let s = Duration::from_secs;
        assert_eq!(eta(s(40), 0, 10), None, "no pace before a step finished");
        assert_eq!(eta(s(40), 4, 10), Some(s(60)));
        assert_eq!(eta(s(40), 10, 10), Some(s(0)));
        assert_eq!(eta(s(40), 11, 10), Some(s(0)), "never negative");
    }

    #[test]
    fn clocks_read_as_minutes_and_seconds_then_hours() {
        assert_eq!(clock(Duration::from_millis(41_900)), "0:41");
        assert_eq!(clock(Duration::from_secs(252)), "4:12");
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 5 * 60 + 7)), "3:05:07");
    }

    #[test]
    fn a_step_line_counts_from_one_and_says_elapsed_and_eta() {
        let l = step_line("pi/fifo:50/n4 rep 2", 2, 24, Duration::from_secs(41));
        assert_eq!(l, "[3/24] pi/fifo:50/n4 rep 2  elapsed 0:41  ETA 7:31");
        assert!(step_line("x rep 1", 0, 3, Duration::ZERO).ends_with("ETA ?"));
    }
}
