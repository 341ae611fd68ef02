//! schedlab's engine. For each (cell, repetition) of a plan: start N workers that block
//! before their work, apply the cell's policy to each, release them all with one close(2),
//! reap each with wait4, and hand the finished record to a sink (the store) at once.
//!
//! The engine supervises at SCHED_FIFO 99 (workers stop at 98) with reset-on-fork, so
//! its own children start as ordinary tasks and it always preempts them. It never prints:
//! progress and warnings go to a [`Progress`].
//!
//! A [`Run`] is set up once ([`Run::start`]), runs its steps ([`Run::run`]) and undoes its
//! set-up when dropped; its errors are a [`RunError`] (a failed cell is a record, not an error).
#![deny(missing_docs)]

pub mod adaptive;
pub mod device;
mod engine;
mod error;
pub mod knobs;
pub mod mock;
pub mod parse;
pub mod protocol;
pub mod rt;
pub mod signals;
pub mod steps;
pub mod verdict;
pub mod worker;

use engine::failed;
pub use engine::{CellCtx, CellOutcome};
pub use error::RunError;
pub use mock::MockExecutor;
use schedlab_model::CellRecord;
use schedlab_plan::{Cell, Plan, Step, Workload};
use schedlab_sys::journal::{Entry, Journal};
use schedlab_sys::{cgroup, cpus, sched, Root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
pub use steps::{FixedSteps, StepSource};

/// Receives the engine's progress and warnings (the CLI draws them; tests collect them).
pub trait Progress {
    /// A cell repetition is about to start; `done` of `total` steps are finished.
    fn step_started(&mut self, _plan: &Plan, _step: &Step, _done: usize, _total: usize) {}
    /// Every process of the cell repetition under way is prepared and blocked: its release
    /// (its background groups' first, when it has some) comes next.
    fn prepared(&mut self) {}
    /// A cell repetition finished and was stored.
    fn step_finished(&mut self, _rec: &CellRecord) {}
    /// Something the user should know.
    fn warn(&mut self, _msg: &str) {}
}

/// Runs one cell repetition: the real [`Engine`], or a stand-in such as [`MockExecutor`].
pub trait Executor {
    /// Runs `step` of `cell`, the run's `ordinal`-th step, with what the run set up in `cx`.
    fn run_cell(
        &mut self,
        cx: &mut CellCtx,
        cell: &Cell,
        step: &Step,
        ordinal: u32,
    ) -> std::io::Result<CellOutcome>;

    /// The stop signal received so far, asked between steps.
    fn stopped(&mut self) -> Option<i32> {
        signals::stopped()
    }
}

/// The real engine: spawns, applies, releases and reaps the cell's processes.
pub struct Engine;

impl Executor for Engine {
    fn run_cell(
        &mut self,
        cx: &mut CellCtx,
        cell: &Cell,
        step: &Step,
        ordinal: u32,
    ) -> std::io::Result<CellOutcome> {
        engine::run_cell(cx, cell, step, ordinal)
    }
}

/// An observer that ignores everything.
pub struct Quiet;
impl Progress for Quiet {}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Parent of the experiment directory (default: the system temp dir).
    pub dir: Option<PathBuf>,
    /// Keep the experiment directory afterwards.
    pub keep_files: bool,
    /// Per-cell watchdog override.
    pub timeout: Option<Duration>,
    /// Raise the engine to SCHED_FIFO 99 while it supervises (needs CAP_SYS_NICE).
    pub engine_rt: bool,
    /// Where /proc and /sys are read.
    pub root: Root,
    /// The binary to exec as a worker (default: this executable).
    pub exe: Option<PathBuf>,
    /// How long background groups run before the measured groups are released.
    pub background_lead: Duration,
    /// Names the run's experiment directory and processes (the CLI gives the run's id).
    pub tag: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dir: None,
            keep_files: false,
            timeout: None,
            engine_rt: true,
            root: Root::default(),
            exe: None,
            background_lead: Duration::from_millis(200),
            tag: "run".to_string(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every step ran.
    Complete,
    /// SIGINT/SIGTERM/SIGHUP: finished steps were kept.
    Interrupted(i32),
}

/// Creates `parent/schedlab-<tag>-<pid>-<n>` exclusively (mkdir fails on anything already
/// there, symlinks included), so the engine only ever deletes what it created. With a
/// journal, its removal is journaled before the mkdir; a name found taken is retracted.
/// The path is canonical, as mountinfo names a mount inside it.
pub(crate) fn make_experiment_dir(
    parent: &Path,
    tag: &str,
    mut journal: Option<&mut Journal>,
) -> std::io::Result<PathBuf> {
    // Parents that do not exist yet are journaled (outermost first, so the innermost is
    // removed first) before they are made, and removed afterwards if they are still empty.
    let parent = std::path::absolute(parent)?;
    let missing: Vec<&Path> =
        parent.ancestors().take_while(|a| a.symlink_metadata().is_err()).collect();
    for dir in missing.iter().rev() {
        if let Some(j) = journal.as_deref_mut() {
            j.record(Entry::RemoveEmptyDir { path: dir.to_path_buf() })?;
        }
        match std::fs::create_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    let parent = parent.canonicalize()?;
    for n in 0..1000 {
        let p = parent.join(format!("schedlab-{tag}-{}-{n}", std::process::id()));
        if p.symlink_metadata().is_ok() {
            continue;
        }
        if let Some(j) = journal.as_deref_mut() {
            j.record(Entry::RemoveTree { path: p.clone() })?;
        }
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) => {
                if let Some(j) = journal.as_deref_mut() {
                    j.retract()?;
                }
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
    }
    Err(std::io::Error::other("could not create a fresh experiment directory"))
}

/// Puts the engine back to SCHED_OTHER when dropped.
struct RtGuard(bool);

impl Drop for RtGuard {
    fn drop(&mut self) {
        if self.0 {
            let _ = sched::lower_engine();
        }
    }
}

/// Puts the engine's soft RLIMIT_NOFILE back when dropped.
struct NofileGuard(Option<u64>);

impl Drop for NofileGuard {
    fn drop(&mut self) {
        if let Some(soft) = self.0 {
            let _ = schedlab_sys::limits::set_nofile_soft(soft);
        }
    }
}

/// What a sink's refusal of a record is: any error, kept as the run's [`RunError::Sink`].
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// One run of a plan: [`Run::start`] sets it up once (the experiment directory, the device,
/// the engine's RT priority and file limit, the tracefs, the plan's fixed knobs), holds
/// each of them as a field, [`Run::run`] runs the steps, and dropping it undoes them all,
/// whatever way the run ended. Every change to the machine goes through the journal first,
/// so a run killed before its drop is undone by `schedlab restore`.
pub struct Run<'a> {
    plan: &'a Plan,
    source: &'a mut dyn StepSource,
    opts: Options,
    journal: &'a mut Journal,
    observer: &'a mut dyn Progress,
    /// The journal's length before the run changed anything: the drop undoes back to it.
    mark: usize,
    exe: PathBuf,
    files_dir: PathBuf,
    timeout: Duration,
    online: Vec<u32>,
    hierarchy: Option<cgroup::Hierarchy>,
    tag: String,
    device: Option<device::ExpDevice>,
    tracefs: Option<schedlab_trace::Tracefs>,
    fixed_knobs: BTreeMap<String, String>,
    copy_inputs: Vec<PathBuf>,
    copy_input_len: u64,
    done: usize,
    // Dropped after the journal is undone: the engine stays above its workers' settings
    // until they are gone.
    nofile: NofileGuard,
    _rt: RtGuard,
}

impl<'a> Run<'a> {
    /// Sets up the run of `plan`'s steps from `source`: every change is journaled in
    /// `journal`, progress and warnings go to `observer`. Call [`signals::block`] first,
    /// before any thread exists.
    pub fn start(
        plan: &'a Plan,
        source: &'a mut dyn StepSource,
        opts: Options,
        journal: &'a mut Journal,
        observer: &'a mut dyn Progress,
    ) -> Result<Run<'a>, RunError> {
        let mark = journal.entries().len();
        // Absolute: a worker is exec'd after it changed into its cell's directory.
        let exe = std::path::absolute(match &opts.exe {
            Some(e) => e.clone(),
            None => std::env::current_exe()?,
        })?;
        let parent =
            opts.dir.clone().or_else(|| plan.dir.clone()).unwrap_or_else(std::env::temp_dir);
        let exp_dir =
            make_experiment_dir(&parent, &opts.tag, (!opts.keep_files).then_some(&mut *journal))?;
        let online = cpus::online(&opts.root);
        let hierarchy = if plan.cells.iter().any(|c| c.uses_cgroups()) {
            cgroup::detect(&opts.root)
        } else {
            None
        };
        let rt = opts.engine_rt
            && {
                match sched::raise_engine() {
                    Ok(()) => true,
                    Err(e) => {
                        observer.warn(&format!(
                        "the engine could not raise itself to SCHED_FIFO {} ({e}); it supervises as an ordinary task",
                        sched::ENGINE_PRIORITY
                    ));
                        false
                    }
                }
            };
        // The engine watches each process of a cell through a pidfd (engine::reap::Reaper): room
        // for the largest cell, its dispatchers and the engine's own files. Without it, a cell
        // is reaped by walking the process group, as before.
        let want = plan.cells.iter().map(|c| c.processes() as u64).max().unwrap_or(0) + 256;
        let mut run = Run {
            plan,
            timeout: opts.timeout.unwrap_or(plan.timeout),
            tag: format!("r{}-{}", opts.tag, std::process::id()),
            files_dir: exp_dir,
            source,
            opts,
            journal,
            observer,
            mark,
            exe,
            online,
            hierarchy,
            device: None,
            tracefs: None,
            fixed_knobs: BTreeMap::new(),
            copy_inputs: Vec::new(),
            copy_input_len: 0,
            done: 0,
            nofile: NofileGuard(schedlab_sys::limits::raise_nofile(want).unwrap_or(None)),
            _rt: RtGuard(rt),
        };
        // From here on, an early return drops `run`, which undoes what was set up.
        if let Some(d) = &plan.device {
            let dev =
                device::setup(d, plan, &run.files_dir, &run.opts.tag, run.journal, &run.opts.root)?;
            run.files_dir = dev.files_dir.clone();
            run.device = Some(dev);
        }
        // One tracefs for the run (mounted, journaled, only if none is mounted), when any of
        // its cells captures the timeline.
        if run.source.may_trace(plan) && plan.trace.mode.timeline() {
            run.tracefs =
                Some(schedlab_trace::Tracefs::find_or_mount(&run.opts.root, run.journal)?);
        }
        // The plan's fixed knobs, held for the whole run; a run that weakens RT throttling does
        // so only with the engine above its workers.
        if knobs::needs_watchdog(plan) && !rt {
            return Err(RunError::NoWatchdog);
        }
        run.fixed_knobs =
            knobs::set_all(&plan.knobs, run.journal, &run.opts.root).map_err(RunError::Knobs)?;
        Ok(run)
    }

    /// Runs the steps with `executor`, giving each finished record to `sink` before the next
    /// starts. Each cell's changes are undone after it; the run's own, when it is dropped.
    pub fn run(
        &mut self,
        executor: &mut dyn Executor,
        sink: &mut dyn FnMut(&CellRecord) -> Result<(), SinkError>,
    ) -> Result<Ending, RunError> {
        let plan = self.plan;
        let no_devs: Vec<String> = Vec::new();
        loop {
            if let Some(sig) = executor.stopped() {
                return Ok(Ending::Interrupted(sig));
            }
            let Some(step) = self.source.next_step() else { break };
            let step = &step;
            let cell = &plan.cells[step.cell as usize];
            self.observer.step_started(plan, step, self.done, self.source.planned());
            let ordinal = self.done as u32;
            self.done += 1;
            if let Some(input_bytes) = cell.groups.iter().find_map(|g| match g.workload {
                Workload::Copy { input_bytes, .. } => Some(input_bytes),
                _ => None,
            }) {
                self.ensure_inputs(cell.processes() as usize, input_bytes)?;
            }
            let read_dir = self.files_dir.join("read-inputs");
            ensure_read_inputs(&read_dir, cell, plan.seed)?;
            let cell_dir = self.files_dir.join(format!(
                "c{}-{}{}",
                cell.index,
                if step.warmup { "w" } else { "r" },
                step.rep
            ));
            std::fs::create_dir(&cell_dir)?;
            let mut warnings = Vec::new();
            // The cell's I/O scheduler and a cold page cache, then its own knobs: journaled,
            // undone after the cell (or at once when one cannot be set, failing the cell).
            let io_mark = self.journal.entries().len();
            let prepared = match &self.device {
                None => Ok(None),
                Some(d) => {
                    d.prepare_cell(cell.io.as_ref(), self.journal, &self.opts.root).map(Some)
                }
            }
            .and_then(|io| Ok((io, knobs::set_all(&cell.knobs, self.journal, &self.opts.root)?)));
            let (cell_io, cell_knobs) = match prepared {
                Ok(p) => p,
                Err(e) => {
                    for w in self.journal.undo_to(io_mark) {
                        self.observer.warn(&w);
                    }
                    if !self.opts.keep_files {
                        let _ = std::fs::remove_dir_all(&cell_dir);
                    }
                    if let CellOutcome::Done(rec) = failed(cell, step, ordinal, e.to_string()) {
                        self.keep(&rec, sink)?;
                    }
                    continue;
                }
            };
            let mut cx = CellCtx {
                exe: &self.exe,
                dir: &cell_dir,
                inputs: &self.copy_inputs,
                seed: plan.seed,
                timeout: self.timeout,
                root: &self.opts.root,
                warnings: &mut warnings,
                journal: self.journal,
                cgroups: self.hierarchy.as_ref(),
                online: &self.online,
                tag: &self.tag,
                dma_latency: plan.dma_latency_for(cell),
                trace: plan.traced(cell).then(|| engine::Tracing {
                    tracefs: self.tracefs.as_ref().filter(|_| plan.trace_mode(cell).timeline()),
                    buffer_kb: plan.trace.buffer_kb,
                    bpf: plan.trace_mode(cell).bpf(),
                }),
                background_lead: self.opts.background_lead,
                io: cell_io,
                stat_devs: self.device.as_ref().map(|d| &d.stat_devs).unwrap_or(&no_devs),
                read_dir: &read_dir,
                nofile_soft: self.nofile.0,
                progress: &mut *self.observer,
            };
            let outcome = executor.run_cell(&mut cx, cell, step, ordinal);
            let moved = knobs::moved(self.fixed_knobs.iter().chain(&cell_knobs), &self.opts.root);
            if !self.opts.keep_files {
                let _ = std::fs::remove_dir_all(&cell_dir);
            }
            for w in self.journal.undo_to(io_mark) {
                self.observer.warn(&w);
            }
            for w in &warnings {
                self.observer.warn(w);
            }
            match outcome? {
                CellOutcome::Done(mut rec) => {
                    rec.knobs = self
                        .fixed_knobs
                        .iter()
                        .chain(&cell_knobs)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    knobs::distrust(&mut rec, &moved);
                    self.keep(&rec, sink)?;
                }
                CellOutcome::Interrupted(sig) => return Ok(Ending::Interrupted(sig)),
            }
        }
        Ok(Ending::Complete)
    }

    /// Hands a finished record to the sink, then to the source and the observer.
    fn keep(
        &mut self,
        rec: &CellRecord,
        sink: &mut dyn FnMut(&CellRecord) -> Result<(), SinkError>,
    ) -> Result<(), RunError> {
        sink(rec).map_err(RunError::Sink)?;
        self.source.finished(rec);
        self.observer.step_finished(rec);
        Ok(())
    }

    /// Makes sure there are `n` input files of `len` bytes; they are set-up, not measured,
    /// and shared by all copy cells of the run (each worker index has its own file).
    fn ensure_inputs(&mut self, n: usize, len: u64) -> Result<(), RunError> {
        if self.copy_input_len != len {
            for p in self.copy_inputs.drain(..) {
                let _ = std::fs::remove_file(p);
            }
            self.copy_input_len = len;
        }
        while self.copy_inputs.len() < n {
            let p = self.files_dir.join(format!("input-{}", self.copy_inputs.len()));
            schedlab_workloads::make_input(&p, len, self.plan.seed ^ self.copy_inputs.len() as u64)
                .map_err(|error| RunError::Inputs {
                    what: format!("creating input file {}", p.display()),
                    error,
                })?;
            self.copy_inputs.push(p);
        }
        Ok(())
    }
}

