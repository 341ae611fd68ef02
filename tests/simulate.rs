//! `schedlab simulate`: spec -> simulated run in the same database, textbook schedules end
//! to end, determinism, and bad input. Every run gives the model's rates explicitly, so no
//! test depends on this machine's speed.

use crate::util::{exists, per_cpu_rows, Lab};
use serde_json::Value;

/// 1 ns per pi iteration, 5 us CPU + 50 us device per synchronous write.
const RATES: [&str; 6] =
    ["--ns-per-iteration", "1", "--write-cpu-us", "5", "--write-service-us", "50"];
const NO_COSTS: [&str; 4] = ["--switch-cost-us", "0", "--migration-cost-us", "0"];

fn simulate(lab: &Lab, spec: &str, extra: &[&str]) -> String {
    let mut args = vec!["simulate", spec, "-q"];
    args.extend(RATES);
    args.extend(extra);
    lab.ok(&args)
}

fn f(row: &Value, field: &str) -> f64 {
    row[field].as_f64().unwrap_or_else(|| panic!("{field} in {row}"))
}

fn sorted(rows: &[Value], field: &str) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().map(|r| f(r, field)).collect();
    v.sort_by(f64::total_cmp);
    v
}

const PA3_LIKE: &str = r#"name = "pa3-small"
repetitions = 2
[matrix]
workload = ["cpu", "io", "mixed"]
policy = ["other", "fifo", "rr"]
processes = [2, 3]
[workloads.cpu]
kind = "pi"
iterations = 2_000_000
[workloads.io]
kind = "copy"
transfer_bytes = 10_240
block_bytes = 1024
[workloads.mixed]
kind = "mixed"
iterations = 1_000_000
write_every = 100_000
[policies.fifo]
class = "fifo"
priority = 98
[policies.rr]
class = "rr"
priority = 98
"#;

#[test]
fn a_pa3_like_spec_is_stored_as_a_sim_run_with_every_sample() {
    let lab = Lab::new();
    let spec = lab.spec("pa3.toml", PA3_LIKE);
    simulate(&lab, spec.to_str().unwrap(), &["--cpus", "2"]);
    let runs = lab.ok(&["runs"]);
    assert!(runs.contains("sim"), "{runs}");
    let rows = lab.samples();
    // 3 workloads x 3 policies x (2 + 3) processes x 2 repetitions.
    assert_eq!(rows.len(), 90);
    assert!(rows.iter().all(|r| r["exit_code"] == 0 && r["cell_status"] == "ok"));
    // Work units are the spec's; I/O workers block once per synchronous write (10 blocks).
    let io: Vec<&Value> = rows.iter().filter(|r| r["workload"] == "io").collect();
    assert!(
        io.iter().all(|r| r["voluntary_csw"] == 10 && f(r, "work_units") == 10_240.0),
        "{:?}",
        io[0]
    );
    let mixed = rows.iter().find(|r| r["workload"] == "mixed").unwrap();
    assert_eq!(mixed["voluntary_csw"], 10);
    let extra: Value = serde_json::from_str(mixed["extra"].as_str().unwrap()).unwrap();
    assert_eq!(extra["sim"]["model"]["write_service_ns"], 50_000);
    assert_eq!(extra["sim"]["model"]["cpus"], 2);
    // show and export work on it unchanged.
    let shown = lab.ok(&["show"]);
    assert!(shown.contains("(sim, complete)") && shown.contains("36 cell repetitions"), "{shown}");
}

