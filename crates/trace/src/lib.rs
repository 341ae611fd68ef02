//! Kernel scheduler traces of a cell: a tracefs instance of schedlab's own (`tracefs`), its
//! per-CPU binary buffers read while the cell runs (`capture`), decoded with the kernel's own
//! layout files (`format`, `decode`) into typed events, and the per-worker figures computed
//! from them (`figures`, records in `schedlab_model::trace`).
#![deny(missing_docs)]

pub mod capture;
pub mod decode;
pub mod format;
pub mod raw;
pub mod tracefs;

#[cfg(test)]
mod testpages;

pub use capture::{Capture, Options};
pub use decode::{decode, Decoded, Event, Kind};
pub use raw::Raw;
pub use tracefs::{Instance, Settings, Tracefs};

/// Why tracing failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A layout file the decoder cannot use.
    #[error(transparent)]
    Format(#[from] format::FormatError),
    /// Tracing is not possible here; the message says what is missing.
    #[error("{0}")]
    Unavailable(String),
    /// Undoing the capture's changes failed; they stay journaled for `schedlab restore`.
    #[error("could not undo: {}; run `schedlab restore`", .0.join("; "))]
    Cleanup(Vec<String>),
}
