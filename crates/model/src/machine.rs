//! Which machine measured a run: its identity and the facts that change what it measures.
//!
//! Stored in each run's `Environment` (`env_json`), printed by `schedlab env`, and compared
//! when a campaign's shards or two runs meet: repetitions from machines whose facts differ
//! are never pooled without saying so.

use crate::Environment;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The machine's identity and the facts [`Environment`] did not already hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    /// Host name (uname -n).
    pub hostname: String,
    /// SHA-256 of /etc/machine-id, hex (the id itself is private: only its hash is kept).
    pub machine_id_sha256: String,
    /// SMT control (/sys/devices/system/cpu/smt/control: on, off, forceoff, notsupported, ...).
    pub smt: Option<String>,
    /// CPU microcode revision (/proc/cpuinfo, first CPU).
    pub microcode: Option<String>,
    /// Kernel command line.
    pub cmdline: String,
    /// The current clocksource.
    pub clocksource: Option<String>,
    /// The cpuidle driver (none when idle states are not managed).
    pub cpuidle_driver: Option<String>,
    /// The CPU wake-up latency in force through /dev/cpu_dma_latency, µs, when readable.
    pub cpu_dma_latency_us: Option<i32>,
    /// Every /proc/sys/kernel/sched_* knob, by file name.
    pub sched_knobs: BTreeMap<String, String>,
}

impl Machine {
    /// A short name for tables: the host name and the first 8 hex digits of the machine id's hash.
    pub fn label(&self) -> String {
        let id: String = self.machine_id_sha256.chars().take(8).collect();
        match (self.hostname.is_empty(), id.is_empty()) {
            (true, true) => "unknown machine".into(),
            (false, true) => self.hostname.clone(),
            (true, false) => id,
            (false, false) => format!("{}#{id}", self.hostname),
        }
    }
}

impl Environment {
    /// The same physical machine (same host name and machine id hash) as `other`.
    pub fn same_machine(&self, other: &Environment) -> bool {
        self.machine.hostname == other.machine.hostname
            && self.machine.machine_id_sha256 == other.machine.machine_id_sha256
    }

    /// Each fact that can change a measurement and differs between the two runs' machines:
    /// [`Environment::hardware_differences`], then [`Environment::setting_differences`].
    /// Empty: their repetitions may be pooled.
    pub fn fact_differences(&self, other: &Environment) -> Vec<String> {
        let mut out = self.hardware_differences(other);
        out.extend(self.setting_differences(other));
        out
    }

    /// The hardware and kernel facts that differ, as "name: this vs that": what makes two
    /// machines different ones (identity, memory size, devices and versions left out).
    pub fn hardware_differences(&self, other: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |name: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{name}: {a} vs {b}"));
            }
        };
        let (a, b) = (&self.machine, &other.machine);
        cmp("CPU", self.cpu_model.clone(), other.cpu_model.clone());
        cmp("CPUs", self.cpus.to_string(), other.cpus.to_string());
        cmp("SMT", opt(&a.smt), opt(&b.smt));
        cmp("microcode", opt(&a.microcode), opt(&b.microcode));
        cmp("kernel", self.kernel.clone(), other.kernel.clone());
        cmp("kernel command line", a.cmdline.clone(), b.cmdline.clone());
        cmp("HZ", num(self.hz.map(i64::from)), num(other.hz.map(i64::from)));
        cmp("clocksource", opt(&a.clocksource), opt(&b.clocksource));
        cmp("cpuidle driver", opt(&a.cpuidle_driver), opt(&b.cpuidle_driver));
        out
    }

    /// The ambient settings that differ (governor, cpu_dma_latency, the scheduler's sysctls),
    /// as "name this → that": one machine can hold either at another time.
    pub fn setting_differences(&self, other: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |name: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{name} {a} \u{2192} {b}"));
            }
        };
        let (a, b) = (&self.machine, &other.machine);
        cmp("governor", opt(&self.governor), opt(&other.governor));
        cmp(
            "cpu_dma_latency",
            num(a.cpu_dma_latency_us.map(i64::from)),
            num(b.cpu_dma_latency_us.map(i64::from)),
        );
        cmp("sched_rt_runtime_us", num(self.rt_runtime_us), num(other.rt_runtime_us));
        cmp("sched_rt_period_us", num(self.rt_period_us), num(other.rt_period_us));
        cmp("limits", in_force(&self.limits), in_force(&other.limits));
        let names: std::collections::BTreeSet<&String> =
            a.sched_knobs.keys().chain(b.sched_knobs.keys()).collect();
        for n in names {
            if n == "sched_rt_runtime_us" || n == "sched_rt_period_us" {
                continue;
            }
            let get =
                |m: &Machine| m.sched_knobs.get(n).cloned().unwrap_or_else(|| "absent".into());
            cmp(n, get(a), get(b));
        }
        out
    }
}