/// 4 equal CPU-bound FIFO workers on 2 CPUs, no costs: two run to completion, then the other two.
#[test]
fn four_fifo_workers_on_two_cpus_take_two_bursts() {
    let lab = Lab::new();
    let spec = lab.spec(
        "f.toml",
        "name = \"f\"\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"fifo\"]\nprocesses = [4]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n",
    );
    let mut extra = vec!["--cpus", "2"];
    extra.extend(NO_COSTS);
    simulate(&lab, spec.to_str().unwrap(), &extra);
    let rows = lab.samples();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| f(r, "cell_makespan_s") == 0.02));
    // Release to completion: 10, 10, 20, 20 ms; each worker's own clock: 10 ms of running.
    assert_eq!(sorted(&rows, "engine_wall_s"), [0.01, 0.01, 0.02, 0.02]);
    assert_eq!(sorted(&rows, "start_offset_s"), [0.0, 0.0, 0.01, 0.01]);
    assert_eq!(sorted(&rows, "wall_s"), [0.01; 4]);
    assert_eq!(sorted(&rows, "user_s"), [0.01; 4]);
    assert!(rows.iter().all(|r| r["involuntary_csw"] == 0 && r["voluntary_csw"] == 0));
}

/// Round robin on one CPU with a 4 ms quantum: three 10 ms workers rotate and end at 26, 28, 30 ms.
#[test]
fn round_robin_on_one_cpu_follows_the_quantum() {
    let lab = Lab::new();
    let spec = lab.spec(
        "rr.toml",
        "name = \"rr\"\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"rr\"]\nprocesses = [3]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n",
    );
    let mut extra = vec!["--cpus", "1", "--rr-quantum-ms", "4"];
    extra.extend(NO_COSTS);
    simulate(&lab, spec.to_str().unwrap(), &extra);
    let rows = lab.samples();
    assert_eq!(sorted(&rows, "end_offset_s"), [0.026, 0.028, 0.03]);
    assert_eq!(sorted(&rows, "start_offset_s"), [0.0, 0.004, 0.008]);
    assert!(rows.iter().all(|r| r["involuntary_csw"] == 2), "{rows:?}");
}

#[test]
fn the_same_input_gives_identical_stored_samples() {
    let export = || {
        let lab = Lab::new();
        let spec = lab.spec("pa3.toml", PA3_LIKE);
        simulate(&lab, spec.to_str().unwrap(), &["--cpus", "2"]);
        lab.ok(&["export", "--format", "json"])
    };
    let (a, b) = (export(), export());
    assert!(a.len() > 1000);
    assert_eq!(a, b, "two simulations of the same input differ");
    // Repetitions of a deterministic simulation are the same record.
    let rows: Vec<Value> = serde_json::from_str(&a).unwrap();
    let rep = |r: u64| -> Vec<String> {
        rows.iter()
            .filter(|x| x["rep"] == r)
            .map(|x| {
                format!("{} {} {} {}", x["cell_key"], x["index"], x["wall_s"], x["involuntary_csw"])
            })
            .collect()
    };
    assert_eq!(rep(0), rep(1));
}

