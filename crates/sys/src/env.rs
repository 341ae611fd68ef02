//! What this machine is and what this process may do.

use crate::Root;
use schedlab_model::Environment;
use schedlab_plan::Capabilities;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Capability bits of CapEff (linux/capability.h).
pub mod cap {
    /// CAP_IPC_LOCK: lock memory beyond RLIMIT_MEMLOCK.
    pub const IPC_LOCK: u32 = 14;
    /// CAP_SYS_ADMIN: loop devices, mounts; exempt from RLIMIT_NPROC.
    pub const SYS_ADMIN: u32 = 21;
    /// CAP_SYS_NICE: any policy, priority and nice.
    pub const SYS_NICE: u32 = 23;
    /// CAP_SYS_RESOURCE: exempt from RLIMIT_NPROC.
    pub const SYS_RESOURCE: u32 = 24;
}

/// True when this process's effective capabilities (CapEff in /proc/self/status) hold `bit`.
pub fn has_cap(root: &Root, bit: u32) -> bool {
    root.read("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_string()))
        })
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .is_some_and(|bits| bits & (1 << bit) != 0)
}

/// This process's nice (its workers start at it).
pub fn current_nice() -> i32 {
    crate::sched::current().1
}

/// Reads CapEff from /proc/self/status, the RLIMIT_RTPRIO / RLIMIT_NICE soft limits, this
/// process's nice and whether it may write where schedlab makes its cgroups; then what a
/// forked child found the kernel allows (`probe`).
pub fn capabilities(root: &Root) -> Capabilities {
    capabilities_probed(root).0
}

/// [`capabilities`], with the probe's own answers (for `env --json`), or why it could not run.
pub fn capabilities_probed(root: &Root) -> (Capabilities, std::io::Result<crate::probe::Probe>) {
    let rtprio = soft_limit(libc::RLIMIT_RTPRIO);
    let nice = soft_limit(libc::RLIMIT_NICE);
    let mut caps = Capabilities {
        sys_nice: has_cap(root, cap::SYS_NICE),
        rtprio_limit: rtprio.min(99),
        min_nice: 20 - nice.min(40) as i32,
        nice: current_nice(),
        cgroup_unwritable: cgroup_unwritable(root, may_write),
        drop_caches: may_write(&root.path("/proc/sys/vm/drop_caches")),
        cpu_dma_latency: may_write(&crate::pmqos::device(root)),
        custom_slice_refused: custom_slice_refused(
            &root.read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        ),
        rt_refused: None,
        deadline_refused: None,
        rt_placement: None,
    };
    // Ask the kernel, not only the privileges: a forked child tries each policy.
    let probe = crate::probe::run(root);
    match &probe {
        Ok(p) => crate::probe::apply(&mut caps, p),
        Err(e) => {
            caps.rt_refused = Some(format!("the policy probe could not run ({e})"));
            caps.deadline_refused = caps.rt_refused.clone();
        }
    }
    (caps, probe)
}

/// The first kernel that takes a custom slice for SCHED_OTHER/BATCH (sched_attr.sched_runtime).
const CUSTOM_SLICE_SINCE: (u32, u32) = (6, 12);

/// Why a kernel of release `osrelease` (`6.18.0-1-amd64`) takes no custom slice, if it does not.
pub fn custom_slice_refused(osrelease: &str) -> Option<String> {
    let release = osrelease.trim();
    let mut nums = release.split(|c: char| !c.is_ascii_digit()).map(|n| n.parse::<u32>().ok());
    let version = (nums.next().flatten(), nums.next().flatten());
    match version {
        (Some(major), Some(minor)) if (major, minor) >= CUSTOM_SLICE_SINCE => None,
        _ => Some(format!(
            "this kernel ({}) takes no custom slice: EEVDF reads one from sched_attr.sched_runtime since Linux {}.{}",
            if release.is_empty() { "release unknown" } else { release },
            CUSTOM_SLICE_SINCE.0,
            CUSTOM_SLICE_SINCE.1
        )),
    }
}

/// True when this process may write `path` (faccessat with the effective ids, as the kernel
/// will judge the write; a read-only mount says no even to root).
pub fn may_write(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a valid C string; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// Why this process may not write `path`, naming it, the reason (a read-only mount, no
/// permission, absent) and, for a read-only mount, the remedy; None when it may. Asked with
/// faccessat as [`may_write`] (nothing is opened or changed).
pub fn unwritable(path: &Path) -> Option<String> {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Some(format!("{} is not a path the kernel takes (a NUL byte)", path.display()));
    };
    // SAFETY: a valid C string; faccessat only reads it.
    if unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) } == 0 {
        return None;
    }
    let e = std::io::Error::last_os_error();
    let p = path.display();
    Some(match e.raw_os_error() {
        Some(libc::EROFS) => {
            let mount = crate::blockdev::mount_holding(path)
                .map_or_else(|| "its filesystem".to_string(), |m| m.display().to_string());
            format!(
                "{p} is read-only: {mount} is mounted read-only (as containers mount /sys and /proc/sys); remount {mount} read-write, or run schedlab outside the container"
            )
        }
        Some(libc::EACCES | libc::EPERM) => {
            format!("this process has no permission to write {p}: run as root")
        }
        Some(libc::ENOENT) => format!("{p} does not exist"),
        _ => format!("{p} cannot be written: {e}"),
    })
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: no failure mode.
    unsafe { libc::geteuid() }
}

