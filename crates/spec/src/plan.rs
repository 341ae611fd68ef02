//! The validated, fully resolved experiment: every cell with its workload and policy.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Scheduling class of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// SCHED_OTHER (the fair class).
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_DEADLINE.
    Deadline,
}

impl Class {
    /// All classes, in the order users usually list them.
    pub const ALL: [Class; 6] = [Class::Other, Class::Batch, Class::Idle, Class::Fifo, Class::Rr, Class::Deadline];

    /// The spec name of the class.
    pub fn name(self) -> &'static str {
        match self {
            Class::Other => "other",
            Class::Batch => "batch",
            Class::Idle => "idle",
            Class::Fifo => "fifo",
            Class::Rr => "rr",
            Class::Deadline => "deadline",
        }
    }

    /// Parses a spec name.
    pub fn parse(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }

    /// True for the real-time classes whose tasks take a static priority.
    pub fn is_rt(self) -> bool {
        matches!(self, Class::Fifo | Class::Rr)
    }

    /// True for classes that can starve ordinary processes (need throttling on).
    pub fn is_realtime(self) -> bool {
        matches!(self, Class::Fifo | Class::Rr | Class::Deadline)
    }
}

/// SCHED_DEADLINE parameters, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineParams {
    /// Runtime budget per period.
    pub runtime_ns: u64,
    /// Relative deadline.
    pub deadline_ns: u64,
    /// Period.
    pub period_ns: u64,
}

/// A scheduling policy to apply to every worker of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Scheduling class.
    pub class: Class,
    /// Static RT priority (1..=98 for fifo/rr, 0 otherwise).
    pub priority: u32,
    /// Nice value (-20..=19).
    pub nice: i32,
    /// Deadline parameters for the deadline class.
    pub deadline: Option<DeadlineParams>,
}

/// The highest RT priority a worker may have: 99 is kept for the engine, which must
/// always be able to preempt its workers.
pub const MAX_WORKER_PRIORITY: i64 = 98;

/// What a worker does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Workload {
    /// Monte-Carlo pi: pure CPU.
    Pi {
        /// Random points drawn.
        iterations: u64,
    },
    /// Read blocks from an input file and write them to an O_SYNC output file.
    Copy {
        /// Bytes copied.
        transfer_bytes: u64,
        /// Bytes per read/write.
        block_bytes: u64,
        /// Size of each worker's random input file.
        input_bytes: u64,
    },
    /// Pi that writes its counters to an O_SYNC file every `write_every` iterations.
    Mixed {
        /// Random points drawn.
        iterations: u64,
        /// Iterations between synchronous writes.
        write_every: u64,
    },
    /// 128-bit CityHash of a 4 KiB random buffer, repeated (the seed's hashing load).
    Hash {
        /// Hashes computed.
        hashes: u64,
    },
    /// A user program, exec'd as an argument vector (never through a shell).
    Command {
        /// Program and arguments; `{index}` and `{dir}` are substituted.
        argv: Vec<String>,
    },
    /// Threads writing files in parallel on the experiment device (seed 002's par_write).
    #[serde(rename = "par_write")]
    ParWrite(ParIo),
    /// Threads reading files made in an unmeasured set-up step.
    #[serde(rename = "par_read")]
    ParRead(ParIo),
    /// A periodic real-time task set: one worker per task (seed 003).
    Periodic(crate::rt::Periodic),
    /// Disturbance: datagrams sent to itself over 127.0.0.1 as fast as it can (network stack
    /// and softirq load; a sender and a receiver thread).
    #[serde(rename = "udp_flood")]
    UdpFlood {
        /// Datagrams sent.
        packets: u64,
        /// Payload bytes per datagram (1..=65507).
        packet_bytes: u64,
    },
    /// Disturbance: O_DIRECT random reads of the worker's own file, each completed by a
    /// device interrupt.
    #[serde(rename = "io_interrupts")]
    IoInterrupts {
        /// Reads done.
        reads: u64,
        /// Bytes per read (a multiple of 4096).
        read_bytes: u64,
        /// Size of the file the worker makes in its cell directory (a multiple of 4096).
        file_bytes: u64,
    },
}

/// How `par_write` and `par_read` do their I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Plain write(2)/read(2) through the page cache (the seed's mode).
    Buffered,
    /// O_SYNC: every write waits for the device.
    Sync,
    /// O_DIRECT: no page cache; buffer, size and offsets aligned to 4096 bytes.
    Direct,
    /// Buffered writes, fsync(2) before each file is closed (counted in its time).
    Fsync,
}

impl IoMode {
    /// All modes.
    pub const ALL: [IoMode; 4] = [IoMode::Buffered, IoMode::Sync, IoMode::Direct, IoMode::Fsync];
    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Buffered => "buffered",
            IoMode::Sync => "sync",
            IoMode::Direct => "direct",
            IoMode::Fsync => "fsync",
        }
    }
}

