//! Reaping the cell's process group: without blocking, by killing, and the accounting of
//! who is still running.

use crate::signals;
use schedlab_sys::procfs::monotonic_ns;
use std::time::Duration;

/// One process of the cell as wait4 returned it.
pub(super) struct Reaped {
    pub(super) pid: i32,
    pub(super) status: i32,
    pub(super) ru: libc::rusage,
    pub(super) at_ns: u64,
    pub(super) timed_out: bool,
}

fn killpg(pgid: i32) {
    if pgid > 0 {
        // SAFETY: plain syscall; pgid is the group of our own workers.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Reaps every child of the group that has exited, without blocking.
pub(super) fn reap_ready(pgid: i32, out: &mut Vec<Reaped>, timed_out: bool) {
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
pub(super) fn kill_and_reap(pgid: i32, n: usize, out: &mut Vec<Reaped>, timed_out: bool) {
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
pub(super) fn stop_background(pgid: i32, n: usize, bg: &[i32], reaped: &mut Vec<Reaped>) {
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
    fn kill_and_reap_takes_the_whole_group_and_marks_the_time_out() {
        let mut children = Vec::new();
        let mut pgid = 0;
        for _ in 0..3 {
            let c = std::process::Command::new("sleep").arg("60").process_group(pgid).spawn().unwrap();
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
        assert!(reaped.iter().all(|r| r.timed_out && describe_exit(r.status) == "was killed by signal 9"));
    }
}