/// The first place schedlab's cgroups need that `writable` refuses: the directory it creates
/// `schedlab/<group>` in (or `schedlab` itself where it exists already, e.g. delegated), and
/// on v2 the root's `cgroup.procs`, since moving a worker from its own cgroup into another
/// writes the common ancestor's. None when all are writable or there is no hierarchy.
pub fn cgroup_unwritable(root: &Root, writable: impl Fn(&Path) -> bool) -> Option<String> {
    let (dirs, v2) = match crate::cgroup::detect(root)? {
        crate::cgroup::Hierarchy::V1 { cpu, cpuset } => {
            (cpu.into_iter().chain(cpuset).collect::<Vec<_>>(), false)
        }
        crate::cgroup::Hierarchy::V2 { root, .. } => (vec![root], true),
    };
    for d in dirs {
        let ours = d.join("schedlab");
        let made_in = if ours.is_dir() { ours } else { d.clone() };
        if !writable(&made_in) {
            return Some(made_in.display().to_string());
        }
        let procs = d.join("cgroup.procs");
        if v2 && !writable(&procs) {
            return Some(procs.display().to_string());
        }
    }
    None
}

/// The soft limit of a resource (RLIM_INFINITY when unlimited).
pub fn soft_limit(res: libc::__rlimit_resource_t) -> u64 {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: rl is a valid rlimit.
    unsafe { libc::getrlimit(res, &mut rl) };
    rl.rlim_cur
}

/// "v1", "v2" or "hybrid" (v1 controllers with a v2 tree beside them).
pub fn cgroup_layout(root: &Root) -> String {
    let v2_root = root.path("/sys/fs/cgroup/cgroup.controllers").exists();
    let v2_unified = root.path("/sys/fs/cgroup/unified/cgroup.controllers").exists();
    let v1 = root.path("/sys/fs/cgroup/cpu").exists()
        || root.path("/sys/fs/cgroup/cpu,cpuacct").exists();
    match (v2_root, v1, v2_unified) {
        (true, _, _) => "v2".into(),
        (false, true, true) => "hybrid".into(),
        (false, true, false) => "v1".into(),
        _ => "none".into(),
    }
}

/// CONFIG_HZ from /boot/config-<release> or /proc/config.gz is not always there; we read
/// the boot config when present.
fn config_hz(root: &Root, release: &str) -> Option<u32> {
    let text = root.read(&format!("/boot/config-{release}")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=")).and_then(|v| v.parse().ok())
}

/// Collects the environment a run is stored with.
pub fn environment(root: &Root) -> Environment {
    let kernel = root.read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let kernel_version = root.read("/proc/sys/kernel/version").unwrap_or_default();
    let cpuinfo = root.read("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    // The CPUs it may run on, not available_parallelism's, which divides a CPU quota into
    // them: the quota is a limit of its own (`limits`), and /proc/stat counts every CPU.
    let cpus = match crate::cpus::affinity_self().len() {
        0 => std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
        n => n as u32,
    };
    let mem_total_kb = crate::limits::meminfo_kib(root, "MemTotal:");
    let mut io_devices = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root.path("/sys/block")) {
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            if let Ok(s) = root.read(&format!("/sys/block/{n}/queue/scheduler")) {
                let active = s
                    .split_whitespace()
                    .find(|w| w.starts_with('['))
                    .map(|w| w.trim_matches(['[', ']']).to_string())
                    .unwrap_or(s);
                io_devices.push(format!("{n}: {active}"));
            }
        }
    }
    Environment {
        hz: config_hz(root, &kernel),
        kernel,
        kernel_version,
        cpu_model,
        cpus,
        rt_runtime_us: root.read_parse("/proc/sys/kernel/sched_rt_runtime_us"),
        rt_period_us: root.read_parse("/proc/sys/kernel/sched_rt_period_us"),
        rr_timeslice_ms: root.read_parse("/proc/sys/kernel/sched_rr_timeslice_ms"),
        autogroup: root
            .read_parse::<u32>("/proc/sys/kernel/sched_autogroup_enabled")
            .map(|v| v != 0),
        governor: root.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").ok(),
        mem_total_kb,
        io_devices,
        cgroup: cgroup_layout(root),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        cap_sys_nice: capabilities(root).sys_nice,
        machine: crate::machine::facts(root),
        sched_ext: Some(crate::scx::summary(root)),
        limits: crate::quota::limits(root),
    }
}