/// The alignment O_DIRECT needs here (logical block size of any device we create).
pub const DIRECT_ALIGN: u64 = 4096;

/// The largest UDP payload over IPv4 (65535 - 8 - 20): `udp_flood`'s largest `packet_bytes`.
pub const MAX_PACKET_BYTES: u64 = 65_507;

/// The shape of a parallel I/O job: `files` files of `file_bytes` each, shared out among
/// `threads` threads (each takes the next file when it finishes one), `buffer_bytes` per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParIo {
    /// Files per worker process.
    pub files: u64,
    /// Bytes per file.
    pub file_bytes: u64,
    /// Threads per worker process.
    pub threads: u32,
    /// Bytes per read/write call.
    pub buffer_bytes: u64,
    /// How the I/O is done.
    pub mode: IoMode,
}

impl ParIo {
    /// The shape with `file_bytes` multiplied by `factor` (files and threads stay: they are
    /// the case's shape); at least one byte, and a multiple of 4096 for O_DIRECT.
    pub fn scaled(&self, factor: f64) -> ParIo {
        let mut b = ((self.file_bytes as f64 * factor).round() as u64).max(1);
        if self.mode == IoMode::Direct {
            b = b.div_ceil(DIRECT_ALIGN).max(1) * DIRECT_ALIGN;
        }
        ParIo { file_bytes: b, ..*self }
    }

    /// Bytes one worker process moves.
    pub fn bytes(&self) -> u64 {
        self.files * self.file_bytes
    }
}

impl Workload {
    /// The kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Pi { .. } => "pi",
            Workload::Copy { .. } => "copy",
            Workload::Mixed { .. } => "mixed",
            Workload::Hash { .. } => "hash",
            Workload::Command { .. } => "command",
            Workload::ParWrite(_) => "par_write",
            Workload::ParRead(_) => "par_read",
            Workload::Periodic(_) => "periodic",
            Workload::UdpFlood { .. } => "udp_flood",
            Workload::IoInterrupts { .. } => "io_interrupts",
        }
    }

    /// True for the workloads that need the experiment's block device.
    pub fn is_io(&self) -> bool {
        matches!(self, Workload::ParWrite(_) | Workload::ParRead(_))
    }

    /// Bytes one worker keeps on the experiment device while it runs (outputs and inputs).
    pub fn device_bytes(&self) -> u64 {
        match self {
            Workload::ParWrite(p) | Workload::ParRead(p) => p.bytes(),
            Workload::Copy { transfer_bytes, input_bytes, .. } => transfer_bytes + input_bytes,
            Workload::Mixed { iterations, write_every } => (iterations / write_every) * 64,
            // Its file lives in the cell directory, which is on the device when there is one.
            Workload::IoInterrupts { file_bytes, .. } => *file_bytes,
            _ => 0,
        }
    }

    /// The workload with every work amount multiplied by `factor` (at least one unit of each).
    pub fn scaled(&self, factor: f64) -> Workload {
        let s = |v: u64| ((v as f64 * factor).round() as u64).max(1);
        match self {
            Workload::Pi { iterations } => Workload::Pi { iterations: s(*iterations) },
            Workload::Copy { transfer_bytes, block_bytes, input_bytes } => Workload::Copy {
                transfer_bytes: s(*transfer_bytes).max(*block_bytes),
                block_bytes: *block_bytes,
                input_bytes: *input_bytes,
            },
            Workload::Mixed { iterations, write_every } => {
                let iterations = s(*iterations);
                // Keep the number of synchronous writes proportional too.
                Workload::Mixed { iterations, write_every: s(*write_every).min(iterations) }
            }
            Workload::Hash { hashes } => Workload::Hash { hashes: s(*hashes) },
            Workload::Command { argv } => Workload::Command { argv: argv.clone() },
            Workload::ParWrite(p) => Workload::ParWrite(p.scaled(factor)),
            Workload::ParRead(p) => Workload::ParRead(p.scaled(factor)),
            Workload::Periodic(p) => Workload::Periodic(p.scaled(factor)),
            Workload::UdpFlood { packets, packet_bytes } => Workload::UdpFlood { packets: s(*packets), packet_bytes: *packet_bytes },
            Workload::IoInterrupts { reads, read_bytes, file_bytes } => {
                Workload::IoInterrupts { reads: s(*reads), read_bytes: *read_bytes, file_bytes: *file_bytes }
            }
        }
    }

    /// Work units one worker performs (iterations or bytes; 1 for a command; datagrams sent
    /// for udp_flood, reads for io_interrupts).
    pub fn work_units(&self) -> u64 {
        match self {
            Workload::Pi { iterations } | Workload::Mixed { iterations, .. } => *iterations,
            Workload::Hash { hashes } => *hashes,
            Workload::Copy { transfer_bytes, .. } => *transfer_bytes,
            Workload::Command { .. } => 1,
            Workload::ParWrite(p) | Workload::ParRead(p) => p.bytes(),
            // Jobs of the set's first task; a worker reports the jobs of its own task.
            Workload::Periodic(p) => p.tasks.first().map(|t| p.jobs(t)).unwrap_or(1),
            Workload::UdpFlood { packets, .. } => *packets,
            Workload::IoInterrupts { reads, .. } => *reads,
        }
    }

    /// The periodic task set, for a periodic workload.
    pub fn periodic(&self) -> Option<&crate::rt::Periodic> {
        match self {
            Workload::Periodic(p) => Some(p),
            _ => None,
        }
    }

    /// Synchronous writes one worker performs.
    pub fn sync_writes(&self) -> u64 {
        match self {
            Workload::Copy { transfer_bytes, block_bytes, .. } => transfer_bytes.div_ceil(*block_bytes),
            Workload::Mixed { iterations, write_every } => iterations / write_every,
            _ => 0,
        }
    }
}

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
}

