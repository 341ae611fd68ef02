//! One cell repetition: spawn N blocked workers, apply the policy, wait until all are
//! prepared, release them all by closing one pipe, reap each with wait4, and build its samples.

use crate::protocol::{Job, Report, RtJob, WORKER_SUBCOMMAND};
use crate::signals::{self, Wake};
use schedlab_model::{CellRecord, CellStatus, Sample};
use schedlab_plan::{Cell, Class, Group, Periodic, Step, Workload};
use schedlab_sys::cgroup::{self, Hierarchy};
use schedlab_sys::journal::{Entry, Journal};
use schedlab_sys::procfs::{exec_runtime_ns, monotonic_ns, self_usage, tv_secs, Stat};
use schedlab_sys::{sched, Root};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What came of one cell repetition.
pub enum Outcome {
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
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints; O_CLOEXEC keeps the engine's ends out of workers.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two fresh descriptors that we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

struct Reaped {
    pid: i32,
    status: i32,
    ru: libc::rusage,
    at_ns: u64,
    timed_out: bool,
}

fn killpg(pgid: i32) {
    if pgid > 0 {
        // SAFETY: plain syscall; pgid is the group of our own workers.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Reaps every child of the group that has exited, without blocking.
fn reap_ready(pgid: i32, out: &mut Vec<Reaped>, timed_out: bool) {
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 fills it for exactly the reaped child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(-pgid, &mut status, libc::WNOHANG, &mut ru) };
        if pid <= 0 {
            return;
        }
        out.push(Reaped { pid, status, ru, at_ns: monotonic_ns(), timed_out });
    }
}

/// Kills the group and reaps everything still alive, blocking.
fn kill_and_reap(pgid: i32, n: usize, out: &mut Vec<Reaped>, timed_out: bool) {
    killpg(pgid);
    while out.len() < n {
        let mut status = 0;
        // SAFETY: as in reap_ready.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(-pgid, &mut status, 0, &mut ru) };
        if pid <= 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
        out.push(Reaped { pid, status, ru, at_ns: monotonic_ns(), timed_out });
    }
}

pub(crate) fn failed(cell: &Cell, step: &Step, ordinal: u32, msg: String) -> Outcome {
    Outcome::Done(Box::new(CellRecord {
        params: cell.params(),
        rep: step.rep,
        warmup: step.warmup,
        ordinal,
        status: CellStatus::Failed,
        message: Some(msg),
        started_unix: unix_now(),
        makespan_s: 0.0,
        stat: Default::default(),
        engine_user_s: 0.0,
        engine_sys_s: 0.0,
        engine_max_rss_kb: self_usage().2,
        samples: Vec::new(),
        io: None,
        rt: None,
    }))
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Explains a refused sched_setattr in the user's terms.
fn explain_refusal(cell: &Cell, g: &Group, err: &std::io::Error, root: &Root) -> String {
    let p = &g.policy;
    if p.class == Class::Deadline && err.raw_os_error() == Some(libc::EBUSY) {
        let rt: f64 = root.read_parse("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or(950_000.0);
        let period: f64 = root.read_parse("/proc/sys/kernel/sched_rt_period_us").unwrap_or(1_000_000.0);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
        let limit = format!("{:.3} ({cpus} CPUs x {rt}/{period}), less what other deadline tasks already hold", cpus * rt / period);
        if let Some(set) = g.workload.periodic() {
            return format!(
                "SCHED_DEADLINE admission refused: the set's sum of runtime/period is {:.3} ({} tasks), over the limit {limit}",
                set.deadline_bandwidth(),
                set.tasks.len()
            );
        }
        let d = p.deadline.expect("deadline params");
        let per = d.runtime_ns as f64 / d.period_ns as f64;
        let n = cell.processes();
        return format!(
            "SCHED_DEADLINE admission refused: {n} workers x runtime/period {per:.4} = {:.3} exceeds the limit {limit}",
            per * n as f64
        );
    }
    format!("cannot apply policy {} ({}) to group {}: {err}", g.policy_name, p.class.name(), g.name)
}

/// One spawned worker.
struct Worker {
    pid: i32,
    index: u32,
    group: usize,
    allowed: Vec<u32>,
    /// The task of a periodic set this worker runs.
    task: Option<usize>,
}

/// The periodic set of a cell, as the engine runs it.
struct RtSet<'a> {
    group: usize,
    set: &'a Periodic,
    /// Each task's CPU (None: SCHED_DEADLINE, global).
    placement: Option<Vec<u32>>,
    /// Under edf and dwcs, one dispatcher per CPU the set uses; empty otherwise.
    parts: Vec<Part>,
}

/// The tasks of a dispatched set on one CPU, and that CPU's dispatcher.
struct Part {
    cpu: u32,
    /// The set's task indices, in slot order.
    tasks: Vec<usize>,
    /// The dispatcher's region file.
    region: PathBuf,
    /// Where the dispatcher writes its metrics.
    metrics: PathBuf,
}

impl RtSet<'_> {
    /// Whether the live dispatcher runs the set (edf, dwcs).
    fn dispatched(&self) -> bool {
        !self.parts.is_empty()
    }

    /// The part holding `task`, and the task's slot in it.
    fn slot(&self, task: usize) -> Option<(usize, usize)> {
        self.parts.iter().enumerate().find_map(|(p, part)| part.tasks.iter().position(|&t| t == task).map(|s| (p, s)))
    }
}

/// Whether a reaped process exited by itself with status 0.
fn exited_cleanly(status: i32) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// Describes how a reaped process ended.
fn describe_exit(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else {
        "ended".into()
    }
}

/// The cell's periodic set, with its CPU and (edf, dwcs) a fresh dispatcher region, journaled.
fn periodic_set<'c>(cx: &mut CellCtx, cell: &'c Cell) -> Result<Option<RtSet<'c>>, String> {
    let mut sets = cell.groups.iter().enumerate().filter_map(|(i, g)| g.workload.periodic().map(|p| (i, p)));
    let Some((group, set)) = sets.next() else { return Ok(None) };
    if sets.next().is_some() {
        return Err("a cell may hold one periodic set; this one has several".into());
    }
    let placement = set.placement(cx.online.last().copied().unwrap_or(0));
    if let Some(c) = placement.iter().flatten().find(|c| !cx.online.contains(c)) {
        return Err(format!("the periodic set is pinned to CPU {c}, which is not online"));
    }
    let mut parts = Vec::new();
    if let (true, Some(placement)) = (set.scheduler.dispatched(), &placement) {
        let dir = schedlab_dispatch::shm::default_dir();
        // Regions of dispatchers that died elsewhere would only confuse `dwcs status`.
        let _ = schedlab_dispatch::remove_stale(&dir);
        for (cpu, tasks) in schedlab_model::by_cpu(placement) {
            let prefix = schedlab_dispatch::shm::name_prefix(cpu, std::process::id() as i32);
            cx.journal.record(Entry::RemoveFiles { dir: dir.clone(), prefix }).map_err(|e| format!("journal: {e}"))?;
            let r = schedlab_dispatch::Region::create(&dir, cpu, tasks.len())
                .map_err(|e| format!("creating the dispatcher's region for CPU {cpu}: {e}"))?;
            parts.push(Part { cpu, tasks, region: r.disown(), metrics: cx.dir.join(format!("dispatch-metrics-{cpu}.json")) });
        }
    }
    Ok(Some(RtSet { group, set, placement, parts }))
}

