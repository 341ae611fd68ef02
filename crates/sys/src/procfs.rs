//! Readers for /proc: system-wide CPU counters and per-process resource usage.

use crate::Root;
use schedlab_model::StatDelta;

/// A snapshot of the counters in /proc/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// Aggregate "cpu" line: user, nice, system, idle, iowait, irq, softirq.
    pub cpu: [u64; 7],
    /// Context switches since boot.
    pub ctxt: u64,
    /// Interrupts since boot.
    pub intr: u64,
    /// Forks since boot.
    pub processes: u64,
    /// The "cpu" line's steal: time a hypervisor ran something else while this machine's
    /// vCPUs wanted to run (0 where the kernel does not report it).
    pub steal: u64,
}

impl Stat {
    /// Parses the text of /proc/stat.
    pub fn parse(text: &str) -> Option<Stat> {
        let mut s = Stat::default();
        let mut saw_cpu = false;
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            match it.next() {
                Some("cpu") => {
                    for slot in s.cpu.iter_mut() {
                        *slot = it.next()?.parse().ok()?;
                    }
                    s.steal = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                    saw_cpu = true;
                }
                Some("ctxt") => s.ctxt = it.next()?.parse().ok()?,
                Some("intr") => s.intr = it.next()?.parse().ok()?,
                Some("processes") => s.processes = it.next()?.parse().ok()?,
                _ => {}
            }
        }
        saw_cpu.then_some(s)
    }

    /// Reads /proc/stat under `root`.
    pub fn read(root: &Root) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(root.path("/proc/stat")).ok()?)
    }

    /// Counters accumulated from `earlier` to `self`.
    pub fn since(&self, earlier: &Stat) -> StatDelta {
        let d = |i: usize| self.cpu[i].saturating_sub(earlier.cpu[i]);
        StatDelta {
            user: d(0),
            nice: d(1),
            system: d(2),
            idle: d(3),
            iowait: d(4),
            irq: d(5),
            softirq: d(6),
            ctxt: self.ctxt.saturating_sub(earlier.ctxt),
            interrupts: self.intr.saturating_sub(earlier.intr),
            forks: self.processes.saturating_sub(earlier.processes),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// CPU time a process has used so far, ns (first field of /proc/<pid>/schedstat).
pub fn exec_runtime_ns(root: &Root, pid: i32) -> Option<u64> {
    root.read(&format!("/proc/{pid}/schedstat")).ok()?.split_whitespace().next()?.parse().ok()
}

/// The scheduler's own accounting of one task, as /proc/PID/schedstat and /proc/PID/sched
/// give it; both stay readable while the task is a zombie, so the engine reads them between
/// an exit and its wait4. A field is None where the kernel lacks its file or line. They count
/// the task PID itself (a process's main thread), not its other threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskSched {
    /// Time on a CPU, ns (schedstat's first field, else `se.sum_exec_runtime`).
    pub oncpu_ns: Option<u64>,
    /// Time runnable but waiting for a CPU, ns (schedstat's `run_delay`; CONFIG_SCHED_INFO).
    pub run_delay_ns: Option<u64>,
    /// Times it was given a CPU (schedstat's `pcount`).
    pub timeslices: Option<u64>,
    /// Moves from one CPU to another (`se.nr_migrations`).
    pub migrations: Option<u64>,
    /// Switch-outs because it blocked (`nr_voluntary_switches`).
    pub voluntary: Option<u64>,
    /// Switch-outs while still runnable (`nr_involuntary_switches`).
    pub involuntary: Option<u64>,
}

impl TaskSched {
    /// Parses the texts of /proc/PID/schedstat and /proc/PID/sched (either may be missing).
    pub fn parse(schedstat: Option<&str>, sched: Option<&str>) -> TaskSched {
        let mut t = TaskSched::default();
        if let Some(text) = schedstat {
            let f: Vec<Option<u64>> = text.split_whitespace().map(|v| v.parse().ok()).collect();
            if f.len() >= 3 {
                (t.oncpu_ns, t.run_delay_ns, t.timeslices) = (f[0], f[1], f[2]);
            }
        }
        for line in sched.unwrap_or_default().lines() {
            let Some((key, value)) = line.split_once(':') else { continue };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "se.nr_migrations" => t.migrations = value.parse().ok(),
                "nr_voluntary_switches" => t.voluntary = value.parse().ok(),
                "nr_involuntary_switches" => t.involuntary = value.parse().ok(),
                "se.sum_exec_runtime" if t.oncpu_ns.is_none() => t.oncpu_ns = ms_to_ns(value),
                _ => {}
            }
        }
        t
    }

    /// Reads task `pid`'s two files under `root`.
    pub fn read(root: &Root, pid: i32) -> TaskSched {
        let schedstat = root.read(&format!("/proc/{pid}/schedstat")).ok();
        let sched = root.read(&format!("/proc/{pid}/sched")).ok();
        TaskSched::parse(schedstat.as_deref(), sched.as_deref())
    }
}

