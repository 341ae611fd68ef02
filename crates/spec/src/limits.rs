//! Checks a plan's cells against the machine's limits on tasks and memory before anything
//! is spawned: the facts are read by sys (`schedlab_sys::limits::read`), the judgement is
//! here so the error points at the `processes` it is about.
//!
//! Every process and every thread is a task: it takes a pid (kernel.pid_max), counts against
//! kernel.threads-max and against its user's RLIMIT_NPROC. A cell needs its workers' tasks
//! (a par_write worker with 4 threads is 5), its dispatchers and the engine's own threads, on
//! top of what already runs; schedlab leaves the smaller of 5% and 1,000 of each limit to the
//! rest of the system. Memory is an estimate of each worker's private memory (see the
//! constants) against MemAvailable, of which 10% is left.

use crate::SpecError;
use schedlab_plan::{Cell, CellNeeds, MachineLimits, Plan, ENGINE_THREADS, WORKER_KIB};

/// The part of a task limit schedlab leaves to the rest of the system: 5%, at most 1,000.
pub fn reserve(limit: u64) -> u64 {
    (limit / 20).min(1000)
}

/// 12345678 -> "12,345,678".
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn check(
    plan: &Plan,
    src: &str,
    m: &MachineLimits,
    fallback: &std::ops::Range<usize>,
) -> Result<(), SpecError> {
    let needs: Vec<(&Cell, CellNeeds)> = plan.cells.iter().map(|c| (c, c.needs())).collect();
    let Some((big, n)) = needs.iter().max_by_key(|(c, n)| (n.tasks, std::cmp::Reverse(c.index)))
    else {
        return Ok(());
    };
    let refuse = |cell: &Cell, msg: String| {
        // Point at the `processes` value of the cell's largest group, where the spec has one.
        let g = cell.groups.iter().max_by_key(|g| g.processes).expect("a cell has a group");
        let at = crate::locate::int_value(src, &["processes"], g.processes as i64);
        Err(SpecError::at(
            &plan.source_path,
            src,
            at.unwrap_or_else(|| fallback.clone()),
            format!("cell {} ({}) needs {msg}", cell.index, cell.key),
        ))
    };
    let what = format!(
        "{} processes and threads ({} worker and dispatcher processes, their other threads, and the engine's {ENGINE_THREADS} threads)",
        thousands(n.tasks),
        thousands(n.processes)
    );
    let task_limits = [
        ("kernel.pid_max", m.pid_max, m.tasks, "are in use now", ""),
        ("kernel.threads-max", m.threads_max, m.tasks, "are in use now", ""),
        (
            "this user's RLIMIT_NPROC",
            m.nproc,
            m.user_tasks,
            "are this user's now",
            "; raise it (ulimit -u) or run fewer processes",
        ),
    ];
    for (name, limit, now, in_use, hint) in task_limits {
        let (Some(limit), Some(now)) = (limit, now) else { continue };
        if now + n.tasks + reserve(limit) > limit {
            return refuse(
                big,
                format!(
                    "{what}; {name} is {} and {} {in_use} (schedlab leaves {} for the rest of the system){hint}",
                    thousands(limit),
                    thousands(now),
                    thousands(reserve(limit))
                ),
            );
        }
    }
    if let Some(avail) = m.mem_available_kib {
        let (cell, n) = needs
            .iter()
            .max_by_key(|(c, n)| (n.mem_kib, std::cmp::Reverse(c.index)))
            .expect("cells exist");
        if n.mem_kib > avail - avail / 10 {
            return refuse(
                cell,
                format!(
                    "about {} MiB for its {} processes (estimated private memory: {} MiB per ordinary worker); MemAvailable is {} MiB (schedlab leaves 10% of it)",
                    thousands(n.mem_kib.div_ceil(1024)),
                    thousands(n.processes),
                    WORKER_KIB / 1024,
                    thousands(avail / 1024)
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    /// A machine like the test VM: pid_max 32,768, 141 tasks running, 22 GiB available.
    fn machine() -> MachineLimits {
        MachineLimits {
            pid_max: Some(32_768),
            threads_max: Some(192_686),
            tasks: Some(141),
            nproc: None,
            user_tasks: Some(60),
            mem_available_kib: Some(23_000_000),
        }
    }

    fn spec(processes: &str) -> crate::Spec {
        parse("t.toml", &format!("name = \"t\"\n[matrix]\nworkload = [\"cpu\"]\nprocesses = {processes}\n[workloads.cpu]\nkind = \"pi\"\n"))
            .unwrap()
    }

    #[test]
    fn a_cell_beyond_pid_max_names_the_limit_both_numbers_and_the_processes_value() {
        let s = spec("[2, 100_000]");
        let e = s.check_limits(&machine()).unwrap_err();
        assert!(
            e.message.starts_with("cell 1 (cpu/other/n100000) needs 100,003 processes and threads"),
            "{e}"
        );
        assert!(e.message.contains("kernel.pid_max is 32,768 and 141 are in use now"), "{e}");
        assert_eq!((e.line, e.col), (4, 17), "points at 100_000: {e}");
        assert!(
            s.check_limits(&MachineLimits { pid_max: Some(4_194_304), ..machine() }).is_err(),
            "then threads-max or memory"
        );
    }

    #[test]
    fn the_margin_and_what_runs_already_count() {
        // 32,768 - 1,000 left to the system - 141 running - 3 engine threads = 31,624 workers fit.
        assert!(spec("[31_624]")
            .check_limits(&MachineLimits { mem_available_kib: None, ..machine() })
            .is_ok());
        let e = spec("[31_625]")
            .check_limits(&MachineLimits { mem_available_kib: None, ..machine() })
            .unwrap_err();
        assert!(e.message.contains("kernel.pid_max"), "{e}");
        // A small limit keeps 5% instead of 1,000.
        assert_eq!(reserve(2_000), 100);
        assert_eq!(reserve(4_194_304), 1_000);
    }

    #[test]
    fn threads_count_as_tasks() {
        let s = parse(
            "t.toml",
            "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nprocesses = [10]\n[workloads.w]\nkind = \"par_write\"\nthreads = 4\n",
        )
        .unwrap();
        let n = s.plan.cells[0].needs();
        assert_eq!((n.processes, n.tasks), (10, 10 * 5 + ENGINE_THREADS));
        let tight = MachineLimits { pid_max: Some(1_000), tasks: Some(900), ..machine() };
        let e = s.check_limits(&tight).unwrap_err();
        assert!(
            e.message.contains("53 processes and threads")
                && e.message.contains("kernel.pid_max is 1,000"),
            "{e}"
        );
    }

    #[test]
    fn rlimit_nproc_counts_this_users_tasks_only_where_it_applies() {
        let s = spec("[200]");
        let limited = MachineLimits { nproc: Some(256), user_tasks: Some(60), ..machine() };
        let e = s.check_limits(&limited).unwrap_err();
        assert!(e.message.contains("RLIMIT_NPROC is 256 and 60 are this user's now"), "{e}");
        assert!(s.check_limits(&MachineLimits { nproc: Some(300), ..limited.clone() }).is_ok());
        assert!(
            s.check_limits(&MachineLimits { nproc: None, ..limited }).is_ok(),
            "root: no RLIMIT_NPROC"
        );
    }

    #[test]
    fn memory_is_estimated_per_worker_against_mem_available() {
        let s = spec("[1_000]");
        let small = MachineLimits { mem_available_kib: Some(1_000 * 1024), ..machine() };
        let e = s.check_limits(&small).unwrap_err();
        assert!(
            e.message.contains("about 2,000 MiB for its 1,000 processes")
                && e.message.contains("MemAvailable is 1,000 MiB"),
            "{e}"
        );
        assert!(s
            .check_limits(&MachineLimits { mem_available_kib: Some(3_000 * 1024), ..machine() })
            .is_ok());
        assert!(
            s.check_limits(&MachineLimits::default()).is_ok(),
            "nothing known, nothing refused"
        );
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(100_001), "100,001");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
