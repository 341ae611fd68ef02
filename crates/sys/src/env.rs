//! What this machine is and what this process may do.

use crate::Root;
use schedlab_model::Environment;
use schedlab_spec::Capabilities;

/// Effective capability bit of CAP_SYS_NICE.
const CAP_SYS_NICE: u32 = 23;

/// Reads CapEff from /proc/self/status and the RLIMIT_RTPRIO / RLIMIT_NICE soft limits.
pub fn capabilities(root: &Root) -> Capabilities {
    let sys_nice = root
        .read("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_string())))
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .map(|bits| bits & (1 << CAP_SYS_NICE) != 0)
        .unwrap_or(false);
    let rtprio = soft_limit(libc::RLIMIT_RTPRIO);
    let nice = soft_limit(libc::RLIMIT_NICE);
    Capabilities { sys_nice, rtprio_limit: rtprio.min(99), min_nice: 20 - nice.min(40) as i32 }
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
    let v1 = root.path("/sys/fs/cgroup/cpu").exists() || root.path("/sys/fs/cgroup/cpu,cpuacct").exists();
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
        .find_map(|l| l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string()))
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    let mem_total_kb = root
        .read("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().trim_end_matches(" kB").trim().to_string())))
        .and_then(|v| v.parse().ok());
    let mut io_devices = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root.path("/sys/block")) {
        let mut names: Vec<String> = rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        for n in names {
            if let Ok(s) = root.read(&format!("/sys/block/{n}/queue/scheduler")) {
                let active = s.split_whitespace().find(|w| w.starts_with('[')).map(|w| w.trim_matches(['[', ']']).to_string()).unwrap_or(s);
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
        autogroup: root.read_parse::<u32>("/proc/sys/kernel/sched_autogroup_enabled").map(|v| v != 0),
        governor: root.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").ok(),
        mem_total_kb,
        io_devices,
        cgroup: cgroup_layout(root),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        cap_sys_nice: capabilities(root).sys_nice,
    }
}

/// True when RT throttling is on (sched_rt_runtime_us is not -1).
pub fn rt_throttled(env: &Environment) -> bool {
    env.rt_runtime_us.map(|v| v >= 0).unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(files: &[(&str, &str)]) -> (Root, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("schedlab-env-{}-{}", std::process::id(), files.len()));
        for (p, text) in files {
            let path = dir.join(p.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        (Root::new(&dir), dir)
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
}
