//! Bad input: clear errors with file:line:col, exit status 2, nothing run, nothing written.

use crate::util::{exists, is_root, Lab};

#[test]
fn misspelled_key_is_located_and_nothing_is_written() {
    let lab = Lab::new();
    let spec = lab.spec("bad.toml", "name = \"x\"\nrepetitons = 2\n[matrix]\nworkload = [\"pi\"]\n");
    let out = lab.run(&["run", spec.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:2:1:") && err.contains("unknown field `repetitons`"), "{err}");
    assert!(!exists(&lab.db()), "no database may be created for a bad spec");
}

#[test]
fn priority_out_of_range_is_refused_by_check_and_run() {
    let lab = Lab::new();
    let spec =
        lab.spec("p.toml", "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"f\"]\n[policies.f]\nclass = \"rr\"\npriority = 120\n");
    for sub in ["check", "run"] {
        let out = lab.run(&[sub, spec.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{sub}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("p.toml:7:12:") && err.contains("between 1 and 98"), "{sub}: {err}");
    }
    assert!(!exists(&lab.db()));
}

#[test]
fn a_policy_this_process_may_not_use_names_the_missing_privilege() {
    let lab = Lab::new();
    let spec = lab.spec("rt.toml", "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifo\"]\n");
    let out = if is_root() {
        // Drop to nobody with no capabilities and RLIMIT_RTPRIO 0.
        require!(std::path::Path::new("/usr/bin/setpriv").exists(), "setpriv (util-linux) is not installed");
        std::fs::set_permissions(lab.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        std::process::Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--"])
            .arg("prlimit")
            .arg("--rtprio=0")
            .arg(env!("CARGO_BIN_EXE_schedlab"))
            .arg("--db")
            .arg(lab.db())
            .args(["run", spec.to_str().unwrap()])
            .output()
            .unwrap()
    } else {
        lab.run(&["run", spec.to_str().unwrap()])
    };
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rt.toml:4:11:") && err.contains("CAP_SYS_NICE"), "{err}");
    assert!(!exists(&lab.db()));
}

#[test]
fn check_prints_the_plan_without_running() {
    let lab = Lab::new();
    let out = lab.ok(&["check", concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/pa3.toml"), "--scale", "0.01"]);
    assert!(out.contains("27 cells"), "{out}");
    assert!(out.contains("cpu/fifo:98/n500"), "{out}");
    assert!(out.contains("ok: the spec is valid"), "{out}");
    assert!(!exists(&lab.db()));
}

#[test]
fn export_rejects_an_unknown_format_and_show_a_missing_database() {
    let lab = Lab::new();
    let out = lab.run(&["show"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no results database"));
    let out = lab.run(&["export", "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!exists(&lab.db()));
}
