//! Kernel scheduler traces of a cell: a tracefs instance of schedlab's own (`tracefs`), its
//! per-CPU binary buffers read while the cell runs (`capture`), decoded with the kernel's own
//! layout files (`format`, `decode`) into typed events, and the per-worker figures computed
//! from them (`figures`, records in `schedlab_model::trace`).
#![deny(missing_docs)]

pub mod capture;
pub mod decode;
pub mod figures;
pub mod format;
pub mod perfetto;
pub mod procs;
pub mod raw;
pub mod tracedat;
pub mod tracefs;

#[cfg(test)]
mod testpages;

pub use capture::{Capture, CaptureOptions};
pub use decode::{decode, Decoded, Event, EventKind};
pub use raw::Raw;
pub use tracefs::{Instance, InstanceSettings, Tracefs};

/// A captured cell's figures: its decoded events over `window` (the whole capture if
/// None), the engine's tasks with the capture's reader added, other tasks classified
/// through /proc; lost events are the most any count says (buffer counters, page flags).
pub fn cell_trace(
    raw: &Raw,
    decoded: &Decoded,
    workers: &[i32],
    engine: &[i32],
    window: Option<figures::TimeSpan>,
) -> schedlab_model::trace::CellTrace {
    let window =
        window.unwrap_or(figures::TimeSpan { start_ns: raw.start_ns, end_ns: raw.stop_ns });
    let mut engine = engine.to_vec();
    if raw.reader_tid > 0 {
        engine.push(raw.reader_tid);
    }
    let lost = raw.lost().max(decoded.stats.missed_counted).max(decoded.stats.missed_pages);
    let root = schedlab_sys::Root::default();
    figures::figures(
        &decoded.events,
        &figures::Roles { workers, engine: &engine },
        window,
        lost,
        |pid, comm| procs::classify(&root, pid, comm),
    )
}

/// Why tracing failed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
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
