//! A cell's CPU scheduler (the `cpu_scheduler` axis): the sched_ext scheduler started
//! before the workers and stopped after them, journaled so `restore` stops one a killed run
//! left; each worker's `ext.enabled` read before the release; a scheduler that died or was
//! ejected during the cell found afterwards, with its last output and the kernel's reason.

use super::spawn::Worker;
use schedlab_model::sched_ext::{SchedExtCell, ScxLoaded, ScxStats, WorkerExt};
use schedlab_plan::{Cell, CpuScheduler, ScxProgram};
use schedlab_sys::journal::{Entry, Journal, SCHEDULER_GRACE, SCHEDULER_UNLOAD};
use schedlab_sys::scx::{self, KmsgTail};
use schedlab_sys::{Root, SysError};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a scheduler has from its exec to the state `enabled` (a TCG guest needs seconds).
pub(crate) const LOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of the scheduler's own output a failure quotes.
const TAIL_LINES: usize = 5;
/// How long a loaded scheduler has to open its stats socket before it counts as offering
/// none.
const STATS_WAIT: Duration =
    if cfg!(test) { Duration::from_millis(300) } else { Duration::from_secs(3) };
/// How long one read of its statistics may take.
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// A sched_ext scheduler loaded for one cell; dropping it stops it.
pub(crate) struct Loaded {
    child: Child,
    /// What is stored with the cell.
    pub(crate) record: ScxLoaded,
    log: PathBuf,
    kmsg: Option<KmsgTail>,
    state: PathBuf,
    root: Root,
    stopped: bool,
    /// Its scx_stats socket, if it serves one.
    stats_socket: Option<PathBuf>,
    /// The statistics read before the release.
    stats_before: Option<Result<BTreeMap<String, f64>, SysError>>,
    /// The connection they were read on, read again after the cell.
    stats_client: Option<scx::StatsClient>,
}

/// Before a cell of the `cpu_scheduler` axis: under eevdf, makes sure no sched_ext
/// scheduler is loaded (None); under a sched_ext one, starts it and waits until the kernel
/// runs it. The error says why the cell cannot run.
pub(crate) fn prepare(
    root: &Root,
    dir: &Path,
    journal: &mut Journal,
    s: &CpuScheduler,
) -> Result<Option<Loaded>, SysError> {
    let now = scx::state(root);
    match (s, now.as_deref()) {
        (CpuScheduler::Eevdf, None | Some("disabled")) => Ok(None),
        (_, Some(other)) if other != "disabled" => Err(SysError::refused(format!(
            "sched_ext is {other} ({}) before the cell: a scheduler schedlab did not start is loaded",
            scx::ops(root).unwrap_or_else(|| "no root/ops".into())
        ))),
        (CpuScheduler::Scx(_), None) => Err(SysError::refused(format!("{} is absent: this kernel has no sched_ext", scx::SYSFS))),
        (CpuScheduler::Scx(p), _) => start(root, dir, journal, p).map(Some),
        (CpuScheduler::Eevdf, Some(_)) => unreachable!("every other state is matched above"),
    }
}

/// Starts `schedlab-scx` (edf-scx, dwcs-scx: the set's dispatchers with schedlab's own
/// sched_ext scheduler) with `args`, journaled and stopped like any cell scheduler, and waits
/// until the kernel runs it.
pub(crate) fn start_dispatcher(
    root: &Root,
    dir: &Path,
    journal: &mut Journal,
    args: Vec<String>,
) -> Result<Loaded, SysError> {
    match scx::state(root).as_deref() {
        None => Err(SysError::refused(format!(
            "{} is absent: this kernel has no sched_ext",
            scx::SYSFS
        ))),
        Some("disabled") => {
            let p = ScxProgram::new(schedlab_plan::SCX_DISPATCHER, args)
                .map_err(|e| SysError::refused(e.to_string()))?;
            start(root, dir, journal, &p)
        }
        Some(other) => Err(SysError::refused(format!(
            "sched_ext is {other} ({}) before the cell: a scheduler schedlab did not start is loaded",
            scx::ops(root).unwrap_or_else(|| "no root/ops".into())
        ))),
    }
}

