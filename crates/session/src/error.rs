//! What stopped a session: a refusal before anything changed, or a failure after.

use schedlab_store::DbError;

/// Why a run or simulation was refused or could not finish. The CLI prints the whole chain
/// and exits with [`Error::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Refused before anything on the machine was changed: bad input.
    #[error("{0}")]
    Refused(String),
    /// A failure, said in full.
    #[error("{0}")]
    Failed(String),
    /// A failure, with what it stopped said first.
    #[error("{what}")]
    Context {
        /// What failed, and what the user can do about it.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The results database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A stored shape could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// A refusal that says what `why` says.
    pub fn refused(why: impl std::fmt::Display) -> Error {
        Error::Refused(why.to_string())
    }

    /// `source`, with `what` said before it.
    pub fn context(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error::Context { what: what.into(), source: source.into() }
    }

    /// The process exit status it stands for: 2 for a refusal, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Refused(_) => 2,
            _ => 1,
        }
    }
}
