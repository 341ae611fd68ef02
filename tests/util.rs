//! Helpers for running the binary against a fresh directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Skips the current test (returning early), printing the reason where `cargo test` shows
/// it (see `schedlab_testkit::skip`).
#[macro_export]
macro_rules! require {
    ($cond:expr, $why:expr) => {
        if !$cond {
            schedlab_testkit::skip($why);
            return;
        }
    };
}

/// True when running as root (CAP_SYS_NICE for every policy).
pub fn is_root() -> bool {
    // SAFETY: no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// A test's own directory, with a database path and a spec writer.
pub struct Lab {
    /// The directory (removed on drop).
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        Lab { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn db(&self) -> PathBuf {
        self.path("results.db")
    }

    /// Writes a spec file and returns its path.
    pub fn spec(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `schedlab --db <db> args...` with the experiment files kept inside the test dir.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
        c.arg("--db")
            .arg(self.db())
            .args(args)
            .env("TMPDIR", self.dir.path())
            .env("SCHEDLAB_STATE_DIR", self.path("state"))
            .current_dir(self.dir.path());
        c
    }

    /// Runs a `schedlab ...` command line as schedlab printed it for the user to paste (in
    /// this lab's directory, without SCHEDLAB_DB: the line must name everything it needs),
    /// with `extra` arguments after it.
    pub fn paste(&self, line: &str, extra: &[&str]) -> Output {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"schedlab"), "not a schedlab command: {line}");
        Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(&words[1..])
            .args(extra)
            .env("TMPDIR", self.dir.path())
            .env("SCHEDLAB_STATE_DIR", self.path("state"))
            .env_remove("SCHEDLAB_DB")
            .current_dir(self.dir.path())
            .output()
            .expect("schedlab runs")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("schedlab runs")
    }

    /// Runs and insists on success.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "schedlab {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Every stored process of the newest run, from `schedlab export --format json`.
    pub fn samples(&self) -> Vec<serde_json::Value> {
        let text = self.ok(&["export", "--format", "json"]);
        serde_json::from_str::<Vec<serde_json::Value>>(&text).expect("export json parses")
    }
}

/// Mean of a numeric field over rows matching `pred`.
pub fn mean_of(
    rows: &[serde_json::Value],
    field: &str,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> f64 {
    let xs: Vec<f64> = rows
        .iter()
        .filter(|r| pred(r))
        .map(|r| r[field].as_f64().unwrap_or_else(|| panic!("{field} in {r}")))
        .collect();
    assert!(!xs.is_empty(), "no rows for {field}");
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// True when `path` exists.
pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// One lock for every test whose measurements real-time load would disturb (RT workers, the
/// live dispatcher, timing comparisons): they take turns across all test modules.
pub fn measuring() -> std::sync::MutexGuard<'static, ()> {
    static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    // Earlier tests' writeback can hold a vCPU off for tens of milliseconds: let it drain.
    schedlab_sys::procfs::settle_writeback(std::time::Duration::from_secs(20));
    guard
}

/// The rows of `show`'s per-CPU table of partitioned sets (none without the table).
pub fn per_cpu_rows(show: &str) -> Vec<&str> {
    let Some(table) = show.split("Partitioned sets, per CPU").nth(1) else { return Vec::new() };
    // The table runs to the first blank line; its rows are the lines with a workload name.
    table
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.contains("dwcs") || l.contains("edf") || l.contains("fifo"))
        .collect()
}

/// True when this kernel has tracefs (the traced tests skip without it).
pub fn tracing_possible() -> bool {
    std::fs::read_to_string("/proc/filesystems")
        .is_ok_and(|f| f.lines().any(|l| l.ends_with("tracefs")))
}

/// Waits until `done`, failing the test after `within`.
pub fn wait_for(what: &str, within: std::time::Duration, mut done: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !done() {
        assert!(t0.elapsed() < within, "{what} never happened");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The rows of `table` in the database at `db`, 0 while it cannot be read (not yet written).
pub fn rows_in(db: &Path, table: &str) -> i64 {
    let Ok(c) = rusqlite::Connection::open(db) else { return 0 };
    c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap_or(0)
}

/// Waits until a run has stored its first cell in the database at `db` (30 s at most).
pub fn wait_first_cell(db: &Path) {
    let within = std::time::Duration::from_secs(30);
    wait_for("the first cell stored", within, || rows_in(db, "cells") >= 1);
}

/// Waits for `child` to end, failing the test after `within`.
pub fn wait_exit(
    child: &mut std::process::Child,
    within: std::time::Duration,
) -> std::process::ExitStatus {
    wait_for("schedlab's end", within, || child.try_wait().unwrap().is_some());
    child.wait().unwrap()
}

/// The I/O schedulers this kernel offers a block device, in the kernel's order (`none,
/// mq-deadline, kyber`, with `bfq` where it is built): tests that switch schedulers take
/// what is here instead of assuming bfq (issue 47: a kernel without bfq).
pub fn io_schedulers() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    for e in dir.filter_map(Result::ok) {
        if let Ok(text) = std::fs::read_to_string(e.path().join("queue/scheduler")) {
            let names: Vec<String> =
                text.split_whitespace().map(|s| s.trim_matches(['[', ']']).to_string()).collect();
            if names.len() > 1 {
                return names;
            }
        }
    }
    Vec::new()
}

/// bfq where the kernel offers it, else `instead`: the scheduler a test switches to.
pub fn bfq_or(instead: &str) -> String {
    if io_schedulers().iter().any(|s| s == "bfq") {
        "bfq".into()
    } else {
        instead.into()
    }
}

/// `cmd`, started in a private mount namespace of its own in which /sys is a read-only bind
/// of itself, as a container mounts it (issue 47): the child makes every mount private before
/// it binds, so nothing reaches this machine's mounts, and the namespace ends with it. System
/// calls only, no shell between the test and the binary.
pub fn with_read_only_sys(mut cmd: Command) -> Command {
    use std::os::unix::process::CommandExt;
    let (root, sys) = (c"/", c"/sys");
    // SAFETY: unshare and mount are system calls (async-signal-safe) on static strings;
    // nothing is allocated between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let none = std::ptr::null::<libc::c_char>();
            let data = std::ptr::null::<libc::c_void>();
            let ok = |r: libc::c_int| match r {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            };
            ok(libc::unshare(libc::CLONE_NEWNS))?;
            ok(libc::mount(none, root.as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, data))?;
            ok(libc::mount(sys.as_ptr(), sys.as_ptr(), none, libc::MS_BIND, data))?;
            let ro = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
            ok(libc::mount(none, sys.as_ptr(), none, ro, data))
        });
    }
    cmd
}

/// Why [`with_read_only_sys`] cannot run here, if it cannot (not root, no mount namespaces).
pub fn no_read_only_sys() -> Option<String> {
    if !is_root() {
        return Some("a private mount namespace with a read-only /sys needs root".into());
    }
    match with_read_only_sys(Command::new("true")).status() {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("`true` in a read-only /sys namespace ended {s}")),
        Err(e) => Some(format!("no private mount namespace with a read-only /sys here: {e}")),
    }
}

/// `c` run by `wrapper` (a command that ends by exec'ing its arguments, such as `unshare ...
/// sh -c '... && exec "$0" "$@"'`): `c`'s program and arguments after the wrapper's, with
/// `c`'s environment and directory.
pub fn wrapped(c: Command, mut wrapper: Command) -> Command {
    wrapper.arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => wrapper.env(k, v),
            None => wrapper.env_remove(k),
        };
    }
    if let Some(d) = c.get_current_dir() {
        wrapper.current_dir(d);
    }
    wrapper
}
