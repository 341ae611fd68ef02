//! schedlab as an ordinary user: what needs no privilege runs to the end, what needs one is
//! refused by name before anything changes, and a fork that fails mid-cell fails that cell
//! only. As root, these tests drop to a user of their own with no capabilities (setpriv),
//! running a copy of the binary from a directory that user can reach: a checkout (and its
//! target/) may be private (0700).

use crate::util::is_root;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SETPRIV: &str = "/usr/bin/setpriv";

/// A user of this test run's own (no other process runs as it, so RLIMIT_NPROC counts only
/// ours), with a reachable copy of the binary and a directory it owns.
pub struct Dropped {
    /// Removed on drop; 0755, holds the binary's copy and `work`.
    base: tempfile::TempDir,
    /// The uid and gid the commands run as.
    pub uid: u32,
}

/// A directory every user can reach (each ancestor searchable by others): the temp dir, or
/// /tmp when TMPDIR points into a private tree.
fn public_parent() -> Option<PathBuf> {
    let searchable = |p: &Path| {
        p.ancestors().all(|a| {
            std::fs::metadata(a).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0)
        })
    };
    [std::env::temp_dir(), PathBuf::from("/tmp")].into_iter().find(|p| searchable(p))
}

/// Why dropping privileges is impossible here, if it is.
pub fn cannot_drop() -> Option<String> {
    if !is_root() {
        return Some("dropping to another user needs root".into());
    }
    if !Path::new(SETPRIV).exists() {
        return Some("setpriv (util-linux) is not installed".into());
    }
    if public_parent().is_none() {
        return Some("no temp directory that other users can reach".into());
    }
    None
}

impl Dropped {
    /// A fresh user of this test process, never shared: its Drop ends every process of the
    /// uid (callers check [`cannot_drop`] first).
    pub fn new() -> Dropped {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(n < 16, "16 users per test process");
        let uid = 40_000 + (std::process::id() % 2_000) * 16 + n;
        let base = tempfile::Builder::new()
            .prefix("schedlab-unprivileged-")
            .tempdir_in(public_parent().expect("checked"))
            .unwrap();
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = base.path().join("schedlab");
        std::fs::copy(env!("CARGO_BIN_EXE_schedlab"), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let work = base.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::os::unix::fs::chown(&work, Some(uid), Some(uid)).unwrap();
        Dropped { base, uid }
    }

    /// The directory the user owns: database, TMPDIR, state, specs.
    pub fn work(&self) -> PathBuf {
        self.base.path().join("work")
    }

    /// The results database.
    pub fn db(&self) -> PathBuf {
        self.work().join("results.db")
    }

    /// Writes a spec the user can read.
    pub fn spec(&self, name: &str, text: &str) -> PathBuf {
        let p = self.work().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }

    /// `schedlab --db <db> args...` as the user, without capabilities, with `limits`
    /// (resource, value) set as both soft and hard limits first.
    pub fn cmd(&self, args: &[&str], limits: &[(libc::__rlimit_resource_t, u64)]) -> Command {
        self.cmd_keeping(args, limits, &[])
    }

    /// [`Dropped::cmd`], keeping the capabilities `keep` (e.g. `sys_nice`) as ambient ones:
    /// a user that may set any policy but writes nothing of root's.
    pub fn cmd_keeping(
        &self,
        args: &[&str],
        limits: &[(libc::__rlimit_resource_t, u64)],
        keep: &[&str],
    ) -> Command {
        let caps: String = keep.iter().map(|c| format!(",+{c}")).collect();
        let mut c = Command::new(SETPRIV);
        c.args([format!("--reuid={}", self.uid), format!("--regid={}", self.uid)])
            .args(["--clear-groups", &format!("--inh-caps=-all{caps}")])
            .args((!keep.is_empty()).then(|| format!("--ambient-caps=-all{caps}")))
            .arg("--")
            .arg(self.base.path().join("schedlab"))
            .arg("--db")
            .arg(self.db())
            .args(args)
            .env("TMPDIR", self.work())
            .env("SCHEDLAB_STATE_DIR", self.work().join("state"))
            .env_remove("XDG_RUNTIME_DIR")
            .current_dir(self.work());
        let limits = limits.to_vec();
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            c.pre_exec(move || {
                for &(res, v) in &limits {
                    let rl = libc::rlimit { rlim_cur: v, rlim_max: v };
                    if libc::setrlimit(res, &rl) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        c
    }

    /// Runs `schedlab args...` as the user.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args, &[]).output().expect("setpriv runs")
    }

    /// The pids of every process of this user now, with their command lines.
    pub fn processes(&self) -> Vec<(i32, String)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(status) = std::fs::read_to_string(e.path().join("status")) else { continue };
            let real = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok());
            if real == Some(self.uid) {
                let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                out.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
            }
        }
        out
    }
}

