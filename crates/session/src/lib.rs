//! One run or simulation as a whole, between the engine, the simulator, the store and the
//! CLI: the preflight ([`preflight`]), resuming an unfinished run ([`resume`]), importing
//! its spool, a shard's part of the plan ([`shard`]), the run's status and the facts of its
//! end-of-run line ([`summary`]).
//!
//! hyperfine keeps this layer in `benchmark/scheduler.rs`; here it is [`Session`]:
//! [`Session::measure`] and [`Session::simulate`] (with `--until-decided`, the rounds that
//! decide an axis's levels: [`decide`]). It never parses arguments or prints:
//! what the user should read goes to an [`Observer`], the outcome comes back as a value,
//! and the CLI prints it and chooses the exit status. Its tests drive whole runs with
//! [`schedlab_runner::MockExecutor`].
//!
//! Beside them, what the other commands need of a stored run that is not printing: the
//! run or campaign `show`, `export`, `report` and `compare` read ([`subject`]), a cell
//! repetition as a Perfetto trace ([`trace_export`]), `check`'s estimate ([`estimate`]),
//! the Slurm scripts ([`slurm`]), [`merge`], what `env` says of this machine
//! ([`machine`]) and its A/A noise floor ([`floor`]); [`bisect`] finds the commit of a git
//! repository that made an experiment slower, a run of both arms per step.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bisect;
pub mod busy;
pub mod calibrate;
pub mod db;
pub mod decide;
mod error;
pub mod estimate;
pub mod eta;
pub mod floor;
pub mod gantt;
pub mod knee;
pub mod limits;
pub mod machine;
pub mod measure;
pub mod merge;
pub mod notes;
pub mod preflight;
pub mod repetitions;
pub mod resume;
pub mod shard;
pub mod simulate;
pub mod slurm;
pub mod subject;
pub mod summary;
#[cfg(test)]
mod tests;
pub mod trace_export;
pub mod verdicts;

pub use error::Error;
pub use measure::{Ended, MeasureOptions, Measured, Prepared};
pub use repetitions::{repetitions_label, BadRepetitions, Repetitions};
pub use summary::Summary;

use std::path::{Path, PathBuf};

/// What a run tells the user as it goes: the engine's progress and warnings
/// ([`schedlab_runner::Progress`]) and the session's own lines. The CLI draws them; tests
/// collect them.
pub trait Observer: schedlab_runner::Progress {
    /// A line shown whatever the verbosity: what was restored, imported or resumed.
    fn note(&mut self, _line: &str) {}
    /// The run is recorded and `steps` steps are about to run (the CLI starts its bar).
    fn begin(&mut self, _steps: usize) {}
    /// A line about the run before its first step, shown unless the user asked for quiet.
    fn detail(&mut self, _line: &str) {}
    /// The line that says which cells were left out (counted as a warning, said as it is).
    fn skipped(&mut self, _line: &str) {}
    /// `sets` generated sets are about to be simulated (the CLI starts its bar).
    fn begin_sets(&mut self, _sets: usize) {}
    /// `n` more sets are simulated and stored.
    fn sets_stored(&mut self, _n: usize) {}
    /// Every set of a cell is simulated: the line that says how many were schedulable.
    fn cell_sets_done(&mut self, _line: &str) {}
    /// The steps (or sets) are over (the CLI clears its bar).
    fn end(&mut self) {}
}

/// Now, in Unix seconds (0 on a clock before 1970).
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An observer that ignores everything.
pub struct Quiet;
impl schedlab_runner::Progress for Quiet {}
impl Observer for Quiet {}

/// Where a run keeps its results and its restore journal, and how the user resumes it.
#[derive(Debug, Clone)]
pub struct Session {
    /// The results database.
    pub db: PathBuf,
    /// Where /proc and /sys are read.
    pub root: schedlab_sys::Root,
    /// The restore journal's directory.
    pub state_dir: PathBuf,
    /// The command that resumes this run, as the user would paste it (named in messages).
    pub resume_command: String,
}

impl Session {
    /// A session on database `db`, with the machine's own /proc and /sys and the journal
    /// in its usual directory.
    pub fn new(db: &Path, resume_command: String) -> Session {
        Session {
            db: db.to_path_buf(),
            root: schedlab_sys::Root::default(),
            state_dir: schedlab_sys::journal::state_dir(),
            resume_command,
        }
    }
}

/// Reads and validates a spec (the built-in quick experiment when `file` is None), then
/// applies command-line overrides. Paths in a file resolve against its directory; the
/// built-in experiment's (it has none) would resolve against the current directory.
pub fn load_spec(
    file: Option<&Path>,
    scale: Option<f64>,
    repetitions: Option<Repetitions>,
) -> Result<schedlab_spec::Spec, Error> {
    let parsed = match file {
        Some(p) => {
            let bytes = std::fs::read(p)
                .map_err(|e| Error::Refused(format!("cannot read {}: {e}", p.display())))?;
            let path = p.display().to_string();
            schedlab_spec::decode(&path, &bytes).and_then(|text| {
                schedlab_spec::parse_at(&path, text, &schedlab_spec::spec_dir(&path))
            })
        }
        None => {
            let cwd = std::env::current_dir().map_err(|e| {
                Error::Refused(format!("cannot resolve the current directory: {e}"))
            })?;
            schedlab_spec::parse_at("<built-in quick.toml>", schedlab_spec::BUILTIN_QUICK, &cwd)
        }
    };
    let mut spec = parsed.map_err(Error::refused)?;
    if let Some(f) = scale {
        spec.plan.scale(schedlab_spec::bounds::scale(f).map_err(Error::refused)?);
    }
    if let Some(r) = repetitions {
        r.apply(&mut spec.plan);
        if let Some(why) = schedlab_spec::bounds::too_many_steps(&spec.plan) {
            return Err(Error::Refused(format!("--repetitions {r}: {why}")));
        }
    }
    Ok(spec)
}
