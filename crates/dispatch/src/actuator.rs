//! How the dispatcher's choice is enforced on the CPU. The decisions are the same whatever
//! the actuator; only the mechanism that gives the chosen worker the CPU and takes it from
//! the others changes.

use crate::os;
use crate::RUN_PRIORITY;
use std::io;

/// Gives a controlled worker the CPU (`grant`) or takes it away (`park`).
///
/// Methods take `&self`: the dispatcher's loop and its restore guard both hold the actuator.
/// An error whose [`io::Error::raw_os_error`] is ESRCH means the worker is gone.
pub trait Actuator {
    /// Parks worker `pid`: it must not run as a controlled task. Called once for every worker
    /// before the loop, whenever the choice moves away from it, and for every worker when the
    /// run ends (then it must leave the worker as an ordinary task).
    fn park(&self, pid: i32) -> io::Result<()>;

    /// Gives worker `pid` the dispatcher's CPU until it is parked again.
    fn grant(&self, pid: i32) -> io::Result<()>;
}

/// The default actuator: the chosen worker runs at SCHED_FIFO [`RUN_PRIORITY`], every other
/// one is parked at SCHED_OTHER, nice 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct Priorities;

impl Actuator for Priorities {
    fn park(&self, pid: i32) -> io::Result<()> {
        os::set_other(pid)
    }

    fn grant(&self, pid: i32) -> io::Result<()> {
        os::set_fifo(pid, RUN_PRIORITY)
    }
}
