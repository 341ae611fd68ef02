//! Block devices: which disk holds a path, the I/O schedulers a queue offers, switching
//! them (journaled), /sys/block/<dev>/stat, free space, and file-backed loop devices with a
//! filesystem mounted privately.
//!
//! Readers take a [`Root`] so tests can use fake trees; the loop and mount calls act on the
//! real machine and are journaled by the caller's [`Journal`] before they happen.

use crate::journal::{Entry, Journal};
use crate::{Root, SysError};
use schedlab_model::DiskStatDelta;
use schedlab_plan::{
    DeviceFacts, DeviceSpec, DeviceTarget, IoSetting, QueueTarget, QUEUE_TUNABLES,
};
use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// The schedulers `/sys/block/<dev>/queue/scheduler` offers and the active one (in brackets).
pub fn schedulers(root: &Root, dev: &str) -> io::Result<(Vec<String>, String)> {
    let text = root.read(&format!("/sys/block/{dev}/queue/scheduler"))?;
    let mut offered = Vec::new();
    let mut active = String::new();
    for w in text.split_whitespace() {
        match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(a) => {
                active = a.to_string();
                offered.push(a.to_string());
            }
            None => offered.push(w.to_string()),
        }
    }
    // A queue that cannot take a scheduler prints a bare "none".
    if active.is_empty() && offered.len() == 1 {
        active = offered[0].clone();
    }
    Ok((offered, active))
}

/// The schedulers loop devices offer here: an existing loop device's (loop devices all share
/// one driver), or before any exists another multi-queue device's (the kernel offers every
/// blk-mq queue the schedulers it has); None if no device says.
pub fn loop_schedulers(root: &Root) -> Option<Vec<String>> {
    let rd = std::fs::read_dir(root.path("/sys/block")).ok()?;
    let mut names: Vec<String> =
        rd.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let offered = |n: &String| schedulers(root, n).ok().map(|s| s.0);
    names.iter().filter(|n| n.starts_with("loop")).find_map(offered).or_else(|| {
        names.iter().filter_map(offered).find(|o| o.len() > 1 && o.iter().any(|s| s == "none"))
    })
}

/// Why a loop device cannot be made here: /dev/loop-control, through which one is taken,
/// absent (no loop driver, or a container without it) or not writable.
fn loop_unavailable() -> Option<String> {
    let ctl = Path::new("/dev/loop-control");
    if std::fs::symlink_metadata(ctl).is_err() {
        return Some(
            "a loop device is taken through /dev/loop-control, which does not exist here (no loop driver, or a container without the device): load it with `modprobe loop`, or run outside the container".into(),
        );
    }
    crate::env::unwritable(ctl)
        .map(|why| format!("a loop device is taken through {}, but {why}", ctl.display()))
}

/// Why the `iosched` axis cannot write `dev`'s scheduler (its queue/scheduler file), or for
/// a loop device the run has not made yet (`None`), the sysfs mount holding /sys/block.
fn queue_unwritable(root: &Root, dev: Option<&str>) -> Option<String> {
    let (what, path) = match dev {
        Some(d) => (format!("{d}'s"), root.path(&format!("/sys/block/{d}/queue/scheduler"))),
        None => ("the loop device's".to_string(), root.path("/sys/block")),
    };
    crate::env::unwritable(&path)
        .map(|why| format!("the iosched axis sets {what} I/O scheduler in sysfs, but {why}"))
}

/// The whole disk (as named in /sys/block) holding device number `dev` (a partition's
/// parent disk; the device itself if it is a disk).
pub fn disk_of(root: &Root, dev: u64) -> Option<String> {
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let link = root.path(&format!("/sys/dev/block/{maj}:{min}"));
    let real = std::fs::canonicalize(&link).ok()?;
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    if real.join("partition").exists() {
        name(real.parent()?)
    } else {
        name(&real)
    }
}

/// The disk holding the filesystem that `path` is on.
pub fn disk_of_path(root: &Root, path: &Path) -> io::Result<String> {
    let md = std::fs::metadata(path)?;
    disk_of(root, md.dev()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} is not on a block device (tmpfs, overlay, network filesystem?)",
                path.display()
            ),
        )
    })
}

