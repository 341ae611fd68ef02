//! [`Session::measure`]: a measured run from its preflight to its status. Resumed or new,
//! a shard or the whole plan, each finished cell repetition stored (or spooled) before the
//! next starts.

use crate::preflight::Checked;
use crate::resume::Which;
use crate::{db, notes, preflight, resume, shard, Error, Observer, Repetitions, Session, Summary};
use schedlab_model::{CellRecord, Mode};
use schedlab_runner::{Ending, Executor, Options, Progress};
use schedlab_spec::{Plan, ShardSpec, Spec, Step};
use schedlab_store::{RunStatus, Store};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the user asked a measured run to go (the command line's choices, parsed).
#[derive(Debug, Clone, Default)]
pub struct MeasureOptions {
    /// The plan is the built-in experiment: cells this user may not run are left out.
    pub builtin: bool,
    /// Leave out the cells this machine cannot run (`--skip-unavailable`), as the built-in
    /// experiment does, instead of refusing the file whole.
    pub skip_unavailable: bool,
    /// Continue the newest unfinished run of the same spec text.
    pub resume: bool,
    /// Run only this shard of the plan.
    pub shard: Option<ShardSpec>,
    /// The shard's campaign (default: derived from the spec).
    pub campaign: Option<String>,
    /// The scale given on the command line (a resumed run must agree).
    pub scale: Option<f64>,
    /// The repetitions given on the command line (a resumed run must agree).
    pub repetitions: Option<Repetitions>,
    /// Parent directory for the experiment's files.
    pub dir: Option<PathBuf>,
    /// Keep the experiment's files afterwards.
    pub keep_files: bool,
    /// The real disk the user confirmed an I/O experiment may write on.
    pub yes_device: Option<String>,
    /// The per-cell watchdog, seconds.
    pub timeout_s: Option<f64>,
    /// Run real-time cells even though RT throttling is disabled.
    pub allow_unthrottled: bool,
    /// Supervise as an ordinary task instead of at SCHED_FIFO 99.
    pub no_engine_rt: bool,
    /// Move the engine out of a CPU quota or RT runtime limit on its cgroup path for the run.
    pub escape_limits: bool,
    /// Add rounds of repetitions until the levels of an axis are decided (`--until-decided`).
    pub until: Option<crate::decide::Until>,
}

/// A run ready to start: its spec (the stored plan when resumed), the stored run it
/// continues, and what the preflight found.
pub struct Prepared {
    /// The spec whose plan runs.
    pub spec: Spec,
    /// The database and the run it continues, when resumed.
    resumed: Option<(Store, i64)>,
    /// What the preflight found.
    pub checked: Checked,
    /// The busy-machine look, begun before the preflight, ended before the first release.
    pub(crate) look: Option<crate::busy::BusyLook>,
}

/// How a run that got to its end of steps ended.
#[derive(Debug)]
pub enum Ended {
    /// Every step ran (some may have failed).
    Complete {
        /// `complete` or `complete with failures`.
        status: RunStatus,
        /// Failed measured cell repetitions.
        failed: usize,
        /// Measured cell repetitions stored.
        measured: usize,
        /// The facts of the run's one line at its end.
        summary: Summary,
    },
    /// A stop signal came: the finished steps are stored.
    Interrupted {
        /// The signal.
        signal: i32,
        /// Cell repetitions stored.
        stored: usize,
    },
}

/// A measured run's outcome: the database with the run, and how it ended.
pub struct Measured {
    /// The database, open.
    pub store: Store,
    /// The run's id.
    pub run_id: i64,
    /// How it ended.
    pub ended: Ended,
    /// With `--until-decided`: the verdicts of its last round and how it ended.
    pub decision: Option<crate::decide::Decision>,
}

impl Session {
    /// Finds the stored run `--resume` continues, and gives `spec` its plan: its scale and
    /// repetitions are the stored ones, so options given again must agree with them.
    pub fn resume(&self, spec: &mut Spec, o: &MeasureOptions) -> Result<(Store, i64), Error> {
        let store = db::open_existing(&self.db)?;
        let which = match o.shard {
            Some(s) => Which::Shard(s, o.campaign.as_deref()),
            None => Which::Measured,
        };
        let (row, plan) = resume::find(&store, &self.db, &spec.hash, which)?;
        resume::check_same(row.id, &plan, o.scale, o.repetitions)?;
        spec.plan = plan;
        Ok((store, row.id))
    }

    /// Resumes (when asked) and checks the run against this machine before anything is
    /// changed ([`preflight::check`]); begins the busy-machine look first.
    pub fn prepare(
        &self,
        spec: Spec,
        o: &MeasureOptions,
        observer: &mut dyn Observer,
    ) -> Result<Prepared, Error> {
        let look = crate::busy::BusyLook::start(&self.root);
        let prepared = self.prepare_checked(spec, o, |spec| {
            preflight::check(spec, o, &self.root, &self.state_dir, observer)
        })?;
        Ok(Prepared { look, ..prepared })
    }

    /// [`Session::prepare`] with the machine checked by `check` (a run of the mock executor
    /// gives [`Checked::assumed`]).
    pub fn prepare_checked(
        &self,
        mut spec: Spec,
        o: &MeasureOptions,
        check: impl FnOnce(&mut Spec) -> Result<Checked, Error>,
    ) -> Result<Prepared, Error> {
        if let Some(c) = &o.campaign {
            shard::check_campaign(c)?;
        }
        // For --resume the database must exist already; the run is looked up before the
        // plan is checked, which comes from it.
        let resumed = if o.resume { Some(self.resume(&mut spec, o)?) } else { None };
        if let Some(until) = &o.until {
            crate::decide::design(&spec.plan, until)?;
            // Both arms of every pair interleaved, so drift hits them alike.
            if !o.resume {
                spec.plan.order = schedlab_spec::Order::Random;
            }
        }
        let checked = check(&mut spec)?;
        Ok(Prepared { spec, resumed, checked, look: None })
    }

    /// Runs the prepared run's steps with `executor` (the engine, or a mock), storing each
    /// record as it finishes; says what happens through `observer`. Call
    /// [`schedlab_runner::signals::block`] first, before any thread exists.
    pub fn measure(
        &self,
        p: Prepared,
        o: &MeasureOptions,
        executor: &mut dyn Executor,
        observer: &mut dyn Observer,
    ) -> Result<Measured, Error> {
        let started = Instant::now();
        let Prepared { spec, resumed, checked, look } = p;
        let plan = &spec.plan;
        let part = shard::part(plan, o.shard);
        let cpus = checked.environment.cpus as usize;
        let mut tally =
            Tally { inner: observer, warnings: Vec::new(), look: look.map(|l| (l, cpus)) };
        let (store, run_id, steps, stored, before) =
            self.open_run(resumed, &spec, o, &checked, part.steps, tally.inner)?;
        schedlab_sys::phases::mark("store");
        self.introduce(&mut tally, &store, run_id, plan, o, &checked, steps.len())?;
        let decider = crate::decide::Decider::of_run(
            &store,
            plan,
            o.until.as_ref(),
            &checked.environment,
            run_id,
        )?;
        if let Some(d) = &decider {
            tally.inner.detail(&d.intro());
        }
        let opts = Options {
            // Workers run in their cell's directory: a relative --dir would not reach them.
            dir: o.dir.as_deref().map(std::path::absolute).transpose()?,
            keep_files: o.keep_files,
            timeout: checked.timeout,
            engine_rt: checked.engine_rt,
            root: self.root.clone(),
            tag: run_id.to_string(),
            ..Options::default()
        };
        let mut journal = schedlab_sys::journal::Journal::create(&self.state_dir).map_err(|e| {
            Error::Failed(format!(
                "cannot create the restore journal in {}: {e}",
                self.state_dir.display()
            ))
        })?;
        // Real-time cells in a cgroup without RT runtime: the engine (and so every worker)
        // moves where the probe child was allowed real-time, journaled, back at the end.
        if let Some(p) = &checked.rt_placement {
            schedlab_sys::probe::place(&mut journal, p)
                .map_err(|e| Error::Failed(format!("cannot place the engine: {e}")))?;
            tally.warn(&format!("real-time: {}", p.why));
        }
        // Out of the limits on its cgroup path when asked (--escape-limits), journaled alike.
        if let Some(e) = &checked.limits.escape {
            schedlab_sys::quota::escape(&mut journal, e).map_err(|e| {
                Error::Failed(format!("cannot move the engine out of its limits: {e}"))
            })?;
        }
        let spool = schedlab_store::spool::path(&self.db, run_id);
        let mut spooled: Vec<String> = Vec::new();
        let shared = RefCell::new(store);
        // Each cell's outcome is stored as soon as it stops repeating.
        let keep_outcome = |cell, o: &_| shared.borrow().set_repetition_outcome(run_id, cell, o);
        let (result, unrecorded, decision) = crate::decide::with_source(
            decider.as_ref(),
            (plan, &part.cells),
            steps,
            stored,
            keep_outcome,
            |source| {
                let mut run =
                    schedlab_runner::Run::start(plan, source, opts, &mut journal, &mut tally)?;
                schedlab_sys::phases::mark("engine set-up");
                run.run(executor, &mut |rec: &CellRecord| {
                    if let Some(why) = keep(&mut shared.borrow_mut(), &spool, run_id, rec)? {
                        spooled.push(why);
                    }
                    Ok(())
                })
            },
        );
        schedlab_sys::phases::mark("cells and engine undo");
        let store = shared.into_inner();
        for e in unrecorded {
            tally.warn(&e);
        }
        for e in journal.close() {
            tally.warn(&format!("could not undo {e}; run `schedlab restore`"));
        }
        schedlab_sys::phases::mark("journal");
        tally.inner.end();
        if let Some(why) = spooled.first() {
            tally.warn(&format!(
                "{} cell repetitions could not be stored in {} ({why}); they are safe in {}: `{}` imports them first",
                spooled.len(),
                self.db.display(),
                spool.display(),
                self.resume_command
            ));
        }
        let end = End { session: self, store, run_id, warnings: tally.warnings };
        let ending = match result {
            Ok(e) => e,
            Err(e) => return Err(end.failed(e, tally.inner)),
        };
        let ended = match ending {
            Ending::Complete if !spooled.is_empty() => return Err(end.spooled(&spool, &spooled)),
            Ending::Complete => end.complete(before, started, checked.environment.cpus as usize)?,
            Ending::Interrupted(signal) => {
                end.finish(RunStatus::Interrupted)?;
                Ended::Interrupted { signal, stored: end.store.done_steps(run_id)?.len() }
            }
        };
        drop(checked.holds);
        Ok(Measured { store: end.store, run_id, ended, decision })
    }

    /// The run's database and id, the steps it has left, the records a resumed run stored
    /// and how many measured repetitions it found: the resumed run continued, or a new one.
    #[allow(clippy::type_complexity)]
    fn open_run(
        &self,
        resumed: Option<(Store, i64)>,
        spec: &Spec,
        o: &MeasureOptions,
        checked: &Checked,
        steps: Vec<Step>,
        observer: &mut dyn Observer,
    ) -> Result<(Store, i64, Vec<Step>, Vec<CellRecord>, Option<usize>), Error> {
        let plan = &spec.plan;
        Ok(match resumed {
            Some((mut store, id)) => {
                // Records a failing database could not take come first.
                resume::import_spool(&mut store, &self.db, id, observer)?;
                let (left, done) = resume::left(&store, id, &steps)?;
                store.reopen_run(id)?;
                observer.note(&resuming_line(plan, id, done.len(), left.len(), steps.len()));
                // An adaptive or deciding run continues each cell from its stored records.
                let stored = if plan.adaptive.is_some() || o.until.is_some() {
                    store.cells(id)?
                } else {
                    Vec::new()
                };
                let before = done.iter().filter(|(_, _, warmup)| !warmup).count();
                (store, id, left, stored, Some(before))
            }
            None => {
                let store = db::open(&self.db)?;
                let id = db::create_run(&store, spec, Mode::Measured, &checked.environment)?;
                let before = preflight::knobs_before(&checked.knob_facts);
                if !before.is_empty() {
                    store.set_knobs_before(id, &before)?;
                }
                if let Some(s) = o.shard {
                    let campaign = o
                        .campaign
                        .clone()
                        .unwrap_or_else(|| shard::campaign_id(&spec.hash, plan, s.count));
                    store.set_campaign(id, &campaign, shard::stored(s))?;
                }
                (store, id, steps, Vec::new(), None)
            }
        })
    }

    /// Says what the run is before its first step: its heading, its shard, its device, the
    /// cells left out and what the feasibility tests say about its task sets.
    #[allow(clippy::too_many_arguments)]
    fn introduce(
        &self,
        tally: &mut Tally,
        store: &Store,
        run_id: i64,
        plan: &Plan,
        o: &MeasureOptions,
        checked: &Checked,
        steps: usize,
    ) -> Result<(), Error> {
        tally.inner.begin(steps);
        tally.inner.detail(&format!(
            "run {run_id}: {} ({} cells x {}, {steps} steps{}); results in {}",
            plan.name,
            plan.cells.len(),
            crate::repetitions_label(plan),
            if plan.adaptive.is_some() { " first, then one per cell that needs more" } else { "" },
            self.db.display()
        ));
        if let (Some(s), Some(c)) = (o.shard, store.run(run_id)?.and_then(|r| r.identity.campaign))
        {
            tally.inner.detail(&format!(
                "shard {s} of campaign {c}: {steps} of the plan's cell repetitions"
            ));
        }
        if let Some(line) = &checked.device_line {
            tally.inner.detail(line);
        }
        for w in &checked.limits.warnings {
            tally.warn(w);
        }
        for line in &checked.limits.notes {
            tally.inner.detail(line);
        }
        for line in preflight::skipped_lines(&checked.left_out) {
            tally.inner.skipped(&line);
            tally.warnings.push(line);
        }
        let cpus = schedlab_sys::cpus::online(&self.root).len();
        for (line, warning) in notes::feasibility_lines(plan, cpus) {
            if warning {
                tally.warn(&line);
            } else {
                tally.inner.detail(&line);
            }
        }
        Ok(())
    }
}

/// What a resumed run says it has left: `done` stored, `left` of `all` to go.
fn resuming_line(plan: &Plan, id: i64, done: usize, left: usize, all: usize) -> String {
    let to_go = match plan.adaptive {
        None => format!("{done} of {all} cell repetitions already stored, {left} to go"),
        Some(_) => format!(
            "{done} cell repetitions already stored; {left} of the {all} that every cell runs first to go, then each cell's decision from its stored ones"
        ),
    };
    format!("resuming run {id} (scale {}, {}): {to_go}", plan.scale, crate::repetitions_label(plan))
}

/// The observer, with the run's warnings counted and kept (they are stored with the run),
/// and the busy-machine look until the first release (on a machine of so many CPUs).
struct Tally<'o> {
    inner: &'o mut dyn Observer,
    warnings: Vec<String>,
    look: Option<(crate::busy::BusyLook, usize)>,
}

