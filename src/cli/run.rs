//! `schedlab run`: validate, check privileges, then run every cell repetition, storing
//! each as it finishes.

use super::common::{bad_input, load_spec, open_existing, open_store};
use indicatif::{ProgressBar, ProgressStyle};
use schedlab_model::{CellRecord, Mode};
use schedlab_runner::{Ending, Observer, Options};
use schedlab_spec::{Plan, Step};
use schedlab_store::RunStatus;
use schedlab_sys::{env, Root};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `schedlab run`.
#[derive(clap::Args, Debug)]
// `--campaign` names a shard's campaign, so it needs `--shard`.
#[command(mut_arg("campaign", |a| a.requires("shard")))]
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
    /// No progress, no tables: only the run's one-line summary (and errors).
    #[arg(long, short)]
    pub quiet: bool,
}

struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
    warnings: Vec<String>,
    started: std::time::Instant,
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
            None if !self.quiet => {
                eprintln!("{}", super::eta::step_line(&what, done, total, self.started.elapsed()))
            }
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
fn check_cgroups(spec: &schedlab_spec::Spec, root: &Root) -> anyhow::Result<()> {
    let groups = || spec.plan.cells.iter().flat_map(|c| &c.groups);
    let Some(g) = groups().find(|g| g.cgroup.any()) else { return Ok(()) };
    let refuse = |g: &str, msg: String| bad_input(spec.cgroup_error(g, msg).to_string());
    let Some(h) = schedlab_sys::cgroup::detect(root) else {
        return Err(refuse(
            &g.name,
            format!("group \"{}\" asks for cgroup settings, but this machine has no usable cgroup hierarchy", g.name),
        ));
    };
    for g in groups() {
        h.check(&(&g.cgroup).into())
            .map_err(|e| refuse(&g.name, format!("group \"{}\": {e}", g.name)))?;
    }
    Ok(())
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
    cmd
}

/// A path as one shell word: as it is when it has nothing a shell would split or expand,
/// else single-quoted.
pub(super) fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Stores a finished cell repetition, retrying a database that is busy or failing; when it
/// still refuses, the record goes to the run's spool file beside it, so nothing measured is
/// lost. Returns the database's error when the record was spooled.
fn keep(
    store: &mut schedlab_store::Store,
    spool: &Path,
    run_id: i64,
    rec: &CellRecord,
) -> anyhow::Result<Option<String>> {
    let mut last = None;
    for pause in [Duration::ZERO, Duration::from_secs(1), Duration::from_secs(3)] {
        std::thread::sleep(pause);
        match store.insert_cell(run_id, rec) {
            Ok(_) => return Ok(None),
            Err(e) => last = Some(e.to_string()),
        }
    }
    let why = last.unwrap_or_default();
    schedlab_store::spool::append(spool, run_id, rec).map_err(|e| {
        anyhow::anyhow!(
            "cell {} rep {} could neither be stored ({why}) nor spooled to {} ({e})",
            rec.params.key,
            rec.rep + 1,
            spool.display()
        )
    })?;
    Ok(Some(why))
}

/// The stored run `--resume` continues: the newest unfinished run of this same spec text.
/// Its plan (scale, repetitions) is the stored one, so resuming needs nothing but the spec;
/// options given again must agree with it.
fn resumed_run(
    store: &schedlab_store::Store,
    db: &Path,
    spec: &schedlab_spec::Spec,
    a: &Args,
) -> anyhow::Result<(i64, Plan)> {
    let row = match a.shard {
        Some(shard) => {
            super::shard::resumable(store, &spec.hash, shard, a.flags.campaign.as_deref())?
        }
        None => store.resumable_by_hash(&spec.hash)?.ok_or_else(|| {
            bad_input(format!(
                "nothing to resume: no unfinished run of this experiment file in {}",
                db.display()
            ))
        })?,
    };
    let plan: Plan = serde_json::from_str(&row.plan_json).map_err(|e| {
        anyhow::anyhow!(
            "run {} was stored by another version of schedlab and cannot be resumed: {e}",
            row.id
        )
    })?;
    if let Some(f) = a.flags.scale.filter(|f| *f != plan.scale) {
        return Err(bad_input(format!(
            "run {} was made at scale {}, not {f}: --resume takes the scale from the stored run (drop --scale)",
            row.id, plan.scale
        )));
    }
    if let Some(r) = a.flags.repetitions {
        let mut asked = plan.clone();
        super::common::apply_repetitions(&mut asked, r);
        if (asked.repetitions, asked.adaptive) != (plan.repetitions, plan.adaptive) {
            return Err(bad_input(format!(
                "run {} was made with {}, not {}: --resume takes them from the stored run (drop --repetitions)",
                row.id,
                super::common::repetitions_label(&plan),
                super::common::repetitions_label(&asked)
            )));
        }
    }
    Ok((row.id, plan))
}