/// Why the workers were not all prepared.
enum Unprepared {
    /// A stop signal arrived.
    Signal(i32),
    /// A process exited, or the time ran out: the message says which.
    Failed(String),
}

/// Waits until `want` workers said they are prepared ([`crate::protocol::ready_line`]).
fn wait_prepared(prepared: &AtomicUsize, want: usize, pgid: i32, reaped: &mut Vec<Reaped>) -> Result<(), Unprepared> {
    let until = monotonic_ns() + crate::protocol::READY_TIMEOUT.as_nanos() as u64;
    loop {
        let ready = prepared.load(Ordering::Acquire);
        if ready >= want {
            return Ok(());
        }
        reap_ready(pgid, reaped, false);
        let not_all = |why: &str| Unprepared::Failed(format!("the cell's workers were not all prepared ({ready} of {want}): {why}"));
        if !reaped.is_empty() {
            return Err(not_all("a process of the cell exited while they prepared"));
        }
        if monotonic_ns() > until {
            return Err(not_all(&format!("not within {} s", crate::protocol::READY_TIMEOUT.as_secs())));
        }
        // Woken by the last ready line (`signals::wake`) or a child's exit; the timeout is a
        // fallback only.
        if let Wake::Stop(sig) = signals::wait(Duration::from_millis(200)) {
            return Err(Unprepared::Signal(sig));
        }
    }
}

