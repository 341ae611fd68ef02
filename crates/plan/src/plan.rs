//! The validated, fully resolved experiment: every cell with its workload and policy.

use crate::knob::Knobs;
use crate::{DeviceSpec, IoSetting, Policy, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Which CPUs a group's workers may run on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Affinity {
    /// No pinning: every CPU the cgroup allows.
    All,
    /// Worker i pinned to allowed CPU (i mod n): round-robin over the CPUs.
    Spread,
    /// Worker i pinned to allowed CPU floor(i / ceil(N / n)): each CPU filled in turn.
    Compact,
    /// Every worker may run on exactly these CPUs.
    List(Vec<u32>),
}

impl Affinity {
    /// The spec spelling, for keys and tables.
    pub fn label(&self) -> String {
        match self {
            Affinity::All => "all".into(),
            Affinity::Spread => "spread".into(),
            Affinity::Compact => "compact".into(),
            Affinity::List(l) => l.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        }
    }

    /// CPUs worker `i` of `n` is pinned to, given the CPUs the group may use; None = no pinning.
    pub fn cpus_for(&self, i: u32, n: u32, allowed: &[u32]) -> Option<Vec<u32>> {
        let k = allowed.len() as u32;
        match self {
            Affinity::All => None,
            Affinity::List(l) => Some(l.clone()),
            _ if k == 0 => None,
            Affinity::Spread => Some(vec![allowed[(i % k) as usize]]),
            Affinity::Compact => {
                let per = n.div_ceil(k).max(1);
                Some(vec![allowed[((i / per).min(k - 1)) as usize]])
            }
        }
    }
}

/// cgroup settings of a group (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupSpec {
    /// cpu.weight in v2 units, 1..10000 (v1: shares = weight * 1024 / 100).
    pub cpu_weight: Option<u32>,
    /// (quota_us, period_us).
    pub cpu_max: Option<(u64, u64)>,
    /// cpuset CPUs.
    pub cpuset: Option<Vec<u32>>,
}

impl CgroupSpec {
    /// True if any setting is given.
    pub fn any(&self) -> bool {
        self.cpu_weight.is_some() || self.cpu_max.is_some() || self.cpuset.is_some()
    }
}

/// A group of identical workers within a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Group name ("main" for the top-level axes).
    pub name: String,
    /// Workload name from the spec.
    pub workload_name: String,
    /// The resolved workload (already scaled).
    pub workload: Workload,
    /// Policy name from the spec.
    pub policy_name: String,
    /// The resolved policy.
    pub policy: Policy,
    /// Worker processes (at least 1; groups with 0 are left out of the cell).
    pub processes: u32,
    /// CPU pinning.
    pub affinity: Affinity,
    /// cgroup settings.
    pub cgroup: CgroupSpec,
    /// Started before the measured groups, stopped when they finish; never in the figures.
    pub background: bool,
    /// The `work_scale` axis's factor, already applied to `workload` (None: not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_scale: Option<f64>,
}

impl Group {
    /// `processes` measured workers of `workload` (named `workload_name` in the spec) under
    /// SCHED_OTHER on every CPU, in no cgroup of their own: a group before its spec says more.
    pub fn new(name: &str, workload_name: &str, workload: Workload, processes: u32) -> Group {
        Group {
            name: name.into(),
            workload_name: workload_name.into(),
            workload,
            policy_name: "other".into(),
            policy: Policy::OTHER,
            processes,
            affinity: Affinity::All,
            cgroup: CgroupSpec::default(),
            background: false,
            work_scale: None,
        }
    }

    /// What the `processes` axis set: the worker processes, or a benchmark kind's own count
    /// (messaging's groups, pipe's pairs, schbench's message threads), whose one worker runs
    /// the whole benchmark.
    pub fn count(&self) -> u32 {
        self.workload.count().unwrap_or(self.processes)
    }

    /// The group as stored beside the cell's results.
    pub fn params(&self) -> schedlab_model::GroupParams {
        schedlab_model::GroupParams {
            name: self.name.clone(),
            workload: self.workload_name.clone(),
            workload_kind: self.workload.kind().to_string(),
            policy: self.policy_name.clone(),
            class: self.policy.class.name().to_string(),
            priority: self.policy.priority as i32,
            nice: self.policy.nice,
            processes: self.count(),
            affinity: self.affinity.label(),
            cpu_weight: self.cgroup.cpu_weight,
            cpu_max: self.cgroup.cpu_max,
            cpuset: self.cgroup.cpuset.clone(),
            background: self.background,
            utilisation: self.workload.periodic().and_then(|p| p.utilisation),
            slice_us: self.policy.slice_ns.map(|n| (n / 1000) as u32),
            set: self.workload.periodic().and_then(crate::Periodic::set_index),
            work_scale: self.work_scale,
        }
    }
}

