//! `schedlab calibrate` (issue #40 item 1): each overhead measured as a distribution, stored
//! with the machine's facts, printed with its unit and the percentile the tests use, and
//! written in SchedCAT's overhead CSV layout.

use crate::util::{is_root, measuring, Lab};
use serde_json::Value;

#[test]
fn calibrate_measures_stores_and_prints_each_overhead_and_schedcats_csv() {
    require!(is_root(), "the probes run at SCHED_FIFO, which needs root here");
    let _m = measuring();
    let lab = Lab::new();
    let text = lab.ok(&["calibrate", "--quick", "-q"]);
    for name in [
        "release_latency",
        "context_switch",
        "tick",
        "release",
        "decision_cost_edf",
        "decision_cost_dwcs",
    ] {
        let line = text.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| {
            panic!("no {name} line in:\n{text}");
        });
        assert!(line.contains("p99") && line.contains("(used)"), "{line}");
    }
    assert!(text.contains("percentile used 99 (µs)"), "{text}");
    // The kernel's interrupt accounting, measured: some interruptions, a yes or a no.
    let irq = text
        .lines()
        .find(|l| l.contains("interrupts counted in the interrupted task's CPU time: "))
        .unwrap_or_else(|| panic!("no interrupt accounting line in:\n{text}"));
    assert!(irq.contains(": yes (") || irq.contains(": no ("), "{irq}");
    // The stored record: every overhead has samples, p50 <= p99 <= max, and a cost a
    // machine can have (a switch between 50 ns and 1 ms at its median).
    let c: Value =
        serde_json::from_str(&lab.ok(&["calibrate", "--show", "--format", "json"])).unwrap();
    for o in c["overheads"].as_array().unwrap() {
        let d = &o["ns"];
        let (p50, p99, max) = (
            d["p50_ns"].as_u64().unwrap(),
            d["p99_ns"].as_u64().unwrap(),
            d["max_ns"].as_u64().unwrap(),
        );
        assert!(d["samples"].as_u64().unwrap() > 0 && p50 <= p99 && p99 <= max, "{o}");
    }
    let switch =
        c["overheads"].as_array().unwrap().iter().find(|o| o["name"] == "context_switch").unwrap();
    let p50 = switch["ns"]["p50_ns"].as_u64().unwrap();
    assert!((50..1_000_000).contains(&p50), "{switch}");
    assert!(c["run_id"].as_i64().is_some(), "{c}");
    let irq = &c["interrupts"];
    assert!(irq["counted"].as_u64().unwrap() <= irq["gaps"].as_u64().unwrap(), "{c}");
    // The dispatchers' run is an ordinary stored run.
    assert!(lab.ok(&["runs"]).contains("calibrate"));
    // SchedCAT's layout: the header, then one row of µs figures.
    let csv = lab.ok(&["calibrate", "--show", "--format", "schedcat"]);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "TASK-COUNT, SCHEDULE, CXS, RELEASE, RELEASE-LATENCY, TICK", "{csv}");
    let cells: Vec<f64> = rows[1].split(", ").map(|v| v.parse().unwrap()).collect();
    assert_eq!(cells.len(), 6, "{csv}");
    assert_eq!(cells[0], 1.0);
    assert!(cells[2] > 0.0 && cells[4] > 0.0 && cells[5] > 0.0, "{csv}");
    // What the twins charge, and `check` charging it by itself: Burns & Wellings' set at
    // U = 1 is schedulable without overheads and misses with this machine's.
    let o: Value =
        serde_json::from_str(&lab.ok(&["calibrate", "--show", "--format", "overheads"])).unwrap();
    assert_eq!(o["context_switch"], switch["ns"]["p99_ns"], "{o}");
    assert_eq!(o["percentile"], 99.0, "{o}");
    let spec = lab.spec(
        "bw.toml",
        "name = \"bw\"\n[matrix]\nworkload = [\"set\"]\nscheduler = [\"fifo-rm\"]\n[workloads.set]\nkind = \"periodic\"\n\
         duration_s = 1\ntasks = [{ c_ms = 3, t_ms = 7 }, { c_ms = 3, t_ms = 12 }, { c_ms = 5, t_ms = 20 }]\n",
    );
    let check = lab.ok(&["check", spec.to_str().unwrap()]);
    assert!(
        check.contains("with overheads (calibration 1 (`schedlab calibrate --show 1`)")
            && check.contains(", p99)"),
        "{check}"
    );
    assert!(check.contains("3, 6, 20 (yes); with overheads:"), "{check}");
}

#[test]
fn calibrate_show_without_a_calibration_says_so_and_exits_2() {
    let lab = Lab::new();
    let out = lab.run(&["calibrate", "--show"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no results database"), "{out:?}");
    let spec = lab.spec("pi.toml", "name = \"pi\"\n[matrix]\nworkload = [\"pi\"]\n[workloads.pi]\nkind = \"pi\"\niterations = 1000\n");
    lab.ok(&["simulate", spec.to_str().unwrap(), "-q"]);
    let out = lab.run(&["calibrate", "--show"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds no calibration") && err.contains("schedlab calibrate"), "{err}");
}
