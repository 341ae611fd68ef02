//! Window-constraint accounting over a task's sequence of deadlines, each met or missed.
//!
//! A window constraint x/y allows at most x missed deadlines in a window of y deadlines.
//! A window "is violated" when it holds more than x misses. Two ways of cutting windows:
//!
//! - **fixed** (DWCS's own): consecutive, non-overlapping windows of y deadlines starting at
//!   the first deadline. A shorter tail at the end counts as one more window: it is violated
//!   when it already holds more than x misses (more deadlines can only add misses), so a
//!   violation is never claimed wrongly.
//! - **sliding**: every run of y consecutive deadlines (n - y + 1 of them for n >= y). When
//!   fewer than y deadlines passed, the whole sequence is one (partial) window.
//!
//! **Time in violation**: deadline k "closes" the sliding window of the last y deadlines up to
//! and including k (fewer at the start). The task is in violation during period k when that
//! window is violated. Every period lasts T, so the percentage of the task's elapsed time in
//! violation is 100 x (periods in violation) / (periods elapsed).
//!
//! A 0/0 constraint tolerates no loss: it is accounted as 0/1, so every deadline is its own
//! window and every miss is a violation.

use serde::{Deserialize, Serialize};

/// A window constraint x/y, normalised so 0/0 reads as 0/1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    x: u32,
    y: u32,
}

impl Window {
    /// The constraint x/y; 0/0 (no loss tolerated) becomes 0/1. x > y is the caller's error
    /// (see [`crate::TaskParams::validate`]); it is clamped to x = y (never violated).
    pub fn new(x: u32, y: u32) -> Self {
        if y == 0 {
            Window { x: 0, y: 1 }
        } else {
            Window { x: x.min(y), y }
        }
    }

    /// Misses allowed per window.
    pub fn x(&self) -> u32 {
        self.x
    }

    /// Window length in deadlines (at least 1).
    pub fn y(&self) -> u32 {
        self.y
    }

    fn violated(&self, misses: usize) -> bool {
        misses > self.x as usize
    }
}

/// How many windows were examined and how many were violated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowCounts {
    /// Windows examined.
    pub windows: u64,
    /// Windows holding more than x misses.
    pub violations: u64,
}

/// Everything [`account`] finds for one task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowReport {
    /// DWCS fixed, non-overlapping windows (a partial tail counts as a window).
    pub fixed: WindowCounts,
    /// Sliding windows of y consecutive deadlines.
    pub sliding: WindowCounts,
    /// Percentage of elapsed periods in violation (see the module docs).
    pub time_in_violation_pct: f64,
}

/// DWCS fixed windows over `met` (one flag per deadline, in order; false = missed).
pub fn fixed_windows(met: &[bool], window: Window) -> WindowCounts {
    let mut counts = WindowCounts::default();
    for chunk in met.chunks(window.y as usize) {
        counts.windows += 1;
        if window.violated(misses(chunk)) {
            counts.violations += 1;
        }
    }
    counts
}

/// Sliding windows over `met`: every run of y consecutive deadlines.
pub fn sliding_windows(met: &[bool], window: Window) -> WindowCounts {
    let y = window.y as usize;
    if met.is_empty() {
        return WindowCounts::default();
    }
    if met.len() < y {
        return WindowCounts { windows: 1, violations: u64::from(window.violated(misses(met))) };
    }
    // Windows ending at y-1 .. n-1 are exactly the full windows.
    let violations = trailing_violations(met, window).skip(y - 1).filter(|&v| v).count() as u64;
    WindowCounts { windows: (met.len() - y + 1) as u64, violations }
}

/// For each deadline k, whether the window of the last y deadlines ending at k (fewer
/// before deadline y-1) is violated.
pub fn trailing_violations(met: &[bool], window: Window) -> impl Iterator<Item = bool> + '_ {
    let y = window.y as usize;
    let mut in_window = 0usize;
    met.iter().enumerate().map(move |(k, &m)| {
        in_window += usize::from(!m);
        if k >= y {
            in_window -= usize::from(!met[k - y]);
        }
        window.violated(in_window)
    })
}

/// Percentage of elapsed periods in violation (0 for an empty sequence).
pub fn time_in_violation_pct(met: &[bool], window: Window) -> f64 {
    if met.is_empty() {
        return 0.0;
    }
    let violated = trailing_violations(met, window).filter(|&v| v).count();
    100.0 * violated as f64 / met.len() as f64
}

/// Fixed windows, sliding windows and time in violation together.
pub fn account(met: &[bool], window: Window) -> WindowReport {
    WindowReport {
        fixed: fixed_windows(met, window),
        sliding: sliding_windows(met, window),
        time_in_violation_pct: time_in_violation_pct(met, window),
    }
}

