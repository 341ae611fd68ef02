//! Command-line interface: clap derive, one module per subcommand.

#[macro_use]
mod out;

mod bisect;
mod calibrate;
mod check;
mod common;
mod compare;
mod decide;
mod docs;
mod dwcs;
mod envcmd;
mod export;
mod import;
mod merge;
mod noise;
mod report;
mod restore;
mod run;
mod runs;
mod show;
mod simulate;
mod slurm;
mod trace;
mod trace_export;
mod values;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

pub use common::Exit;

/// The results database when neither --db nor SCHEDLAB_DB names one.
pub const DEFAULT_DB: &str = "schedlab.db";

/// The exit statuses, as `--help` prints them (and the README lists them).
const EXIT_STATUS: &str = "Exit status:
  0        success: every measured cell repetition ran to its end
  1        some cell repetitions failed (workers exited non-zero, died by a signal, timed out
           or could not start: `schedlab show` lists them), or an error after the run began
  2        bad input, or refused before anything on the machine was changed
  128+N    stopped by signal N (130 for SIGINT, 143 for SIGTERM); finished cells are kept";

/// A laboratory for the Linux schedulers: run scheduling experiments from a TOML file,
/// store every measurement in SQLite, and show, export and compare the results.
#[derive(Parser, Debug)]
#[command(name = "schedlab", version, about, long_about = None, after_help = EXIT_STATUS)]
pub struct Cli {
    /// SQLite database for results.
    #[arg(long, global = true, env = "SCHEDLAB_DB", default_value = DEFAULT_DB)]
    pub db: PathBuf,
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run an experiment (the built-in quick experiment without FILE).
    Run(run::Args),
    /// Validate an experiment file and print its plan without running anything.
    Check(check::Args),
    /// Show a stored run as tables (the newest without RUN).
    Show(show::Args),
    /// Export a run's per-process samples (or per-job records) as a file other tools read.
    Export(export::Args),
    /// Write an HTML report of a run (figures as SVG and PNG beside it) into a new directory.
    Report(report::Args),
    /// Compare two runs cell by cell (a verdict per cell and figure: regressed, improved,
    /// same or undecided), or one run's levels of an axis (--by policy).
    Compare(compare::Args),
    /// Find the commit that made an experiment slower: each step builds a revision in a git
    /// worktree and runs the experiment against the good one, judged by the verdicts.
    Bisect(bisect::Args),
    /// Measure this machine's A/A noise floor for an experiment: two identical arms,
    /// interleaved; `compare` judges against it.
    Noise(noise::Args),
    /// List stored runs.
    Runs,
    /// Print what this machine allows: privileges, RT throttling, cgroups, kernel, CPUs.
    Env(envcmd::Args),
    /// Undo what an interrupted or killed schedlab left on this machine (cgroups, files).
    Restore(restore::Args),
    /// Measure this machine's overheads (release latency, context switch, tick, release,
    /// the live dispatchers' decision cost) and store them for the overhead-aware tests.
    Calibrate(calibrate::Args),
    /// Simulate an experiment (discrete-event model of the schedulers) and store it as a run with mode sim.
    Simulate(simulate::Args),
    /// The live DWCS/EDF dispatchers of a running experiment (`dwcs status`).
    Dwcs(dwcs::Args),
    /// What the kernel's scheduler trace of a run's cells says, per worker (runs made with --trace).
    Trace(trace::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(docs::CompletionArgs),
    /// Write schedlab's man pages, one per subcommand, into a directory.
    Man(docs::ManArgs),
    /// Turn another tool's task description into an experiment file (`import rt-app`).
    Import(import::Args),
    /// Copy the runs of other databases (a campaign's shards) into one, each run once.
    Merge(merge::Args),
    /// Write (or submit) a Slurm job array that runs an experiment's shards, one node each, and a merge job after it.
    Slurm(slurm::Args),
}

/// Parses the command line and runs the subcommand.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    schedlab_sys::phases::mark("arguments");
    // Commands that only print die quietly when their reader goes away (`schedlab env |
    // head`), as cat does; println! would panic instead. run and simulate keep ignoring
    // SIGPIPE: a closed pipe must not kill an engine mid-cell.
    if !matches!(
        cli.cmd,
        Cmd::Run(_)
            | Cmd::Noise(_)
            | Cmd::Bisect(_)
            | Cmd::Simulate(_)
            | Cmd::Restore(_)
            | Cmd::Calibrate(_)
    ) {
        // SAFETY: restoring the default disposition of one signal, before any thread exists.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let code = match cli.cmd {
        Cmd::Run(a) => run::run(&cli.db, a),
        Cmd::Check(a) => check::run(&cli.db, a),
        Cmd::Show(a) => show::run(&cli.db, a),
        Cmd::Export(a) => export::run(&cli.db, a),
        Cmd::Report(a) => report::run(&cli.db, a),
        Cmd::Compare(a) => compare::run(&cli.db, a),
        Cmd::Noise(a) => noise::run(&cli.db, a),
        Cmd::Bisect(a) => bisect::run(&cli.db, a),
        Cmd::Runs => runs::run(&cli.db),
        Cmd::Env(a) => envcmd::run(&cli.db, a),
        Cmd::Restore(a) => restore::run(a),
        Cmd::Calibrate(a) => calibrate::run(&cli.db, a),
        Cmd::Simulate(a) => simulate::run(&cli.db, a),
        Cmd::Dwcs(a) => dwcs::run(a),
        Cmd::Trace(a) => trace::run(&cli.db, a),
        Cmd::Completions(a) => docs::completions(a),
        Cmd::Man(a) => docs::man(a),
        Cmd::Import(a) => import::run(a),
        Cmd::Merge(a) => merge::run(a),
        Cmd::Slurm(a) => slurm::run(a),
    }?;
    out::flush()?;
    Ok(code)
}
