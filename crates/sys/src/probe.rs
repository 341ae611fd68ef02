//! What this process may really do with scheduling policies: a forked child tries each one
//! and exits, so the answer is the kernel's, not one inferred from capabilities and rlimits.
//!
//! RT group scheduling (CONFIG_RT_GROUP_SCHED), containers and cpusets refuse what root
//! "should" be allowed: a task in a cgroup that holds no RT runtime may not become SCHED_FIFO,
//! and SCHED_DEADLINE is admitted only for a task that may run on every CPU of its root
//! domain. When real-time is refused in this process's own cgroup, the child moves itself to
//! the root of the cpu hierarchy and tries again: if that works, a run can move its engine
//! there ([`place`], journaled) and its workers follow.

use crate::journal::{Entry, Journal};
use crate::sched::consts::*;
use crate::Root;
use schedlab_plan::{Capabilities, RtPlacement};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The policies the probe tries, in the order it tries them: idle last, since an
/// unprivileged task may not leave SCHED_IDLE again.
pub const TRIED: [&str; 6] = ["other", "batch", "fifo", "rr", "deadline", "idle"];

/// What the kernel answered for one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// sched_setattr succeeded in this process's own cgroup.
    Allowed,
    /// Refused here, allowed once the child had moved itself to the placement cgroup.
    AllowedThere,
    /// Refused with this errno (also after the move, if one was tried).
    Refused(i32),
}

impl Answer {
    /// True when a run can give its workers this policy (after placing them, if need be).
    pub fn usable(self) -> bool {
        !matches!(self, Answer::Refused(_))
    }
}

/// This process's cgroup in the cpu controller's hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuCgroup {
    /// Its directory.
    pub dir: PathBuf,
    /// Its path within the hierarchy (`/` for the root).
    pub rel: String,
    /// The hierarchy's root directory.
    pub hierarchy_root: PathBuf,
    /// On the v2 tree (else a v1 cpu hierarchy).
    pub v2: bool,
    /// `cpu.rt_runtime_us` of the cgroup, where the kernel has RT group scheduling.
    pub rt_runtime_us: Option<i64>,
}

/// The probe's findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Each policy of [`TRIED`] with the kernel's answer.
    pub answers: Vec<(&'static str, Answer)>,
    /// This process's cpu cgroup, if the machine has a cpu controller.
    pub cgroup: Option<CpuCgroup>,
    /// The cgroup the child moved itself into when real-time was refused in its own.
    pub tried_in: Option<PathBuf>,
    /// This process's CPU affinity and the online CPUs (SCHED_DEADLINE wants all).
    pub affinity: (Vec<u32>, Vec<u32>),
}

impl Probe {
    /// The answer for `policy` (a name of [`TRIED`]).
    pub fn answer(&self, policy: &str) -> Answer {
        self.answers
            .iter()
            .find(|(p, _)| *p == policy)
            .map(|(_, a)| *a)
            .unwrap_or(Answer::Refused(0))
    }
}

/// The VER0 sched_attr (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Attr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

fn attr(name: &str, nice: i32) -> Attr {
    let base = Attr { size: 48, nice, ..Attr::default() };
    match name {
        "other" => Attr { policy: SCHED_OTHER, ..base },
        "batch" => Attr { policy: SCHED_BATCH, ..base },
        "idle" => Attr { policy: SCHED_IDLE, ..base },
        "fifo" => Attr { policy: SCHED_FIFO, priority: 1, ..base },
        "rr" => Attr { policy: SCHED_RR, priority: 1, ..base },
        // 100 us every 100 ms: the smallest reservation any kernel admits, 0.1% of a CPU.
        _ => Attr {
            policy: SCHED_DEADLINE,
            runtime: 100_000,
            deadline: 100_000_000,
            period: 100_000_000,
            ..base
        },
    }
}

fn set(a: &Attr) -> i32 {
    // SAFETY: a valid sched_attr of the size it declares; async-signal-safe (a system call).
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, a as *const Attr, 0u32) };
    if r == 0 {
        0
    } else {
        // SAFETY: errno of this thread.
        unsafe { *libc::__errno_location() }
    }
}

