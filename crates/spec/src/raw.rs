//! The experiment file exactly as written: serde structs that reject unknown keys.
//! Every value that validation may complain about keeps its span.

use serde::Deserialize;
use serde_spanned::Spanned;
use std::collections::BTreeMap;

/// The top level of an experiment file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub repetitions: Option<Spanned<i64>>,
    #[serde(default)]
    pub warmup: Option<Spanned<i64>>,
    #[serde(default)]
    pub order: Option<Spanned<String>>,
    #[serde(default)]
    pub seed: Option<Spanned<i64>>,
    #[serde(default)]
    pub timeout_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub dir: Option<Spanned<String>>,
    #[serde(default)]
    pub cpu_dma_latency: Option<Spanned<toml::Value>>,
    pub matrix: Spanned<RawMatrix>,
    #[serde(default)]
    pub workloads: BTreeMap<Spanned<String>, Spanned<RawWorkload>>,
    #[serde(default)]
    pub policies: BTreeMap<Spanned<String>, Spanned<RawPolicy>>,
    #[serde(default)]
    pub groups: BTreeMap<Spanned<String>, Spanned<RawGroup>>,
    #[serde(default)]
    pub device: Option<Spanned<RawDevice>>,
    #[serde(default)]
    pub iosched: BTreeMap<Spanned<String>, Spanned<RawIosched>>,
}

/// `[device]`: where I/O workloads put their files.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevice {
    #[serde(default)]
    pub path: Option<Spanned<String>>,
    #[serde(default)]
    pub size_mib: Option<Spanned<i64>>,
    #[serde(default)]
    pub fs: Option<Spanned<String>>,
    #[serde(default)]
    pub direct_io: Option<Spanned<bool>>,
    #[serde(default)]
    pub queue: Option<Spanned<String>>,
    #[serde(default)]
    pub confirm_device: Option<Spanned<String>>,
    #[serde(default)]
    pub drop_caches: Option<Spanned<bool>>,
}

/// `[iosched.NAME]`: a scheduler with tunables, usable on the `iosched` axis.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIosched {
    pub scheduler: Spanned<String>,
    #[serde(default)]
    pub tunables: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
}

/// A named worker group: its fixed settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    #[serde(default)]
    pub workload: Option<Spanned<String>>,
    #[serde(default)]
    pub processes: Option<Spanned<i64>>,
    #[serde(default)]
    pub policy: Option<Spanned<String>>,
    #[serde(default)]
    pub priority: Option<Spanned<i64>>,
    #[serde(default)]
    pub nice: Option<Spanned<i64>>,
    #[serde(default)]
    pub affinity: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub cpu_weight: Option<Spanned<i64>>,
    #[serde(default)]
    pub cpu_max: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub cpuset: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub background: Option<Spanned<bool>>,
    #[serde(default)]
    pub scheduler: Option<Spanned<String>>,
    #[serde(default)]
    pub utilisation: Option<Spanned<f64>>,
}

/// Axes for one group: every group setting may be swept.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroupAxes {
    #[serde(default)]
    pub workload: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub processes: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub policy: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub priority: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub nice: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub affinity: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub cpu_weight: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub cpu_max: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub cpuset: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub scheduler: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub utilisation: Option<Spanned<Vec<Spanned<f64>>>>,
}

/// The axes whose product is the set of cells. The top-level axes are those of the
/// group "main"; `groups.NAME` holds the axes of other groups.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    #[serde(default)]
    pub workload: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub processes: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub policy: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub priority: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub nice: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub affinity: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub cpu_weight: Option<Spanned<Vec<Spanned<i64>>>>,
    #[serde(default)]
    pub cpu_max: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub cpuset: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub scheduler: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub utilisation: Option<Spanned<Vec<Spanned<f64>>>>,
    #[serde(default)]
    pub groups: BTreeMap<Spanned<String>, Spanned<RawGroupAxes>>,
    #[serde(default)]
    pub iosched: Option<Spanned<Vec<Spanned<String>>>>,
}

