//! cgroups for worker groups, on cgroup v1 (cpu and cpuset hierarchies) and pure v2.
//!
//! schedlab creates `schedlab/<name>` under each hierarchy it needs, moves workers in
//! before they are released, and removes everything afterwards; every directory and
//! every control file it changes outside its own directories is journaled first.
//!
//! Weights are given in v2 units (`cpu.weight`, 1..10000, default 100). On v1 they map to
//! `cpu.shares = weight * 1024 / 100` (default 100 -> 1024, the kernel's own v2<->v1
//! conversion), clamped to 2..262144. Bandwidth `cpu_max = (quota_us, period_us)` is
//! `cpu.max` on v2 and `cpu.cfs_quota_us`/`cpu.cfs_period_us` on v1.

use crate::journal::{Entry, Journal};
use crate::{Root, SysError};
use std::io;
use std::path::{Path, PathBuf};

/// The cgroup layout schedlab will use on this machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Hierarchy {
    /// cgroup v1: one directory per controller.
    V1 {
        /// The cpu controller's mount (often a link to cpu,cpuacct).
        cpu: Option<PathBuf>,
        /// The cpuset controller's mount.
        cpuset: Option<PathBuf>,
    },
    /// cgroup v2: one tree.
    V2 {
        /// Its root.
        root: PathBuf,
        /// Controllers available at the root (cgroup.controllers).
        controllers: Vec<String>,
    },
}

/// What a group asks of its cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// CPU weight in v2 units (1..10000); None leaves the default (100).
    pub weight: Option<u32>,
    /// CPU bandwidth: quota and period in microseconds.
    pub max: Option<(u64, u64)>,
    /// CPUs of the group's cpuset.
    pub cpuset: Option<Vec<u32>>,
    /// RT runtime per period for a group of real-time workers, where the kernel has RT group
    /// scheduling (v1 `cpu.rt_runtime_us`): a cgroup without it may hold no real-time task.
    pub rt_runtime_us: Option<u64>,
}

impl From<&schedlab_plan::CgroupSpec> for Settings {
    fn from(c: &schedlab_plan::CgroupSpec) -> Settings {
        Settings {
            weight: c.cpu_weight,
            max: c.cpu_max,
            cpuset: c.cpuset.clone(),
            rt_runtime_us: None,
        }
    }
}

/// v2 weight -> v1 shares.
pub fn weight_to_shares(weight: u32) -> u64 {
    (weight as u64 * 1024 / 100).clamp(2, 262_144)
}

/// Finds the hierarchy to use: pure v2 at /sys/fs/cgroup, else v1 controllers, else a v2
/// tree at /sys/fs/cgroup/unified that has controllers.
pub fn detect(root: &Root) -> Option<Hierarchy> {
    let v2 = |dir: &str| -> Option<Hierarchy> {
        let text = root.read(&format!("{dir}/cgroup.controllers")).ok()?;
        Some(Hierarchy::V2 {
            root: root.path(dir),
            controllers: text.split_whitespace().map(str::to_string).collect(),
        })
    };
    if let Some(h) = v2("/sys/fs/cgroup") {
        return Some(h);
    }
    let dir = |n: &str| Some(root.path(&format!("/sys/fs/cgroup/{n}"))).filter(|p| p.is_dir());
    let (cpu, cpuset) = (dir("cpu").or_else(|| dir("cpu,cpuacct")), dir("cpuset"));
    if cpu.is_some() || cpuset.is_some() {
        return Some(Hierarchy::V1 { cpu, cpuset });
    }
    v2("/sys/fs/cgroup/unified")
        .filter(|h| matches!(h, Hierarchy::V2 { controllers, .. } if !controllers.is_empty()))
}

impl Hierarchy {
    /// A short description for messages and `schedlab env`.
    pub fn describe(&self) -> String {
        match self {
            Hierarchy::V1 { cpu, cpuset } => format!(
                "v1 (cpu: {}, cpuset: {})",
                cpu.as_ref().map(|p| p.display().to_string()).unwrap_or("none".into()),
                cpuset.as_ref().map(|p| p.display().to_string()).unwrap_or("none".into())
            ),
            Hierarchy::V2 { root, controllers } => {
                format!("v2 at {} (controllers: {})", root.display(), controllers.join(" "))
            }
        }
    }

