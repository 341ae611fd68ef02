//! The edges a new user meets first (issue 33, item 8): a database in a missing directory,
//! `dwcs status` with nothing running, a negative `--scale`, a plan the watchdog would kill.

use crate::util::Lab;

const ONE_CELL: &str = "name = \"one\"\n[matrix]\nworkload = [\"nap\"]\nprocesses = [1]\n\
                        [workloads.nap]\nkind = \"command\"\nargv = [\"sleep\", \"0.1\"]\n";

/// Stores a simulated run of one small pi cell (no root, well under a second).
pub fn simulate_one_cell(lab: &Lab) {
    let spec = lab.spec(
        "cpu.toml",
        "name = \"cpu\"\n[matrix]\nworkload = [\"cpu\"]\nprocesses = [1]\n\
         [workloads.cpu]\nkind = \"pi\"\niterations = 1_000_000\n",
    );
    lab.ok(&["simulate", spec.to_str().unwrap(), "--ns-per-iteration", "5", "-q"]);
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--db` in a directory that does not exist: exit 2 naming that directory (not SQLite's
/// "unable to open database file" with exit 1), and nothing is created.
#[test]
fn a_database_in_a_missing_directory_exits_2_naming_the_directory() {
    let lab = Lab::new();
    let spec = lab.spec("one.toml", ONE_CELL);
    let missing = lab.path("no-such-dir");
    let db = missing.join("results.db");
    for cmd in ["run", "simulate"] {
        let args = format!("schedlab --db {} {cmd} {} -q", db.display(), spec.display());
        let out = lab.paste(&args, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args}: {err}");
        assert!(
            err.contains(&format!("its directory {} does not exist", missing.display())),
            "{args} names the missing directory: {err}"
        );
        assert!(!err.contains("unable to open database file"), "{err}");
        assert!(!missing.exists(), "nothing was created");
    }
    assert!(!lab.path("state").exists(), "nothing was journaled");
}

/// Nothing running is an answer, not a failure: exit 0, said in words; `--json` is `[]`.
#[test]
fn dwcs_status_with_nothing_running_says_so_and_exits_0() {
    let lab = Lab::new();
    let dir = lab.path("regions");
    std::fs::create_dir(&dir).unwrap();
    let out = lab.run(&["dwcs", "status", "--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing is running"));
    let out = lab.run(&["dwcs", "status", "--json", "--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
}

/// `--scale -1` (and any number flag's negative value) is a value clap hands over, refused
/// with the flag's range (clap's own answer was "unexpected argument '-1'" and a tip to
/// write `-- -1`, which means something else).
#[test]
fn a_negative_scale_gets_the_range_not_clap_s_dash_dash_tip() {
    let lab = Lab::new();
    let spec = lab.spec("one.toml", ONE_CELL);
    let spec = spec.to_str().unwrap();
    for args in [
        vec!["check", spec, "--scale", "-1"],
        vec!["run", spec, "--scale", "-1"],
        vec!["simulate", spec, "--scale", "-1"],
        vec!["run", spec, "--timeout", "-5"],
        vec!["simulate", spec, "--ns-per-iteration", "-5"],
        vec!["simulate", spec, "--rr-quantum-ms", "-5"],
        vec!["compare", "1", "2", "--alpha", "-1"],
        vec!["dwcs", "status", "--watch", "-1"],
    ] {
        let out = lab.run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("'--"), "{args:?}: no `--` tip: {err}");
        // The flag's own range error, from schedlab.
        let flag = args[args.len() - 2];
        assert!(err.starts_with(&format!("error: {flag} ")), "{args:?}: {err}");
    }
}

/// A plan whose cells would run far past the watchdog is not "ok": check names the cell,
/// its estimate and the watchdog's limit, and exits 2; the same plan unscaled is ok.
#[test]
fn check_refuses_a_plan_the_watchdog_would_kill_naming_both_numbers() {
    let lab = Lab::new();
    // About 0.05 s of pi per process here; at scale 10000, minutes against a 30 s watchdog.
    let spec = lab.spec(
        "long.toml",
        "name = \"long\"\ntimeout_s = 30\n[matrix]\nworkload = [\"cpu\"]\nprocesses = [1]\n\
         [workloads.cpu]\nkind = \"pi\"\niterations = 10_000_000\n",
    );
    let spec = spec.to_str().unwrap();
    let ok = lab.run(&["check", spec]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(!String::from_utf8_lossy(&ok.stdout).contains("watchdog stops"));
    let out = lab.run(&["check", spec, "--scale", "10000"]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}{err}");
    assert!(!text.contains("ok:"), "{text}");
    let warning = text
        .lines()
        .find(|l| l.starts_with("warning: cell 0 (cpu/other/n1) needs at least"))
        .unwrap_or_else(|| panic!("a warning names the cell: {text}"));
    assert!(warning.ends_with("after 30 s"), "{warning}");
    assert!(err.contains("the watchdog allows 30 s"), "{err}");
    // Located, as every refusal of a spec is: at the longest cell's workload.
    assert!(err.starts_with(&format!("error: {spec}:4:13: ")), "{err}");
}

/// One machine whose ambient cpu_dma_latency changed between two runs is one machine:
/// compare names the setting that differs, not "the machines differ".
#[test]
fn compare_names_a_changed_setting_without_calling_it_another_machine() {
    let lab = Lab::new();
    simulate_one_cell(&lab);
    simulate_one_cell(&lab);
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    for (id, us) in [(1, 0), (2, 2000)] {
        db.execute(
            "UPDATE runs SET env_json = json_set(env_json, '$.machine.cpu_dma_latency_us', ?2) WHERE id = ?1",
            [id, us],
        )
        .unwrap();
    }
    drop(db);
    let out = lab.run(&["compare", "1", "2"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("settings differ: cpu_dma_latency 0 \u{2192} 2000"), "{err}");
    assert!(!err.contains("machines differ"), "{err}");
}
