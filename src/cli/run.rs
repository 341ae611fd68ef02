//! `schedlab run`: validate, check privileges, then run every cell repetition, storing
//! each as it finishes.

use super::common::load_spec;
use indicatif::{ProgressBar, ProgressStyle};
use schedlab_model::CellRecord;
use schedlab_session::slurm::shell_word;
use schedlab_session::{Ended, MeasureOptions, Session};
use schedlab_spec::{Plan, Step};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `schedlab run`.
#[derive(clap::Args, Debug)]
// `--campaign` names a shard's campaign, so it needs `--shard`; shards of one campaign must
// share one plan, so none leaves out what its own machine cannot run.
#[command(mut_arg("campaign", |a| a.requires("shard")))]
#[command(mut_arg("skip_unavailable", |a| a.conflicts_with("shard")))]
pub struct Args {
    /// Experiment file (TOML). Without it, the built-in quick experiment runs.
    pub file: Option<PathBuf>,
    /// Finish the newest interrupted run of this same experiment instead of starting anew.
    #[arg(long)]
    pub resume: bool,
    /// Keep the experiment's files afterwards.
    #[arg(long)]
    pub keep_files: bool,
    /// Confirm that an I/O experiment may write files on (and change the I/O scheduler of)
    /// this real disk, as `confirm_device` in the spec does. Never raw writes.
    #[arg(long, value_name = "NAME")]
    pub yes_device: Option<String>,
    /// Run only shard K of N (K from 0): a disjoint part of the cell repetitions, balanced
    /// by estimated work and the same on every machine; the run is part of a campaign.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<schedlab_spec::ShardSpec>,
    #[command(flatten)]
    pub flags: super::common::RunFlags,
    #[command(flatten)]
    pub skip: super::common::SkipFlag,
    #[command(flatten)]
    pub decide: super::decide::DecideArgs,
    /// No progress, no tables: only the run's one-line summary (and errors).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Draws a run on the terminal: a progress bar when stderr is one, else a line per step.
pub(super) struct Terminal {
    bar: Option<ProgressBar>,
    quiet: bool,
    started: std::time::Instant,
}

impl Terminal {
    pub(super) fn new(quiet: bool) -> Terminal {
        Terminal { bar: None, quiet, started: std::time::Instant::now() }
    }

    fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
    }

    /// A bar of `len` things (its indicatif `template`), when stderr is a terminal and not
    /// quiet.
    fn start_bar(&mut self, len: usize, template: &str) {
        self.bar = (!self.quiet && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(len as u64);
            b.set_style(ProgressStyle::with_template(template).expect("valid template"));
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
    }
}

impl schedlab_runner::Progress for Terminal {
    fn step_started(&mut self, plan: &Plan, step: &Step, done: usize, total: usize) {
        let cell = &plan.cells[step.cell as usize];
        let what = format!(
            "{} rep {}{}",
            cell.key,
            step.rep + 1,
            if step.warmup { " (warm-up)" } else { "" }
        );
        match &self.bar {
            Some(b) => {
                // Adaptive repetitions add steps as cells need them.
                b.set_length(total as u64);
                b.set_position(done as u64);
                b.set_message(what);
            }
            None if !self.quiet => eprintln!(
                "{}",
                schedlab_session::eta::step_line(&what, done, total, self.started.elapsed())
            ),
            None => {}
        }
    }

    fn step_finished(&mut self, rec: &CellRecord) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
        if let Some(m) = &rec.message {
            self.say(&format!("{} rep {}: {m}", rec.params.key, rec.rep + 1));
        }
    }

    fn warn(&mut self, msg: &str) {
        self.say(&format!("warning: {msg}"));
    }
}

impl schedlab_session::Observer for Terminal {
    fn note(&mut self, line: &str) {
        eprintln!("{line}");
    }

    fn begin(&mut self, steps: usize) {
        self.started = std::time::Instant::now();
        self.start_bar(
            steps,
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells  ETA {eta}  {msg}",
        );
    }

    fn detail(&mut self, line: &str) {
        if !self.quiet {
            self.say(line);
        }
    }

    fn skipped(&mut self, line: &str) {
        match self.quiet {
            true => eprintln!("{line}"),
            false => self.say(line),
        }
    }

    fn begin_sets(&mut self, sets: usize) {
        self.start_bar(sets, "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} sets  ETA {eta}");
    }

    fn sets_stored(&mut self, n: usize) {
        if let Some(b) = &self.bar {
            b.inc(n as u64);
        }
    }

    fn cell_sets_done(&mut self, line: &str) {
        if self.bar.is_none() && !self.quiet {
            eprintln!("{line}");
        }
    }

