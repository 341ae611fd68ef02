//! Issue 47: limits that shape the figures are named. A shell in a cgroup with half a CPU of
//! quota, or with 300 ms of RT runtime a second, measured the limit while `show` said
//! "machine: 1 CPUs" (or the global RT throttling) and `check` said ok. `env`, `check` and the
//! run header name the limit, `show` has the throttling of each cell it hit, and
//! `--escape-limits` moves the engine out for the run and back, leaving no cgroup behind.

use crate::rt_cgroup::{cannot_reproduce, TestCgroup};
use crate::util::Lab;
use std::path::Path;
use std::process::{Command, Output};

/// Two workers of about 0.1 CPU-seconds each (pi: about 2.5 ns an iteration): under a tenth of
/// a CPU of quota they are throttled however busy the machine is.
const BUSY: &str = "name = \"busy\"\n[matrix]\nworkload = [\"w\"]\nprocesses = [2]\n[workloads.w]\nkind = \"pi\"\niterations = 40000000\n";

/// Two FIFO workers of about a quarter of a CPU-second each.
const FIFO: &str = "name = \"fifo\"\n[matrix]\nworkload = [\"w\"]\npolicy = [\"fifo\"]\nprocesses = [2]\n[workloads.w]\nkind = \"pi\"\niterations = 100000000\n";

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Why a v1 cpu cgroup with a CFS quota cannot be made here, if it cannot.
fn cannot_quota() -> Option<String> {
    cannot_reproduce().or_else(|| {
        (!Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists())
            .then(|| "no CFS bandwidth control on the v1 cpu hierarchy".into())
    })
}

/// A cgroup of `quota_us` of CPU time every 100 ms.
fn quota(tag: &str, quota_us: &str) -> TestCgroup {
    TestCgroup::with(tag, &[("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", quota_us)])
}

/// The run header's lines of `show`'s output: up to the first blank line.
fn header(show: &str) -> &str {
    show.split("\n\n").next().unwrap_or_default()
}

/// `show` after a run of `spec` in `cg` with `--escape-limits`, whose header says the limit
/// was lifted (and where to: `to` follows the words).
fn escaped(lab: &Lab, cg: &TestCgroup, spec: &str, to: &str) -> String {
    let args = ["run", spec, "--repetitions", "1", "--escape-limits"];
    let out = cg.enter(lab.cmd(&args)).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "exit {:?}: {t}", out.status.code());
    let show = lab.ok(&["show"]);
    let lifted = format!("(lifted for this run: its engine and workers ran in {to}");
    assert!(header(&show).contains(&lifted), "{show}");
    show
}

#[test]
fn a_cpu_quota_is_named_by_env_check_and_the_run_header_and_show_has_its_throttling() {
    require!(cannot_quota().is_none(), &cannot_quota().unwrap_or_default());
    let _m = crate::util::measuring();
    let (lab, cg) = (Lab::new(), quota("quota", "10000"));
    let at = cg.dir.display().to_string();
    let named =
        format!("0.1 CPU of quota (cpu.cfs_quota_us 10000 / cpu.cfs_period_us 100000 at {at})");

    let out = cg.enter(lab.cmd(&["env"])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let line = t.lines().find(|l| l.starts_with("limits ")).unwrap_or_default();
    assert!(line.contains(&named) && line.contains("--escape-limits"), "{t}");
    let cpu = t.lines().find(|l| l.starts_with("cpu ")).unwrap_or_default();
    assert!(!cpu.starts_with("cpu              1 x"), "the quota is no CPU count: {cpu}");

    let out = cg.enter(lab.cmd(&["env", "--json"])).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["limits"]["limits"][0]["limit"], named.as_str(), "{}", v["limits"]);
    let stored = &v["environment"]["limits"][0];
    assert_eq!((&stored["kind"], &stored["quota_us"]), (&"cpu_quota".into(), &10_000.into()));

    let spec = lab.spec("busy.toml", BUSY);
    let spec = spec.to_str().unwrap();
    let out = cg.enter(lab.cmd(&["check", spec])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "a limit is a warning, not a refusal: {t}");
    let warned = t.lines().find(|l| l.starts_with("warning: limit: ")).unwrap_or_default();
    assert!(warned.contains(&named) && warned.contains("Remedy: --escape-limits"), "{t}");

    // Workers kept off the CPUs by other work may not reach even a tenth of one: then again.
    schedlab_testkit::in_some_attempt("throttled by the quota", 3, |_| {
        let out = cg.enter(lab.cmd(&["run", spec, "--repetitions", "2"])).output().unwrap();
        let t = text(&out);
        assert!(out.status.success(), "exit {:?}: {t}", out.status.code());
        let show = lab.ok(&["show"]);
        assert!(header(&show).contains(&format!("limit: {named}")), "{show}");
        let row = show.lines().find(|l| l.contains("throttled ")).unwrap_or_default();
        if !(row.contains(" s/rep (") && row.contains(" periods)")) {
            return Err(format!("no cell's note says it was throttled: {show}"));
        }
        let warned = "1 of 1 cells was throttled by a CPU quota outside the spec";
        assert!(show.contains(warned) && show.contains(&at), "{show}");
        Ok(())
    });
}

