//! One cell of a plan -> the simulator's inputs: a [`SimConfig`] and one [`TaskSpec`] per
//! worker process, over all the cell's groups.
//!
//! Each spec workload kind maps to a simulator [`WorkSpec`] in one match arm of
//! [`workload`], and each scheduling class to a policy in [`policy_spec`] and
//! [`task_params`]. A periodic task set (kind `periodic`) is modelled whole, task by task,
//! in [`crate::rt`].

use schedlab_plan::{Cell, Class, Group, Policy, Workload};
use schedlab_policy::{fair::SCHED_IDLE_WEIGHT, PolicySpec, Reservation, SchedParams, Time};
use schedlab_sim::{Mapping, Phase, SimConfig, TaskSpec, WorkSpec};

use crate::Params;

/// A cell the simulator cannot model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cell {key}: {reason}")]
pub struct Unsupported {
    /// The cell's key.
    pub key: String,
    /// Why, in the user's terms.
    pub reason: String,
}

/// Why the simulator has no model of a workload or a placement, in the user's terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoModel(pub String);

/// The simulator's inputs for one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellInput {
    /// CPUs, policy, mapping, costs, horizon.
    pub config: SimConfig,
    /// One task per worker process (groups in order), all released at time 0.
    pub tasks: Vec<TaskSpec>,
    /// Per task: its group's index in the cell and the CPU it is pinned to, if any.
    pub placement: Vec<(usize, Option<u32>)>,
}

/// The policy of a class: other and batch are the fair model with nice weights, idle the
/// fair model with SCHED_IDLE's weight, fifo and rr by priority, deadline EDF + CBS.
pub fn policy_spec(class: Class, p: &Params) -> PolicySpec {
    match class {
        Class::Other | Class::Batch | Class::Idle => {
            PolicySpec::Fair { base_slice: p.fair_slice_ns }
        }
        Class::Fifo => PolicySpec::Fifo,
        Class::Rr => PolicySpec::Rr { quantum: p.rr_quantum_ns },
        // Hard reservations: SCHED_DEADLINE throttles a server that used up its runtime.
        Class::Deadline => PolicySpec::Cbs { hard: true },
    }
}

/// The per-task parameters of a spec policy; a custom slice is as late as the base one
/// ([`Params::fair_lateness_ns`]).
pub fn task_params(policy: &Policy, p: &Params) -> SchedParams {
    let mut t =
        SchedParams { priority: policy.priority, nice: policy.nice, ..SchedParams::default() };
    if policy.class.is_fair() {
        t.slice = policy.slice_ns.map(|s| s + p.fair_lateness_ns());
    }
    match policy.class {
        Class::Idle => t.weight = Some(SCHED_IDLE_WEIGHT),
        Class::Deadline => {
            t.reservation = policy.deadline.map(|d| Reservation {
                runtime: d.runtime_ns,
                deadline: d.deadline_ns,
                period: d.period_ns,
            });
        }
        _ => {}
    }
    t
}