    fn end(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// The command that resumes this run, ready to paste: the same database and file.
fn resume_command(db: &Path, file: Option<&Path>) -> String {
    resume_command_of("run", db, file)
}

/// [`resume_command`] of subcommand `sub` (`run`, `simulate`).
pub(super) fn resume_command_of(sub: &str, db: &Path, file: Option<&Path>) -> String {
    let mut cmd = String::from("schedlab");
    if db != Path::new(super::DEFAULT_DB) {
        cmd.push_str(&format!(" --db {}", shell_word(&db.display().to_string())));
    }
    cmd.push_str(&format!(" {sub}"));
    if let Some(f) = file {
        cmd.push_str(&format!(" {}", shell_word(&f.display().to_string())));
    }
    cmd.push_str(" --resume");
    cmd
}

/// [`resume_command`] for a shard: its place and campaign too.
fn resume_shard_command(db: &Path, a: &Args) -> String {
    let mut cmd = resume_command(db, a.file.as_deref());
    if let Some(s) = a.shard {
        cmd.push_str(&format!(" --shard {s}"));
    }
    if let Some(c) = &a.flags.campaign {
        cmd.push_str(&format!(" --campaign {c}"));
    }
    for w in a.decide.to_words() {
        cmd.push_str(&format!(" {}", shell_word(&w)));
    }
    cmd
}

/// The session's options, as the command line gives them.
fn options(a: &Args) -> MeasureOptions {
    MeasureOptions {
        builtin: a.file.is_none(),
        skip_unavailable: a.skip.skip_unavailable,
        resume: a.resume,
        shard: a.shard,
        campaign: a.flags.campaign.clone(),
        scale: a.flags.scale,
        repetitions: a.flags.repetitions,
        dir: a.flags.dir.clone(),
        keep_files: a.keep_files,
        yes_device: a.yes_device.clone(),
        timeout_s: a.flags.timeout,
        allow_unthrottled: a.flags.rt.allow_unthrottled,
        no_engine_rt: a.flags.rt.no_engine_rt,
        escape_limits: a.flags.rt.escape_limits,
        until: a.decide.until(),
    }
}

/// Runs `schedlab run`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    run_with(db, a, |_| {}).map(|(code, _)| code)
}

/// Runs `schedlab run` with `tweak` applied to the loaded spec (`noise` doubles the
/// repetitions and interleaves them): the exit status, and the run's id when it ended
/// complete (with or without failed repetitions).
pub(super) fn run_with(
    db: &Path,
    a: Args,
    tweak: impl FnOnce(&mut schedlab_spec::Spec),
) -> anyhow::Result<(ExitCode, Option<i64>)> {
    schedlab_session::db::check_dir(db)?;
    let mut spec = if a.resume {
        load_spec(a.file.as_deref(), None, None)?
    } else {
        load_spec(a.file.as_deref(), a.flags.scale, a.flags.repetitions)?
    };
    tweak(&mut spec);
    schedlab_sys::phases::mark("spec");
    let session = Session::new(db, resume_shard_command(db, &a));
    if !a.resume {
        if let Some(how) = a.flags.trace {
            spec.plan.trace.all = true;
            spec.plan.trace.mode = how.mode();
            spec.plan.trace.timeline.clear();
        }
        if let Some(kb) = a.flags.trace_buffer_kb {
            spec.plan.trace.buffer_kb = Some(kb);
        }
    }
    let o = options(&a);
    let mut terminal = Terminal::new(a.quiet);
    let prepared = session.prepare(spec, &o, &mut terminal)?;
    // Before any thread exists, so every thread inherits the mask.
    schedlab_runner::signals::block();
    let m = session.measure(prepared, &o, &mut schedlab_runner::Engine, &mut terminal)?;
    let run_id = m.run_id;
    match m.ended {
        Ended::Complete { failed, measured, summary, .. } => {
            if !a.quiet {
                super::show::print_run(&m.store, run_id)?;
                outln!();
                schedlab_sys::phases::mark("tables");
            }
            if let Some(d) = &m.decision {
                super::decide::print(d, a.quiet)?;
            }
            outln!("{summary}");
            if failed > 0 {
                eprintln!(
                    "run {run_id}: {failed} of {measured} measured cell repetitions FAILED and are left out of the figures (`schedlab show {run_id}` lists them); exit status 1"
                );
                return Ok((ExitCode::from(1), Some(run_id)));
            }
            Ok((ExitCode::SUCCESS, Some(run_id)))
        }
        Ended::Interrupted { signal, stored } => {
            eprintln!(
                "interrupted by signal {signal}: workers killed; {stored} finished cell repetitions of run {run_id} are stored. Finish it with `{}`",
                session.resume_command
            );
            Ok((super::common::stopped_by(signal), None))
        }
    }
}
