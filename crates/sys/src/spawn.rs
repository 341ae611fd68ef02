//! Starting many processes of one program the same way: fork, then in the child only
//! async-signal-safe system calls (the descriptors onto 0-2, fchdir, setpgid, SIGPIPE at its
//! default, an empty signal mask) and exec, with everything it uses built once. Each child
//! gets three descriptors on its stdin, stdout and stderr, a working directory, a process
//! group, and this process's environment.
//!
//! Not posix_spawn: glibc's clone(CLONE_VM | CLONE_VFORK) suspends the caller until the child
//! has exec'd, and a caller at SCHED_FIFO whose children start at SCHED_OTHER (reset on fork)
//! then waits, for every child, until the child gets a CPU among those started before it: a
//! cell of N workers was spawned one exec at a time (docs/BENCHMARKS.md: 1.2-1.7x the wall
//! time of fork + exec from the same raised parent). A fork returns at once. A child that
//! cannot exec says why on its stderr and exits 127.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;

extern "C" {
    static environ: *const *mut libc::c_char;
}

/// What every child of a [`Spawner`] is given.
pub struct Stdio<'a> {
    /// Its stdin.
    pub stdin: BorrowedFd<'a>,
    /// Its stdout.
    pub stdout: BorrowedFd<'a>,
    /// Its stderr.
    pub stderr: BorrowedFd<'a>,
}

/// Spawns children of one program with the same descriptors, directory and process group.
pub struct Spawner {
    program: CString,
    /// The child's descriptors 0, 1 and 2, in that order.
    stdio: [RawFd; 3],
    /// The working directory, held open for fchdir in each child.
    dir: OwnedFd,
    /// The process group children join; 0: each leads its own.
    pgid: i32,
    /// What a child that cannot exec writes on its stderr, before the errno.
    exec_failed: Vec<u8>,
}

/// The child's side, from fork to exec: async-signal-safe calls only (no allocation, no
/// locks), as this process may have other threads. Returns only when something failed.
///
/// # Safety
/// To be called in a freshly forked child; every pointer names live, NUL-terminated data.
unsafe fn child(sp: &Spawner, argv: &[*mut libc::c_char]) -> ! {
    for (to, &fd) in sp.stdio.iter().enumerate() {
        if libc::dup2(fd, to as i32) < 0 {
            fail(sp, b"dup2");
        }
    }
    if libc::fchdir(sp.dir.as_raw_fd()) != 0 {
        fail(sp, b"fchdir");
    }
    if libc::setpgid(0, sp.pgid) != 0 {
        fail(sp, b"setpgid");
    }
    // Rust ignores SIGPIPE in its own process and an ignored signal stays ignored across exec.
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::execve(
        sp.program.as_ptr(),
        argv.as_ptr() as *const *const libc::c_char,
        environ as *const *const libc::c_char,
    );
    fail(sp, b"execve")
}

/// Writes `<exec_failed><what> failed: errno <N>` on the child's stderr and exits 127.
///
/// # Safety
/// As [`child`].
unsafe fn fail(sp: &Spawner, what: &[u8]) -> ! {
    let errno = *libc::__errno_location();
    let mut digits = [0u8; 12];
    let mut at = digits.len();
    let mut v = errno.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for part in [&sp.exec_failed[..], what, b" failed: errno ", &digits[at..], b"\n"] {
        libc::write(2, part.as_ptr().cast(), part.len());
    }
    libc::_exit(127)
}

impl Spawner {
    /// Children of `program` (an absolute path) with `stdio`, started in `dir`, each leading
    /// a new process group until [`set_group`](Self::set_group). The descriptors must stay
    /// open while the spawner is used.
    pub fn new(program: &Path, stdio: Stdio, dir: &Path) -> io::Result<Spawner> {
        use std::os::unix::ffi::OsStrExt;
        let program = CString::new(program.as_os_str().as_bytes()).map_err(io::Error::other)?;
        let exec_failed = [b"schedlab: cannot start ", program.as_bytes(), b": "].concat();
        Ok(Spawner {
            program,
            stdio: [stdio.stdin.as_raw_fd(), stdio.stdout.as_raw_fd(), stdio.stderr.as_raw_fd()],
            dir: std::fs::File::open(dir)?.into(),
            pgid: 0,
            exec_failed,
        })
    }

