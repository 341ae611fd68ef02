//! The scheduler's knobs during a run: the plan's fixed ones set once before the first
//! cell (undone when the [`crate::Run`] is dropped), each cell's own set before it and undone after
//! it with the cell's other settings. Every write is journaled first and read back.

use schedlab_model::{CellRecord, CellStatus};
use schedlab_plan::knob::{Knob, Knobs};
use schedlab_sys::journal::Journal;
use schedlab_sys::{Root, SysError};
use std::collections::BTreeMap;

/// Sets `knobs` in name order; returns each one's value in force as read back, or the
/// first refusal, naming the knob. What was written stays journaled for the caller to undo.
pub fn set_all(
    knobs: &Knobs,
    journal: &mut Journal,
    root: &Root,
) -> Result<BTreeMap<String, String>, SysError> {
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
    plan.allow_rt_unthrottled
        && plan
            .knob_names()
            .iter()
            .any(|n| n == "kernel.sched_rt_runtime_us" || n == "kernel.sched_rt_period_us")
}

/// Each knob of `in_force` whose value now differs from the one the cell was stored with
/// (someone else wrote it during the cell): `name: in force X, now Y`.
pub fn moved<'a>(
    in_force: impl IntoIterator<Item = (&'a String, &'a String)>,
    root: &Root,
) -> Vec<String> {
    let in_force: Vec<(&String, &String)> = in_force.into_iter().collect();
    let names: Vec<String> = in_force.iter().map(|(k, _)| (*k).clone()).collect();
    let now = schedlab_sys::knobs::values(root, &names);
    in_force
        .into_iter()
        .filter_map(|(k, v)| {
            let n = now.get(k).map(String::as_str).unwrap_or("unreadable");
            (n != v).then(|| format!("{k}: in force {v}, now {n}"))
        })
        .collect()
}

/// Fails a record whose knobs did not stay as stored for the whole cell: its "in force"
/// values would not be true.
pub fn distrust(rec: &mut CellRecord, moved: &[String]) {
    if moved.is_empty() {
        return;
    }
    let why =
        format!("a knob changed during the cell (another process wrote it): {}", moved.join("; "));
    rec.message = Some(match rec.message.take() {
        Some(m) => format!("{why}; {m}"),
        None => why,
    });
    if rec.status == CellStatus::Ok {
        rec.status = CellStatus::Failed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_knob_written_by_someone_else_during_the_cell_fails_it() {
        let d = std::env::temp_dir().join(format!("schedlab-runner-moved-{}", std::process::id()));
        std::fs::create_dir_all(d.join("proc/sys/kernel")).unwrap();
        std::fs::write(d.join("proc/sys/kernel/sched_rr_timeslice_ms"), "5\n").unwrap();
        let root = Root::new(&d);
        let in_force: BTreeMap<String, String> =
            [("kernel.sched_rr_timeslice_ms".to_string(), "5".to_string())].into();
        assert!(moved(&in_force, &root).is_empty());
        std::fs::write(d.join("proc/sys/kernel/sched_rr_timeslice_ms"), "100\n").unwrap();
        let m = moved(&in_force, &root);
        assert_eq!(m, ["kernel.sched_rr_timeslice_ms: in force 5, now 100"]);
        let mut rec = CellRecord::default();
        distrust(&mut rec, &m);
        assert_eq!(rec.status, CellStatus::Failed);
        assert!(rec.message.unwrap().contains("in force 5, now 100"));
        std::fs::remove_dir_all(d).unwrap();
    }
}
