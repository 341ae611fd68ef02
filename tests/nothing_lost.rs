//! Nothing measured is lost when the results database fails mid-run.

use crate::util::{rows_in, wait_first_cell, Lab};
use std::process::Stdio;

/// A database locked by another process after the first cell: the run finishes its cells,
/// spools the ones the database refuses, exits 1 naming the command that imports them, and
/// that command, pasted, stores every cell and completes the run.
#[test]
fn a_locked_database_spools_finished_cells_and_resume_imports_them() {
    let lab = Lab::new();
    let spec = lab.spec(
        "three.toml",
        "name = \"three\"\n[matrix]\nworkload = [\"a\", \"b\", \"c\"]\nprocesses = [1]\n[workloads.a]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n\
         [workloads.b]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n[workloads.c]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n",
    );
    let child = lab
        .cmd(&["run", spec.to_str().unwrap(), "-q"])
        .env("SCHEDLAB_BUSY_TIMEOUT_MS", "100")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_first_cell(&lab.db());
    // Another process takes the write lock and keeps it until the run has ended.
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = child.wait_with_output().unwrap();
    db.execute_batch("COMMIT").unwrap();
    drop(db);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("database is locked"), "the error says why: {stderr}");
    let spool = std::fs::read_dir(lab.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".spool-run"))
        .expect("a spool file beside the database");
    assert!(stderr.contains(&spool.display().to_string()), "the error names the spool: {stderr}");
    let in_db = rows_in(&lab.db(), "cells");
    assert!(in_db < 3, "some cells were spooled, not stored");
    // The command the error printed, pasted as it is.
    let hint = stderr.rsplit('`').nth(1).unwrap_or_else(|| panic!("no command in: {stderr}"));
    assert!(hint.ends_with("--resume"), "{hint}");
    let out = lab.paste(hint, &["-q"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{hint}: {stderr}");
    assert!(stderr.contains(&format!("imported {} cell repetitions", 3 - in_db)), "{stderr}");
    assert!(stderr.contains("0 to go"), "every cell was measured once: {stderr}");
    assert!(!spool.exists(), "the imported spool is removed");
    assert_eq!(rows_in(&lab.db(), "cells"), 3);
    assert_eq!(lab.samples().len(), 3);
    assert!(lab.ok(&["runs"]).contains("complete"));
}