/// Forks a child that tries every policy of [`TRIED`] on itself, and, for those refused,
/// again after writing itself into `there`'s `cgroup.procs`; it reports and exits. The child
/// only makes system calls (this process may have threads).
fn try_in_child(nice: i32, there: Option<&Path>) -> io::Result<[i32; 12]> {
    let attrs: Vec<Attr> = TRIED.iter().map(|n| attr(n, nice)).collect();
    let back = attr("other", nice);
    let procs = there
        .map(|d| CString::new(d.join("cgroup.procs").as_os_str().as_bytes()))
        .transpose()
        .map_err(io::Error::other)?;
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the child below makes only async-signal-safe calls and ends in _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: closing our own pipe.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(e);
    }
    if pid == 0 {
        // -1: not tried.
        let mut out = [-1i32; 12];
        for (i, a) in attrs.iter().enumerate() {
            out[i] = set(a);
            if out[i] == 0 && i + 1 < attrs.len() {
                set(&back);
            }
        }
        // Real-time (fifo, rr, deadline) refused here: try again from the other cgroup.
        if let Some(p) = &procs {
            if (2..5).any(|i| out[i] != 0) {
                // SAFETY: a valid C string; plain system calls.
                let fd = unsafe { libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
                let moved = fd >= 0 && unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1;
                if fd >= 0 {
                    unsafe { libc::close(fd) };
                }
                if moved {
                    for i in 2..5 {
                        if out[i] != 0 {
                            out[6 + i] = set(&attrs[i]);
                            set(&back);
                        }
                    }
                }
            }
        }
        // SAFETY: out is plain data; the write end is ours.
        unsafe {
            libc::write(fds[1], out.as_ptr().cast(), std::mem::size_of_val(&out));
            libc::_exit(0);
        }
    }
    // SAFETY: closing the child's end in the parent.
    unsafe { libc::close(fds[1]) };
    let mut out = [-1i32; 12];
    let want = std::mem::size_of_val(&out);
    // SAFETY: reading into a buffer of exactly `want` bytes.
    let n = unsafe { libc::read(fds[0], out.as_mut_ptr().cast(), want) };
    let read_err = io::Error::last_os_error();
    // SAFETY: our own fd and child.
    unsafe {
        libc::close(fds[0]);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
    }
    if n != want as isize {
        return Err(if n < 0 { read_err } else { io::Error::other("the probe child died") });
    }
    Ok(out)
}

/// This process's cgroup in the cpu controller's hierarchy, from /proc/self/cgroup.
pub fn cpu_cgroup(root: &Root) -> Option<CpuCgroup> {
    let text = root.read("/proc/self/cgroup").ok()?;
    let (hierarchy_root, v2) = match crate::cgroup::detect(root)? {
        crate::cgroup::Hierarchy::V1 { cpu, .. } => (cpu?, false),
        crate::cgroup::Hierarchy::V2 { root, .. } => (root, true),
    };
    let rel = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        let ours = if v2 { ctrl.is_empty() } else { ctrl.split(',').any(|c| c == "cpu") };
        ours.then(|| path.to_string())
    })?;
    let dir = match rel.trim_start_matches('/') {
        "" => hierarchy_root.clone(),
        below => hierarchy_root.join(below),
    };
    let rt_runtime_us = std::fs::read_to_string(dir.join("cpu.rt_runtime_us"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    Some(CpuCgroup { dir, rel, hierarchy_root, v2, rt_runtime_us })
}

/// Runs the probe: this process's nice, its cpu cgroup (and the hierarchy's root as the
/// place to try again, when it is elsewhere and real-time is refused).
pub fn run(root: &Root) -> io::Result<Probe> {
    let cgroup = cpu_cgroup(root);
    let there = cgroup.as_ref().filter(|c| c.rel != "/").map(|c| c.hierarchy_root.clone());
    let out = try_in_child(crate::env::current_nice(), there.as_deref())?;
    let answers = TRIED
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let a = match (out[i], out.get(6 + i).copied().unwrap_or(-1)) {
                (0, _) => Answer::Allowed,
                (_, 0) => Answer::AllowedThere,
                (e, _) => Answer::Refused(e),
            };
            (*p, a)
        })
        .collect::<Vec<_>>();
    let moved = answers.iter().any(|(_, a)| *a == Answer::AllowedThere);
    Ok(Probe {
        answers,
        cgroup,
        tried_in: there.filter(|_| moved),
        affinity: (crate::cpus::affinity_self(), crate::cpus::online(root)),
    })
}

