//! A look at the machine before a run: /proc/stat and every process's CPU time, read at two
//! instants ([`schedlab_model::MachineLook`]). The looking process and its descendants (a
//! run's workers, spawned while it looks) are left out of the others' time.

use crate::procfs::{exec_runtime_ns, Stat};
use crate::Root;
use schedlab_model::{Consumer, MachineLook};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// One process in a [`Snapshot`].
#[derive(Debug, Clone, Default, PartialEq)]
struct Process {
    comm: String,
    ppid: i32,
    /// User + system ticks so far, all its threads.
    ticks: u64,
    /// The looker and its descendants: their CPU time as precisely as /proc has it, ns (the
    /// ticks, or the main thread's schedstat where that is more: a worker that ran 2 ms
    /// shows 0 ticks); with the children it reaped.
    ours_ns: Option<u64>,
}

/// What /proc says at one instant: the system-wide counters, the run queue and each
/// process's CPU ticks so far, by pid and start time (a pid reused within the look is
/// another process), and who is looking.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    stat: Stat,
    procs_running: Option<u32>,
    processes: BTreeMap<(i32, u64), Process>,
    own: i32,
}

/// A tick (USER_HZ) in ns.
const TICK_NS: u64 = 10_000_000;

impl Snapshot {
    /// Reads /proc/stat and every /proc/PID/stat under `root`, as process `own` sees it;
    /// None without /proc/stat. Processes that vanish while it reads are left out.
    pub fn take(root: &Root, own: i32) -> Option<Snapshot> {
        let text = std::fs::read_to_string(root.path("/proc/stat")).ok()?;
        let mut processes = BTreeMap::new();
        let mut reaped = 0;
        for entry in std::fs::read_dir(root.path("/proc")).ok()?.filter_map(|e| e.ok()) {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            if let Some(p) = parse_process(&stat) {
                if pid == own {
                    reaped = p.children;
                }
                let process = Process { comm: p.comm, ppid: p.ppid, ticks: p.ticks, ours_ns: None };
                processes.insert((pid, p.start), process);
            }
        }
        let ours = descendants(&processes, own);
        for (&(pid, _), p) in processes.iter_mut().filter(|((pid, _), _)| ours.contains(pid)) {
            let ticks = p.ticks + if pid == own { reaped } else { 0 };
            let precise = exec_runtime_ns(root, pid).unwrap_or(0);
            p.ours_ns = Some((ticks * TICK_NS).max(precise));
        }
        Some(Snapshot {
            stat: Stat::parse(&text)?,
            procs_running: procs_running(&text),
            processes,
            own,
        })
    }

    /// What happened from `earlier` to this snapshot: the looker and its descendants counted
    /// apart, every other process that used CPU time a consumer.
    pub fn since(&self, earlier: &Snapshot) -> MachineLook {
        let mut own_ns = 0;
        let mut consumers = Vec::new();
        for (&(pid, start), p) in &self.processes {
            // A process that started during the look used all its time within it.
            let before = earlier.processes.get(&(pid, start));
            if let Some(ns) = p.ours_ns {
                own_ns += ns.saturating_sub(before.and_then(|b| b.ours_ns).unwrap_or(0));
                continue;
            }
            let used = p.ticks.saturating_sub(before.map_or(0, |b| b.ticks));
            if used > 0 {
                consumers.push(Consumer { pid, comm: p.comm.clone(), ticks: used });
            }
        }
        consumers.sort_by(|a, b| b.ticks.cmp(&a.ticks).then(a.pid.cmp(&b.pid)));
        MachineLook {
            stat: self.stat.since(&earlier.stat),
            // The task reading /proc/stat is running too.
            running: self.procs_running.map(|n| n.saturating_sub(1)),
            own_ticks: (own_ns + TICK_NS / 2) / TICK_NS,
            consumers,
        }
    }
}

/// The pids of `own` and every process below it, by the parents `processes` name.
fn descendants(processes: &BTreeMap<(i32, u64), Process>, own: i32) -> BTreeSet<i32> {
    let parent: BTreeMap<i32, i32> = processes.iter().map(|(&(pid, _), p)| (pid, p.ppid)).collect();
    let mut ours = BTreeSet::from([own]);
    for &pid in parent.keys() {
        // Up the parents until the looker, the top or a loop (a pid reused meanwhile).
        let (mut at, mut steps) = (pid, 0);
        while at > 1 && at != own && steps < parent.len() {
            at = parent.get(&at).copied().unwrap_or(0);
            steps += 1;
        }
        if at == own {
            ours.insert(pid);
        }
    }
    ours
}

