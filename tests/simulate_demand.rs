//! `schedlab simulate --demand-from RUN`: each simulated worker's CPU demand is the work CPU
//! of the same worker in the same repetition of a measured run.

use crate::util::{is_root, measuring, Lab};
use serde_json::Value;
use std::collections::BTreeMap;

/// Two groups of RR workers whose work differs by 4x, so their demands differ.
const SPEC: &str = r#"name = "demand"
repetitions = 2
[matrix]
workload = ["short"]
policy = ["rr"]
processes = [2]
[groups.long]
workload = "long"
processes = 2
policy = "rr"
[workloads.short]
kind = "pi"
iterations = 2_000_000
[workloads.long]
kind = "pi"
iterations = 8_000_000
[policies.rr]
class = "rr"
priority = 10
"#;

fn rows(lab: &Lab, run: &str) -> Vec<Value> {
    serde_json::from_str(&lab.ok(&["export", run, "--format", "json"])).expect("export json parses")
}

fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

/// Work CPU per (cell, repetition, group, index).
fn work_cpu(rows: &[Value]) -> BTreeMap<(String, u64, String, u64), f64> {
    rows.iter()
        .map(|r| {
            let key = (
                r["cell_key"].to_string(),
                r["rep"].as_u64().unwrap(),
                r["group"].to_string(),
                r["index"].as_u64().unwrap(),
            );
            (key, f(r, "user_s") + f(r, "sys_s") - f(r, "setup_user_s") - f(r, "setup_sys_s"))
        })
        .collect()
}

fn refused(lab: &Lab, args: &[&str], says: &str) {
    let out = lab.run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?} should say {says:?}: {stderr}");
}

#[test]
fn each_simulated_worker_takes_its_measured_work_cpu() {
    require!(is_root(), "needs root for SCHED_RR workers");
    let _turn = measuring();
    let lab = Lab::new();
    let spec = lab.spec("d.toml", SPEC);
    let spec = spec.to_str().unwrap();
    lab.ok(&["run", spec, "-q"]);
    let measured = rows(&lab, "1");
    assert_eq!(measured.len(), 8);
    lab.ok(&["simulate", spec, "--cpus", "2", "--demand-from", "1", "-q"]);
    let simulated = rows(&lab, "2");
    let (want, got) = (work_cpu(&measured), work_cpu(&simulated));
    assert_eq!(want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>(), "the same workers");
    for (k, w) in &want {
        // The simulator counts switch and migration costs apart from a task's CPU time, and
        // keeps whole nanoseconds.
        assert!((got[k] - w).abs() < 1e-6, "{k:?}: simulated {} s of CPU, measured {w} s", got[k]);
    }
    // The flag matters: the long group's workers demanded more than the short group's.
    let mean = |g: &str| {
        let xs: Vec<f64> = want.iter().filter(|(k, _)| k.2.contains(g)).map(|(_, v)| *v).collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    assert!(mean("long") > 2.0 * mean("main"), "long {} main {}", mean("long"), mean("main"));
    let extra: Value = serde_json::from_str(simulated[0]["extra"].as_str().unwrap()).unwrap();
    assert_eq!(extra["sim"]["model"]["demand_from_run"], 1);
    let shown = lab.ok(&["show", "2"]);
    assert!(shown.contains("work CPU in measured run 1"), "{shown}");
    let out = lab.path("report");
    lab.ok(&["report", "2", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("simulation model") && html.contains("work CPU in measured run 1"),
        "the report says where demands came from"
    );

    // The stored demands let a simulated cell be simulated again exactly, for its export.
    let key = simulated[0]["cell_key"].as_str().unwrap();
    for rep in ["1", "2"] {
        let file = lab.path(&format!("rep{rep}.pftrace"));
        lab.ok(&[
            "trace",
            "export",
            "2",
            "--cell",
            key,
            "--rep",
            rep,
            "-o",
            file.to_str().unwrap(),
        ]);
        assert!(std::fs::metadata(&file).unwrap().len() > 0);
    }

    // Refused before anything is stored: a simulated run, a run that does not exist, more
    // repetitions than measured, different work, a cell the run lacks.
    refused(&lab, &["simulate", spec, "--cpus", "2", "--demand-from", "2"], "run 2 is simulated");
    refused(&lab, &["simulate", spec, "--cpus", "2", "--demand-from", "9"], "there is no run 9");
    refused(
        &lab,
        &["simulate", spec, "--cpus", "2", "--demand-from", "1", "--repetitions", "3"],
        "no repetition 3 of cell",
    );
    refused(
        &lab,
        &["simulate", spec, "--cpus", "2", "--demand-from", "1", "--scale", "2"],
        "different --scale",
    );
    let wider = lab.spec("w.toml", &SPEC.replace("processes = [2]", "processes = [2, 3]"));
    refused(
        &lab,
        &["simulate", wider.to_str().unwrap(), "--cpus", "2", "--demand-from", "1"],
        "run 1 has no cell",
    );
    refused(
        &lab,
        &["simulate", spec, "--demand-from", "1", "--ns-per-iteration", "3"],
        "cannot be used with",
    );
    let runs = lab.ok(&["runs"]);
    assert_eq!(
        runs.lines().filter(|l| l.contains("demand")).count(),
        2,
        "only the measured and the simulated run: {runs}"
    );
}
