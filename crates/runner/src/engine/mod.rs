//! One cell repetition: spawn N blocked workers, apply the policy, wait until all are
//! prepared, release them all by closing one pipe, reap each with wait4, and build its samples.
//! [`run_cell`] reads as that list of steps; each lives in a module of its own.

mod periodic;
mod reap;
mod samples;
mod scx;
mod settings;
mod spawn;
mod supervise;
mod throttle;
mod trace;

use reap::{describe_exit, exited_cleanly, kill_and_reap, stop_background, Reaped, Reaper};
use schedlab_model::sched_ext::SchedExtCell;
use schedlab_model::{CellRecord, CellStatus, MachineLoad};
use schedlab_plan::{Cell, Step};
use schedlab_sys::cgroup::Hierarchy;
use schedlab_sys::journal::Journal;
use schedlab_sys::pmqos::{self, DmaLatencyHold};
use schedlab_sys::procfs::{self, exec_runtime_ns, monotonic_ns, self_usage, Stat};
use schedlab_sys::Root;
use spawn::{Collector, Spawned};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use supervise::{ReleasedCell, Unprepared};

/// What came of one cell repetition.
pub enum CellOutcome {
    /// It finished (possibly with timed-out or failed workers, or failed to start).
    Done(Box<CellRecord>),
    /// A stop signal arrived; workers were killed and nothing is kept.
    Interrupted(i32),
}

/// Everything run_cell needs from the run.
pub struct CellCtx<'a> {
    /// The binary to exec as a worker.
    pub exe: &'a Path,
    /// This cell's scratch directory (created by the caller, removed by it).
    pub dir: &'a Path,
    /// Input files for copy workers, by index.
    pub inputs: &'a [PathBuf],
    /// The plan's seed.
    pub seed: u64,
    /// Watchdog.
    pub timeout: Duration,
    /// Where /proc is.
    pub root: &'a Root,
    /// Warnings for the user (policy not seen by a worker, stderr output, ...).
    pub warnings: &'a mut Vec<String>,
    /// Every machine change is journaled here first.
    pub journal: &'a mut Journal,
    /// The cgroup hierarchy, if the plan uses cgroups.
    pub cgroups: Option<&'a Hierarchy>,
    /// Online CPUs (what "spread"/"compact" distribute over when there is no cpuset).
    pub online: &'a [u32],
    /// What this cell holds /dev/cpu_dma_latency at, microseconds (None: nothing).
    pub dma_latency: Option<u32>,
    /// Where and how to trace this cell (None: not traced).
    pub trace: Option<Tracing<'a>>,
    /// Unique tag of this run, for cgroup names.
    pub tag: &'a str,
    /// How long background groups run before the measured groups are released.
    pub background_lead: Duration,
    /// The experiment device's record for this cell (scheduler set), statistics to fill in.
    pub io: Option<schedlab_model::CellIo>,
    /// Devices whose /sys/block stat deltas are taken over the measured window.
    pub stat_devs: &'a [String],
    /// Where par_read workers find their inputs.
    pub read_dir: &'a Path,
    /// The soft RLIMIT_NOFILE workers put back (the run raised the engine's: None if not).
    pub nofile_soft: Option<u64>,
    /// Told when the cell's processes are prepared, just before the release.
    pub progress: &'a mut dyn crate::Progress,
}

/// A record of a repetition that failed before it ran, saying why.
pub fn failed(cell: &Cell, step: &Step, ordinal: u32, msg: impl std::fmt::Display) -> CellOutcome {
    CellOutcome::Done(Box::new(CellRecord {
        started_unix: unix_now(),
        engine_max_rss_kb: self_usage().2,
        ..judged(cell, step, ordinal, (CellStatus::Failed, Some(msg.to_string())))
    }))
}

