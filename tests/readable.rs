//! Readable output (issue 33, items 4, 6 and 7): tables at most 160 characters wide, one
//! note per table for values without an interval, cell keys in `show` that `trace --cell`
//! takes, `show --format`/`--cell`/`--metric`, `export --per cell`, a per-cell `trace`
//! summary, and "did you mean" for mistyped keys, figures, fields, workloads and subcommands.

use crate::report::{fixture, store_run};
use crate::util::{is_root, tracing_possible, Lab};
use serde_json::Value;

/// The widest table `show`, `check` and `trace` print by default.
const WIDTH: usize = 160;

/// Fails with the offending lines when a table line of `text` (what `what` printed) is wider
/// than [`WIDTH`] characters. (Prose may run longer: warnings stay one line for grep.)
fn assert_narrow(what: &str, text: &str) {
    let tables = text.lines().filter(|l| l.starts_with(['┌', '│', '╞', '└']));
    assert!(tables.clone().count() > 3, "{what} printed no table: {text}");
    let wide: Vec<String> = tables
        .filter(|l| l.chars().count() > WIDTH)
        .map(|l| format!("{} chars: {l}", l.chars().count()))
        .collect();
    assert!(wide.is_empty(), "{what} printed lines wider than {WIDTH}:\n{}", wide.join("\n"));
}

