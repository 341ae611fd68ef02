//! Bad input: clear errors with file:line:col, exit status 2, nothing run, nothing written.

use crate::unprivileged::{cannot_drop, Dropped};
use crate::util::{exists, is_root, Lab};

#[test]
fn misspelled_key_is_located_and_nothing_is_written() {
    let lab = Lab::new();
    let spec =
        lab.spec("bad.toml", "name = \"x\"\nrepetitons = 2\n[matrix]\nworkload = [\"pi\"]\n");
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
    let text = "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifo\"]\n";
    let lab = Lab::new();
    let (out, db) = if is_root() {
        // Drop to a user without capabilities and RLIMIT_RTPRIO 0.
        require!(cannot_drop().is_none(), cannot_drop().unwrap());
        let u = Dropped::new();
        let spec = u.spec("rt.toml", text);
        (
            u.cmd(&["run", spec.to_str().unwrap()], &[(libc::RLIMIT_RTPRIO, 0)]).output().unwrap(),
            u.db(),
        )
    } else {
        let spec = lab.spec("rt.toml", text);
        (lab.run(&["run", spec.to_str().unwrap()]), lab.db())
    };
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rt.toml:4:11:") && err.contains("CAP_SYS_NICE"), "{err}");
    assert!(!exists(&db));
}

/// 100,000 processes passed `check`, then exhausted kernel.pid_max and starved the machine
/// for about 35 s.
#[test]
fn a_cell_beyond_the_machines_limits_is_refused_before_anything_is_spawned() {
    let text =
        "name = \"big\"\n[matrix]\nworkload = [\"cpu\"]\nprocesses = [2, 100000]\n[workloads.cpu]\nkind = \"pi\"\niterations = 1000\n";
    let pid_max: u64 =
        std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    require!(
        pid_max < 101_003,
        format!(
            "kernel.pid_max is {pid_max}: 100,000 processes (the most a spec may ask) fit under it"
        )
    );
    let says = |out: &std::process::Output, what: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains(
                "big.toml:4:17: cell 1 (cpu/other/n100000) needs 100,003 processes and threads"
            ),
            "{what}: {err}"
        );
        assert!(
            err.contains(&format!("kernel.pid_max is {},{:03}", pid_max / 1000, pid_max % 1000)),
            "{what}: {err}"
        );
        assert!(!err.contains("[1/"), "{what}: no cell started: {err}");
    };
    let lab = Lab::new();
    let spec = lab.spec("big.toml", text);
    says(&lab.run(&["check", spec.to_str().unwrap()]), "check");
    assert!(!exists(&lab.db()));
    // `run` as a user whose RLIMIT_NPROC would stop a regression at 200 forks: root ignores it.
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    let u = Dropped::new();
    let spec = u.spec("big.toml", text);
    says(
        &u.cmd(&["run", spec.to_str().unwrap()], &[(libc::RLIMIT_NPROC, 200)]).output().unwrap(),
        "run",
    );
    let left: Vec<String> = std::fs::read_dir(u.work())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["big.toml"], "no database, journal or experiment directory");
}

#[test]
fn check_prints_the_plan_without_running() {
    let lab = Lab::new();
    let out = lab.ok(&[
        "check",
        concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/pa3.toml"),
        "--scale",
        "0.01",
    ]);
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

/// `schedlab env | head`: a reader that goes away ends the command quietly (SIGPIPE, as for
/// cat), never with a panic about a broken pipe.
#[test]
fn a_closed_pipe_ends_a_printing_command_without_a_panic() {
    let lab = Lab::new();
    for _ in 0..3 {
        let mut child = lab
            .cmd(&["env"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && out.status.code() != Some(101),
            "{:?}: {stderr}",
            out.status
        );
    }
}

/// A state directory another user owns (made first in a shared temp dir, say) could hold
/// journals planted for `restore` to replay: `run` refuses it before anything is recorded.
#[test]
fn a_state_dir_of_another_user_is_refused_before_the_run_is_recorded() {
    require!(is_root(), "giving a directory to another user needs root");
    let lab = Lab::new();
    let theirs = lab.path("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let spec = lab.spec("t.toml", "name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"command\"\nargv = [\"true\"]\n");
    let out = lab
        .cmd(&["run", spec.to_str().unwrap()])
        .env("SCHEDLAB_STATE_DIR", &theirs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a directory of this user"), "{stderr}");
    assert!(!lab.db().exists(), "nothing was recorded");
}
