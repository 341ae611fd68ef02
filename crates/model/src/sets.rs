//! One generated task set of a batch (`generate = { sets = N, .. }`) as stored: its
//! parameters, its simulated (or measured) outcome under the cell's scheduler, and the
//! analytical tests' verdicts on it. A batch of a thousand sets per cell is a thousand of
//! these rows, not a thousand cell records.

use serde::{Deserialize, Serialize};

/// One task of a stored set: C, T, D (ns) and its window x/y.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetTask {
    /// Worst-case execution time C, ns.
    pub c_ns: u64,
    /// Period T, ns.
    pub t_ns: u64,
    /// Relative deadline D, ns.
    pub d_ns: u64,
    /// Misses allowed per window.
    pub x: u32,
    /// Window length in deadlines.
    pub y: u32,
}

/// An analytical test's verdict on a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetVerdict {
    /// The test accepts the set.
    Yes,
    /// The test rejects it (an exact test: it is not schedulable).
    No,
    /// A sufficient test could not tell.
    Unknown,
}

impl SetVerdict {
    /// True when the test accepts the set.
    pub fn accepted(self) -> bool {
        self == SetVerdict::Yes
    }
}

/// One set of a cell's batch and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSetRow {
    /// The cell (its index in the plan).
    pub cell_id: u32,
    /// The set's index in the batch, 0-based.
    pub index: u32,
    /// The seed it was generated with.
    pub seed: u64,
    /// The cell's scheduler.
    pub scheduler: String,
    /// The utilisation it was generated for (the cell's point).
    pub utilisation: f64,
    /// Its sum of C/T.
    pub plain_utilisation: f64,
    /// Its DWCS minimum utilisation, sum of (1 - x/y) C/T.
    pub min_utilisation: f64,
    /// The CPUs the set runs on (1, or the CPUs it is partitioned over).
    pub cpus: u32,
    /// Its tasks.
    pub tasks: Vec<SetTask>,
    /// Jobs judged (deadlines passed) over the horizon.
    pub jobs: u64,
    /// Deadline misses.
    pub misses: u64,
    /// Sliding-window violations (more than x misses in some y consecutive deadlines).
    pub violations: u64,
    /// The outcome's verdict: no deadline miss, or under DWCS no window violation.
    pub schedulable: bool,
    /// Each applicable test's verdict, in `schedlab_schedulability::TESTS` order.
    pub tests: Vec<(String, SetVerdict)>,
    /// Why the set has no outcome (it could not be generated or simulated); None when it has.
    pub message: Option<String>,
    /// Each task's per-job records, when the batch asks for them (`job_records = true`).
    pub jobs_log: Option<Vec<crate::jobs::JobLog>>,
}
