//! Measurements on this machine that give the simulator's model its rates: the CPU cost
//! of one unit of the workers' own work (a pi iteration, a hash) and of a synchronous write.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// CPU time of the calling thread, ns (unaffected by other load on the machine).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Grows the amount of work until one run takes ~50 ms of CPU; returns CPU ns per unit.
fn per_unit(mut work: impl FnMut(u64)) -> f64 {
    const TARGET_NS: u64 = 50_000_000;
    let mut n = 1u64 << 14;
    loop {
        let t0 = thread_cpu_ns();
        work(n);
        let dt = thread_cpu_ns().saturating_sub(t0).max(1);
        if dt >= TARGET_NS * 9 / 10 || n >= 1 << 40 {
            return dt as f64 / n as f64;
        }
        n = (n as f64 * (TARGET_NS as f64 / dt as f64).clamp(2.0, 1000.0)) as u64;
    }
}

/// CPU ns per pi iteration, with the workers' own pi code.
pub fn pi_ns_per_iteration() -> f64 {
    per_unit(|n| {
        std::hint::black_box(crate::pi(n, 1, 0, &mut crate::NoProbe));
    })
}

/// CPU ns per hash of the hash workload.
pub fn ns_per_hash() -> f64 {
    let mut buf = [0x5au8; crate::HASH_BUFFER];
    per_unit(|n| {
        std::hint::black_box(crate::hash(n, &mut buf, &mut crate::NoProbe));
    })
}

/// (CPU ns, device ns) of one O_SYNC 1 KiB write: 40 timed writes after 4 warm-ups in a
/// fresh directory under `parent`; the device time is the median of wall - CPU.
pub fn sync_write(parent: &Path) -> std::io::Result<(u64, u64)> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = parent.join(format!("schedlab-calibrate-{}-{stamp}", std::process::id()));
    std::fs::create_dir(&dir)?;
    let file = dir.join("sync-writes");
    let outcome = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_SYNC)
            .open(&file)?;
        let block = [0xa5u8; 1024];
        let (mut cpu, mut device) = (Vec::new(), Vec::new());
        for i in 0..44 {
            let (w0, c0) = (std::time::Instant::now(), thread_cpu_ns());
            f.write_all(&block)?;
            let (wall, c) = (w0.elapsed().as_nanos() as u64, thread_cpu_ns().saturating_sub(c0));
            if i >= 4 {
                cpu.push(c);
                device.push(wall.saturating_sub(c));
            }
        }
        device.sort_unstable();
        Ok((cpu.iter().sum::<u64>() / cpu.len() as u64, device[device.len() / 2]))
    })();
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir(&dir);
    outcome
}

/// Nanoseconds per pi iteration on this machine, from a short wall-clock run (`check`'s
/// estimate).
pub fn pi_ns_quick() -> f64 {
    let n = 5_000_000;
    let t = std::time::Instant::now();
    std::hint::black_box(crate::pi(n, 1, 0, &mut crate::NoProbe));
    t.elapsed().as_nanos() as f64 / n as f64
}

/// Nanoseconds per hash round (4 KiB CityHash128) on this machine, from a short wall-clock
/// run (`check`'s estimate).
pub fn hash_ns_quick() -> f64 {
    let n = 5_000;
    let mut buf = Box::new([7u8; crate::HASH_BUFFER]);
    let t = std::time::Instant::now();
    std::hint::black_box(crate::hash(n, &mut buf, &mut crate::NoProbe));
    t.elapsed().as_nanos() as f64 / n as f64
}
