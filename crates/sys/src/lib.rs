//! Every Linux control and reader schedlab uses: scheduling attributes of a process,
//! /proc and /sys readers, the machine's environment and this process's privileges.
//!
//! Readers take a [`Root`] so tests can point them at fake trees. This crate decides
//! nothing about what to run.
#![deny(missing_docs)]

pub mod blockdev;
pub mod cgroup;
pub mod cpus;
pub mod env;
mod error;
pub mod exits;
#[cfg(test)]
mod fake;
pub mod journal;
pub mod knobs;
pub mod limits;
pub mod lock;
pub mod look;
pub mod machine;
pub mod phases;
pub mod pmqos;
pub mod probe;
pub mod procfs;
pub mod quota;
pub mod sched;
pub mod scx;
pub mod spawn;

pub use error::SysError;

use std::path::{Path, PathBuf};

/// The filesystem root that /proc and /sys are read under (`/` on a real machine).
#[derive(Debug, Clone)]
pub struct Root(PathBuf);

impl Default for Root {
    fn default() -> Self {
        Root(PathBuf::from("/"))
    }
}

impl Root {
    /// A root at `p` (a fake tree in tests).
    pub fn new(p: impl Into<PathBuf>) -> Self {
        Root(p.into())
    }

    /// The real path of an absolute path like `/proc/stat` under this root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.0.join(abs.trim_start_matches('/'))
    }

    /// Reads a file under the root, trimmed.
    pub fn read(&self, abs: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.path(abs)).map(|s| s.trim().to_string())
    }

    /// Reads and parses a file under the root; None if missing or unparsable.
    pub fn read_parse<T: std::str::FromStr>(&self, abs: &str) -> Option<T> {
        self.read(abs).ok()?.parse().ok()
    }

    /// The root directory itself.
    pub fn dir(&self) -> &Path {
        &self.0
    }
}