fn errno_name(e: i32) -> String {
    match e {
        libc::EPERM => "EPERM".into(),
        libc::EBUSY => "EBUSY".into(),
        libc::EINVAL => "EINVAL".into(),
        0 => "no answer".into(),
        e => format!("errno {e}"),
    }
}

/// Why real-time (fifo, rr) is refused in this process's cgroup, in the user's terms, with
/// the remedy.
pub fn rt_refusal(p: &Probe, errno: i32) -> String {
    match &p.cgroup {
        Some(c) => format!(
            "{}. Remedy: give that cgroup RT runtime (`echo 950000 > {}`, its parent permitting), or start schedlab from a cgroup that has some (`echo $$ > {}`)",
            rt_cause(p, errno),
            c.dir.join("cpu.rt_runtime_us").display(),
            c.hierarchy_root.join("cgroup.procs").display()
        ),
        None => rt_cause(p, errno),
    }
}

/// [`rt_refusal`] without the remedy: what refused, and where.
fn rt_cause(p: &Probe, errno: i32) -> String {
    let Some(c) = &p.cgroup else {
        return format!("the kernel refused SCHED_FIFO to a child of this process ({}), though the privilege allows it (a container's seccomp policy or a security module may forbid it)", errno_name(errno));
    };
    let hierarchy = if c.v2 { "cgroup v2" } else { "the cgroup v1 cpu hierarchy" };
    let runtime = match c.rt_runtime_us {
        Some(r) => format!("holds cpu.rt_runtime_us = {r}"),
        None => "holds no RT runtime the kernel shows".into(),
    };
    format!(
        "the kernel refused SCHED_FIFO to a child of this process ({}): its cgroup {} ({hierarchy}) {runtime}, and under RT group scheduling (CONFIG_RT_GROUP_SCHED) a task in a cgroup without RT runtime may not become real-time, root or not",
        errno_name(errno),
        c.dir.display(),
    )
}

/// Why SCHED_DEADLINE is refused, in the user's terms.
pub fn deadline_refusal(p: &Probe, errno: i32) -> String {
    let (mine, online) = &p.affinity;
    if errno == libc::EPERM && !mine.is_empty() && mine.len() < online.len() {
        return format!(
            "the kernel refused SCHED_DEADLINE to a child of this process (EPERM): it may run only on CPUs {} of the online {} (its affinity or cpuset), and the kernel admits a deadline task only where it may run on every CPU of its root domain. Remedy: run schedlab with the whole machine's affinity (`taskset -a -p -c {} $$`) outside a narrower cpuset",
            crate::cpus::format_list(mine),
            crate::cpus::format_list(online),
            crate::cpus::format_list(online)
        );
    }
    if errno == libc::EBUSY {
        return "the kernel refused SCHED_DEADLINE to a child of this process (EBUSY): the deadline bandwidth of its root domain is taken (kernel.sched_rt_runtime_us bounds it; other deadline tasks hold the rest)".into();
    }
    if errno == libc::EPERM && p.answer("fifo") == Answer::Refused(libc::EPERM) {
        return format!("{} (SCHED_DEADLINE was refused too, EPERM)", rt_refusal(p, errno));
    }
    format!(
        "the kernel refused SCHED_DEADLINE to a child of this process ({}), though the privilege allows it",
        errno_name(errno)
    )
}

