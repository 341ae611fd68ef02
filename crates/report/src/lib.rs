//! Everything schedlab shows: the per-cell and per-process tables of `schedlab show`
//! (shaped like the seed study's raw-data appendix), the exporters of `schedlab export`,
//! the figures and HTML page of `schedlab report` and the tables of `schedlab compare`
//! (two runs, or one run's levels of an axis).
//! It draws what analysis computed and never measures or computes statistics itself.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bench;
pub mod cells;
pub mod cols;
pub mod compare;
pub mod drivers;
pub mod export;
pub mod flat;
pub mod html;
pub mod hyperfine;
pub mod knee;
pub mod labels;
pub mod limits;
pub mod noise;
pub mod observing;
pub mod output;
pub mod parquet;
pub mod plots;
pub mod sets;
pub mod tables;
pub mod verdicts;
pub mod within;

#[cfg(test)]
mod report_tests;
#[cfg(test)]
mod testdata;
#[cfg(test)]
mod tests;