#[test]
fn command_workloads_are_refused_unless_skipped() {
    let lab = Lab::new();
    let spec = lab
        .spec("c.toml", "name = \"c\"\n[matrix]\nworkload = [\"cmd\", \"pi\"]\n[workloads.cmd]\nkind = \"command\"\nargv = [\"true\"]\n");
    let out = lab.run(&["simulate", spec.to_str().unwrap(), "--ns-per-iteration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("command workload") && err.contains("--skip-unsupported"), "{err}");
    assert!(!exists(&lab.db()), "nothing may be stored for refused input");
    let out = lab.run(&[
        "simulate",
        spec.to_str().unwrap(),
        "--ns-per-iteration",
        "1",
        "--skip-unsupported",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning: not simulated: cell cmd/other/n1")
    );
    // The pi cell is simulated; the command cell is stored without samples.
    let rows = lab.samples();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["workload"], "pi");
}

#[test]
fn zero_cpus_and_bad_chart_requests_are_bad_input() {
    let lab = Lab::new();
    let spec =
        lab.spec("p.toml", "name = \"p\"\n[matrix]\nworkload = [\"pi\"]\nprocesses = [1, 2]\n");
    let cases: [(&[&str], &str); 4] = [
        (&["--cpus", "0"], "--cpus must be at least 1"),
        (&["--gantt", "g.svg"], "--gantt needs --gantt-cell"),
        (&["--gantt", "g.svg", "--gantt-cell", "nope"], "no cell `nope`"),
        (&["--from", "1"], "need --gantt"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["simulate", spec.to_str().unwrap(), "--ns-per-iteration", "1"];
        args.extend(extra);
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    assert!(!exists(&lab.db()));
}

#[test]
fn gantt_chart_of_one_cell_is_written() {
    let lab = Lab::new();
    let spec = lab.spec(
        "p.toml",
        "name = \"p\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"other\"]\nprocesses = [1, 3]\n",
    );
    let svg = lab.path("chart.svg");
    simulate(
        &lab,
        spec.to_str().unwrap(),
        &[
            "--cpus",
            "2",
            "--gantt",
            svg.to_str().unwrap(),
            "--gantt-cell",
            "pi/other/n3",
            "--to",
            "0.01",
        ],
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("pi/other/n3"));
    // Three workers share two CPUs by slices: bars on both CPUs in the first 10 ms.
    assert!(text.contains("w2") && text.contains("CPU 0") && text.contains("CPU 1"));
    assert!(text.matches("<rect").count() > 5);
}

/// Buttazzo's set in ms: T1 = (2, 5), T2 = (4, 7), U = 0.97, jobs doing all of C. Rate
/// monotonic lets T2's first job finish at 8 against its deadline 7 (the job loop finishes
/// it late; the next four meet theirs); EDF meets every deadline.
const RT_SET: &str = r#"name = "rt-small"
repetitions = 2
[workloads.set]
kind = "periodic"
tasks = [{ c_ms = 2, t_ms = 5 }, { c_ms = 4, t_ms = 7 }]
duration_s = 0.035
quantum_ms = 1
work_fraction = 1.0
[matrix]
workload = ["set"]
scheduler = ["fifo-rm", "edf"]
"#;

#[test]
fn a_periodic_experiment_is_stored_as_a_sim_run_with_rt_records() {
    let lab = Lab::new();
    let spec = lab.spec("rt.toml", RT_SET);
    let mut extra = vec!["--cpus", "2"];
    extra.extend(NO_COSTS);
    simulate(&lab, spec.to_str().unwrap(), &extra);
    let runs = lab.ok(&["runs"]);
    assert!(runs.contains("sim"), "{runs}");
    // 2 cells x 2 tasks x 2 repetitions, each sample with its task's results.
    let rows = lab.samples();
    assert_eq!(rows.len(), 8);
    let rt = |r: &Value| -> Value {
        let extra: Value = serde_json::from_str(r["extra"].as_str().unwrap()).unwrap();
        extra["rt"].clone()
    };
    let tally = |key: &str, index: u64| -> (u64, u64, u64) {
        let r = rows
            .iter()
            .find(|r| r["cell_key"] == key && r["index"] == index && r["rep"] == 1)
            .unwrap();
        let t = rt(r);
        assert_eq!(t["source"], "sim");
        (t["jobs"].as_u64().unwrap(), t["met"].as_u64().unwrap(), t["misses"].as_u64().unwrap())
    };
    assert_eq!(tally("set/fifo-rm/n2", 0), (7, 7, 0));
    assert_eq!(tally("set/fifo-rm/n2", 1), (5, 4, 1));
    assert_eq!(tally("set/edf/n2", 0), (7, 7, 0));
    assert_eq!(tally("set/edf/n2", 1), (5, 5, 0));
    let late = rows.iter().find(|r| r["cell_key"] == "set/fifo-rm/n2" && r["index"] == 1).unwrap();
    assert_eq!(
        (rt(late)["response_max_ns"].as_u64(), rt(late)["lateness_max_ns"].as_i64()),
        (Some(8_000_000), Some(1_000_000))
    );
    assert_eq!(f(late, "work_units"), 5.0);
    // The cells carry the set's theory and scheduler, as measured cells do.
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    let cells = store.cells(run.id).unwrap();
    assert_eq!(cells.len(), 4);
    for c in &cells {
        let rt = c.rt.as_ref().unwrap_or_else(|| panic!("no rt for {}", c.params.key));
        assert!(c.params.key.contains(&rt.scheduler), "{} {}", c.params.key, rt.scheduler);
        assert_eq!((rt.cpu, rt.quantum_ns), (1, 1_000_000));
        assert!((rt.plain_utilisation - (2.0 / 5.0 + 4.0 / 7.0)).abs() < 1e-12);
    }
    // Simulated jobs are exported one by one, like measured ones: 2 cells x 2 repetitions x 12 jobs.
    let jobs: Vec<Value> =
        serde_json::from_str(&lab.ok(&["export", "--jobs", "--format", "json"])).unwrap();
    assert_eq!(jobs.len(), 4 * (7 + 5));
    assert!(jobs.iter().all(|j| j["source"] == "sim"));
    let missed: Vec<&Value> = jobs.iter().filter(|j| j["met"] == false).collect();
    assert_eq!(missed.len(), 2, "fifo-rm's one miss, in each repetition");
    assert!(missed.iter().all(|j| j["cell_key"] == "set/fifo-rm/n2" && j["lateness_us"].as_f64() == Some(1000.0)), "{missed:?}");
    let shown = lab.ok(&["show"]);
    assert!(shown.contains("(sim, complete)"), "{shown}");
}

/// The same periodic experiment measured and simulated: `report --compare` draws each cell's
/// response times of both runs in one figure.
#[test]
fn a_report_sets_measured_response_times_beside_simulated_ones() {
    let lab = Lab::new();
    let spec = lab.spec(
        "rt.toml",
        &RT_SET
            .replace("repetitions = 2", "repetitions = 1")
            .replace("duration_s = 0.035", "duration_s = 0.2")
            .replace("scheduler = [\"fifo-rm\", \"edf\"]", "scheduler = [\"other\"]"),
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    simulate(&lab, spec.to_str().unwrap(), &NO_COSTS);
    let out = lab.path("report");
    lab.ok(&["report", "1", "--compare", "2", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let section = &html[html
        .find("Response times, A against B")
        .expect("the comparison's response time figures")..];
    assert!(
        section.contains("Figure C1.") && !section.contains("Figure C2."),
        "one shared periodic cell"
    );
    assert!(
        section.contains("run 1 (measured): median")
            && section.contains("run 2 (simulated): median")
    );
    for ext in ["svg", "png"] {
        assert!(exists(&out.join(format!("figures/compare-rt-response-set_other_n2.{ext}"))));
    }
    // 0.2 s of T = 5 and 7 ms tasks: 40 + 28 jobs released, the simulated ones all finish.
    let simulated = &section[section.find("run 2 (simulated): median").unwrap()..];
    assert!(
        simulated.contains("68 finished jobs (+0 unfinished) over 1 repetition."),
        "{}",
        &simulated[..300.min(simulated.len())]
    );
}

/// fifo-rm's tasks are placed by RTA admission and edf's by C/T (issue 40 item 3), in the
/// simulation as `Periodic::placement` places them for the engine: (31, 70) does not fit
/// beside (20, 40) under RM although their C/T sum is 0.94 (on one CPU the first job of
/// (31, 70) would finish at 71), and on its placement RM misses nothing.
#[test]
fn fifo_rm_is_simulated_on_its_rta_placement() {
    let lab = Lab::new();
    let spec = lab.spec(
        "rta.toml",
        "name = \"rta\"\n[matrix]\nworkload = [\"w\"]\nscheduler = [\"fifo-rm\", \"edf\"]\n\
         [workloads.w]\nkind = \"periodic\"\ncpus = \"0-1\"\nduration_s = 2\nquantum_ms = 1\nwork_fraction = 1\n\
         tasks = [{ c_ms = 20, t_ms = 40 }, { c_ms = 31, t_ms = 70 }, { c_ms = 10, t_ms = 100 }]\n",
    );
    simulate(&lab, spec.to_str().unwrap(), &["--cpus", "2"]);
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    let cells = store.cells(run.id).unwrap();
    let cell = |key: &str| cells.iter().find(|c| c.params.key.starts_with(key)).unwrap();
    let rm = cell("w/fifo-rm");
    assert_eq!(rm.rt.as_ref().unwrap().task_cpus, [0, 1, 0]);
    assert_eq!(cell("w/edf").rt.as_ref().unwrap().task_cpus, [0, 0, 1]);
    assert_eq!(rm.samples.iter().map(|s| s.rt().unwrap().misses).sum::<u64>(), 0);
}

/// The canonical set (1.45 CPUs of demand) on one CPU and partitioned over two: the
/// simulator places the tasks as the engine does, and partitioned, every CPU's share is at
/// most 1, so DWCS misses nothing.
#[test]
fn a_partitioned_set_is_simulated_on_the_engines_placement() {
    let lab = Lab::new();
    let set = "name = \"part\"\n[matrix]\nworkload = [\"one\", \"two\"]\nscheduler = [\"dwcs\"]\n\
               [workloads.one]\nkind = \"periodic\"\ncpu = 1\nduration_s = 2\nTASKS\n\
               [workloads.two]\nkind = \"periodic\"\ncpus = \"0-1\"\nduration_s = 2\nTASKS\n";
    let tasks = "tasks = [{ c_ms = 10, t_ms = 20, x = 1, y = 2 }, { c_ms = 10, t_ms = 20, x = 1, y = 2 }, { c_ms = 10, t_ms = 40, x = 1, y = 3 }, { c_ms = 10, t_ms = 50 }]";
    let spec = lab.spec("part.toml", &set.replace("TASKS", tasks));
    simulate(&lab, spec.to_str().unwrap(), &["--cpus", "2"]);
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    let cells = store.cells(run.id).unwrap();
    let misses = |key: &str| -> u64 {
        let c = cells.iter().find(|c| c.params.key == key).unwrap_or_else(|| panic!("{key}"));
        c.samples.iter().map(|s| s.rt().unwrap().misses).sum()
    };
    let cell = |key: &str| cells.iter().find(|c| c.params.key == key).unwrap().rt.clone().unwrap();
    assert_eq!((cell("one/dwcs/n4").cpu, cell("one/dwcs/n4").task_cpus), (1, vec![1; 4]));
    assert_eq!(
        (cell("two/dwcs/n4").cpu, cell("two/dwcs/n4").task_cpus),
        (u32::MAX, vec![0, 0, 1, 1])
    );
    // Each CPU's feasibility test is stored with the partitioned cell: C/T 0.5 + 0.5 on CPU 0,
    // 0.25 + 0.2 on CPU 1; minimum utilisation (1 - 1/2) of each on CPU 0, 2/3 x 0.25 + 0.2 on CPU 1.
    let theory: Vec<(u32, f64, f64, bool)> = cell("two/dwcs/n4")
        .cpu_theory
        .iter()
        .map(|t| (t.cpu, t.plain_utilisation, t.min_utilisation, t.guaranteed))
        .collect();
    assert_eq!(theory.len(), 2, "{theory:?}");
    assert!(
        (theory[0].1 - 1.0).abs() < 1e-12 && (theory[0].2 - 0.5).abs() < 1e-12 && theory[0].3,
        "{theory:?}"
    );
    assert!(
        (theory[1].1 - 0.45).abs() < 1e-12
            && (theory[1].2 - (0.25 * 2.0 / 3.0 + 0.2)).abs() < 1e-12
            && theory[1].3,
        "{theory:?}"
    );
    assert!(cell("one/dwcs/n4").cpu_theory.is_empty(), "one CPU: the cell's own test");
    // One CPU: 290 one-quantum jobs in 2 s (100 + 100 + 50 + 40) for 200 quanta, so DWCS
    // drops 90 by the windows; partitioned, none.
    assert_eq!(misses("one/dwcs/n4"), 90);
    assert_eq!(misses("two/dwcs/n4"), 0);
    // `show` splits the partitioned cell by CPU (one row each), not the one on one CPU.
    let show = lab.ok(&["show"]);
    let rows = per_cpu_rows(&show);
    assert_eq!(rows.len(), 2, "{show}");
    assert!(
        rows.iter().all(|r| r.contains("two") && r.contains("dwcs") && !r.contains("one")),
        "{rows:?}"
    );
    // The engine's placement needs CPUs the simulation has.
    let out =
        lab.run(&["simulate", spec.to_str().unwrap(), "-q", "--cpus", "1", RATES[0], RATES[1]]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("pinned to CPU 1, but the simulation has 1 CPUs"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn periodic_sets_the_simulator_cannot_model_are_refused() {
    let lab = Lab::new();
    let spec = lab.spec("rt.toml", &RT_SET.replace("work_fraction = 1.0", "body = \"read\""));
    let out = lab.run(&["simulate", spec.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("body = \"read\"") && err.contains("no model of that I/O time"), "{err}");
    assert!(err.contains("--skip-unsupported"), "{err}");
    assert!(!exists(&lab.db()));
}

#[test]
fn a_database_opened_beside_the_simulation_still_reports_in_order_and_fails_cleanly() {
    // The database is opened on another thread while the first cell is simulated: the run's
    // announcement still comes before the first cell's line, and a database that cannot be
    // opened still fails the command (exit 1) with the reason.
    let lab = Lab::new();
    let spec =
        lab.spec("p.toml", "name = \"p\"\n[matrix]\nworkload = [\"pi\"]\nprocesses = [1, 2]\n");
    let mut args = vec!["simulate", spec.to_str().unwrap()];
    args.extend(RATES);
    let out = lab.run(&args);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let at = |s: &str| err.find(s).unwrap_or_else(|| panic!("{s} in {err}"));
    assert!(at("run 1: simulating p") < at("[1/2]") && at("[1/2]") < at("[2/2]"), "{err}");

    let other = Lab::new();
    std::fs::create_dir(other.db()).unwrap();
    let spec =
        other.spec("p.toml", "name = \"p\"\n[matrix]\nworkload = [\"pi\"]\nprocesses = [1, 2]\n");
    let mut args = vec!["simulate", spec.to_str().unwrap()];
    args.extend(RATES);
    let out = other.run(&args);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot open the results database"), "{err}");
    assert!(!err.contains("[1/2]"), "{err}");
}

/// A knob sweep simulated beside its measurement (issue #20): the RR slice a cell sets is
/// the simulated RR quantum, in whole ticks as the kernel keeps it.
#[test]
fn a_swept_rr_slice_is_the_simulated_quantum() {
    let lab = Lab::new();
    let spec = lab.spec(
        "rr.toml",
        "name = \"rr\"\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"rr\"]\nprocesses = [8]\n[matrix.knobs]\n\"kernel.sched_rr_timeslice_ms\" = [5, 100]\n[workloads.cpu]\nkind = \"pi\"\niterations = 60000000\n",
    );
    simulate(&lab, spec.to_str().unwrap(), &["--cpus", "2", "--fair-slice-us", "3500"]);
    let rows = lab.samples();
    let of = |slice: &str| -> (f64, Value) {
        let mine: Vec<&Value> = rows
            .iter()
            .filter(|r| {
                r["cell_key"] == format!("cpu/rr/n8/sched_rr_timeslice_ms={slice}").as_str()
            })
            .collect();
        assert_eq!(mine.len(), 8, "{slice}");
        let invol: f64 = mine.iter().map(|r| f(r, "involuntary_csw")).sum();
        let extra: Value = serde_json::from_str(mine[0]["extra"].as_str().unwrap()).unwrap();
        (invol, extra["sim"]["model"].clone())
    };
    let ((short, m5), (long, m100)) = (of("5"), of("100"));
    // 5 ms is 2 ticks of 4 ms (the model's 2 ms lateness is half a tick): 8 ms turns.
    assert_eq!(
        (m5["rr_quantum_ns"].as_u64(), m100["rr_quantum_ns"].as_u64()),
        (Some(8_000_000), Some(100_000_000))
    );
    // 60 ms of work each: 7 turns end by the slice at 8 ms, none at 100 ms.
    assert_eq!((short, long), (8.0 * 7.0, 0.0));
    let show = lab.ok(&["show"]);
    assert!(show.contains("sched_rr_timeslice_ms"), "{show}");
}

/// SimSo's 10-task set (U = 1.6 on 2 CPUs) under global EDF with CBS for 30 s: 7 hyperperiods
/// of 4.2 s. By default the hyperperiods that repeat one already simulated are skipped;
/// `--every-cycle` simulates each. Both store the same jobs and the same samples.
#[test]
fn skipping_repeated_hyperperiods_stores_what_simulating_every_one_stores() {
    let lab = Lab::new();
    let spec = lab.spec(
        "simso.toml",
        "name = \"simso-set\"\n[matrix]\nworkload = [\"set\"]\nscheduler = [\"deadline\"]\n\
         [workloads.set]\nkind = \"periodic\"\nduration_s = 30\nwork_fraction = 1.0\ntasks = [\n\
         { c_ms = 1, t_ms = 5 }, { c_ms = 1, t_ms = 7 }, { c_ms = 2, t_ms = 10 }, { c_ms = 2, t_ms = 12 },\n\
         { c_ms = 3, t_ms = 15 }, { c_ms = 3, t_ms = 20 }, { c_ms = 4, t_ms = 25 }, { c_ms = 4, t_ms = 30 },\n\
         { c_ms = 5, t_ms = 40 }, { c_ms = 6, t_ms = 50 },\n]\n",
    );
    let spec = spec.to_str().unwrap();
    simulate(&lab, spec, &["--cpus", "2", "--switch-cost-us", "0", "--migration-cost-us", "0"]);
    simulate(
        &lab,
        spec,
        &["--cpus", "2", "--switch-cost-us", "0", "--migration-cost-us", "0", "--every-cycle"],
    );
    let strip = |text: String| -> Vec<Value> {
        let mut rows: Vec<Value> = serde_json::from_str(&text).unwrap();
        for r in &mut rows {
            let o = r.as_object_mut().unwrap();
            o.retain(|k, _| {
                !k.starts_with("run") && !k.ends_with("_id") && k != "id" && k != "started_at"
            });
        }
        rows
    };
    let (jobs1, jobs2) = (
        strip(lab.ok(&["export", "1", "--jobs", "--format", "json"])),
        strip(lab.ok(&["export", "2", "--jobs", "--format", "json"])),
    );
    // The jobs due by 30 s: 6,000 + 4,285 + 3,000 + 2,500 + 2,000 + 1,500 + 1,200 + 1,000 + 750 + 600.
    assert_eq!(jobs1.len(), 22_835);
    assert!(jobs1.iter().all(|j| j["met"] == true));
    assert!(jobs1 == jobs2, "the jobs differ");
    let (rows1, rows2) = (
        strip(lab.ok(&["export", "1", "--format", "json"])),
        strip(lab.ok(&["export", "2", "--format", "json"])),
    );
    assert_eq!(rows1.len(), 10);
    for (a, b) in rows1.iter().zip(&rows2) {
        for (k, v) in a.as_object().unwrap() {
            if k == "extra" {
                // The model's parameters are stored with each sample, the choice included.
                let every = b[k].as_str().unwrap();
                assert!(every.contains(",\"every_cycle\":true"), "{every}");
                assert_eq!(v.as_str().unwrap(), every.replace(",\"every_cycle\":true", ""));
            } else {
                assert_eq!(v, &b[k], "{k}");
            }
        }
    }
}
