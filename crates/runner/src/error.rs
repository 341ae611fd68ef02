//! Why a run stopped before its end. A cell that fails is no error here: it is stored as
//! a failed record and the run goes on.

use schedlab_sys::SysError;

/// Why a [`crate::Run`] could not be set up or go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A file or directory of the run could not be made, read or removed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The experiment device could not be set up; `what` says which step failed.
    #[error("{what}")]
    Device {
        /// The step (creating the image, attaching a loop device, mounting, ...).
        what: String,
        /// What the kernel said.
        #[source]
        error: std::io::Error,
    },
    /// The machine refused a setting the run needs (the device's scheduler, a lock, mkfs).
    #[error(transparent)]
    Sys(#[from] SysError),
    /// One of the plan's fixed knobs could not be set.
    #[error("[knobs] {0}")]
    Knobs(SysError),
    /// The plan may weaken RT throttling, but the engine is not above its workers.
    #[error(
        "the plan may weaken RT throttling (allow_rt_unthrottled), which needs the engine's watchdog at SCHED_FIFO {}: it could not raise itself",
        schedlab_sys::sched::ENGINE_PRIORITY
    )]
    NoWatchdog,
    /// The tracefs could not be found or mounted.
    #[error(transparent)]
    Trace(#[from] schedlab_trace::TraceError),
    /// Input files of a workload could not be made.
    #[error("{what}: {error}")]
    Inputs {
        /// Which files.
        what: String,
        /// What the kernel said.
        error: std::io::Error,
    },
    /// The sink refused a finished record (the caller's own error).
    #[error(transparent)]
    Sink(crate::SinkError),
}
