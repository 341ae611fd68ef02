//! Input checks, run before anything is simulated.

use crate::config::{Mapping, Phase, SimConfig, TaskSpec, WorkSpec};
use crate::SimError;

/// Checks a configuration and task set; [`simulate`](crate::simulate) calls it first.
pub fn validate(config: &SimConfig, tasks: &[TaskSpec]) -> Result<(), SimError> {
    if tasks.is_empty() {
        return Err(SimError::EmptyTaskSet);
    }
    if config.cpus == 0 {
        return Err(SimError::NoCpus);
    }
    config.policy.validate().map_err(SimError::Policy)?;
    if let Mapping::Partitioned(map) = &config.mapping {
        if map.len() != tasks.len() {
            return Err(SimError::PartitionLength { tasks: tasks.len(), got: map.len() });
        }
        if let Some((i, &cpu)) = map.iter().enumerate().find(|(_, &c)| c >= config.cpus) {
            return Err(SimError::MorePartitionsThanCpus {
                task: tasks[i].name.clone(),
                cpu,
                cpus: config.cpus,
            });
        }
    }
    let costs = &config.costs;
    if costs.ticks() && costs.tick >= costs.tick_period {
        return Err(SimError::TickTooLong { tick: costs.tick, period: costs.tick_period });
    }
    if costs.ticks() && config.horizon.is_none() {
        return Err(SimError::TickWithoutHorizon);
    }
    if let Some(channel) = config.channels.iter().position(|&c| c == 0) {
        return Err(SimError::ZeroCapacity { channel });
    }
    for t in tasks {
        validate_task(t, config)?;
    }
    Ok(())
}

fn validate_task(t: &TaskSpec, config: &SimConfig) -> Result<(), SimError> {
    let task = || t.name.clone();
    match &t.workload {
        WorkSpec::Periodic(p) => {
            if p.period == 0 {
                return Err(SimError::ZeroPeriod { task: task() });
            }
            if p.wcet == 0 {
                return Err(SimError::ZeroWcet { task: task() });
            }
            let deadline = p.relative_deadline();
            if p.wcet > deadline {
                return Err(SimError::WcetExceedsDeadline { task: task(), wcet: p.wcet, deadline });
            }
            if let Some(min_exec) = p.min_exec {
                if min_exec == 0 || min_exec > p.wcet {
                    return Err(SimError::BadMinExec { task: task(), min_exec, wcet: p.wcet });
                }
            }
            match p.jobs {
                Some(0) => return Err(SimError::ZeroJobs { task: task() }),
                None if config.horizon.is_none() => {
                    return Err(SimError::Unbounded { task: task() })
                }
                _ => {}
            }
        }
        WorkSpec::Mixed { phases } | WorkSpec::Repeat { phases, .. } if phases.is_empty() => {
            return Err(SimError::ZeroWork { task: task() })
        }
        WorkSpec::Repeat { rounds: 0, .. } => return Err(SimError::ZeroRounds { task: task() }),
        WorkSpec::Repeat { phases, .. } => check_phases(t, phases, config)?,
        WorkSpec::Mixed { phases } => check_phases(t, phases, config)?,
        w => {
            let zero = (0..)
                .map_while(|i| w.phase(i))
                .any(|p| matches!(p, Phase::Compute(0) | Phase::Io(0)));
            if zero {
                return Err(SimError::ZeroWork { task: task() });
            }
        }
    }
    t.effective_params()
        .validate()
        .map_err(|source| SimError::InvalidParams { task: task(), source })
}

/// No phase of zero length, and every channel named exists.
fn check_phases(t: &TaskSpec, phases: &[Phase], config: &SimConfig) -> Result<(), SimError> {
    for p in phases {
        match *p {
            Phase::Compute(0) | Phase::Io(0) => {
                return Err(SimError::ZeroWork { task: t.name.clone() })
            }
            Phase::Send(c) | Phase::Recv(c) if c as usize >= config.channels.len() => {
                return Err(SimError::UnknownChannel {
                    task: t.name.clone(),
                    channel: c,
                    channels: config.channels.len(),
                })
            }
            _ => {}
        }
    }
    Ok(())
}
