//! The field's benchmarks run by one worker: hackbench's messaging, perf's pipe ping-pong
//! and schbench. Their tasks are threads of the worker or children it forks after its
//! release, so they inherit the policy, nice, affinity, cgroup and scheduler the engine gave
//! the worker. A forked child runs only its closure and system calls, then `_exit`s: the
//! worker is single-threaded when it forks (messaging and pipe fork only in process mode,
//! where they start no thread).

mod messaging;
mod pipe;
mod schbench;

pub use messaging::{messaging, MessagingOutcome};
pub use pipe::{pipe_pingpong, PipeOutcome};
pub use schbench::{matrix_size, schbench};

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Stack of a benchmark thread: its buffers are on the heap.
const STACK_BYTES: usize = 256 << 10;

/// One task of a benchmark: a thread of the worker or a forked child.
pub(crate) enum Task {
    Thread(std::thread::JoinHandle<io::Result<()>>),
    Child(libc::pid_t),
}

impl Task {
    /// Runs `f` in a new thread (`threads`) or a forked child, which exits 0 when `f` did
    /// and 1 (after saying why on stderr) when it failed.
    pub(crate) fn start<F>(threads: bool, name: &str, f: F) -> io::Result<Task>
    where
        F: FnOnce() -> io::Result<()> + Send + 'static,
    {
        if threads {
            return std::thread::Builder::new()
                .name(name.to_string())
                .stack_size(STACK_BYTES)
                .spawn(f)
                .map(Task::Thread);
        }
        // SAFETY: getpid has no failure mode.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the worker is single-threaded here (see the module's doc); the child runs
        // the closure and leaves with _exit, running no destructor of the parent's state.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // A child dies with its worker, as the worker dies with the engine: the death
                // signal is not inherited across fork. SAFETY: plain prctl and getppid.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                }
                let code = match f() {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("schedlab benchmark task {name}: {e}");
                        1
                    }
                };
                // SAFETY: ends the child without returning into the parent's code.
                unsafe { libc::_exit(code) }
            }
            pid => Ok(Task::Child(pid)),
        }
    }

    /// Waits for the task; its failure is an error.
    pub(crate) fn join(self) -> io::Result<()> {
        match self {
            Task::Thread(h) => {
                h.join().map_err(|_| io::Error::other("a benchmark thread panicked"))?
            }
            Task::Child(pid) => {
                let mut status = 0;
                loop {
                    // SAFETY: waiting for our own child into a local.
                    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
                    if r == pid {
                        break;
                    }
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
                if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::other(format!(
                        "benchmark task {pid} ended with wait status {status:#x}"
                    )))
                }
            }
        }
    }
}

/// Joins every task, returning the first failure (after waiting for all).
pub(crate) fn join_all(tasks: Vec<Task>) -> io::Result<()> {
    let mut first = Ok(());
    for t in tasks {
        if let (Err(e), true) = (t.join(), first.is_ok()) {
            first = Err(e);
        }
    }
    first
}

/// Ends a run that failed half-made: forked children hold copies of every descriptor the
/// worker had when they were made, so they would never see the others leave; they are
/// killed. Threads see their descriptors closed and leave by themselves.
pub(crate) fn abandon(tasks: Vec<Task>) {
    for t in &tasks {
        if let Task::Child(pid) = t {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }
    let _ = join_all(tasks);
}

/// A pipe, (read end, write end), close-on-exec.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected UNIX stream socket pair, (the end read, the end written), close-on-exec.
pub(crate) fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the two-element array.
    let r = unsafe {
        libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as for `pipe`.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Writes all of `buf`, as many write(2)s as it takes.
pub(crate) fn write_all(fd: &OwnedFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: writing from a valid slice.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Fills `buf`, as many read(2)s as it takes; the end of the stream first is an error.
pub(crate) fn read_exact(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: reading into the unfilled rest of a valid slice.
        let n = unsafe {
            libc::read(fd.as_raw_fd(), buf[done..].as_mut_ptr().cast(), buf.len() - done)
        };
        match n {
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the writer is gone")),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => done += n as usize,
        }
    }
    Ok(())
}

/// Raises the soft limit on open files to at least `want`, within the hard limit.
pub(crate) fn want_files(want: u64) -> io::Result<()> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: reading and setting our own limit through a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return Err(io::Error::last_os_error());
        }
        if rl.rlim_cur >= want {
            return Ok(());
        }
        if rl.rlim_max < want {
            return Err(io::Error::other(format!(
                "needs {want} open files and RLIMIT_NOFILE's hard limit is {}",
                rl.rlim_max
            )));
        }
        rl.rlim_cur = want;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
