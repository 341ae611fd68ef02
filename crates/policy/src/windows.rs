//! Judging a task's deadlines against its window constraint: the one counter that the worker
//! loop, the live dispatcher and the simulator all use, so measured and simulated runs count
//! windows alike.
//!
//! This is measurement, not policy: it judges outcomes, whatever the policy did.
//!
//! A window constraint x/y allows at most x missed deadlines in a window of y deadlines. A
//! window "is violated" when it holds more than x misses. Two ways of cutting windows:
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
//! violation is 100 x (periods in violation) / (deadlines judged).
//!
//! A 0/0 constraint tolerates no loss: it is judged as 0/1, so every deadline is its own
//! window and every miss is a violation. x > y is clamped to x = y (never violated).
//!
//! ```
//! use schedlab_policy::{Window, WindowCounter};
//!
//! let mut c = WindowCounter::new(Window::new(1, 3));
//! for missed in [false, true, true, false] {
//!     c.push(missed);
//! }
//! let r = c.report();
//! // Fixed: [o x x] violated, tail [o]; sliding: [o x x] and [x x o], both violated.
//! assert_eq!((r.fixed.windows, r.fixed.violations), (2, 1));
//! assert_eq!((r.sliding.windows, r.sliding.violations), (2, 2));
//! assert_eq!(r.time_in_violation_pct(), 50.0);
//! ```

use serde::{Deserialize, Serialize};

use crate::Window;

/// How many windows were judged and how many were violated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowCounts {
    /// Windows judged.
    pub windows: u64,
    /// Windows holding more than x misses.
    pub violations: u64,
}

/// Everything a [`WindowCounter`] has found so far for one task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowReport {
    /// DWCS fixed, non-overlapping windows (a partial tail counts as a window).
    pub fixed: WindowCounts,
    /// Sliding windows of y consecutive deadlines (fewer than y: one partial window).
    pub sliding: WindowCounts,
    /// Deadlines judged, met or missed.
    pub deadlines: u64,
    /// Deadlines whose trailing window (the last y, fewer at the start) was violated.
    pub periods_in_violation: u64,
}

impl WindowReport {
    /// Percentage of elapsed periods in violation (0 when no deadline was judged).
    pub fn time_in_violation_pct(&self) -> f64 {
        if self.deadlines == 0 {
            0.0
        } else {
            100.0 * self.periods_in_violation as f64 / self.deadlines as f64
        }
    }

    /// Judges a whole sequence of outcomes at once (`true` = missed).
    pub fn of(window: Window, missed: impl IntoIterator<Item = bool>) -> Self {
        let mut c = WindowCounter::new(window);
        missed.into_iter().for_each(|m| c.push(m));
        c.report()
    }
}

/// Streams deadline outcomes into fixed and sliding window counts. [`new`](Self::new)
/// allocates the ring of the last y outcomes; [`push`](Self::push) and
/// [`report`](Self::report) never allocate, so a real-time loop may call them.
#[derive(Debug, Clone)]
pub struct WindowCounter {
    x: u32,
    /// The last y outcomes (true = missed), `pos` the oldest once full.
    ring: Vec<bool>,
    pos: usize,
    filled: usize,
    ring_misses: u32,
    block_len: usize,
    block_misses: u32,
    full_blocks: u64,
    full_block_violations: u64,
    full_window_violations: u64,
    deadlines: u64,
    periods_in_violation: u64,
}

impl WindowCounter {
    /// A counter for the constraint `w` (0/0 is judged as 0/1, x > y as x = y).
    pub fn new(w: Window) -> Self {
        let (x, y) = if w.y == 0 { (0, 1) } else { (w.x.min(w.y), w.y as usize) };
        Self {
            x,
            ring: vec![false; y],
            pos: 0,
            filled: 0,
            ring_misses: 0,
            block_len: 0,
            block_misses: 0,
            full_blocks: 0,
            full_block_violations: 0,
            full_window_violations: 0,
            deadlines: 0,
            periods_in_violation: 0,
        }
    }

