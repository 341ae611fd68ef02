//! `schedlab run`: validate, check privileges, then run every cell repetition, storing
//! each as it finishes.

use super::common::{bad_input, load_spec, open_store};
use indicatif::{ProgressBar, ProgressStyle};
use schedlab_model::{CellRecord, Mode};
use schedlab_runner::{Ending, Observer, Options};
use schedlab_spec::{Plan, Step};
use schedlab_store::NewRun;
use schedlab_sys::{env, Root};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `schedlab run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Experiment file (TOML). Without it, the built-in quick experiment runs.
    pub file: Option<PathBuf>,
    /// Multiply every work amount (iterations, bytes) by this factor.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Override the number of measured repetitions per cell.
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// Per-cell watchdog in seconds (overrides the spec's timeout_s).
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Finish the newest interrupted run of this same experiment instead of starting anew.
    #[arg(long)]
    pub resume: bool,
    /// Run real-time cells even though RT throttling is disabled on this machine.
    #[arg(long)]
    pub allow_unthrottled: bool,
    /// Parent directory for the experiment's files (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the experiment's files afterwards.
    #[arg(long)]
    pub keep_files: bool,
    /// Confirm that an I/O experiment may write files on (and change the I/O scheduler of)
    /// this real disk, as `confirm_device` in the spec does. Never raw writes.
    #[arg(long, value_name = "NAME")]
    pub yes_device: Option<String>,
    /// Supervise as an ordinary task instead of at SCHED_FIFO 99. The engine's wake-ups
    /// (one per worker exit) then never preempt workers, but RT workers can delay the
    /// watchdog and the reaping times.
    #[arg(long)]
    pub no_engine_rt: bool,
    /// No progress, no tables: only errors.
    #[arg(long, short)]
    pub quiet: bool,
}

struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
    warnings: Vec<String>,
}

impl Progress {
    fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
    }
}

impl Observer for Progress {
    fn step_started(&mut self, plan: &Plan, step: &Step, done: usize, total: usize) {
        let cell = &plan.cells[step.cell as usize];
        let what = format!("{} rep {}{}", cell.key, step.rep + 1, if step.warmup { " (warm-up)" } else { "" });
        match &self.bar {
            Some(b) => {
                b.set_position(done as u64);
                b.set_message(what);
            }
            None if !self.quiet => eprintln!("[{}/{}] {what}", done + 1, total),
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
        self.warnings.push(msg.to_string());
    }
}

/// Refuses a plan whose cgroup settings this machine cannot honour, before any change.
fn check_cgroups(plan: &Plan, root: &Root) -> anyhow::Result<()> {
    let Some(g) = plan.cells.iter().flat_map(|c| &c.groups).find(|g| g.cgroup.any()) else { return Ok(()) };
    let Some(h) = schedlab_sys::cgroup::detect(root) else {
        return Err(bad_input(format!("group \"{}\" asks for cgroup settings, but this machine has no usable cgroup hierarchy", g.name)));
    };
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        h.check(&(&g.cgroup).into()).map_err(|e| bad_input(format!("group \"{}\": {e}", g.name)))?;
    }
    Ok(())
}

/// Runs `schedlab run`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let spec = load_spec(a.file.as_deref(), a.scale, a.repetitions)?;
    let plan = &spec.plan;
    let root = Root::default();
    let caps = env::capabilities(&root);
    spec.check_allowed(&caps).map_err(|e| bad_input(e.to_string()))?;
    spec.check_cpus(&schedlab_sys::cpus::online(&root)).map_err(|e| bad_input(e.to_string()))?;
    check_cgroups(plan, &root)?;
    super::machine::check_run(&spec, &root)?;
    let device_line = super::common::check_device(&spec, a.dir.as_deref(), a.yes_device.as_deref())?;
    let environment = env::environment(&root);
    if plan.has_realtime() && !env::rt_throttled(&environment) && !a.allow_unthrottled {
        return Err(bad_input(
            "RT throttling is disabled (kernel.sched_rt_runtime_us = -1), so real-time workers could starve this machine. \
             Re-enable it with `sysctl kernel.sched_rt_runtime_us=950000`, or pass --allow-unthrottled if you mean it",
        ));
    }
    let timeout = match a.timeout {
        Some(t) if !(t > 0.0 && t.is_finite()) => {
            return Err(bad_input(format!("--timeout must be a positive number of seconds, got {t}")))
        }
        Some(t) => Some(Duration::from_secs_f64(t)),
        None => None,
    };

    // Undo what an earlier schedlab killed by SIGKILL or a crash left on this machine.
    let state = schedlab_sys::journal::state_dir();
    for line in schedlab_sys::journal::recover(&state, false) {
        eprintln!("restore: {line}");
    }
    let mut store = open_store(db)?;
    let plan_json = serde_json::to_string(plan)?;
    let all_steps = plan.steps();
    let (run_id, steps) = if a.resume {
        let Some(id) = store.resumable(&spec.hash, &plan_json)? else {
            return Err(bad_input(format!(
                "nothing to resume: no unfinished run of this experiment (same file and options) in {}",
                db.display()
            )));
        };
        let done: std::collections::HashSet<(u32, u32, bool)> = store.done_steps(id)?.into_iter().collect();
        store.reopen_run(id)?;
        let left: Vec<Step> = all_steps.iter().copied().filter(|s| !done.contains(&(s.cell, s.rep, s.warmup))).collect();
        eprintln!("resuming run {id}: {} of {} cell repetitions already stored, {} to go", done.len(), all_steps.len(), left.len());
        (id, left)
    } else {
        let cmdline = std::env::args().collect::<Vec<_>>().join(" ");
        let id = store.create_run(&NewRun {
            name: &plan.name,
            mode: Mode::Measured,
            spec_path: &plan.source_path,
            spec_text: &spec.text,
            spec_hash: &spec.hash,
            plan_json: &plan_json,
            scale: plan.scale,
            env: &environment,
            command_line: &cmdline,
        })?;
        (id, all_steps)
    };

    // Before any thread exists, so every thread inherits the mask.
    schedlab_runner::signals::block();
    let bar = (!a.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(steps.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells  ETA {eta}  {msg}")
                .expect("valid template"),
        );
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    let mut progress = Progress { bar, quiet: a.quiet, warnings: Vec::new() };
    if !a.quiet {
        progress.say(&format!(
            "run {run_id}: {} ({} cells x {} repetitions, {} steps); results in {}",
            plan.name,
            plan.cells.len(),
            plan.repetitions,
            steps.len(),
            db.display()
        ));
        if let Some(line) = &device_line {
            progress.say(line);
        }
    }
    for (line, warning) in super::common::feasibility_lines(plan, schedlab_sys::cpus::online(&root).len()) {
        if warning {
            progress.warn(&line);
        } else if !a.quiet {
            progress.say(&line);
        }
    }
    let opts = Options {
        dir: a.dir.clone(),
        keep_files: a.keep_files,
        timeout,
        engine_rt: caps.sys_nice && !a.no_engine_rt,
        root,
        ..Options::default()
    };
    let mut journal = schedlab_sys::journal::Journal::create(&state)
        .map_err(|e| anyhow::anyhow!("cannot create the restore journal in {}: {e}", state.display()))?;
    let result = schedlab_runner::run(plan, &steps, &run_id.to_string(), &opts, &mut journal, &mut progress, &mut |rec: &CellRecord| {
        store.insert_cell(run_id, rec)?;
        Ok(())
    });
    for e in journal.close() {
        progress.warn(&format!("could not undo {e}; run `schedlab restore`"));
    }
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    let warnings = progress.warnings.clone();
    let ending = match result {
        Ok(e) => e,
        Err(e) => {
            store.finish_run(run_id, "failed", &warnings)?;
            return Err(e.context(format!("run {run_id} failed; the cells it finished are stored (resume with --resume)")));
        }
    };
    match ending {
        Ending::Complete => {
            store.finish_run(run_id, "complete", &warnings)?;
            if !a.quiet {
                super::show::print_run(&store, run_id)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Ending::Interrupted(sig) => {
            store.finish_run(run_id, "interrupted", &warnings)?;
            let stored = store.done_steps(run_id)?.len();
            let file = a.file.as_ref().map(|f| format!(" {}", f.display())).unwrap_or_default();
            eprintln!(
                "interrupted by signal {sig}: workers killed; {stored} finished cell repetitions of run {run_id} are stored. Finish it with `schedlab run{file} --resume`{}",
                if a.scale.is_some() || a.repetitions.is_some() { " and the same --scale/--repetitions" } else { "" }
            );
            Ok(ExitCode::from(130))
        }
    }
}