    /// Starts one child with `args` after the program's name; returns its pid without waiting
    /// for its exec. An error is fork's (EAGAIN: a process limit).
    pub fn spawn(&mut self, args: &[&CStr]) -> io::Result<i32> {
        let mut argv: Vec<*mut libc::c_char> = Vec::with_capacity(args.len() + 2);
        argv.push(self.program.as_ptr() as *mut _);
        argv.extend(args.iter().map(|a| a.as_ptr() as *mut libc::c_char));
        argv.push(std::ptr::null_mut());
        // SAFETY: the child runs only `child` (async-signal-safe calls on data built before the
        // fork) and ends in exec or _exit; environ is this process's environment, which
        // nothing in schedlab changes once it runs.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: in the new child, as above.
            unsafe { child(self, &argv) }
        }
        // Also from this side, so a group kill right after the fork takes the child even if it
        // has not run yet; it fails (EACCES) once the child has exec'd, having done it itself.
        // SAFETY: plain syscall on our own child.
        unsafe { libc::setpgid(pid, if self.pgid == 0 { pid } else { self.pgid }) };
        Ok(pid)
    }

    /// Children from now on join process group `pgid`.
    pub fn set_group(&mut self, pgid: i32) {
        self.pgid = pgid;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::{AsFd, FromRawFd};

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: a valid array; the descriptors are ours.
        unsafe {
            assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
            (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        }
    }

    #[test]
    fn children_get_the_descriptors_directory_group_and_default_signals() {
        let dir = std::env::temp_dir().join(format!("schedlab-spawn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (in_r, in_w) = pipe();
        let (out_r, out_w) = pipe();
        let mut sp = Spawner::new(
            Path::new("/bin/sh"),
            Stdio { stdin: in_r.as_fd(), stdout: out_w.as_fd(), stderr: out_w.as_fd() },
            &dir,
        )
        .unwrap();
        // Each child reports its directory, the line it read, its process group, and its
        // blocked and ignored signals; this thread blocks SIGUSR1 and Rust ignores SIGPIPE.
        let script = c"read l; set -- $(awk '/^Sig(Blk|Ign)/ {print $2}' /proc/$$/status); echo $(pwd -P) $l $(ps -o pgid= -p $$) $1 $2";
        // SAFETY: plain signal-set calls on local sets.
        let old = unsafe {
            let mut usr1: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut usr1);
            libc::sigaddset(&mut usr1, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &usr1, &mut old);
            old
        };
        // The second child starts after the first has answered: two shells reading one pipe a
        // byte at a time at once may split a line between them ("x" and "\n").
        let mut out = std::fs::File::from(out_r);
        let mut text = String::new();
        let mut answer = |line: &[u8], text: &mut String| {
            // SAFETY: writing a short line to our own pipe.
            unsafe { libc::write(in_w.as_raw_fd(), line.as_ptr().cast(), line.len()) };
            loop {
                let mut byte = [0u8; 1];
                assert_eq!(out.read(&mut byte).unwrap(), 1, "a child answered: {text}");
                text.push(byte[0] as char);
                if byte[0] == b'\n' {
                    break;
                }
            }
        };
        let mut pids = vec![sp.spawn(&[c"-c", script]).unwrap()];
        answer(b"x\n", &mut text);
        sp.set_group(pids[0]);
        pids.push(sp.spawn(&[c"-c", script]).unwrap());
        answer(b"y\n", &mut text);
        // SAFETY: restoring this thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        drop(sp);
        drop(out_w);
        drop(in_w);
        for &pid in &pids {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert_eq!(status, 0);
        }
        out.read_to_string(&mut text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in lines {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[0], dir.canonicalize().unwrap().to_str().unwrap(), "{l}");
            assert!(f[1] == "x" || f[1] == "y", "{l}");
            assert_eq!(
                f[2],
                pids[0].to_string(),
                "the first child leads a group, the second joins it: {l}"
            );
            assert_eq!(u64::from_str_radix(f[3], 16).unwrap(), 0, "no signal blocked: {l}");
            assert_eq!(
                u64::from_str_radix(f[4], 16).unwrap() & (1 << (libc::SIGPIPE - 1)),
                0,
                "SIGPIPE not ignored: {l}"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_child_that_cannot_exec_exits_127_saying_why_on_its_stderr() {
        let dir = std::env::temp_dir();
        let (in_r, _in_w) = pipe();
        let (out_r, out_w) = pipe();
        let missing = dir.join(format!("schedlab-no-such-program-{}", std::process::id()));
        let mut sp = Spawner::new(
            &missing,
            Stdio { stdin: in_r.as_fd(), stdout: out_w.as_fd(), stderr: out_w.as_fd() },
            &dir,
        )
        .unwrap();
        let pid = sp.spawn(&[]).expect("the fork itself succeeds");
        drop(sp);
        drop(out_w);
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 127, "status {status:#x}");
        let mut said = String::new();
        std::fs::File::from(out_r).read_to_string(&mut said).unwrap();
        assert_eq!(
            said,
            format!(
                "schedlab: cannot start {}: execve failed: errno {}\n",
                missing.display(),
                libc::ENOENT
            )
        );
    }
}