/// Adds the probe's answers to `caps` (read from privileges and rlimits): what is refused
/// although they allow it, and where a run would move its engine to get real-time.
pub fn apply(caps: &mut Capabilities, p: &Probe) {
    let privileged_rt = caps.sys_nice || caps.rtprio_limit >= 1;
    let fifo = p.answer("fifo");
    caps.rt_placement = None;
    caps.rt_refused = None;
    if privileged_rt {
        match fifo {
            Answer::Refused(e) => caps.rt_refused = Some(rt_refusal(p, e)),
            Answer::AllowedThere => {
                let (c, to) = (p.cgroup.as_ref(), p.tried_in.clone());
                if let (Some(c), Some(to)) = (c, to) {
                    caps.rt_placement = Some(RtPlacement {
                        from: c.dir.clone(),
                        to: to.clone(),
                        why: format!(
                            "{}; so this run's engine and workers run in {} (the hierarchy's root, which holds RT runtime) instead, and go back afterwards",
                            rt_cause(p, libc::EPERM),
                            to.display()
                        ),
                    });
                }
            }
            Answer::Allowed => {}
        }
    }
    caps.deadline_refused = None;
    if caps.sys_nice {
        if let Answer::Refused(e) = p.answer("deadline") {
            caps.deadline_refused = Some(deadline_refusal(p, e));
        }
    }
}

/// Moves this process (every thread) into `p.to` for a run, journaled first: the undo
/// writes it back into `p.from` if this process (pid and start time) still runs. Call it
/// before the engine raises its priority: the kernel refuses to move a real-time task into
/// a cgroup without RT runtime, so the engine must be an ordinary task again before the
/// journal's undo runs.
pub fn place(journal: &mut Journal, p: &RtPlacement) -> io::Result<()> {
    move_engine(journal, &p.from, &p.to)
}

/// Moves this process (every thread) from cgroup `from` into `to`, journaled first: the
/// undo writes it back into `from` if this process (pid and start time) still runs.
pub(crate) fn move_engine(journal: &mut Journal, from: &Path, to: &Path) -> io::Result<()> {
    let pid = std::process::id() as i32;
    let start = crate::procfs::process_start(pid)
        .map(|(s, _)| s)
        .ok_or_else(|| io::Error::other("cannot read this process's start time"))?;
    journal.record(Entry::ReturnToCgroup { pid, start, cgroup: from.to_path_buf() })?;
    std::fs::write(to.join("cgroup.procs"), pid.to_string()).map_err(|e| {
        io::Error::new(e.kind(), format!("moving the engine into {}: {e}", to.display()))
    })
}

