//! The matrix axes, one definition each: the key a spec sweeps it with, whether it sets a
//! group or the whole cell, how a value shows in the cell key, where its value is stored
//! beside the results and which table column shows it. How a spec's text becomes a value
//! is TOML's business (`schedlab-spec` adds one parser per axis, by name); everything else
//! about an axis follows from its entry in [`AXES`].

use crate::{Affinity, Group, IoSetting};
use schedlab_model::{CellRecord, GroupParams};

/// The group the top-level `[matrix]` axes describe.
pub const MAIN: &str = "main";

/// The RT priority of a fifo or rr policy that names none; keys leave it out.
pub const DEFAULT_RT_PRIORITY: u32 = 50;

/// What an axis's value sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A setting of one group: swept in `[matrix]` (group `main`) or `[matrix.groups.NAME]`,
    /// fixed in `[groups.NAME]`.
    Group,
    /// A setting of the whole cell, swept in `[matrix]` only; cell axes vary slowest.
    Cell,
}

/// How a swept value shows in the key of the group `main` (`cpu/fifo:50/nice5/n10`). Other
/// groups show `.NAME=VALUE` for each swept axis, and cell axes `/NAME=VALUE` at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyForm {
    /// Shown by the names that lead the key, `workload/policy` (a periodic group's policy
    /// is its scheduler), swept or not.
    Lead,
    /// `:N` after the policy, for fifo and rr only, and also when the policy's own priority
    /// is not the default; other groups' keys leave a priority on any other class out.
    RtPriority,
    /// The prefix and the value, e.g. `/nice5`.
    Prefixed(&'static str),
    /// `/nN` at the end, swept or not.
    Count,
    /// `/NAME=VALUE`.
    Tagged,
    /// `/NAME=VALUE` for the fair classes (other, batch) only: on any other class the
    /// setting has no effect and is left out, so such cells collapse.
    FairOnly,
}

/// One matrix axis.
#[derive(Debug)]
pub struct Axis {
    /// The key that sweeps it (and, for a group setting, fixes it in `[groups.NAME]`).
    pub name: &'static str,
    /// What its value sets.
    pub scope: Scope,
    /// How a swept value shows in the main group's key.
    pub key: KeyForm,
    /// A cgroup control: a group that sets it gets a cgroup (and errors about cgroups point
    /// at it).
    pub cgroup: bool,
    /// The column of schedlab's tables that shows it.
    pub header: &'static str,
    /// The value as stored with a cell's results (its parameters, a group's or the
    /// real-time record), spelt as in the cell key; None when unset.
    pub stored: fn(&CellRecord, &GroupParams) -> Option<String>,
}

impl PartialEq for Axis {
    fn eq(&self, other: &Axis) -> bool {
        self.name == other.name
    }
}

/// A checked value of an axis, as validation applies it to a group or a cell.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisValue {
    /// A name: a workload, a policy, a periodic scheduler.
    Name(String),
    /// A whole number: a priority, nice, a weight (0 = none), a process count.
    Int(i64),
    /// A real number: a target utilisation.
    Float(f64),
    /// A pinning rule.
    Affinity(Affinity),
    /// A cgroup bandwidth (quota_us, period_us).
    CpuMax((u64, u64)),
    /// A set of CPUs.
    Cpus(Vec<u32>),
    /// An I/O scheduler with its tunables.
    Io(IoSetting),
    /// The kernel's scheduler or a sched_ext one.
    CpuScheduler(crate::CpuScheduler),
}

impl AxisValue {
    /// The value as the cell key spells it (`0-1,3`, `50000:100000`, `0.5`).
    pub fn label(&self) -> String {
        match self {
            AxisValue::Name(n) => n.clone(),
            AxisValue::Int(i) => i.to_string(),
            AxisValue::Float(x) => format!("{x}"),
            AxisValue::Affinity(a) => a.label(),
            AxisValue::CpuMax((quota, period)) => format!("{quota}:{period}"),
            AxisValue::Cpus(c) => crate::cpulist::format(c),
            AxisValue::Io(s) => s.name.clone(),
            AxisValue::CpuScheduler(s) => s.label(),
        }
    }
}

