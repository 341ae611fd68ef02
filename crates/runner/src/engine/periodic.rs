//! The cell's periodic set as the engine runs it: placement and the dispatchers' regions.

use super::CellCtx;
use schedlab_plan::{Cell, Periodic};
use schedlab_sys::journal::Entry;
use schedlab_sys::SysError;
use std::path::PathBuf;

/// The periodic set of a cell, as the engine runs it.
pub(super) struct RtSet<'a> {
    pub(super) group: usize,
    pub(super) set: &'a Periodic,
    /// Each task's CPU (None: SCHED_DEADLINE, global).
    pub(super) placement: Option<Vec<u32>>,
    /// Under edf and dwcs, one dispatcher per CPU the set uses; empty otherwise.
    pub(super) parts: Vec<Part>,
}

/// The tasks of a dispatched set on one CPU, and that CPU's dispatcher.
pub(super) struct Part {
    pub(super) cpu: u32,
    /// The set's task indices, in slot order.
    pub(super) tasks: Vec<usize>,
    /// The dispatcher's region file.
    pub(super) region: PathBuf,
    /// Where the dispatcher writes its metrics.
    pub(super) metrics: PathBuf,
}

impl RtSet<'_> {
    /// Whether the live dispatcher runs the set (edf, dwcs).
    pub(super) fn dispatched(&self) -> bool {
        !self.parts.is_empty()
    }

    /// The part holding `task`, and the task's slot in it.
    pub(super) fn slot(&self, task: usize) -> Option<(usize, usize)> {
        self.parts
            .iter()
            .enumerate()
            .find_map(|(p, part)| part.tasks.iter().position(|&t| t == task).map(|s| (p, s)))
    }
}

/// The cell's periodic set, with its CPU and (edf, dwcs) a fresh dispatcher region, journaled.
pub(super) fn periodic_set<'c>(
    cx: &mut CellCtx,
    cell: &'c Cell,
) -> Result<Option<RtSet<'c>>, SysError> {
    let mut sets =
        cell.groups.iter().enumerate().filter_map(|(i, g)| g.workload.periodic().map(|p| (i, p)));
    let Some((group, set)) = sets.next() else { return Ok(None) };
    if sets.next().is_some() {
        return Err(SysError::refused("a cell may hold one periodic set; this one has several"));
    }
    let placement = set.placement(cx.online.last().copied().unwrap_or(0));
    if let Some(c) = placement.iter().flatten().find(|c| !cx.online.contains(c)) {
        return Err(SysError::refused(format!(
            "the periodic set is pinned to CPU {c}, which is not online"
        )));
    }
    let mut parts = Vec::new();
    if let (true, Some(placement)) = (set.scheduler.dispatched(), &placement) {
        let dir = schedlab_dispatch::shm::default_dir();
        // Regions of dispatchers that died elsewhere would only confuse `dwcs status`.
        let _ = schedlab_dispatch::remove_stale(&dir);
        for (cpu, tasks) in schedlab_model::by_cpu(placement) {
            let prefix = schedlab_dispatch::shm::name_prefix(cpu, std::process::id() as i32);
            cx.journal
                .record(Entry::RemoveFiles { dir: dir.clone(), prefix })
                .map_err(|e| SysError::io("journal", e))?;
            let r = schedlab_dispatch::Region::create(&dir, cpu, tasks.len()).map_err(|e| {
                SysError::refused(format!("creating the dispatcher's region for CPU {cpu}: {e}"))
            })?;
            parts.push(Part {
                cpu,
                tasks,
                region: r.disown(),
                metrics: cx.dir.join(format!("dispatch-metrics-{cpu}.json")),
            });
        }
    }
    Ok(Some(RtSet { group, set, placement, parts }))
}
