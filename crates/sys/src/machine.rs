//! The machine's identity and the facts that change what it measures (`model::Machine`).

use crate::Root;
use schedlab_model::Machine;
use sha2::{Digest, Sha256};

/// Reads this machine's identity and facts; what cannot be read is left empty or None.
pub fn facts(root: &Root) -> Machine {
    let read = |p: &str| root.read(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let machine_id_sha256 = read("/etc/machine-id")
        .map(|id| Sha256::digest(id.as_bytes()).iter().map(|b| format!("{b:02x}")).collect())
        .unwrap_or_default();
    let microcode = root.read("/proc/cpuinfo").ok().and_then(|t| {
        t.lines().find_map(|l| {
            l.strip_prefix("microcode").map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
    });
    let mut sched_knobs = std::collections::BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(root.path("/proc/sys/kernel")) {
        for e in rd.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(v) = name
                .starts_with("sched_")
                .then(|| read(&format!("/proc/sys/kernel/{name}")))
                .flatten()
            {
                sched_knobs.insert(name, v);
            }
        }
    }
    Machine {
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
        machine_id_sha256,
        smt: read("/sys/devices/system/cpu/smt/control"),
        microcode,
        cmdline: read("/proc/cmdline").unwrap_or_default(),
        clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        cpuidle_driver: read("/sys/devices/system/cpu/cpuidle/current_driver"),
        cpu_dma_latency_us: crate::pmqos::current(&crate::pmqos::device(root)).ok(),
        sched_knobs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_come_from_the_root_and_the_machine_id_is_hashed() {
        let dir = std::env::temp_dir().join(format!("schedlab-machine-{}", std::process::id()));
        let files = [
            ("etc/machine-id", "abc\n"),
            ("proc/sys/kernel/hostname", "node7\n"),
            ("proc/sys/kernel/sched_rr_timeslice_ms", "100\n"),
            ("proc/sys/kernel/pid_max", "4194304\n"),
            ("proc/cpuinfo", "processor\t: 0\nmicrocode\t: 0x1000065\n"),
            ("proc/cmdline", "root=/dev/vda1 quiet\n"),
            ("sys/devices/system/cpu/smt/control", "notsupported\n"),
            ("sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n"),
        ];
        crate::fake::put_all(&dir, &files);
        let m = facts(&Root::new(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(m.hostname, "node7");
        assert_eq!(
            m.machine_id_sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(m.microcode.as_deref(), Some("0x1000065"));
        assert_eq!(m.cmdline, "root=/dev/vda1 quiet");
        assert_eq!(m.smt.as_deref(), Some("notsupported"));
        assert_eq!(m.clocksource.as_deref(), Some("tsc"));
        assert_eq!(m.cpuidle_driver, None);
        assert_eq!(m.sched_knobs.keys().collect::<Vec<_>>(), vec!["sched_rr_timeslice_ms"]);
    }
}
