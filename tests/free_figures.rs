//! The scheduler's own per-process figures, read at each exit without a trace (issue #28,
//! item 1): every sample has them, they agree with wait4, and the simulator fills them too.

use crate::util::{is_root, Lab};
use serde_json::Value;

/// The six columns of the scheduler's accounting.
const COLUMNS: [&str; 6] =
    ["oncpu_s", "run_delay_s", "timeslices", "migrations", "sched_voluntary", "sched_involuntary"];

fn f(r: &Value, field: &str) -> f64 {
    r[field].as_f64().unwrap_or_else(|| panic!("{field} in {r}"))
}

/// More CPU hogs than CPUs, under other and fifo.
fn crowded(cpus: usize) -> String {
    format!(
        "name = \"free\"\nrepetitions = 2\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"fifo\"]\nprocesses = [{}]\n[workloads.cpu]\nkind = \"pi\"\niterations = 20_000_000\n[policies.fifo]\nclass = \"fifo\"\npriority = 10\n",
        cpus + 2
    )
}

#[test]
fn every_untraced_sample_has_the_scheduler_figures_and_oncpu_is_wait4s_cpu() {
    require!(is_root(), "needs root for SCHED_FIFO");
    let lab = Lab::new();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spec = lab.spec("free.toml", &crowded(cpus));
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let rows = lab.samples();
    assert_eq!(rows.len(), 2 * 2 * (cpus + 2));
    for r in &rows {
        for c in COLUMNS {
            assert!(r[c].is_number(), "{c} empty in {r}");
        }
        assert!(f(r, "timeslices") >= 1.0, "{r}");
        let cpu = f(r, "user_s") + f(r, "sys_s");
        let oncpu = f(r, "oncpu_s");
        assert!(
            (oncpu - cpu).abs() <= (0.01 * cpu).max(0.002),
            "worker {}: on-CPU {oncpu} s vs wait4's user+sys {cpu} s",
            r["pid"]
        );
    }
    for policy in ["other", "fifo"] {
        let waited: f64 =
            rows.iter().filter(|r| r["policy"] == policy).map(|r| f(r, "run_delay_s")).sum();
        assert!(waited > 0.0, "{policy}: {} hogs on {cpus} CPUs never waited", cpus + 2);
    }
    let other_waits = rows.iter().filter(|r| r["policy"] == "other");
    assert!(other_waits.into_iter().all(|r| f(r, "run_delay_s") > 0.0), "time-sliced: all wait");
    let show = lab.ok(&["show", "--wide"]);
    assert!(show.contains("run delay/proc [s]") && show.contains("migrations/proc"), "{show}");
    let narrow = lab.ok(&["show"]);
    assert!(narrow.contains("--wide adds the kernel's run delay"), "{narrow}");
    let cmp = lab.ok(&["compare", "1", "--by", "policy", "--metric", "run_delay"]);
    assert!(cmp.contains("run delay per process"), "{cmp}");
}

#[test]
fn the_simulator_fills_the_same_figures_from_its_schedule() {
    let lab = Lab::new();
    let spec = lab.spec("free.toml", &crowded(1));
    let sim = ["--cpus", "1", "--ns-per-iteration", "1", "--switch-cost-us", "0"];
    lab.ok(&[&["simulate", spec.to_str().unwrap(), "-q"][..], &sim].concat());
    let rows = lab.samples();
    assert_eq!(rows.len(), 2 * 2 * 3);
    for r in &rows {
        for c in COLUMNS {
            assert!(r[c].is_number(), "{c} empty in {r}");
        }
        assert_eq!(f(r, "migrations"), 0.0, "one CPU: {r}");
        assert!((f(r, "oncpu_s") - f(r, "user_s")).abs() < 1e-9, "{r}");
        assert_eq!(f(r, "sched_involuntary"), f(r, "involuntary_csw"), "{r}");
        assert_eq!(f(r, "sched_voluntary"), f(r, "voluntary_csw"), "{r}");
        assert!(f(r, "timeslices") >= 1.0 + f(r, "sched_involuntary"), "{r}");
    }
    for policy in ["other", "fifo"] {
        let of = |p| rows.iter().filter(move |r: &&Value| r["policy"] == p);
        assert!(of(policy).any(|r| f(r, "run_delay_s") > 0.0), "{policy}: 3 tasks on 1 CPU");
        // FIFO runs them one after the other: the last waits for the two before it.
        if policy == "fifo" {
            let mut waits: Vec<f64> = of(policy).map(|r| f(r, "run_delay_s")).collect();
            waits.sort_by(f64::total_cmp);
            assert!(waits[waits.len() - 1] > waits[0], "{waits:?}");
        }
    }
}
