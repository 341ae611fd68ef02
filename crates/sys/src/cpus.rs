//! CPU lists ("0-1,3"), the online CPUs, and sched_setaffinity.

use crate::Root;
use std::io;

/// Parses a kernel-style CPU list such as `0-1,3` (ascending, without duplicates).
pub fn parse_list(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: u32 = a.parse().map_err(|_| format!("\"{part}\" is not a CPU number or range"))?;
        let b: u32 = b.parse().map_err(|_| format!("\"{part}\" is not a CPU number or range"))?;
        if b < a {
            return Err(format!("range \"{part}\" runs backwards"));
        }
        if b >= 4096 {
            return Err(format!("CPU {b} is beyond 4095"));
        }
        out.extend(a..=b);
    }
    if out.is_empty() {
        return Err("empty CPU list".into());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats CPUs as a kernel-style list (`0-1,3`).
pub fn format_list(cpus: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// The online CPUs, from /sys/devices/system/cpu/online (falling back to 0..available).
pub fn online(root: &Root) -> Vec<u32> {
    root.read("/sys/devices/system/cpu/online").ok().and_then(|s| parse_list(&s).ok()).unwrap_or_else(|| {
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
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {c} is beyond CPU_SETSIZE")));
            }
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_format_round_trip() {
        assert_eq!(parse_list("0-1,3").unwrap(), vec![0, 1, 3]);
        assert_eq!(parse_list(" 3, 0-1 ,1").unwrap(), vec![0, 1, 3]);
        assert_eq!(format_list(&[0, 1, 3, 4, 5, 7]), "0-1,3-5,7");
        assert!(parse_list("2-1").is_err());
        assert!(parse_list("a").is_err());
        assert!(parse_list("").is_err());
    }

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