/// One point of the matrix: one or more groups of workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Index in the plan (stable for a given spec).
    pub index: u32,
    /// Human-readable key, e.g. `cpu/fifo:50/n10` or `hash/other/n8+bg.processes=9`.
    pub key: String,
    /// The groups, measured ones first.
    pub groups: Vec<Group>,
    /// The I/O scheduler setting for this cell (from the `iosched` axis).
    #[serde(default)]
    pub io: Option<IoSetting>,
    /// The scheduler knobs this cell sets (from `[matrix.knobs]`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: Knobs,
    /// Who schedules the cell's tasks (from the `cpu_scheduler` axis; None: not swept, the
    /// kernel's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_scheduler: Option<crate::CpuScheduler>,
}

impl Cell {
    /// True when a group runs under a real-time class (fifo, rr, deadline) or is a periodic set.
    pub fn is_realtime(&self) -> bool {
        self.groups.iter().any(|g| g.policy.class.is_realtime() || g.workload.periodic().is_some())
    }

    /// The first measured group: what the per-cell tables describe.
    pub fn primary(&self) -> &Group {
        self.groups.iter().find(|g| !g.background).unwrap_or(&self.groups[0])
    }

    /// Worker processes in all groups.
    pub fn processes(&self) -> u32 {
        self.groups.iter().map(|g| g.processes).sum()
    }

    /// The parameters stored beside the cell's results (the primary group's, and every group).
    pub fn params(&self) -> schedlab_model::CellParams {
        let p = self.primary();
        schedlab_model::CellParams {
            cell_id: self.index,
            key: self.key.clone(),
            workload: p.workload_name.clone(),
            workload_kind: p.workload.kind().to_string(),
            policy: p.policy_name.clone(),
            class: p.policy.class.name().to_string(),
            priority: p.policy.priority as i32,
            nice: p.policy.nice,
            processes: p.count(),
            groups: self.groups.iter().map(Group::params).collect(),
            iosched: self.io.as_ref().map(|i| i.name.clone()),
            knobs: self.knobs.iter().map(|(k, v)| (k.clone(), v.label())).collect(),
            repetitions: None,
            cpu_scheduler: self.cpu_scheduler.as_ref().map(crate::CpuScheduler::label),
        }
    }

    /// The sched_ext scheduler this cell runs under, if any.
    pub fn scx(&self) -> Option<&crate::ScxProgram> {
        self.cpu_scheduler.as_ref().and_then(crate::CpuScheduler::scx)
    }

    /// True when a periodic set of the cell runs under `edf-scx` or `dwcs-scx` (schedlab's
    /// own sched_ext scheduler).
    pub fn scx_dispatched(&self) -> bool {
        self.groups.iter().any(|g| g.workload.periodic().is_some_and(|p| p.scheduler.sched_ext()))
    }

    /// True if any group needs a cgroup; then every group of the cell gets one, so
    /// weights compare like with like.
    pub fn uses_cgroups(&self) -> bool {
        self.groups.iter().any(|g| g.cgroup.any())
    }
}

/// The order in which (cell, repetition) pairs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Cell by cell, repetitions together.
    Sequential,
    /// Shuffled with the plan's seed.
    Random,
}

