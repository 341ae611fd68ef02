//! Starting a cell's processes: its pipes, the workers blocked before their work (one
//! process group), the collector of their report lines, and the live dispatchers.

use super::periodic::RtSet;
use super::reap::kill_and_reap;
use super::CellCtx;
use crate::protocol::{RtJob, WorkerJob, WORKER_SUBCOMMAND};
use crate::signals;
use schedlab_plan::{Cell, Workload};
use schedlab_sys::spawn::{Spawner, Stdio as ChildStdio};
use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints; O_CLOEXEC keeps the engine's ends out of workers.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two fresh descriptors that we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// One spawned worker.
pub(super) struct Worker {
    pub(super) pid: i32,
    pub(super) index: u32,
    pub(super) group: usize,
    pub(super) allowed: Vec<u32>,
    /// The task of a periodic set this worker runs.
    pub(super) task: Option<usize>,
}

/// The ends of the cell's pipes the workers get; dropped by the engine once they are spawned.
pub(super) struct WorkerEnds {
    release: OwnedFd,
    background: Option<OwnedFd>,
    results: OwnedFd,
}

/// The ends the engine keeps: closing a release end releases its workers.
pub(super) struct EngineEnds {
    /// The measured workers' release.
    pub(super) release: OwnedFd,
    /// The background workers' release (when the cell has background groups).
    pub(super) background: Option<OwnedFd>,
    /// The workers' report lines.
    pub(super) results: OwnedFd,
    /// Every process's stderr.
    pub(super) log: File,
    /// Where the log is.
    pub(super) log_path: PathBuf,
}

/// The release pipes (measured, background), the result pipe and the cell's `stderr.log`.
pub(super) fn pipes(cx: &CellCtx, cell: &Cell) -> std::io::Result<(EngineEnds, WorkerEnds)> {
    let has_bg = cell.groups.iter().any(|g| g.background);
    let (rel_r, rel_w) = pipe()?;
    let (bg_r, bg_w) = if has_bg { pipe().map(|(r, w)| (Some(r), Some(w)))? } else { (None, None) };
    let (res_r, res_w) = pipe()?;
    let log_path = cx.dir.join("stderr.log");
    let log = File::options().write(true).create_new(true).open(&log_path)?;
    Ok((
        EngineEnds { release: rel_w, background: bg_w, results: res_r, log, log_path },
        WorkerEnds { release: rel_r, background: bg_r, results: res_w },
    ))
}

/// How spawning the workers ended.
pub(super) enum Spawned {
    /// Every worker runs, blocked, in process group `pgid`.
    All { workers: Vec<Worker>, pgid: i32 },
    /// A stop signal arrived; those started were killed.
    Stopped(i32),
    /// A worker could not be started; those started were killed.
    Failed(String),
}

/// Spawns every worker blocked on its release pipe, all in one new process group, then
/// drops the workers' pipe ends so the engine sees their end.
pub(super) fn workers(
    cx: &CellCtx,
    cell: &Cell,
    rt_set: Option<&RtSet>,
    ends: WorkerEnds,
    log: &File,
) -> std::io::Result<Spawned> {
    let n = cell.processes() as usize;
    let mut workers: Vec<Worker> = Vec::with_capacity(n);
    let mut pgid = 0i32;
    let mut spawn_err = None;
    // One spawner per release pipe, with what every worker shares built once.
    let spawner = |release: &OwnedFd| {
        Spawner::new(
            cx.exe,
            ChildStdio {
                stdin: release.as_fd(),
                stdout: ends.results.as_fd(),
                stderr: log.as_fd(),
            },
            cx.dir,
        )
    };
    let mut measured = spawner(&ends.release)?;
    let mut background = ends.background.as_ref().map(spawner).transpose()?;
    let subcommand = CString::new(WORKER_SUBCOMMAND).expect("no NUL");
    let engine_pid = std::process::id() as i32;
    'spawn: for (gi, g) in cell.groups.iter().enumerate() {
        for i in 0..g.processes {
            let index = workers.len() as u32;
            if index.is_multiple_of(32) {
                if let Some(sig) = signals::stopped() {
                    let mut reaped = Vec::new();
                    kill_and_reap(pgid, workers.len(), &mut reaped, false);
                    return Ok(Spawned::Stopped(sig));
                }
            }
            let job = WorkerJob {
                index,
                seed: cx.seed,
                dir: cx.dir.to_path_buf(),
                input: matches!(g.workload, Workload::Copy { .. })
                    .then(|| cx.inputs[index as usize].clone()),
                workload: g.workload.clone(),
                repeat: g.background,
                engine_pid,
                read_dir: matches!(g.workload, Workload::ParRead(_))
                    .then(|| cx.read_dir.to_path_buf()),
                rt: rt_set.filter(|r| r.group == gi).map(|r| RtJob {
                    task: i,
                    dispatch: r.slot(i as usize).map(|(p, slot)| (r.parts[p].region.clone(), slot)),
                }),
                nofile_soft: cx.nofile_soft,
            };
            let json = CString::new(serde_json::to_string(&job).expect("job serialises"))
                .expect("JSON has no NUL");
            let spawner = if g.background {
                background.as_mut().expect("background pipe")
            } else {
                &mut measured
            };
            match spawner.spawn(&[&subcommand, &json]) {
                Ok(pid) => {
                    if pgid == 0 {
                        pgid = pid;
                        measured.set_group(pid);
                        if let Some(b) = background.as_mut() {
                            b.set_group(pid);
                        }
                    }
                    let allowed = g.cgroup.cpuset.as_deref().unwrap_or(cx.online);
                    let mut allowed =
                        g.affinity.cpus_for(i, g.processes, allowed).unwrap_or_default();
                    let mut task = None;
                    if let Some(r) = rt_set.filter(|r| r.group == gi) {
                        allowed =
                            r.placement.as_ref().map(|p| vec![p[i as usize]]).unwrap_or_default();
                        task = Some(i as usize);
                    }
                    workers.push(Worker { pid, index, group: gi, allowed, task });
                }
                Err(e) => {
                    spawn_err = Some(format!("could not start worker {index} of {n}: {e} (see `schedlab env` for process limits)"));
                    break 'spawn;
                }
            }
        }
    }
    drop((measured, background));
    drop(ends);
    if let Some(msg) = spawn_err {
        let mut reaped = Vec::new();
        kill_and_reap(pgid, workers.len(), &mut reaped, false);
        return Ok(Spawned::Failed(msg));
    }
    Ok(Spawned::All { workers, pgid })
}

