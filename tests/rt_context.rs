//! Real-time results carry their context (issue 33, item 9): DWCS's theory speaks only of
//! the sets DWCS schedules.

use crate::util::{is_root, Lab};

/// rt-app's own shape: one SCHED_FIFO and one SCHED_DEADLINE periodic thread.
const FIFO_AND_DEADLINE: &str = r#"{
	"tasks" : {
		"fifo_task" : { "policy" : "SCHED_FIFO", "priority" : 10, "run" : 2000,
			"timer" : { "ref" : "unique", "period" : 10000 } },
		"dl_task" : { "policy" : "SCHED_DEADLINE", "dl-runtime" : 3000, "dl-period" : 20000,
			"run" : 3000, "timer" : { "ref" : "unique", "period" : 20000 } }
	},
	"global" : { "duration" : 2 }
}"#;

/// An imported fifo set and deadline set are not DWCS's: check says nothing of canonical
/// sets or DWCS guarantees about them (it said "not canonical" of the deadline set).
#[test]
fn an_rt_app_import_s_fifo_and_deadline_sets_get_no_dwcs_warnings() {
    require!(is_root(), "check of SCHED_FIFO and SCHED_DEADLINE sets needs CAP_SYS_NICE (root)");
    let lab = Lab::new();
    lab.spec("two.json", FIFO_AND_DEADLINE);
    lab.ok(&["import", "rt-app", "two.json", "-o", "two.toml"]);
    let shown = lab.ok(&["check", "two.toml"]);
    assert!(shown.contains("rtapp_deadline/deadline"), "{shown}");
    for dwcs_only in ["canonical", "DWCS", "warning: task set"] {
        assert!(!shown.contains(dwcs_only), "{dwcs_only}: {shown}");
    }
    // The same tasks under DWCS do get the feasibility test's verdict.
    let text = std::fs::read_to_string(lab.path("two.toml")).unwrap();
    let dwcs = text.replacen("scheduler = \"deadline\"", "scheduler = \"dwcs\"", 1);
    assert_ne!(dwcs, text, "the imported spec names its deadline set's scheduler: {text}");
    lab.spec("dwcs.toml", &dwcs);
    let shown = lab.ok(&["check", "dwcs.toml"]);
    assert!(shown.contains("DWCS minimum utilisation"), "{shown}");
}

/// `check` prints the classic tests' verdicts of each periodic set (issue 32, item 2): the
/// canonical set's windows fit one CPU under DWCS although its sum C/T is above 1, so every
/// test of deadlines says no on one CPU, and the partitioned tests place it on two.
#[test]
fn check_prints_the_schedulability_tests_verdicts_of_each_set() {
    require!(is_root(), "check of DWCS sets needs CAP_SYS_NICE (root)");
    let lab = Lab::new();
    let spec =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/dwcs-canonical.toml");
    let shown = lab.ok(&["check", spec.to_str().unwrap()]);
    let one = shown.lines().find(|l| l.starts_with("analysis of task set")).expect(&shown);
    for want in ["rta-rm no", "edf-demand no", "dwcs yes", "liu-layland no"] {
        assert!(one.contains(want), "{want}: {one}");
    }
    assert!(!one.contains("ffd-edf"), "partitioned tests are on the CPUs' line: {one}");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus > 1 {
        let many = shown.lines().find(|l| l.trim_start().starts_with(&format!("on {cpus} CPUs:")));
        assert!(many.is_some_and(|l| l.contains("ffd-edf yes")), "{shown}");
    }
}

/// The textbook sets of issue 40 under fifo-rm: Buttazzo's (1, 4), (2, 6), (3, 10) ms and
/// Burns & Wellings' (3, 7), (3, 12), (5, 20) ms.
const TEXTBOOK: &str = r#"name = "textbook"
[matrix]
workload = ["buttazzo", "burns"]
scheduler = ["fifo-rm"]
[workloads.buttazzo]
kind = "periodic"
duration_s = 1
tasks = [{ c_ms = 1, t_ms = 4 }, { c_ms = 2, t_ms = 6 }, { c_ms = 3, t_ms = 10 }]
[workloads.burns]
kind = "periodic"
duration_s = 1
tasks = [{ c_ms = 3, t_ms = 7 }, { c_ms = 3, t_ms = 12 }, { c_ms = 5, t_ms = 20 }]
"#;

