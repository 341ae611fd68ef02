//! The machine's limits on tasks and memory, and what is in use now, for the check that
//! refuses a cell which cannot fit before anything is spawned (`Spec::check_limits`).

use crate::env::{cap, has_cap, soft_limit};
use crate::Root;
use schedlab_plan::MachineLimits;

/// Reads kernel.pid_max, kernel.threads-max, the tasks running now (/proc/loadavg), this
/// process's RLIMIT_NPROC where the kernel applies it and its user's tasks now, and
/// MemAvailable.
pub fn read(root: &Root) -> MachineLimits {
    // SAFETY: no failure mode.
    let uid = unsafe { libc::getuid() };
    // copy_process ignores RLIMIT_NPROC for root and for CAP_SYS_ADMIN or CAP_SYS_RESOURCE.
    let exempt = uid == 0 || has_cap(root, cap::SYS_ADMIN) || has_cap(root, cap::SYS_RESOURCE);
    let nproc = soft_limit(libc::RLIMIT_NPROC);
    MachineLimits {
        pid_max: root.read_parse("/proc/sys/kernel/pid_max"),
        threads_max: root.read_parse("/proc/sys/kernel/threads-max"),
        tasks: tasks_now(root),
        nproc: (!exempt && nproc != libc::RLIM_INFINITY).then_some(nproc),
        user_tasks: Some(user_tasks(root, uid)),
        mem_available_kib: meminfo_kib(root, "MemAvailable:"),
    }
}

/// Tasks (processes and threads) on the machine now: the total after the slash in
/// /proc/loadavg's fourth field (nr_threads, what pid_max and threads-max bound).
pub fn tasks_now(root: &Root) -> Option<u64> {
    root.read("/proc/loadavg").ok()?.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok()
}

/// Tasks whose real uid is `uid` (what RLIMIT_NPROC counts), from /proc/PID/status.
pub fn user_tasks(root: &Root, uid: u32) -> u64 {
    let Ok(rd) = std::fs::read_dir(root.path("/proc")) else { return 0 };
    let mut n = 0;
    for e in rd.filter_map(Result::ok) {
        if !e.file_name().to_str().is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        // A process that exits meanwhile simply is not counted.
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else { continue };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        };
        if field("Uid:") == Some(uid as u64) {
            n += field("Threads:").unwrap_or(1);
        }
    }
    n
}

/// Raises this process's soft RLIMIT_NOFILE to `want` (at most to the hard limit) when it is
/// lower; returns the soft limit it had if it changed it. Children inherit the raised limit,
/// so they should put it back ([`set_nofile_soft`]) before they run anything of the user's.
pub fn raise_nofile(want: u64) -> std::io::Result<Option<u64>> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: rl is a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let had = rl.rlim_cur;
    let to = want.min(rl.rlim_max);
    if to <= had {
        return Ok(None);
    }
    set_nofile_soft(to)?;
    Ok(Some(had))
}

/// Sets this process's soft RLIMIT_NOFILE to `soft`, keeping the hard limit.
pub fn set_nofile_soft(soft: u64) -> std::io::Result<()> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: rl is a valid rlimit for both calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        rl.rlim_cur = soft.min(rl.rlim_max);
        if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A "Name:   123 kB" field of /proc/meminfo, KiB.
pub fn meminfo_kib(root: &Root, name: &str) -> Option<u64> {
    let text = root.read("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_file_limit_is_raised_only_when_lower_and_put_back() {
        let soft = crate::env::soft_limit(libc::RLIMIT_NOFILE);
        set_nofile_soft(soft - 1).unwrap();
        assert_eq!(crate::env::soft_limit(libc::RLIMIT_NOFILE), soft - 1);
        assert_eq!(raise_nofile(soft - 1).unwrap(), None, "already there");
        assert_eq!(raise_nofile(soft).unwrap(), Some(soft - 1), "raised, with what it was");
        assert_eq!(crate::env::soft_limit(libc::RLIMIT_NOFILE), soft);
    }

    #[test]
    fn reads_a_fake_machine() {
        let dir = std::env::temp_dir().join(format!("schedlab-limits-{}", std::process::id()));
        let put = |p: &str, text: &str| crate::fake::put(&dir, p, text);
        put("proc/sys/kernel/pid_max", "32768\n");
        put("proc/sys/kernel/threads-max", "192686\n");
        put("proc/loadavg", "0.52 0.58 0.59 3/412 12345\n");
        put(
            "proc/meminfo",
            "MemTotal:       24682416 kB\nMemFree:  100 kB\nMemAvailable:   23209916 kB\n",
        );
        put("proc/1/status", "Name:\tinit\nUid:\t0\t0\t0\t0\nThreads:\t1\n");
        put("proc/200/status", "Name:\tworker\nUid:\t1000\t1000\t1000\t1000\nThreads:\t5\n");
        put("proc/201/status", "Name:\tother\nUid:\t1000\t0\t0\t0\nThreads:\t2\n");
        put("proc/self/status", "Name:\tself\nCapEff:\t0000000000000000\n");
        let root = Root::new(&dir);
        let m = read(&root);
        assert_eq!((m.pid_max, m.threads_max, m.tasks), (Some(32_768), Some(192_686), Some(412)));
        assert_eq!(m.mem_available_kib, Some(23_209_916));
        assert_eq!(user_tasks(&root, 1000), 7, "threads count; the real uid decides");
        assert_eq!(user_tasks(&root, 0), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn this_machine_has_limits_and_this_process_runs() {
        let m = read(&Root::default());
        assert!(m.pid_max.unwrap() > 0 && m.threads_max.unwrap() > 0 && m.tasks.unwrap() > 0);
        // SAFETY: no failure mode.
        let uid = unsafe { libc::getuid() };
        assert!(user_tasks(&Root::default(), uid) >= 1, "this test's own process counts");
    }
}