/// The simulated work of one worker.
///
/// - `pi`: one CPU burst of iterations x ns per iteration; `hash`: hashes x ns per hash.
/// - `copy`: per block, the write's CPU time, then one synchronous write on the device.
/// - `mixed`: `write_every` iterations plus the write's CPU time, then one synchronous
///   write, repeated; the iterations left over after the last write are a final burst.
pub fn workload(w: &Workload, p: &Params) -> Result<WorkSpec, NoModel> {
    match w {
        Workload::Pi { iterations } => Ok(WorkSpec::Burst { length: p.compute_ns(*iterations) }),
        Workload::Hash { hashes } if p.ns_per_hash > 0.0 => {
            Ok(WorkSpec::Burst { length: ((*hashes as f64 * p.ns_per_hash).round() as u64).max(1) })
        }
        Workload::Copy { .. } => Ok(writes(w.sync_writes(), 0, 0, p)),
        Workload::Mixed { iterations, write_every } => {
            let n = w.sync_writes();
            Ok(writes(n, *write_every, iterations - n * write_every, p))
        }
        Workload::Hash { .. } => Err(NoModel("hash workloads need the CPU time of one hash (calibrate, or give it)".to_string())),
        other if other.kind() == "command" => {
            Err(NoModel("a command workload runs a program whose CPU and I/O behaviour the simulator cannot know".to_string()))
        }
        Workload::UdpFlood { .. } | Workload::IoInterrupts { .. } => Err(NoModel(format!(
            "{} is a disturbance workload (network-stack and interrupt load); the simulator models neither the network stack, softirqs nor device interrupts",
            w.kind()
        ))),
        other if other.is_io() => Err(NoModel(format!(
            "{} is an I/O-scheduler workload; the simulator models one device queue with a fixed service time, no page cache and no I/O scheduler",
            other.kind()
        ))),
        Workload::Schbench(_) => Err(NoModel("schbench's requests (timed sleeps, matrix work over a cache footprint, a per-CPU lock) and its latency percentiles need timers and caches the simulator does not model".to_string())),
        Workload::Pipe(_) | Workload::Messaging(_) => Err(NoModel(format!("a {} worker is simulated as its whole benchmark, not as one worker's workload", w.kind()))),
        Workload::Periodic(_) => Err(NoModel("a periodic task set is simulated task by task, not as one worker's workload".to_string())),
        other => Err(NoModel(format!("workload kind `{}` has no simulation model yet", other.kind()))),
    }
}

/// `n` x (compute `each` iterations + the write's CPU, then one synchronous write), then
/// `tail` iterations. Zero-length phases are left out (the simulator refuses them).
fn writes(n: u64, each: u64, tail: u64, p: &Params) -> WorkSpec {
    let compute = if each > 0 { p.compute_ns(each) } else { 0 } + p.write_cpu_ns;
    let mut phases = Vec::with_capacity(2 * n as usize + 1);
    for _ in 0..n {
        if compute > 0 {
            phases.push(Phase::Compute(compute));
        }
        if p.write_service_ns > 0 {
            phases.push(Phase::Io(p.write_service_ns));
        }
    }
    if tail > 0 {
        phases.push(Phase::Compute(p.compute_ns(tail)));
    }
    if phases.is_empty() {
        // Every cost is zero: the worker still has to be dispatched once.
        phases.push(Phase::Compute(1));
    }
    WorkSpec::Mixed { phases }
}

/// The one CPU worker `i` of `g` is pinned to, if any (`all`: the simulated CPUs).
pub(crate) fn pin_of(g: &Group, i: u32, all: &[u32]) -> Result<Option<u32>, NoModel> {
    match g.affinity.cpus_for(i, g.processes, all) {
        None => Ok(None),
        Some(cpus) if cpus.len() == 1 => Ok(Some(cpus[0])),
        Some(cpus) if all.iter().all(|c| cpus.contains(c)) => Ok(None),
        Some(cpus) => Err(NoModel(format!(
            "group `{}` pins workers to several CPUs ({cpus:?}); only single-CPU pinning is modelled",
            g.name
        ))),
    }
}

/// Global when no task is pinned, partitioned when every one is (on its one CPU).
pub(crate) fn mapping(placement: &[(usize, Option<u32>)]) -> Result<Mapping, NoModel> {
    if placement.iter().all(|(_, pin)| pin.is_none()) {
        return Ok(Mapping::Global);
    }
    match placement.iter().map(|&(_, pin)| pin.map(|c| c as usize)).collect() {
        Some(pins) => Ok(Mapping::Partitioned(pins)),
        None => Err(NoModel(
            "some workers are pinned and others are not; the simulator needs all or none pinned"
                .to_string(),
        )),
    }
}

/// What the model leaves out, for one group.
pub(crate) fn group_limit(g: &Group) -> Option<String> {
    if g.background {
        return Some(format!(
            "group `{}` is a background group, which the simulator does not model yet",
            g.name
        ));
    }
    if g.cgroup.any() {
        return Some(format!("group `{}` sets cgroup limits (weight, bandwidth or cpuset), which the simulator does not model", g.name));
    }
    None
}

