//! The policy calls a dispatcher made, in order: every release, completion and drop it told
//! the policy, and every decision the policy gave back. Replaying the calls through a fresh
//! policy of the same kind must give the same decisions, whatever the timing was.

use crate::config::{DispatchPolicy, TaskCfg};
use schedlab_policy::Stop;
use serde::{Deserialize, Serialize};

/// One call into the policy, with the policy time it was made at (ns, CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Call {
    /// A job released: `wake` with `Arrival::Job`.
    Release {
        /// The task.
        task: usize,
        /// Policy time.
        t: u64,
        /// The job's release time.
        release: u64,
        /// Its absolute deadline.
        deadline: Option<u64>,
    },
    /// `cancel`: the task's job finished while it was not chosen, or was dropped while ready.
    Cancel {
        /// The task.
        task: usize,
        /// Policy time.
        t: u64,
    },
    /// `retire`: the task's worker is gone.
    Retire {
        /// The task.
        task: usize,
        /// Policy time.
        t: u64,
    },
    /// `stop` of the running task.
    Stop {
        /// The task.
        task: usize,
        /// Policy time.
        t: u64,
        /// Why: `done` for a completion, `aborted` for a drop.
        why: Stop,
    },
    /// `on_timer`.
    Timer {
        /// Policy time.
        t: u64,
    },
    /// `should_preempt` of the running task, and its answer.
    ShouldPreempt {
        /// The running task.
        task: usize,
        /// Policy time.
        t: u64,
        /// The answer.
        preempt: bool,
    },
    /// `pick_next`, and the task it picked: a dispatch decision.
    Pick {
        /// Policy time.
        t: u64,
        /// The task given the CPU, if any.
        task: Option<usize>,
    },
}

/// A dispatcher's policy calls over one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallLog {
    /// The CPU of the partition.
    pub cpu: u32,
    /// The policy.
    pub policy: DispatchPolicy,
    /// The tasks, in slot order (task i of the calls is `tasks[i]`).
    pub tasks: Vec<TaskCfg>,
    /// The calls, in the order they were made.
    pub calls: Vec<Call>,
    /// Calls left out once the log's room (allocated before the run) was full.
    pub lost: u64,
}

/// Where a replay picked differently from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The index of the call in the log.
    pub at: usize,
    /// The logged call.
    pub logged: Call,
    /// What the replayed policy answered instead.
    pub replayed: Call,
}

impl CallLog {
    /// Feeds the logged calls to `policy` (fresh: the tasks are admitted here) and checks that
    /// it answers every `pick_next` and `should_preempt` as the log says. Returns the number of
    /// decisions compared, or the first one made differently.
    pub fn replay(
        &self,
        policy: &mut dyn schedlab_policy::SchedPolicy,
    ) -> Result<usize, Divergence> {
        use schedlab_policy::Arrival;
        for (i, t) in self.tasks.iter().enumerate() {
            policy.admit(i, &t.params());
        }
        let mut decisions = 0;
        for (at, &logged) in self.calls.iter().enumerate() {
            let replayed = match logged {
                Call::Release { task, t, release, deadline } => {
                    policy.wake(task, t, Arrival::Job { release, deadline });
                    logged
                }
                Call::Cancel { task, t } => {
                    policy.cancel(task, t);
                    logged
                }
                Call::Retire { task, t } => {
                    policy.retire(task, t);
                    logged
                }
                Call::Stop { task, t, why } => {
                    policy.stop(task, t, why);
                    logged
                }
                Call::Timer { t } => {
                    policy.on_timer(t);
                    logged
                }
                Call::ShouldPreempt { task, t, .. } => {
                    decisions += 1;
                    Call::ShouldPreempt { task, t, preempt: policy.should_preempt(task, t) }
                }
                Call::Pick { t, .. } => {
                    decisions += 1;
                    Call::Pick { t, task: policy.pick_next(t) }
                }
            };
            if replayed != logged {
                return Err(Divergence { at, logged, replayed });
            }
        }
        Ok(decisions)
    }
}