    /// Checks that every controller `s` needs is available, before anything is changed.
    pub fn check(&self, s: &Settings) -> Result<(), SysError> {
        let need_cpu = s.weight.is_some() || s.max.is_some();
        let need_cpuset = s.cpuset.is_some();
        match self {
            Hierarchy::V1 { cpu, cpuset } => {
                if need_cpu && cpu.is_none() {
                    return Err(SysError::refused(
                        "the cgroup v1 cpu controller is not mounted (no /sys/fs/cgroup/cpu)",
                    ));
                }
                if need_cpuset && cpuset.is_none() {
                    return Err(SysError::refused(
                        "the cgroup v1 cpuset controller is not mounted (no /sys/fs/cgroup/cpuset)",
                    ));
                }
            }
            Hierarchy::V2 { root, controllers } => {
                for (need, c) in [(need_cpu, "cpu"), (need_cpuset, "cpuset")] {
                    if need && !controllers.iter().any(|x| x == c) {
                        return Err(SysError::refused(format!(
                            "the cgroup v2 controller \"{c}\" is not available at {} (cgroup.controllers: {})",
                            root.display(),
                            controllers.join(" ")
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The RT runtime (us per period) schedlab's cgroups may take, where the kernel has RT
    /// group scheduling on a v1 cpu hierarchy: the root's `cpu.rt_runtime_us` less what its
    /// other child cgroups hold. None without RT group scheduling (or on v2).
    pub fn rt_available(&self) -> Option<u64> {
        let Hierarchy::V1 { cpu: Some(cpu), .. } = self else { return None };
        let read = |d: &Path| -> Option<i64> {
            std::fs::read_to_string(d.join("cpu.rt_runtime_us")).ok()?.trim().parse().ok()
        };
        let total = read(cpu)?;
        let taken: i64 = std::fs::read_dir(cpu)
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != "schedlab" && e.path().is_dir())
            .filter_map(|e| read(&e.path()))
            .map(|r| r.max(0))
            .sum();
        u64::try_from(total - taken).ok()
    }

    /// Creates `schedlab/<name>` with `s` applied; every step is journaled first.
    pub fn create(&self, j: &mut Journal, name: &str, s: &Settings) -> io::Result<Cgroup> {
        self.check(s).map_err(|e| io::Error::new(io::ErrorKind::Unsupported, e))?;
        let mut dirs = Vec::new();
        match self {
            Hierarchy::V1 { cpu, cpuset } => {
                if let Some(cpu) = cpu {
                    // The shared parent's RT runtime goes back after the cgroups are gone:
                    // journaled before them, so it is undone after them.
                    let parent_rt = cpu.join("schedlab").join("cpu.rt_runtime_us");
                    let rt = s.rt_runtime_us.zip(self.rt_available());
                    if rt.is_some() {
                        let before = std::fs::read_to_string(&parent_rt).unwrap_or("0".into());
                        j.record(Entry::Restore {
                            path: parent_rt.clone(),
                            value: before.trim().to_string(),
                        })?;
                    }
                    let d = make(j, cpu, name)?;
                    if let Some((share, available)) = rt {
                        write_rt(&parent_rt, available)?;
                        write_rt(&d.join("cpu.rt_runtime_us"), share.min(available))?;
                    }
                    write(
                        &d.join("cpu.shares"),
                        &weight_to_shares(s.weight.unwrap_or(100)).to_string(),
                    )?;
                    if let Some((quota, period)) = s.max {
                        write(&d.join("cpu.cfs_period_us"), &period.to_string())?;
                        write(&d.join("cpu.cfs_quota_us"), &quota.to_string())?;
                    }
                    dirs.push(d);
                }
                if let (Some(set), Some(cpuset)) = (&s.cpuset, cpuset) {
                    let parent = cpuset.join("schedlab");
                    let fresh = !parent.exists();
                    let d = make(j, cpuset, name)?;
                    // A v1 cpuset accepts tasks only once cpus and mems are set, parent first.
                    let mems = std::fs::read_to_string(cpuset.join("cpuset.mems"))
                        .unwrap_or_else(|_| "0".into());
                    if fresh {
                        let all =
                            std::fs::read_to_string(cpuset.join("cpuset.cpus")).unwrap_or_default();
                        write(&parent.join("cpuset.cpus"), all.trim())?;
                        write(&parent.join("cpuset.mems"), mems.trim())?;
                    }
                    write(&d.join("cpuset.cpus"), &crate::cpus::format_list(set))?;
                    write(&d.join("cpuset.mems"), mems.trim())?;
                    dirs.push(d);
                }
            }
            Hierarchy::V2 { root, .. } => {
                let mut wanted = vec!["cpu"];
                if s.cpuset.is_some() {
                    wanted.push("cpuset");
                }
                enable(j, root, &wanted)?;
                let parent = root.join("schedlab");
                let fresh = !parent.exists();
                let d = make(j, root, name)?;
                if fresh {
                    let _ = enable(j, &parent, &wanted);
                } else {
                    enable(j, &parent, &wanted)?;
                }
                if let Some(w) = s.weight {
                    write(&d.join("cpu.weight"), &w.to_string())?;
                }
                if let Some((quota, period)) = s.max {
                    write(&d.join("cpu.max"), &format!("{quota} {period}"))?;
                }
                if let Some(set) = &s.cpuset {
                    write(&d.join("cpuset.cpus"), &crate::cpus::format_list(set))?;
                }
                dirs.push(d);
            }
        }
        Ok(Cgroup { dirs })
    }
}

/// mkdir `<base>/schedlab` (if missing) and `<base>/schedlab/<name>`, journaled. Every run
/// journals the shared parent, whoever created it: its undo removes it only once no child
/// cgroup is left, so the last of several overlapping runs removes it.
pub(crate) fn make(j: &mut Journal, base: &Path, name: &str) -> io::Result<PathBuf> {
    let parent = base.join("schedlab");
    j.record(Entry::RemoveCgroup { path: parent.clone() })?;
    let d = parent.join(name);
    j.record(Entry::RemoveCgroup { path: d.clone() })?;
    for attempt in 0..3 {
        match std::fs::create_dir(&parent) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        match std::fs::create_dir(&d) {
            // Another run removed the empty parent between our two mkdirs: try again.
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempt < 2 => continue,
            r => return r.map(|()| d),
        }
    }
    unreachable!("the loop returns on its last attempt")
}

/// Enables v2 controllers in `dir`'s subtree_control; each one it enables is journaled
/// as "-name" to write back.
fn enable(j: &mut Journal, dir: &Path, names: &[&str]) -> io::Result<()> {
    let file = dir.join("cgroup.subtree_control");
    let have = std::fs::read_to_string(&file).unwrap_or_default();
    for n in names {
        if !have.split_whitespace().any(|x| x == *n) {
            j.record(Entry::Restore { path: file.clone(), value: format!("-{n}") })?;
            write(&file, &format!("+{n}"))?;
        }
    }
    Ok(())
}

/// Writes an RT runtime. A cgroup removed just before (the previous cell's) keeps its RT
/// runtime counted among its parent's children until the kernel frees it, after an RCU
/// grace period: the kernel says EINVAL meanwhile, so this tries for up to two seconds.
fn write_rt(path: &Path, us: u64) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match write(path, &us.to_string()) {
            Err(e) if e.kind() == io::ErrorKind::InvalidInput && tries < 80 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            r => return r,
        }
    }
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value).map_err(|e| {
        io::Error::new(e.kind(), format!("writing \"{value}\" to {}: {e}", path.display()))
    })
}

/// A created cgroup (one directory per v1 hierarchy, one on v2).
#[derive(Debug, Clone)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
}

impl Cgroup {
    /// Moves process `pid` into the cgroup (every hierarchy).
    pub fn add(&self, pid: i32) -> io::Result<()> {
        for d in &self.dirs {
            write(&d.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The directories.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

fn on_cgroupfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: valid C string and statfs buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe {
        libc::statfs(c.as_ptr(), &mut st) == 0
            && matches!(st.f_type as i64, CGROUP_SUPER_MAGIC | CGROUP2_SUPER_MAGIC)
    }
}

/// Removes a cgroup directory: kills what is left in it, then rmdir (a cgroup's control
/// files do not count). A directory that still has child cgroups (another run's) is left.
/// On a fake tree (tests) the files are plain files and are removed with it.
pub fn remove_dir(path: &Path) -> io::Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let has_children = || {
        std::fs::read_dir(path)
            .map(|rd| rd.filter_map(Result::ok).any(|e| e.path().is_dir()))
            .unwrap_or(false)
    };
    if !on_cgroupfs(path) {
        // A fake tree (tests): control files are plain files; another run's child stays.
        return if has_children() { Ok(()) } else { std::fs::remove_dir_all(path) };
    }
    for attempt in 0..50 {
        let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
        let me = std::process::id() as i32;
        // Never this process: an engine not yet back from a cgroup of its own is left alive
        // (the rmdir then fails and says so).
        for pid in
            procs.split_whitespace().filter_map(|p| p.parse::<i32>().ok()).filter(|p| *p != me)
        {
            // SAFETY: signalling a process left in our own cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::ENOTEMPTY))
                    && attempt < 49 =>
            {
                if has_children() {
                    return Ok(()); // another run's cgroups live here; that run removes the parent
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
