//! Many generated sets per cell (issue #32): `simulate` runs them in parallel, stores one
//! row per set, gives the same rows whatever the thread count, and after Ctrl-C `--resume`
//! finishes the batch with the rows an uninterrupted run gives.

use crate::util::Lab;
use std::time::{Duration, Instant};

fn batch_spec(sets: u32, schedulers: &str, utilisations: &str, duration_s: f64) -> String {
    format!(
        r#"name = "batch"
repetitions = 1
[matrix]
workload = ["set"]
scheduler = [{schedulers}]
utilisation = [{utilisations}]
[workloads.set]
kind = "periodic"
duration_s = {duration_s}
quantum_ms = 1
work_fraction = 1
cpu = 0
generate = {{ tasks = 6, min_period_ms = 10, max_period_ms = 100, measure = "plain", x = 1, y = 2, seed = 11, sets = {sets} }}
"#
    )
}

/// Every stored set of run `run`, one line each, without the run id.
fn rows(lab: &Lab, run: i64) -> Vec<String> {
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    let mut st = db
        .prepare(
            "SELECT cell_id, set_index, seed, scheduler, utilisation, plain_utilisation, min_utilisation, cpus, tasks_json, jobs, misses, violations, schedulable, tests_json, message
             FROM task_sets WHERE run_id = ?1 ORDER BY cell_id, set_index",
        )
        .unwrap();
    let out = st
        .query_map([run], |r| {
            let cols: Vec<String> = (0..15)
                .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                .collect();
            Ok(cols.join("|"))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    out
}

fn stored_sets(lab: &Lab) -> i64 {
    let Ok(db) = rusqlite::Connection::open(lab.db()) else { return 0 };
    db.query_row("SELECT COUNT(*) FROM task_sets", [], |r| r.get(0)).unwrap_or(0)
}

#[test]
fn batch_results_are_the_same_with_one_and_two_threads() {
    let lab = Lab::new();
    let spec = lab.spec("b.toml", &batch_spec(40, r#""fifo-rm", "dwcs""#, "0.7, 1.0", 1.0));
    let spec = spec.to_str().unwrap();
    lab.ok(&["simulate", spec, "-q", "--cpus", "1", "--threads", "1"]);
    lab.ok(&["simulate", spec, "-q", "--cpus", "1", "--threads", "2"]);
    let (one, two) = (rows(&lab, 1), rows(&lab, 2));
    assert_eq!(one.len(), 2 * 2 * 40, "every set of every cell stored once");
    assert_eq!(one, two);
    // The sets differ from each other, and every scheduler got the same sets at a point.
    let tasks = |r: &String| r.split('|').nth(8).unwrap().to_string();
    assert_ne!(tasks(&one[0]), tasks(&one[1]));
    let at = |sched: &str, u: &str| -> Vec<String> {
        one.iter()
            .filter(|r| r.contains(&format!("Text(\"{sched}\")|Real({u})")))
            .map(tasks)
            .collect()
    };
    assert_eq!(at("fifo-rm", "0.7").len(), 40);
    assert_eq!(at("fifo-rm", "0.7"), at("dwcs", "0.7"));
    assert_ne!(at("fifo-rm", "0.7"), at("fifo-rm", "1.0"));
    // show and export give the acceptance curves; export --per set a row per set.
    let shown = lab.ok(&["show", "1"]);
    assert!(shown.contains("rta-rm") && shown.contains("weighted"), "{shown}");
    let curves = lab.ok(&["export", "1", "--per", "acceptance", "--format", "json"]);
    let curves: Vec<serde_json::Value> = serde_json::from_str(&curves).unwrap();
    let rm = curves.iter().find(|c| c["name"] == "fifo-rm" && c["utilisation"] == 0.7).unwrap();
    assert_eq!(rm["sets"], 40);
    let sets = lab.ok(&["export", "1", "--per", "set"]);
    assert_eq!(sets.lines().count(), 1 + 2 * 2 * 40, "a header and a row per set");
    assert!(sets.lines().next().unwrap().contains("test_edf-qpa"));
}

/// `export --per set` carries each twin's verdict beside its plain test's (issue 40), as
/// `test_<test>+overheads`; the twins charge the simulator's switch cost, so a set a twin
/// accepts ran without a miss, and the plain test accepts it too.
#[test]
fn export_per_set_carries_the_twins_verdicts_beside_the_plain_ones() {
    let lab = Lab::new();
    let spec = lab.spec("b.toml", &batch_spec(30, r#""fifo-rm", "edf""#, "0.7, 1.0", 1.0));
    lab.ok(&["simulate", spec.to_str().unwrap(), "-q", "--cpus", "1"]);
    let sets = lab.ok(&["export", "1", "--per", "set", "--format", "json"]);
    let sets: Vec<serde_json::Value> = serde_json::from_str(&sets).unwrap();
    assert_eq!(sets.len(), 2 * 2 * 30);
    let mut accepted = 0;
    for row in &sets {
        for (plain, twin) in [("rta-rm", "rta-rm+overheads"), ("edf-qpa", "edf-qpa+overheads")] {
            let (p, t) = (&row[format!("test_{plain}")], &row[format!("test_{twin}")]);
            assert!(p.is_string() && t.is_string(), "{row}");
            if t == "yes" {
                assert_eq!(p, "yes", "{row}");
                accepted += 1;
                if (row["scheduler"] == "fifo-rm") == (plain == "rta-rm") {
                    assert_eq!(row["schedulable"], true, "{twin} accepts a set that missed: {row}");
                }
            }
        }
    }
    assert!(accepted > 30, "the twins accepted {accepted} verdicts");
}

/// Issue 40's property on the whole pipeline: 3,240 generated sets (6 tasks, periods 10 to
/// 100 ms, U = 0.5 to 1.0) simulated under fifo-rm and fifo-dm with the default switch
/// cost, the jobs taking all of C. The plain RTA accepts sets that then miss (90 of them
/// when this was written); no set its twin accepts misses, and at U <= 0.8 the twin accepts
/// at least 90% of the sets the simulation schedules (all of them when this was written).
#[test]
fn no_generated_set_a_twin_accepts_misses_in_simulation() {
    let lab = Lab::new();
    let spec = batch_spec(270, r#""fifo-rm", "fifo-dm""#, "0.5, 0.6, 0.7, 0.8, 0.9, 1.0", 1.0)
        .replace("x = 1, y = 2, ", "");
    let spec = lab.spec("b.toml", &spec);
    lab.ok(&["simulate", spec.to_str().unwrap(), "-q", "--cpus", "1"]);
    let sets = lab.ok(&["export", "1", "--per", "set", "--format", "json"]);
    let sets: Vec<serde_json::Value> = serde_json::from_str(&sets).unwrap();
    assert_eq!(sets.len(), 3240);
    let (mut scheduled, mut accepted, mut rejected, mut plain_missed) = (0, 0, 0, 0);
    for row in &sets {
        let test = if row["scheduler"] == "fifo-rm" { "rta-rm" } else { "rta-dm" };
        let twin = row[format!("test_{test}+overheads")] == "yes";
        plain_missed +=
            usize::from(row[format!("test_{test}")] == "yes" && row["schedulable"] == false);
        assert!(
            !twin || row["schedulable"] == true,
            "{test}+overheads accepts a set that missed: {row}"
        );
        rejected += usize::from(!twin);
        if row["schedulable"] == true && row["utilisation"].as_f64().unwrap() <= 0.8 + 1e-9 {
            scheduled += 1;
            accepted += usize::from(twin);
        }
    }
    assert!(rejected > 100, "the twins rejected only {rejected} sets");
    assert!(plain_missed > 30, "the plain tests accepted only {plain_missed} sets that missed");
    assert!(accepted * 10 >= scheduled * 9, "accepted {accepted} of {scheduled} at U <= 0.8");
}

#[test]
fn an_interrupted_batch_resumes_to_the_uninterrupted_result() {
    let lab = Lab::new();
    let spec = lab.spec("b.toml", &batch_spec(5000, r#""fifo-dm""#, "0.9", 1.0));
    let spec = spec.to_str().unwrap();
    let mut child = lab
        .cmd(&["simulate", spec, "-q", "--cpus", "1", "--threads", "1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while stored_sets(&lab) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no set was stored");
        assert!(child.try_wait().unwrap().is_none(), "finished before it could be interrupted");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "stopped by SIGINT: {stderr}");
    let kept = stored_sets(&lab);
    assert!(kept > 0 && kept < 5000, "{kept} sets stored");
    assert!(lab.ok(&["runs"]).contains("interrupted"));
    let hint = stderr.split('`').nth(1).unwrap_or_else(|| panic!("no command in: {stderr}"));
    assert!(hint.contains("simulate") && hint.contains("--resume"), "{hint}");
    // Another model would not give the rows the stored ones were simulated with.
    let other = lab.paste(hint, &["--cpus", "2"]);
    assert_eq!(other.status.code(), Some(2), "{}", String::from_utf8_lossy(&other.stderr));
    assert!(String::from_utf8_lossy(&other.stderr).contains("was simulated with the model"));
    assert_eq!(stored_sets(&lab), kept);
    let out = lab.paste(hint, &["--cpus", "1", "--threads", "2"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{hint}: {said}");
    assert!(said.contains(&format!("({kept} stored before)")), "{said}");
    assert!(lab.ok(&["runs"]).contains("complete"));
    // Nothing to resume now.
    assert_eq!(lab.run(&["simulate", spec, "--resume", "-q"]).status.code(), Some(2));
    lab.ok(&["simulate", spec, "-q", "--cpus", "1", "--threads", "2"]);
    let (resumed, whole) = (rows(&lab, 1), rows(&lab, 2));
    assert_eq!(resumed.len(), 5000);
    assert_eq!(resumed, whole);
}

/// The shipped experiment `name`, parsed, with its path.
fn shipped(name: &str) -> (String, schedlab_spec::Spec) {
    let file = format!("{}/experiments/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read(&file).unwrap();
    let spec = schedlab_spec::decode(&file, &text)
        .and_then(|t| schedlab_spec::parse(&file, t))
        .unwrap_or_else(|e| panic!("{e}"));
    (file, spec)
}

#[test]
fn the_schedulability_example_parses_and_checks() {
    let (file, spec) = shipped("schedulability");
    let file = file.as_str();
    assert_eq!(spec.plan.cells.len(), 10 * 11, "10 workloads x 11 utilisations");
    for c in &spec.plan.cells {
        let p = c.primary().workload.periodic().unwrap();
        let b = p.batch.unwrap_or_else(|| panic!("{} has no batch", c.key));
        assert_eq!((b.sets, b.hyperperiod, p.tasks.len()), (1000, true, 8), "{}", c.key);
    }
    let lab = Lab::new();
    let out = lab.run(&["check", file]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1000 generated sets per cell"), "{text}");
    if crate::util::is_root() {
        assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Sets of 4 tasks with every period 10 ms (hyperperiod 10 ms), simulated for 1 s.
fn short_periods(extra: &str) -> String {
    format!(
        r#"name = "hp"
repetitions = 1
[matrix]
workload = ["set"]
scheduler = ["edf"]
utilisation = [0.5]
[workloads.set]
kind = "periodic"
duration_s = 1
quantum_ms = 1
cpu = 0
generate = {{ tasks = 4, min_period_ms = 10, max_period_ms = 10, measure = "plain", seed = 3, sets = 3{extra} }}
"#
    )
}

fn column(lab: &Lab, sql: &str) -> Vec<rusqlite::types::Value> {
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    let mut st = db.prepare(sql).unwrap();
    let rows = st.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn a_batch_keeps_per_job_records_only_when_asked() {
    use rusqlite::types::Value::{Integer, Null};
    let lab = Lab::new();
    let plain = lab.spec("a.toml", &short_periods(""));
    lab.ok(&["simulate", plain.to_str().unwrap(), "-q", "--cpus", "1"]);
    assert_eq!(
        column(&lab, "SELECT jobs_json FROM task_sets WHERE run_id = 1"),
        [Null, Null, Null]
    );
    assert_eq!(column(&lab, "SELECT count(*) FROM jobs"), [Integer(0)], "nor the cell's set 0");
    let kept = lab.spec("b.toml", &short_periods(", job_records = true"));
    lab.ok(&["simulate", kept.to_str().unwrap(), "-q", "--cpus", "1"]);
    let logs = column(&lab, "SELECT jobs_json FROM task_sets WHERE run_id = 2");
    assert!(logs.iter().all(|l| matches!(l, rusqlite::types::Value::Text(_))), "{logs:?}");
    assert_ne!(column(&lab, "SELECT count(*) FROM jobs"), [Integer(0)]);
}

#[test]
fn a_batch_simulates_each_set_over_its_hyperperiod_when_asked() {
    let lab = Lab::new();
    let whole = lab.spec("a.toml", &short_periods(""));
    lab.ok(&["simulate", whole.to_str().unwrap(), "-q", "--cpus", "1"]);
    let cut = lab.spec("b.toml", &short_periods(", horizon = \"hyperperiod\""));
    lab.ok(&["simulate", cut.to_str().unwrap(), "-q", "--cpus", "1"]);
    let jobs = |run: i64| {
        column(&lab, &format!("SELECT jobs FROM task_sets WHERE run_id = {run} ORDER BY set_index"))
    };
    use rusqlite::types::Value::Integer;
    // 4 tasks x 100 periods of 10 ms in 1 s; over the 10 ms hyperperiod, one job each.
    assert_eq!(jobs(1), [Integer(400), Integer(400), Integer(400)]);
    assert_eq!(jobs(2), [Integer(4), Integer(4), Integer(4)]);
}

#[test]
fn a_batch_the_simulator_cannot_model_stores_no_sets() {
    let lab = Lab::new();
    let text =
        short_periods("").replace("kind = \"periodic\"", "kind = \"periodic\"\nbody = \"read\"");
    let spec = lab.spec("r.toml", &text);
    let spec = spec.to_str().unwrap();
    assert_eq!(lab.run(&["simulate", spec, "-q", "--cpus", "1"]).status.code(), Some(2));
    lab.ok(&["simulate", spec, "-q", "--cpus", "1", "--skip-unsupported"]);
    use rusqlite::types::Value::Integer;
    assert_eq!(column(&lab, "SELECT count(*) FROM task_sets"), [Integer(0)]);
    assert_eq!(column(&lab, "SELECT count(*) FROM cells WHERE status != 'ok'"), [Integer(1)]);
}

#[test]
fn live_sets_are_measured_beside_their_batch_and_drawn_on_its_curves() {
    crate::require!(crate::util::is_root(), "periodic sets under fifo-rm need root");
    // The real-time cells would disturb the timing tests: take turns with them.
    let _serial = crate::util::measuring();
    let lab = Lab::new();
    let text = batch_spec(12, r#""fifo-rm""#, "0.5, 0.9", 0.4)
        .replace("seed = 11, sets = 12 }", "seed = 11, sets = 12, live = 3 }");
    let spec = lab.spec("live.toml", &text);
    let spec = spec.to_str().unwrap();
    // `check` names the cells `run` measures: set 0 under the cell's key, sets 1 and 2 beside it.
    let plan = lab.ok(&["check", spec]);
    assert!(plan.contains("`run` measures sets 0 to 2"), "{plan}");
    for k in ["set/fifo-rm/utilisation=0.5/n6 ", "set/fifo-rm/utilisation=0.5/n6/set=2 "] {
        assert!(plan.contains(k), "{k}: {plan}");
    }
    lab.ok(&["run", spec, "-q"]);
    lab.ok(&["simulate", spec, "-q", "--cpus", "1"]);
    // Each measured cell is the batch's set of that index: the same tasks as its stored row.
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    let measured: Vec<(String, i64)> = db
        .prepare(
            "SELECT key, json_extract(groups_json, '$[0].set') FROM cells WHERE run_id = 1 ORDER BY cell_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(measured.len(), 6, "3 live sets at each of 2 utilisations: {measured:?}");
    assert_eq!(measured[1], ("set/fifo-rm/utilisation=0.5/n6/set=1".into(), 1));
    let set_tasks = |run: i64, key: &str| -> String {
        let sql = "SELECT count(*) FROM cells WHERE run_id = ?1 AND key = ?2";
        assert_eq!(db.query_row(sql, (run, key), |r| r.get::<_, i64>(0)).unwrap(), 1, "{key}");
        let plan: String =
            db.query_row("SELECT plan_json FROM runs WHERE id = ?1", [run], |r| r.get(0)).unwrap();
        let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
        let cell = plan["cells"].as_array().unwrap().iter().find(|c| c["key"] == key).unwrap();
        cell["groups"][0]["workload"]["tasks"].to_string()
    };
    let stored: String = db
        .query_row(
            "SELECT tasks_json FROM task_sets WHERE run_id = 2 AND set_index = 2 AND utilisation = 0.9",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let live = set_tasks(1, "set/fifo-rm/utilisation=0.9/n6/set=2");
    // (C, T) of each task: the plan's tasks are objects, the stored set's [C, T, D, x, y].
    let ct =
        |json: &str| -> Vec<(u64, u64)> {
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            let n = |x: &serde_json::Value| x.as_u64().unwrap();
            let tasks = v.as_array().unwrap().iter();
            tasks
                .map(|t| {
                    if t.is_array() {
                        (n(&t[0]), n(&t[1]))
                    } else {
                        (n(&t["c_ns"]), n(&t["t_ns"]))
                    }
                })
                .collect()
        };
    assert_eq!(ct(&live), ct(&stored), "live set 2 is the batch's set 2:\n{live}\n{stored}");
    assert_eq!(ct(&live).len(), 6, "{live}");
    // The report of the simulation, compared with the measured run, draws the measured sets
    // on the acceptance curves and says how each fared both ways.
    let out = lab.path("report");
    lab.ok(&["report", "2", "--compare", "1", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(out.join("figures/acceptance-measured-1cpu.svg").exists(), "{html}");
    for u in ["0.5", "0.9"] {
        let line = format!("set/fifo-rm, run 1 (measured) at {u}: measured ");
        let at = html.find(&line).unwrap_or_else(|| panic!("{line}: {html}"));
        assert!(html[at + line.len()..].starts_with(|c: char| c.is_ascii_digit()), "{html}");
        assert!(html[at..].contains("/3, simulated "), "three sets at {u}: {html}");
    }
}

/// A stored calibration with the figures `(name, p99 ns)` (every other percentile 0).
fn calibration_json(figures: &[(&str, u64)]) -> String {
    let overheads: Vec<serde_json::Value> = figures
        .iter()
        .map(|(name, p99)| {
            let ns = serde_json::json!({"samples": 1, "overflow": 0, "min_ns": 0, "p50_ns": 0,
                "p90_ns": 0, "p99_ns": p99, "p999_ns": 0, "max_ns": 0, "mean_ns": 0.0});
            serde_json::json!({"name": name, "what": "", "ns": ns})
        })
        .collect();
    serde_json::json!({"created_unix": 0.0, "cpu": 0, "overheads": overheads,
        "tick_period_ns": null, "rt_share": {"runtime_us": 950000, "period_us": 1000000},
        "fair_server": null, "run_id": null, "percentile": 99.0, "notes": []})
    .to_string()
}

/// Issue 40, item 4: `show` of a live run of generated sets prints the knee of each
/// (scheduler, family) four ways over the sets it measured, and the issue's two conditions.
#[test]
fn show_prints_the_knees_of_a_live_run_of_generated_sets() {
    crate::require!(crate::util::is_root(), "periodic sets under fifo-rm and edf need root");
    let _serial = crate::util::measuring();
    let lab = Lab::new();
    let text = batch_spec(4, r#""fifo-rm", "edf""#, "0.5, 0.9", 0.5)
        .replace("seed = 11, sets = 4 }", "seed = 11, sets = 4, live = 2 }");
    let spec = lab.spec("knee.toml", &text);
    let spec = spec.to_str().unwrap();
    lab.ok(&["run", spec, "-q"]);
    // Before a simulation and a calibration, the knees say what is missing.
    let shown = lab.ok(&["show", "1"]);
    assert!(shown.contains("no simulated run of this spec"), "{shown}");
    assert!(shown.contains("no calibration (`schedlab calibrate`)"), "{shown}");
    lab.ok(&["simulate", spec, "-q", "--cpus", "1"]);
    // A dispatcher whose decision takes 980 µs of each 1 ms quantum (with 2 x 5 µs of
    // switches, 10 µs are left) serves a job in a hundred times its C: the edf twin
    // rejects every set, so its knee is the lowest utilisation, whatever the machine measured.
    let json = calibration_json(&[
        ("release_latency", 30_000),
        ("context_switch", 5_000),
        ("decision_cost_edf", 980_000),
    ]);
    // Taken two hours before the run, on another CPU: said under the table.
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    let (started, env): (f64, String) = db
        .query_row("SELECT started_unix, env_json FROM runs WHERE id = 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let mut env: serde_json::Value = serde_json::from_str(&env).unwrap();
    let cpu = env["cpu_model"].as_str().unwrap().to_string();
    env["cpu_model"] = "Other CPU".into();
    let mut json: serde_json::Value = serde_json::from_str(&json).unwrap();
    json["created_unix"] = (started - 7200.0).into();
    json["environment"] = env;
    db.execute(
        "INSERT INTO calibrations (created_unix, machine_json, calibration_json) VALUES (0, '{}', ?1)",
        [&json.to_string()],
    )
    .unwrap();
    let shown = lab.ok(&["show", "1"]);
    assert!(shown.contains("note: calibration 1 was taken 2.0 h before run 1 began"), "{shown}");
    assert!(
        shown.contains(&format!(
            "note: calibration 1 was measured on another machine or kernel than run 1 (CPU: Other CPU vs {cpu})"
        )),
        "{shown}"
    );
    assert!(
        shown.contains(
            "measured in run 1, simulated in run 2, the plain test, its twin with calibration 1"
        ),
        "{shown}"
    );
    let row = |scheduler: &str| {
        let at = shown.find(&format!("│ {scheduler} ")).unwrap_or_else(|| panic!("{shown}"));
        shown[at..].lines().next().unwrap().to_string()
    };
    let (rm, edf) = (row("fifo-rm"), row("edf"));
    assert!(rm.contains("(rta-rm)") && rm.contains("(rta-rm+overheads)"), "{rm}");
    // Two live sets at each of two utilisations, all judged four ways.
    assert!(edf.contains(" 4 ┆"), "{edf}");
    assert!(edf.contains("0.5 (edf-dispatcher+overheads)"), "{edf}");
    assert!(!rm.contains(" - ") && !edf.contains(" - "), "every method judged:\n{rm}\n{edf}");
    assert!(shown.contains("no set a +overheads twin accepts misses when measured: "), "{shown}");
    assert!(shown.contains("of the (scheduler, family) pairs: "), "{shown}");
    // `export --per set` of the live run: each set with the plain test's and the twin's
    // verdicts beside the measured and simulated ones.
    let csv = lab.ok(&["export", "1", "--per", "set", "--format", "csv"]);
    let mut lines = csv.lines();
    let header =
        "run,scheduler,family,utilisation,set,measured,simulated,plain_test,plain,twin_test,twin";
    assert_eq!(lines.next(), Some(header), "{csv}");
    assert_eq!(lines.clone().count(), 8, "{csv}");
    assert!(lines.any(|l| l.contains(",edf-dispatcher+overheads,no")), "{csv}");
    // The report draws each pair's four acceptance curves side by side.
    let out = lab.path("report");
    lab.ok(&["report", "1", "-o", out.to_str().unwrap()]);
    for pair in ["fifo-rm-set", "edf-set"] {
        assert!(out.join(format!("figures/knee-{pair}.svg")).exists(), "{pair}");
    }
    // And warns, as `show` does, of the calibration's age and machine.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("calibration 1 was taken 2.0 h before run 1 began"), "{html}");
    assert!(html.contains("(CPU: Other CPU vs "), "{html}");
}

/// Issue 40, item 4: experiments/knee.toml measures the same sets under every scheduler, a
/// few per point, two families from 0.5 to 1.0, and its live run fits in 15 minutes.
#[test]
fn the_knee_example_runs_the_same_sets_under_each_scheduler_in_fifteen_minutes() {
    let (_, spec) = shipped("knee");
    let cells: Vec<(&str, &schedlab_spec::Periodic)> = spec
        .plan
        .cells
        .iter()
        .map(|c| (c.primary().workload_name.as_str(), c.primary().workload.periodic().unwrap()))
        .collect();
    // 2 families x 3 schedulers x 11 utilisations x 3 live sets.
    assert_eq!(cells.len(), 2 * 3 * 11 * 3);
    let live_s: f64 = cells.iter().map(|(_, p)| p.duration_ns as f64 / 1e9).sum();
    assert!(live_s <= 14.0 * 60.0, "{live_s} s of live cells");
    for (family, p) in &cells {
        assert!(p.batch.is_none_or(|b| (b.sets, b.live) == (1000, 3)), "{family}");
        assert_eq!((p.cpus.len(), p.work_ppm, p.quantum_ns), (0, 1_000_000, 1_000_000));
        // Set i at U is the same tasks under every scheduler.
        let same = |q: &schedlab_spec::Periodic| {
            q.utilisation == p.utilisation && q.set_index() == p.set_index()
        };
        for (g, q) in cells.iter().filter(|(g, q)| g == family && same(q)) {
            assert_eq!(q.tasks, p.tasks, "{g} at {:?}", p.utilisation);
        }
        let u: f64 = p.tasks.iter().map(|t| t.c_ns as f64 / t.t_ns as f64).sum();
        assert!((u - p.utilisation.unwrap()).abs() <= 0.02, "{family}: {u} for {p:?}");
    }
    let schedulers: std::collections::BTreeSet<&str> =
        cells.iter().map(|(_, p)| p.scheduler.name()).collect();
    assert_eq!(schedulers.into_iter().collect::<Vec<_>>(), ["deadline", "edf", "fifo-rm"]);
}