/// Reads the workers' result pipe while they run (it holds only 64 KiB) and counts those
/// that said they are prepared.
pub(super) struct Collector {
    /// Workers that said they are prepared.
    pub(super) prepared: Arc<AtomicUsize>,
    handle: JoinHandle<Vec<String>>,
}

impl Collector {
    /// Starts reading `results`; the last of `spawned` ready lines wakes the engine.
    pub(super) fn start(results: OwnedFd, spawned: usize) -> Collector {
        let prepared = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&prepared);
        let handle = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(File::from(results)).lines() {
                match line {
                    Ok(l) if crate::protocol::parse_ready(&l).is_some() => {
                        // The last one wakes the engine, which sleeps meanwhile: at SCHED_FIFO 99,
                        // polling would preempt the work of anything else running.
                        if counted.fetch_add(1, Ordering::Release) + 1 == spawned {
                            signals::wake();
                        }
                    }
                    Ok(l) => lines.push(l),
                    Err(_) => break,
                }
            }
            lines
        });
        Collector { prepared, handle }
    }

    /// The report lines, once every writer is gone.
    pub(super) fn join(self) -> Vec<String> {
        self.handle.join().unwrap_or_default()
    }
}

/// Each part's dispatcher configuration (JSON), in part order.
pub(super) fn dispatch_configs(r: &RtSet, workers: &[Worker]) -> Vec<String> {
    let task_pid: HashMap<usize, i32> =
        workers.iter().filter_map(|w| w.task.map(|t| (t, w.pid))).collect();
    r.parts
        .iter()
        .map(|part| {
            let pids: Vec<i32> = part.tasks.iter().map(|t| task_pid[t]).collect();
            let cfg = crate::rt::dispatch_config(r.set, part.cpu, &part.tasks, &pids);
            serde_json::to_string(&cfg).expect("config serialises")
        })
        .collect()
}

/// The arguments of `schedlab-scx` (edf-scx, dwcs-scx): REGION CONFIG_JSON OUT per part.
pub(super) fn scx_dispatcher_args(r: &RtSet, workers: &[Worker]) -> Vec<String> {
    r.parts
        .iter()
        .zip(dispatch_configs(r, workers))
        .flat_map(|(part, cfg)| {
            [part.region.display().to_string(), cfg, part.metrics.display().to_string()]
        })
        .collect()
}

/// Starts the live dispatchers (edf, dwcs; one per CPU the set uses) in the workers'
/// process group, so every kill path takes them too. On failure, the pids started so far
/// and what went wrong.
pub(super) fn dispatchers(
    cx: &CellCtx,
    rt_set: Option<&RtSet>,
    workers: &[Worker],
    log: &File,
    pgid: i32,
) -> Result<Vec<i32>, (Vec<i32>, String)> {
    let mut pids_started: Vec<i32> = Vec::new();
    let Some(r) = rt_set else { return Ok(pids_started) };
    for (part, cfg) in r.parts.iter().zip(dispatch_configs(r, workers)) {
        let stderr = match log.try_clone() {
            Ok(f) => f,
            Err(e) => {
                return Err((
                    pids_started,
                    format!("could not start the dispatcher for CPU {}: {e}", part.cpu),
                ))
            }
        };
        let spawned = Command::new(cx.exe)
            .arg(crate::rt::DISPATCH_SUBCOMMAND)
            .arg(&part.region)
            .arg(cfg)
            .arg(&part.metrics)
            .env(crate::rt::ENGINE_PID_ENV, std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .current_dir(cx.dir)
            .process_group(pgid)
            .spawn();
        match spawned {
            Ok(child) => pids_started.push(child.id() as i32),
            Err(e) => {
                return Err((
                    pids_started,
                    format!("could not start the dispatcher for CPU {}: {e}", part.cpu),
                ))
            }
        }
    }
    Ok(pids_started)
}