/// Runs one cell repetition.
pub fn run_cell(cx: &mut CellCtx, cell: &Cell, step: &Step, ordinal: u32) -> std::io::Result<Outcome> {
    let n = cell.processes() as usize;
    let has_bg = cell.groups.iter().any(|g| g.background);
    let (rel_r, rel_w) = pipe()?;
    let (bg_r, bg_w) = if has_bg { pipe().map(|(r, w)| (Some(r), Some(w)))? } else { (None, None) };
    let (res_r, res_w) = pipe()?;
    let log_path = cx.dir.join("stderr.log");
    let log = File::options().write(true).create_new(true).open(&log_path)?;
    let rt_set = match periodic_set(cx, cell) {
        Ok(r) => r,
        Err(msg) => return Ok(failed(cell, step, ordinal, msg)),
    };

    // Spawn every worker blocked on its release pipe, all in one new process group.
    let mut workers: Vec<Worker> = Vec::with_capacity(n);
    let mut pgid = 0i32;
    let mut spawn_err = None;
    'spawn: for (gi, g) in cell.groups.iter().enumerate() {
        for i in 0..g.processes {
            let index = workers.len() as u32;
            if index % 32 == 0 {
                if let Some(sig) = signals::stopped() {
                    let mut reaped = Vec::new();
                    kill_and_reap(pgid, workers.len(), &mut reaped, false);
                    return Ok(Outcome::Interrupted(sig));
                }
            }
            let job = Job {
                index,
                seed: cx.seed,
                dir: cx.dir.to_path_buf(),
                input: matches!(g.workload, Workload::Copy { .. }).then(|| cx.inputs[index as usize].clone()),
                workload: g.workload.clone(),
                repeat: g.background,
                engine_pid: std::process::id() as i32,
                read_dir: matches!(g.workload, Workload::ParRead(_)).then(|| cx.read_dir.to_path_buf()),
                rt: rt_set
                    .as_ref()
                    .filter(|r| r.group == gi)
                    .map(|r| RtJob { task: i, dispatch: r.slot(i as usize).map(|(p, slot)| (r.parts[p].region.clone(), slot)) }),
            };
            let json = serde_json::to_string(&job).expect("job serialises");
            let release = if g.background { bg_r.as_ref().expect("background pipe") } else { &rel_r };
            let mut cmd = Command::new(cx.exe);
            cmd.arg(WORKER_SUBCOMMAND)
                .arg(json)
                .stdin(Stdio::from(release.try_clone()?))
                .stdout(Stdio::from(res_w.try_clone()?))
                .stderr(Stdio::from(log.try_clone()?))
                .current_dir(cx.dir)
                .process_group(pgid);
            match cmd.spawn() {
                Ok(child) => {
                    let pid = child.id() as i32;
                    if pgid == 0 {
                        pgid = pid;
                    }
                    let allowed = g.cgroup.cpuset.as_deref().unwrap_or(cx.online);
                    let mut allowed = g.affinity.cpus_for(i, g.processes, allowed).unwrap_or_default();
                    let mut task = None;
                    if let Some(r) = rt_set.as_ref().filter(|r| r.group == gi) {
                        allowed = r.placement.as_ref().map(|p| vec![p[i as usize]]).unwrap_or_default();
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
    drop(rel_r);
    drop(bg_r);
    drop(res_w);
    if let Some(msg) = spawn_err {
        let mut reaped = Vec::new();
        kill_and_reap(pgid, workers.len(), &mut reaped, false);
        return Ok(failed(cell, step, ordinal, msg));
    }

    // Collect reports while workers run (the pipe holds only 64 KiB), and count the workers
    // that said they are prepared.
    let prepared = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&prepared);
    let spawned = workers.len();
    let collector = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(File::from(res_r)).lines() {
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

    // cgroups, policy and pinning, for every worker, before any of them is released.
    let mark = cx.journal.entries().len();
    let setup = apply_settings(cx, cell, &workers);
    if let Err(msg) = setup {
        abandon(cx, pgid, n, &mut Vec::new(), collector, mark);
        return Ok(failed(cell, step, ordinal, msg));
    }

    // The live dispatchers (edf, dwcs; one per CPU the set uses) join the workers' process
    // group, so every kill path takes them too; they are reaped like background workers.
    let mut n = n;
    let mut dispatchers: Vec<i32> = Vec::new();
    if let Some(r) = rt_set.as_ref() {
        let task_pid: HashMap<usize, i32> = workers.iter().filter_map(|w| w.task.map(|t| (t, w.pid))).collect();
        for part in &r.parts {
            let pids: Vec<i32> = part.tasks.iter().map(|t| task_pid[t]).collect();
            let cfg = serde_json::to_string(&crate::rt::dispatch_config(r.set, part.cpu, &part.tasks, &pids)).expect("config serialises");
            let spawned = Command::new(cx.exe)
                .arg(crate::rt::DISPATCH_SUBCOMMAND)
                .arg(&part.region)
                .arg(cfg)
                .arg(&part.metrics)
                .env(crate::rt::ENGINE_PID_ENV, std::process::id().to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(log.try_clone()?))
                .current_dir(cx.dir)
                .process_group(pgid)
                .spawn();
            match spawned {
                Ok(child) => {
                    dispatchers.push(child.id() as i32);
                    n += 1;
                }
                Err(e) => {
                    abandon(cx, pgid, n, &mut Vec::new(), collector, mark);
                    return Ok(failed(cell, step, ordinal, format!("could not start the dispatcher for CPU {}: {e}", part.cpu)));
                }
            }
        }
    }
    let mut bg_pids: Vec<i32> = workers.iter().filter(|w| cell.groups[w.group].background).map(|w| w.pid).collect();
    bg_pids.extend(&dispatchers);
    let mut reaped: Vec<Reaped> = Vec::with_capacity(n);
    // Every worker prepared (files written, bodies built, memory locked) before anyone is
    // released: no preparation overlaps measured work or the background lead, and a periodic
    // set's start is fixed only when every task can meet its first release.
    match wait_prepared(&prepared, workers.len(), pgid, &mut reaped) {
        Ok(()) => {}
        Err(stop) => {
            abandon(cx, pgid, n, &mut reaped, collector, mark);
            return Ok(match stop {
                Unprepared::Signal(sig) => Outcome::Interrupted(sig),
                Unprepared::Failed(why) => {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    let said: Vec<&str> = log.lines().take(3).collect();
                    let why = if said.is_empty() { why } else { format!("{why}: {}", said.join(" | ")) };
                    failed(cell, step, ordinal, why)
                }
            });
        }
    }
    if let Some(w) = bg_w {
        drop(w); // background groups start first and load the machine
        let until = monotonic_ns() + cx.background_lead.as_nanos() as u64;
        while monotonic_ns() < until {
            if let Wake::Stop(sig) = signals::wait(Duration::from_nanos(until.saturating_sub(monotonic_ns()).max(1))) {
                abandon(cx, pgid, n, &mut reaped, collector, mark);
                return Ok(Outcome::Interrupted(sig));
            }
            reap_ready(pgid, &mut reaped, false);
        }
    }
    let stat0 = Stat::read(cx.root);
    let disk0 = crate::device::read_stats(cx.root, cx.stat_devs);
    let bg_cpu0: HashMap<i32, u64> = bg_pids.iter().filter_map(|&p| exec_runtime_ns(cx.root, p).map(|ns| (p, ns))).collect();
    let (u0, s0, _) = self_usage();
    let started_unix = unix_now();
    let release_ns = monotonic_ns();
    if rt_set.as_ref().is_some_and(|r| !r.dispatched()) {
        // Every task's first release, on one clock for the whole set.
        std::fs::write(cx.dir.join(crate::rt::START_FILE), (release_ns + crate::rt::START_LEAD_NS).to_string())?;
    }
    drop(rel_w); // the release: every measured worker's read(2) returns 0 at once

    let measured = n - bg_pids.len();
    let done = |r: &[Reaped]| r.iter().filter(|x| !bg_pids.contains(&x.pid)).count() >= measured;
    let deadline = release_ns + cx.timeout.as_nanos() as u64;
    let mut timed_out = false;
    let mut dispatcher_died: Option<String> = None;
    while !done(&reaped) {
        reap_ready(pgid, &mut reaped, false);
        if done(&reaped) {
            break;
        }
        let ended: Vec<&Reaped> = reaped.iter().filter(|r| dispatchers.contains(&r.pid)).collect();
        if let Some(d) = ended.iter().find(|d| !exited_cleanly(d.status)) {
            // The workers demote themselves when their dispatcher is gone; the engine does
            // not wait for that: it kills them (and the other CPUs' dispatchers) at once.
            dispatcher_died = Some(describe_exit(d.status));
            kill_and_reap(pgid, n, &mut reaped, false);
            break;
        }
        // Finished dispatchers told their workers to exit: they have EXIT_GRACE to do so.
        if let Some(last) = ended.iter().map(|d| d.at_ns).max().filter(|_| ended.len() == dispatchers.len()) {
            if monotonic_ns() > last + EXIT_GRACE.as_nanos() as u64 {
                cx.warnings.push(format!(
                    "cell {}: workers still running {} s after their dispatcher finished were killed",
                    cell.key,
                    EXIT_GRACE.as_secs()
                ));
                kill_and_reap(pgid, n, &mut reaped, false);
                break;
            }
        }
        let now = monotonic_ns();
        if now >= deadline {
            timed_out = true;
            kill_and_reap(pgid, n, &mut reaped, true);
            break;
        }
        let wait = Duration::from_nanos((deadline - now).min(250_000_000));
        if let Wake::Stop(sig) = signals::wait(wait) {
            abandon(cx, pgid, n, &mut reaped, collector, mark);
            return Ok(Outcome::Interrupted(sig));
        }
    }
    let end_ns = reaped.iter().filter(|r| !bg_pids.contains(&r.pid)).map(|r| r.at_ns).max().unwrap_or(release_ns);
    let stat1 = Stat::read(cx.root);
    let disk1 = crate::device::read_stats(cx.root, cx.stat_devs);
    let (u1, s1, rss) = self_usage();
    // Background CPU inside the measured window: their lead and stop tail are left out.
    let bg_window: HashMap<i32, f64> =
        bg_pids.iter().filter_map(|p| Some((*p, exec_runtime_ns(cx.root, *p)?.saturating_sub(*bg_cpu0.get(p)?) as f64 * 1e-9))).collect();
    stop_background(pgid, n, &bg_pids, &mut reaped);
    let lines = collector.join().unwrap_or_default();
    cx.warnings.extend(cx.journal.undo_to(mark));

    let mut reports: HashMap<u32, Report> = HashMap::new();
    for l in &lines {
        let parsed = serde_json::from_str::<Report>(l).and_then(|r| match &r.spill {
            // A long report went to a file; the line only points at it.
            Some(p) => std::fs::read(p).map_err(serde_json::Error::io).and_then(|b| serde_json::from_slice::<Report>(&b)),
            None => Ok(r),
        });
        match parsed {
            Ok(r) => {
                // A command reports at its start; keep the first report per index.
                reports.entry(r.i).or_insert(r);
            }
            Err(e) => cx.warnings.push(format!("cell {}: unreadable worker report ({e}): {l}", cell.key)),
        }
    }
    for d in reaped.iter().filter(|r| dispatchers.contains(&r.pid)) {
        if dispatcher_died.is_none() && !exited_cleanly(d.status) {
            dispatcher_died = Some(describe_exit(d.status));
        }
    }
    // Each CPU's dispatcher metrics (None where none was written).
    let mut metrics: Vec<Option<schedlab_dispatch::Metrics>> = match &rt_set {
        Some(r) => r.parts.iter().map(|p| std::fs::read(&p.metrics).ok().and_then(|b| serde_json::from_slice(&b).ok())).collect(),
        None => Vec::new(),
    };
    // The dispatchers' per-job records go to the samples, not into the cell's rt_json.
    let dispatch_logs: Vec<Vec<String>> =
        metrics.iter_mut().map(|m| m.as_mut().map(|m| std::mem::take(&mut m.job_logs)).unwrap_or_default()).collect();
    let by_pid: HashMap<i32, &Worker> = workers.iter().map(|w| (w.pid, w)).collect();
    let mut samples: Vec<Sample> = reaped
        .iter()
        .filter_map(|r| {
            by_pid.get(&r.pid).map(|w| sample(r, w, &cell.groups[w.group], reports.get(&w.index), release_ns, bg_window.get(&r.pid)))
        })
        .collect();
    samples.sort_by_key(|s| s.index);
    if let Some(r) = &rt_set {
        for s in samples.iter_mut() {
            let Some(task) = by_pid.get(&s.pid).and_then(|w| w.task) else { continue };
            let slot = r.slot(task);
            let rt = match slot {
                Some((p, slot)) => metrics[p]
                    .as_ref()
                    .and_then(|m| crate::rt::task_from_metrics(m, slot, s.extra.get("detail")))
                    .and_then(|t| serde_json::to_value(t).ok()),
                None => s.extra.get_mut("detail").and_then(|d| d.as_object_mut()).and_then(|d| d.remove("rt")),
            };
            if let (Some(rt), Some(extra)) = (rt, s.extra.as_object_mut()) {
                extra.insert("rt".into(), rt);
            }
            // Per-job records: the worker's own (in its report), else the dispatcher's.
            let own = s.extra.get_mut("detail").and_then(|d| d.as_object_mut()).and_then(|d| d.remove(crate::rt::JOBS_KEY));
            let encoded = match &own {
                Some(v) => v.as_str(),
                None => slot.and_then(|(p, slot)| dispatch_logs[p].get(slot)).map(String::as_str),
            };
            match encoded.map(schedlab_model::jobs::JobLog::from_base64) {
                Some(Ok(log)) => s.jobs = Some(log),
                Some(Err(e)) => cx.warnings.push(format!("cell {}: worker {}: {e}", cell.key, s.index)),
                None => {}
            }
        }
    }
    check_samples(cx, cell, &samples);
    if let Ok(text) = std::fs::read_to_string(&log_path) {
        if !text.trim().is_empty() {
            let first: Vec<&str> = text.lines().take(3).collect();
            cx.warnings.push(format!("cell {}: workers wrote to stderr: {}", cell.key, first.join(" | ")));
        }
    }
    let cut = match (&dispatcher_died, timed_out) {
        (Some(how), _) => crate::verdict::Cut::Dispatcher(how.clone()),
        (None, true) => crate::verdict::Cut::Watchdog(cx.timeout.as_secs_f64()),
        (None, false) => crate::verdict::Cut::None,
    };
    let (status, message) = crate::verdict::judge(&samples, &cut);
    let record = CellRecord {
        params: cell.params(),
        rep: step.rep,
        warmup: step.warmup,
        ordinal,
        status,
        message,
        started_unix,
        makespan_s: (end_ns - release_ns) as f64 * 1e-9,
        stat: match (stat0, stat1) {
            (Some(a), Some(b)) => b.since(&a),
            _ => Default::default(),
        },
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
    };
    Ok(Outcome::Done(Box::new(record)))
}

/// cgroups (journaled), policy and pinning for every worker; an error names what failed.
fn apply_settings(cx: &mut CellCtx, cell: &Cell, workers: &[Worker]) -> Result<(), String> {
    let mut groups_cg = Vec::new();
    if cell.uses_cgroups() {
        let h = cx.cgroups.ok_or("this cell needs cgroups but none are available")?;
        for g in &cell.groups {
            // Groups without settings still get their own cgroup at the default weight, so
            // weights compare like with like.
            let mut s = cgroup::Settings::from(&g.cgroup);
            s.weight = Some(s.weight.unwrap_or(100));
            let name = format!("{}-c{}-{}", cx.tag, cell.index, g.name);
            groups_cg.push(h.create(cx.journal, &name, &s).map_err(|e| format!("creating cgroup {name}: {e}"))?);
        }
    }
    for w in workers {
        let g = &cell.groups[w.group];
        if let Some(cg) = groups_cg.get(w.group) {
            cg.add(w.pid).map_err(|e| format!("moving worker {} into its cgroup: {e}", w.index))?;
        }
        if !w.allowed.is_empty() {
            schedlab_sys::cpus::set_affinity(w.pid, &w.allowed)
                .map_err(|e| format!("pinning worker {} to CPUs {:?}: {e}", w.index, w.allowed))?;
        }
        let policy = match (w.task, &g.workload) {
            (Some(t), Workload::Periodic(p)) => crate::rt::worker_policy(p, t),
            _ => g.policy,
        };
        let mut applied = sched::apply(w.pid, &policy, false);
        // The bandwidth of SCHED_DEADLINE tasks that just exited (the previous repetition's)
        // is only returned at their 0-lag time, up to a period later: retry for a second.
        let mut tries = 0;
        while policy.class == Class::Deadline && tries < 20 && applied.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EBUSY)) {
            std::thread::sleep(Duration::from_millis(50));
            applied = sched::apply(w.pid, &policy, false);
            tries += 1;
        }
        applied.map_err(|e| format!("worker {} (pid {}): {}", w.index, w.pid, explain_refusal(cell, g, &e, cx.root)))?;
    }
    Ok(())
}

/// Gives up a cell whose settings were applied (a stop signal, or a failure before its end):
/// kills and reaps its `n` processes, drops their reports and undoes the cell's settings
/// journaled since `mark`, so every early return leaves the machine as the cell found it.
fn abandon(cx: &mut CellCtx, pgid: i32, n: usize, reaped: &mut Vec<Reaped>, collector: std::thread::JoinHandle<Vec<String>>, mark: usize) {
    kill_and_reap(pgid, n, reaped, false);
    let _ = collector.join();
    cx.warnings.extend(cx.journal.undo_to(mark));
}

/// How long workers told to stop (background ones by SIGTERM, dispatched ones by their
/// dispatcher's shutdown) have to report and exit before they are killed. They take
/// milliseconds; the margin is for a host that stops the VM's CPUs for a while (steal), when
/// killing them would lose their reports.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Stops background workers: SIGTERM (they finish a chunk and report), SIGKILL after
/// [`EXIT_GRACE`].
fn stop_background(pgid: i32, n: usize, bg: &[i32], reaped: &mut Vec<Reaped>) {
    if bg.is_empty() {
        return;
    }
    for &pid in bg {
        if !reaped.iter().any(|r| r.pid == pid) {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
    let until = monotonic_ns() + EXIT_GRACE.as_nanos() as u64;
    while reaped.len() < n && monotonic_ns() < until {
        reap_ready(pgid, reaped, false);
        if reaped.len() < n {
            let _ = signals::wait(Duration::from_millis(20));
        }
    }
    kill_and_reap(pgid, n, reaped, false);
}

/// Warnings for what workers saw that differs from what was applied.
fn check_samples(cx: &mut CellCtx, cell: &Cell, samples: &[Sample]) {
    for s in samples {
        let g = cell.groups.iter().find(|g| g.name == s.group).expect("sample of a known group");
        let expect = g.policy.class.name();
        // Tasks of a periodic set each have their own policy (and edf/dwcs ones change it).
        if g.workload.periodic().is_some() {
            continue;
        }
        if s.extra.get("policy").and_then(|p| p.as_str()).is_some_and(|p| p != expect) {
            cx.warnings
                .push(format!("cell {}: worker {} ran under {} although {} was applied", cell.key, s.index, s.extra["policy"], expect));
            break;
        }
        if !s.allowed_cpus.is_empty() && s.cpus_seen.iter().any(|c| !s.allowed_cpus.contains(c)) {
            cx.warnings.push(format!("cell {}: worker {} pinned to {:?} was seen on {:?}", cell.key, s.index, s.allowed_cpus, s.cpus_seen));
        }
    }
    for s in samples.iter().filter(|s| s.extra.get("error").is_some_and(|e| !e.is_null())) {
        cx.warnings.push(format!("cell {}: worker {} failed: {}", cell.key, s.index, s.extra["error"]));
    }
}

fn sample(r: &Reaped, w: &Worker, g: &Group, rep: Option<&Report>, release_ns: u64, bg_window: Option<&f64>) -> Sample {
    let st = r.status;
    let (exit_code, signal) = if libc::WIFEXITED(st) {
        (Some(libc::WEXITSTATUS(st)), None)
    } else if libc::WIFSIGNALED(st) {
        (None, Some(libc::WTERMSIG(st)))
    } else {
        (None, None)
    };
    let engine_wall = (r.at_ns.saturating_sub(release_ns)) as f64 * 1e-9;
    let user = tv_secs(r.ru.ru_utime);
    let sys = tv_secs(r.ru.ru_stime);
    let is_exec = matches!(g.workload, Workload::Command { .. });
    // A worker's own clock brackets its work; an exec'd command ends when it is reaped.
    // Offsets are signed: background workers start before the release.
    let off = |t: u64| (t as f64 - release_ns as f64) * 1e-9;
    let (start_off, end_off, wall) = match rep {
        Some(p) if p.start_ns > 0 && !is_exec && p.end_ns >= p.start_ns && p.error.is_none() => {
            (off(p.start_ns), off(p.end_ns), (p.end_ns - p.start_ns) as f64 * 1e-9)
        }
        Some(p) if p.start_ns > 0 => (off(p.start_ns), engine_wall, engine_wall - off(p.start_ns)),
        _ => (0.0, engine_wall, engine_wall),
    };
    let setup_cpu = rep.map(|p| p.setup[0] + p.setup[1]).unwrap_or(0.0);
    let mut extra = serde_json::Map::new();
    if let Some(p) = rep {
        extra.insert("policy".into(), p.policy.clone().into());
        extra.insert("nice".into(), p.nice.into());
        extra.insert("cpu".into(), p.cpu.into());
        if !p.detail.is_null() {
            extra.insert("detail".into(), p.detail.clone());
        }
        if let Some(e) = &p.error {
            extra.insert("error".into(), e.clone().into());
        }
    }
    Sample {
        index: w.index,
        group: g.name.clone(),
        background: g.background,
        allowed_cpus: w.allowed.clone(),
        cpus_seen: rep.map(|p| p.cpus.clone()).unwrap_or_default(),
        pid: r.pid,
        exit_code,
        signal,
        timed_out: r.timed_out,
        wall_s: wall,
        engine_wall_s: engine_wall,
        user_s: user,
        sys_s: sys,
        // CPU share of the work itself: the exec and setup before the release are not in `wall`.
        cpu_pct: if wall > 0.0 { ((user + sys) - setup_cpu).max(0.0) / wall * 100.0 } else { 0.0 },
        voluntary_csw: r.ru.ru_nvcsw,
        involuntary_csw: r.ru.ru_nivcsw,
        max_rss_kb: r.ru.ru_maxrss,
        minor_faults: r.ru.ru_minflt,
        major_faults: r.ru.ru_majflt,
        block_in: r.ru.ru_inblock,
        block_out: r.ru.ru_oublock,
        setup_user_s: rep.map(|p| p.setup[0]).unwrap_or(0.0),
        setup_sys_s: rep.map(|p| p.setup[1]).unwrap_or(0.0),
        setup_voluntary_csw: rep.map(|p| p.setup[2] as i64).unwrap_or(0),
        setup_involuntary_csw: rep.map(|p| p.setup[3] as i64).unwrap_or(0),
        window_cpu_s: match bg_window {
            Some(w) => *w,
            None if g.background => 0.0,
            None => (user + sys - setup_cpu).max(0.0),
        },
        work_units: rep.map(|p| if is_exec { 1.0 } else { p.units }).unwrap_or(0.0),
        start_offset_s: start_off,
        end_offset_s: end_off,
        extra: serde_json::Value::Object(extra),
        jobs: None,
    }
}