/// Why `cell` cannot be simulated, if it cannot.
pub fn unsupported(cell: &Cell, p: &Params) -> Option<Unsupported> {
    cell_input(cell, p, None, 1, false).err()
}

/// The simulator's inputs for `cell`: all groups' workers in one simulation on `p.cpus`
/// CPUs (global, or partitioned when every worker is pinned to one CPU), stopping at
/// `horizon` (the cell's watchdog), recording the trace if asked. With `demand` (ns, one
/// per worker in task order, see [`crate::demand`]) each worker's CPU burst is its own
/// instead of its workload's amount at the model's rate; only CPU work takes one.
pub fn cell_input(
    cell: &Cell,
    p: &Params,
    demand: Option<&[Time]>,
    horizon: Time,
    trace: bool,
) -> Result<CellInput, Unsupported> {
    let refuse = |reason: String| Unsupported { key: cell.key.clone(), reason };
    if let Some(p) = cell.scx() {
        return Err(refuse(format!(
            "it runs under the sched_ext scheduler {}, and the simulator models no BPF scheduler (only the kernel's own classes)",
            p.name()
        )));
    }
    if let Some(why) = cell.groups.iter().find_map(group_limit) {
        return Err(refuse(why));
    }
    if let Some(d) = demand.filter(|d| d.len() != cell.processes() as usize) {
        return Err(refuse(format!(
            "{} per-worker CPU demands for {} workers",
            d.len(),
            cell.processes()
        )));
    }
    if let Some(g) = cell.groups.iter().find(|g| crate::bench::modelled(&g.workload)) {
        if demand.is_some() {
            return Err(refuse(crate::demand::not_cpu_work(&g.name, g.workload.kind())));
        }
        return crate::bench::cell_input(cell, p, horizon, trace);
    }
    if let Some(set) = cell.groups.iter().find_map(|g| g.workload.periodic()) {
        if demand.is_some() {
            return Err(refuse(
                "a periodic set's CPU demand is its tasks' own, not a measured worker's"
                    .to_string(),
            ));
        }
        return crate::rt::cell_input(cell, set, p, horizon, trace);
    }
    let policy = policy_spec(cell.primary().policy.class, p);
    let all: Vec<u32> = (0..p.cpus as u32).collect();
    let mut tasks = Vec::with_capacity(cell.processes() as usize);
    let mut placement = Vec::with_capacity(tasks.capacity());
    for (gi, g) in cell.groups.iter().enumerate() {
        let other = policy_spec(g.policy.class, p);
        if other.name() != policy.name() {
            return Err(refuse(format!(
                "its groups use different scheduling classes ({} and {}); the simulator runs one policy per ready queue",
                cell.primary().policy.class.name(),
                g.policy.class.name()
            )));
        }
        // One workload for the whole group, or (None) each worker's own burst.
        let shared = match demand {
            None => Some(workload(&g.workload, p).map_err(|e| refuse(e.0))?),
            Some(_) if crate::demand::is_cpu_work(&g.workload) => None,
            Some(_) => return Err(refuse(crate::demand::not_cpu_work(&g.name, g.workload.kind()))),
        };
        let params = task_params(&g.policy, p);
        for i in 0..g.processes {
            let pin = pin_of(g, i, &all).map_err(|e| refuse(e.0))?;
            let name = if cell.groups.len() == 1 {
                format!("w{}", tasks.len())
            } else {
                format!("{}{i}", g.name)
            };
            let work = match (&shared, demand) {
                (Some(w), _) => w.clone(),
                (None, d) => WorkSpec::Burst { length: d.map_or(1, |d| d[tasks.len()].max(1)) },
            };
            tasks.push(TaskSpec { name, arrival: 0, workload: work, params: params.clone() });
            placement.push((gi, pin));
        }
    }
    let mapping = mapping(&placement).map_err(|e| refuse(e.0))?;
    let mut config =
        SimConfig { costs: crate::overheads::costs(p), ..SimConfig::new(p.cpus, policy) }
            .with_horizon(horizon)
            .recording(trace, false);
    config.skip_cycles = !p.every_cycle;
    config.mapping = mapping;
    Ok(CellInput { config, tasks, placement })
}