/// The run's one line at its end (all `--quiet` prints): what ran, how long it took, what
/// failed, how adaptive cells ended, what says the machine was noisy, and where the tables are.
/// The counts are the failed and measured cell repetitions, and those a resumed run found.
fn summary(
    store: &schedlab_store::Store,
    run_id: i64,
    status: &RunStatus,
    (failed, measured, before): (usize, usize, Option<usize>),
    took: Duration,
    warnings: usize,
    cpus: usize,
) -> anyhow::Result<String> {
    let cells = store
        .done_steps(run_id)?
        .iter()
        .map(|s| s.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    // A resumed run ran only what was missing: say so, beside the run's whole count.
    let reps = match before {
        Some(b) => format!(
            "ran {} ({measured} in the run, {b} from before)",
            plural(measured.saturating_sub(b), "measured cell repetition")
        ),
        None => plural(measured, "measured cell repetition"),
    };
    let mut line = format!("run {run_id} {status}: {}, {reps}", plural(cells, "cell"));
    if failed > 0 {
        line.push_str(&format!(" ({failed} FAILED)"));
    }
    line.push_str(&format!(" in {}", super::eta::clock(took)));
    let outcomes = store.repetition_outcomes(run_id)?;
    if let Some(o) = outcomes.values().next() {
        let missed = outcomes.values().filter(|o| !o.reached).count();
        line.push_str(&format!(
            "; adaptive: {} of {} cells within ±{}% of the mean",
            outcomes.len() - missed,
            outcomes.len(),
            o.target.ci_pct
        ));
        if missed > 0 {
            line.push_str(&format!(", {missed} not (marked in the tables)"));
        }
    }
    if warnings > 0 {
        line.push_str(&format!("; {}", plural(warnings, "warning")));
    }
    // Judged over every stored repetition (a resumed run's earlier ones too), as `show` and
    // `report` judge it; its own line comes before this one when the tables are printed.
    let noise = schedlab_analysis::noise::noise(&store.cells(run_id)?, cpus);
    let evidence = schedlab_report::noise::evidence(&noise);
    if !evidence.is_empty() {
        line.push_str(&format!(
            "; results may be inaccurate: {} (rerun on a quiet machine)",
            evidence.join(", ")
        ));
    }
    line.push_str(&format!("; tables: schedlab show {run_id}"));
    Ok(line)
}

/// The line that says which cells of the built-in experiment were left out, and why.
fn skipped_line(why: &str, keys: &[String]) -> String {
    let cells = if keys.len() == 1 { "cell" } else { "cells" };
    format!("skipped {} {cells} (not run, not failed), {why}: {}", keys.len(), keys.join(", "))
}

/// Runs `schedlab run`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    super::common::check_db_dir(db)?;
    let mut spec = if a.resume {
        load_spec(a.file.as_deref(), None, None)?
    } else {
        load_spec(a.file.as_deref(), a.flags.scale, a.flags.repetitions)?
    };
    let resume_cmd = resume_shard_command(db, &a);
    if let Some(c) = &a.flags.campaign {
        super::shard::check_campaign(c)?;
    }
    // For --resume the database must exist already; look the run up before checking the
    // plan, which comes from it.
    let resumed = if a.resume {
        let store = open_existing(db)?;
        let (id, plan) = resumed_run(&store, db, &spec, &a)?;
        spec.plan = plan;
        Some((store, id))
    } else {
        None
    };
    if let Some(how) = a.flags.trace.filter(|_| !a.resume) {
        spec.plan.trace.all = true;
        spec.plan.trace.mode = how.mode();
        spec.plan.trace.timeline.clear();
    }
    if let Some(kb) = a.flags.trace_buffer_kb.filter(|_| !a.resume) {
        spec.plan.trace.buffer_kb = Some(kb);
    }
    let root = Root::default();
    let caps = env::capabilities(&root);
    // The built-in experiment is not the user's choice: what this user may not run is left
    // out by name instead of refusing the whole run (a user's own file is refused, located).
    let left_out =
        if a.file.is_none() && !a.resume { spec.leave_out_refused(&caps) } else { Vec::new() };
    if spec.plan.cells.is_empty() {
        let why: Vec<&str> = left_out.iter().map(|(w, _)| w.as_str()).collect();
        return Err(bad_input(format!(
            "this user may run none of the built-in experiment's cells: {}",
            why.join("; ")
        )));
    }
    let plan = &spec.plan;
    spec.check_allowed(&caps).map_err(|e| bad_input(e.to_string()))?;
    spec.check_cpus(&schedlab_sys::cpus::online(&root)).map_err(|e| bad_input(e.to_string()))?;
    spec.check_paths(a.flags.dir.is_some()).map_err(|e| bad_input(e.to_string()))?;
    a.flags
        .dir
        .as_deref()
        .map(|d| schedlab_spec::not_kernel_fs("--dir", d))
        .transpose()
        .map_err(bad_input)?;
    check_cgroups(&spec, &root)?;
    super::machine::check_run(&spec, &root)?;
    let device_line =
        super::common::check_device(&spec, a.flags.dir.as_deref(), a.yes_device.as_deref())?;
    // The settings this run changes are held from here to its end, before they are read: a
    // setting another live run holds is refused (see `hold_settings`).
    let _held = hold_settings(plan, &root).map_err(bad_input)?;
    // Undo what an earlier schedlab killed by SIGKILL or a crash left on this machine, before
    // the values found are read as the ones from before this run.
    let state = schedlab_sys::journal::state_dir();
    for line in schedlab_sys::journal::recover(&state, false) {
        eprintln!("restore: {line}");
    }
    let knob_facts =
        super::machine::check_knobs(&spec, &root).map_err(|e| bad_input(e.to_string()))?;
    if schedlab_spec::unthrottles(plan, &knob_facts) && (a.flags.no_engine_rt || !caps.sys_nice) {
        return Err(bad_input(
            "the spec's knobs weaken RT throttling (allow_rt_unthrottled = true), which needs the engine's watchdog at SCHED_FIFO 99: run as root and without --no-engine-rt",
        ));
    }
    let environment = env::environment(&root);
    if plan.has_realtime() && !env::rt_throttled(&environment) && !a.flags.allow_unthrottled {
        return Err(bad_input(
            "RT throttling is disabled (kernel.sched_rt_runtime_us = -1), so real-time workers could starve this machine. \
             Re-enable it with `sysctl kernel.sched_rt_runtime_us=950000`, or pass --allow-unthrottled if you mean it",
        ));
    }
    let timeout = a
        .flags
        .timeout
        .map(|t| schedlab_spec::bounds::watchdog(t, "--timeout"))
        .transpose()
        .map_err(bad_input)?;
    spec.check_watchdog(timeout.unwrap_or(plan.timeout)).map_err(|e| bad_input(e.to_string()))?;

    let plan_json = serde_json::to_string(plan)?;
    // Adaptive repetitions are decided per cell, so a shard of an adaptive run owns whole cells.
    let shard_by = if plan.adaptive.is_some() {
        schedlab_spec::ShardBy::Cell
    } else {
        schedlab_spec::ShardBy::Step
    };
    let all_steps = match a.shard {
        Some(shard) => plan.shard_steps(shard, shard_by),
        None => plan.steps(),
    };
    let adaptive_cells: Vec<u32> = match a.shard {
        Some(shard) => {
            let map = plan.shard_map(shard.count, shard_by);
            plan.cells.iter().map(|c| c.index).filter(|&c| map.owns_cell(shard.index, c)).collect()
        }
        None => plan.cells.iter().map(|c| c.index).collect(),
    };
    let (store, run_id, steps, stored, before) = match resumed {
        Some((mut store, id)) => {
            // Records a failing database could not take come first.
            let spooled = schedlab_store::spool::path(db, id);
            if spooled.exists() {
                let recs = schedlab_store::spool::read(&spooled, id).map_err(|e| {
                    anyhow::anyhow!("cannot read the spool {}: {e}", spooled.display())
                })?;
                let n = store.import(id, &recs).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot import the spool {} into {} ({e}); it is kept, try again",
                        spooled.display(),
                        db.display()
                    )
                })?;
                schedlab_store::spool::remove(&spooled)?;
                eprintln!("imported {n} cell repetitions of run {id} from {}", spooled.display());
            }
            let done: std::collections::HashSet<(u32, u32, bool)> =
                store.done_steps(id)?.into_iter().collect();
            store.reopen_run(id)?;
            let left: Vec<Step> = all_steps
                .iter()
                .copied()
                .filter(|s| !done.contains(&(s.cell, s.rep, s.warmup)))
                .collect();
            let to_go = match plan.adaptive {
                None => format!("{} of {} cell repetitions already stored, {} to go", done.len(), all_steps.len(), left.len()),
                Some(_) => format!(
                    "{} cell repetitions already stored; {} of the {} that every cell runs first to go, then each cell's decision from its stored ones",
                    done.len(),
                    left.len(),
                    all_steps.len()
                ),
            };
            eprintln!(
                "resuming run {id} (scale {}, {}): {to_go}",
                plan.scale,
                super::common::repetitions_label(plan)
            );
            // An adaptive run continues each cell from its stored records.
            let stored = if plan.adaptive.is_some() { store.cells(id)? } else { Vec::new() };
            let before = done.iter().filter(|(_, _, warmup)| !warmup).count();
            (store, id, left, stored, Some(before))
        }
        None => {
            let store = open_store(db)?;
            let id =
                super::common::create_run(&store, &spec, Mode::Measured, &environment, &plan_json)?;
            let before = super::machine::knobs_before(&knob_facts);
            if !before.is_empty() {
                store.set_knobs_before(id, &before)?;
            }
            if let Some(shard) = a.shard {
                let campaign =
                    a.flags.campaign.clone().unwrap_or_else(|| {
                        super::shard::campaign_id(&spec.hash, plan, shard.count)
                    });
                store.set_campaign(id, &campaign, super::shard::stored(shard))?;
            }
            (store, id, all_steps, Vec::new(), None)
        }
    };

    // Before any thread exists, so every thread inherits the mask.
    schedlab_runner::signals::block();
    let bar = (!a.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(steps.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells  ETA {eta}  {msg}",
            )
            .expect("valid template"),
        );
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    let mut progress =
        Progress { bar, quiet: a.quiet, warnings: Vec::new(), started: std::time::Instant::now() };
    if !a.quiet {
        progress.say(&format!(
            "run {run_id}: {} ({} cells x {}, {} steps{}); results in {}",
            plan.name,
            plan.cells.len(),
            super::common::repetitions_label(plan),
            steps.len(),
            if plan.adaptive.is_some() { " first, then one per cell that needs more" } else { "" },
            db.display()
        ));
        if let (Some(shard), Some(c)) =
            (a.shard, store.run(run_id)?.and_then(|r| r.identity.campaign))
        {
            progress.say(&format!(
                "shard {shard} of campaign {c}: {} of the plan's cell repetitions",
                steps.len()
            ));
        }
        if let Some(line) = &device_line {
            progress.say(line);
        }
    }
    for (why, keys) in &left_out {
        let line = skipped_line(why, keys);
        if a.quiet {
            eprintln!("{line}");
        } else {
            progress.say(&line);
        }
        progress.warnings.push(line);
    }
    for (line, warning) in
        super::common::feasibility_lines(plan, schedlab_sys::cpus::online(&root).len())
    {
        if warning {
            progress.warn(&line);
        } else if !a.quiet {
            progress.say(&line);
        }
    }
    // A machine already busy is named before the first cell, not only judged after the last.
    let look = schedlab_sys::look::look(&root, schedlab_analysis::noise::LOOK);
    if let Some(w) = look
        .and_then(|l| schedlab_analysis::noise::busy(&l, environment.cpus as usize))
        .and_then(|b| schedlab_report::noise::busy_warning(&b))
    {
        progress.warn(&w);
    }
    let mut journal = schedlab_sys::journal::Journal::create(&state).map_err(|e| {
        anyhow::anyhow!("cannot create the restore journal in {}: {e}", state.display())
    })?;
    // Real-time cells in a cgroup without RT runtime: the engine (and so every worker) moves
    // where the kernel allowed a probe child real-time, journaled, and goes back at the end.
    let placed = match caps.rt_placement.as_ref().filter(|_| plan.has_realtime()) {
        Some(p) => {
            schedlab_sys::probe::place(&mut journal, p)?;
            progress.warn(&format!("real-time: {}", p.why));
            true
        }
        None => false,
    };
    let opts = Options {
        // Workers run in their cell's directory: a relative --dir would not reach them.
        dir: a.flags.dir.as_deref().map(std::path::absolute).transpose()?,
        keep_files: a.keep_files,
        timeout,
        // Where real-time is refused (and not placed), the engine cannot be FIFO 99 either.
        engine_rt: caps.sys_nice
            && !a.flags.no_engine_rt
            && caps.rt_refused.is_none()
            && (caps.rt_placement.is_none() || placed),
        root,
        tag: run_id.to_string(),
        ..Options::default()
    };
    let spool = schedlab_store::spool::path(db, run_id);
    let mut spooled: Vec<String> = Vec::new();
    let shared = std::cell::RefCell::new(store);
    // Each cell's outcome is stored as soon as it stops repeating.
    let keep_outcome = |cell, o: &_| shared.borrow().set_repetition_outcome(run_id, cell, o);
    let (result, unrecorded) = schedlab_runner::adaptive::with_source(
        plan,
        &adaptive_cells,
        steps,
        stored,
        keep_outcome,
        |source| {
            let mut run =
                schedlab_runner::Run::start(plan, source, opts, &mut journal, &mut progress)?;
            run.run(&mut schedlab_runner::Engine, &mut |rec: &CellRecord| {
                if let Some(why) = keep(&mut shared.borrow_mut(), &spool, run_id, rec)? {
                    spooled.push(why);
                }
                Ok(())
            })
        },
    );
    let store = shared.into_inner();
    for e in unrecorded {
        progress.warn(&e);
    }
    for e in journal.close() {
        progress.warn(&format!("could not undo {e}; run `schedlab restore`"));
    }
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    if let Some(why) = spooled.first() {
        progress.warn(&format!(
            "{} cell repetitions could not be stored in {} ({why}); they are safe in {}: `{resume_cmd}` imports them first",
            spooled.len(),
            db.display(),
            spool.display()
        ));
    }
    let warnings = progress.warnings.clone();
    // A database that refuses the run's end leaves the run `running`: say how to finish it.
    let finish = |store: &schedlab_store::Store, status: RunStatus| {
        store.finish_run(run_id, &status, &warnings).map_err(|e| {
            anyhow::anyhow!(
                "cannot mark run {run_id} {status} in {} ({e}); `{resume_cmd}` finishes it",
                db.display()
            )
        })
    };
    let ending = match result {
        Ok(e) => e,
        Err(e) => {
            // The database that refused a cell may refuse this too: the cell comes first.
            if let Err(f) = finish(&store, RunStatus::Failed) {
                eprintln!("warning: {f}");
            }
            return Err(anyhow::Error::from(e)
                .context(format!("run {run_id} failed; the cells it finished are stored: `{resume_cmd}` runs the rest")));
        }
    };
    match ending {
        Ending::Complete if !spooled.is_empty() => {
            // The run is complete only once its spool is in the database.
            let _ = store.finish_run(run_id, &RunStatus::Spooled, &warnings);
            Err(anyhow::anyhow!(
                "run {run_id}: {} cell repetitions are in {}, not yet in {} ({}): import them with `{resume_cmd}`",
                spooled.len(),
                spool.display(),
                db.display(),
                spooled[0]
            ))
        }
        Ending::Complete => {
            let (failed, measured) = store.failed_count(run_id)?;
            let status =
                if failed > 0 { RunStatus::CompleteWithFailures } else { RunStatus::Complete };
            finish(&store, status.clone())?;
            if !a.quiet {
                super::show::print_run(&store, run_id)?;
                outln!();
            }
            outln!(
                "{}",
                summary(
                    &store,
                    run_id,
                    &status,
                    (failed, measured, before),
                    progress.started.elapsed(),
                    warnings.len(),
                    environment.cpus as usize
                )?
            );
            if failed > 0 {
                eprintln!(
                    "run {run_id}: {failed} of {measured} measured cell repetitions FAILED and are left out of the figures (`schedlab show {run_id}` lists them); exit status 1"
                );
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        Ending::Interrupted(sig) => {
            finish(&store, RunStatus::Interrupted)?;
            let stored = store.done_steps(run_id)?.len();
            eprintln!(
                "interrupted by signal {sig}: workers killed; {stored} finished cell repetitions of run {run_id} are stored. Finish it with `{resume_cmd}`"
            );
            Ok(ExitCode::from(128 + sig.clamp(1, 127) as u8))
        }
    }
}

/// Holds the run's knobs and, when its cells load sched_ext schedulers, sched_ext itself:
/// two runs that change one setting would each journal the other's value as the one from
/// before, and leave the machine with neither's.
fn hold_settings(
    plan: &schedlab_spec::Plan,
    root: &Root,
) -> Result<schedlab_sys::lock::Holds, schedlab_sys::SysError> {
    let mut holds = schedlab_sys::lock::Holds::new();
    schedlab_sys::knobs::hold(root, &plan.knob_names(), &mut holds)?;
    let scx = schedlab_sys::scx::state_path(root);
    if !plan.scx_programs().is_empty() && scx.exists() {
        holds.take("sched_ext (the cpu_scheduler axis)", &scx)?;
    }
    Ok(holds)
}
