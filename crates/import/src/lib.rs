//! Other tools' task descriptions as schedlab experiments. Today: rt-app's JSON ([`json`],
//! read as rt-app writes it), mapped to periodic task sets one per scheduling class
//! ([`rtapp`]) with everything that does not map exactly listed, and written as a spec
//! ([`Imported::header`], [`Imported::body`]). Reading and writing files and checking the
//! written spec are the CLI's (`schedlab import`).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod json;
mod render;
pub mod rtapp;

pub use rtapp::Imported;

#[cfg(test)]
mod tests;
