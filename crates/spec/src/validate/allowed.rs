//! The privilege check: what this process may not run, named with the privilege it lacks and
//! where the spec asked for it.

use super::{dma, Location, Locations};
use crate::error::SpecError;
use schedlab_plan::axis::AXES;
use schedlab_plan::{Capabilities, Class, DeviceTarget, Group, Plan, DISPATCHER_PRIORITY};

/// Why this process may not run group `g` (the privilege it lacks, naming the group's policy
/// or group), and where the spec set what needs it: nice below its own and RLIMIT_NICE's
/// floor, SCHED_FIFO/SCHED_RR above RLIMIT_RTPRIO (a dispatched set's dispatcher runs at 98),
/// SCHED_DEADLINE without CAP_SYS_NICE, real-time the kernel refused a probe child (the
/// cgroup's RT runtime, an affinity narrower than the root domain), cgroups it cannot write.
fn group_refused(
    g: &Group,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Option<(String, Location)> {
    let p = &g.policy;
    let dispatched = g.workload.periodic().is_some_and(|w| w.scheduler.dispatched());
    let rt_priority = if dispatched { DISPATCHER_PRIORITY } else { p.priority };
    let policy_at = locs.policies.get(&g.policy_name);
    // What asks for real-time: the group's class, or its periodic set's dispatcher.
    let rt_what = if dispatched {
        format!("the {} dispatcher's SCHED_FIFO", g.policy_name)
    } else {
        format!("SCHED_{}", p.class.name().to_uppercase())
    };
    let problem = match p.class {
        Class::Deadline if !caps.sys_nice => {
            Some(("SCHED_DEADLINE needs CAP_SYS_NICE (run as root); RLIMIT_RTPRIO does not allow it".to_string(), policy_at))
        }
        Class::Fifo | Class::Rr if !caps.may_rt(rt_priority) => Some((
            format!(
                "{rt_what} priority {rt_priority} needs CAP_SYS_NICE (run as root) or RLIMIT_RTPRIO >= {rt_priority}; this process has neither (RLIMIT_RTPRIO = {})",
                caps.rtprio_limit
            ),
            policy_at,
        )),
        Class::Deadline if caps.deadline_refused.is_some() => {
            Some((caps.deadline_refused.clone().unwrap_or_default(), policy_at))
        }
        Class::Fifo | Class::Rr if caps.rt_refused.is_some() => Some((
            format!("{rt_what}: {}", caps.rt_refused.as_deref().unwrap_or_default()),
            policy_at,
        )),
        _ if !caps.may_nice(p.nice) => Some((
            format!(
                "nice {} is below this process's nice {}: it needs CAP_SYS_NICE (run as root) or RLIMIT_NICE >= {} (it is {})",
                p.nice,
                caps.nice,
                20 - p.nice,
                20 - caps.min_nice
            ),
            // The nice value that set it, if the spec wrote one; else its policy.
            locs.nice.iter().find(|(n, _)| *n == p.nice as i64).map(|(_, s)| s).or(policy_at),
        )),
        _ => None,
    };
    if let Some((msg, at)) = problem {
        let span = at.unwrap_or(&locs.matrix).clone();
        return Some((format!("policy \"{}\": {msg}", g.policy_name), span));
    }
    if let (true, Some(dir)) = (g.cgroup.any(), &caps.cgroup_unwritable) {
        let span = locs
            .cgroups
            .iter()
            .find(|(n, _)| *n == g.name)
            .map(|(_, s)| s.clone())
            .or_else(|| first_cgroup_key(src));
        return Some((
            format!(
                "group \"{}\" sets cgroup controls, which needs write access to {dir} (schedlab creates its cgroups there and moves workers in): run as root, or delegate that cgroup to this user",
                g.name
            ),
            span.unwrap_or_else(|| locs.matrix.clone()),
        ));
    }
    None
}

/// Each cell a group of which this process may not run, with the first such group's
/// [`group_refused`] reason, in plan order.
pub(crate) fn refused_cells(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Vec<(u32, String)> {
    plan.cells
        .iter()
        .filter_map(|c| {
            let why = c.groups.iter().find_map(|g| group_refused(g, locs, src, caps))?;
            Some((c.index, why.0))
        })
        .collect()
}

/// Refuses, naming the missing privilege, what this process may not do: each group's
/// policy and cgroups ([`group_refused`]), custom slices, cpu_dma_latency, dropping caches.
pub(crate) fn check_allowed(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Result<(), SpecError> {
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        if let Some((msg, span)) = group_refused(g, locs, src, caps) {
            return Err(SpecError::at(&plan.source_path, src, span, msg));
        }
    }
    if let Some(why) = &caps.custom_slice_refused {
        if plan.cells.iter().flat_map(|c| &c.groups).any(|g| g.policy.slice_ns.is_some()) {
            let span = locs.slices.first().unwrap_or(&locs.matrix).clone();
            return Err(SpecError::at(&plan.source_path, src, span, format!("slice_us: {why}")));
        }
    }
    dma::check(plan, locs, src, caps)?;
    // A loop device or an I/O scheduler axis needs root anyway, and the device check says so.
    if let Some(d) = plan
        .device
        .as_ref()
        .filter(|d| matches!(d.target, DeviceTarget::Dir { .. }) && locs.iosched.is_empty())
    {
        if d.drop_caches && !caps.drop_caches {
            return Err(SpecError::at(
                &plan.source_path,
                src,
                locs.device.clone().unwrap_or_else(|| locs.matrix.clone()),
                "[device] drops the page cache before each cell (drop_caches, on by default), which writes /proc/sys/vm/drop_caches: only root may; run as root, or set drop_caches = false",
            ));
        }
    }
    Ok(())
}

/// The span of the first cgroup control (`cpu_weight`, `cpu_max`, `cpuset`) set in the spec;
/// an axis of weight 0 only (no cgroup) does not count.
fn first_cgroup_key(src: &str) -> Option<Location> {
    let zero = |v: &toml::de::DeValue| match v {
        toml::de::DeValue::Array(a) => a.iter().all(|x| crate::locate::int(x.get_ref()) == Some(0)),
        v => crate::locate::int(v) == Some(0),
    };
    let keys: Vec<&str> = AXES.iter().filter(|a| a.cgroup).map(|a| a.name).collect();
    crate::locate::keys(src, &keys).into_iter().find(|(_, v, _)| !zero(v)).map(|(k, _, _)| k)
}
