//! A cell repetition the database refuses on a full disk, and that cannot be spooled either,
//! is named with both reasons, and no empty spool file is left (issue #31 item 9). Root only:
//! the database lives on a small tmpfs this test mounts and unmounts.

use crate::util::{is_root, wait_first_cell, Lab};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .unwrap();
        assert!(ok.success(), "mount a tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes into `dir` until its filesystem takes not one byte more.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 64 << 10];
    while f.write_all(&chunk).is_ok() {}
    while f.write_all(&[0]).is_ok() {}
    let _ = f.sync_all();
}

#[test]
fn a_cell_neither_stored_nor_spooled_is_named_and_no_empty_spool_is_left() {
    require!(is_root(), "mounting a tmpfs needs root");
    let lab = Lab::new();
    let small = Tmpfs::mount(&lab.path("small"), "4m");
    let db = small.0.join("results.db");
    let spec = lab.spec(
        "two.toml",
        "name = \"two\"\n[matrix]\nworkload = [\"a\", \"b\"]\n[workloads.a]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n\
         [workloads.b]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n",
    );
    let child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", spec.to_str().unwrap(), "-q"])
        .env("SCHEDLAB_DB", &db)
        .env("SCHEDLAB_BUSY_TIMEOUT_MS", "100")
        .env("TMPDIR", lab.dir.path())
        .env("SCHEDLAB_STATE_DIR", lab.path("state"))
        .current_dir(lab.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_first_cell(&db);
    // The database refuses the next cell (held locked), and the disk is full for its spool.
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    fill(&small.0);
    let out = child.wait_with_output().unwrap();
    std::fs::remove_file(small.0.join("filler")).unwrap();
    lock.execute_batch("COMMIT").unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let error = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"));
    assert!(error.starts_with("error: run 1 failed"), "the run's failure comes first: {err}");
    let cause = err
        .lines()
        .find(|l| l.contains("could neither be stored"))
        .unwrap_or_else(|| panic!("the lost cell is not named: {err}"));
    assert!(
        cause.contains("cell b/other/n1 rep 1") && cause.contains("database is locked"),
        "{cause}"
    );
    assert!(
        cause.contains("nor spooled to") && cause.contains("No space left on device"),
        "{cause}"
    );
    let spools: Vec<_> = std::fs::read_dir(&small.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".spool-"))
        .collect();
    assert!(spools.is_empty(), "no empty spool file left: {spools:?}");
    drop(small);
}

#[test]
fn a_full_state_directory_is_named_in_the_error() {
    require!(is_root(), "mounting a tmpfs needs root");
    let lab = Lab::new();
    let state = Tmpfs::mount(&lab.path("state"), "64k");
    let spec =
        lab.spec("one.toml", "name = \"one\"\n[matrix]\nworkload = [\"nap\"]\n[workloads.nap]\nkind = \"command\"\nargv = [\"true\"]\n");
    fill(&state.0);
    let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&state.0.display().to_string()),
        "the error names the state directory: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    drop(state);
}
