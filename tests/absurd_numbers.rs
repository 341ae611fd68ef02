//! Numbers no experiment means are refused where they are written, before anything is
//! allocated or started (issue #31 items 4 and 7): repetitions, watchdogs, scales, rt-app
//! instances and task counts, long axis lists.

use crate::util::Lab;
use std::process::Output;

const ONE_CELL: &str = "name = \"one\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n";

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 2, no panic, and `want` in what stderr says.
fn refused(out: &Output, want: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(want), "wanted {want:?} in: {err}");
    assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{err}");
}

#[test]
fn repetitions_on_the_command_line_are_capped_as_in_the_spec() {
    let lab = Lab::new();
    let spec = lab.spec("one.toml", ONE_CELL);
    for cmd in ["run", "check"] {
        let out = lab.run(&[cmd, spec.to_str().unwrap(), "--repetitions", "1000000000"]);
        refused(&out, "--repetitions");
        assert!(stderr(&out).contains("from 1 to 100000"), "{}", stderr(&out));
    }
    assert!(!lab.db().exists(), "refused before a database was made");
}

#[test]
fn cells_times_repetitions_past_ten_million_are_refused_at_repetitions() {
    let lab = Lab::new();
    let counts: Vec<String> = (1..=200).map(|n| n.to_string()).collect();
    let text = format!(
        "name = \"wide\"\nrepetitions = 100000\n[matrix]\nworkload = [\"nap\"]\nprocesses = [{}]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n",
        counts.join(", ")
    );
    let spec = lab.spec("wide.toml", &text);
    let out = lab.run(&["check", spec.to_str().unwrap()]);
    refused(
        &out,
        "wide.toml:2:15: 200 cells x (100000 repetitions + 0 warm-up) is 20000000 cell repetitions",
    );
    // The same plan reached from the command line names the flag.
    let spec = lab.spec("wide1.toml", &text.replace("repetitions = 100000\n", ""));
    let out = lab.run(&["run", spec.to_str().unwrap(), "--repetitions", "100000"]);
    refused(&out, "--repetitions 100000: 200 cells x (100000 repetitions");
    assert!(!lab.db().exists(), "refused before a database was made");
}

#[test]
fn a_watchdog_that_would_wrap_or_overflow_is_refused_at_its_line_or_flag() {
    let lab = Lab::new();
    let spec = lab.spec("huge.toml", &format!("timeout_s = 1e20\n{ONE_CELL}"));
    refused(
        &lab.run(&["check", spec.to_str().unwrap()]),
        "huge.toml:1:13: timeout_s must be a positive number of seconds, at most 2592000",
    );
    let spec = lab.spec("one.toml", ONE_CELL);
    for t in ["1e20", "18446744074", "2592001"] {
        refused(
            &lab.run(&["run", spec.to_str().unwrap(), "--timeout", t]),
            "--timeout must be a positive number of seconds, at most 2592000",
        );
    }
    assert!(!lab.db().exists(), "refused before a database was made");
}

#[test]
fn a_scale_past_a_million_is_refused() {
    let lab = Lab::new();
    let spec = lab.spec("one.toml", ONE_CELL);
    for cmd in ["check", "run"] {
        refused(
            &lab.run(&[cmd, spec.to_str().unwrap(), "--scale", "1e308"]),
            "--scale must be a positive number, at most 1000000, got 1e308",
        );
    }
}

#[test]
fn a_periodic_set_longer_than_the_watchdog_is_refused_at_check_at_its_duration() {
    let lab = Lab::new();
    let text =
        "name = \"long\"\ntimeout_s = 60\n[matrix]\nworkload = [\"set\"]\n[workloads.set]\nkind = \"periodic\"\nscheduler = \"other\"\n\
                duration_s = 120\ntasks = [{ c_ms = 1, t_ms = 10 }]\n";
    let spec = lab.spec("long.toml", text);
    let out = lab.run(&["check", spec.to_str().unwrap()]);
    refused(&out, "long.toml:8:14: workload \"set\" runs for 120 s (until its last job's deadline), and the watchdog stops each cell repetition after 60 s");
    let out = lab.run(&["run", spec.to_str().unwrap()]);
    refused(&out, "long.toml:8:14");
    assert!(!lab.db().exists(), "refused before a database was made");
    // --timeout lifts the watchdog above the duration (the run itself is not needed here).
    let ok = lab.spec("ok.toml", &text.replace("duration_s = 120", "duration_s = 1"));
    assert!(lab.run(&["check", ok.to_str().unwrap()]).status.success());
}

/// One rt-app thread of `instances` copies.
fn rtapp(instances: u64) -> String {
    format!(
        r#"{{ "tasks": {{ "w": {{ "instance": {instances}, "run": 1000, "timer": {{ "ref": "unique", "period": 10000 }} }} }}, "global": {{ "duration": 2 }} }}"#
    )
}

#[test]
fn an_rt_app_instance_count_no_set_holds_is_refused_before_anything_is_written() {
    let lab = Lab::new();
    lab.spec("many.json", &rtapp(100_000_000));
    let out = lab.run(&["import", "rt-app", "many.json", "-o", "many.toml"]);
    refused(&out, "task \"w\": instance 100000000: a periodic set holds at most 256 tasks");
    assert!(!lab.path("many.toml").exists());
    lab.spec("fits.json", &rtapp(256));
    let out = lab.run(&["import", "rt-app", "fits.json", "-o", "fits.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn rt_app_threads_past_what_a_set_holds_are_refused_before_anything_is_written() {
    let lab = Lab::new();
    let threads: Vec<String> = (0..300)
        .map(|i| {
            format!(r#""t{i}": {{ "run": 1000, "timer": {{ "ref": "unique", "period": 10000 }} }}"#)
        })
        .collect();
    lab.spec(
        "wide.json",
        &format!(r#"{{ "tasks": {{ {} }}, "global": {{ "duration": 2 }} }}"#, threads.join(", ")),
    );
    let out = lab.run(&["import", "rt-app", "wide.json", "-o", "wide.toml"]);
    refused(&out, "300 other threads would form one periodic set: it holds at most 256 tasks");
    assert!(!lab.path("wide.toml").exists(), "nothing written that check would refuse");
}

#[test]
fn a_hundred_thousand_value_axis_is_checked_in_linear_time() {
    let lab = Lab::new();
    let counts: Vec<String> = (1..=100_000).map(|n| n.to_string()).collect();
    let text = format!(
        "name = \"long\"\n[matrix]\nworkload = [\"nap\"]\npolicy = [\"other\", \"batch\"]\nprocesses = [{}]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n",
        counts.join(", ")
    );
    let spec = lab.spec("long.toml", &text);
    let started = std::time::Instant::now();
    let out = lab.run(&["check", spec.to_str().unwrap()]);
    refused(&out, "the matrix has 200000 cells; at most 100000");
    // Quadratic, the 5 x 10^9 comparisons took minutes in a debug build; linear, well under a second.
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "took {:?}", started.elapsed());
}