impl Group {
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
            processes: self.processes,
            affinity: self.affinity.label(),
            cpu_weight: self.cgroup.cpu_weight,
            cpu_max: self.cgroup.cpu_max,
            cpuset: self.cgroup.cpuset.clone(),
            background: self.background,
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
}

/// One value of the `iosched` axis: a scheduler and the tunables to write with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoSetting {
    /// The name on the axis (a scheduler name or an `[iosched.NAME]` entry).
    pub name: String,
    /// The kernel's scheduler name: none, mq-deadline, kyber, bfq, ...
    pub scheduler: String,
    /// (tunable, value): queue-level ones (nr_requests, read_ahead_kb, ...) go to
    /// `queue/<name>`, the others to `queue/iosched/<name>`.
    pub tunables: Vec<(String, String)>,
}

/// Tunables that live in `/sys/block/<dev>/queue/` itself rather than under `iosched/`.
pub const QUEUE_TUNABLES: &[&str] = &["nr_requests", "read_ahead_kb", "nomerges", "rq_affinity", "max_sectors_kb", "wbt_lat_usec"];

/// The tunables each scheduler offers under `queue/iosched/` (Linux 6.x).
pub const SCHEDULER_TUNABLES: &[(&str, &[&str])] = &[
    ("none", &[]),
    ("mq-deadline", &["read_expire", "write_expire", "writes_starved", "front_merges", "fifo_batch", "async_depth", "prio_aging_expire"]),
    ("kyber", &["read_lat_nsec", "write_lat_nsec"]),
    (
        "bfq",
        &[
            "slice_idle",
            "slice_idle_us",
            "low_latency",
            "timeout_sync",
            "max_budget",
            "back_seek_max",
            "back_seek_penalty",
            "fifo_expire_async",
            "fifo_expire_sync",
            "strict_guarantees",
        ],
    ),
];

/// Where the experiment's files live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceTarget {
    /// A file-backed loop device schedlab creates, formats, mounts and removes.
    Loop {
        /// Size of the backing file in MiB (None: computed from the largest cell).
        size_mib: Option<u64>,
        /// Filesystem: ext4, xfs or btrfs.
        fs: String,
        /// The loop device does direct I/O on its backing file (LOOP_SET_DIRECT_IO).
        direct_io: bool,
    },
    /// A directory on an existing filesystem: schedlab creates its own directory inside it and
    /// writes only there. (A block device in the spec is resolved to where it is mounted.)
    Dir {
        /// The directory or block device as written.
        path: String,
    },
}

/// Which queue the `iosched` axis changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueTarget {
    /// The experiment device's own queue (the loop device's, or the disk's for `Dir`).
    Device,
    /// The disk that holds a loop device's backing file.
    Backing,
}

/// The experiment device (`[device]` in the spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// Where the files go.
    pub target: DeviceTarget,
    /// Whose queue the I/O scheduler axis sets.
    pub queue: QueueTarget,
    /// The real disk the user confirmed (`confirm_device`), needed to touch a real disk.
    pub confirm_device: Option<String>,
    /// sync and drop the page cache before every cell repetition.
    pub drop_caches: bool,
}

impl Cell {
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
            processes: p.processes,
            groups: self.groups.iter().map(Group::params).collect(),
            iosched: self.io.as_ref().map(|i| i.name.clone()),
        }
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
    /// Measured repetitions per cell.
    pub repetitions: u32,
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

    /// Bytes the largest cell keeps on the experiment device at once.
    pub fn device_bytes(&self) -> u64 {
        self.cells.iter().map(|c| c.groups.iter().map(|g| g.workload.device_bytes() * g.processes as u64).sum::<u64>()).max().unwrap_or(0)
    }

    /// True if any cell uses a class that can starve ordinary tasks.
    pub fn has_realtime(&self) -> bool {
        self.cells.iter().flat_map(|c| &c.groups).any(|g| g.policy.class.is_realtime())
    }
}