/// `workload`: what each worker of the group runs.
pub const WORKLOAD: Axis = Axis {
    name: "workload",
    scope: Scope::Group,
    key: KeyForm::Lead,
    cgroup: false,
    header: "workload",
    stored: |_, g| Some(g.workload.clone()),
};

/// `policy`: the group's scheduling policy (a name under `[policies]` or a class).
pub const POLICY: Axis = Axis {
    name: "policy",
    scope: Scope::Group,
    key: KeyForm::Lead,
    cgroup: false,
    header: "policy",
    stored: |_, g| Some(g.policy.clone()),
};

/// `priority`: overrides a fifo or rr policy's static priority.
pub const PRIORITY: Axis = Axis {
    name: "priority",
    scope: Scope::Group,
    key: KeyForm::RtPriority,
    cgroup: false,
    header: "policy",
    stored: |_, g| Some(g.priority.to_string()),
};

/// `nice`: overrides the policy's nice value.
pub const NICE: Axis = Axis {
    name: "nice",
    scope: Scope::Group,
    key: KeyForm::Prefixed("nice"),
    cgroup: false,
    header: "policy",
    stored: |_, g| Some(g.nice.to_string()),
};

/// `slice_us`: EEVDF's custom slice of the group's workers (other and batch only).
pub const SLICE: Axis = Axis {
    name: "slice_us",
    scope: Scope::Group,
    key: KeyForm::FairOnly,
    cgroup: false,
    header: "policy",
    stored: |_, g| g.slice_us.map(|s| s.to_string()),
};

/// `affinity`: how the group's workers are pinned.
pub const AFFINITY: Axis = Axis {
    name: "affinity",
    scope: Scope::Group,
    key: KeyForm::Tagged,
    cgroup: false,
    header: "policy",
    stored: |_, g| Some(g.affinity.clone()),
};

/// `cpu_weight`: the group cgroup's cpu.weight; 0 on an axis is "no weight".
pub const CPU_WEIGHT: Axis = Axis {
    name: "cpu_weight",
    scope: Scope::Group,
    key: KeyForm::Tagged,
    cgroup: true,
    header: "policy",
    stored: |_, g| Some(g.cpu_weight.unwrap_or(0).to_string()),
};

/// `cpu_max`: the group cgroup's bandwidth, `[quota_us, period_us]`.
pub const CPU_MAX: Axis = Axis {
    name: "cpu_max",
    scope: Scope::Group,
    key: KeyForm::Tagged,
    cgroup: true,
    header: "policy",
    stored: |_, g| g.cpu_max.map(|m| AxisValue::CpuMax(m).label()),
};

/// `cpuset`: the CPUs of the group's cgroup.
pub const CPUSET: Axis = Axis {
    name: "cpuset",
    scope: Scope::Group,
    key: KeyForm::Tagged,
    cgroup: true,
    header: "policy",
    stored: |_, g| g.cpuset.as_deref().map(crate::cpulist::format),
};

/// `processes`: the group's worker count (a benchmark kind's own count, see
/// `Workload::count`); 0 leaves the group out of the cell.
pub const PROCESSES: Axis = Axis {
    name: "processes",
    scope: Scope::Group,
    key: KeyForm::Count,
    cgroup: false,
    header: "procs",
    stored: |_, g| Some(g.processes.to_string()),
};

/// `scheduler`: who schedules a periodic task set (stored as the group's policy).
pub const SCHEDULER: Axis = Axis {
    name: "scheduler",
    scope: Scope::Group,
    key: KeyForm::Lead,
    cgroup: false,
    header: "scheduler",
    stored: |_, g| Some(g.policy.clone()),
};

/// `utilisation`: the utilisation a generated periodic set is drawn for (stored with the
/// cell's real-time record).
pub const UTILISATION: Axis = Axis {
    name: "utilisation",
    scope: Scope::Group,
    key: KeyForm::Tagged,
    cgroup: false,
    header: "utilisation",
    stored: |_, g| g.utilisation.map(|u| AxisValue::Float(u).label()),
};

/// `work_scale`: every work amount of the group's workload multiplied by it (as `--scale`
/// multiplies the whole plan's): a known slowdown for an A/B within one run.
pub const WORK_SCALE: Axis = Axis {
    name: "work_scale",
    scope: Scope::Group,
    key: KeyForm::Tagged,
    cgroup: false,
    header: "workload",
    stored: |_, g| g.work_scale.map(|s| AxisValue::Float(s).label()),
};

