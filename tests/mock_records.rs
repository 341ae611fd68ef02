//! Store, analysis and report on the step loop's own records: `schedlab_runner::Run`
//! driven by `MockExecutor` (made-up samples, judged by the engine's verdict) stores through
//! the store, and the CLI reads the run back. No root and no time: every figure is known in
//! advance (worker i: wall 1 + i/2 s, user 0.75 s, 10 + i blocked, 2i preempted).

use crate::util::Lab;
use schedlab_model::{Environment, Mode};
use schedlab_runner::{Ending, FixedSteps, MockExecutor, Options, Quiet, Run};
use schedlab_store::{NewRun, Store};
use serde_json::Value;

/// pi under other and fifo, 2 measured workers beside one background worker, one warm-up
/// and three repetitions: steps 0-3 are cell 0's (warm-up first), 4-7 cell 1's.
const SPEC: &str = "name = \"mock\"\nrepetitions = 3\nwarmup = 1\n\
    [matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"fifo\"]\nprocesses = [2]\n\
    [groups.bg]\nworkload = \"cpu\"\nbackground = true\n\
    [workloads.cpu]\nkind = \"pi\"\niterations = 1000\n";

/// Runs [`SPEC`]'s steps with `mock` into the lab's database as a new run; returns its id.
fn store_mock_run(lab: &Lab, mock: &mut MockExecutor) -> i64 {
    let spec = schedlab_spec::parse_at("mock.toml", SPEC, lab.dir.path()).unwrap();
    let plan = &spec.plan;
    let mut store = Store::open(&lab.db()).unwrap();
    let env = Environment {
        kernel: "6.1.0-mock".into(),
        cpu_model: "Mock CPU".into(),
        cpus: 2,
        ..Default::default()
    };
    let id = store
        .create_run(&NewRun {
            name: &plan.name,
            mode: Mode::Measured,
            spec_path: "mock.toml",
            spec_text: SPEC,
            spec_hash: &spec.hash,
            plan_json: &serde_json::to_string(plan).unwrap(),
            scale: 1.0,
            env: &env,
            command_line: "mock",
        })
        .unwrap();
    let mut journal = schedlab_sys::journal::Journal::create(&lab.path("state")).unwrap();
    // Never raise this test process to SCHED_FIFO: nothing runs that would need it.
    let opts = Options {
        dir: Some(lab.path("exp")),
        engine_rt: false,
        tag: id.to_string(),
        ..Options::default()
    };
    std::fs::create_dir(lab.path("exp")).unwrap();
    let mut sink = |rec: &schedlab_model::CellRecord| -> Result<(), schedlab_runner::SinkError> {
        store.insert_cell(id, rec)?;
        Ok(())
    };
    let steps = plan.steps();
    let mut source = FixedSteps::new(&steps);
    let ending = Run::start(plan, &mut source, opts, &mut journal, &mut Quiet)
        .unwrap()
        .run(mock, &mut sink)
        .unwrap();
    assert_eq!(ending, Ending::Complete);
    assert!(journal.close().is_empty(), "the experiment directory is removed");
    store.finish_run(id, &schedlab_store::RunStatus::Complete, &[]).unwrap();
    id
}

fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