/// The limits a run's engine stayed under, shortly: `CPU quota 0.5`, `RT runtime 0.3`.
fn in_force(limits: &[crate::Limit]) -> String {
    let words: Vec<String> = limits
        .iter()
        .filter(|l| l.lifted.is_none())
        .map(|l| match l.kind {
            crate::LimitKind::CpuQuota { .. } => format!("CPU quota {}", l.kind.share()),
            crate::LimitKind::RtRuntime { .. } => format!("RT runtime {}", l.kind.share()),
        })
        .collect();
    if words.is_empty() {
        "none".into()
    } else {
        words.join(", ")
    }
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "none".into())
}

fn num(v: Option<i64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(host: &str, cpu: &str) -> Environment {
        Environment {
            cpu_model: cpu.into(),
            cpus: 2,
            kernel: "6.18".into(),
            machine: Machine {
                hostname: host.into(),
                machine_id_sha256: format!("{host}0123456789"),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn identical_nodes_differ_in_identity_only() {
        let (a, b) = (env("n1", "EPYC"), env("n2", "EPYC"));
        assert!(!a.same_machine(&b));
        assert!(a.fact_differences(&b).is_empty());
        assert_eq!(a.machine.label(), "n1#n1012345");
    }

    #[test]
    fn an_ambient_setting_is_a_setting_not_another_machine() {
        let (a, mut b) = (env("n1", "EPYC"), env("n1", "EPYC"));
        b.machine.cpu_dma_latency_us = Some(0);
        assert!(a.same_machine(&b) && a.hardware_differences(&b).is_empty());
        assert_eq!(a.setting_differences(&b), vec!["cpu_dma_latency ? \u{2192} 0".to_string()]);
    }

    #[test]
    fn a_limit_in_force_is_a_setting_and_a_lifted_one_is_none() {
        let (a, mut b) = (env("n1", "EPYC"), env("n1", "EPYC"));
        let quota = crate::LimitKind::CpuQuota { quota_us: 50_000, period_us: 100_000, v2: false };
        b.limits.push(crate::Limit { kind: quota, cgroup: "/x".into(), lifted: None });
        assert_eq!(
            a.setting_differences(&b),
            vec!["limits none \u{2192} CPU quota 0.5".to_string()]
        );
        b.limits[0].lifted = Some("/".into());
        assert!(a.setting_differences(&b).is_empty());
    }

    #[test]
    fn a_different_cpu_or_knob_is_named() {
        let (a, mut b) = (env("n1", "EPYC"), env("n2", "Xeon"));
        b.machine.sched_knobs.insert("sched_rr_timeslice_ms".into(), "25".into());
        let d = a.fact_differences(&b);
        assert_eq!(
            d,
            vec![
                "CPU: EPYC vs Xeon".to_string(),
                "sched_rr_timeslice_ms absent \u{2192} 25".to_string()
            ]
        );
    }
}