    /// Records the outcome of the next deadline.
    pub fn push(&mut self, missed: bool) {
        let y = self.ring.len();
        self.block_len += 1;
        self.block_misses += u32::from(missed);
        if self.block_len == y {
            self.full_blocks += 1;
            self.full_block_violations += u64::from(self.block_misses > self.x);
            self.block_len = 0;
            self.block_misses = 0;
        }
        if self.filled == y {
            self.ring_misses -= u32::from(self.ring[self.pos]);
        } else {
            self.filled += 1;
        }
        self.ring[self.pos] = missed;
        self.ring_misses += u32::from(missed);
        self.pos += 1;
        if self.pos == y {
            self.pos = 0;
        }
        self.deadlines += 1;
        let violated = self.ring_misses > self.x;
        self.periods_in_violation += u64::from(violated);
        if self.filled == y {
            self.full_window_violations += u64::from(violated);
        }
    }

    /// Writes what decides the coming counts (the last y outcomes and the current block);
    /// what only adds up (the counts) is left to [`repeat`](Self::repeat).
    pub fn cycle_state(&self, out: &mut Vec<u64>) {
        out.extend([
            u64::from(self.x),
            self.pos as u64,
            self.filled as u64,
            u64::from(self.ring_misses),
        ]);
        out.extend([self.block_len as u64, u64::from(self.block_misses)]);
        out.extend(self.ring.iter().map(|&m| u64::from(m)));
    }

    /// Adds `k` more times the counts this counter gained since `earlier`, a copy of it
    /// whose [`cycle_state`](Self::cycle_state) was the same as its own now.
    pub fn repeat(&mut self, earlier: &WindowCounter, k: u64) {
        let add = |now: &mut u64, then: u64| *now += k * (*now - then);
        add(&mut self.full_blocks, earlier.full_blocks);
        add(&mut self.full_block_violations, earlier.full_block_violations);
        add(&mut self.full_window_violations, earlier.full_window_violations);
        add(&mut self.deadlines, earlier.deadlines);
        add(&mut self.periods_in_violation, earlier.periods_in_violation);
    }