/// The record of `step` of `cell` with its verdict and nothing measured yet.
pub(crate) fn judged(
    cell: &Cell,
    step: &Step,
    ordinal: u32,
    (status, message): (CellStatus, Option<String>),
) -> CellRecord {
    CellRecord {
        params: cell.params(),
        rep: step.rep,
        warmup: step.warmup,
        ordinal,
        status,
        message,
        ..CellRecord::default()
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Gives up a cell whose settings were applied (a stop signal, or a failure before its end):
/// kills and reaps its `n` processes, drops their reports and undoes the cell's settings
/// journaled since `mark`, so every early return leaves the machine as the cell found it.
fn abandon(
    cx: &mut CellCtx,
    pgid: i32,
    n: usize,
    reaped: &mut Vec<Reaped>,
    collector: Collector,
    mark: usize,
) {
    kill_and_reap(pgid, n, reaped, false);
    let _ = collector.join();
    cx.warnings.extend(cx.journal.undo_to(mark));
}

/// How a traced cell is recorded.
#[derive(Debug, Clone, Copy)]
pub struct Tracing<'a> {
    /// The tracefs the run found or mounted, when the cell's timeline is captured.
    pub tracefs: Option<&'a schedlab_trace::Tracefs>,
    /// Per-CPU buffer, KiB (None: the trace crate's default).
    pub buffer_kb: Option<u32>,
    /// The BPF observer aggregates the cell's figures in the kernel.
    pub bpf: bool,
}

/// Whether the BPF observer times the cell's wake-ups: for the field's benchmarks, native or
/// parsed (wake-ups are what they measure), and beside a timeline; other cells go without
/// the two wake-up programs and their cost (docs/BENCHMARKS.md, "The BPF observer's cost").
fn times_wakeups(cell: &Cell, t: &Tracing) -> bool {
    use schedlab_plan::Workload as W;
    t.tracefs.is_some()
        || cell.groups.iter().any(|g| {
            matches!(
                g.workload,
                W::Messaging(_) | W::Pipe(_) | W::Schbench(_) | W::Command { parse: Some(_), .. }
            )
        })
}

/// Runs one cell repetition.
pub fn run_cell(
    cx: &mut CellCtx,
    cell: &Cell,
    step: &Step,
    ordinal: u32,
) -> std::io::Result<CellOutcome> {
    let n = cell.processes() as usize;
    // Held from before the workers exist to after the last is reaped, as cyclictest holds
    // it for its whole run; dropping it (any return, or the engine's death) withdraws it.
    let dma_hold =
        cx.dma_latency.and_then(|us| match DmaLatencyHold::hold(&pmqos::device(cx.root), us) {
            Ok(h) => Some(h),
            Err(e) => {
                cx.warnings.push(format!(
                    "cell {}: could not hold {} at {us} us ({e}); the cell ran without it",
                    cell.key,
                    pmqos::DEVICE
                ));
                None
            }
        });
    // The cell's CPU scheduler runs before its first worker exists and until its last is
    // reaped; dropping it (any return) stops it.
    let mut scheduler = match &cell.cpu_scheduler {
        Some(s) => match scx::prepare(cx.root, cx.dir, cx.journal, s) {
            Ok(l) => l,
            Err(msg) => return Ok(failed(cell, step, ordinal, msg)),
        },
        None => None,
    };
    let (ends, worker_ends) = spawn::pipes(cx, cell)?;
    let rt_set = match periodic::periodic_set(cx, cell) {
        Ok(r) => r,
        Err(msg) => return Ok(failed(cell, step, ordinal, msg)),
    };
    // The trace covers the workers' whole lives (fork to reap), as wait4's accounting does.
    let mut observer = match cx.trace.filter(|t| t.bpf) {
        Some(t) => match schedlab_bpf::Observer::start(
            &schedlab_bpf::kernel_btf(),
            n,
            times_wakeups(cell, &t),
        ) {
            Ok(o) => Some(o),
            Err(e) => {
                return Ok(failed(
                    cell,
                    step,
                    ordinal,
                    format!("could not start the BPF observer: {e}"),
                ))
            }
        },
        None => None,
    };
    let capture = match cx.trace.and_then(|t| t.tracefs.map(|fs| (fs, t.buffer_kb))) {
        Some(t) => match trace::start(cx, cell, t) {
            Ok(c) => Some(c),
            Err(e) => {
                return Ok(failed(
                    cell,
                    step,
                    ordinal,
                    format!("could not start the kernel trace: {e}"),
                ))
            }
        },
        None => None,
    };

    // Spawn every worker blocked on its release pipe, all in one new process group.
    let (u0, s0, _) = self_usage();
    let spawn_ns = monotonic_ns();
    let (workers, pgid) = match spawn::workers(cx, cell, rt_set.as_ref(), worker_ends, &ends.log)? {
        Spawned::All { workers, pgid } => (workers, pgid),
        Spawned::Stopped(sig) => return Ok(CellOutcome::Interrupted(sig)),
        Spawned::Failed(msg) => return Ok(failed(cell, step, ordinal, msg)),
    };
    let pids = workers.iter().map(|w| w.pid);
    trace::register(cx, cell, observer.as_mut(), pids, schedlab_bpf::Role::Worker);
    // Watched only now: every descriptor the engine holds is copied into each child it spawns.
    let mut reaper = Reaper::new(pgid, workers.iter().map(|w| w.pid));
    let collector = Collector::start(ends.results, workers.len());

    // cgroups, policy and pinning, for every worker, before any of them is released.
    let mark = cx.journal.entries().len();
    let own_cgroups = match settings::apply_settings(cx, cell, &workers) {
        Ok(c) => c,
        Err(msg) => {
            abandon(cx, pgid, n, &mut Vec::new(), collector, mark);
            return Ok(failed(cell, step, ordinal, msg));
        }
    };

    // The live dispatchers are reaped like background workers; under edf-scx and dwcs-scx
    // they run inside schedlab-scx, the cell's sched_ext scheduler, stopped like any other.
    let scx_dispatched = rt_set.as_ref().filter(|r| r.set.scheduler.sched_ext());
    let spawned = match scx_dispatched {
        Some(r) => {
            let args = spawn::scx_dispatcher_args(r, &workers);
            match scx::start_dispatcher(cx.root, cx.dir, cx.journal, args) {
                Ok(l) => {
                    scheduler = Some(l);
                    Ok(Vec::new())
                }
                Err(e) => Err((Vec::new(), e.to_string())),
            }
        }
        None => spawn::dispatchers(cx, rt_set.as_ref(), &workers, &ends.log, pgid),
    };
    let dispatchers = match spawned {
        Ok(d) => d,
        Err((started, msg)) => {
            abandon(cx, pgid, n + started.len(), &mut Vec::new(), collector, mark);
            return Ok(failed(cell, step, ordinal, msg));
        }
    };
    let n = n + dispatchers.len();
    let pids = dispatchers.iter().copied();
    trace::register(cx, cell, observer.as_mut(), pids, schedlab_bpf::Role::Engine);
    for &d in &dispatchers {
        reaper.add(d);
    }
    let mut bg_pids: Vec<i32> =
        workers.iter().filter(|w| cell.groups[w.group].background).map(|w| w.pid).collect();
    bg_pids.extend(&dispatchers);
    bg_pids.sort_unstable();
    let mut reaped: Vec<Reaped> = Vec::with_capacity(n);

    // Every worker prepared (files written, bodies built, memory locked) before anyone is
    // released: no preparation overlaps measured work or the background lead, and a periodic
    // set's start is fixed only when every task can meet its first release.
    let worker_pids: Vec<i32> = workers.iter().map(|w| w.pid).collect();
    let ready = &collector.prepared;
    if let Err(stop) =
        supervise::wait_prepared(ready, worker_pids.len(), &worker_pids, &mut reaper, &mut reaped)
    {
        abandon(cx, pgid, n, &mut reaped, collector, mark);
        return Ok(match stop {
            Unprepared::Signal(sig) => CellOutcome::Interrupted(sig),
            Unprepared::Failed(why) => {
                let log = std::fs::read_to_string(&ends.log_path).unwrap_or_default();
                let said: Vec<&str> = log.lines().take(3).collect();
                let why =
                    if said.is_empty() { why } else { format!("{why}: {}", said.join(" | ")) };
                failed(cell, step, ordinal, why)
            }
        });
    }
    cx.progress.prepared();
    if let Some(w) = ends.background {
        drop(w); // background groups start first and load the machine
        if let Err(sig) = supervise::background_lead(cx.background_lead, &mut reaper, &mut reaped) {
            abandon(cx, pgid, n, &mut reaped, collector, mark);
            return Ok(CellOutcome::Interrupted(sig));
        }
    }

    // Whether each worker is on sched_ext, as the kernel has it just before the release.
    let ext_workers = (cell.cpu_scheduler.is_some() || cell.scx_dispatched())
        .then(|| scx::workers_ext(cx.root, cell, &workers));
    if let Some(l) = scheduler.as_mut() {
        l.stats_before_release();
    }

    // The release, bracketed by the machine's counters.
    let stat0 = Stat::read(cx.root);
    let quotas = throttle::watch(cx.root, cx.cgroups, &own_cgroups);
    let pressure0 = procfs::cpu_pressure_us(cx.root);
    let disk0 = crate::device::read_stats(cx.root, cx.stat_devs);
    let bg_cpu0: HashMap<i32, u64> =
        bg_pids.iter().filter_map(|&p| exec_runtime_ns(cx.root, p).map(|ns| (p, ns))).collect();
    let started_unix = unix_now();
    let release_ns = monotonic_ns();
    if rt_set.as_ref().is_some_and(|r| !r.dispatched()) {
        // Every task's first release, on one clock for the whole set.
        std::fs::write(
            cx.dir.join(crate::rt::START_FILE),
            (release_ns + crate::rt::START_LEAD_NS).to_string(),
        )?;
    }
    drop(ends.release); // the release: every measured worker's read(2) returns 0 at once

    let released =
        ReleasedCell { pgid, n, background: &bg_pids, dispatchers: &dispatchers, release_ns };
    let mut end = match supervise::supervise(cx, cell, &released, &mut reaper, &mut reaped) {
        Ok(end) => end,
        Err(sig) => {
            abandon(cx, pgid, n, &mut reaped, collector, mark);
            return Ok(CellOutcome::Interrupted(sig));
        }
    };
    let end_ns = supervise::measured_end(&reaped, &bg_pids, release_ns);
    if let Some(l) = scheduler.as_mut() {
        l.stats_after_cell();
    }
    let stat1 = Stat::read(cx.root);
    let throttling = quotas.since();
    let load = procfs::load_average(cx.root).map(|load1| MachineLoad {
        load1,
        cpu_pressure_us: procfs::cpu_pressure_us(cx.root)
            .zip(pressure0)
            .map(|(b, a)| b.saturating_sub(a)),
    });
    let disk1 = crate::device::read_stats(cx.root, cx.stat_devs);
    let (u1, s1, rss) = self_usage();
    // Background CPU inside the measured window: their lead and stop tail are left out.
    let bg_window: HashMap<i32, f64> = bg_pids
        .iter()
        .filter_map(|p| {
            Some((*p, exec_runtime_ns(cx.root, *p)?.saturating_sub(*bg_cpu0.get(p)?) as f64 * 1e-9))
        })
        .collect();

    // Stop the background, collect the reports, undo the cell's settings.
    stop_background(&mut reaper, n, &bg_pids, &mut reaped);
    let lines = collector.join();
    // Before the undo: a scheduler started within the cell (edf-scx, dwcs-scx) is journaled
    // after `mark`, and the undo stops it.
    let lost = scheduler.as_mut().and_then(scx::Loaded::lost);
    cx.warnings.extend(cx.journal.undo_to(mark));
    if let Some(Err(e)) = scheduler.as_mut().map(scx::Loaded::stop) {
        cx.warnings.push(format!("cell {}: stopping its sched_ext scheduler: {e}", cell.key));
    }
    let observed = observer.and_then(|o| trace::observed(cx, cell, o, &workers));
    let (cell_trace, raw_trace) = capture
        .map_or((None, None), |c| trace::finish(cx, cell, c, &workers, &dispatchers, release_ns));
    // Recorded both ways: the timeline's figures, with the BPF programs' beside them.
    let cell_trace = match (cell_trace, observed) {
        (Some(mut t), b) => {
            t.bpf = b.map(Box::new);
            Some(t)
        }
        (None, b) => b,
    };

    // The samples and the verdict.
    let reports = samples::parse_reports(&lines, &cell.key, cx.warnings);
    for d in reaped.iter().filter(|r| dispatchers.contains(&r.pid)) {
        if end.dispatcher_died.is_none() && !exited_cleanly(d.status) {
            end.dispatcher_died = Some(describe_exit(d.status));
        }
    }
    let (metrics, mut dispatch_logs) = samples::dispatcher_metrics(rt_set.as_ref());
    let mut samples = samples::build(cell, &workers, &reaped, &reports, release_ns, &bg_window);
    if let Some(r) = &rt_set {
        samples::attach_rt(r, &workers, &mut samples, &metrics, &mut dispatch_logs);
    }
    let unparsed = samples::parse_outputs(cell, cx.dir, &mut samples);
    samples::check_samples(cx, cell, &samples);
    cx.warnings.extend(samples::stderr_warning(cell, &ends.log_path));
    let cut = match (&end.dispatcher_died, end.timed_out, end.late_s) {
        (Some(how), ..) => crate::verdict::Cut::Dispatcher(how.clone()),
        (None, _, Some(late_s)) => crate::verdict::Cut::LateWatchdog {
            timeout_s: cx.timeout.as_secs_f64(),
            late_s,
            own_end_s: samples::own_end(cell, &samples),
        },
        (None, true, None) => crate::verdict::Cut::Watchdog(cx.timeout.as_secs_f64()),
        (None, false, None) => crate::verdict::Cut::None,
    };
    let mut verdict = crate::verdict::judge(&samples, &cut);
    let sched_ext = ext_workers.map(|workers| SchedExtCell {
        loaded: scheduler.as_ref().map(|l| l.record.clone()),
        workers,
    });
    let more_reasons: Vec<String> = unparsed
        .into_iter()
        .chain(lost)
        .chain(sched_ext.as_ref().and_then(|s| scx::misplaced(cell, s)))
        .collect();
    if !more_reasons.is_empty() {
        verdict = (
            CellStatus::Failed,
            Some(verdict.1.into_iter().chain(more_reasons).collect::<Vec<_>>().join("; ")),
        );
    }
    let record = CellRecord {
        started_unix,
        makespan_s: (end_ns - release_ns) as f64 * 1e-9,
        spawn_s: Some((release_ns - spawn_ns) as f64 * 1e-9),
        stat: match (stat0, stat1) {
            (Some(a), Some(b)) => b.since(&a),
            _ => Default::default(),
        },
        load,
        engine_user_s: u1 - u0,
        engine_sys_s: s1 - s0,
        engine_max_rss_kb: rss,
        samples,
        io: cx.io.take().map(|mut io| {
            io.stats = cx
                .stat_devs
                .iter()
                .zip(disk0.iter().zip(&disk1))
                .filter_map(|(d, (a, b))| Some(b.as_ref()?.since(a.as_ref()?, d)))
                .collect();
            io
        }),
        rt: rt_set.as_ref().map(|r| crate::rt::cell_rt(r.set, r.placement.as_deref(), &metrics)),
        cpu_dma_latency_us: dma_hold.as_ref().map(DmaLatencyHold::us),
        trace: cell_trace,
        raw_trace,
        sched_ext,
        throttling,
        ..judged(cell, step, ordinal, verdict)
    };
    Ok(CellOutcome::Done(Box::new(record)))
}
