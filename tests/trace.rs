//! Kernel traces of cells (`run --trace`, `schedlab trace`): honest against wait4, nothing
//! left behind.

use crate::util::{is_root, measuring, Lab};
use serde_json::Value;

/// Where tracefs is mounted now, and schedlab's instances under each mount.
fn tracing_state() -> (Vec<String>, Vec<String>) {
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.split(" - ").nth(1).is_some_and(|t| t.starts_with("tracefs ")))
        .map(|l| l.split(' ').nth(4).unwrap().to_string())
        .collect();
    let mut instances = Vec::new();
    for m in &mounts {
        if let Ok(rd) = std::fs::read_dir(format!("{m}/instances")) {
            instances.extend(
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("schedlab-")),
            );
        }
    }
    (mounts, instances)
}

/// Whether the newest run has a worker whose wait4 CPU time lies outside its trace CPU time
/// (plus what the trace could not see) by more than 2% or 10 ms, in a cell with untraced
/// switches.
fn cpu_off_after_repair(lab: &Lab) -> bool {
    let rows = lab.samples();
    let traces: Vec<Value> = serde_json::from_str(&lab.ok(&["trace", "--format", "json"])).unwrap();
    traces.iter().filter(|c| c["untraced_switches"].as_u64().unwrap_or(0) > 0).any(|c| {
        c["workers"].as_array().unwrap().iter().any(|w| {
            let Some(s) = rows.iter().find(|r| r["pid"] == w["pid"]) else { return false };
            let wait4 = s["user_s"].as_f64().unwrap() + s["sys_s"].as_f64().unwrap();
            let (run, untraced) = (w["run_s"].as_f64().unwrap(), w["untraced_s"].as_f64().unwrap());
            let tol = (0.02 * wait4).max(0.010);
            wait4 < run - tol || wait4 > run + untraced + tol
        })
    })
}

#[test]
fn a_traced_pa3_cpu_cell_agrees_with_wait4_worker_by_worker() {
    require!(is_root(), "tracing needs root");
    require!(crate::util::tracing_possible(), "this kernel has no tracefs");
    let _m = measuring();
    let before = tracing_state();
    let lab = Lab::new();
    // pa3's CPU cells in small: 8 pi workers under other, fifo and rr on the two CPUs.
    let spec = lab.spec(
        "pa3.toml",
        "name = \"pa3-cpu-traced\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"other\", \"fifo\", \"rr\"]\nprocesses = [8]\n[workloads.pi]\nkind = \"pi\"\niterations = 4000000\n",
    );
    // A run whose untraced switches (other sessions' load) put a worker's CPU time off is
    // said and made again, up to three runs; the last one is checked whatever it shows.
    for attempt in 1..=3 {
        lab.ok(&["run", spec.to_str().unwrap(), "--trace=timeline", "-q"]);
        if attempt == 3 || !cpu_off_after_repair(&lab) {
            break;
        }
        eprintln!("run {attempt}: untraced switches put a worker's trace CPU time off wait4 (machine load); again");
    }
    // Another schedlab on the machine may have come or gone meanwhile: nothing may be there
    // now that was not before.
    let after = tracing_state();
    assert!(
        after.0.iter().all(|m| before.0.contains(m)),
        "a tracefs mount was left: {after:?} against {before:?}"
    );
    assert!(
        after.1.iter().all(|i| before.1.contains(i)),
        "a schedlab instance was left: {after:?} against {before:?}"
    );
    let rows = lab.samples();
    let traces: Vec<Value> = serde_json::from_str(&lab.ok(&["trace", "--format", "json"])).unwrap();
    assert_eq!(traces.len(), 3, "one traced repetition per cell");
    for cell in &traces {
        assert_eq!(cell["lost_events"], 0, "{}", cell["key"]);
        let workers = cell["workers"].as_array().unwrap();
        assert_eq!(workers.len(), 8);
        assert!(
            workers.iter().any(|w| w["wakeups"].as_u64().unwrap() > 0),
            "no wake-up latency in {}",
            cell["key"]
        );
        for w in workers {
            let pid = w["pid"].as_i64().unwrap();
            let s = rows
                .iter()
                .find(|r| r["pid"].as_i64() == Some(pid))
                .unwrap_or_else(|| panic!("no sample of pid {pid}"));
            let wait4 = s["user_s"].as_f64().unwrap() + s["sys_s"].as_f64().unwrap();
            let (run, untraced) = (w["run_s"].as_f64().unwrap(), w["untraced_s"].as_f64().unwrap());
            // Between what the trace saw and that plus what it could not see (switches the
            // kernel did not trace: docs/ARCHITECTURE.md, Kernel traces).
            let tol = (0.02 * wait4).max(0.010);
            assert!(
                run - tol <= wait4 && wait4 <= run + untraced + tol,
                "{} pid {pid}: trace {run:.4} s (+ untraced {untraced:.4} s), wait4 {wait4:.4} s",
                cell["key"]
            );
            let invol = w["involuntary"].as_i64().unwrap();
            let nivcsw = s["involuntary_csw"].as_i64().unwrap();
            assert!(
                (invol - nivcsw).abs() <= 2,
                "{} pid {pid}: trace {invol} involuntary, wait4 {nivcsw}",
                cell["key"]
            );
            let by = &w["preempted_by"];
            let kinds: i64 = ["worker", "engine", "kernel", "other"]
                .iter()
                .map(|k| by[k].as_i64().unwrap())
                .sum();
            assert_eq!(kinds, invol, "every involuntary switch-out has a taker: {w}");
            for k in ["runnable_s", "blocked_s", "migrations"] {
                assert!(!w[k].is_null(), "{k} missing: {w}");
            }
            // A wake-up's latency needs its switch-in: one the kernel did not trace (from
            // the idle task, on this guest) leaves a worker woken once with none.
            for k in ["wakeup_p50_us", "wakeup_p99_us"] {
                assert_eq!(w[k].is_null(), w["wakeups"] == 0, "{k}: {w}");
            }
        }
    }
    let table = lab.ok(&["trace", "--cell", "pi/fifo/n8", "--rep", "1", "--wide"]);
    assert!(
        table.contains("pi/fifo/n8 rep 1: lost events 0")
            && table.contains("wait4 cpu [s]")
            && table.contains("untraced [s]"),
        "{table}"
    );
    assert!(!table.contains("pi/other/n8"), "only the cell asked for: {table}");
}

#[test]
fn trace_refuses_what_it_cannot_show_by_name() {
    let lab = Lab::new();
    let spec = lab.spec("q.toml", "name = \"q\"\n[matrix]\nworkload = [\"pi\"]\n[workloads.pi]\nkind = \"pi\"\niterations = 1000\n");
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let out = lab.run(&["trace"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no kernel traces: run it with --trace"),
        "{out:?}"
    );
}