fn start(
    root: &Root,
    dir: &Path,
    journal: &mut Journal,
    p: &ScxProgram,
) -> Result<Loaded, SysError> {
    let program = scx::find_program(&p.program)
        .map_err(|e| SysError::refused(format!("the sched_ext scheduler {}: {e}", p.name())))?;
    let kmsg = KmsgTail::open(root).ok();
    let seq_before = scx::enable_seq(root);
    let log = dir.join("scheduler.log");
    let out =
        std::fs::File::create(&log).map_err(|e| SysError::io(log.display().to_string(), e))?;
    let err = out.try_clone().map_err(|e| SysError::refused(e.to_string()))?;
    let t0 = Instant::now();
    // Its own process group: a Ctrl-C at the terminal reaches the engine, which stops it.
    let child = Command::new(&program)
        .args(&p.args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| {
            SysError::io(
                format!("could not start the sched_ext scheduler {}", program.display()),
                e,
            )
        })?;
    let pid = child.id() as i32;
    let state = scx::state_path(root);
    let mut loaded = Loaded {
        child,
        record: ScxLoaded {
            program: program.to_string_lossy().into_owned(),
            args: p.args.clone(),
            pid,
            ..Default::default()
        },
        log,
        kmsg,
        state: state.clone(),
        root: root.clone(),
        stopped: false,
        stats_socket: None,
        stats_before: None,
        stats_client: None,
    };
    // Journaled as soon as its pid is known, before it can have loaded anything.
    let start = schedlab_sys::procfs::process_start(pid).map_or(0, |s| s.0);
    if let Err(e) = journal.record(Entry::StopScheduler { pid, start, state: state.clone() }) {
        return Err(SysError::io("could not journal the sched_ext scheduler", e));
    }
    let child = &mut loaded.child;
    let waited = scx::wait_for(&state, "enabled", LOAD_TIMEOUT, || {
        child
            .try_wait()
            .ok()
            .flatten()
            .map(|st| format!("it exited ({st}) before sched_ext was enabled"))
    });
    if let Err(why) = waited {
        return Err(SysError::refused(
            loaded.failure(&format!("the sched_ext scheduler {} did not load: {why}", p.name())),
        ));
    }
    // The kernel counts a load in enable_seq only after the state reads `enabled`: taken
    // earlier, it would change under the cell and fail it.
    let counted = scx::wait_for_change(
        &root.path(&format!("{}/enable_seq", scx::SYSFS)),
        seq_before,
        LOAD_TIMEOUT,
    );
    if let Err(why) = counted {
        return Err(SysError::refused(
            loaded.failure(&format!("the sched_ext scheduler {} loaded, but {why}", p.name())),
        ));
    }
    loaded.record.load_s = t0.elapsed().as_secs_f64();
    let ops = scx::ops(root).unwrap_or_default();
    if !p.owns_ops(&ops) {
        return Err(SysError::refused(loaded.failure(&format!(
            "sched_ext was enabled, but root/ops is \"{ops}\", not {}",
            p.name()
        ))));
    }
    (loaded.record.name, loaded.record.version) = schedlab_plan::scx::ops_name_version(&ops);
    loaded.record.ops = ops;
    loaded.record.enable_seq = scx::enable_seq(root);
    loaded.record.switch_all = scx::switch_all(root);
    loaded.stats_socket = scx::wait_for_stats(root, STATS_WAIT).then(|| scx::stats_socket(root));
    Ok(loaded)
}

impl Loaded {
    /// Opens the scheduler's stats socket (when it serves one) and reads its statistics
    /// just before the release.
    pub(crate) fn stats_before_release(&mut self) {
        if let Some(socket) = &self.stats_socket {
            let read = scx::StatsClient::connect(socket, STATS_TIMEOUT).and_then(|mut c| {
                let first = c.read();
                self.stats_client = Some(c);
                first
            });
            self.stats_before = Some(read);
        }
    }

    /// Reads them again on the same connection after the last reap (the counters over the
    /// cell) and keeps both with the record.
    pub(crate) fn stats_after_cell(&mut self) {
        let (Some(socket), Some(before)) = (&self.stats_socket, self.stats_before.take()) else {
            return;
        };
        let cell = match self.stats_client.take() {
            Some(mut c) => c.read(),
            None => Err(SysError::refused("no connection to its stats socket")),
        };
        self.record.stats =
            Some(ScxStats::over(socket.to_string_lossy().into_owned(), before, cell));
    }