#[test]
fn escape_limits_runs_out_of_the_quota_unthrottled_and_leaves_no_cgroup_behind() {
    require!(cannot_quota().is_none(), &cannot_quota().unwrap_or_default());
    let _m = crate::util::measuring();
    let (lab, cg) = (Lab::new(), quota("escape", "50000"));
    let ours = Path::new("/sys/fs/cgroup/cpu/schedlab");
    let before = ours.exists();
    let spec = lab.spec("busy.toml", BUSY);
    let spec = spec.to_str().unwrap();

    let out = cg.enter(lab.cmd(&["check", spec, "--escape-limits"])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(!t.contains("warning: limit: "), "{t}");
    let note = t
        .lines()
        .find(|l| l.starts_with("limits: --escape-limits lifts 0.5 CPU"))
        .unwrap_or_default();
    assert!(note.contains(&cg.dir.display().to_string()) && note.contains("moved back"), "{t}");

    let show = escaped(&lab, &cg, spec, "");
    assert!(!show.contains("throttled"), "out of the quota, nothing throttled: {show}");
    // Back where it came from: the engine left the test's cgroup empty as it exited, and
    // schedlab made no cgroup that outlives the run.
    assert_eq!(std::fs::read_to_string(cg.dir.join("cgroup.procs")).unwrap(), "");
    assert_eq!(ours.exists(), before, "schedlab's parent cgroup as it was");
    let engines: Vec<_> = std::fs::read_dir(ours)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("engine-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(engines.is_empty(), "{engines:?}");
    let left: Vec<_> = std::fs::read_dir(lab.path("state"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "no journal left behind: {left:?}");
}

#[test]
fn an_rt_runtime_below_the_machines_is_named_by_env_check_and_the_run_header() {
    require!(cannot_reproduce().is_none(), &cannot_reproduce().unwrap_or_default());
    let _m = crate::util::measuring();
    let (lab, cg) = (Lab::new(), TestCgroup::with("rt300", &[("cpu.rt_runtime_us", "300000")]));
    let named = format!(
        "RT runtime 300000 / 1000000 us, 30% of each period on each CPU (cpu.rt_runtime_us at {}",
        cg.dir.display()
    );
    let out = cg.enter(lab.cmd(&["env"])).output().unwrap();
    let t = text(&out);
    let line = t.lines().find(|l| l.starts_with("limits ")).unwrap_or_default();
    assert!(out.status.success() && line.contains(&named), "{t}");

    let spec = lab.spec("fifo.toml", FIFO);
    let spec = spec.to_str().unwrap();
    let out = cg.enter(lab.cmd(&["check", spec])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let warned = t.lines().find(|l| l.starts_with("warning: limit: ")).unwrap_or_default();
    assert!(warned.contains(&named) && warned.contains("Remedy: --escape-limits"), "{t}");

    let out = cg.enter(lab.cmd(&["run", spec, "--repetitions", "1"])).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "exit {:?}: {t}", out.status.code());
    let show = lab.ok(&["show"]);
    assert!(header(&show).contains(&format!("limit: {named}")), "{show}");
    let warned =
        show.lines().find(|l| l.contains("real-time workers under RT runtime")).unwrap_or_default();
    assert!(
        warned.contains("w/fifo/n2 ") && warned.contains(" s/proc, "),
        "the cell's wait: {show}"
    );

    // Asked, the engine runs where the machine's RT runtime is, and comes back.
    escaped(&lab, &cg, spec, "/sys/fs/cgroup/cpu)");
    assert_eq!(std::fs::read_to_string(cg.dir.join("cgroup.procs")).unwrap(), "");
    assert_eq!(std::fs::read_to_string(cg.dir.join("cpu.rt_runtime_us")).unwrap().trim(), "300000");
}

/// `c` in a new cgroup and mount namespace whose v1 cpu hierarchy is mounted afresh: its
/// root is the cgroup `c` was started in, as a container sees its own.
fn as_its_root(c: Command) -> Command {
    let mut u = Command::new("unshare");
    u.args(["--cgroup", "--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs none /sys/fs/cgroup && mkdir /sys/fs/cgroup/cpu && mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu && exec \"$0\" \"$@\"");
    crate::util::wrapped(c, u)
}

#[test]
fn escape_limits_of_a_quota_on_the_hierarchys_root_are_refused_alike_by_check_and_run() {
    require!(cannot_quota().is_none(), &cannot_quota().unwrap_or_default());
    let namespaces = Command::new("unshare").args(["--cgroup", "--mount", "true"]).status();
    require!(namespaces.is_ok_and(|s| s.success()), "no cgroup namespace here (unshare --cgroup)");
    let (lab, cg) = (Lab::new(), quota("container", "50000"));
    let inside = |c: Command| cg.enter(as_its_root(c));
    let says = ["--escape-limits cannot lift 0.5 CPU of quota", "only the host can lift it"];
    let pi = "name = \"s\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"pi\"\niterations = 1000\n";
    crate::preflight::refuse_alike(
        &lab,
        "a container's quota",
        pi,
        &["--escape-limits"],
        &inside,
        &says,
    );
    assert!(!lab.db().exists(), "refused before anything was recorded");
}