impl Drop for Run<'_> {
    /// Undoes what the run set up (knobs, tracefs, device, experiment directory), newest
    /// first; the RT priority and file limit go back as their guards drop after.
    fn drop(&mut self) {
        for e in self.journal.undo_to(self.mark) {
            self.observer.warn(&format!("could not undo {e}; run `schedlab restore`"));
        }
    }
}

/// Makes the input files of a cell's `par_read` workers (set-up, not measured) in `dir`:
/// worker i reads `r<i>-<file>`. Inputs of one shape are kept for the next cell; another
/// shape replaces them.
fn ensure_read_inputs(dir: &Path, cell: &schedlab_plan::Cell, seed: u64) -> Result<(), RunError> {
    let mut index = 0u32;
    let mut wanted: Vec<(u32, schedlab_plan::ParIo)> = Vec::new();
    for g in &cell.groups {
        for _ in 0..g.processes {
            if let Workload::ParRead(p) = g.workload {
                wanted.push((index, p));
            }
            index += 1;
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let ready = dir.exists()
        && wanted
            .iter()
            .all(|(i, p)| schedlab_workloads::read_inputs_ready(dir, &format!("r{i}-"), p));
    if ready {
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir(dir)?;
    for (i, p) in wanted {
        schedlab_workloads::make_read_inputs(dir, &format!("r{i}-"), &p, seed ^ i as u64).map_err(
            |error| RunError::Inputs {
                what: format!("creating par_read inputs in {}", dir.display()),
                error,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod run_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("schedlab-runner-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_experiment_directory_is_journaled_before_it_exists_and_never_one_found_taken() {
        let d = scratch("expdir");
        let mut j = Journal::create(&d.join("state")).unwrap();
        // A directory of that name already there (another run's kept files): not ours.
        let taken = d.join(format!("schedlab-t-{}-0", std::process::id()));
        std::fs::create_dir(&taken).unwrap();
        std::os::unix::fs::symlink(&d, d.join("link")).unwrap();
        let p = make_experiment_dir(&d.join("link"), "t", Some(&mut j)).unwrap();
        assert_eq!(
            p,
            d.canonicalize().unwrap().join(format!("schedlab-t-{}-1", std::process::id())),
            "canonical, next free name"
        );
        assert!(p.is_dir());
        assert_eq!(j.entries(), [Entry::RemoveTree { path: p.clone() }]);
        assert_eq!(
            schedlab_sys::journal::in_force(j.path()).unwrap(),
            [Entry::RemoveTree { path: p.clone() }]
        );
        assert!(j.close().is_empty());
        assert!(!p.exists() && taken.exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    /// A `dir` that did not exist was made with its parents and left behind after the run.
    #[test]
    fn parents_made_for_the_experiment_directory_go_when_empty_and_stay_when_not() {
        let d = scratch("parents");
        let mut j = Journal::create(&d.join("state")).unwrap();
        let p = make_experiment_dir(&d.join("a/b"), "t", Some(&mut j)).unwrap();
        assert!(p.starts_with(d.join("a/b")));
        let made = |e: &Entry| matches!(e, Entry::RemoveEmptyDir { .. });
        assert_eq!(
            j.entries().iter().filter(|e| made(e)).cloned().collect::<Vec<_>>(),
            [
                Entry::RemoveEmptyDir { path: d.join("a") },
                Entry::RemoveEmptyDir { path: d.join("a/b") }
            ],
            "journaled outermost first"
        );
        assert!(j.close().is_empty());
        assert!(!d.join("a").exists(), "every directory it made is gone");
        // Someone else's file in a parent it made: that parent stays, with the file.
        let mut j = Journal::create(&d.join("state")).unwrap();
        make_experiment_dir(&d.join("a/b"), "t", Some(&mut j)).unwrap();
        std::fs::write(d.join("a/theirs"), "x").unwrap();
        assert!(j.close().is_empty());
        assert!(!d.join("a/b").exists() && d.join("a/theirs").exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_regions_name_begins_with_the_prefix_its_removal_is_journaled_under() {
        let dir = PathBuf::from(format!("/dev/shm/schedlab-runner-prefix-{}", std::process::id()));
        let r = schedlab_dispatch::Region::create(&dir, 1, 2).unwrap();
        let name = r.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&schedlab_dispatch::shm::name_prefix(1, std::process::id() as i32)),
            "{name}"
        );
        drop(r);
        let _ = std::fs::remove_dir_all(dir);
    }
}
