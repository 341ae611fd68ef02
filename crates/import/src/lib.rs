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

/// Why a file cannot be imported: what is wrong, and where in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError(String);

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImportError {}

impl From<String> for ImportError {
    fn from(why: String) -> ImportError {
        ImportError(why)
    }
}

impl From<&str> for ImportError {
    fn from(why: &str) -> ImportError {
        ImportError(why.to_string())
    }
}

#[cfg(test)]
mod tests;
