//! The error of this crate's checks and changes to the machine.

use std::io;

/// A step on the machine that failed, or a request the machine refuses.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A read, write or call failed; `what` names it (a file, a device, a tool).
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// What the kernel said.
        error: io::Error,
    },
    /// The machine cannot do what was asked (a scheduler not offered, a tool missing, a
    /// knob the kernel refused, ...); the text says why and what to do.
    #[error("{0}")]
    Refused(String),
}

impl SysError {
    /// `what` failed with `error`.
    pub fn io(what: impl Into<String>, error: io::Error) -> SysError {
        SysError::Io { what: what.into(), error }
    }

    /// The machine refuses, for the reason `why`.
    pub fn refused(why: impl Into<String>) -> SysError {
        SysError::Refused(why.into())
    }
}
