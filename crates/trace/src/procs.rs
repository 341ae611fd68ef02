//! What /proc says about the tasks a trace names: kernel thread or not, and a process's
//! threads. Asked once per task, after the capture.

use crate::decode::{comm_str, Comm};
use crate::figures::Who;
use schedlab_sys::Root;

/// The task flag of kernel threads (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// A kernel thread (PF_KTHREAD in /proc/PID/stat's flags) or another task. When the pid is
/// gone, or now names a task with another comm (reused), the comm decides.
pub fn classify(root: &Root, pid: i32, comm: &Comm) -> Who {
    if pid == 0 {
        return Who::Kernel;
    }
    let stat = root.read(&format!("/proc/{pid}/stat")).ok();
    let flags = stat.as_deref().and_then(|s| {
        let (name, rest) = (s.get(s.find('(')? + 1..s.rfind(')')?)?, &s[s.rfind(')')? + 1..]);
        // /proc adds a kworker's current work to its name ("kworker/1:2-events").
        name.starts_with(comm_str(comm).as_ref()).then_some(())?;
        // After the comm: state ppid pgrp session tty_nr tpgid flags.
        rest.split_whitespace().nth(6)?.parse::<u64>().ok()
    });
    match flags {
        Some(f) if f & PF_KTHREAD != 0 => Who::Kernel,
        Some(_) => Who::Other,
        None if kernel_comm(&comm_str(comm)) => Who::Kernel,
        None => Who::Other,
    }
}

/// Names kernel threads take (kthreadd's children name themselves so), for tasks gone
/// before they could be looked up.
fn kernel_comm(name: &str) -> bool {
    const PREFIXES: [&str; 20] = [
        "kworker/",
        "ksoftirqd/",
        "migration/",
        "rcu_",
        "rcuog/",
        "rcuop/",
        "irq/",
        "cpuhp/",
        "idle_inject/",
        "watchdog/",
        "kcompactd",
        "kswapd",
        "khugepaged",
        "jbd2/",
        "kblockd",
        "writeback",
        "kthreadd",
        "swapper/",
        "kauditd",
        "oom_reaper",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A process's threads now (/proc/PID/task), ascending; empty if it is gone.
pub fn threads(root: &Root, pid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir(root.path(&format!("/proc/{pid}/task"))) else {
        return Vec::new();
    };
    let mut v: Vec<i32> =
        rd.filter_map(Result::ok).filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(name: &str) -> Comm {
        let mut c = [0u8; 16];
        c[..name.len()].copy_from_slice(name.as_bytes());
        c
    }

    fn fake(stats: &[(i32, &str)]) -> (std::path::PathBuf, Root) {
        let d = std::env::temp_dir().join(format!(
            "schedlab-procs-{}-{}",
            std::process::id(),
            stats.len()
        ));
        let _ = std::fs::remove_dir_all(&d);
        for (pid, text) in stats {
            std::fs::create_dir_all(d.join(format!("proc/{pid}/task/{pid}"))).unwrap();
            std::fs::write(d.join(format!("proc/{pid}/stat")), text).unwrap();
        }
        (d.clone(), Root::new(d))
    }

    #[test]
    fn pf_kthread_decides_while_the_task_lives_and_the_comm_after() {
        let (d, root) = fake(&[
            (44, "44 (kworker/1:2-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 0"),
            (45, "45 (my (odd) name) S 1 45 45 0 -1 4194560 0 0 0 0 0 0"),
            (46, "46 (bash) S 1 46 46 0 -1 4194560 0 0 0 0 0 0"),
        ]);
        assert_eq!(classify(&root, 44, &comm("kworker/1:2")), Who::Kernel);
        assert_eq!(classify(&root, 45, &comm("my (odd) name")), Who::Other);
        assert_eq!(classify(&root, 0, &comm("swapper/0")), Who::Kernel);
        // Gone: by name.
        assert_eq!(classify(&root, 99, &comm("ksoftirqd/0")), Who::Kernel);
        assert_eq!(classify(&root, 98, &comm("stress")), Who::Other);
        // Reused by another task: the name the trace saw decides.
        assert_eq!(classify(&root, 46, &comm("kworker/0:0")), Who::Kernel);
        assert_eq!(threads(&root, 44), [44]);
        assert!(threads(&root, 99).is_empty());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn this_machines_kthreadd_is_a_kernel_thread() {
        let root = Root::default();
        let Some(name) = root.read("/proc/2/comm").ok() else { return };
        assert_eq!(classify(&root, 2, &comm(&name)), Who::Kernel, "pid 2 ({name})");
        assert_eq!(
            classify(
                &root,
                std::process::id() as i32,
                &comm(&root.read("/proc/self/comm").unwrap())
            ),
            Who::Other
        );
    }
}