/// Stdout and stderr of a command that must fail with bad input (exit 2).
fn refused(lab: &Lab, args: &[&str]) -> String {
    let out = lab.run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A pa3-shaped fixture run with `reps` repetitions per cell; returns its id.
fn cpu_run(lab: &Lab, reps: u32) -> String {
    let records: Vec<_> = fixture(1.0).into_iter().filter(|r| r.rep < reps).collect();
    store_run(&lab.db(), "cpu-fixture", &records).to_string()
}

#[test]
fn show_and_check_print_no_table_wider_than_160() {
    let lab = Lab::new();
    let cpu = cpu_run(&lab, 3);
    assert_narrow("show (cpu)", &lab.ok(&["show", &cpu]));
    let rt = store_run(&lab.db(), "rt-fixture", &crate::rtreport::fixture()).to_string();
    let shown = lab.ok(&["show", &rt]);
    assert!(shown.contains("Real-time task sets"), "{shown}");
    assert_narrow("show (rt)", &shown);
    // --wide is the way to every column: the real-time table then passes the width.
    let wide = lab.ok(&["show", &rt, "--wide"]);
    assert!(wide.contains("fixed viol./proc") && !shown.contains("fixed viol./proc"), "{wide}");

    for name in [
        "quick",
        "pa3",
        "rt",
        "iosched",
        "dwcs-canonical",
        "knobs",
        "lab1",
        "dwcs",
        "scx",
        "schedulability",
        "knee",
    ] {
        let file = format!("{}/experiments/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        // Without root the privilege check fails after the plan is printed: the table counts.
        let out = lab.run(&["check", &file]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("┆ key "), "check {name}: {text}");
        assert_narrow(&format!("check {name}"), &text);
    }
    // The key names the workload and policy; --wide adds their columns.
    let file = format!("{}/experiments/lab1.toml", env!("CARGO_MANIFEST_DIR"));
    let narrow = String::from_utf8_lossy(&lab.run(&["check", &file]).stdout).into_owned();
    let wide = String::from_utf8_lossy(&lab.run(&["check", &file, "--wide"]).stdout).into_owned();
    assert!(!narrow.contains("┆ workload") && wide.contains("┆ workload"), "{narrow}\n{wide}");
}

#[test]
fn show_of_an_io_run_prints_no_table_wider_than_160() {
    crate::require!(is_root(), "the I/O workloads' loop device needs root");
    // The machine's I/O state is shared: take turns with the I/O and real-time tests.
    let _serial = crate::util::measuring();
    let lab = Lab::new();
    let spec = lab.spec(
        "io.toml",
        "name = \"io\"\nrepetitions = 3\n[matrix]\nworkload = [\"w\", \"r\"]\n\
         [workloads.w]\nkind = \"par_write\"\nfiles = 3\nfile_bytes = 200_000\nthreads = 3\nmode = \"fsync\"\n\
         [workloads.r]\nkind = \"par_read\"\nfiles = 2\nfile_bytes = 200_000\nthreads = 2\n",
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let shown = lab.ok(&["show"]);
    assert!(shown.contains("I/O (mean") && shown.contains("│ w/other/n1 "), "{shown}");
    assert_narrow("show (io)", &shown);
}

#[test]
fn show_of_runs_with_long_keys_and_failure_notes_fits_160() {
    let lab = Lab::new();
    // lab1's keys run to 62 characters, and the simulator refuses its background and cgroup
    // cells with reasons of 90.
    let file = format!("{}/experiments/lab1.toml", env!("CARGO_MANIFEST_DIR"));
    lab.ok(&["simulate", &file, "-q", "--scale", "0.02", "--skip-unsupported"]);
    let shown = lab.ok(&["show"]);
    assert_narrow("show (lab1, simulated)", &shown);
    // Each reason once, under the table, numbered; the rows keep their head and number.
    let reason = "group `bg` is a background group, which the simulator does not model yet";
    let note = shown.lines().find(|l| l.starts_with("[") && l.contains(reason));
    let note = note.unwrap_or_else(|| panic!("no footnote with the reason: {shown}"));
    let n = &note[..note.find(']').unwrap() + 1];
    assert!(shown.contains(&format!("FAILED 3 of 3 reps (left out) {n} │")), "{shown}");
    assert_eq!(shown.matches(note).count(), 1, "one footnote per reason: {shown}");
    // The columns left out to fit are named, and --wide has them.
    assert!(shown.contains("(to fit 160 columns, --wide shows: sys [CPU-s]"), "{shown}");
    let wide = lab.ok(&["show", "--wide"]);
    assert!(wide.contains("┆ sys [CPU-s] ┆"), "{wide}");
    // The failures list: one line per cell and reason, its repetitions together.
    assert!(
        shown.contains("/n4+bg.processes=8 reps 1, 2, 3: failed: cannot be simulated"),
        "{shown}"
    );

    // A database from before the typed records: a grouped run with 68-character keys.
    let old = Lab::new();
    let fixture = format!("{}/tests/fixtures/before-typed-core", env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(format!("{fixture}/before-typed-core.db"), old.db()).unwrap();
    for run in ["1", "2", "3", "4", "5", "6", "7"] {
        assert_narrow(&format!("show {run} (old database)"), &old.ok(&["show", run]));
    }
}

#[test]
fn values_without_an_interval_get_one_note_per_table() {
    let lab = Lab::new();
    let two = cpu_run(&lab, 2);
    let shown = lab.ok(&["show", &two]);
    assert!(!shown.contains("(n < 3)"), "{shown}");
    // Two tables (totals, per process), each with its figures marked and one footnote.
    assert_eq!(shown.matches("* fewer than 3 repetitions").count(), 2, "{shown}");
    let row = shown.lines().find(|l| l.starts_with("│ cpu/other/n4 ")).unwrap();
    // Wall 1.3 x 4 / 2 s scaled by 0.95 and 1.0: a mean of 2.535.
    assert!(row.contains("┆    2.54* ┆"), "the wall time, marked: {row}");

    // Three repetitions have intervals: no mark, no footnote.
    let three = cpu_run(&lab, 3);
    let shown = lab.ok(&["show", &three]);
    assert!(!shown.contains("fewer than 3 repetitions"), "{shown}");

    // The simulator's repetitions are identical: no marks, one line saying why.
    let spec = lab.spec(
        "sim.toml",
        "name = \"sim\"\nrepetitions = 2\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"fifo\"]\n\
         [workloads.cpu]\nkind = \"pi\"\niterations = 1_000_000\n",
    );
    lab.ok(&["simulate", spec.to_str().unwrap(), "-q", "--cpus", "2", "--ns-per-iteration", "10"]);
    let shown = lab.ok(&["show"]);
    assert!(shown.contains("(sim, complete)"), "{shown}");
    assert!(!shown.contains("fewer than 3") && !shown.contains("(n < 3)"), "{shown}");
    assert_eq!(shown.matches("identical by construction (deterministic)").count(), 1, "{shown}");
    let row = shown.lines().find(|l| l.starts_with("│ cpu/other/n1 ")).unwrap();
    assert!(!row.contains('*'), "{row}");
}

#[test]
fn show_names_each_cell_by_the_key_trace_takes() {
    let lab = Lab::new();
    let id = cpu_run(&lab, 3);
    let shown = lab.ok(&["show", &id]);
    let keys: std::collections::BTreeSet<String> =
        lab.samples().iter().map(|r| r["cell_key"].as_str().unwrap().to_string()).collect();
    assert_eq!(keys.len(), 18);
    for k in &keys {
        assert!(shown.contains(&format!("│ {k} ")), "{k} is not a row of show: {shown}");
    }
    // --wide adds the labels a student reads ("fifo prio 98") beside the key.
    let wide = lab.ok(&["show", &id, "--wide"]);
    let row = wide.lines().find(|l| l.starts_with("│ cpu/fifo:98/n4 ")).unwrap();
    assert!(row.contains("fifo prio 98"), "{row}");
}

#[test]
fn show_formats_filters_cells_and_chooses_figures() {
    let lab = Lab::new();
    let id = cpu_run(&lab, 3);
    let json: Vec<Value> =
        serde_json::from_str(&lab.ok(&["show", &id, "--format", "json"])).unwrap();
    assert_eq!(json.len(), 18, "a row per cell");
    let first = &json[0];
    assert_eq!(first["key"], "cpu/other/n4");
    for field in ["workload", "policy", "processes", "n", "wall_s_ci_low", "procs_per_s"] {
        assert!(!first[field].is_null(), "{field} in {first}");
    }
    let (lo, mean, hi) = (
        first["wall_s_ci_low"].as_f64().unwrap(),
        first["wall_s"].as_f64().unwrap(),
        first["wall_s_ci_high"].as_f64().unwrap(),
    );
    assert!(lo < mean && mean < hi, "{first}");

    // A glob keeps the matching cells; --metric keeps the named figures.
    let csv = lab.ok(&[
        "show",
        &id,
        "--format",
        "csv",
        "--cell",
        "cpu/fifo*",
        "--metric",
        "wall_s,preempted",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "key,workload,policy,processes,n,wall_s,wall_s_ci_low,wall_s_ci_high,preempted,preempted_ci_low,preempted_ci_high");
    assert_eq!(lines.len(), 3, "cpu/fifo:98/n4 and n16: {csv}");
    assert!(lines[1..].iter().all(|l| l.starts_with("cpu/fifo:98/n")), "{csv}");

    // An exact key; the table keeps only the chosen figures.
    let table = lab.ok(&["show", &id, "--cell", "io/rr:98/n16", "--metric", "wall_s"]);
    assert!(table.contains("│ io/rr:98/n16 ") && !table.contains("io/rr:98/n4 "), "{table}");
    let header = table.lines().find(|l| l.starts_with("│ cell ")).unwrap();
    assert_eq!(header.split('┆').count(), 4, "cell, n, wall, notes: {table}");
    assert!(header.contains("wall [s]") && !table.contains("Per process"), "{table}");

    let md = lab.ok(&["show", &id, "--format", "markdown", "--cell", "mixed/*"]);
    assert!(
        md.contains("| cell | n | wall [s] |") && md.contains("| mixed/other/n4 | 3 |"),
        "{md}"
    );
    assert!(!md.contains('┆'), "no terminal tables in Markdown: {md}");
}

#[test]
fn export_per_cell_writes_the_summary_and_per_process_stays() {
    let lab = Lab::new();
    let id = cpu_run(&lab, 3);
    let cells: Vec<Value> =
        serde_json::from_str(&lab.ok(&["export", &id, "--per", "cell", "--format", "json"]))
            .unwrap();
    let shown: Vec<Value> =
        serde_json::from_str(&lab.ok(&["show", &id, "--format", "json"])).unwrap();
    assert_eq!(cells, shown, "export --per cell is show's per-cell summary");
    let md = lab.ok(&["export", &id, "--per", "cell", "--format", "markdown"]);
    assert!(
        md.contains("| cpu/fifo:98/n16 | 3 |") && md.lines().all(|l| l.chars().count() < 200),
        "{md}"
    );
    // The default is still a row per process (2 x 3 x 3 cells x 3 repetitions of 4 or 16).
    let rows: Vec<Value> =
        serde_json::from_str(&lab.ok(&["export", &id, "--format", "json"])).unwrap();
    assert_eq!(rows.len(), 9 * 3 * (4 + 16));
    assert!(refused(&lab, &["export", &id, "--per", "cell", "--jobs"]).contains("--per cell"));
}

#[test]
fn mistyped_names_get_a_did_you_mean() {
    let lab = Lab::new();
    let id = cpu_run(&lab, 3);
    let e = refused(&lab, &["show", &id, "--cell", "cpu/fiffo:98/n4"]);
    assert!(e.contains("did you mean \"cpu/fifo:98/n4\"?") && e.contains("its cells: "), "{e}");
    let e = refused(&lab, &["show", &id, "--metric", "wal_s"]);
    assert!(e.contains("did you mean \"wall_s\"?"), "{e}");
    let e = refused(&lab, &["shwo"]);
    assert!(e.contains("similar subcommand exists: 'show'"), "{e}");

    let field = lab.spec("f.toml", "name = \"t\"\nrepetitons = 3\n[matrix]\nworkload = [\"pi\"]\n");
    let e = refused(&lab, &["check", field.to_str().unwrap()]);
    assert!(
        e.contains("f.toml:2:1: unknown field `repetitons`: did you mean `repetitions`?"),
        "{e}"
    );
    let workload = lab.spec(
        "w.toml",
        "name = \"t\"\n[matrix]\nworkload = [\"spinner\"]\n[workloads.spin]\nkind = \"pi\"\n",
    );
    let e = refused(&lab, &["check", workload.to_str().unwrap()]);
    assert!(e.contains("unknown workload \"spinner\" (did you mean \"spin\"?)"), "{e}");
}

#[test]
fn trace_without_a_cell_prints_a_line_per_cell() {
    crate::require!(is_root() && tracing_possible(), "kernel traces need root and tracefs");
    // Its fifo and rr cells would disturb the timing tests: take turns with them.
    let _serial = crate::util::measuring();
    let lab = Lab::new();
    lab.ok(&["run", "--trace", "--scale", "0.02", "-q"]);
    let summary = lab.ok(&["trace"]);
    assert_narrow("trace", &summary);
    let keys: std::collections::BTreeSet<String> =
        lab.samples().iter().map(|r| r["cell_key"].as_str().unwrap().to_string()).collect();
    // Two tables (where the time went, who took the CPU), a row per cell in each.
    for k in &keys {
        assert_eq!(summary.matches(&format!("│ {k} ")).count(), 2, "{k}: {summary}");
    }
    assert!(!summary.contains("│ worker "), "no per-worker rows: {summary}");
    assert!(summary.lines().count() < 30 + 2 * keys.len(), "{summary}");

    // A key from show's table gives today's detail, a worker per row.
    let key = "cpu/other/n2";
    assert!(lab.ok(&["show"]).contains(&format!("│ {key} ")));
    let detail = lab.ok(&["trace", "--cell", key]);
    assert!(detail.contains("│ worker ") && detail.contains(&format!("{key} rep 1")), "{detail}");
    assert_narrow("trace --cell", &detail);
    assert!(detail.contains("(to fit 160 columns, --wide shows: group"), "{detail}");
    let wide = lab.ok(&["trace", "--cell", key, "--wide"]);
    assert!(wide.contains("┆ wait4 cpu [s] ┆") && !wide.contains("to fit 160"), "{wide}");

    let e = refused(&lab, &["trace", "--cell", "cpu/othr/n2"]);
    assert!(e.contains("did you mean \"cpu/other/n2\"?") && e.contains("traced cells: "), "{e}");
    let out = lab.path("x.pftrace");
    let e =
        refused(&lab, &["trace", "export", "--cell", "cpu/othr/n2", "-o", out.to_str().unwrap()]);
    assert!(e.contains("did you mean \"cpu/other/n2\"?"), "{e}");
}
