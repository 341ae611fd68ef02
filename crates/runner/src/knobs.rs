//! The scheduler's knobs during a run: the plan's fixed ones set once before the first
//! cell (undone when the [`crate::Run`] is dropped), each cell's own set before it and undone after
//! it with the cell's other settings. Every write is journaled first and read back.

use schedlab_plan::knob::{Knob, Knobs};
use schedlab_sys::journal::Journal;
use schedlab_sys::{Root, SysError};
use std::collections::BTreeMap;

/// Sets `knobs` in name order; returns each one's value in force as read back, or the
/// first refusal, naming the knob. What was written stays journaled for the caller to undo.
pub fn set_all(knobs: &Knobs, journal: &mut Journal, root: &Root) -> Result<BTreeMap<String, String>, SysError> {
    let mut in_force = BTreeMap::new();
    for (name, v) in knobs {
        let k = Knob::parse(name).map_err(|e| SysError::refused(format!("{name}: {e}")))?;
        in_force.insert(name.clone(), schedlab_sys::knobs::set(root, &k, v, journal)?);
    }
    Ok(in_force)
}

/// True when the plan may weaken RT throttling and names an RT bandwidth knob: then the
/// engine must supervise at SCHED_FIFO 99, so its watchdog can still run.
pub fn needs_watchdog(plan: &schedlab_plan::Plan) -> bool {
    plan.allow_rt_unthrottled && plan.knob_names().iter().any(|n| n == "kernel.sched_rt_runtime_us" || n == "kernel.sched_rt_period_us")
}