/// One unit of work for the engine: a cell repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Cell index.
    pub cell: u32,
    /// Repetition number.
    pub rep: u32,
    /// Warm-up repetitions are stored but kept out of the figures.
    pub warmup: bool,
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Experiment name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Path the spec was read from (`<built-in>` for the default).
    pub source_path: String,
    /// Measured repetitions per cell (with `adaptive`, each cell's first `min`).
    pub repetitions: u32,
    /// Repeat each cell past `repetitions` until its main figure is precise enough
    /// (`repetitions = { min, max, ci_pct }`); None: exactly `repetitions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<schedlab_model::AdaptiveTarget>,
    /// Warm-up repetitions per cell.
    pub warmup: u32,
    /// Execution order.
    pub order: Order,
    /// Seed for the order shuffle and the workers' RNGs.
    pub seed: u64,
    /// Per-cell watchdog.
    pub timeout: Duration,
    /// Experiment directory chosen in the spec.
    pub dir: Option<PathBuf>,
    /// Work multiplier applied to every cell.
    pub scale: f64,
    /// The experiment device, when any cell does I/O on one.
    #[serde(default)]
    pub device: Option<DeviceSpec>,
    /// All cells.
    pub cells: Vec<Cell>,
    /// What real-time cells hold /dev/cpu_dma_latency at (left out of the stored plan when
    /// it is the default, so plans stored before it read and serialise as they did).
    #[serde(default, skip_serializing_if = "DmaLatency::is_default")]
    pub cpu_dma_latency: DmaLatency,
    /// Which cells record a kernel trace (none by default).
    #[serde(default, skip_serializing_if = "TraceSetting::is_off")]
    pub trace: TraceSetting,
    /// Scheduler knobs held for the whole run (`[knobs]`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: Knobs,
    /// The spec allows knob values that disable or weaken RT throttling.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_rt_unthrottled: bool,
}

/// The trace buffer sizes accepted per CPU, KiB (`trace_buffer_kb`, `--trace-buffer-kb`).
pub const TRACE_BUFFER_KB: std::ops::RangeInclusive<u32> = 64..=(1 << 22);

/// Which cells record the scheduler's tracepoints, and with what buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSetting {
    /// Every cell (`trace = true`, `run --trace`).
    pub all: bool,
    /// Cells with a group running one of these workloads (`[workloads.NAME] trace = true`).
    #[serde(default)]
    pub workloads: Vec<String>,
    /// The instance's buffer per CPU, KiB (None: the trace crate's default).
    #[serde(default)]
    pub buffer_kb: Option<u32>,
    /// How traced cells are recorded (plans stored before the BPF observer have none: they
    /// were recorded as a tracefs timeline): the run's widest mode.
    #[serde(default, skip_serializing_if = "TraceMode::is_tracefs")]
    pub mode: TraceMode,
    /// When only some traced cells capture the timeline (`[workloads.NAME] trace =
    /// "timeline"` beside others traced by BPF alone): the workloads whose cells do. Empty:
    /// every traced cell is recorded by `mode`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<String>,
}

impl TraceSetting {
    /// No cell is traced and nothing was set.
    pub fn is_off(&self) -> bool {
        *self == TraceSetting::default()
    }
}

/// How a traced cell is recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceMode {
    /// Every scheduler event captured through a tracefs instance, the figures computed from
    /// the timeline (the only way before the BPF observer; stored plans without a mode).
    #[default]
    Tracefs,
    /// The figures aggregated in the kernel by schedlab's BPF programs (`trace = true`,
    /// `--trace`): no timeline.
    Bpf,
    /// Both at once (`trace = "timeline"`, `--trace=timeline`): the timeline for exports
    /// and the state chart, and the BPF figures beside the timeline's.
    TimelineAndBpf,
}

impl TraceMode {
    /// Plans without a mode.
    pub fn is_tracefs(&self) -> bool {
        *self == TraceMode::Tracefs
    }

    /// The cell's timeline is captured through tracefs.
    pub fn timeline(self) -> bool {
        matches!(self, TraceMode::Tracefs | TraceMode::TimelineAndBpf)
    }

    /// The BPF observer aggregates the cell's figures.
    pub fn bpf(self) -> bool {
        matches!(self, TraceMode::Bpf | TraceMode::TimelineAndBpf)
    }
}

/// The CPU wake-up latency a real-time cell asks the kernel's PM QoS for, as cyclictest
/// does: held through /dev/cpu_dma_latency for the cell's duration, so deep idle states
/// do not add their exit latency to the workers' wake-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DmaLatency {
    /// Leave it to the machine.
    Off,
    /// Hold this many microseconds (cyclictest's default is 0).
    Hold(u32),
}

impl DmaLatency {
    /// Holding 0, as cyclictest does.
    pub fn is_default(&self) -> bool {
        *self == DmaLatency::default()
    }
}

impl Default for DmaLatency {
    fn default() -> Self {
        DmaLatency::Hold(0)
    }
}