#[test]
fn mock_records_are_stored_and_shown_with_their_made_up_figures() {
    let lab = Lab::new();
    // Step 6 is cell 1's second measured repetition: its worker 0 exits 1.
    let id = store_mock_run(&lab, &mut MockExecutor::new().failing(6)).to_string();

    let rows: Vec<Value> =
        serde_json::from_str(&lab.ok(&["export", &id, "--format", "json"])).unwrap();
    assert_eq!(rows.len(), 2 * 3 * 3, "2 cells x 3 repetitions x 3 workers; warm-ups left out");
    for r in &rows {
        let i = r["index"].as_u64().unwrap();
        assert_eq!(f(r, "wall_s"), 1.0 + 0.5 * i as f64, "{r}");
        assert_eq!(
            (f(r, "user_s"), r["voluntary_csw"].as_i64(), r["involuntary_csw"].as_i64()),
            (0.75, Some(10 + i as i64), Some(2 * i as i64))
        );
        assert_eq!(r["background"], i == 2, "{r}");
        let failed = r["cell_id"] == 1 && r["rep"] == 1;
        assert_eq!(r["cell_status"], if failed { "failed" } else { "ok" }, "{r}");
        assert_eq!(r["exit_code"], if failed && i == 0 { 1 } else { 0 }, "{r}");
        let extra: Value = serde_json::from_str(r["extra"].as_str().unwrap()).unwrap();
        // The background group has a policy of its own: the default.
        assert_eq!(
            extra["policy"],
            if r["cell_id"] == 1 && i < 2 { "fifo" } else { "other" },
            "{r}"
        );
    }
    let all: Vec<Value> =
        serde_json::from_str(&lab.ok(&["export", &id, "--format", "json", "--include-warmup"]))
            .unwrap();
    assert_eq!(all.iter().filter(|r| r["warmup"] == true).count(), 2 * 3, "one warm-up per cell");

    let show = lab.ok(&["show", &id]);
    // Measured workers 0 and 1 only: walls 1 and 1.5 s, blocked 10 and 11, preempted 0 and 2.
    let totals = section(&show, "Per cell, totals");
    assert_eq!(
        &columns(totals, "cpu/other/n2+bg")[1..8],
        ["3", "1.50 ±0.00", "1.50 ±0.00", "0.50 ±0.00", "133 ±0", "2 ±0", "21 ±0"],
        "{show}"
    );
    let fifo = columns(totals, "cpu/fifo/n2+bg");
    assert_eq!(fifo[1], "2", "the failed repetition is left out: {show}");
    assert!(fifo[8].starts_with("FAILED 1 of 3 reps (left out) [1]"), "{show}");
    assert!(
        show.contains("\n[1] 1 worker of 2 exited with status != 0 (worker 0: status 1)"),
        "the reason once under the table: {show}"
    );
    let per_process = section(&show, "Per process");
    assert_eq!(
        &columns(per_process, "cpu/other/n2+bg")[1..7],
        ["3", "1.250 ±0.000", "0.750 ±0.000", "0.2500 ±0.0000", "83 ±0", "1.0 ±0.0"],
        "{show}"
    );
    // Jain's index of 1 and 1.5 s is 2.5² / (2 x 3.25); CPU in the window: main 2 x 1 s, bg 1 s.
    let fairness = columns(section(&show, "Throughput and fairness"), "cpu/other/n2+bg");
    assert_eq!(
        (fairness[6].as_str(), fairness[9].as_str()),
        ("0.962 ±0.000", "main 67 ±0, bg 33 ±0 (%)"),
        "{show}"
    );
    assert!(show.contains("  - cpu/fifo/n2+bg rep 2: failed: 1 worker of 2 exited with status != 0 (worker 0: status 1)"), "{show}");

    let out = lab.ok(&["report", &id, "-o", "rep"]);
    assert!(out.contains("figures"), "{out}");
    let html = std::fs::read_to_string(lab.path("rep/index.html")).unwrap();
    assert!(
        html.contains("FAILED 1 of 3 reps") && html.contains("Mock CPU"),
        "the report marks the failed cell"
    );
}

/// The table under the line starting with `title`, up to the blank line after it.
fn section<'a>(show: &'a str, title: &str) -> &'a str {
    let start = show.find(&format!("\n{title}")).unwrap_or_else(|| panic!("no {title} in {show}"));
    let rest = &show[start + 1..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

/// The trimmed columns of the first row of `table` containing `marker`.
fn columns(table: &str, marker: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker} in {table}"));
    line.trim_matches('│').split('┆').map(|c| c.trim().to_string()).collect()
}
