//! What a dispatcher is told to run.

use crate::error::DispatchError;
use crate::shm::MAX_TASKS;
use crate::{DEFAULT_QUANTUM_NS, MIN_QUANTUM_NS};
use schedlab_policy::{SchedParams, Window};
use serde::{Deserialize, Serialize};

/// The policy the dispatcher drives (both come from `schedlab-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DispatchPolicy {
    /// Dynamic window-constrained scheduling.
    Dwcs {
        /// Whether a task may be served twice in one request period (the DWCS flag).
        work_conserving: bool,
    },
    /// Earliest deadline first (windows ignored: every miss counts).
    Edf,
}

impl DispatchPolicy {
    /// The policy's name.
    pub fn name(&self) -> &'static str {
        match self {
            DispatchPolicy::Dwcs { .. } => "dwcs",
            DispatchPolicy::Edf => "edf",
        }
    }
}

/// One controlled worker and its periodic task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskCfg {
    /// The worker's process id (single-threaded, running [`run_worker`](crate::run_worker)).
    pub pid: i32,
    /// Service per period C, ns: the DWCS run limit (canonical sets: one quantum).
    pub c_ns: u64,
    /// Period T, ns: job k is released at start + k T.
    pub t_ns: u64,
    /// Relative deadline D, ns (0 = T); must not exceed T. DWCS itself uses T.
    #[serde(default)]
    pub d_ns: u64,
    /// Window numerator x: misses tolerated per window (0/0 = none).
    #[serde(default)]
    pub x: u32,
    /// Window denominator y.
    #[serde(default)]
    pub y: u32,
}

impl TaskCfg {
    /// The relative deadline D (T when `d_ns` is 0).
    pub fn deadline(&self) -> u64 {
        if self.d_ns == 0 {
            self.t_ns
        } else {
            self.d_ns
        }
    }

    /// The window x/y.
    pub fn window(&self) -> Window {
        Window::new(self.x, self.y)
    }

    /// What the policy is told about the task.
    pub fn params(&self) -> SchedParams {
        SchedParams {
            period: Some(self.t_ns),
            deadline: Some(self.deadline()),
            wcet: Some(self.c_ns),
            window: self.window(),
            ..Default::default()
        }
    }
}

fn default_quantum() -> u64 {
    DEFAULT_QUANTUM_NS
}

/// A dispatcher's whole configuration: one CPU partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The tasks, in slot order (slot i = policy task id i).
    pub tasks: Vec<TaskCfg>,
    /// Quantum, ns: decisions are taken at start + k quantum.
    #[serde(default = "default_quantum")]
    pub quantum_ns: u64,
    /// The CPU the dispatcher and all its workers are pinned to.
    pub cpu: u32,
    /// CLOCK_MONOTONIC time of the first boundary and of every task's first release;
    /// None = shortly after setup. Shared by the dispatchers of several CPUs to align them.
    #[serde(default)]
    pub start_ns: Option<u64>,
    /// How long to run from the start; None = until told to stop.
    #[serde(default)]
    pub duration_ns: Option<u64>,
    /// The policy.
    pub policy: DispatchPolicy,
    /// When the chosen job finishes inside a quantum, give the rest of the quantum to the
    /// next ready task (preempted, uncharged, at the boundary). Off, the CPU idles until the
    /// boundary, exactly as in the canonical one-job-per-quantum model.
    #[serde(default)]
    pub fill: bool,
    /// How long to wait for the workers to attach to their slots, ns.
    #[serde(default = "default_attach_timeout")]
    pub attach_timeout_ns: u64,
}

fn default_attach_timeout() -> u64 {
    10_000_000_000
}

impl Config {
    /// A configuration with the default quantum, no fixed start or duration, no filling.
    pub fn new(cpu: u32, policy: DispatchPolicy, tasks: Vec<TaskCfg>) -> Self {
        Config {
            tasks,
            quantum_ns: DEFAULT_QUANTUM_NS,
            cpu,
            start_ns: None,
            duration_ns: None,
            policy,
            fill: false,
            attach_timeout_ns: default_attach_timeout(),
        }
    }

    /// Checks everything that can be checked without touching the system.
    pub fn validate(&self) -> Result<(), DispatchError> {
        let bad = |m: String| Err(DispatchError::Config(m));
        if self.tasks.is_empty() || self.tasks.len() > MAX_TASKS {
            return bad(format!("{} tasks: a dispatcher takes 1..={MAX_TASKS}", self.tasks.len()));
        }
        if self.quantum_ns < MIN_QUANTUM_NS {
            return bad(format!(
                "quantum {} ns is below the minimum {MIN_QUANTUM_NS} ns",
                self.quantum_ns
            ));
        }
        if self.duration_ns == Some(0) {
            return bad("duration 0".into());
        }
        for (i, t) in self.tasks.iter().enumerate() {
            if t.pid <= 0 {
                return bad(format!("task {i}: pid {} is not a process", t.pid));
            }
            if self.tasks[..i].iter().any(|o| o.pid == t.pid) {
                return bad(format!("task {i}: pid {} is controlled twice", t.pid));
            }
            if t.c_ns == 0 || t.t_ns == 0 {
                return bad(format!("task {i}: C and T must be positive"));
            }
            if t.deadline() > t.t_ns {
                return bad(format!(
                    "task {i}: D {} exceeds T {} (one live job per task)",
                    t.deadline(),
                    t.t_ns
                ));
            }
            if t.y > 4096 {
                return bad(format!("task {i}: window denominator {} is over 4096", t.y));
            }
            t.params().validate().map_err(|e| DispatchError::Config(format!("task {i}: {e}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: i32) -> TaskCfg {
        TaskCfg { pid, c_ns: 10_000_000, t_ns: 20_000_000, d_ns: 0, x: 1, y: 2 }
    }

    #[test]
    fn validation_catches_bad_sets() {
        let ok = Config::new(0, DispatchPolicy::Edf, vec![task(10), task(11)]);
        ok.validate().unwrap();
        assert_eq!(ok.tasks[0].deadline(), 20_000_000);
        let mut c = ok.clone();
        c.tasks[1].pid = 10;
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.tasks[0].d_ns = 30_000_000;
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.tasks[0].x = 3;
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.quantum_ns = 10;
        assert!(c.validate().is_err());
        assert!(Config::new(0, DispatchPolicy::Edf, vec![]).validate().is_err());
    }

    #[test]
    fn json_round_trip_with_defaults() {
        let json = r#"{"tasks":[{"pid":5,"c_ns":1,"t_ns":2}],"cpu":1,"policy":{"kind":"dwcs","work_conserving":true}}"#;
        let c: Config = serde_json::from_str(json).unwrap();
        assert_eq!(c.quantum_ns, DEFAULT_QUANTUM_NS);
        assert_eq!(c.policy, DispatchPolicy::Dwcs { work_conserving: true });
        let back: Config = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }
}
