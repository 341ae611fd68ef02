//! A standard output that refuses writes (a full disk: /dev/full) is an error of one line and
//! exit status 1, never a panic, for every command that prints (issue #31 item 8).

use crate::util::Lab;
use std::process::Stdio;

const SPEC: &str = "name = \"one\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n";

#[test]
fn every_printing_command_exits_1_with_one_line_when_stdout_is_full() {
    let lab = Lab::new();
    let spec = lab.spec("one.toml", SPEC);
    let spec = spec.to_str().unwrap();
    let db = lab.db();
    let db = db.to_str().unwrap();
    let merged = lab.path("all.db");
    let commands: [&[&str]; 10] = [
        &["run", spec],
        &["show"],
        &["runs"],
        &["env"],
        &["check", spec],
        &["report", "-o", "report"],
        &["completions", "bash"],
        &["export", "--format", "csv"],
        &["merge", "-o", merged.to_str().unwrap(), db],
        &["restore"],
    ];
    for args in commands {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = lab.cmd(args).stdout(Stdio::from(full)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("error: ") && last.contains("No space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{args:?}: {err}");
        assert_eq!(err.lines().filter(|l| l.starts_with("error")).count(), 1, "{args:?}: {err}");
    }
    // The run whose tables could not be printed is stored complete all the same.
    assert!(lab.ok(&["runs"]).contains("complete"));
}
