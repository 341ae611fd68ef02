//! The CFS bandwidth throttling a cell repetition meets: `cpu.stat` of every cgroup with a
//! CPU quota its workers run under, read just before the release and just after the last
//! reap. Those are the cell's own cgroups (a group's `cpu_max`) and their ancestors when it
//! has them, else the engine's cgroup and its ancestors, which the workers inherit.

use schedlab_model::Throttled;
use schedlab_sys::cgroup::{Cgroup, Hierarchy};
use schedlab_sys::quota::{quota_chain, CpuStat};
use schedlab_sys::Root;
use std::path::PathBuf;

/// The counters before the release: (cgroup, the cell's own, `cpu.stat`).
pub(super) struct Watch(Vec<(PathBuf, bool, CpuStat)>);

/// Reads the counters of the cgroups with a CPU quota over the cell's workers: `own` (its
/// groups' cgroups, empty when it has none) in hierarchy `h`, else the engine's.
pub(super) fn watch(root: &Root, h: Option<&Hierarchy>, own: &[Cgroup]) -> Watch {
    let mut points: Vec<(PathBuf, bool)> = Vec::new();
    let top = match h {
        Some(Hierarchy::V1 { cpu, .. }) => cpu.clone(),
        Some(Hierarchy::V2 { root, .. }) => Some(root.clone()),
        None => None,
    };
    match (own.is_empty(), top) {
        (false, Some(top)) => {
            for dir in own.iter().flat_map(Cgroup::dirs).filter(|d| d.starts_with(&top)) {
                for p in quota_chain(dir, &top) {
                    if !points.iter().any(|(q, _)| *q == p) {
                        let mine = &p == dir;
                        points.push((p, mine));
                    }
                }
            }
        }
        _ => {
            if let Some(c) = schedlab_sys::probe::cpu_cgroup(root) {
                points
                    .extend(quota_chain(&c.dir, &c.hierarchy_root).into_iter().map(|p| (p, false)));
            }
        }
    }
    Watch(
        points
            .into_iter()
            .filter_map(|(p, mine)| CpuStat::read(&p).map(|s| (p, mine, s)))
            .collect(),
    )
}

impl Watch {
    /// What each cgroup counted since [`watch`], those whose quota was in force (periods
    /// elapsed).
    pub(super) fn since(self) -> Vec<Throttled> {
        self.0
            .into_iter()
            .filter_map(|(cgroup, own, before)| {
                let d = CpuStat::read(&cgroup)?.since(&before);
                (d.periods > 0).then_some(Throttled {
                    cgroup,
                    own,
                    periods: d.periods,
                    throttled_periods: d.throttled_periods,
                    throttled_s: d.throttled_ns as f64 * 1e-9,
                })
            })
            .collect()
    }
}
