//! Reaping the cell's process group: without blocking, by killing, and the accounting of
//! who is still running.

use crate::signals;
use schedlab_sys::exits::ExitWatch;
use schedlab_sys::procfs::{monotonic_ns, TaskSched};
use schedlab_sys::Root;
use std::time::Duration;

/// One process of the cell as wait4 returned it.
pub(super) struct Reaped {
    pub(super) pid: i32,
    pub(super) status: i32,
    pub(super) ru: libc::rusage,
    pub(super) at_ns: u64,
    pub(super) timed_out: bool,
    /// The scheduler's accounting of it, read while it was a zombie, just before the wait4.
    pub(super) sched: TaskSched,
}

/// Reads `pid`'s scheduler accounting (it has exited and is not reaped yet).
fn accounting(pid: i32) -> TaskSched {
    TaskSched::read(&Root::default(), pid)
}

/// The pid of an exited, unreaped child of group `pgid`, left unreaped (waitid's WNOWAIT) so
/// its /proc files can still be read: Ok(0) if none has exited (with WNOHANG in `flags`).
fn exited_in_group(pgid: i32, flags: i32) -> std::io::Result<i32> {
    // SAFETY: siginfo_t is plain data that waitid fills; zeroed, si_pid stays 0 when no
    // child is ready under WNOHANG.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let id = pgid as libc::id_t;
    // SAFETY: plain syscall on our own children; WNOWAIT leaves them unreaped.
    if unsafe { libc::waitid(libc::P_PGID, id, &mut info, libc::WEXITED | libc::WNOWAIT | flags) }
        < 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: waitid filled a SIGCHLD siginfo (or left it zeroed).
    Ok(unsafe { info.si_pid() })
}

/// Reaps the next exited child of group `pgid` (blocking unless `flags` has WNOHANG), its
/// accounting read first: Ok(None) if none is ready.
fn reap_group_one(pgid: i32, flags: i32, timed_out: bool) -> std::io::Result<Option<Reaped>> {
    let pid = exited_in_group(pgid, flags)?;
    if pid <= 0 {
        return Ok(None);
    }
    let sched = accounting(pid);
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for exactly the reaped child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    match unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) } {
        p if p == pid => {
            Ok(Some(Reaped { pid, status, ru, at_ns: monotonic_ns(), timed_out, sched }))
        }
        _ => Err(std::io::Error::last_os_error()),
    }
}

fn killpg(pgid: i32) {
    if pgid > 0 {
        // SAFETY: plain syscall; pgid is the group of our own workers.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Reaps every child of the group that has exited, without blocking.
pub(super) fn reap_ready(pgid: i32, out: &mut Vec<Reaped>, timed_out: bool) {
    while let Ok(Some(r)) = reap_group_one(pgid, libc::WNOHANG, timed_out) {
        out.push(r);
    }
}

/// Reaps the cell's processes as they exit. Each is watched through its pidfd
/// ([`ExitWatch`]), so a wake-up costs what exited, not a walk of every child of the engine
/// (what wait4 on the process group does in the kernel). A process it could not watch (no
/// descriptor left) is found by that walk, as before.
pub(super) struct Reaper {
    pgid: i32,
    watch: Option<ExitWatch>,
    /// Processes not watched: while there are any, every reap walks the group too.
    unwatched: usize,
    exited: Vec<i32>,
}

impl Reaper {
    /// Watches `pids`, the cell's processes in group `pgid`.
    pub(super) fn new(pgid: i32, pids: impl ExactSizeIterator<Item = i32>) -> Reaper {
        let mut r = Reaper { pgid, watch: ExitWatch::new().ok(), unwatched: 0, exited: Vec::new() };
        for pid in pids {
            r.add(pid);
        }
        r
    }

    /// Watches one more process of the group.
    pub(super) fn add(&mut self, pid: i32) {
        if self.watch.as_mut().is_none_or(|w| w.watch(pid).is_err()) {
            self.unwatched += 1;
        }
    }

    /// Reaps every process of the group that has exited, without blocking.
    pub(super) fn reap(&mut self, out: &mut Vec<Reaped>) {
        if let Some(w) = &mut self.watch {
            self.exited.clear();
            let _ = w.exited(&mut self.exited);
            for &pid in &self.exited {
                let sched = accounting(pid);
                let mut status = 0;
                // SAFETY: rusage is plain data; wait4 on one pid looks at that child alone.
                let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
                match unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) } {
                    0 => {} // not reapable yet: it is reported again
                    p if p == pid => {
                        out.push(Reaped {
                            pid,
                            status,
                            ru,
                            at_ns: monotonic_ns(),
                            timed_out: false,
                            sched,
                        });
                        w.forget(pid);
                    }
                    _ => w.forget(pid), // reaped by a walk of the group
                }
            }
        }
        if self.unwatched > 0 {
            let from = out.len();
            reap_ready(self.pgid, out, false);
            for r in &out[from..] {
                match &mut self.watch {
                    Some(w) if w.watches(r.pid) => w.forget(r.pid),
                    _ => self.unwatched = self.unwatched.saturating_sub(1),
                }
            }
        }
    }
}