/// A look begun: its first snapshot and when it was taken ([`start`]).
#[derive(Debug)]
pub struct Started {
    before: Snapshot,
    at: Instant,
}

/// Begins a look at the machine under `root` by this process: its first snapshot. None
/// without /proc/stat.
pub fn start(root: &Root) -> Option<Started> {
    let before = Snapshot::take(root, std::process::id() as i32)?;
    Some(Started { before, at: Instant::now() })
}

impl Started {
    /// Ends the look with its second snapshot, first waiting until `least` has passed since
    /// it began (a shorter look is too short to judge). None without /proc/stat.
    pub fn finish(self, root: &Root, least: Duration) -> Option<MachineLook> {
        std::thread::sleep(least.saturating_sub(self.at.elapsed()));
        Some(Snapshot::take(root, self.before.own)?.since(&self.before))
    }
}

/// Looks at the machine under `root` for `over`: two snapshots that far apart, this
/// process and its descendants left out of the consumers. None without /proc/stat.
pub fn look(root: &Root, over: Duration) -> Option<MachineLook> {
    start(root)?.finish(root, over)
}

/// The fields of /proc/PID/stat a look reads.
struct ProcStat {
    comm: String,
    ppid: i32,
    /// Start time, ticks since boot.
    start: u64,
    /// User + system ticks.
    ticks: u64,
    /// User + system ticks of the children it waited for.
    children: u64,
}

/// The command name, parent, start time and CPU ticks in the text of /proc/PID/stat.
fn parse_process(text: &str) -> Option<ProcStat> {
    // The name may hold spaces and parentheses: it runs from the first '(' to the last ')'.
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let comm = text.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // Fields from the state on (field 3 of proc(5)): ppid 4, utime 14, stime 15, cutime 16,
    // cstime 17, starttime 22.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(ProcStat {
        comm,
        ppid: fields.get(1)?.parse().ok()?,
        start: field(22)?,
        ticks: field(14)? + field(15)?,
        children: field(16)? + field(17)?,
    })
}

