//! Splitting a plan's steps into N disjoint shards of about equal estimated work, the same
//! on every machine: the split depends only on the plan and N.
//!
//! Measured repetitions are the units (or whole cells, [`ShardBy::Cell`], when each cell
//! decides its own repetitions). Units are taken in the plan's cell order and cut into N
//! runs of contiguous units by their cumulative estimated work, so a cell's repetitions
//! stay together except where a cut falls inside it, and no shard exceeds an equal share
//! by more than one unit. A shard runs a cell's warm-ups whenever it runs any of its
//! measured repetitions: a warm-up is for the machine that measures.

use crate::{Cell, Plan, Step, Workload};

/// Which of how many shards, as `--shard K/N` gives it (K from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardSpec {
    /// 0-based index.
    pub index: u32,
    /// Shards in all.
    pub count: u32,
}

impl std::str::FromStr for ShardSpec {
    type Err = crate::Refusal;
    fn from_str(s: &str) -> Result<ShardSpec, crate::Refusal> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("\"{s}\" is not K/N (e.g. 0/4: the first of four shards)"))?;
        let k: u32 = k
            .trim()
            .parse()
            .map_err(|_| format!("\"{k}\" in \"{s}\" is not a shard index (0, 1, ...)"))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("\"{n}\" in \"{s}\" is not a number of shards"))?;
        if n == 0 || k >= n {
            return crate::refuse(format!(
                "shard {k}/{n}: K counts from 0 and must be less than N (0/{n} .. {}/{n})",
                n.max(1) - 1
            ));
        }
        Ok(ShardSpec { index: k, count: n })
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a shard's unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardBy {
    /// A measured repetition of a cell (the plan's steps).
    Step,
    /// A cell with all its repetitions (adaptive repetitions: the cell decides how many).
    Cell,
}

/// Which shard owns each measured repetition of each cell.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardMap {
    count: u32,
    /// By cell index, by repetition.
    owner: Vec<Vec<u32>>,
    /// Estimated work per shard.
    load: Vec<f64>,
}

impl ShardMap {
    /// True when `shard` runs measured repetition `rep` of `cell` (for [`ShardBy::Cell`],
    /// any `rep`).
    pub fn owns(&self, shard: u32, cell: u32, rep: u32) -> bool {
        let reps = &self.owner[cell as usize];
        reps.get(rep as usize).or(reps.last()).is_some_and(|o| *o == shard)
    }

    /// True when `shard` runs any measured repetition of `cell`.
    pub fn owns_cell(&self, shard: u32, cell: u32) -> bool {
        self.owner[cell as usize].contains(&shard)
    }

    /// Each shard's estimated work, seconds of worker time.
    pub fn loads(&self) -> &[f64] {
        &self.load
    }

    /// Shards in the map.
    pub fn count(&self) -> u32 {
        self.count
    }
}

/// Rough per-worker rates, only to weigh cells against each other (one core of a current
/// x86 machine; a machine twice as fast is twice as fast everywhere).
const PI_PER_S: f64 = 5e7;
const HASHES_PER_S: f64 = 1e6;
const SYNC_WRITES_PER_S: f64 = 200.0;
const BYTES_PER_S: f64 = 2e8;
const PACKETS_PER_S: f64 = 2e5;
const READS_PER_S: f64 = 1e4;
const MESSAGES_PER_S: f64 = 1e6;
const ROUND_TRIPS_PER_S: f64 = 1e5;
/// A user command's running time is unknown: one second.
const COMMAND_S: f64 = 1.0;
/// Spawning, releasing and reaping a worker, and storing its sample.
const PER_WORKER_S: f64 = 0.002;

fn worker_seconds(w: &Workload) -> f64 {
    match w {
        Workload::Pi { iterations } => *iterations as f64 / PI_PER_S,
        Workload::Mixed { iterations, .. } => {
            *iterations as f64 / PI_PER_S + w.sync_writes() as f64 / SYNC_WRITES_PER_S
        }
        Workload::Hash { hashes } => *hashes as f64 / HASHES_PER_S,
        Workload::Copy { transfer_bytes, .. } => {
            *transfer_bytes as f64 / BYTES_PER_S + w.sync_writes() as f64 / SYNC_WRITES_PER_S
        }
        Workload::Command { .. } => COMMAND_S,
        Workload::ParWrite(p) | Workload::ParRead(p) => p.bytes() as f64 / BYTES_PER_S,
        Workload::Schbench(b) => b.runtime_ms as f64 / 1e3,
        Workload::Periodic(_)
        | Workload::UdpFlood { .. }
        | Workload::IoInterrupts { .. }
        | Workload::Messaging(_)
        | Workload::Pipe(_) => w.work_units() as f64 / rate(w),
    }
}

fn rate(w: &Workload) -> f64 {
    match w {
        Workload::UdpFlood { .. } => PACKETS_PER_S,
        Workload::IoInterrupts { .. } => READS_PER_S,
        Workload::Messaging(_) => MESSAGES_PER_S,
        Workload::Pipe(_) => ROUND_TRIPS_PER_S,
        _ => 1.0,
    }
}

impl Plan {
    /// Estimated worker seconds of one repetition of `cell`: each measured worker's work at
    /// rough rates (background groups run only as long as the measured ones); a periodic
    /// set counts its duration once. Only the ratios between cells matter.
    pub fn estimated_work(&self, cell: &Cell) -> f64 {
        let mut total = 0.0;
        for g in cell.groups.iter().filter(|g| !g.background) {
            total += PER_WORKER_S * g.processes as f64;
            total += match g.workload.periodic() {
                Some(p) => p.duration_ns as f64 / 1e9,
                None => worker_seconds(&g.workload) * g.processes as f64,
            };
        }
        total.max(PER_WORKER_S)
    }

    /// Which of `count` shards owns each measured repetition (see the module's doc).
    pub fn shard_map(&self, count: u32, by: ShardBy) -> ShardMap {
        let count = count.max(1);
        let units: Vec<(usize, Option<u32>, f64)> = match by {
            ShardBy::Step => self
                .cells
                .iter()
                .enumerate()
                .flat_map(|(i, c)| {
                    let w = self.estimated_work(c);
                    (0..self.repetitions).map(move |r| (i, Some(r), w))
                })
                .collect(),
            ShardBy::Cell => self
                .cells
                .iter()
                .enumerate()
                .map(|(i, c)| (i, None, self.estimated_work(c) * self.repetitions as f64))
                .collect(),
        };
        let total: f64 = units.iter().map(|u| u.2).sum();
        let share = total / count as f64;
        let mut owner: Vec<Vec<u32>> = vec![Vec::new(); self.cells.len()];
        let mut load = vec![0.0; count as usize];
        let mut before = 0.0;
        for (cell, _, w) in units {
            // The shard in whose equal share this unit's midpoint falls.
            let k =
                if share > 0.0 { (((before + w / 2.0) / share) as u32).min(count - 1) } else { 0 };
            owner[cell].push(k);
            load[k as usize] += w;
            before += w;
        }
        ShardMap { count, owner, load }
    }

    /// The steps shard `shard` runs, in the plan's execution order: its measured
    /// repetitions, each cell's warm-ups before the first of them.
    pub fn shard_steps(&self, shard: ShardSpec, by: ShardBy) -> Vec<Step> {
        let map = self.shard_map(shard.count, by);
        self.steps()
            .into_iter()
            .filter(|s| {
                if s.warmup {
                    map.owns_cell(shard.index, s.cell)
                } else {
                    map.owns(shard.index, s.cell, s.rep)
                }
            })
            .collect()
    }
}