/// `iosched`: the I/O scheduler (and tunables) of the experiment device's queue.
pub const IOSCHED: Axis = Axis {
    name: "iosched",
    scope: Scope::Cell,
    key: KeyForm::Tagged,
    cgroup: false,
    header: "iosched",
    stored: |c, _| c.params.iosched.clone(),
};

/// `cpu_scheduler`: the kernel's own scheduler (`eevdf`) or a sched_ext scheduler program
/// loaded for the cell (`scx:NAME`).
pub const CPU_SCHEDULER: Axis = Axis {
    name: "cpu_scheduler",
    scope: Scope::Cell,
    key: KeyForm::Tagged,
    cgroup: false,
    header: "policy",
    stored: |c, _| c.params.cpu_scheduler.clone(),
};

/// Every axis, in the order cells are numbered: cell axes vary slowest, then each group's
/// axes in this order (the last varies fastest); other groups' keys list their axes in it.
pub const AXES: &[&Axis] = &[
    &CPU_SCHEDULER,
    &IOSCHED,
    &WORKLOAD,
    &POLICY,
    &PRIORITY,
    &NICE,
    &AFFINITY,
    &CPU_WEIGHT,
    &CPU_MAX,
    &CPUSET,
    &PROCESSES,
    &SCHEDULER,
    &UTILISATION,
    &SLICE,
    &WORK_SCALE,
];

/// The axis a spec key names.
pub fn by_name(name: &str) -> Option<&'static Axis> {
    AXES.iter().copied().find(|a| a.name == name)
}

/// One group's part of a cell key, given the axes swept for it in [`AXES`] order with their
/// values' labels; `group` is None when the cell leaves the group out (0 processes). The
/// main group keeps the classic `workload/policy[:prio][/niceN][/NAME=VALUE..]/nN` shape;
/// other groups show only their swept axes, `NAME.AXIS=VALUE..`.
pub fn group_key(name: &str, group: Option<&Group>, swept: &[(&Axis, String)]) -> String {
    let rt = group.is_some_and(|g| g.policy.class.is_rt());
    let fair = group.is_some_and(|g| g.policy.class.is_fair());
    if name != MAIN {
        let mut k = name.to_string();
        for (a, label) in swept {
            // A priority on a non-RT policy (a slice on a non-fair one) has no effect: leave
            // it out so such cells collapse.
            if (a.key == KeyForm::RtPriority && !rt) || (a.key == KeyForm::FairOnly && !fair) {
                continue;
            }
            k.push_str(&format!(".{}={label}", a.name));
        }
        return k;
    }
    let Some(g) = group else { return format!("{MAIN}.{}=0", PROCESSES.name) };
    let mut k = format!("{}/{}", g.workload_name, g.policy_name);
    let priority_swept = swept.iter().any(|(a, _)| a.key == KeyForm::RtPriority);
    if rt
        && g.workload.periodic().is_none()
        && (priority_swept || g.policy.priority != DEFAULT_RT_PRIORITY)
    {
        k.push_str(&format!(":{}", g.policy.priority));
    }
    for (a, label) in swept {
        match a.key {
            KeyForm::Prefixed(prefix) => k.push_str(&format!("/{prefix}{label}")),
            KeyForm::Tagged => k.push_str(&format!("/{}={label}", a.name)),
            KeyForm::FairOnly if fair => k.push_str(&format!("/{}={label}", a.name)),
            KeyForm::FairOnly => {}
            KeyForm::Lead | KeyForm::RtPriority | KeyForm::Count => {}
        }
    }
    k.push_str(&format!("/n{}", g.count()));
    k
}

/// A cell's key: its groups' parts (empty ones left out) joined by `+`, then each swept
/// cell axis as `/NAME=VALUE`.
pub fn cell_key(group_parts: Vec<String>, cell_swept: &[(&Axis, String)]) -> String {
    let mut key = group_parts.into_iter().filter(|k| !k.is_empty()).collect::<Vec<_>>().join("+");
    for (a, label) in cell_swept {
        key.push_str(&format!("/{}={label}", a.name));
    }
    key
}

#[cfg(test)]
mod tests;