/// The undo of [`place`]: writes `pid` back into `cgroup` if it is still that process.
pub(crate) fn return_to(pid: i32, start: u64, cgroup: &Path) -> io::Result<()> {
    let ours = crate::procfs::process_start(pid).is_some_and(|(s, alive)| alive && s == start);
    if !ours {
        return Ok(());
    }
    match std::fs::write(cgroup.join("cgroup.procs"), pid.to_string()) {
        // The cgroup was removed meanwhile: nothing to go back to.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(fifo: Answer, deadline: Answer, rt_runtime_us: Option<i64>) -> Probe {
        Probe {
            answers: vec![
                ("other", Answer::Allowed),
                ("batch", Answer::Allowed),
                ("fifo", fifo),
                ("rr", fifo),
                ("deadline", deadline),
                ("idle", Answer::Allowed),
            ],
            cgroup: Some(CpuCgroup {
                dir: "/sys/fs/cgroup/cpu/rtzero".into(),
                rel: "/rtzero".into(),
                hierarchy_root: "/sys/fs/cgroup/cpu".into(),
                v2: false,
                rt_runtime_us,
            }),
            tried_in: (fifo == Answer::AllowedThere).then(|| "/sys/fs/cgroup/cpu".into()),
            affinity: (vec![0, 1], vec![0, 1]),
        }
    }

    #[test]
    fn an_rt_refusal_names_the_cgroup_its_runtime_the_feature_and_the_remedy() {
        let mut caps = Capabilities::root();
        apply(&mut caps, &probe(Answer::Refused(libc::EPERM), Answer::Allowed, Some(0)));
        let why = caps.rt_refused.expect("refused");
        for part in [
            "/sys/fs/cgroup/cpu/rtzero",
            "cpu.rt_runtime_us = 0",
            "CONFIG_RT_GROUP_SCHED",
            "echo $$ > /sys/fs/cgroup/cpu/cgroup.procs",
        ] {
            assert!(why.contains(part), "{part:?} missing from {why}");
        }
        assert_eq!(caps.rt_placement, None);
        assert_eq!(caps.deadline_refused, None);
    }

    #[test]
    fn rt_allowed_after_the_move_is_a_placement_not_a_refusal() {
        let mut caps = Capabilities::root();
        apply(&mut caps, &probe(Answer::AllowedThere, Answer::Allowed, Some(0)));
        assert_eq!(caps.rt_refused, None);
        let p = caps.rt_placement.expect("placed");
        assert_eq!(p.from, PathBuf::from("/sys/fs/cgroup/cpu/rtzero"));
        assert_eq!(p.to, PathBuf::from("/sys/fs/cgroup/cpu"));
        assert!(p.why.contains("cpu.rt_runtime_us = 0") && !p.why.contains("Remedy"), "{}", p.why);
    }

    #[test]
    fn without_the_privilege_the_refusal_is_the_rlimits_not_the_cgroups() {
        let mut caps = Capabilities::unprivileged();
        apply(&mut caps, &probe(Answer::Refused(libc::EPERM), Answer::Refused(libc::EPERM), None));
        assert_eq!((caps.rt_refused, caps.deadline_refused, caps.rt_placement), (None, None, None));
    }

    #[test]
    fn a_deadline_refusal_under_a_narrow_affinity_names_both_cpu_lists() {
        let mut p = probe(Answer::Allowed, Answer::Refused(libc::EPERM), None);
        p.affinity = (vec![0], vec![0, 1, 2, 3]);
        let mut caps = Capabilities::root();
        apply(&mut caps, &p);
        let why = caps.deadline_refused.expect("refused");
        assert!(why.contains("CPUs 0 of the online 0-3"), "{why}");
    }

    #[test]
    fn the_cpu_cgroup_is_read_from_proc_self_cgroup_on_v1_and_v2() {
        let dir = std::env::temp_dir().join(format!("schedlab-probe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let w = |p: &str, s: &str| {
            let f = dir.join(p.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, s).unwrap();
        };
        w("/proc/self/cgroup", "4:memory:/x\n2:cpu,cpuacct:/rtzero\n0::/\n");
        w("/sys/fs/cgroup/cpu/rtzero/cpu.rt_runtime_us", "0\n");
        let c = cpu_cgroup(&Root::new(&dir)).expect("v1");
        assert_eq!((c.rel.as_str(), c.v2, c.rt_runtime_us), ("/rtzero", false, Some(0)));
        assert_eq!(c.dir, dir.join("sys/fs/cgroup/cpu/rtzero"));
        std::fs::remove_dir_all(&dir).unwrap();
        w("/proc/self/cgroup", "0::/user.slice/session-1.scope\n");
        w("/sys/fs/cgroup/cgroup.controllers", "cpu cpuset\n");
        let c = cpu_cgroup(&Root::new(&dir)).expect("v2");
        assert_eq!(
            (c.rel.as_str(), c.v2, c.rt_runtime_us),
            ("/user.slice/session-1.scope", true, None)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn restore_returns_the_engine_to_its_cgroup_only_if_it_is_still_that_process() {
        let dir = std::env::temp_dir().join(format!("schedlab-return-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let procs = dir.join("cgroup.procs");
        std::fs::write(&procs, "").unwrap();
        let me = std::process::id() as i32;
        let (start, _) = crate::procfs::process_start(me).unwrap();
        // A pid reused by another process (another start time) is left where it is.
        return_to(me, start + 1, &dir).unwrap();
        assert_eq!(std::fs::read_to_string(&procs).unwrap(), "");
        return_to(me, start, &dir).unwrap();
        assert_eq!(std::fs::read_to_string(&procs).unwrap(), me.to_string());
        // Through the journal, as `restore` replays it; a cgroup removed meanwhile is done.
        let undo = Entry::ReturnToCgroup { pid: me, start, cgroup: dir.join("gone") };
        let state = dir.join("state");
        let mut j = Journal::create(&state).unwrap();
        j.record(undo).unwrap();
        assert!(j.close().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_probe_tries_every_policy_and_other_is_always_allowed() {
        let p = run(&Root::default()).expect("the probe runs");
        assert_eq!(p.answers.len(), TRIED.len());
        assert_eq!(p.answer("other"), Answer::Allowed);
        assert_eq!(p.answer("batch"), Answer::Allowed);
    }
}
