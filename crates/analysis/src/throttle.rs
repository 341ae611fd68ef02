//! The CFS bandwidth throttling a cell's repetitions met (`CellRecord::throttling`): a cell
//! throttled by a CPU quota from outside its spec measured the quota, and is named for it
//! like a noisy one; one throttled by its own `cpu_max` measured what its spec asked.

use schedlab_model::CellRecord;
use std::path::PathBuf;

/// The throttling over a cell's counted repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CellThrottle {
    /// Repetitions throttled at least once.
    pub reps: usize,
    /// Time throttled per counted repetition, seconds (mean; each repetition's most
    /// throttled cgroup).
    pub throttled_s: f64,
    /// The most time one repetition was throttled, seconds.
    pub max_s: f64,
    /// Periods throttled, summed over the repetitions.
    pub throttled_periods: u64,
    /// Periods that elapsed with tasks runnable, summed over the repetitions.
    pub periods: u64,
    /// Every quota that throttled it is the cell's own (a group's `cpu_max`).
    pub own: bool,
    /// The cgroups that throttled it.
    pub cgroups: Vec<PathBuf>,
}

/// What throttled `reps` (a cell's counted repetitions), None when nothing did.
pub fn of(reps: &[&CellRecord]) -> Option<CellThrottle> {
    let mut t = CellThrottle {
        reps: 0,
        throttled_s: 0.0,
        max_s: 0.0,
        throttled_periods: 0,
        periods: 0,
        own: true,
        cgroups: Vec::new(),
    };
    for r in reps {
        let hit = r.throttling.iter().filter(|t| t.throttled_periods > 0);
        let Some(worst) = hit.clone().max_by(|a, b| a.throttled_s.total_cmp(&b.throttled_s)) else {
            continue;
        };
        t.reps += 1;
        t.throttled_s += worst.throttled_s;
        t.max_s = t.max_s.max(worst.throttled_s);
        t.throttled_periods += worst.throttled_periods;
        t.periods += worst.periods;
        for h in hit {
            t.own &= h.own;
            if !t.cgroups.contains(&h.cgroup) {
                t.cgroups.push(h.cgroup.clone());
            }
        }
    }
    (t.reps > 0).then(|| CellThrottle { throttled_s: t.throttled_s / reps.len() as f64, ..t })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::Throttled;

    fn rep(throttling: Vec<Throttled>) -> CellRecord {
        CellRecord { throttling, ..Default::default() }
    }

    fn quota(cgroup: &str, own: bool, throttled: u64, s: f64) -> Throttled {
        Throttled {
            cgroup: cgroup.into(),
            own,
            periods: 60,
            throttled_periods: throttled,
            throttled_s: s,
        }
    }

    #[test]
    fn a_cell_is_throttled_by_its_repetitions_most_throttled_cgroup() {
        let reps = [
            rep(vec![quota("/a", false, 51, 2.0), quota("/a/b", false, 10, 0.5)]),
            rep(vec![quota("/a", false, 0, 0.0)]),
            rep(Vec::new()),
            rep(vec![quota("/a", false, 40, 1.0)]),
        ];
        let t = of(&reps.iter().collect::<Vec<_>>()).expect("throttled");
        assert_eq!((t.reps, t.throttled_periods, t.periods), (2, 91, 120));
        assert!((t.throttled_s - 0.75).abs() < 1e-12, "3 s over 4 repetitions: {}", t.throttled_s);
        assert_eq!(t.max_s, 2.0);
        assert!(!t.own);
        assert_eq!(t.cgroups, vec![PathBuf::from("/a"), PathBuf::from("/a/b")]);
    }

    #[test]
    fn a_quota_that_never_throttled_is_no_throttling_and_a_cells_own_is_said() {
        assert_eq!(of(&[&rep(vec![quota("/a", false, 0, 0.0)])]), None);
        assert_eq!(of(&[]), None);
        let own = of(&[&rep(vec![quota("/s/c0-g", true, 5, 0.1)])]).unwrap();
        assert!(own.own);
    }
}
