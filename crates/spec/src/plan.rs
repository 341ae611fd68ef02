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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A user program, exec'd as an argument vector (never through a shell).
    Command {
        /// Program and arguments; `{index}` and `{dir}` are substituted.
        argv: Vec<String>,
    },
}

impl Workload {
    /// The kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Pi { .. } => "pi",
            Workload::Copy { .. } => "copy",
            Workload::Mixed { .. } => "mixed",
            Workload::Command { .. } => "command",
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
            Workload::Command { argv } => Workload::Command { argv: argv.clone() },
        }
    }

    /// Work units one worker performs (iterations or bytes; 1 for a command).
    pub fn work_units(&self) -> u64 {
        match self {
            Workload::Pi { iterations } | Workload::Mixed { iterations, .. } => *iterations,
            Workload::Copy { transfer_bytes, .. } => *transfer_bytes,
            Workload::Command { .. } => 1,
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

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Index in the plan (stable for a given spec).
    pub index: u32,
    /// Human-readable key, e.g. `cpu/fifo:50/n10`.
    pub key: String,
    /// Workload name from the spec.
    pub workload_name: String,
    /// The resolved workload (already scaled).
    pub workload: Workload,
    /// Policy name from the spec.
    pub policy_name: String,
    /// The resolved policy (axis overrides applied).
    pub policy: Policy,
    /// Worker processes.
    pub processes: u32,
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
    /// All cells.
    pub cells: Vec<Cell>,
}

impl Plan {
    /// Multiplies every work amount by `factor`.
    pub fn scale(&mut self, factor: f64) {
        self.scale *= factor;
        for c in &mut self.cells {
            c.workload = c.workload.scaled(factor);
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

    /// True if any cell uses a class that can starve ordinary tasks.
    pub fn has_realtime(&self) -> bool {
        self.cells.iter().any(|c| c.policy.class.is_realtime())
    }
}
