//! Issue #39: the field's benchmarks as native kinds (messaging, pipe, schbench) and the
//! originals as parsed command cells, their figures in `export --per cell` and `compare`.
//! Tiny runs: the counts are exact, no timing is judged.

use crate::util::Lab;
use serde_json::Value;

/// Every cell of the newest run, `export --per cell --format json`, by key.
fn cells(lab: &Lab) -> Vec<Value> {
    let text = lab.ok(&["export", "--per", "cell", "--format", "json"]);
    serde_json::from_str(&text).expect("export json parses")
}

fn cell<'a>(cells: &'a [Value], key: &str) -> &'a Value {
    cells.iter().find(|c| c["key"] == key).unwrap_or_else(|| panic!("no cell {key} in {cells:?}"))
}

fn num(c: &Value, k: &str) -> f64 {
    c[k].as_f64().unwrap_or_else(|| panic!("{k} in {c}"))
}

/// The sample's benchmark figures (`extra.bench`).
fn bench(s: &Value) -> Value {
    let extra: Value = serde_json::from_str(s["extra"].as_str().expect("extra")).unwrap();
    extra["bench"].clone()
}

#[test]
fn each_native_kind_states_its_figures_and_processes_sweeps_its_own_count() {
    let lab = Lab::new();
    let spec = lab.spec(
        "b.toml",
        "name = \"b\"\nrepetitions = 3\n[matrix]\nworkload = [\"hb\", \"pp\", \"sb\"]\nprocesses = [1, 2]\n\
         policy = [\"other\", \"batch\"]\n\
         [workloads.hb]\nkind = \"messaging\"\nfds = 3\nloops = 10\n\
         [workloads.pp]\nkind = \"pipe\"\nloops = 300\nthreads = true\n\
         [workloads.sb]\nkind = \"schbench\"\nworkers = 2\nruntime_s = 0.2\noperations = 1\nfootprint_kb = 16\nsleep_us = 0\n",
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let samples = lab.samples();
    // One worker per cell runs the whole benchmark.
    assert_eq!(samples.len(), 3 * 2 * 2 * 3, "{samples:?}");
    for s in &samples {
        assert_eq!(s["exit_code"], 0, "{s}");
        let b = bench(s);
        match b["source"].as_str() {
            // Messages: groups (the processes axis) x 3 senders x 3 receivers x 10 loops.
            Some("messaging") => {
                assert!(b["time_s"].as_f64().unwrap() > 0.0, "{b}");
                assert!([90.0, 180.0].contains(&s["work_units"].as_f64().unwrap()), "{s}");
            }
            // Round trips: pairs (the processes axis) x 300.
            Some("pipe") => {
                assert!(b["us_per_op"].as_f64().unwrap() > 0.0, "{b}");
                assert!([300.0, 600.0].contains(&s["work_units"].as_f64().unwrap()), "{s}");
            }
            Some("schbench") => {
                let w = &b["wakeup_us"];
                assert!(w["p50"].as_f64().unwrap() <= w["p999"].as_f64().unwrap(), "{b}");
                assert!(b["requests"].as_u64().unwrap() > 0, "{b}");
                assert_eq!(b["rps"]["samples"], 2, "the start's and the end's rates: {b}");
            }
            other => panic!("source {other:?} in {s}"),
        }
    }
    let c = cells(&lab);
    for p in ["other", "batch"] {
        for n in [1, 2] {
            let hb = cell(&c, &format!("hb/{p}/n{n}"));
            assert!(num(hb, "time_s") > 0.0 && hb["us_per_op"].is_null(), "{hb}");
            assert_eq!(hb["processes"], n, "the processes column is the groups: {hb}");
            assert!(hb.get("time_s_ci_low").is_some(), "an interval column: {hb}");
            let pp = cell(&c, &format!("pp/{p}/n{n}"));
            assert!(num(pp, "us_per_op") > 0.0 && num(pp, "ops_per_s") > 0.0, "{pp}");
            let sb = cell(&c, &format!("sb/{p}/n{n}"));
            // schbench's eleven figures, all but the first three of the list.
            for f in &schedlab_analysis::bench::FIGURES[3..] {
                assert!(num(sb, f.name) >= 0.0, "{} in {sb}", f.name);
            }
            assert!(sb["time_s"].is_null(), "{sb}");
        }
    }
    let out = lab.ok(&["compare", "1", "--by", "policy", "--metric", "wakeup_p99_us"]);
    assert!(out.contains("schbench wake-up latency p99"), "{out}");
    let show = lab.ok(&["show", "1"]);
    assert!(show.contains("Benchmarks") && show.contains("wakeup p99 [us]"), "{show}");
}

#[test]
fn an_output_that_does_not_parse_fails_the_repetition_with_its_line() {
    let lab = Lab::new();
    let spec = lab.spec(
        "c.toml",
        "name = \"c\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"command\"\n\
         argv = [\"/bin/echo\", \"Time: soon\"]\nparse = \"hackbench\"\n",
    );
    let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let show = lab.ok(&["show", "1"]);
    assert!(show.contains("not a line hackbench prints") && show.contains("Time: soon"), "{show}");
    // The output is kept with the sample all the same.
    let b = bench(&lab.samples()[0]);
    assert_eq!(
        (b["source"].as_str(), b["output"].as_str()),
        (Some("hackbench"), Some("Time: soon\n"))
    );
}

/// The program's path when it is on PATH.
fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| d.join(program).is_file())
}