impl Drop for Dropped {
    /// Ends what the test left running as its user (the sleepers a test plants): this uid
    /// is the test's own, so every process of it is one the test started.
    fn drop(&mut self) {
        for (pid, _) in self.processes() {
            // SAFETY: signalling a process of this test's own user.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Every row of `sql`.
fn rows<T>(
    db: &rusqlite::Connection,
    sql: &str,
    row: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
) -> Vec<T> {
    db.prepare(sql).unwrap().query_map([], row).unwrap().map(Result::unwrap).collect()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn an_unprivileged_user_runs_policy_other_batch_and_idle_to_the_end() {
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    let u = Dropped::new();
    let spec = u.spec(
        "other.toml",
        "name = \"unprivileged\"\nrepetitions = 1\nwarmup = 0\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"b\", \"idle\"]\nprocesses = [2]\n[workloads.cpu]\nkind = \"pi\"\niterations = 200000\n[policies.b]\nclass = \"batch\"\nnice = 5\n",
    );
    let check = u.run(&["check", spec.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    let run = u.run(&["run", "-q", spec.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let db = rusqlite::Connection::open(u.db()).unwrap();
    let cells: Vec<(String, String)> =
        rows(&db, "SELECT key, status FROM cells ORDER BY ordinal", |r| Ok((r.get(0)?, r.get(1)?)));
    assert_eq!(cells.len(), 3, "{cells:?}");
    assert!(cells.iter().all(|(_, s)| s == "ok"), "{cells:?}");
    // What the workers saw after the release, not what was asked.
    let sql = "SELECT c.key, s.extra_json FROM samples s JOIN cells c ON c.id = s.cell_row ORDER BY c.ordinal, s.idx";
    let seen: Vec<(String, String)> = rows(&db, sql, |r| Ok((r.get(0)?, r.get(1)?)));
    assert_eq!(seen.len(), 6, "two workers per cell: {seen:?}");
    for (key, extra) in &seen {
        let extra: serde_json::Value = serde_json::from_str(extra).unwrap();
        let want = match key.split('/').nth(1) {
            Some("other") => ("other", 0),
            Some("b") => ("batch", 5),
            _ => ("idle", 0),
        };
        assert_eq!(
            (extra["policy"].as_str().unwrap(), extra["nice"].as_i64().unwrap()),
            want,
            "{key}: {extra}"
        );
    }
    let run_status: String = db.query_row("SELECT status FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(run_status, "complete");
}

#[test]
fn an_unprivileged_user_runs_fifo_and_rr_up_to_rlimit_rtprio() {
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    let u = Dropped::new();
    let rtprio = [(libc::RLIMIT_RTPRIO, 10)];
    // Raising the hard limit needs CAP_SYS_RESOURCE, which some containers withhold from root.
    require!(
        u.cmd(&["env"], &rtprio).output().is_ok(),
        "this root cannot raise RLIMIT_RTPRIO (no CAP_SYS_RESOURCE)"
    );
    let rt = "name = \"rt\"\nrepetitions = 1\nwarmup = 0\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"f\", \"r\"]\nprocesses = [2]\n[workloads.cpu]\nkind = \"pi\"\niterations = 200000\n[policies.f]\nclass = \"fifo\"\npriority = 10\n[policies.r]\nclass = \"rr\"\npriority = 5\n";
    let spec = u.spec("rt.toml", rt);
    let run = u.cmd(&["run", "-q", spec.to_str().unwrap()], &rtprio).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let db = rusqlite::Connection::open(u.db()).unwrap();
    let seen: Vec<String> = rows(&db, "SELECT extra_json FROM samples", |r| r.get(0));
    let policies: Vec<String> = seen
        .iter()
        .map(|e| {
            serde_json::from_str::<serde_json::Value>(e).unwrap()["policy"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(policies.iter().filter(|p| *p == "fifo").count(), 2, "{policies:?}");
    assert_eq!(policies.iter().filter(|p| *p == "rr").count(), 2, "{policies:?}");
    let above = u.spec("above.toml", &rt.replace("priority = 10", "priority = 11"));
    let out = u.cmd(&["check", above.to_str().unwrap()], &rtprio).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("RLIMIT_RTPRIO >= 11") && text(&out).contains("RLIMIT_RTPRIO = 10"),
        "{}",
        text(&out)
    );
}

#[test]
fn what_needs_a_privilege_is_refused_by_name_before_anything_changes() {
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    let u = Dropped::new();
    let cases = [
        ("cgroup.toml", "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\ncpu_weight = [200]\n", "4:14:", "needs write access to /sys/fs/cgroup"),
        ("fifo.toml", "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifo\"]\n", "4:11:", "RLIMIT_RTPRIO >= 50"),
        (
            "nice.toml",
            "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"n\"]\n[policies.n]\nclass = \"other\"\nnice = -5\n",
            "7:8:",
            "nice -5 is below this process's nice 0: it needs CAP_SYS_NICE",
        ),
        (
            "dl.toml",
            "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"d\"]\n[policies.d]\nclass = \"deadline\"\nruntime_us = 1000\nperiod_us = 10000\n",
            "5:11:",
            "SCHED_DEADLINE needs CAP_SYS_NICE",
        ),
        ("loop.toml", "name = \"x\"\n[device]\nsize_mib = 64\n[matrix]\nworkload = [\"pi\"]\n", "2:1:", "needs CAP_SYS_ADMIN"),
        (
            "dir.toml",
            "name = \"x\"\n[device]\npath = \"/tmp\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"par_write\"\n",
            "2:1:",
            "writes /proc/sys/vm/drop_caches: only root may",
        ),
    ];
    for (file, spec_text, at, says) in cases {
        let spec = u.spec(file, spec_text);
        for sub in ["check", "run"] {
            let out = u
                .cmd(&[sub, spec.to_str().unwrap()], &[(libc::RLIMIT_RTPRIO, 0)])
                .output()
                .unwrap();
            let all = text(&out);
            assert_eq!(out.status.code(), Some(2), "{sub} {file}: {all}");
            assert!(
                all.contains(&format!("{file}:{at}")) && all.contains(says),
                "{sub} {file}: {all}"
            );
        }
    }
    let left: Vec<String> = std::fs::read_dir(u.work())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.iter().all(|f| f.ends_with(".toml")),
        "no database, journal or experiment directory: {left:?}"
    );
}

#[test]
fn env_says_what_an_unprivileged_user_may_do() {
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    let u = Dropped::new();
    let out = u.cmd(&["env"], &[(libc::RLIMIT_RTPRIO, 0)]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    for line in [
        "CAP_SYS_NICE     no",
        "policies allowed other, batch, idle at nice >= 0; no fifo or rr (RLIMIT_RTPRIO is 0); no deadline (needs CAP_SYS_NICE)",
        "cgroups          no: needs write access to /sys/fs/cgroup",
        "I/O schedulers   no",
        "loop devices     no: needs CAP_SYS_ADMIN",
    ] {
        assert!(s.contains(line), "{line:?} in:\n{s}");
    }
    for limit in
        ["kernel.pid_max   ", "threads-max      ", "RLIMIT_NPROC     ", "MemAvailable     "]
    {
        let value = s
            .lines()
            .find_map(|l| l.strip_prefix(limit))
            .unwrap_or_else(|| panic!("{limit} in:\n{s}"));
        assert!(value.split_whitespace().next().unwrap().parse::<u64>().is_ok(), "{limit}{value}");
    }
}

/// RLIMIT_NPROC is checked against the largest cell before the run, so the only honest way
/// to make a fork fail mid-run is what happens on real machines: other processes of the same
/// user appear after the check. Here the spec's first two cells plant them (a command that
/// leaves a sleeper in a session of its own, 40 in all); with RLIMIT_NPROC 66 the check
/// passes (1 + 30 + 3 engine threads + 3 kept back <= 66), then cell 2 has room for 25 of its
/// 30 workers (66 - the engine - 40 sleepers) and cell 3's 10 workers fit again.
#[test]
fn a_fork_that_fails_mid_cell_fails_that_cell_and_the_run_goes_on() {
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    require!(
        Path::new("/usr/bin/setsid").exists() && Path::new("/bin/sleep").exists(),
        "setsid or sleep missing"
    );
    let u = Dropped::new();
    let spec = u.spec(
        "nproc.toml",
        "name = \"nproc\"\nrepetitions = 1\nwarmup = 0\n[matrix]\nworkload = [\"plant\", \"cpu\"]\nprocesses = [30, 10]\n[workloads.plant]\nkind = \"command\"\nargv = [\"/usr/bin/setsid\", \"--fork\", \"/bin/sleep\", \"300\"]\n[workloads.cpu]\nkind = \"pi\"\niterations = 100000\n",
    );
    let out = u
        .cmd(&["run", "-q", spec.to_str().unwrap()], &[(libc::RLIMIT_NPROC, 66)])
        .output()
        .unwrap();
    // The run is not refused, goes on after the failed cell, and exits 1 for it.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let db = rusqlite::Connection::open(u.db()).unwrap();
    let cells: Vec<(String, String, Option<String>)> =
        rows(&db, "SELECT key, status, message FROM cells ORDER BY ordinal", |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        });
    let keys: Vec<&str> = cells.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        keys,
        ["plant/other/n30", "plant/other/n10", "cpu/other/n30", "cpu/other/n10"],
        "{cells:?}"
    );
    let sleepers = u.processes().iter().filter(|(_, c)| c.starts_with("/bin/sleep 300")).count();
    assert_eq!(sleepers, 40, "the first two cells planted a sleeper each: {cells:?}");
    let (_, status, msg) = &cells[2];
    assert_eq!(status, "failed", "{cells:?}");
    let msg = msg.as_deref().unwrap_or_default();
    assert!(
        msg.contains("could not start worker 25 of 30")
            && msg.contains("Resource temporarily unavailable"),
        "{msg}"
    );
    assert_eq!(cells[3].1, "ok", "the run went on: {cells:?}");
    let samples: i64 = db
        .query_row("SELECT COUNT(*) FROM samples s JOIN cells c ON c.id = s.cell_row WHERE c.key = 'cpu/other/n10'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(samples, 10);
    let workers: Vec<(i32, String)> =
        u.processes().into_iter().filter(|(_, c)| c.contains("__worker")).collect();
    assert!(workers.is_empty(), "no worker of the failed cell is left: {workers:?}");
}

/// The README's first command: the built-in experiment has fifo and rr cells, which an
/// ordinary user may not run; they are left out by name and the rest runs to exit 0.
#[test]
fn the_builtin_experiment_runs_for_an_ordinary_user_and_names_what_it_skipped() {
    require!(cannot_drop().is_none(), cannot_drop().unwrap());
    let u = Dropped::new();
    let args = ["run", "-q", "--scale", "0.001", "--repetitions", "1"];
    let out = u.cmd(&args, &[(libc::RLIMIT_RTPRIO, 0)]).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    for policy in ["FIFO", "RR"] {
        let line = all
            .lines()
            .find(|l| l.contains(&format!("SCHED_{policy} priority 50 needs CAP_SYS_NICE")))
            .unwrap_or_else(|| panic!("a line for {policy}: {all}"));
        assert!(line.starts_with("skipped 6 cells (not run, not failed)"), "{line}");
        assert!(line.contains("RLIMIT_RTPRIO = 0") && line.contains("io/"), "{line}");
    }
    assert!(!all.contains("FAILED"), "{all}");
    let db = rusqlite::Connection::open(u.db()).unwrap();
    let cells: Vec<(String, String)> =
        rows(&db, "SELECT key, status FROM cells ORDER BY ordinal", |r| Ok((r.get(0)?, r.get(1)?)));
    assert_eq!(cells.len(), 6, "{cells:?}");
    assert!(cells.iter().all(|(k, s)| s == "ok" && k.contains("/other/")), "{cells:?}");
    let show = u.run(&["show"]);
    let shown = text(&show);
    assert_eq!(show.status.code(), Some(0), "{shown}");
    assert_eq!(shown.matches("skipped 6 cells (not run, not failed)").count(), 2, "{shown}");
}
