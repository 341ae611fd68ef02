//! `schedlab bisect EXPERIMENT --repo DIR --good REV --bad REV --build CMD`: the first commit
//! that made the experiment slower, each step an A/B run judged by the verdicts
//! (`schedlab_session::bisect` does the work; this parses and prints).

use schedlab_session::bisect::state::{Outcome, Settings, State};
use schedlab_session::bisect::{self, judge, Found, Request};
use schedlab_session::slurm::shell_word;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab bisect`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  schedlab bisect bench.toml --repo ~/src/app --good v1.2 --bad main --build 'make -j2'\n\n\
A `command` workload's argv names {worktree}, the checkout of the revision measured (argv = [\"{worktree}/build/app\"]).\n\
The state, the worktrees and the build logs are in the repository's .git/schedlab-bisect/."
)]
pub struct Args {
    /// Experiment file (TOML) whose command workloads name `{worktree}`.
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// The git repository.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// A revision that is good (the baseline every step is measured against).
    #[arg(long, required_unless_present = "resume")]
    pub good: Option<String>,
    /// A revision that is bad (slower).
    #[arg(long, required_unless_present = "resume")]
    pub bad: Option<String>,
    /// Build command, run by `sh -c` in each revision's worktree (its output to a log); a
    /// failing build skips the revision. Default: no build.
    #[arg(long, value_name = "CMD", default_value = "true")]
    pub build: String,
    /// The figures judged, separated by commas; a revision is bad when any regressed.
    #[arg(long, short, default_value = "wall", value_delimiter = ',', value_parser = super::values::metrics())]
    pub metric: Vec<String>,
    /// Repetitions per arm of a step's first run.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=500))]
    pub repetitions: u32,
    /// The most repetitions per arm of one step: still undecided there, it counts as good.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(2..=500))]
    pub max_repetitions: u32,
    /// Call a pair `same` when the ratio's 90% interval lies within ±this (`2%` or `0.02`);
    /// default 5%.
    #[arg(long, value_name = "PCT", value_parser = super::compare::fraction)]
    pub same_within: Option<f64>,
    /// The family-wise error rate of each step's verdicts: a bisect is as wrong as its
    /// worst step, so stricter than `compare`'s 0.05.
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// Continue the bisect in progress in the repository, whatever the other arguments say
    /// (the same command line continues it anyway).
    #[arg(long)]
    pub resume: bool,
    /// Forget a bisect in progress and start this one.
    #[arg(long, conflicts_with = "resume")]
    pub reset: bool,
}

/// What the user asked for, with the experiment's path made absolute.
fn request(a: &Args) -> anyhow::Result<Request> {
    let settings = match (&a.file, &a.good, &a.bad) {
        (Some(file), Some(good), Some(bad)) => Some(Settings {
            experiment: std::path::absolute(file)?,
            good: good.clone(),
            bad: bad.clone(),
            build: a.build.clone(),
            figures: a.metric.clone(),
            first: a.repetitions.min(a.max_repetitions),
            max_repetitions: a.max_repetitions,
            same_within: a.same_within,
            alpha: a.alpha,
        }),
        _ => None,
    };
    Ok(Request { repo: a.repo.clone(), settings, resume: a.resume, reset: a.reset })
}

/// One line per step and the runs' warnings on stderr, each kind once (the text before its
/// first ':'): every step's runs would repeat that the machine is busy.
#[derive(Default)]
struct Lines(std::collections::BTreeSet<String>);

impl schedlab_runner::Progress for Lines {
    fn warn(&mut self, msg: &str) {
        if self.0.insert(msg.split(':').next().unwrap_or(msg).to_string()) {
            eprintln!("warning: {msg} (each kind of warning is said once per bisect)");
        }
    }
}

impl schedlab_session::Observer for Lines {
    fn note(&mut self, line: &str) {
        eprintln!("{line}");
    }

    fn skipped(&mut self, line: &str) {
        eprintln!("{line}");
    }
}

/// Runs `schedlab bisect`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let req = request(&a)?;
    let resume = format!(
        "schedlab --db {} bisect --repo {} --resume",
        shell_word(&db.display().to_string()),
        shell_word(&a.repo.display().to_string())
    );
    let session = schedlab_session::Session::new(db, resume.clone());
    // Before any thread exists, so every thread inherits the mask.
    schedlab_runner::signals::block();
    let started = std::time::Instant::now();
    let b = bisect::bisect(&session, &req, &mut schedlab_runner::Engine, &mut Lines::default())?;
    let repo = std::fs::canonicalize(&a.repo)?;
    let (s, rev) = (&b.state, |i: usize| bisect::describe(&repo, &b.state.revs[i]));
    let code = match &b.found {
        Found::Commit(i) => {
            outln!("first bad commit: {}", s.revs[*i]);
            outln!("  {}", rev(*i));
            evidence(s, *i)?;
            ExitCode::SUCCESS
        }
        Found::Among(list) => {
            outln!(
                "the first bad commit is one of these (the others could not be built or measured):"
            );
            for i in list {
                outln!("  {}", rev(*i));
            }
            ExitCode::SUCCESS
        }
        Found::NotRegressed => {
            outln!(
                "no regression: the bad revision {} is not worse than the good one",
                rev(s.revs.len() - 1)
            );
            evidence(s, s.revs.len() - 1)?;
            ExitCode::from(1)
        }
        Found::Stopped(signal) => {
            eprintln!("interrupted by signal {signal}: `{resume}` (or the same command) continues the bisect");
            return Ok(super::common::stopped_by(*signal));
        }
    };
    let skipped = s.tested.iter().filter(|t| t.outcome == Outcome::Skipped).count();
    outln!(
        "{} revisions tested ({skipped} skipped) in {:.0} s; state and build logs in {}",
        s.tested.len(),
        started.elapsed().as_secs_f64(),
        b.dir.display()
    );
    Ok(code)
}

/// The verdict rows of `revs[i]`'s step.
fn evidence(s: &State, i: usize) -> anyhow::Result<()> {
    let Some(t) = s.test_of(i) else { return Ok(()) };
    let runs: Vec<String> = t.runs.iter().map(i64::to_string).collect();
    outln!(
        "  evidence (run {}, {} repetitions per arm, against good {}):",
        runs.join(" + "),
        t.per_arm,
        &s.good[..7]
    );
    for e in &t.evidence {
        outln!("    {}  {}  {}", e.cell, e.judged.verdict.name(), judge::row_text(e));
    }
    Ok(())
}
