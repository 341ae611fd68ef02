//! A short look at the machine before a run's first cell: what else was using the CPUs
//! (sys reads it from /proc, analysis judges it, report words it).

use crate::StatDelta;

/// What the machine did during a look (from a run's preflight to its first release):
/// /proc/stat's counters, the run queue at its end and the CPU time of every process that
/// used some.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineLook {
    /// /proc/stat's counters over the look.
    pub stat: StatDelta,
    /// Tasks running or runnable at its end besides the one reading (/proc/stat's
    /// procs_running less one); None where the kernel does not report it.
    pub running: Option<u32>,
    /// Ticks (USER_HZ) the looking process and its descendants used: left out of the others'
    /// time.
    pub own_ticks: u64,
    /// Every other process that used CPU time during the look, the most first.
    pub consumers: Vec<Consumer>,
}

/// One process and the CPU time it used during a look.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Process id.
    pub pid: i32,
    /// Command name (/proc/PID/comm: at most 15 bytes).
    pub comm: String,
    /// User and system ticks (USER_HZ) it used during the look, all its threads together.
    pub ticks: u64,
}
