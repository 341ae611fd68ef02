//! Kernel scheduler traces of a cell: a tracefs instance of schedlab's own (`tracefs`), its
//! per-CPU binary buffers read while the cell runs (`capture`), decoded with the kernel's own
//! layout files (`format`, `decode`) into typed events, and the per-worker figures computed
//! from them (`figures`, records in `schedlab_model::trace`).
#![deny(missing_docs)]

pub mod decode;
pub mod format;
pub mod raw;

#[cfg(test)]
mod testpages;
