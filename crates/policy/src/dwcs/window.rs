//! Window-constraint state, its adjustment rules, and the pairwise precedence.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::{Time, Window};

/// A task's current window constraint x'/y' and its violation tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowState {
    /// Current numerator x'.
    pub x: u32,
    /// Current denominator y'.
    pub y: u32,
    /// Set when a deadline was missed with no loss left to tolerate.
    pub tagged: bool,
}

impl WindowState {
    /// The starting state x'/y' = x/y, untagged.
    pub fn new(w: Window) -> Self {
        Self { x: w.x, y: w.y, tagged: false }
    }

    /// The current constraint x'/y' as an exact fraction (0/0 counts as 0).
    pub fn constraint(&self) -> Constraint {
        Constraint::new(self.x, self.y)
    }
}

/// What happened at a task's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineOutcome {
    /// The request was served by its deadline.
    Serviced,
    /// The deadline passed without the request being served.
    Missed,
}

/// Applies the window-constraint adjustment rules of `docs dwcs.md`, marked
/// *(reconstructed)* there: they could not be checked against the papers, so
/// they live here and only here, to be corrected in one place.
///
/// Serviced before its deadline:
/// - if y' > x': y' -= 1;
/// - else if y' = x' and x' > 0: x' -= 1, y' -= 1;
/// - then, if x' = y' = 0 or the task is tagged: reset to x/y and clear the tag.
///
/// Missed its deadline:
/// - if x' > 0: x' -= 1, y' -= 1, and if x' = y' = 0: reset to x/y;
/// - else (x' = 0): y' += 1 and tag the task with a violation.
///
/// Returns `true` when this call recorded a violation (a miss with x' = 0).
pub fn adjust_window_reconstructed(
    state: &mut WindowState,
    original: Window,
    outcome: DeadlineOutcome,
) -> bool {
    match outcome {
        DeadlineOutcome::Serviced => {
            if state.y > state.x {
                state.y -= 1;
            } else if state.y == state.x && state.x > 0 {
                state.x -= 1;
                state.y -= 1;
            }
            if (state.x == 0 && state.y == 0) || state.tagged {
                *state = WindowState::new(original);
            }
            false
        }
        DeadlineOutcome::Missed => {
            if state.x > 0 {
                state.x -= 1;
                state.y -= 1;
                if state.x == 0 && state.y == 0 {
                    *state = WindowState::new(original);
                }
                false
            } else {
                state.y += 1;
                state.tagged = true;
                true
            }
        }
    }
}

/// An exact fraction x/y compared by value; 0/0 is treated as 0.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Constraint {
    /// Numerator.
    pub x: u32,
    /// Denominator.
    pub y: u32,
}

impl Constraint {
    /// The fraction x/y.
    pub fn new(x: u32, y: u32) -> Self {
        Self { x, y }
    }

    /// Whether the fraction's value is zero.
    pub fn is_zero(&self) -> bool {
        self.x == 0 || self.y == 0
    }

    fn parts(&self) -> (u64, u64) {
        if self.y == 0 {
            (0, 1)
        } else {
            (u64::from(self.x), u64::from(self.y))
        }
    }
}

impl Ord for Constraint {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = self.parts();
        let (c, d) = other.parts();
        (a * d).cmp(&(c * b))
    }
}

impl PartialOrd for Constraint {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Constraint {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Constraint {}

/// The DWCS precedence of a task, smallest first; equal keys fall back to first-come-first-served.
///
/// The fields encode the seed's pairwise table in order:
/// 1. earliest deadline first;
/// 2. equal deadlines: lowest current constraint x'/y' first;
/// 3. equal deadlines, both constraints zero: highest denominator y' first;
/// 4. equal deadlines, equal non-zero constraints: lowest numerator x' first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Precedence {
    /// Current deadline (`Time::MAX` for tasks without one).
    pub deadline: Time,
    /// Current constraint x'/y'.
    pub constraint: Constraint,
    /// Rule 3 or 4: `u64::MAX - y'` when the constraint is zero, else x'.
    pub tie: u64,
}

impl Precedence {
    /// The precedence of a task with `deadline` and window state `state`.
    pub fn of(deadline: Time, state: &WindowState) -> Self {
        let constraint = state.constraint();
        let tie =
            if constraint.is_zero() { u64::MAX - u64::from(state.y) } else { u64::from(state.x) };
        Self { deadline, constraint, tie }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(x: u32, y: u32, tagged: bool) -> WindowState {
        WindowState { x, y, tagged }
    }

    #[test]
    fn serviced_rules() {
        let w = Window::new(1, 2);
        let mut s = WindowState::new(w);
        assert!(!adjust_window_reconstructed(&mut s, w, DeadlineOutcome::Serviced));
        assert_eq!(s, st(1, 1, false));
        adjust_window_reconstructed(&mut s, w, DeadlineOutcome::Serviced);
        // 1/1 -> 0/0 -> reset.
        assert_eq!(s, st(1, 2, false));
        let hard = Window::HARD;
        let mut s = WindowState::new(hard);
        adjust_window_reconstructed(&mut s, hard, DeadlineOutcome::Serviced);
        assert_eq!(s, st(0, 0, false));
    }

    #[test]
    fn missed_rules_tag_and_untag() {
        let w = Window::new(1, 2);
        let mut s = WindowState::new(w);
        assert!(!adjust_window_reconstructed(&mut s, w, DeadlineOutcome::Missed));
        assert_eq!(s, st(0, 1, false));
        assert!(adjust_window_reconstructed(&mut s, w, DeadlineOutcome::Missed));
        assert_eq!(s, st(0, 2, true));
        assert!(!adjust_window_reconstructed(&mut s, w, DeadlineOutcome::Serviced));
        assert_eq!(s, st(1, 2, false));
        // 1/1 missed -> 0/0 -> reset.
        let mut s = st(1, 1, false);
        adjust_window_reconstructed(&mut s, w, DeadlineOutcome::Missed);
        assert_eq!(s, st(1, 2, false));
    }

    #[test]
    fn precedence_table() {
        let p = |d, x, y| Precedence::of(d, &st(x, y, false));
        // 1. earliest deadline.
        assert!(p(1, 5, 5) < p(2, 0, 9));
        // 2. lower constraint.
        assert!(p(3, 1, 4) < p(3, 1, 2));
        // 3. both zero: higher denominator first.
        assert!(p(3, 0, 5) < p(3, 0, 2));
        assert!(p(3, 0, 0) > p(3, 0, 1));
        // 4. equal non-zero constraints: lower numerator first.
        assert!(p(3, 1, 2) < p(3, 2, 4));
        // 5. otherwise equal.
        assert_eq!(p(3, 1, 2), p(3, 1, 2));
    }
}
