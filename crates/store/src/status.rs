//! A run's status: the words stored in `runs.status`, as an enum.

use std::fmt;

/// How a run stands. Stored as the words [`RunStatus::as_str`] gives (the stored format:
/// they never change); [`RunStatus::parse`] reads any stored word back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// Started and not finished: still going, or its process died before it could say.
    Running,
    /// Every step ran and every cell repetition succeeded.
    Complete,
    /// Every step ran; some cell repetitions failed.
    CompleteWithFailures,
    /// Stopped by a signal: the finished cell repetitions are kept, `--resume` finishes it.
    Interrupted,
    /// The run failed before it finished.
    Failed,
    /// Every step ran, but some records wait in the run's spool file (the database refused them).
    Spooled,
    /// A campaign's summary of its shards' statuses: shown, never stored.
    Campaign(String),
    /// A stored word this version does not write, shown as stored.
    Other(String),
}

impl RunStatus {
    /// The status as stored in `runs.status`.
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::CompleteWithFailures => "complete with failures",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Spooled => "spooled",
            RunStatus::Campaign(s) | RunStatus::Other(s) => s,
        }
    }

    /// Reads a stored status; a word this version does not know is kept as [`RunStatus::Other`].
    pub fn parse(s: &str) -> RunStatus {
        match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "complete with failures" => RunStatus::CompleteWithFailures,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            "spooled" => RunStatus::Spooled,
            other => RunStatus::Other(other.to_string()),
        }
    }

    /// Every step ran and every record is stored (with failed cells or not): nothing to resume.
    pub fn is_complete(&self) -> bool {
        matches!(self, RunStatus::Complete | RunStatus::CompleteWithFailures)
    }

    /// The statuses [`RunStatus::is_complete`] accepts, as stored.
    pub(crate) const COMPLETE: [RunStatus; 2] =
        [RunStatus::Complete, RunStatus::CompleteWithFailures];
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stored_status_reads_back_as_written() {
        for s in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::CompleteWithFailures,
            RunStatus::Interrupted,
            RunStatus::Failed,
            RunStatus::Spooled,
        ] {
            assert_eq!(RunStatus::parse(s.as_str()), s);
        }
        assert_eq!(
            RunStatus::parse("completed by hand"),
            RunStatus::Other("completed by hand".into())
        );
        assert!(!RunStatus::parse("completed by hand").is_complete(), "no prefix match");
        assert_eq!(
            RunStatus::parse("complete with failures").to_string(),
            "complete with failures"
        );
    }
}
