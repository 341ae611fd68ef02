//! Issue 38: a shell in a cgroup without RT runtime under RT group scheduling. The kernel
//! refuses SCHED_FIFO there, root or not; schedlab asks the kernel (a forked child tries each
//! policy), moves its engine where real-time is allowed when it may (journaled, undone), and
//! otherwise skips or refuses the real-time cells by name before anything changes.

use crate::util::{is_root, Lab};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The v1 cpu hierarchy's root, where a new cgroup gets `cpu.rt_runtime_us = 0`.
const CPU_V1: &str = "/sys/fs/cgroup/cpu";

/// A cpu cgroup of the test's own, new ones holding no RT runtime (removed on drop, whatever
/// is left in it moved back to the root first).
pub(crate) struct TestCgroup {
    pub(crate) dir: PathBuf,
}

/// Why the reproduction is impossible here, if it is.
pub(crate) fn cannot_reproduce() -> Option<String> {
    if !is_root() {
        return Some("making a cpu cgroup needs root".into());
    }
    if !Path::new(CPU_V1).join("cpu.rt_runtime_us").exists() {
        return Some(format!(
            "no RT group scheduling on a v1 cpu hierarchy here ({CPU_V1}/cpu.rt_runtime_us)"
        ));
    }
    None
}

impl TestCgroup {
    fn new(tag: &str) -> TestCgroup {
        let cg = TestCgroup::with(&format!("rtzero-{tag}"), &[]);
        assert_eq!(runtime(&cg.dir), "0", "a new cpu cgroup holds no RT runtime");
        cg
    }

