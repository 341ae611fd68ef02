//! Errors of the dispatcher, its workers and status readers.

use std::path::PathBuf;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// The configuration is invalid; nothing was changed.
    #[error("invalid dispatcher configuration: {0}")]
    Config(String),
    /// A privilege is missing; raised before any setting is changed.
    #[error("{what} needs {capability} (run as root): {source}")]
    Privilege {
        /// What was attempted.
        what: String,
        /// The capability that would allow it.
        capability: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// The region directory is not on a memory file system.
    #[error("{0} is not on tmpfs or ramfs: a shared mapping there is written back and faults; use /dev/shm/schedlab or a tmpfs /run")]
    NotMemoryFs(PathBuf),
    /// A file is not a region this build can read.
    #[error("{path} is not a usable dispatcher region: {why}")]
    BadRegion {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A worker did not attach to its slot in time.
    #[error("worker {pid} (slot {slot}) did not attach to the region within {waited_ms} ms")]
    AttachTimeout {
        /// Slot index.
        slot: usize,
        /// Expected worker pid.
        pid: i32,
        /// How long the dispatcher waited.
        waited_ms: u64,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
}

impl DispatchError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DispatchError::Io { what: what.into(), source }
    }
}
