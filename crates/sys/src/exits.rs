//! Which of many child processes have exited, found without scanning them: one pidfd per
//! child in an epoll set. wait4 on a process group walks the caller's whole list of children
//! in the kernel on every call, so reaping N children as they exit costs O(N²) that way; a
//! pidfd turns readable when its process has exited, and wait4 on one pid looks at that
//! process alone.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Child processes watched for their exit.
pub struct ExitWatch {
    epoll: OwnedFd,
    pidfds: HashMap<i32, OwnedFd>,
    events: Vec<libc::epoll_event>,
}

impl ExitWatch {
    /// An empty watch.
    pub fn new() -> io::Result<ExitWatch> {
        // SAFETY: plain syscall; the descriptor it returns is ours.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(ExitWatch { epoll, pidfds: HashMap::new(), events: Vec::new() })
    }

    /// Watches child `pid` (one descriptor, close-on-exec, until [`forget`](Self::forget)). An
    /// error (no descriptor left: RLIMIT_NOFILE; a kernel without pidfds) leaves it unwatched,
    /// and the caller must find its exit another way.
    pub fn watch(&mut self, pid: i32) -> io::Result<()> {
        // SAFETY: plain syscall; pidfd_open always sets O_CLOEXEC, and `pid` is a child not yet
        // reaped, so the pid cannot have been reused.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: pid as u32 as u64 };
        // SAFETY: both descriptors are open; ev is a valid event.
        if unsafe {
            libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, pidfd.as_raw_fd(), &mut ev)
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        self.pidfds.insert(pid, pidfd);
        Ok(())
    }

    /// Whether `pid` is watched.
    pub fn watches(&self, pid: i32) -> bool {
        self.pidfds.contains_key(&pid)
    }

    /// Stops watching `pid` (once it is reaped). The pidfd leaves the set explicitly: closing
    /// it alone does not, while a child forked meanwhile still holds a copy of it.
    pub fn forget(&mut self, pid: i32) {
        if let Some(fd) = self.pidfds.remove(&pid) {
            // SAFETY: both descriptors are open; a null event is allowed for EPOLL_CTL_DEL.
            unsafe {
                libc::epoll_ctl(
                    self.epoll.as_raw_fd(),
                    libc::EPOLL_CTL_DEL,
                    fd.as_raw_fd(),
                    std::ptr::null_mut(),
                )
            };
        }
    }

    /// How many processes are watched.
    pub fn len(&self) -> usize {
        self.pidfds.len()
    }

    /// Whether no process is watched.
    pub fn is_empty(&self) -> bool {
        self.pidfds.is_empty()
    }

    /// Appends to `out` the watched processes that have exited and are still watched, without
    /// waiting. Each stays reported until it is forgotten.
    pub fn exited(&mut self, out: &mut Vec<i32>) -> io::Result<()> {
        // Room for every watched process, so one call returns all that exited.
        let room = self.pidfds.len().max(1);
        if self.events.len() < room {
            self.events.resize(room, libc::epoll_event { events: 0, u64: 0 });
        }
        loop {
            // SAFETY: events is a valid buffer of at least `room` entries; a zero timeout never
            // blocks.
            let n = unsafe {
                libc::epoll_wait(self.epoll.as_raw_fd(), self.events.as_mut_ptr(), room as i32, 0)
            };
            if n >= 0 {
                let pids = self.events[..n as usize].iter().map(|e| e.u64 as u32 as i32);
                out.extend(pids.filter(|p| self.pidfds.contains_key(p)));
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn an_exited_child_is_reported_until_forgotten_and_a_running_one_never() {
        let mut w = ExitWatch::new().unwrap();
        let mut quick = Command::new("true").spawn().unwrap();
        let mut slow = Command::new("sleep").arg("60").spawn().unwrap();
        let (q, s) = (quick.id() as i32, slow.id() as i32);
        w.watch(q).unwrap();
        w.watch(s).unwrap();
        assert_eq!(w.len(), 2);
        let mut out = Vec::new();
        for _ in 0..500 {
            out.clear();
            w.exited(&mut out).unwrap();
            if !out.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(out, [q], "only the child that exited");
        quick.wait().unwrap();
        w.forget(q);
        out.clear();
        w.exited(&mut out).unwrap();
        assert!(out.is_empty() && !w.watches(q) && w.watches(s));
        slow.kill().unwrap();
        slow.wait().unwrap();
    }

    #[test]
    fn a_forgotten_child_stays_forgotten_while_another_child_holds_its_pidfd() {
        let mut w = ExitWatch::new().unwrap();
        let mut quick = Command::new("true").spawn().unwrap();
        let q = quick.id() as i32;
        w.watch(q).unwrap();
        // A child forked now inherits a copy of the pidfd (close-on-exec closes it only at exec;
        // `sleep` here execs at once, so hold the copy in a child that does not exec).
        // SAFETY: the child only sleeps and exits; no allocation or lock after fork.
        let holder = unsafe { libc::fork() };
        if holder == 0 {
            unsafe {
                libc::sleep(2);
                libc::_exit(0);
            }
        }
        quick.wait().unwrap();
        w.forget(q);
        let mut out = Vec::new();
        w.exited(&mut out).unwrap();
        assert!(out.is_empty(), "a forgotten pid was reported: {out:?}");
        // SAFETY: plain syscalls on our own child.
        unsafe {
            libc::kill(holder, libc::SIGKILL);
            libc::waitpid(holder, std::ptr::null_mut(), 0);
        }
    }
}
