//! A look at the machine before a run: /proc/stat and every process's CPU time, read twice
//! about a second apart ([`schedlab_model::MachineLook`]).

use crate::procfs::Stat;
use crate::Root;
use schedlab_model::{Consumer, MachineLook};
use std::collections::BTreeMap;
use std::time::Duration;

/// What /proc says at one instant: the system-wide counters, the run queue and each
/// process's CPU ticks so far, by pid and start time (a pid reused within the look is
/// another process).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    stat: Stat,
    procs_running: Option<u32>,
    processes: BTreeMap<(i32, u64), (String, u64)>,
}

impl Snapshot {
    /// Reads /proc/stat and every /proc/PID/stat under `root`; None without /proc/stat.
    /// Processes that vanish while it reads are left out.
    pub fn take(root: &Root) -> Option<Snapshot> {
        let text = std::fs::read_to_string(root.path("/proc/stat")).ok()?;
        let mut processes = BTreeMap::new();
        for entry in std::fs::read_dir(root.path("/proc")).ok()?.filter_map(|e| e.ok()) {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            if let Some((comm, start, ticks)) = parse_process(&stat) {
                processes.insert((pid, start), (comm, ticks));
            }
        }
        Some(Snapshot { stat: Stat::parse(&text)?, procs_running: procs_running(&text), processes })
    }

    /// What happened from `earlier` to this snapshot, the process `own` (the one looking)
    /// left out of the consumers and counted apart.
    pub fn since(&self, earlier: &Snapshot, own: i32) -> MachineLook {
        let mut own_ticks = 0;
        let mut consumers = Vec::new();
        for (&(pid, start), (comm, ticks)) in &self.processes {
            // A process that started during the look used all its time within it.
            let before = earlier.processes.get(&(pid, start)).map_or(0, |p| p.1);
            let used = ticks.saturating_sub(before);
            if pid == own {
                own_ticks += used;
            } else if used > 0 {
                consumers.push(Consumer { pid, comm: comm.clone(), ticks: used });
            }
        }
        consumers.sort_by(|a, b| b.ticks.cmp(&a.ticks).then(a.pid.cmp(&b.pid)));
        MachineLook {
            stat: self.stat.since(&earlier.stat),
            // The task reading /proc/stat is running too.
            running: self.procs_running.map(|n| n.saturating_sub(1)),
            own_ticks,
            consumers,
        }
    }
}

/// Looks at the machine under `root` for `over`: two snapshots that far apart, this
/// process left out of the consumers. None without /proc/stat.
pub fn look(root: &Root, over: Duration) -> Option<MachineLook> {
    let before = Snapshot::take(root)?;
    std::thread::sleep(over);
    Some(Snapshot::take(root)?.since(&before, std::process::id() as i32))
}

/// The command name, start time (ticks since boot) and user + system ticks in the text of
/// /proc/PID/stat.
fn parse_process(text: &str) -> Option<(String, u64, u64)> {
    // The name may hold spaces and parentheses: it runs from the first '(' to the last ')'.
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let comm = text.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // Fields from the state on (field 3 of proc(5)): utime 14, stime 15, starttime 22.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some((comm, field(22)?, field(14)? + field(15)?))
}

/// /proc/stat's count of tasks running or runnable now ("procs_running").
fn procs_running(stat: &str) -> Option<u32> {
    stat.lines().find_map(|l| l.strip_prefix("procs_running "))?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A /proc/PID/stat line of `comm` started at tick 500 with `utime` and `stime` ticks.
    fn stat_line(pid: i32, comm: &str, utime: u64, stime: u64) -> String {
        format!(
            "{pid} ({comm}) R 1 {pid} {pid} 0 -1 4194304 100 0 0 0 {utime} {stime} 0 0 20 0 1 0 500 1000 100\n"
        )
    }

    fn write_tree(dir: &Path, stat: &str, procs: &[(i32, &str, u64, u64)]) {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::write(dir.join("proc/stat"), stat).unwrap();
        for &(pid, comm, utime, stime) in procs {
            std::fs::create_dir_all(dir.join(format!("proc/{pid}"))).unwrap();
            std::fs::write(
                dir.join(format!("proc/{pid}/stat")),
                stat_line(pid, comm, utime, stime),
            )
            .unwrap();
        }
    }

    #[test]
    fn a_look_names_the_processes_that_used_the_cpus_and_counts_its_own_apart() {
        let dir = std::env::temp_dir().join(format!("schedlab-look-{}", std::process::id()));
        let root = Root::new(&dir);
        let own = 900;
        write_tree(
            &dir,
            "cpu  1000 0 500 8000 0 0 0 0\nprocs_running 1\n",
            &[
                (1, "systemd", 50, 50),
                (4711, "sh", 300, 0),
                (4712, "sh", 280, 10),
                (own, "schedlab", 7, 3),
            ],
        );
        let before = Snapshot::take(&root).unwrap();
        // A second later on 2 CPUs: 196 of 200 ticks busy; a process with spaces and
        // parentheses in its name started meanwhile; pid 1 was idle.
        write_tree(
            &dir,
            "cpu  1190 0 506 8004 0 0 0 0\nprocs_running 3\n",
            &[
                (1, "systemd", 50, 50),
                (4711, "sh", 399, 0),
                (4712, "sh", 375, 12),
                (own, "schedlab", 8, 3),
                (5000, "a (b) c", 2, 1),
            ],
        );
        let look = Snapshot::take(&root).unwrap().since(&before, own);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((look.stat.busy_ticks(), look.stat.cpu_ticks()), (196, 200));
        assert_eq!((look.running, look.own_ticks), (Some(2), 1));
        let named: Vec<(i32, &str, u64)> =
            look.consumers.iter().map(|c| (c.pid, c.comm.as_str(), c.ticks)).collect();
        assert_eq!(named, vec![(4711, "sh", 99), (4712, "sh", 97), (5000, "a (b) c", 3)]);
    }

    #[test]
    fn a_reused_pid_is_another_process_and_a_missing_proc_stat_is_no_look() {
        assert_eq!(Snapshot::take(&Root::new("/nonexistent/schedlab")), None);
        let text =
            |start: u64| stat_line(42, "x", 10, 0).replace(" 500 1000", &format!(" {start} 1000"));
        assert_eq!(parse_process(&text(500)), Some(("x".into(), 500, 10)));
        assert_eq!(parse_process("42 (x) R 1"), None, "a cut line is refused");
        let before = Snapshot {
            processes: [((42, 500), ("x".to_string(), 1000))].into(),
            ..Default::default()
        };
        let after = Snapshot {
            processes: [((42, 600), ("y".to_string(), 10))].into(),
            ..Default::default()
        };
        let look = after.since(&before, 1);
        assert_eq!(look.consumers, vec![Consumer { pid: 42, comm: "y".into(), ticks: 10 }]);
        assert_eq!(look.running, None, "no procs_running line");
    }

    #[test]
    fn a_look_at_this_machine_sees_a_busy_child_by_name() {
        let mut child =
            std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let look = look(&Root::default(), Duration::from_millis(300));
        let _ = child.kill();
        let _ = child.wait();
        let look = look.unwrap();
        let spinner = look.consumers.iter().find(|c| c.pid == child.id() as i32);
        assert!(spinner.is_some_and(|c| c.comm == "sh" && c.ticks > 0), "{look:?}");
        assert!(look.consumers.iter().all(|c| c.pid != std::process::id() as i32));
    }
}