    /// A new cgroup with each of `files` (a control file and its value) written in order.
    pub(crate) fn with(tag: &str, files: &[(&str, &str)]) -> TestCgroup {
        let dir = Path::new(CPU_V1).join(format!("schedlab-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).expect("mkdir the cpu cgroup");
        let cg = TestCgroup { dir };
        for (file, value) in files {
            std::fs::write(cg.dir.join(file), value)
                .unwrap_or_else(|e| panic!("writing {value} to {file}: {e}"));
        }
        cg
    }

    /// `cmd`, started inside this cgroup (the child writes itself in before it execs).
    pub(crate) fn enter(&self, mut cmd: Command) -> Command {
        let procs = CString::new(self.dir.join("cgroup.procs").as_os_str().as_bytes()).unwrap();
        // SAFETY: open/write/close are async-signal-safe; nothing else runs before exec.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if n != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Anything left inside goes back to the root first (rmdir refuses a populated cgroup).
        if let Ok(text) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in text.lines() {
                let _ = std::fs::write(Path::new(CPU_V1).join("cgroup.procs"), pid);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn runtime(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("cpu.rt_runtime_us")).unwrap().trim().to_string()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn probe_env_in_a_cgroup_without_rt_runtime_names_the_cgroup_and_rt_group_scheduling() {
    require!(cannot_reproduce().is_none(), &cannot_reproduce().unwrap_or_default());
    let (lab, zero) = (Lab::new(), TestCgroup::new("env"));
    let out = zero.enter(lab.cmd(&["env"])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let cg = zero.dir.display().to_string();
    assert!(t.contains(&cg) && t.contains("cpu.rt_runtime_us 0"), "env names the cgroup: {t}");
    let policies = t.lines().find(|l| l.starts_with("policies allowed")).unwrap_or_default();
    // Root may move its engine to the hierarchy's root, and the probe tried that too.
    assert!(
        policies.contains("once a run moves its engine to /sys/fs/cgroup/cpu (tried)"),
        "{policies}"
    );

    let out = zero.enter(lab.cmd(&["env", "--json"])).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let probe = &v["policy_probe"];
    assert_eq!(probe["cpu_cgroup"]["dir"], cg.as_str(), "{probe}");
    assert_eq!(probe["cpu_cgroup"]["rt_runtime_us"], 0, "{probe}");
    assert_eq!(probe["tried"]["other"]["where"], "own cgroup", "{probe}");
    assert_eq!(probe["tried"]["fifo"]["where"], CPU_V1, "fifo was allowed only there: {probe}");
    let why = v["rt_placement"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("CONFIG_RT_GROUP_SCHED") && why.contains(&cg), "{why}");
    assert_eq!(runtime(&zero.dir), "0");
}

#[test]
fn placement_runs_the_builtin_experiment_s_rt_cells_under_their_policy_and_goes_back() {
    require!(cannot_reproduce().is_none(), &cannot_reproduce().unwrap_or_default());
    let _m = crate::util::measuring();
    let (lab, zero) = (Lab::new(), TestCgroup::new("run"));
    let out =
        zero.enter(lab.cmd(&["run", "--scale", "0.005", "--repetitions", "1"])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "exit {:?}: {t}", out.status.code());
    assert!(!t.contains("FAILED"), "{t}");
    let line = t.lines().find(|l| l.contains("real-time:")).unwrap_or_default();
    assert!(line.contains(&zero.dir.display().to_string()) && line.contains(CPU_V1), "{t}");
    // Every fifo and rr worker ran under its policy (as it saw itself after the release).
    let rows = lab.samples();
    let rt: Vec<_> = rows.iter().filter(|r| r["policy"] == "fifo" || r["policy"] == "rr").collect();
    assert!(!rt.is_empty(), "the built-in experiment has fifo and rr cells: {t}");
    for r in &rt {
        let extra: serde_json::Value =
            serde_json::from_str(r["extra"].as_str().unwrap_or("{}")).unwrap();
        assert_eq!(extra["policy"], r["class"], "the worker saw its class: {r}");
    }
    // The cgroup is as it was, and the engine left it empty again on its way out.
    assert_eq!(runtime(&zero.dir), "0");
    let state = lab.path("state");
    let left: Vec<_> = std::fs::read_dir(&state)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "no journal left behind: {left:?}");
}

#[test]
fn probe_without_a_way_out_the_builtin_skips_rt_cells_and_an_own_file_is_refused() {
    require!(cannot_reproduce().is_none(), &cannot_reproduce().unwrap_or_default());
    require!(
        crate::unprivileged::cannot_drop().is_none(),
        &crate::unprivileged::cannot_drop().unwrap_or_default()
    );
    // A user with CAP_SYS_NICE and nothing else: the privilege allows fifo, the cgroup does
    // not, and the user may not move into the hierarchy's root.
    let zero = TestCgroup::new("user");
    let u = crate::unprivileged::Dropped::new();
    let nice = |args: &[&str]| u.cmd_keeping(args, &[], &["sys_nice"]);
    let cg = zero.dir.display().to_string();
    let out = zero.enter(nice(&["env"])).output().unwrap();
    let policies = text(&out)
        .lines()
        .find(|l| l.starts_with("policies allowed"))
        .unwrap_or_default()
        .to_string();
    assert!(
        policies.contains("no fifo or rr")
            && policies.contains(&cg)
            && policies.contains("CONFIG_RT_GROUP_SCHED"),
        "{}",
        text(&out)
    );

    let out =
        zero.enter(nice(&["run", "--scale", "0.005", "--repetitions", "1"])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "exit {:?}: {t}", out.status.code());
    assert!(!t.contains("FAILED"), "{t}");
    let skipped: Vec<&str> = t.lines().filter(|l| l.starts_with("skipped")).collect();
    for policy in ["fifo", "rr"] {
        assert!(
            skipped.iter().any(|l| l.contains(&format!("/{policy}/")) && l.contains(&cg)),
            "the {policy} cells are skipped, naming the cgroup: {t}"
        );
    }

    let spec =
        u.spec("fifo.toml", "name = \"x\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifo\"]\n");
    let out = zero.enter(nice(&["run", spec.to_str().unwrap()])).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("fifo.toml:4:11") && t.contains(&cg) && t.contains("Remedy"), "{t}");
    assert_eq!(runtime(&zero.dir), "0");
}

#[test]
fn placement_gives_schedlab_s_own_cgroups_rt_runtime_so_fifo_groups_with_weights_run() {
    require!(cannot_reproduce().is_none(), &cannot_reproduce().unwrap_or_default());
    let _m = crate::util::measuring();
    let lab = Lab::new();
    let spec = lab.spec(
        "cgfifo.toml",
        "name = \"cgfifo\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"fifo\", \"rr\", \"other\"]\ncpu_weight = [200]\nprocesses = [2]\n",
    );
    let ours = Path::new(CPU_V1).join("schedlab");
    let before = ours.exists().then(|| runtime(&ours));
    let out = lab.run(&["run", "--scale", "0.01", "--repetitions", "1", spec.to_str().unwrap()]);
    let t = text(&out);
    assert!(out.status.success() && !t.contains("FAILED"), "exit {:?}: {t}", out.status.code());
    for r in lab.samples() {
        let extra: serde_json::Value =
            serde_json::from_str(r["extra"].as_str().unwrap_or("{}")).unwrap();
        assert_eq!(extra["policy"], r["class"], "the worker saw its class: {r}");
    }
    assert_eq!(ours.exists().then(|| runtime(&ours)), before, "schedlab's parent cgroup as it was");
}