#[test]
fn hackbench_and_perf_bench_run_as_parsed_command_cells() {
    require!(on_path("hackbench"), "hackbench is not installed (apt-get install rt-tests)");
    require!(on_path("perf"), "perf is not installed (apt-get install linux-perf)");
    let lab = Lab::new();
    let spec = lab.spec(
        "o.toml",
        "name = \"o\"\n[matrix]\nworkload = [\"hb\", \"perfhb\", \"pp\"]\n\
         [workloads.hb]\nkind = \"command\"\nargv = [\"hackbench\", \"-g\", \"1\", \"-l\", \"20\"]\nparse = \"hackbench\"\n\
         [workloads.perfhb]\nkind = \"command\"\nargv = [\"perf\", \"bench\", \"sched\", \"messaging\", \"-g\", \"1\", \"-l\", \"20\"]\nparse = \"hackbench\"\n\
         [workloads.pp]\nkind = \"command\"\nargv = [\"perf\", \"bench\", \"sched\", \"pipe\", \"-l\", \"2000\"]\nparse = \"perf-bench-pipe\"\n",
    );
    let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
    // perf may be refused by perf_event_paranoid for a non-root user; bench needs no events.
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let c = cells(&lab);
    assert!(num(cell(&c, "hb/other/n1"), "time_s") > 0.0);
    assert!(num(cell(&c, "perfhb/other/n1"), "time_s") > 0.0);
    let pp = cell(&c, "pp/other/n1");
    assert!(num(pp, "us_per_op") > 0.0 && num(pp, "ops_per_s") > 0.0, "{pp}");
    for s in lab.samples() {
        let b = bench(&s);
        assert!(["hackbench", "perf-bench-pipe"].contains(&b["source"].as_str().unwrap()), "{b}");
        assert!(!b["output"].as_str().unwrap().is_empty(), "{b}");
    }
}

#[test]
fn the_field_experiment_parses_and_check_names_a_missing_original() {
    let text = include_str!("../experiments/field.toml");
    let s = schedlab_spec::parse("experiments/field.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<&str> = s.plan.cells.iter().map(|c| c.primary().workload.kind()).collect();
    assert_eq!(kinds, ["command", "messaging", "command", "pipe", "command", "schbench"]);
    // The kernel's view: both schbench cells traced by the BPF observer.
    let text = include_str!("../experiments/field-kernel.toml");
    let s = schedlab_spec::parse("experiments/field-kernel.toml", text)
        .unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<&str> = s.plan.cells.iter().map(|c| c.primary().workload.kind()).collect();
    assert_eq!(kinds, ["command", "schbench"]);
    assert!(!s.plan.trace.is_off(), "{:?}", s.plan.trace);
    let lab = Lab::new();
    let spec = lab.spec(
        "m.toml",
        "name = \"m\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"command\"\n\
         argv = [\"schbench-not-installed\", \"-r\", \"1\"]\nparse = \"schbench\"\n",
    );
    let out = lab.run(&["check", spec.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`schbench-not-installed` (parse = \"schbench\") is not on PATH"),
        "{err}"
    );
    assert!(err.contains("github.com/masoncl/schbench"), "{err}");
}
