//! What `show` and `env` print about the run and the machine (issue #31, smaller things): a
//! 100 KB run name is cut, and `env` says where the restore journals live.

use crate::util::Lab;

#[test]
fn show_and_runs_cut_a_100_kb_run_name() {
    let lab = Lab::new();
    let name = "n".repeat(100_000);
    let spec = lab.spec(
        "long.toml",
        &format!("name = \"{name}\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n"),
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let show = lab.ok(&["show"]);
    let first = show.lines().next().unwrap();
    assert!(first.starts_with(&format!("run 1 — {}… (measured", "n".repeat(80))), "{}", &first[..first.len().min(200)]);
    assert!(show.len() < 20_000, "show printed {} bytes", show.len());
    assert!(lab.ok(&["runs"]).len() < 20_000);
}

#[test]
fn env_says_where_the_restore_journals_live() {
    let lab = Lab::new();
    let out = lab.ok(&["env"]);
    let state = lab.path("state");
    assert!(out.lines().any(|l| l.starts_with("restore journals ") && l.contains(&state.display().to_string())), "{out}");
    let json: serde_json::Value = serde_json::from_str(&lab.ok(&["env", "--json"])).unwrap();
    assert_eq!(json["state_dir"], state.display().to_string());
}
