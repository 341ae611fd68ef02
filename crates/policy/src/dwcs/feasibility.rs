//! The DWCS feasibility test from the seed, summed in exact rationals: the one implementation
//! (`schedlab_periodic::feasibility` asks it for its guarantee).

use serde::{Deserialize, Serialize};

use crate::{Duration, Window};

/// A task as the feasibility test sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowTask {
    /// Service per period C.
    pub wcet: Duration,
    /// Period T.
    pub period: Duration,
    /// Window constraint x/y.
    pub window: Window,
}

/// The verdict of [`feasibility`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WindowFeasibility {
    /// Minimum utilisation, sum of (1 - x/y) C/T.
    pub utilisation: f64,
    /// Whether the minimum utilisation is at most 1 (computed exactly).
    pub feasible: bool,
    /// Whether every C equals one quantum K and every T is a whole multiple of K:
    /// only then does `feasible` guarantee a schedule.
    pub canonical: bool,
    /// The common quantum K when the set is canonical.
    pub quantum: Option<Duration>,
}

/// Tests sum (1 - x/y) C/T <= 1 and whether the set is canonical.
///
/// For non-canonical sets DWCS can fail at arbitrarily low utilisation
/// (Mok & Wang, RTSS 2001), so `feasible` is then only a necessary condition.
/// An empty set is feasible and canonical, with no quantum.
pub fn feasibility(tasks: &[WindowTask]) -> WindowFeasibility {
    let utilisation =
        tasks.iter().map(|t| t.window.met_fraction() * t.wcet as f64 / t.period as f64).sum();
    let feasible = exact_sum_at_most_one(tasks).unwrap_or(utilisation <= 1.0 + 1e-12);
    let quantum = tasks.first().map(|t| t.wcet);
    let canonical = match quantum {
        None => true,
        Some(k) => k > 0 && tasks.iter().all(|t| t.wcet == k && t.period % k == 0),
    };
    WindowFeasibility { utilisation, feasible, canonical, quantum: quantum.filter(|_| canonical) }
}

// Sums the fractions exactly; None on overflow, so the caller falls back to floats.
fn exact_sum_at_most_one(tasks: &[WindowTask]) -> Option<bool> {
    let (mut num, mut den) = (0u128, 1u128);
    for t in tasks {
        if t.period == 0 {
            return None;
        }
        let (met, of) = if t.window.y == 0 {
            (1, 1)
        } else {
            (u128::from(t.window.y - t.window.x), u128::from(t.window.y))
        };
        let n = met.checked_mul(u128::from(t.wcet))?;
        let d = of.checked_mul(u128::from(t.period))?;
        num = num.checked_mul(d)?.checked_add(n.checked_mul(den)?)?;
        den = den.checked_mul(d)?;
        let g = gcd(num, den);
        num /= g;
        den /= g;
    }
    Some(num <= den)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(c: u64, p: u64, x: u32, y: u32) -> WindowTask {
        WindowTask { wcet: c, period: p, window: Window::new(x, y) }
    }

    #[test]
    fn seed_example_is_canonical_and_feasible() {
        let f = feasibility(&[t(1, 2, 1, 2)]);
        assert_eq!(f.utilisation, 0.25);
        assert!(f.feasible && f.canonical);
        assert_eq!(f.quantum, Some(1));
    }

    #[test]
    fn exactly_one_is_feasible_and_just_over_is_not() {
        // Two tasks needing 1/2 of every unit each: exactly 1.
        assert!(feasibility(&[t(1, 1, 1, 2), t(1, 1, 1, 2)]).feasible);
        // 1/3 + 1/3 + 1/3 in floats is not exactly 1; the exact sum is.
        assert!(feasibility(&[t(1, 3, 0, 0), t(1, 3, 0, 0), t(1, 3, 0, 0)]).feasible);
        assert!(!feasibility(&[t(1, 1, 1, 2), t(1, 1, 1, 2), t(1, 100, 0, 1)]).feasible);
    }

    #[test]
    fn non_canonical_sets_are_flagged() {
        let f = feasibility(&[t(1, 2, 0, 0), t(2, 4, 0, 0)]);
        assert!(f.feasible && !f.canonical);
        assert_eq!(f.quantum, None);
        assert!(!feasibility(&[t(2, 3, 0, 0)]).canonical);
    }

    #[test]
    fn seed_latency_sets_are_feasible() {
        // (tasks, x, y, period) from the seed; C = 1.
        for (n, x, y, p) in [(3, 1, 3, 2), (4, 1, 4, 3), (4, 1, 2, 2), (64, 1, 2, 32)] {
            let set = vec![t(1, p, x, y); n];
            let f = feasibility(&set);
            assert!(f.feasible && f.canonical, "({n},{x},{y},{p}) {f:?}");
        }
        // (5,1,5,4): 5 * 4/5 * 1/4 = 1.
        assert!(feasibility(&[t(1, 4, 1, 5); 5]).feasible);
    }
}
