//! Everything schedlab shows: the per-cell and per-process tables of `schedlab show`
//! (shaped like the seed study's raw-data appendix) and the exporters of
//! `schedlab export`. It draws what analysis computed and never measures anything.
#![deny(missing_docs)]

pub mod export;
pub mod flat;
pub mod tables;

#[cfg(test)]
mod tests;