/// /proc/stat's count of tasks running or runnable now ("procs_running").
fn procs_running(stat: &str) -> Option<u32> {
    stat.lines().find_map(|l| l.strip_prefix("procs_running "))?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// One process of a fake tree: pid, parent, name, user and system ticks.
    type Proc<'a> = (i32, i32, &'a str, u64, u64);

    /// A /proc/PID/stat line of `comm` started at tick 500 with `utime` and `stime` ticks and
    /// `reaped` ticks of children it waited for.
    fn stat_line((pid, ppid, comm, utime, stime): Proc, reaped: u64) -> String {
        format!(
            "{pid} ({comm}) R {ppid} {pid} {pid} 0 -1 4194304 100 0 0 0 {utime} {stime} {reaped} 0 20 0 1 0 500 1000 100\n"
        )
    }

    fn write_tree(dir: &Path, stat: &str, procs: &[Proc]) {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::write(dir.join("proc/stat"), stat).unwrap();
        for &p in procs {
            write_process(dir, p, 0, None);
        }
    }

    fn write_process(dir: &Path, p: Proc, reaped: u64, schedstat_ns: Option<u64>) {
        let at = dir.join(format!("proc/{}", p.0));
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("stat"), stat_line(p, reaped)).unwrap();
        if let Some(ns) = schedstat_ns {
            std::fs::write(at.join("schedstat"), format!("{ns} 0 1\n")).unwrap();
        }
    }

    fn temp_root(name: &str) -> (std::path::PathBuf, Root) {
        let dir = std::env::temp_dir().join(format!("schedlab-{name}-{}", std::process::id()));
        let root = Root::new(&dir);
        (dir, root)
    }

    #[test]
    fn a_look_names_the_processes_that_used_the_cpus_and_counts_its_own_apart() {
        let (dir, root) = temp_root("look");
        let own = 900;
        write_tree(
            &dir,
            "cpu  1000 0 500 8000 0 0 0 0\nprocs_running 1\n",
            &[
                (1, 0, "systemd", 50, 50),
                (4711, 1, "sh", 300, 0),
                (4712, 1, "sh", 280, 10),
                (own, 1, "schedlab", 7, 3),
            ],
        );
        let before = Snapshot::take(&root, own).unwrap();
        // A second later on 2 CPUs: 196 of 200 ticks busy; a process with spaces and
        // parentheses in its name started meanwhile; pid 1 was idle.
        write_tree(
            &dir,
            "cpu  1190 0 506 8004 0 0 0 0\nprocs_running 3\n",
            &[
                (1, 0, "systemd", 50, 50),
                (4711, 1, "sh", 399, 0),
                (4712, 1, "sh", 375, 12),
                (own, 1, "schedlab", 8, 3),
                (5000, 1, "a (b) c", 2, 1),
            ],
        );
        let look = Snapshot::take(&root, own).unwrap().since(&before);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((look.stat.busy_ticks(), look.stat.cpu_ticks()), (196, 200));
        assert_eq!((look.running, look.own_ticks), (Some(2), 1));
        let named: Vec<(i32, &str, u64)> =
            look.consumers.iter().map(|c| (c.pid, c.comm.as_str(), c.ticks)).collect();
        assert_eq!(named, vec![(4711, "sh", 99), (4712, "sh", 97), (5000, "a (b) c", 3)]);
    }

    #[test]
    fn the_lookers_descendants_and_reaped_children_are_its_own_time_to_the_nanosecond() {
        // A run's workers are spawned while it looks: each used ~2 ms, 0 ticks in
        // /proc/PID/stat, so their time is schedstat's where that is more than the ticks.
        let (dir, root) = temp_root("look-ours");
        let own = 900;
        let cpu = "cpu  1000 0 500 8000 0 0 0 0\n";
        write_tree(&dir, cpu, &[(1, 0, "init", 5, 5), (own, 1, "schedlab", 7, 3)]);
        let before = Snapshot::take(&root, own).unwrap();
        write_tree(
            &dir,
            cpu,
            &[(1, 0, "init", 5, 5), (903, 1, "sh", 4, 0), (904, 903, "cc1", 2, 0)],
        );
        // Its own tick, and 2 ticks of a child it reaped (the preflight's probe, say).
        write_process(&dir, (own, 1, "schedlab", 8, 3), 2, None);
        // A worker of 2.5 ms and a grandchild of 3 ticks, 25 ms by its main thread.
        write_process(&dir, (901, own, "schedlab", 0, 0), 0, Some(2_500_000));
        write_process(&dir, (902, 901, "sh", 3, 0), 0, Some(25_000_000));
        let look = Snapshot::take(&root, own).unwrap().since(&before);
        std::fs::remove_dir_all(&dir).unwrap();
        // 30 + 2.5 + 30 ms: 6 ticks; the stranger 903 and its child are the others.
        assert_eq!(look.own_ticks, 6);
        let named: Vec<(i32, u64)> = look.consumers.iter().map(|c| (c.pid, c.ticks)).collect();
        assert_eq!(named, vec![(903, 4), (904, 2)]);
    }

    #[test]
    fn a_reused_pid_is_another_process_and_a_missing_proc_stat_is_no_look() {
        assert_eq!(Snapshot::take(&Root::new("/nonexistent/schedlab"), 1), None);
        let text = |start: u64| {
            stat_line((42, 1, "x", 10, 0), 0).replace(" 500 1000", &format!(" {start} 1000"))
        };
        let p = parse_process(&text(500)).unwrap();
        assert_eq!((p.comm.as_str(), p.ppid, p.start, p.ticks), ("x", 1, 500, 10));
        assert!(parse_process("42 (x) R 1").is_none(), "a cut line is refused");
        let process =
            |comm: &str, ticks| Process { comm: comm.into(), ticks, ..Default::default() };
        let before = Snapshot {
            processes: [((42, 500), process("x", 1000))].into(),
            own: 1,
            ..Default::default()
        };
        let after = Snapshot {
            processes: [((42, 600), process("y", 10))].into(),
            own: 1,
            ..Default::default()
        };
        let look = after.since(&before);
        assert_eq!(look.consumers, vec![Consumer { pid: 42, comm: "y".into(), ticks: 10 }]);
        assert_eq!(look.running, None, "no procs_running line");
    }

    #[test]
    fn a_look_at_this_machine_names_a_busy_stranger_and_counts_its_own_child_as_its_own() {
        // A stranger: a loop whose parent exits at once, so it is no descendant of ours.
        let out = std::process::Command::new("sh")
            .args(["-c", "sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        let stranger: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let mut child =
            std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let look = look(&Root::default(), Duration::from_millis(300));
        let _ = child.kill();
        let _ = child.wait();
        // SAFETY: kill(2) with a plain pid and signal number.
        unsafe { libc::kill(stranger, libc::SIGKILL) };
        let look = look.unwrap();
        let spinner = look.consumers.iter().find(|c| c.pid == stranger);
        assert!(spinner.is_some_and(|c| c.comm == "sh" && c.ticks > 0), "{look:?}");
        let ours = [std::process::id() as i32, child.id() as i32];
        assert!(look.consumers.iter().all(|c| !ours.contains(&c.pid)), "{look:?}");
        // The child spun for most of the 300 ms: 30 ticks, if a CPU was free.
        assert!(look.own_ticks >= 5, "{look:?}");
    }
}