impl RawMatrix {
    /// Splits the top-level axes (the "main" group's) from the other groups' axes; the
    /// cell-level `iosched` axis must be taken out first.
    pub fn split(self) -> (RawGroupAxes, BTreeMap<Spanned<String>, Spanned<RawGroupAxes>>) {
        let main = RawGroupAxes {
            workload: self.workload,
            processes: self.processes,
            policy: self.policy,
            priority: self.priority,
            nice: self.nice,
            affinity: self.affinity,
            cpu_weight: self.cpu_weight,
            cpu_max: self.cpu_max,
            cpuset: self.cpuset,
            scheduler: self.scheduler,
            utilisation: self.utilisation,
        };
        (main, self.groups)
    }
}

/// A named workload definition; which keys apply depends on `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub kind: Spanned<String>,
    #[serde(default)]
    pub iterations: Option<Spanned<i64>>,
    #[serde(default)]
    pub write_every: Option<Spanned<i64>>,
    #[serde(default)]
    pub transfer_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub block_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub input_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub argv: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub hashes: Option<Spanned<i64>>,
    #[serde(default)]
    pub files: Option<Spanned<i64>>,
    #[serde(default)]
    pub file_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub threads: Option<Spanned<i64>>,
    #[serde(default)]
    pub buffer_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub mode: Option<Spanned<String>>,
    // periodic
    #[serde(default)]
    pub body: Option<Spanned<String>>,
    #[serde(default)]
    pub duration_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub quantum_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub cpu: Option<Spanned<i64>>,
    #[serde(default)]
    pub cpus: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub work_fraction: Option<Spanned<f64>>,
    #[serde(default)]
    pub fill: Option<Spanned<bool>>,
    #[serde(default)]
    pub read_kib: Option<Spanned<i64>>,
    #[serde(default)]
    pub tasks: Option<Spanned<Vec<Spanned<RawTask>>>>,
    #[serde(default)]
    pub generate: Option<Spanned<RawGenerate>>,
    #[serde(default)]
    pub canonical: Option<Spanned<RawCanonical>>,
    #[serde(default)]
    pub packets: Option<Spanned<i64>>,
    #[serde(default)]
    pub packet_bytes: Option<Spanned<i64>>,
    #[serde(default)]
    pub reads: Option<Spanned<i64>>,
    #[serde(default)]
    pub read_bytes: Option<Spanned<i64>>,
}

/// One task of an explicit periodic set, times in milliseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    pub c_ms: Spanned<f64>,
    pub t_ms: Spanned<f64>,
    #[serde(default)]
    pub d_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub x: Option<Spanned<i64>>,
    #[serde(default)]
    pub y: Option<Spanned<i64>>,
    #[serde(default)]
    pub phase_ms: Option<Spanned<f64>>,
}

/// A generated periodic set (UUniFast-Discard, log-uniform periods).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGenerate {
    pub tasks: Spanned<i64>,
    #[serde(default)]
    pub utilisation: Option<Spanned<f64>>,
    #[serde(default)]
    pub measure: Option<Spanned<String>>,
    #[serde(default)]
    pub min_period_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub max_period_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub c_granularity_ms: Option<Spanned<f64>>,
    #[serde(default)]
    pub x: Option<Spanned<i64>>,
    #[serde(default)]
    pub y: Option<Spanned<i64>>,
    #[serde(default)]
    pub seed: Option<Spanned<i64>>,
    #[serde(default)]
    pub canonical: Option<Spanned<bool>>,
}

/// A canonical DWCS set: C = the quantum, T = period_quanta quanta.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCanonical {
    pub tasks: Spanned<i64>,
    #[serde(default)]
    pub x: Option<Spanned<i64>>,
    #[serde(default)]
    pub y: Option<Spanned<i64>>,
    pub period_quanta: Spanned<i64>,
}

/// A named policy definition.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub class: Spanned<String>,
    #[serde(default)]
    pub priority: Option<Spanned<i64>>,
    #[serde(default)]
    pub nice: Option<Spanned<i64>>,
    #[serde(default)]
    pub runtime_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub deadline_us: Option<Spanned<i64>>,
    #[serde(default)]
    pub period_us: Option<Spanned<i64>>,
}
