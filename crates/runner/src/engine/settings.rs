//! Applying a cell's settings to its blocked workers: cgroups, pinning, policy.

use super::spawn::Worker;
use super::CellCtx;
use schedlab_plan::{Cell, Class, Group, Workload};
use schedlab_sys::{cgroup, sched, Root, SysError};
use std::time::Duration;

/// cgroups (journaled), policy and pinning for every worker; an error names what failed.
/// Returns each group's cgroup, when the cell has its own (else none).
pub(super) fn apply_settings(
    cx: &mut CellCtx,
    cell: &Cell,
    workers: &[Worker],
) -> Result<Vec<cgroup::Cgroup>, SysError> {
    let mut groups_cg = Vec::new();
    if cell.uses_cgroups() {
        let h = cx
            .cgroups
            .ok_or(SysError::refused("this cell needs cgroups but none are available"))?;
        // Under RT group scheduling a cgroup holds no RT runtime unless given some: the
        // cell's real-time groups share what the hierarchy can spare.
        let realtime = |g: &Group| g.policy.class.is_rt() || g.workload.periodic().is_some();
        let rt_groups = cell.groups.iter().filter(|g| realtime(g)).count() as u64;
        let rt_share = (rt_groups > 0).then(|| h.rt_available()).flatten().map(|a| a / rt_groups);
        for g in &cell.groups {
            // Groups without settings still get their own cgroup at the default weight, so
            // weights compare like with like.
            let mut s = cgroup::Settings::from(&g.cgroup);
            s.weight = Some(s.weight.unwrap_or(100));
            s.rt_runtime_us = rt_share.filter(|_| realtime(g));
            let name = format!("{}-c{}-{}", cx.tag, cell.index, g.name);
            groups_cg.push(
                h.create(cx.journal, &name, &s)
                    .map_err(|e| SysError::io(format!("creating cgroup {name}"), e))?,
            );
        }
    }
    for w in workers {
        let g = &cell.groups[w.group];
        if let Some(cg) = groups_cg.get(w.group) {
            cg.add(w.pid).map_err(|e| {
                SysError::io(format!("moving worker {} into its cgroup", w.index), e)
            })?;
        }
        if !w.allowed.is_empty() {
            schedlab_sys::cpus::set_affinity(w.pid, &w.allowed).map_err(|e| {
                SysError::io(format!("pinning worker {} to CPUs {:?}", w.index, w.allowed), e)
            })?;
        }
        let policy = match (w.task, &g.workload) {
            (Some(t), Workload::Periodic(p)) => crate::rt::worker_policy(p, t),
            _ => g.policy,
        };
        let mut applied = sched::apply(w.pid, &policy, false);
        // The bandwidth of SCHED_DEADLINE tasks that just exited (the previous repetition's)
        // is only returned at their 0-lag time, up to a period later: retry for a second.
        let mut tries = 0;
        while policy.class == Class::Deadline
            && tries < 20
            && applied.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EBUSY))
        {
            std::thread::sleep(Duration::from_millis(50));
            applied = sched::apply(w.pid, &policy, false);
            tries += 1;
        }
        applied.map_err(|e| {
            SysError::refused(format!(
                "worker {} (pid {}): {}",
                w.index,
                w.pid,
                explain_refusal(cell, g, &e, cx.root)
            ))
        })?;
    }
    Ok(groups_cg)
}

/// Explains a refused sched_setattr in the user's terms.
fn explain_refusal(cell: &Cell, g: &Group, err: &std::io::Error, root: &Root) -> String {
    let p = &g.policy;
    if p.class == Class::Deadline && err.raw_os_error() == Some(libc::EBUSY) {
        let rt: f64 = root.read_parse("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or(950_000.0);
        let period: f64 =
            root.read_parse("/proc/sys/kernel/sched_rt_period_us").unwrap_or(1_000_000.0);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let limit = format!(
            "{:.3} ({cpus} CPUs x {rt}/{period}), less what other deadline tasks already hold",
            schedlab_plan::knob::admission_limit(cpus, rt / period)
        );
        if let Some(set) = g.workload.periodic() {
            return format!(
                "SCHED_DEADLINE admission refused: the set's sum of runtime/period is {:.3} ({} tasks), over the limit {limit}",
                set.deadline_bandwidth(),
                set.tasks.len()
            );
        }
        let d = p.deadline.expect("deadline params");
        let per = d.runtime_ns as f64 / d.period_ns as f64;
        let n = cell.processes();
        return format!(
            "SCHED_DEADLINE admission refused: {n} workers x runtime/period {per:.4} = {:.3} exceeds the limit {limit}",
            per * n as f64
        );
    }
    format!("cannot apply policy {} ({}) to group {}: {err}", g.policy_name, p.class.name(), g.name)
}