impl Plan {
    /// Every sched_ext scheduler program the plan's cells name, once each, and
    /// [`SCX_DISPATCHER`](crate::SCX_DISPATCHER) when a periodic set runs under `edf-scx` or
    /// `dwcs-scx`.
    pub fn scx_programs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.cells.iter().filter_map(Cell::scx) {
            if !out.contains(&p.program) {
                out.push(p.program.clone());
            }
        }
        if self.cells.iter().any(Cell::scx_dispatched) {
            out.push(crate::SCX_DISPATCHER.into());
        }
        out
    }

    /// Every knob the plan names (fixed or swept in any cell), by name.
    pub fn knob_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .knobs
            .keys()
            .chain(self.cells.iter().flat_map(|c| c.knobs.keys()))
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The knobs in force during `cell`: the plan's fixed ones and the cell's own.
    pub fn knobs_for(&self, cell: &Cell) -> Knobs {
        let mut k = self.knobs.clone();
        k.extend(cell.knobs.clone());
        k
    }

    /// True when `cell` records a kernel trace.
    pub fn traced(&self, cell: &Cell) -> bool {
        self.trace.all
            || cell.groups.iter().any(|g| self.trace.workloads.contains(&g.workload_name))
    }

    /// How `cell` is recorded, when it is traced: the run's mode, or the BPF figures alone
    /// for a cell none of whose workloads asked for the timeline when others did.
    pub fn trace_mode(&self, cell: &Cell) -> TraceMode {
        let t = &self.trace;
        if t.mode == TraceMode::TimelineAndBpf
            && !t.timeline.is_empty()
            && !cell.groups.iter().any(|g| t.timeline.contains(&g.workload_name))
        {
            return TraceMode::Bpf;
        }
        t.mode
    }

    /// The latency `cell` holds /dev/cpu_dma_latency at, if any: real-time and periodic
    /// cells hold the plan's, other cells nothing.
    pub fn dma_latency_for(&self, cell: &Cell) -> Option<u32> {
        match self.cpu_dma_latency {
            DmaLatency::Hold(us) if cell.is_realtime() => Some(us),
            _ => None,
        }
    }
}

impl Plan {
    /// Multiplies every work amount by `factor`.
    pub fn scale(&mut self, factor: f64) {
        self.scale *= factor;
        for g in self.cells.iter_mut().flat_map(|c| c.groups.iter_mut()) {
            g.workload = g.workload.scaled(factor);
        }
    }

    /// Every (cell, repetition) pair in execution order; each cell's warm-ups run right
    /// before its first measured repetition.
    pub fn steps(&self) -> Vec<Step> {
        let mut measured: Vec<Step> = Vec::new();
        for c in &self.cells {
            for rep in 0..self.repetitions {
                measured.push(Step { cell: c.index, rep, warmup: false });
            }
        }
        if self.order == Order::Random {
            use rand::seq::SliceRandom;
            use rand::SeedableRng;
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(self.seed);
            measured.shuffle(&mut rng);
        }
        let mut out = Vec::with_capacity(measured.len() + self.cells.len() * self.warmup as usize);
        let mut warmed = vec![false; self.cells.len()];
        for s in measured {
            if !warmed[s.cell as usize] {
                warmed[s.cell as usize] = true;
                for rep in 0..self.warmup {
                    out.push(Step { cell: s.cell, rep, warmup: true });
                }
            }
            out.push(s);
        }
        out
    }

    /// One more measured repetition of each `(cell, rep)` in `more`, the `round`-th time
    /// cells are repeated beyond the first steps of an adaptive run: in cell order, or
    /// shuffled with the plan's seed and the round under `order = "random"`.
    pub fn round(&self, round: u32, more: &[(u32, u32)]) -> Vec<Step> {
        let mut out: Vec<Step> =
            more.iter().map(|&(cell, rep)| Step { cell, rep, warmup: false }).collect();
        out.sort_by_key(|s| s.cell);
        if self.order == Order::Random {
            use rand::seq::SliceRandom;
            use rand::SeedableRng;
            let seed = self.seed ^ u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            out.shuffle(&mut rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed));
        }
        out
    }

    /// Bytes the largest cell keeps on the experiment device at once.
    pub fn device_bytes(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| {
                c.groups.iter().map(|g| g.workload.device_bytes() * g.processes as u64).sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    /// True if any cell uses a class that can starve ordinary tasks.
    pub fn has_realtime(&self) -> bool {
        self.cells.iter().flat_map(|c| &c.groups).any(|g| g.policy.class.is_realtime())
    }
}