impl Tally<'_> {
    /// Ends the look and says what it found: at the first release, or after a first step
    /// that never came to one, so always before any measured work.
    fn end_look(&mut self) {
        if let Some(w) = self.look.take().and_then(|(look, cpus)| look.finish(cpus)) {
            self.warn(&w);
        }
    }
}

impl Progress for Tally<'_> {
    fn step_started(&mut self, plan: &Plan, step: &Step, done: usize, total: usize) {
        self.inner.step_started(plan, step, done, total);
    }

    fn prepared(&mut self) {
        self.end_look();
        self.inner.prepared();
    }

    fn step_finished(&mut self, rec: &CellRecord) {
        self.end_look();
        self.inner.step_finished(rec);
    }

    fn warn(&mut self, msg: &str) {
        self.inner.warn(msg);
        self.warnings.push(msg.to_string());
    }
}

/// A run at its end: the run's status is stored with its warnings.
struct End<'s> {
    session: &'s Session,
    store: Store,
    run_id: i64,
    warnings: Vec<String>,
}

impl End<'_> {
    /// Marks the run `status`; a database that refuses leaves it `running`, so the error
    /// says how to finish it.
    fn finish(&self, status: RunStatus) -> Result<(), Error> {
        self.store.finish_run(self.run_id, &status, &self.warnings).map_err(|e| {
            Error::Failed(format!(
                "cannot mark run {} {status} in {} ({e}); `{}` finishes it",
                self.run_id,
                self.session.db.display(),
                self.session.resume_command
            ))
        })
    }

    /// Every step ran and is stored: the run is marked complete (with failures, when some
    /// failed), and its summary made; `before` measured repetitions were stored before a
    /// resume, the run `started` then.
    fn complete(
        &self,
        before: Option<usize>,
        started: Instant,
        cpus: usize,
    ) -> Result<Ended, Error> {
        let (failed, measured) = self.store.failed_count(self.run_id)?;
        let status = if failed > 0 { RunStatus::CompleteWithFailures } else { RunStatus::Complete };
        self.finish(status.clone())?;
        schedlab_sys::phases::mark("finish");
        let summary = Summary::of(
            &self.store,
            self.run_id,
            &status,
            (failed, measured, before),
            started.elapsed(),
            self.warnings.len(),
            cpus,
        )?;
        Ok(Ended::Complete { status, failed, measured, summary })
    }

    /// The run stopped on `e`: marked failed, the error says how to run the rest.
    fn failed(self, e: schedlab_runner::RunError, observer: &mut dyn Observer) -> Error {
        // The database that refused a cell may refuse this too: the cell comes first.
        if let Err(f) = self.finish(RunStatus::Failed) {
            observer.note(&format!("warning: {f}"));
        }
        Error::context(
            format!(
                "run {} failed; the cells it finished are stored: `{}` runs the rest",
                self.run_id, self.session.resume_command
            ),
            e,
        )
    }

    /// Every step ran, but some records are in the spool: the run is complete only once
    /// its spool is in the database.
    fn spooled(self, spool: &Path, spooled: &[String]) -> Error {
        let _ = self.store.finish_run(self.run_id, &RunStatus::Spooled, &self.warnings);
        Error::Failed(format!(
            "run {}: {} cell repetitions are in {}, not yet in {} ({}): import them with `{}`",
            self.run_id,
            spooled.len(),
            spool.display(),
            self.session.db.display(),
            spooled[0],
            self.session.resume_command
        ))
    }
}

/// Stores a finished cell repetition, retrying a database that is busy or failing; when it
/// still refuses, the record goes to the run's spool file beside it, so nothing measured is
/// lost. Returns the database's error when the record was spooled.
fn keep(
    store: &mut Store,
    spool: &Path,
    run_id: i64,
    rec: &CellRecord,
) -> Result<Option<String>, Error> {
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
        Error::Failed(format!(
            "cell {} rep {} could neither be stored ({why}) nor spooled to {} ({e})",
            rec.params.key,
            rec.rep + 1,
            spool.display()
        ))
    })?;
    Ok(Some(why))
}