/// Kills the group and reaps everything still alive, blocking.
pub(super) fn kill_and_reap(pgid: i32, n: usize, out: &mut Vec<Reaped>, timed_out: bool) {
    killpg(pgid);
    while out.len() < n {
        match reap_group_one(pgid, 0, timed_out) {
            Ok(Some(r)) => out.push(r),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            _ => return,
        }
    }
}

/// Whether a reaped process exited by itself with status 0.
pub(super) fn exited_cleanly(status: i32) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// Describes how a reaped process ended.
pub(super) fn describe_exit(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else {
        "ended".into()
    }
}

/// How long workers told to stop (background ones by SIGTERM, dispatched ones by their
/// dispatcher's shutdown) have to report and exit before they are killed. They take
/// milliseconds; the margin is for a host that stops the VM's CPUs for a while (steal), when
/// killing them would lose their reports.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Stops background workers: SIGTERM (they finish a chunk and report), SIGKILL after
/// [`EXIT_GRACE`].
pub(super) fn stop_background(reaper: &mut Reaper, n: usize, bg: &[i32], reaped: &mut Vec<Reaped>) {
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
        reaper.reap(reaped);
        if reaped.len() < n {
            let _ = signals::wait(Duration::from_millis(20));
        }
    }
    kill_and_reap(reaper.pgid, n, reaped, false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn describe_exit_names_the_signal_or_the_status() {
        assert_eq!(describe_exit(libc::SIGKILL), "was killed by signal 9");
        assert_eq!(describe_exit(3 << 8), "exited with status 3");
        assert!(exited_cleanly(0));
        assert!(!exited_cleanly(1 << 8) && !exited_cleanly(libc::SIGTERM));
    }

    #[test]
    fn the_reaper_finds_every_exit_watched_or_not_and_leaves_the_running_alone() {
        // Three quick children and a sleeper in one group; one quick child is not watched
        // (as when no descriptor was left for it), so the group is walked for it.
        let mut pgid = 0;
        let mut children = Vec::new();
        for args in [&["true"][..], &["true"], &["true"], &["sleep", "60"]] {
            let c = std::process::Command::new(args[0])
                .args(&args[1..])
                .process_group(pgid)
                .spawn()
                .unwrap();
            if pgid == 0 {
                pgid = c.id() as i32;
            }
            children.push(c);
        }
        let pids: Vec<i32> = children.iter().map(|c| c.id() as i32).collect();
        let mut reaper = Reaper::new(pgid, [pids[0], pids[1], pids[3]].into_iter());
        reaper.unwatched += 1;
        let mut reaped = Vec::new();
        let until = monotonic_ns() + 10_000_000_000;
        while reaped.len() < 3 && monotonic_ns() < until {
            reaper.reap(&mut reaped);
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut got: Vec<i32> = reaped.iter().map(|r| r.pid).collect();
        got.sort();
        let mut quick = pids[..3].to_vec();
        quick.sort();
        assert_eq!(got, quick, "each exited child reaped once, the sleeper not");
        assert!(reaped.iter().all(|r| exited_cleanly(r.status)));
        assert_eq!(reaper.unwatched, 0, "the unwatched one was found by the walk");
        assert!(
            reaped.iter().all(|r| r.sched.oncpu_ns.is_some() && r.sched.timeslices.is_some()),
            "watched or walked, each one's accounting was read before the reap"
        );
        assert!(
            reaper.watch.as_ref().is_some_and(|w| w.len() == 1 && w.watches(pids[3])),
            "only the sleeper is still watched"
        );
        kill_and_reap(pgid, 4, &mut reaped, false);
        assert_eq!(reaped.len(), 4);
    }

    #[test]
    fn kill_and_reap_takes_the_whole_group_and_marks_the_time_out() {
        let mut children = Vec::new();
        let mut pgid = 0;
        for _ in 0..3 {
            let c =
                std::process::Command::new("sleep").arg("60").process_group(pgid).spawn().unwrap();
            if pgid == 0 {
                pgid = c.id() as i32;
            }
            children.push(c);
        }
        let mut reaped = Vec::new();
        reap_ready(pgid, &mut reaped, false);
        assert!(reaped.is_empty(), "nothing has exited yet");
        kill_and_reap(pgid, 3, &mut reaped, true);
        let mut pids: Vec<i32> = reaped.iter().map(|r| r.pid).collect();
        pids.sort();
        let mut spawned: Vec<i32> = children.iter().map(|c| c.id() as i32).collect();
        spawned.sort();
        assert_eq!(pids, spawned, "each child reaped once");
        assert!(reaped
            .iter()
            .all(|r| r.timed_out && describe_exit(r.status) == "was killed by signal 9"));
        assert!(reaped.iter().all(|r| r.sched.voluntary.is_some()), "killed ones are read too");
    }
}