/// Which of the files [`TaskSched`] reads this kernel has, for `schedlab env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountingFacts {
    /// /proc/PID/schedstat exists (on-CPU time, run_delay, timeslices).
    pub schedstat: bool,
    /// /proc/PID/sched exists (migrations, the scheduler's switch counts).
    pub sched: bool,
    /// CONFIG_SCHED_INFO, which fills run_delay and timeslices (without it schedstat reads
    /// "0 0 0"): seen in this process's own timeslices (it has run, so at least 1 when on),
    /// else in the boot config; None where neither says.
    pub sched_info: Option<bool>,
}

/// Looks at this process's own files and the boot config of the running kernel.
pub fn accounting_facts(root: &Root) -> AccountingFacts {
    let own = root.read("/proc/self/schedstat").ok();
    let release = root.read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config = || root.read(&format!("/boot/config-{release}")).ok();
    AccountingFacts {
        schedstat: own.is_some(),
        sched: root.path("/proc/self/sched").exists(),
        sched_info: TaskSched::parse(own.as_deref(), None)
            .timeslices
            .map(|n| n > 0)
            .or_else(|| config().map(|c| c.lines().any(|l| l == "CONFIG_SCHED_INFO=y"))),
    }
}

/// `/proc/PID/sched`'s milliseconds with six decimals ("301.626175") as ns.
fn ms_to_ns(text: &str) -> Option<u64> {
    let (ms, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac = format!("{:0<6}", frac.get(..6.min(frac.len()))?);
    Some(ms.parse::<u64>().ok()? * 1_000_000 + frac.parse::<u64>().ok()?)
}

/// A process's start time (field 22 of /proc/PID/stat, clock ticks since boot) and whether it
/// is running (not a zombie): with the pid, it names one process for the whole uptime, where
/// the pid alone may be reused.
pub fn process_start(pid: i32) -> Option<(u64, bool)> {
    if pid <= 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((start, !matches!(*state, "Z" | "X" | "x")))
}

/// Seconds in a timeval.
pub fn tv_secs(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6
}

/// getrusage(RUSAGE_SELF): this process's own user/sys seconds and peak RSS (KiB).
pub fn self_usage() -> (f64, f64, i64) {
    let ru = rusage_self();
    (tv_secs(ru.ru_utime), tv_secs(ru.ru_stime), ru.ru_maxrss)
}

/// getrusage(RUSAGE_SELF), whole.
pub fn rusage_self() -> libc::rusage {
    // SAFETY: rusage is plain data and getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru
}

/// CLOCK_MONOTONIC in nanoseconds: the clock workers and engine share.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Dirty and under-writeback page cache, in KiB, from /proc/meminfo.
pub fn unwritten_kib(root: &Root) -> Option<u64> {
    let text = std::fs::read_to_string(root.path("/proc/meminfo")).ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some(field("Dirty:")? + field("Writeback:")?)
}

/// Starts writeback of everything dirty and waits, up to `limit`, until less than 8 MiB is
/// left unwritten. Timing measurements run after it: on a virtual machine, a burst of
/// writeback left by earlier work can hold a vCPU off for tens of milliseconds. Returns the
/// KiB still unwritten.
pub fn settle_writeback(limit: std::time::Duration) -> u64 {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let root = Root::default();
    let until = std::time::Instant::now() + limit;
    loop {
        let left = unwritten_kib(&root).unwrap_or(0);
        if left < 8 * 1024 || std::time::Instant::now() >= until {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The 1-minute load average (/proc/loadavg's first field).
pub fn load_average(root: &Root) -> Option<f64> {
    root.read("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The microseconds during which some runnable task waited for a CPU since boot
/// (/proc/pressure/cpu's "some" total); None where the kernel has no PSI.
pub fn cpu_pressure_us(root: &Root) -> Option<u64> {
    let text = root.read("/proc/pressure/cpu").ok()?;
    let some = text.lines().find_map(|l| l.strip_prefix("some "))?;
    some.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse().ok()
}

/// One line on where task `pid` is, for a message about a process that did not get on: its
/// state letter, scheduling policy, CPU and CPU time, time waiting to run, times it ran and
/// the kernel function it sleeps in, e.g. `pid 812 R policy 7 cpu 1 oncpu 3 ms waited 120004
/// ms ran 2 wchan 0`. Only what the kernel has is said; None if the task is gone.
pub fn task_whereabouts(root: &Root, pid: i32) -> Option<String> {
    let stat = root.read(&format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces and parentheses.
    let rest = stat.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
    // stat(5): state is field 3, processor 39, policy 41 (rest[0] is field 3).
    let mut out = format!("pid {pid} {}", rest.first()?);
    if let Some(policy) = rest.get(38) {
        out.push_str(&format!(" policy {policy}"));
    }
    if let Some(cpu) = rest.get(36) {
        out.push_str(&format!(" cpu {cpu}"));
    }
    let t = TaskSched::read(root, pid);
    let ms = |ns: Option<u64>| ns.map(|v| (v / 1_000_000).to_string());
    for (name, v) in [
        ("oncpu", ms(t.oncpu_ns).map(|v| format!("{v} ms"))),
        ("waited", ms(t.run_delay_ns).map(|v| format!("{v} ms"))),
        ("ran", t.timeslices.map(|v| v.to_string())),
    ] {
        if let Some(v) = v {
            out.push_str(&format!(" {name} {v}"));
        }
    }
    if let Ok(w) = root.read(&format!("/proc/{pid}/wchan")) {
        out.push_str(&format!(" wchan {}", w.trim()));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_load_average_and_the_cpu_pressure() {
        let dir = std::env::temp_dir().join(format!("schedlab-pressure-{}", std::process::id()));
        let root = Root::new(&dir);
        assert_eq!((load_average(&root), cpu_pressure_us(&root)), (None, None), "no files");
        std::fs::create_dir_all(dir.join("proc/pressure")).unwrap();
        std::fs::write(dir.join("proc/loadavg"), "3.93 2.10 1.00 5/412 123\n").unwrap();
        std::fs::write(
            dir.join("proc/pressure/cpu"),
            "some avg10=77.21 avg60=31.84 avg300=17.84 total=5506681614\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        )
        .unwrap();
        assert_eq!(load_average(&root), Some(3.93));
        assert_eq!(cpu_pressure_us(&root), Some(5_506_681_614));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    const SAMPLE: &str = "cpu  100 5 50 1000 20 3 4 0 0 0\ncpu0 50 2 25 500 10 1 2 0 0 0\nintr 12345 1 2 3\nctxt 999\nbtime 1\nprocesses 77\nprocs_running 1\n";

    #[test]
    fn parses_the_aggregate_line_and_counters() {
        let s = Stat::parse(SAMPLE).unwrap();
        assert_eq!(s.cpu, [100, 5, 50, 1000, 20, 3, 4]);
        assert_eq!(s.steal, 0);
        let stolen = Stat::parse("cpu  100 5 50 1000 20 3 4 77 0 0\n").unwrap();
        assert_eq!(stolen.steal, 77);
        assert_eq!(
            Stat::parse("cpu  100 5 50 1000 20 3 4\n").unwrap().steal,
            0,
            "kernels without steal"
        );
        assert_eq!((s.ctxt, s.intr, s.processes), (999, 12345, 77));
        assert_eq!(stolen.since(&s).steal, 77, "a cell's delta carries the steal");
    }

    #[test]
    fn delta_subtracts_and_never_underflows() {
        let a = Stat::parse(SAMPLE).unwrap();
        let mut b = a;
        b.cpu[0] += 7;
        b.ctxt += 10;
        b.processes -= 1; // a counter going backwards must not wrap
        let d = b.since(&a);
        assert_eq!((d.user, d.ctxt, d.forks), (7, 10, 0));
    }

    #[test]
    fn unwritten_page_cache_is_dirty_plus_writeback() {
        let dir = std::env::temp_dir().join(format!("schedlab-sys-meminfo-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(dir.join("proc/meminfo"), "MemTotal:       24000000 kB\nDirty:              1200 kB\nWriteback:            34 kB\n")
            .unwrap();
        assert_eq!(unwritten_kib(&Root::new(&dir)), Some(1234));
        std::fs::write(dir.join("proc/meminfo"), "MemTotal:       24000000 kB\n").unwrap();
        assert_eq!(unwritten_kib(&Root::new(&dir)), None);
        std::fs::remove_dir_all(dir).unwrap();
        assert!(unwritten_kib(&Root::default()).is_some(), "this kernel reports both");
    }

    #[test]
    fn reads_through_a_fake_root() {
        let dir = std::env::temp_dir().join(format!("schedlab-sys-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(dir.join("proc/stat"), SAMPLE).unwrap();
        let s = Stat::read(&Root::new(&dir)).unwrap();
        assert_eq!(s.ctxt, 999);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rejects_text_without_a_cpu_line() {
        assert!(Stat::parse("ctxt 5\n").is_none());
    }

    /// /proc/PID/sched of a zombie that ran 0.3 s of pi on Linux 6.18 (CONFIG_SCHEDSTATS off),
    /// cut to the lines around those it reads.
    const SCHED_TEXT: &str = "cat (12644, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :      14275177.269539
se.vruntime                                  :          3734.930368
se.sum_exec_runtime                          :           301.626175
se.nr_migrations                             :                    4
nr_switches                                  :                    3
nr_voluntary_switches                        :                    1
nr_involuntary_switches                      :                    2
se.load.weight                               :              1048576
policy                                       :                    0
";

    #[test]
    fn task_sched_reads_schedstat_and_the_sched_counters() {
        let t = TaskSched::parse(Some("301626175 28671 3"), Some(SCHED_TEXT));
        assert_eq!(
            t,
            TaskSched {
                oncpu_ns: Some(301_626_175),
                run_delay_ns: Some(28_671),
                timeslices: Some(3),
                migrations: Some(4),
                voluntary: Some(1),
                involuntary: Some(2),
            }
        );
    }

    #[test]
    fn task_sched_without_schedstat_takes_the_runtime_from_sched() {
        let t = TaskSched::parse(None, Some(SCHED_TEXT));
        assert_eq!((t.oncpu_ns, t.run_delay_ns, t.timeslices), (Some(301_626_175), None, None));
        assert_eq!(ms_to_ns("12.5"), Some(12_500_000));
        assert_eq!(ms_to_ns("7"), Some(7_000_000));
        assert_eq!(TaskSched::parse(None, None), TaskSched::default(), "no files: all empty");
        assert_eq!(TaskSched::parse(Some("1 2"), None).oncpu_ns, None, "a short line is refused");
    }

    #[test]
    fn accounting_facts_see_the_files_and_the_config() {
        let dir = std::env::temp_dir().join(format!("schedlab-acct-{}", std::process::id()));
        let root = Root::new(&dir);
        let none = AccountingFacts { schedstat: false, sched: false, sched_info: None };
        assert_eq!(accounting_facts(&root), none);
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(dir.join("boot")).unwrap();
        std::fs::write(dir.join("proc/sys/kernel/osrelease"), "6.18.0\n").unwrap();
        std::fs::write(dir.join("boot/config-6.18.0"), "CONFIG_SCHED_INFO=y\n").unwrap();
        assert_eq!(accounting_facts(&root).sched_info, Some(true), "from the boot config");
        std::fs::write(dir.join("proc/self/schedstat"), "0 0 0\n").unwrap();
        let f = accounting_facts(&root);
        assert_eq!((f.schedstat, f.sched, f.sched_info), (true, false, Some(false)), "0 0 0: off");
        std::fs::write(dir.join("proc/self/schedstat"), "5 7 1\n").unwrap();
        assert_eq!(accounting_facts(&root).sched_info, Some(true));
        assert_eq!(accounting_facts(&Root::default()).sched_info, Some(true), "this kernel");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn task_sched_reads_a_zombie_before_it_is_reaped() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let until = monotonic_ns() + 10_000_000_000;
        while process_start(pid).is_some_and(|(_, running)| running) && monotonic_ns() < until {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let t = TaskSched::read(&Root::default(), pid);
        child.wait().unwrap();
        assert!(t.oncpu_ns.is_some_and(|ns| ns > 0), "{t:?}");
        assert!(t.timeslices.is_some_and(|n| n > 0) && t.voluntary.is_some(), "{t:?}");
    }

    #[test]
    fn whereabouts_of_this_process_name_its_state_and_policy() {
        // SAFETY: gettid has no arguments and cannot fail.
        let me = unsafe { libc::gettid() };
        let w = task_whereabouts(&Root::default(), me).unwrap();
        // This thread is running as it reads: state R, SCHED_OTHER (policy 0).
        assert!(w.starts_with(&format!("pid {me} R policy 0 cpu ")), "{w}");
        assert!(task_whereabouts(&Root::default(), i32::MAX).is_none());
    }
}
