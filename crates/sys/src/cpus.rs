//! CPU lists ("0-1,3"), the online CPUs, and sched_setaffinity.

use crate::Root;
use std::io;

pub use schedlab_plan::cpulist::{format as format_list, parse as parse_list};

/// The online CPUs, from /sys/devices/system/cpu/online (falling back to 0..available).
pub fn online(root: &Root) -> Vec<u32> {
    root.read("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_list(&s).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as u32;
            (0..n).collect()
        })
}

/// Pins process `pid` to `cpus`.
pub fn set_affinity(pid: i32, cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within its fixed size (checked below).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c as usize >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} is beyond CPU_SETSIZE"),
                ));
            }
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs this process may run on (sched_getaffinity); empty if it cannot be read.
pub fn affinity_self() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data that sched_getaffinity fills; CPU_ISSET stays within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as u32).filter(|&c| libc::CPU_ISSET(c as usize, &set)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_cpus_come_from_sysfs() {
        let dir = tempdir("online");
        std::fs::create_dir_all(dir.join("sys/devices/system/cpu")).unwrap();
        std::fs::write(dir.join("sys/devices/system/cpu/online"), "0-3,6\n").unwrap();
        assert_eq!(online(&Root::new(&dir)), vec![0, 1, 2, 3, 6]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("schedlab-cpus-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }
}