/// Where block device number `rdev` (or a partition of it) is mounted, from mountinfo.
pub fn mount_point_of(root: &Root, rdev: u64) -> Option<PathBuf> {
    let text = root.read("/proc/self/mountinfo").ok()?;
    let want_disk = disk_of(root, rdev);
    let mut fallback = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(mm), Some(mp)) = (f.get(2), f.get(4)) else { continue };
        let Some((a, b)) = mm.split_once(':') else { continue };
        let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) else { continue };
        let d = libc::makedev(a, b);
        if d == rdev {
            return Some(PathBuf::from(unescape(mp)));
        }
        if fallback.is_none() && want_disk.is_some() && disk_of(root, d) == want_disk {
            fallback = Some(PathBuf::from(unescape(mp)));
        }
    }
    fallback
}

/// mountinfo escapes space, tab, newline and backslash as three octal digits.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8).wrapping_add(c - b'0')));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Free bytes (as root sees them: f_bfree) on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: statvfs fills a plain struct from a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_bfree as u64 * st.f_frsize as u64)
}

/// The raw counters of /sys/block/<dev>/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskStat([u64; 17]);

impl DiskStat {
    /// Reads `/sys/block/<dev>/stat` (11, 15 or 17 fields depending on the kernel).
    pub fn read(root: &Root, dev: &str) -> Option<DiskStat> {
        let text = root.read(&format!("/sys/block/{dev}/stat")).ok()?;
        let mut v = [0u64; 17];
        let mut n = 0;
        for (i, w) in text.split_whitespace().take(17).enumerate() {
            v[i] = w.parse().ok()?;
            n += 1;
        }
        (n >= 11).then_some(DiskStat(v))
    }

    /// The change from `before` to `self`, as the model stores it.
    pub fn since(&self, before: &DiskStat, device: &str) -> DiskStatDelta {
        let d = |i: usize| self.0[i].saturating_sub(before.0[i]);
        DiskStatDelta {
            device: device.to_string(),
            read_ios: d(0),
            read_merges: d(1),
            read_sectors: d(2),
            read_ticks_ms: d(3),
            write_ios: d(4),
            write_merges: d(5),
            write_sectors: d(6),
            write_ticks_ms: d(7),
            io_ticks_ms: d(9),
            time_in_queue_ms: d(10),
            flush_ios: d(15),
        }
    }
}

/// An exclusive hold on a device's I/O scheduler setting for one run: a `flock` on its
/// `/sys/block/<dev>/queue/scheduler` file (kernfs keeps one inode per attribute, so every
/// process locks the same one, whatever its state directory). Two runs switching the same
/// queue would each journal the other's setting as the one to restore, and leave the device
/// on a scheduler neither found. Released when dropped (or when the process dies).
#[derive(Debug)]
pub struct QueueLock {
    _file: std::fs::File,
}

/// Takes the [`QueueLock`] of `dev`, or says who may hold it. Never waits.
pub fn lock_queue(root: &Root, dev: &str) -> Result<QueueLock, SysError> {
    use std::os::fd::AsRawFd;
    let path = root.path(&format!("/sys/block/{dev}/queue/scheduler"));
    let file = std::fs::File::open(&path)
        .map_err(|e| SysError::io(format!("opening {}", path.display()), e))?;
    // SAFETY: plain syscall on our own descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            SysError::refused(format!(
                "another process (another schedlab run?) is changing {dev}'s I/O scheduler ({} is locked); \
                 runs that switch the same device's scheduler cannot overlap: wait for it to finish",
                path.display()
            ))
        } else {
            SysError::io(format!("locking {}", path.display()), e)
        });
    }
    Ok(QueueLock { _file: file })
}