/// `check` prints each task's response time from RTA (issue 40): the books' figures without
/// overheads, and with `--overheads FILE` the twins' verdicts and the charged response times
/// (each job pays two 1.7 us switches, each release 50 us of latency: the last task of
/// either set, exactly at its deadline without them, then misses; Buttazzo's third task,
/// C = 3.0034 ms with J = 0.05 ms, iterates w = 6.0102, 9.017, 10.0204 ms, and
/// J + 10.0204 = 10.0704 ms > 10 ms is where RTA stops).
#[test]
fn check_prints_each_tasks_response_times_plain_and_with_overheads() {
    require!(is_root(), "check of SCHED_FIFO sets needs CAP_SYS_NICE (root)");
    let lab = Lab::new();
    lab.spec("textbook.toml", TEXTBOOK);
    let shown = lab.ok(&["check", "textbook.toml"]);
    let times: Vec<&str> = shown.lines().filter(|l| l.contains("RTA response times")).collect();
    assert_eq!(times.len(), 2, "{shown}");
    assert!(times[0].ends_with("rate- and deadline-monotonic: 1, 3, 10 (yes)"), "{shown}");
    assert!(times[1].ends_with("rate- and deadline-monotonic: 3, 6, 20 (yes)"), "{shown}");
    assert!(!shown.contains("with overheads"), "no overheads known: {shown}");
    let file = lab.spec(
        "overheads.json",
        r#"{"release_latency": 50000, "context_switch": 1700, "percentile": 99.0}"#,
    );
    let shown = lab.ok(&["check", "textbook.toml", "--overheads", file.to_str().unwrap()]);
    let times: Vec<&str> = shown.lines().filter(|l| l.contains("RTA response times")).collect();
    assert!(
        times[0]
            .ends_with("1, 3, 10 (yes); with overheads: 1.053, 3.057, R3 = 10.07 > D3 = 10 (no)"),
        "{shown}"
    );
    assert!(
        times[1]
            .ends_with("3, 6, 20 (yes); with overheads: 3.053, 6.057, R3 = 20.07 > D3 = 20 (no)"),
        "{shown}"
    );
    let twins = shown.lines().find(|l| l.contains("with overheads (")).expect(&shown);
    assert!(twins.contains("overheads.json, p99") && twins.contains("rta-rm no"), "{twins}");
    assert!(twins.contains("edf-qpa yes"), "{twins}");
    // A file that is not the model is refused before anything else.
    let bad = lab.spec("bad.json", r#"{"cxs": 1700}"#);
    let out = lab.run(&["check", "textbook.toml", "--overheads", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// A task that RTA finds past its deadline shows the response time at which it passed it,
/// as the textbook writes it (issue 47, item 6), not "miss": (1, 4), (2, 6), (3, 8) ms under
/// fifo-rm, where the third task's recurrence runs 3 + 1 + 2 = 6, 3 + ceil(6/4) 1 +
/// ceil(6/6) 2 = 7, 3 + ceil(7/4) 1 + ceil(7/6) 2 = 9 > 8 (its fixed point would be 10).
#[test]
fn check_prints_the_response_time_at_which_rta_passed_a_deadline() {
    require!(is_root(), "check of SCHED_FIFO sets needs CAP_SYS_NICE (root)");
    let lab = Lab::new();
    lab.spec(
        "late.toml",
        r#"name = "late"
[matrix]
workload = ["late"]
scheduler = ["fifo-rm"]
[workloads.late]
kind = "periodic"
duration_s = 1
tasks = [{ c_ms = 1, t_ms = 4 }, { c_ms = 2, t_ms = 6 }, { c_ms = 3, t_ms = 8 }]
"#,
    );
    let shown = lab.ok(&["check", "late.toml"]);
    let times = shown.lines().find(|l| l.contains("RTA response times")).expect(&shown);
    assert!(times.ends_with("rate- and deadline-monotonic: 1, 3, R3 = 9 > D3 = 8 (no)"), "{shown}");
    assert!(!shown.contains("miss ("), "{shown}");
}
