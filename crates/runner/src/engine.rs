//! One cell repetition: spawn N blocked workers, apply the policy, release them all by
//! closing one pipe, reap each with wait4, and build its samples.

use crate::protocol::{Job, Report, WORKER_SUBCOMMAND};
use crate::signals::{self, Wake};
use schedlab_model::{CellParams, CellRecord, CellStatus, Sample};
use schedlab_spec::{Cell, Class, Step, Workload};
use schedlab_sys::procfs::{monotonic_ns, self_usage, tv_secs, Stat};
use schedlab_sys::{sched, Root};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// The parameters stored beside a cell's results.
pub fn params(cell: &Cell) -> CellParams {
    CellParams {
        cell_id: cell.index,
        key: cell.key.clone(),
        workload: cell.workload_name.clone(),
        workload_kind: cell.workload.kind().to_string(),
        policy: cell.policy_name.clone(),
        class: cell.policy.class.name().to_string(),
        priority: cell.policy.priority as i32,
        nice: cell.policy.nice,
        processes: cell.processes,
    }
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

fn failed(cell: &Cell, step: &Step, ordinal: u32, msg: String) -> Outcome {
    Outcome::Done(Box::new(CellRecord {
        params: params(cell),
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
    }))
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Explains a refused sched_setattr in the user's terms.
fn explain_refusal(cell: &Cell, err: &std::io::Error, root: &Root) -> String {
    let p = &cell.policy;
    if p.class == Class::Deadline && err.raw_os_error() == Some(libc::EBUSY) {
        let d = p.deadline.expect("deadline params");
        let per = d.runtime_ns as f64 / d.period_ns as f64;
        let rt: f64 = root.read_parse("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or(950_000.0);
        let period: f64 = root.read_parse("/proc/sys/kernel/sched_rt_period_us").unwrap_or(1_000_000.0);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
        return format!(
            "SCHED_DEADLINE admission refused: {} workers x runtime/period {:.4} = {:.3} exceeds the limit {:.3} ({} CPUs x {}/{}), less what other deadline tasks already hold",
            cell.processes,
            per,
            per * cell.processes as f64,
            cpus * rt / period,
            cpus,
            rt,
            period
        );
    }
    format!("cannot apply policy {} ({}): {err}", cell.policy_name, p.class.name())
}

/// Runs one cell repetition.
pub fn run_cell(cx: &mut CellCtx, cell: &Cell, step: &Step, ordinal: u32) -> std::io::Result<Outcome> {
    let n = cell.processes as usize;
    let (rel_r, rel_w) = pipe()?;
    let (res_r, res_w) = pipe()?;
    let log_path = cx.dir.join("stderr.log");
    let log = File::options().write(true).create_new(true).open(&log_path)?;

    // Spawn every worker blocked on the release pipe, all in one new process group.
    let mut pids: Vec<i32> = Vec::with_capacity(n);
    let mut pgid = 0i32;
    let mut spawn_err = None;
    for i in 0..n {
        if i % 32 == 0 {
            if let Some(sig) = signals::stopped() {
                let mut reaped = Vec::new();
                kill_and_reap(pgid, pids.len(), &mut reaped, false);
                return Ok(Outcome::Interrupted(sig));
            }
        }
        let job = Job {
            index: i as u32,
            seed: cx.seed,
            dir: cx.dir.to_path_buf(),
            input: matches!(cell.workload, Workload::Copy { .. }).then(|| cx.inputs[i].clone()),
            workload: cell.workload.clone(),
            engine_pid: std::process::id() as i32,
        };
        let json = serde_json::to_string(&job).expect("job serialises");
        let mut cmd = Command::new(cx.exe);
        cmd.arg(WORKER_SUBCOMMAND)
            .arg(json)
            .stdin(Stdio::from(rel_r.try_clone()?))
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
                pids.push(pid);
            }
            Err(e) => {
                spawn_err = Some(format!("could not start worker {i} of {n}: {e} (see `schedlab env` for process limits)"));
                break;
            }
        }
    }
    drop(rel_r);
    drop(res_w);
    if let Some(msg) = spawn_err {
        let mut reaped = Vec::new();
        kill_and_reap(pgid, pids.len(), &mut reaped, false);
        return Ok(failed(cell, step, ordinal, msg));
    }

    // Collect reports while workers run: the pipe holds only 64 KiB.
    let collector = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(File::from(res_r)).lines() {
            match line {
                Ok(l) => lines.push(l),
                Err(_) => break,
            }
        }
        lines
    });

    // Apply the policy to every worker before any of them is released.
    for (i, &pid) in pids.iter().enumerate() {
        if let Err(e) = sched::apply(pid, &cell.policy, false) {
            let mut reaped = Vec::new();
            kill_and_reap(pgid, n, &mut reaped, false);
            let _ = collector.join();
            let msg = format!("worker {i} (pid {pid}): {}", explain_refusal(cell, &e, cx.root));
            return Ok(failed(cell, step, ordinal, msg));
        }
    }

    let stat0 = Stat::read(cx.root);
    let (u0, s0, _) = self_usage();
    let started_unix = unix_now();
    let release_ns = monotonic_ns();
    drop(rel_w); // the release: every worker's read(2) returns 0 at once

    let deadline = release_ns + cx.timeout.as_nanos() as u64;
    let mut reaped: Vec<Reaped> = Vec::with_capacity(n);
    let mut timed_out = false;
    while reaped.len() < n {
        reap_ready(pgid, &mut reaped, false);
        if reaped.len() >= n {
            break;
        }
        let now = monotonic_ns();
        if now >= deadline {
            timed_out = true;
            kill_and_reap(pgid, n, &mut reaped, true);
            break;
        }
        let wait = Duration::from_nanos((deadline - now).min(250_000_000));
        if let Wake::Stop(sig) = signals::wait(wait) {
            kill_and_reap(pgid, n, &mut reaped, false);
            let _ = collector.join();
            return Ok(Outcome::Interrupted(sig));
        }
    }
    let end_ns = reaped.iter().map(|r| r.at_ns).max().unwrap_or(release_ns);
    let stat1 = Stat::read(cx.root);
    let (u1, s1, rss) = self_usage();
    let lines = collector.join().unwrap_or_default();

    let mut reports: HashMap<u32, Report> = HashMap::new();
    for l in &lines {
        match serde_json::from_str::<Report>(l) {
            Ok(r) => {
                // A command reports at its start; keep the first report per index.
                reports.entry(r.i).or_insert(r);
            }
            Err(e) => cx.warnings.push(format!("cell {}: unreadable worker report ({e}): {l}", cell.key)),
        }
    }
    let index_of: HashMap<i32, u32> = pids.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
    let mut samples: Vec<Sample> =
        reaped.iter().map(|r| sample(r, index_of[&r.pid], reports.get(&index_of[&r.pid]), release_ns, cell)).collect();
    samples.sort_by_key(|s| s.index);

    let expect = cell.policy.class.name();
    if let Some(s) = samples.iter().find(|s| s.extra.get("policy").and_then(|p| p.as_str()).is_some_and(|p| p != expect)) {
        cx.warnings.push(format!("cell {}: worker {} ran under {} although {} was applied", cell.key, s.index, s.extra["policy"], expect));
    }
    for s in samples.iter().filter(|s| s.extra.get("error").is_some_and(|e| !e.is_null())) {
        cx.warnings.push(format!("cell {}: worker {} failed: {}", cell.key, s.index, s.extra["error"]));
    }
    if let Ok(text) = std::fs::read_to_string(&log_path) {
        if !text.trim().is_empty() {
            let first: Vec<&str> = text.lines().take(3).collect();
            cx.warnings.push(format!("cell {}: workers wrote to stderr: {}", cell.key, first.join(" | ")));
        }
    }
    let record = CellRecord {
        params: params(cell),
        rep: step.rep,
        warmup: step.warmup,
        ordinal,
        status: if timed_out { CellStatus::TimedOut } else { CellStatus::Ok },
        message: timed_out.then(|| format!("watchdog: workers still running after {:.0} s were killed", cx.timeout.as_secs_f64())),
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
    };
    Ok(Outcome::Done(Box::new(record)))
}