/// Switches `dev`'s scheduler and writes the tunables, journaling first every value the
/// switch may change: the queue tunables a scheduler switch resets (nr_requests) are
/// recorded before the scheduler, so they are restored after it. Returns the scheduler and
/// tunables read back.
pub fn apply_iosched(
    j: &mut Journal,
    root: &Root,
    dev: &str,
    s: &IoSetting,
) -> Result<(String, Vec<(String, String)>), SysError> {
    let qpath = |k: &str| root.path(&format!("/sys/block/{dev}/queue/{k}"));
    let (offered, active) = schedulers(root, dev)
        .map_err(|e| SysError::io(format!("reading {dev}'s I/O schedulers"), e))?;
    if !offered.contains(&s.scheduler) {
        return Err(SysError::refused(format!(
            "{dev} does not offer the I/O scheduler \"{}\"; it offers: {}",
            s.scheduler,
            offered.join(", ")
        )));
    }
    let record = |j: &mut Journal, p: PathBuf| -> Result<(), SysError> {
        let value = std::fs::read_to_string(&p)
            .map_err(|e| SysError::io(format!("reading {}", p.display()), e))?;
        j.record(Entry::Restore { path: p, value: value.trim().to_string() })
            .map_err(|e| SysError::io("journal", e))
    };
    let mut queue_keys: Vec<&str> = vec!["nr_requests"];
    for (k, _) in &s.tunables {
        if QUEUE_TUNABLES.contains(&k.as_str()) && !queue_keys.contains(&k.as_str()) {
            queue_keys.push(k);
        }
    }
    for k in &queue_keys {
        if qpath(k).exists() {
            record(j, qpath(k))?;
        }
    }
    // Switched away and back, a scheduler starts again from its defaults: its own tunables
    // are journaled before the switch, so they are written back after the switch back.
    if s.scheduler != active {
        for p in writable_files(&qpath("iosched")) {
            record(j, p)?;
        }
    }
    j.record(Entry::Restore { path: qpath("scheduler"), value: active.clone() })
        .map_err(|e| SysError::io("journal", e))?;
    std::fs::write(qpath("scheduler"), &s.scheduler)
        .map_err(|e| SysError::io(format!("setting {dev}'s scheduler to {}", s.scheduler), e))?;
    let mut applied = Vec::new();
    for (k, v) in &s.tunables {
        let p = if QUEUE_TUNABLES.contains(&k.as_str()) {
            qpath(k)
        } else {
            qpath(&format!("iosched/{k}"))
        };
        if !p.exists() {
            return Err(SysError::refused(format!(
                "{dev} with scheduler {} has no tunable {k} ({} does not exist)",
                s.scheduler,
                p.display()
            )));
        }
        if !QUEUE_TUNABLES.contains(&k.as_str()) {
            record(j, p.clone())?;
        }
        std::fs::write(&p, v)
            .map_err(|e| SysError::io(format!("writing {v} to {}", p.display()), e))?;
        let back = std::fs::read_to_string(&p).map(|x| x.trim().to_string()).unwrap_or_default();
        applied.push((k.clone(), back));
    }
    let now = schedulers(root, dev).map(|s| s.1).unwrap_or_default();
    if now != s.scheduler {
        return Err(SysError::refused(format!(
            "{dev}: wrote scheduler {} but the kernel reports {now}",
            s.scheduler
        )));
    }
    Ok((now, applied))
}

/// The files in `dir` that can be written (a scheduler's tunables), by name; none if `dir`
/// does not exist (a queue without a scheduler).
fn writable_files(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| e.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o200 != 0))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

// Loop device ioctls (linux/loop.h).
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_SET_DIRECT_IO: libc::c_ulong = 0x4C08;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;

/// Attaches `image` to a free loop device; returns its name (e.g. `loop3`). Journal an
/// [`Entry::DetachLoop`] for `image` before calling.
pub fn loop_attach(image: &Path, direct_io: bool) -> io::Result<String> {
    let backing = std::fs::OpenOptions::new().read(true).write(true).open(image)?;
    let ctl = std::fs::OpenOptions::new().read(true).write(true).open("/dev/loop-control")?;
    for _ in 0..20 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
        let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let name = format!("loop{n}");
        let dev =
            std::fs::OpenOptions::new().read(true).write(true).open(format!("/dev/{name}"))?;
        // SAFETY: LOOP_SET_FD takes the backing file descriptor by value.
        if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_FD as _, backing.as_raw_fd()) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EBUSY) {
                continue; // another process took it between GET_FREE and SET_FD
            }
            return Err(e);
        }
        if direct_io {
            // SAFETY: LOOP_SET_DIRECT_IO takes 0 or 1 by value.
            if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_DIRECT_IO as _, 1 as libc::c_ulong) }
                != 0
            {
                let e = io::Error::last_os_error();
                // SAFETY: detach what we just attached.
                unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD as _, 0) };
                return Err(io::Error::new(e.kind(), format!("LOOP_SET_DIRECT_IO: {e}")));
            }
        }
        return Ok(name);
    }
    Err(io::Error::other("no free loop device after 20 attempts"))
}