/// True when RT throttling is on (sched_rt_runtime_us is not -1).
pub fn rt_throttled(env: &Environment) -> bool {
    env.rt_runtime_us.map(|v| v >= 0).unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_cannot_be_written_is_named_with_why() {
        let (_root, dir) = fake(&[("/f", "x")]);
        assert_eq!(unwritable(&dir.join("f")), None, "this test's own file");
        let gone = dir.join("nothing/here");
        let why = unwritable(&gone).unwrap();
        assert!(
            why.contains(&gone.display().to_string()) && why.contains("does not exist"),
            "{why}"
        );
        assert_eq!(crate::blockdev::mount_holding(Path::new("/")).as_deref(), Some(Path::new("/")));
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn fake(files: &[(&str, &str)]) -> (Root, std::path::PathBuf) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("schedlab-env-{}-{n}", std::process::id()));
        crate::fake::put_all(&dir, files);
        (Root::new(&dir), dir)
    }

    #[test]
    fn cgroup_access_names_the_first_directory_this_process_cannot_write() {
        let (root, dir) = fake(&[
            ("/sys/fs/cgroup/cgroup.controllers", "cpu cpuset\n"),
            ("/sys/fs/cgroup/cgroup.procs", ""),
        ]);
        let cg = dir.join("sys/fs/cgroup");
        assert_eq!(cgroup_unwritable(&root, |_| true), None);
        assert_eq!(cgroup_unwritable(&root, |_| false), Some(cg.display().to_string()));
        // A writable (delegated) directory is not enough on v2: moving a worker in writes the
        // common ancestor's cgroup.procs.
        let procs = cg.join("cgroup.procs");
        assert_eq!(cgroup_unwritable(&root, |p| p != procs), Some(procs.display().to_string()));
        // Where `schedlab` exists, it is the directory that must be writable.
        std::fs::create_dir(cg.join("schedlab")).unwrap();
        let ours = cg.join("schedlab");
        assert_eq!(cgroup_unwritable(&root, |p| p != ours), Some(ours.display().to_string()));
        assert_eq!(
            cgroup_unwritable(&Root::new(dir.join("nothing")), |_| false),
            None,
            "no hierarchy, nothing to write"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn cgroup_v1_needs_each_controllers_directory() {
        let (root, dir) = fake(&[
            ("/sys/fs/cgroup/cpu/cpu.shares", "1024\n"),
            ("/sys/fs/cgroup/cpuset/cpuset.cpus", "0-1\n"),
        ]);
        let cpuset = dir.join("sys/fs/cgroup/cpuset");
        assert_eq!(cgroup_unwritable(&root, |p| p != cpuset), Some(cpuset.display().to_string()));
        assert_eq!(
            cgroup_unwritable(&root, |p| p.ends_with("cpu") || p.ends_with("cpuset")),
            None,
            "v1 moves need no root cgroup.procs"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reads_a_fake_machine() {
        let (root, dir) = fake(&[
            ("/proc/sys/kernel/osrelease", "6.1.0-test\n"),
            ("/proc/sys/kernel/sched_rt_runtime_us", "-1\n"),
            ("/proc/sys/kernel/sched_rt_period_us", "1000000\n"),
            ("/proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU @ 1GHz\n"),
            ("/sys/block/loop0/queue/scheduler", "none [mq-deadline] kyber bfq\n"),
            ("/sys/fs/cgroup/cgroup.controllers", "cpu cpuset io\n"),
            ("/boot/config-6.1.0-test", "CONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
        ]);
        let env = environment(&root);
        assert_eq!(env.kernel, "6.1.0-test");
        assert_eq!(env.cpu_model, "Fake CPU @ 1GHz");
        assert_eq!(env.rt_runtime_us, Some(-1));
        assert!(!rt_throttled(&env));
        assert_eq!(env.io_devices, vec!["loop0: mq-deadline".to_string()]);
        assert_eq!(env.cgroup, "v2");
        assert_eq!(env.hz, Some(250));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn custom_slices_are_known_from_linux_6_12() {
        assert_eq!(custom_slice_refused("6.18.0-1-amd64\n"), None);
        assert_eq!(custom_slice_refused("6.12.0"), None);
        assert_eq!(custom_slice_refused("7.0.1-rc2"), None);
        let old = custom_slice_refused("6.11.9-arch1").unwrap();
        assert!(old.contains("6.11.9-arch1") && old.contains("6.12"), "{old}");
        assert!(custom_slice_refused("5.15.0").is_some());
        assert!(custom_slice_refused("").unwrap().contains("release unknown"));
    }
}