fn sample(r: &Reaped, index: u32, rep: Option<&Report>, release_ns: u64, cell: &Cell) -> Sample {
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
    let is_exec = matches!(cell.workload, Workload::Command { .. });
    // A worker's own clock brackets its work; an exec'd command ends when it is reaped.
    let (start_off, end_off, wall) = match rep {
        Some(p) if p.start_ns > 0 && !is_exec && p.end_ns >= p.start_ns && p.error.is_none() => {
            let so = p.start_ns.saturating_sub(release_ns) as f64 * 1e-9;
            let eo = p.end_ns.saturating_sub(release_ns) as f64 * 1e-9;
            (so, eo, eo - so)
        }
        Some(p) if p.start_ns > 0 => {
            let so = p.start_ns.saturating_sub(release_ns) as f64 * 1e-9;
            (so, engine_wall, engine_wall - so)
        }
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
        index,
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
        setup_user_s: rep.map(|p| p.setup[0]).unwrap_or(0.0),
        setup_sys_s: rep.map(|p| p.setup[1]).unwrap_or(0.0),
        setup_voluntary_csw: rep.map(|p| p.setup[2] as i64).unwrap_or(0),
        setup_involuntary_csw: rep.map(|p| p.setup[3] as i64).unwrap_or(0),
        work_units: rep.map(|p| if is_exec { 1.0 } else { p.units }).unwrap_or(0.0),
        start_offset_s: start_off,
        end_offset_s: end_off,
        extra: serde_json::Value::Object(extra),
    }
}