    /// Why the scheduler is not running as loaded, if it is not: it exited, or the kernel
    /// disabled it (its watchdog), or another took its place.
    pub(crate) fn lost(&mut self) -> Option<String> {
        let name = self.record.name.clone();
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(self.failure(&format!(
                "the sched_ext scheduler {name} exited during the cell ({status})"
            )));
        }
        let state = scx::state(&self.root).unwrap_or_default();
        let ops = scx::ops(&self.root).unwrap_or_default();
        let seq = scx::enable_seq(&self.root);
        if state != "enabled" || ops != self.record.ops || seq != self.record.enable_seq {
            return Some(self.failure(&format!(
                "the kernel stopped running the sched_ext scheduler {name} during the cell (state {state}, root/ops \"{ops}\", enable_seq {} then {})",
                self.record.enable_seq.map_or("?".into(), |s| s.to_string()),
                seq.map_or("?".into(), |s| s.to_string())
            )));
        }
        None
    }

    /// `what`, with the scheduler's last lines of output and what the kernel logged about
    /// sched_ext since it started.
    fn failure(&mut self, what: &str) -> String {
        let mut msg = what.to_string();
        let log = strip_ansi(&std::fs::read_to_string(&self.log).unwrap_or_default());
        let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        if !lines.is_empty() {
            msg.push_str(&format!(
                "; its last output: {}",
                lines[lines.len().saturating_sub(TAIL_LINES)..].join(" | ")
            ));
        }
        let kernel = self.kmsg.as_mut().map(KmsgTail::sched_ext_lines).unwrap_or_default();
        if !kernel.is_empty() {
            msg.push_str(&format!("; kernel: {}", kernel.join(" | ")));
        }
        msg
    }

    /// Stops the scheduler (SIGINT, SIGKILL after the grace period), reaps it and waits
    /// until sched_ext is `disabled`.
    pub(crate) fn stop(&mut self) -> Result<(), SysError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let t0 = Instant::now();
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) on our own child, not yet reaped (its pid is still ours).
            unsafe { libc::kill(self.record.pid, libc::SIGINT) };
            while self.child.try_wait().ok().flatten().is_none() {
                if t0.elapsed() >= SCHEDULER_GRACE {
                    self.record.killed = true;
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            self.record.stop_s = Some(t0.elapsed().as_secs_f64());
        }
        if !self.state.exists() {
            return Ok(());
        }
        let r = scx::wait_for(&self.state, "disabled", SCHEDULER_UNLOAD, || None);
        if self.record.stop_s.is_some() {
            self.record.stop_s = Some(t0.elapsed().as_secs_f64());
        }
        r
    }
}

impl Drop for Loaded {
    /// Every early return of a cell stops its scheduler.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// `text` without terminal colour sequences (`ESC [ ... m`), which scx schedulers log with.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Up to and including the sequence's final letter.
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every worker's `ext.enabled`, in spawn (sample) order.
pub(super) fn workers_ext(root: &Root, cell: &Cell, workers: &[Worker]) -> Vec<WorkerExt> {
    workers
        .iter()
        .map(|w| WorkerExt {
            group: cell.groups[w.group].name.clone(),
            pid: w.pid,
            ext_enabled: scx::ext_enabled(root, w.pid),
        })
        .collect()
}

/// Why the workers were not where the cell's scheduler puts them: under a sched_ext one,
/// every worker on it; under eevdf, none.
pub(super) fn misplaced(cell: &Cell, seen: &SchedExtCell) -> Option<String> {
    let scx = cell.scx().is_some() || cell.scx_dispatched();
    let wrong: Vec<i32> = seen
        .workers
        .iter()
        .filter(|w| w.ext_enabled.unwrap_or(false) != scx)
        .map(|w| w.pid)
        .collect();
    if wrong.is_empty() {
        return None;
    }
    let n = seen.workers.len();
    Some(if scx {
        format!(
            "{} of {n} workers were not on sched_ext (ext.enabled not 1 in /proc/PID/sched, pids {wrong:?}){}",
            wrong.len(),
            if seen.loaded.as_ref().and_then(|l| l.switch_all) == Some(false) {
                ": the scheduler took only SCHED_EXT tasks (switch_all 0)"
            } else {
                ""
            }
        )
    } else {
        format!(
            "{} of {n} workers were on sched_ext under eevdf (pids {wrong:?}): a scheduler schedlab did not start was loaded",
            wrong.len()
        )
    })
}

#[cfg(test)]
mod tests;
