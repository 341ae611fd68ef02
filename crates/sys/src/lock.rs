//! Holds on the machine's settings for the length of a run, so two runs never change the
//! same one: each held as a `flock` on the setting's own file (a sysctl, a debugfs or sysfs
//! attribute), which every process opens as the same inode whatever its state directory.
//! The kernel releases a hold when its process dies, SIGKILL included: a dead run's hold
//! never blocks the next.

use crate::SysError;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Settings this process holds, released when dropped (or when the process dies).
#[derive(Debug, Default)]
pub struct Holds {
    files: Vec<(PathBuf, File)>,
}

impl Holds {
    /// No holds yet.
    pub fn new() -> Holds {
        Holds::default()
    }

    /// The files held, in the order taken.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(p, _)| p.as_path())
    }

    /// Holds `path`, which stands for `what` (`knob kernel.x`); a path already held here is
    /// held once. Never waits: a hold another process has is refused, naming that process.
    pub fn take(&mut self, what: &str, path: &Path) -> Result<(), SysError> {
        if self.files.iter().any(|(p, _)| p == path) {
            return Ok(());
        }
        let file = File::open(path).map_err(|e| {
            SysError::io(format!("{what}: opening {} to hold it", path.display()), e)
        })?;
        // SAFETY: plain syscall on our own descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(SysError::io(format!("{what}: locking {}", path.display()), e));
            }
            let who = holder(&file)
                .map(|(pid, cmd)| format!("process {pid} ({cmd})"))
                .unwrap_or_else(|| "another process".into());
            return Err(SysError::refused(format!(
                "{what} is held by another run: {who} holds {}. Two runs must not change the same setting: \
                 wait until that run ends (nothing was changed)",
                path.display()
            )));
        }
        self.files.push((path.to_path_buf(), file));
        Ok(())
    }
}

/// The live process other than this one that holds `path` (a setting another run holds
/// now), with its command line; None when it is free, held here, or cannot be opened.
pub fn held_elsewhere(path: &Path) -> Option<(i32, String)> {
    let file = File::open(path).ok()?;
    // A shared hold is refused while anyone holds it exclusively; taken, it goes with `file`.
    // SAFETY: plain syscall on our own descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 {
        return None;
    }
    holder(&file).filter(|(pid, _)| *pid != std::process::id() as i32)
}

/// The process holding a `flock` on `file` and its command line, from /proc/locks (read
/// again, up to three times, when it does not list the file).
pub fn holder(file: &File) -> Option<(i32, String)> {
    let m = file.metadata().ok()?;
    let pid = (0..3).find_map(|_| {
        holder_in(&proc_locks()?, libc::major(m.dev()), libc::minor(m.dev()), m.ino())
    })?;
    Some((pid, command_line(pid)))
}

/// /proc/locks, read in as few read(2) calls as its size allows: the kernel lists it by
/// position, so between two reads a lock released earlier in the list moves the rest up
/// and one entry is never seen.
fn proc_locks() -> Option<String> {
    use std::io::Read;
    let mut f = File::open("/proc/locks").ok()?;
    let mut buf = vec![0u8; 256 << 10];
    let mut len = 0;
    loop {
        let n = f.read(&mut buf[len..]).ok()?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            buf.resize(2 * len, 0);
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// A process's command line as ps prints it (`command line unknown` when it cannot be read).
pub fn command_line(pid: i32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = bytes
        .split(|c| *c == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        "command line unknown".into()
    } else {
        words.join(" ")
    }
}

/// The pid of the granted FLOCK on the inode `major:minor:ino` in /proc/locks' `text`
/// (waiters, `->` lines, are not holders).
fn holder_in(text: &str, major: u32, minor: u32, ino: u64) -> Option<i32> {
    let want = format!("{major:02x}:{minor:02x}:{ino}");
    text.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        // `N: FLOCK ADVISORY WRITE PID MAJ:MIN:INO START END`
        (w.len() >= 6 && w[1] == "FLOCK" && w[5] == want).then(|| w[4].parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_held_by_one_run_at_a_time_and_the_refusal_names_the_holder() {
        let d = tempfile_dir("hold");
        let f = d.join("sched_cfs_bandwidth_slice_us");
        std::fs::write(&f, "5000\n").unwrap();
        let mut mine = Holds::new();
        mine.take("knob kernel.sched_cfs_bandwidth_slice_us", &f).unwrap();
        mine.take("knob kernel.sched_cfs_bandwidth_slice_us", &f).expect("held once per run");
        assert_eq!(mine.paths().count(), 1);
        // A second open file description conflicts even in this process, as another run's would.
        let e = Holds::new()
            .take("knob kernel.sched_cfs_bandwidth_slice_us", &f)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("held by another run")
                && e.contains(&format!("process {}", std::process::id())),
            "{e}"
        );
        assert!(
            e.contains("kernel.sched_cfs_bandwidth_slice_us") && e.contains("nothing was changed"),
            "{e}"
        );
        drop(mine);
        Holds::new().take("knob x", &f).expect("released when dropped");
        assert!(Holds::new()
            .take("knob y", &d.join("nosuch"))
            .unwrap_err()
            .to_string()
            .contains("opening"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn the_holder_is_the_granted_flock_on_that_inode_not_a_waiter() {
        let text = "1: POSIX  ADVISORY  WRITE 7 00:15:11882 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 2403 fe:00:5308987 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 99 00:15:11882 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 10792 00:15:11882 0 EOF\n";
        assert_eq!(holder_in(text, 0, 0x15, 11882), Some(10792));
        assert_eq!(holder_in(text, 0xfe, 0, 5308987), Some(2403));
        assert_eq!(holder_in(text, 0, 0x15, 1), None);
    }

    fn tempfile_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("schedlab-lock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
