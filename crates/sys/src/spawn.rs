//! Starting many processes of one program the same way: posix_spawn (glibc: clone with
//! CLONE_VM | CLONE_VFORK, then exec) with its file actions and attributes built once. Each
//! child gets three descriptors on its stdin, stdout and stderr, a working directory, a
//! process group, an empty signal mask and SIGPIPE at its default action, and this process's
//! environment. std's `Command` builds and checks all of that again for every child (three
//! descriptor duplications, six getrlimit calls, the environment lock, the argument
//! conversions), which is what a spawner of thousands of children can leave out.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
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
    actions: Box<libc::posix_spawn_file_actions_t>,
    attr: Box<libc::posix_spawnattr_t>,
    /// The working directory, held open for fchdir in each child.
    _dir: OwnedFd,
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

impl Spawner {
    /// Children of `program` (an absolute path) with `stdio`, started in `dir`, each leading
    /// a new process group until [`set_group`](Self::set_group). The descriptors must stay
    /// open while the spawner is used.
    pub fn new(program: &Path, stdio: Stdio, dir: &Path) -> io::Result<Spawner> {
        use std::os::unix::ffi::OsStrExt;
        let program = CString::new(program.as_os_str().as_bytes()).map_err(io::Error::other)?;
        let dir_fd = std::fs::File::open(dir)?.into();
        // SAFETY: both structures are plain data that the init calls fill in before any other
        // use; they are boxed so their addresses stay put, and Drop destroys them.
        let mut s = unsafe { Spawner { program, actions: Box::new(std::mem::zeroed()), attr: Box::new(std::mem::zeroed()), _dir: dir_fd } };
        // SAFETY: initialised structures; every descriptor named is open (the caller keeps
        // stdio open, the spawner keeps the directory), and signal sets are filled by the
        // sigset calls before use.
        unsafe {
            check(libc::posix_spawn_file_actions_init(&mut *s.actions))?;
            check(libc::posix_spawnattr_init(&mut *s.attr))?;
            for (fd, to) in [(stdio.stdin, 0), (stdio.stdout, 1), (stdio.stderr, 2)] {
                check(libc::posix_spawn_file_actions_adddup2(&mut *s.actions, fd.as_raw_fd(), to))?;
            }
            check(libc::posix_spawn_file_actions_addfchdir_np(&mut *s.actions, s._dir.as_raw_fd()))?;
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            check(libc::posix_spawnattr_setsigmask(&mut *s.attr, &none))?;
            // Rust ignores SIGPIPE in its own process; a child starts with the default.
            let mut pipe: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut pipe);
            libc::sigaddset(&mut pipe, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(&mut *s.attr, &pipe))?;
            let flags = libc::POSIX_SPAWN_SETPGROUP | libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF;
            check(libc::posix_spawnattr_setflags(&mut *s.attr, flags as libc::c_short))?;
            check(libc::posix_spawnattr_setpgroup(&mut *s.attr, 0))?;
        }
        Ok(s)
    }

    /// Starts one child with `args` after the program's name; returns its pid.
    pub fn spawn(&mut self, args: &[&CStr]) -> io::Result<i32> {
        let mut argv: Vec<*mut libc::c_char> = Vec::with_capacity(args.len() + 2);
        argv.push(self.program.as_ptr() as *mut _);
        argv.extend(args.iter().map(|a| a.as_ptr() as *mut libc::c_char));
        argv.push(std::ptr::null_mut());
        let mut pid = 0;
        // SAFETY: the file actions and attributes are initialised; argv is a NULL-terminated
        // array of C strings that outlive the call; environ is this process's environment,
        // which nothing in schedlab changes once it runs.
        check(unsafe { libc::posix_spawn(&mut pid, self.program.as_ptr(), &*self.actions, &*self.attr, argv.as_ptr(), environ) })?;
        Ok(pid)
    }

    /// Children from now on join process group `pgid`.
    pub fn set_group(&mut self, pgid: i32) -> io::Result<()> {
        // SAFETY: an initialised attribute structure.
        check(unsafe { libc::posix_spawnattr_setpgroup(&mut *self.attr, pgid) })
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // SAFETY: both were initialised in new and are destroyed once.
        unsafe {
            libc::posix_spawn_file_actions_destroy(&mut *self.actions);
            libc::posix_spawnattr_destroy(&mut *self.attr);
        }
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
        let mut sp =
            Spawner::new(Path::new("/bin/sh"), Stdio { stdin: in_r.as_fd(), stdout: out_w.as_fd(), stderr: out_w.as_fd() }, &dir).unwrap();
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
        let mut pids = vec![sp.spawn(&[c"-c", script]).unwrap()];
        sp.set_group(pids[0]).unwrap();
        pids.push(sp.spawn(&[c"-c", script]).unwrap());
        // SAFETY: restoring this thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        drop(sp);
        drop(out_w);
        // SAFETY: writing a short line to our own pipe.
        unsafe { libc::write(in_w.as_raw_fd(), b"x\ny\n".as_ptr().cast(), 4) };
        drop(in_w);
        for &pid in &pids {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert_eq!(status, 0);
        }
        let mut text = String::new();
        std::fs::File::from(out_r).read_to_string(&mut text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in lines {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[0], dir.canonicalize().unwrap().to_str().unwrap(), "{l}");
            assert!(f[1] == "x" || f[1] == "y", "{l}");
            assert_eq!(f[2], pids[0].to_string(), "the first child leads a group, the second joins it: {l}");
            assert_eq!(u64::from_str_radix(f[3], 16).unwrap(), 0, "no signal blocked: {l}");
            assert_eq!(u64::from_str_radix(f[4], 16).unwrap() & (1 << (libc::SIGPIPE - 1)), 0, "SIGPIPE not ignored: {l}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