fn misses(met: &[bool]) -> usize {
    met.iter().filter(|&&m| !m).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 'o' = met, 'x' = missed.
    fn seq(s: &str) -> Vec<bool> {
        s.chars().map(|c| c == 'o').collect()
    }

    fn wc(windows: u64, violations: u64) -> WindowCounts {
        WindowCounts { windows, violations }
    }

    #[test]
    fn one_in_three_worked_by_hand() {
        let met = seq("oxxoxooxxx");
        let w = Window::new(1, 3);
        // Fixed: oxx (2, violated) oxo (1) oxx (2, violated) tail x (1).
        assert_eq!(fixed_windows(&met, w), wc(4, 2));
        // Sliding starts 0..=7: oxx V, xxo V, xox V, oxo, xoo, oox, oxx V, xxx V.
        assert_eq!(sliding_windows(&met, w), wc(8, 5));
        // Trailing windows end at 0..=9: o, ox, then the eight sliding ones.
        let flags: Vec<bool> = trailing_violations(&met, w).collect();
        assert_eq!(flags, [false, false, true, true, true, false, false, false, true, true]);
        assert_eq!(time_in_violation_pct(&met, w), 50.0);
    }

    #[test]
    fn zero_over_zero_makes_every_miss_a_violation() {
        let met = seq("oxoxx");
        let w = Window::new(0, 0);
        assert_eq!((w.x(), w.y()), (0, 1));
        assert_eq!(account(&met, w), WindowReport { fixed: wc(5, 3), sliding: wc(5, 3), time_in_violation_pct: 60.0 });
    }

    #[test]
    fn zero_over_three_tolerates_nothing_in_a_window() {
        let met = seq("ooxoooo");
        let w = Window::new(0, 3);
        // Fixed: oox V, ooo, tail o.
        assert_eq!(fixed_windows(&met, w), wc(3, 1));
        // Sliding: oox V, oxo V, xoo V, ooo, ooo.
        assert_eq!(sliding_windows(&met, w), wc(5, 3));
        // Trailing: o, oo, oox V, oxo V, xoo V, ooo, ooo.
        assert!((time_in_violation_pct(&met, w) - 300.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn sequences_shorter_than_a_window() {
        let w = Window::new(1, 3);
        let met = seq("xx");
        assert_eq!(fixed_windows(&met, w), wc(1, 1), "a tail already over x is violated");
        assert_eq!(sliding_windows(&met, w), wc(1, 1));
        assert_eq!(time_in_violation_pct(&met, w), 50.0, "x then xx: only the second is over 1");
        assert_eq!(account(&seq("x"), w), WindowReport { fixed: wc(1, 0), sliding: wc(1, 0), time_in_violation_pct: 0.0 });
        assert_eq!(account(&[], w), WindowReport::default());
    }

    #[test]
    fn exact_multiple_has_no_tail() {
        let met = seq("xxoxxo");
        assert_eq!(fixed_windows(&met, Window::new(1, 2)), wc(3, 1), "xx V, ox, xo");
        assert_eq!(fixed_windows(&met, Window::new(1, 3)), wc(2, 2));
    }

    #[test]
    fn all_may_be_missed_is_never_violated() {
        let met = seq("xxxxxxx");
        let r = account(&met, Window::new(2, 2));
        assert_eq!((r.fixed.violations, r.sliding.violations, r.time_in_violation_pct), (0, 0, 0.0));
        assert_eq!(Window::new(5, 2).x(), 2, "x > y clamps to x = y");
    }

    #[test]
    fn all_met_is_never_violated() {
        let r = account(&seq("oooooooooo"), Window::new(0, 4));
        assert_eq!(r, WindowReport { fixed: wc(3, 0), sliding: wc(7, 0), time_in_violation_pct: 0.0 });
    }

    #[test]
    fn same_rules_as_the_simulator() {
        // schedlab-sim's WindowCounter cases: live and simulated runs must count alike.
        let violations = |w: Window, s: &str| {
            let r = account(&seq(s), w);
            (r.fixed.violations, r.sliding.violations)
        };
        assert_eq!(violations(Window::new(1, 2), "oxxo"), (0, 1));
        assert_eq!(violations(Window::new(1, 2), "xxoo"), (1, 1));
        assert_eq!(violations(Window::new(0, 0), "oxox"), (2, 2));
        assert_eq!(violations(Window::new(1, 4), "xx"), (1, 1));
        assert_eq!(violations(Window::new(1, 4), "x"), (0, 0));
    }

    #[test]
    fn sliding_agrees_with_brute_force() {
        // A fixed pseudo-random sequence (LCG) checked against direct counting of every window.
        let mut state = 12345u64;
        let met: Vec<bool> = (0..500)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) % 3 != 0
            })
            .collect();
        for (x, y) in [(0, 1), (1, 2), (1, 3), (2, 5), (3, 7), (0, 4)] {
            let w = Window::new(x, y);
            let y = y as usize;
            let brute = met.windows(y).filter(|win| misses(win) > x as usize).count() as u64;
            assert_eq!(sliding_windows(&met, w), wc((met.len() - y + 1) as u64, brute), "{x}/{y}");
            let trailing = (0..met.len()).filter(|&k| misses(&met[k.saturating_sub(y - 1)..=k]) > x as usize).count();
            assert!((time_in_violation_pct(&met, w) - 100.0 * trailing as f64 / met.len() as f64).abs() < 1e-9);
        }
    }
}
