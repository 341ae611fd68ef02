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
    assert!(
        first.starts_with(&format!("run 1 — {}… (measured", "n".repeat(80))),
        "{}",
        &first[..first.len().min(200)]
    );
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

#[test]
fn a_read_only_database_is_refused_with_its_path_before_the_run() {
    let lab = Lab::new();
    let spec =
        lab.spec("one.toml", "name = \"one\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n");
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    // Read-only for root too: the immutable attribute, where the filesystem has it; else the mode.
    let db = lab.db();
    let immutable =
        std::process::Command::new("chattr").arg("+i").arg(&db).status().is_ok_and(|s| s.success());
    if !immutable {
        require!(!crate::util::is_root(), "no chattr here, and root writes any file");
        std::fs::set_permissions(&db, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    }
    let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
    if immutable {
        std::process::Command::new("chattr").arg("-i").arg(&db).status().unwrap();
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("error: cannot record a new run in {}: ", db.display())),
        "{err}"
    );
}