    /// The counts so far, with the partial windows judged as the module docs say.
    pub fn report(&self) -> WindowReport {
        let y = self.ring.len() as u64;
        let n = self.deadlines;
        let tail = self.block_len > 0;
        let fixed = WindowCounts {
            windows: self.full_blocks + u64::from(tail),
            violations: self.full_block_violations + u64::from(tail && self.block_misses > self.x),
        };
        let sliding = if n >= y {
            WindowCounts { windows: n - y + 1, violations: self.full_window_violations }
        } else {
            WindowCounts {
                windows: u64::from(n > 0),
                violations: u64::from(self.ring_misses > self.x),
            }
        };
        WindowReport {
            fixed,
            sliding,
            deadlines: n,
            periods_in_violation: self.periods_in_violation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 'o' = met, 'x' = missed.
    fn judge(w: Window, s: &str) -> WindowReport {
        WindowReport::of(w, s.chars().map(|c| c == 'x'))
    }

    fn wc(windows: u64, violations: u64) -> WindowCounts {
        WindowCounts { windows, violations }
    }

    #[test]
    fn one_in_three_worked_by_hand() {
        let r = judge(Window::new(1, 3), "oxxoxooxxx");
        // Fixed: oxx (2, violated) oxo (1) oxx (2, violated) tail x (1).
        assert_eq!(r.fixed, wc(4, 2));
        // Sliding starts 0..=7: oxx V, xxo V, xox V, oxo, xoo, oox, oxx V, xxx V.
        assert_eq!(r.sliding, wc(8, 5));
        // Trailing windows end at 0..=9: o, ox, then the eight sliding ones.
        assert_eq!((r.deadlines, r.periods_in_violation), (10, 5));
        assert_eq!(r.time_in_violation_pct(), 50.0);
    }

    #[test]
    fn zero_over_zero_makes_every_miss_a_violation() {
        let r = judge(Window::HARD, "oxoxx");
        assert_eq!(
            r,
            WindowReport {
                fixed: wc(5, 3),
                sliding: wc(5, 3),
                deadlines: 5,
                periods_in_violation: 3
            }
        );
    }

    #[test]
    fn zero_over_three_tolerates_nothing_in_a_window() {
        let r = judge(Window::new(0, 3), "ooxoooo");
        // Fixed: oox V, ooo, tail o.
        assert_eq!(r.fixed, wc(3, 1));
        // Sliding: oox V, oxo V, xoo V, ooo, ooo.
        assert_eq!(r.sliding, wc(5, 3));
        // Trailing: o, oo, oox V, oxo V, xoo V, ooo, ooo.
        assert!((r.time_in_violation_pct() - 300.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn sequences_shorter_than_a_window() {
        let w = Window::new(1, 3);
        let r = judge(w, "xx");
        assert_eq!(r.fixed, wc(1, 1), "a tail already over x is violated");
        assert_eq!(r.sliding, wc(1, 1));
        assert_eq!(r.time_in_violation_pct(), 50.0, "x then xx: only the second is over 1");
        assert_eq!(
            judge(w, "x"),
            WindowReport {
                fixed: wc(1, 0),
                sliding: wc(1, 0),
                deadlines: 1,
                periods_in_violation: 0
            }
        );
        assert_eq!(judge(w, ""), WindowReport::default());
        assert_eq!(judge(w, "").time_in_violation_pct(), 0.0);
    }

    #[test]
    fn exact_multiple_has_no_tail() {
        assert_eq!(judge(Window::new(1, 2), "xxoxxo").fixed, wc(3, 1), "xx V, ox, xo");
        assert_eq!(judge(Window::new(1, 3), "xxoxxo").fixed, wc(2, 2));
    }

    #[test]
    fn all_may_be_missed_is_never_violated() {
        let r = judge(Window::new(2, 2), "xxxxxxx");
        assert_eq!((r.fixed.violations, r.sliding.violations, r.periods_in_violation), (0, 0, 0));
        let r = judge(Window::new(5, 2), "xxxxxxx");
        assert_eq!((r.fixed, r.sliding.violations), (wc(4, 0), 0), "x > y clamps to x = y");
    }

    #[test]
    fn all_met_is_never_violated() {
        let r = judge(Window::new(0, 4), "oooooooooo");
        assert_eq!(
            r,
            WindowReport {
                fixed: wc(3, 0),
                sliding: wc(7, 0),
                deadlines: 10,
                periods_in_violation: 0
            }
        );
    }

    #[test]
    fn one_in_two_cases() {
        // Windows [o x][x o] are fine; sliding [x x] in the middle is not.
        assert_eq!(
            judge(Window::new(1, 2), "oxxo"),
            WindowReport {
                fixed: wc(2, 0),
                sliding: wc(3, 1),
                deadlines: 4,
                periods_in_violation: 1
            }
        );
        assert_eq!(judge(Window::new(1, 2), "xxoo").fixed, wc(2, 1));
        // Trailing windows x, xx (violated), xo, ox, xx (violated).
        assert_eq!(judge(Window::new(1, 2), "xxoxx").periods_in_violation, 2);
        assert_eq!(judge(Window::new(1, 3), "xoxoxo").sliding, wc(4, 2));
    }

    #[test]
    fn a_report_mid_stream_equals_a_report_of_the_prefix() {
        let outcomes = "oxxoxooxxxoxo";
        let w = Window::new(1, 4);
        let mut c = WindowCounter::new(w);
        for (k, ch) in outcomes.char_indices() {
            c.push(ch == 'x');
            assert_eq!(c.report(), judge(w, &outcomes[..=k]), "after {} deadlines", k + 1);
        }
    }

    #[test]
    fn agrees_with_brute_force() {
        // A fixed pseudo-random sequence (LCG) checked against direct counting of every window.
        let mut state = 12345u64;
        let missed: Vec<bool> = (0..500)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33).is_multiple_of(3)
            })
            .collect();
        let over = |win: &[bool], x: u32| win.iter().filter(|&&m| m).count() > x as usize;
        for (x, y) in [(0, 1), (1, 2), (1, 3), (2, 5), (3, 7), (0, 4)] {
            let r = WindowReport::of(Window::new(x, y), missed.iter().copied());
            let y = y as usize;
            let sliding = missed.windows(y).filter(|win| over(win, x)).count() as u64;
            assert_eq!(r.sliding, wc((missed.len() - y + 1) as u64, sliding), "{x}/{y}");
            let fixed = missed.chunks(y).filter(|win| over(win, x)).count() as u64;
            assert_eq!(r.fixed, wc(missed.len().div_ceil(y) as u64, fixed), "{x}/{y}");
            let trailing = (0..missed.len())
                .filter(|&k| over(&missed[k.saturating_sub(y - 1)..=k], x))
                .count();
            assert_eq!(r.periods_in_violation, trailing as u64, "{x}/{y}");
        }
    }
}