/// The loop devices whose backing file is `image`.
pub fn loops_backed_by(image: &Path) -> Vec<String> {
    let want = image.as_os_str().to_string_lossy().into_owned();
    let Ok(rd) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut out = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            let b = b.trim();
            if b == want || b.strip_suffix(" (deleted)") == Some(want.as_str()) {
                out.push(name);
            }
        }
    }
    out
}

/// Detaches every loop device backed by `image` (nothing to do is success).
pub fn loop_detach_backing(image: &Path) -> io::Result<()> {
    for name in loops_backed_by(image) {
        let dev = std::fs::OpenOptions::new().read(true).open(format!("/dev/{name}"))?;
        // SAFETY: LOOP_CLR_FD takes no argument.
        if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD as _, 0) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENXIO) {
                return Err(io::Error::new(e.kind(), format!("detaching /dev/{name}: {e}")));
            }
        }
    }
    Ok(())
}

/// Finds a mkfs program for `fs` on PATH or in /sbin, /usr/sbin.
pub fn mkfs_tool(fs: &str) -> Option<PathBuf> {
    let exe = format!("mkfs.{fs}");
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(&exe))
        .find(|p| p.is_file())
}

/// Makes a filesystem on /dev/<dev> (argv, no shell; ext4 with its lazy initialisation off,
/// so no background thread writes to the device during measurements).
pub fn mkfs(fs: &str, dev: &str) -> Result<(), SysError> {
    let tool = mkfs_tool(fs).ok_or_else(|| {
        SysError::refused(format!(
            "mkfs.{fs} not found; install it (ext4: e2fsprogs, xfs: xfsprogs, btrfs: btrfs-progs)"
        ))
    })?;
    let node = format!("/dev/{dev}");
    let mut cmd = std::process::Command::new(&tool);
    match fs {
        "ext4" => cmd.args([
            "-q",
            "-F",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            "-L",
            "schedlab",
            &node,
        ]),
        _ => cmd.args(["-q", "-f", &node]),
    };
    // mkfs dies with schedlab: killed, schedlab leaves none writing to a device `restore`
    // detaches. Asked for before exec; a parent already gone by then means exit at once.
    let parent = std::process::id() as i32;
    // SAFETY: only async-signal-safe calls (prctl, getppid) and no allocation between fork
    // and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            match libc::getppid() == parent {
                true => Ok(()),
                false => Err(io::Error::from_raw_os_error(libc::ESRCH)),
            }
        });
    }
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| SysError::io(format!("running {}", tool.display()), e))?;
    if !out.status.success() {
        return Err(SysError::refused(format!(
            "{} {node} failed ({}): {}",
            tool.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// Mounts /dev/<dev> (filesystem `fs`) on `dir` with nosuid,nodev, then makes the mount
/// private (no propagation to other mount namespaces). Journal an [`Entry::Unmount`] first.
pub fn mount_private(dev: &str, dir: &Path, fs: &str) -> io::Result<()> {
    mount_private_from(&format!("/dev/{dev}"), dir, fs, 0)
}

/// Mounts `source` (a device, or a name for a pseudo filesystem such as tracefs) of type `fs`
/// on `dir` with nosuid,nodev and `extra` mount flags (`libc::MS_NOEXEC`), then makes the
/// mount private, so other mount namespaces never see it. Journal an [`Entry::Unmount`]
/// first.
pub fn mount_private_from(
    source: &str,
    dir: &Path,
    fs: &str,
    extra: libc::c_ulong,
) -> io::Result<()> {
    let src = CString::new(source).map_err(io::Error::other)?;
    let target = cstr(dir)?;
    let fstype = CString::new(fs).map_err(io::Error::other)?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | extra;
    // SAFETY: NUL-terminated strings; no data argument.
    if unsafe {
        libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), flags, std::ptr::null())
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; only the propagation type changes.
    if unsafe {
        libc::mount(
            std::ptr::null(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_PRIVATE,
            std::ptr::null(),
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The mount points of every filesystem of type `fstype` in a mountinfo text.
pub fn mounts_of_type(mountinfo: &str, fstype: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let point = head.split_whitespace().nth(4)?;
            (tail.split_whitespace().next()? == fstype).then(|| PathBuf::from(unescape(point)))
        })
        .collect()
}

/// The mount point of the mount holding `path` in this mount namespace: the longest mount
/// point that is `path` or one of its ancestors (after resolving symbolic links).
pub fn mount_holding(path: &Path) -> Option<PathBuf> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(4).map(|m| PathBuf::from(unescape(m))))
        .filter(|m| path.starts_with(m))
        .max_by_key(|m| m.components().count())
}

/// True if `dir` is a mount point in this mount namespace.
pub fn is_mount_point(dir: &Path) -> bool {
    let want = dir.to_string_lossy();
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| {
            t.lines().any(|l| l.split_whitespace().nth(4).is_some_and(|m| unescape(m) == want))
        })
        .unwrap_or(false)
}

/// Unmounts `dir`; waits up to 2 s for a busy filesystem, then detaches it lazily.
/// Not mounted is success.
pub fn unmount(dir: &Path) -> io::Result<()> {
    let target = cstr(dir)?;
    for _ in 0..20 {
        if !is_mount_point(dir) {
            return Ok(());
        }
        // SAFETY: NUL-terminated path.
        if unsafe { libc::umount2(target.as_ptr(), 0) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOENT) => return Ok(()),
            Some(libc::EBUSY) => std::thread::sleep(std::time::Duration::from_millis(100)),
            _ => return Err(e),
        }
    }
    // SAFETY: as above.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Flushes dirty data and drops the page cache, dentries and inodes (echo 3 > drop_caches).
pub fn drop_caches(root: &Root) -> io::Result<()> {
    // SAFETY: no arguments.
    unsafe { libc::sync() };
    std::fs::write(root.path("/proc/sys/vm/drop_caches"), "3")
}

/// The directory a `Dir` target's files go under: the directory itself, or where a named
/// block device (or one of its partitions) is mounted. Never the raw device.
pub fn resolve_dir(root: &Root, path: &str) -> Result<PathBuf, SysError> {
    use std::os::unix::fs::FileTypeExt;
    let p = Path::new(path);
    let md = std::fs::metadata(p).map_err(|e| SysError::io(path, e))?;
    if md.file_type().is_block_device() {
        return mount_point_of(root, md.rdev()).ok_or_else(|| {
            SysError::refused(format!(
                "{path} is not mounted; schedlab never writes to a device raw: mount a filesystem on it, or name a directory on one"
            ))
        });
    }
    if !md.is_dir() {
        return Err(SysError::refused(format!("{path} is neither a directory nor a block device")));
    }
    Ok(p.to_path_buf())
}

/// The nearest existing ancestor of `p` (a parent directory that will be created later).
fn existing_ancestor(p: &Path) -> PathBuf {
    let mut q = p.to_path_buf();
    while !q.exists() {
        if !q.pop() {
            return PathBuf::from("/");
        }
    }
    q
}

/// What the machine says about the device `d` wants; `parent` is where the experiment
/// directory (and a loop device's image) goes.
pub fn facts(root: &Root, d: &DeviceSpec, parent: &Path) -> DeviceFacts {
    // SAFETY: no failure mode.
    let mut f = DeviceFacts { privileged: unsafe { libc::geteuid() } == 0, ..Default::default() };
    if f.privileged && d.drop_caches {
        f.drop_caches_unwritable = crate::env::unwritable(&root.path("/proc/sys/vm/drop_caches"));
    }
    match &d.target {
        DeviceTarget::Loop { fs, .. } => {
            let at = existing_ancestor(parent);
            f.free_bytes = free_bytes(&at).ok();
            if mkfs_tool(fs).is_none() {
                f.mkfs_error =
                    Some(format!("fs = \"{fs}\" needs mkfs.{fs}, which is not installed here"));
            }
            f.loop_unavailable = loop_unavailable();
            match d.queue {
                QueueTarget::Device => {
                    f.offered = loop_schedulers(root);
                    f.queue_unwritable = queue_unwritable(root, None);
                }
                QueueTarget::Backing => match disk_of_path(root, &at) {
                    Ok(disk) => {
                        f.offered = schedulers(root, &disk).ok().map(|s| s.0);
                        f.queue_unwritable = queue_unwritable(root, Some(&disk));
                        f.disk = Some(disk);
                    }
                    Err(e) => f.path_error = Some(format!("queue = \"backing\": {e}")),
                },
            }
        }
        DeviceTarget::Dir { path } => {
            match resolve_dir(root, path).and_then(|dir| {
                Ok((disk_of_path(root, &dir).map_err(|e| SysError::refused(e.to_string()))?, dir))
            }) {
                Ok((disk, dir)) => {
                    f.offered = schedulers(root, &disk).ok().map(|s| s.0);
                    f.queue_unwritable = queue_unwritable(root, Some(&disk));
                    f.free_bytes = free_bytes(&dir).ok();
                    f.disk = Some(disk);
                }
                Err(e) => f.path_error = Some(e.to_string()),
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(files: &[(&str, &str)]) -> (tempfile_dir::Dir, Root) {
        let d = tempfile_dir::Dir::new();
        crate::fake::put_all(&d.0, files);
        let r = Root::new(&d.0);
        (d, r)
    }

    /// The file at `path` under the fake root `r`.
    fn read(r: &Root, path: &str) -> String {
        std::fs::read_to_string(r.path(path)).unwrap()
    }

    mod tempfile_dir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "schedlab-blk-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn parses_offered_and_active_schedulers() {
        let (_d, r) = fake(&[("/sys/block/sdz/queue/scheduler", "none [mq-deadline] kyber bfq\n")]);
        let (offered, active) = schedulers(&r, "sdz").unwrap();
        assert_eq!(offered, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(active, "mq-deadline");
    }

    #[test]
    fn disk_stat_delta_maps_the_documented_fields() {
        let (_d, r) =
            fake(&[("/sys/block/sdz/stat", "10 1 80 5 20 2 160 7 0 12 30 0 0 0 0 3 4\n")]);
        let a = DiskStat::read(&r, "sdz").unwrap();
        let (_d2, r2) =
            fake(&[("/sys/block/sdz/stat", "15 1 120 9 26 5 200 17 1 20 41 0 0 0 0 5 6\n")]);
        let b = DiskStat::read(&r2, "sdz").unwrap();
        let d = b.since(&a, "sdz");
        assert_eq!((d.read_ios, d.read_merges, d.read_sectors, d.read_ticks_ms), (5, 0, 40, 4));
        assert_eq!(
            (d.write_ios, d.write_merges, d.write_sectors, d.write_ticks_ms),
            (6, 3, 40, 10)
        );
        assert_eq!((d.io_ticks_ms, d.time_in_queue_ms, d.flush_ios), (8, 11, 2));
    }

    #[test]
    fn old_kernels_eleven_fields_still_parse() {
        let (_d, r) = fake(&[("/sys/block/sdz/stat", "1 2 3 4 5 6 7 8 9 10 11\n")]);
        assert!(DiskStat::read(&r, "sdz").is_some());
    }

    #[test]
    fn mounts_of_a_type_are_read_from_mountinfo() {
        let text = "22 1 0:21 / /proc rw - proc proc rw\n\
                    40 30 0:12 / /sys/kernel/tracing rw,nosuid - tracefs tracefs rw\n\
                    41 30 0:12 / /run/a\\040b rw shared:5 - tracefs nodev rw\n";
        assert_eq!(
            mounts_of_type(text, "tracefs"),
            [PathBuf::from("/sys/kernel/tracing"), PathBuf::from("/run/a b")]
        );
        assert!(mounts_of_type(text, "debugfs").is_empty());
    }

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/a\\134b\\"), "/a\\b\\");
        assert_eq!(unescape("/é\\1"), "/é\\1");
    }

    #[test]
    fn a_queue_is_locked_by_one_holder_at_a_time() {
        let (_d, root) = fake(&[("/sys/block/vdb/queue/scheduler", "[none] mq-deadline\n")]);
        let held = lock_queue(&root, "vdb").unwrap();
        // flock locks belong to the open file description: a second open conflicts even in
        // the same process, as another run's would.
        let e = lock_queue(&root, "vdb").unwrap_err().to_string();
        assert!(e.contains("cannot overlap") && e.contains("vdb"), "{e}");
        drop(held);
        assert!(lock_queue(&root, "vdb").is_ok(), "released when dropped");
        assert!(lock_queue(&root, "nosuch").unwrap_err().to_string().contains("opening"));
    }

    #[test]
    fn apply_iosched_journals_and_refuses_unoffered_schedulers() {
        let (d, r) = fake(&[
            ("/sys/block/sdz/queue/scheduler", "[none] mq-deadline\n"),
            ("/sys/block/sdz/queue/nr_requests", "64\n"),
            ("/sys/block/sdz/queue/read_ahead_kb", "128\n"),
        ]);
        let mut j = Journal::create(&d.0.join("state")).unwrap();
        let s = IoSetting { name: "x".into(), scheduler: "bfq".into(), tunables: vec![] };
        let e = apply_iosched(&mut j, &r, "sdz", &s).unwrap_err().to_string();
        assert!(e.contains("offers: none, mq-deadline"), "{e}");
        assert!(j.entries().is_empty(), "nothing recorded before the refusal");
        // A fake sysfs file does not switch like the kernel's: the read-back check catches it.
        let s = IoSetting {
            name: "dl".into(),
            scheduler: "mq-deadline".into(),
            tunables: vec![("read_ahead_kb".into(), "512".into())],
        };
        let e = apply_iosched(&mut j, &r, "sdz", &s);
        assert!(e.is_ok(), "{e:?}");
        assert_eq!(read(&r, "/sys/block/sdz/queue/read_ahead_kb"), "512");
        assert!(j.undo_to(0).is_empty());
        assert_eq!(read(&r, "/sys/block/sdz/queue/read_ahead_kb"), "128");
        assert_eq!(read(&r, "/sys/block/sdz/queue/scheduler"), "none");
        assert_eq!(read(&r, "/sys/block/sdz/queue/nr_requests"), "64");
    }

    #[test]
    fn the_schedulers_own_tunables_come_back_after_a_switch_away_and_back() {
        let (d, r) = fake(&[
            ("/sys/block/sdz/queue/scheduler", "[mq-deadline] bfq\n"),
            ("/sys/block/sdz/queue/nr_requests", "64\n"),
            ("/sys/block/sdz/queue/iosched/read_expire", "123\n"),
            ("/sys/block/sdz/queue/iosched/fifo_batch", "4\n"),
        ]);
        let mut j = Journal::create(&d.0.join("state")).unwrap();
        let s = IoSetting { name: "bfq".into(), scheduler: "bfq".into(), tunables: vec![] };
        apply_iosched(&mut j, &r, "sdz", &s).unwrap();
        let names: Vec<String> = j
            .entries()
            .iter()
            .map(|e| match e {
                Entry::Restore { path, .. } => {
                    path.strip_prefix(r.path("/sys/block/sdz/queue")).unwrap().display().to_string()
                }
                e => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(
            names,
            ["nr_requests", "iosched/fifo_batch", "iosched/read_expire", "scheduler"],
            "tunables before the scheduler"
        );
        // The kernel's switch back brings mq-deadline's defaults.
        std::fs::write(r.path("/sys/block/sdz/queue/iosched/read_expire"), "500").unwrap();
        assert!(j.undo_to(0).is_empty());
        assert_eq!(read(&r, "/sys/block/sdz/queue/scheduler"), "mq-deadline");
        assert_eq!(read(&r, "/sys/block/sdz/queue/iosched/read_expire"), "123");
    }
}
