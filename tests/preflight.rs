//! One preflight for `check` and `run` (issue 47): whatever a run of a file would be refused
//! for here, `check` of it refuses too, with the same words and exit status 2, and both name
//! every refusal they find, not only the first.

use crate::util::{io_schedulers, is_root, measuring, no_read_only_sys, with_read_only_sys, Lab};
use std::path::Path;
use std::process::{Command, Output};

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// The same command in a private mount namespace where kernel.sched_rt_runtime_us reads
/// `-1` (a file holding it bound over the sysctl): RT throttling disabled as the command sees
/// it, while the machine, and every test running beside this one, keeps it on.
fn rt_unthrottled(lab: &Lab) -> impl Fn(Command) -> Command {
    let off = lab.spec("rt-runtime-off", "-1\n");
    let bind = format!("mount --bind '{}' {RT_RUNTIME} && exec \"$0\" \"$@\"", off.display());
    move |c: Command| {
        let mut u = Command::new("unshare");
        u.args(["--mount", "--propagation", "private", "sh", "-c", &bind]);
        crate::util::wrapped(c, u)
    }
}

/// What a refused command said: its standard error from its first `error: ` on.
fn refusal(what: &str, out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: exit status 2: {err}");
    let at = err.find("error: ").unwrap_or_else(|| panic!("{what}: no error said: {err}"));
    err[at..].trim_end().to_string()
}

/// Runs `check` and then `run` of `spec` (with `extra` arguments, each command changed by
/// `adjust`), insisting both are refused with the same text, which contains `expect`; returns it.
pub(crate) fn refuse_alike(
    lab: &Lab,
    case: &str,
    spec: &str,
    extra: &[&str],
    adjust: &dyn Fn(Command) -> Command,
    expect: &[&str],
) -> String {
    let file = lab.spec("s.toml", spec);
    let file = file.to_str().unwrap();
    let check = adjust(lab.cmd(&[&["check", file][..], extra].concat())).output().unwrap();
    let said = refusal(&format!("check ({case})"), &check);
    for e in expect {
        assert!(said.contains(e), "check ({case}) names {e:?}: {said}");
    }
    // Only now that check refused: `run` goes through the same look before anything.
    let run = adjust(lab.cmd(&[&["run", file, "-q"][..], extra].concat())).output().unwrap();
    let (ran, checked) = (moment(&refusal(&format!("run ({case})"), &run)), moment(&said));
    assert_eq!(ran, checked, "run ({case}) says what check says");
    said
}

/// A refusal without the count of the moment (`N are in use now`: the machine's tasks, which
/// the tests beside this one change between check and run).
fn moment(said: &str) -> String {
    let count =
        |part: &str| part.trim_end_matches(|c: char| c.is_ascii_digit() || c == ',').to_string();
    let parts: Vec<&str> = said.split(" are in use now").collect();
    let (last, counted) = parts.split_last().expect("split gives one part at least");
    counted
        .iter()
        .map(|p| format!("{}N are in use now", count(p)))
        .chain([last.to_string()])
        .collect()
}

const PI: &str =
    "name = \"s\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"pi\"\niterations = 1000\n";

/// The same command in a private mount namespace whose cgroup hierarchies are hidden under
/// an empty tmpfs (the machine's own mounts are untouched).
fn without_cgroups(c: Command) -> Command {
    let mut u = Command::new("unshare");
    u.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs none /sys/fs/cgroup && exec \"$0\" \"$@\"");
    crate::util::wrapped(c, u)
}

/// The command as it is.
fn same(c: Command) -> Command {
    c
}

/// `PI` with `line` added to its matrix.
fn pi_with(line: &str) -> String {
    PI.replace("workload = [\"w\"]\n", &format!("workload = [\"w\"]\n{line}\n"))
}

#[test]
fn check_and_run_refuse_alike_for_every_preflight_refusal() {
    require!(is_root(), "the device and cgroup checks and the RT throttling sysctl need root");
    let _one = measuring();
    let lab = Lab::new();
    // RT throttling disabled as schedlab sees it, in a namespace of its own.
    let unthrottled = rt_unthrottled(&lab);
    let fifo = pi_with("policy = [\"fifo\"]");
    let says = ["RT throttling is disabled", "--allow-unthrottled"];
    refuse_alike(&lab, "RT throttling disabled", &fifo, &[], &unthrottled, &says);
    let check = lab.cmd(&["check", lab.path("s.toml").to_str().unwrap(), "--allow-unthrottled"]);
    let out = unthrottled(check).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check --allow-unthrottled: {err}");
    assert_ne!(
        std::fs::read_to_string(RT_RUNTIME).unwrap().trim(),
        "-1",
        "the machine stays throttled"
    );
    let rt_off = format!("{PI}[knobs]\n\"kernel.sched_rt_runtime_us\" = -1\n\"kernel.sched_rt_period_us\" = 1000000\n");
    let file = lab.spec("not-a-dir", "");
    let nobodys = lab.path("nobodys");
    std::fs::create_dir(&nobodys).unwrap();
    std::os::unix::fs::chown(&nobodys, Some(65534), Some(65534)).unwrap();
    let state = |dir: &Path| {
        let dir = dir.to_path_buf();
        move |mut c: Command| {
            c.env("SCHEDLAB_STATE_DIR", &dir);
            c
        }
    };
    let (in_file, in_nobodys) = (state(&file), state(&nobodys));
    let missing = lab.path("no-btf/vmlinux");
    let btf_says = ["BTF", missing.to_str().unwrap()];
    let no_btf = |mut c: Command| {
        c.env(schedlab_bpf::BTF_ENV, &missing);
        c
    };
    let write =
        "name = \"s\"\n[workloads.w]\nkind = \"par_write\"\nfiles = 2\nfile_bytes = 1_000_000\n";
    let disk = format!(
        "{write}[device]\npath = \"{}\"\n[matrix]\nworkload = [\"w\"]\n",
        lab.dir.path().display()
    );
    /// A case's name, its spec, the arguments after the file, how each command is changed
    /// and what the refusal says.
    type Case<'a> = (&'a str, String, &'a [&'a str], &'a dyn Fn(Command) -> Command, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (
            "knobs unthrottle unasked",
            rt_off.clone(),
            &[],
            &same,
            &["disables RT throttling", "allow_rt_unthrottled = true"],
        ),
        (
            "knobs unthrottle without the watchdog",
            format!("allow_rt_unthrottled = true\n{rt_off}"),
            &["--no-engine-rt"],
            &same,
            &["weaken RT throttling", "--no-engine-rt"],
        ),
        // Refused as the spec is read, before the preflight: alike all the same.
        (
            "unknown knob",
            format!("{PI}[matrix.knobs]\n\"kernel.sched_nonsense\" = [1]\n"),
            &[],
            &same,
            &["s.toml:8:1", "kernel.sched_nonsense"],
        ),
        (
            "CPUs that do not exist",
            pi_with("affinity = [\"0-255\"]"),
            &[],
            &same,
            &["does not exist on this machine"],
        ),
        (
            "the journal's directory a file",
            PI.into(),
            &[],
            &in_file,
            &["restore journal's directory", "not a directory of this user"],
        ),
        (
            "the journal's directory another user's",
            PI.into(),
            &[],
            &in_nobodys,
            &["owner uid 65534", "not a directory of this user"],
        ),
        ("trace without BTF", PI.into(), &["--trace"], &no_btf, &btf_says),
        (
            "--dir on a kernel interface",
            PI.into(),
            &["--dir", "/proc/sys"],
            &same,
            &["--dir", "/proc/sys"],
        ),
        (
            "a real disk unconfirmed",
            disk,
            &[],
            &same,
            &["the files would go to the real disk", "--yes-device"],
        ),
    ];
    for (case, spec, extra, adjust, says) in cases {
        refuse_alike(&lab, case, &spec, extra, adjust, says);
    }
    let pid_max: u64 =
        std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    if pid_max < 100_003 {
        let says = ["needs 100,003 processes and threads", "kernel.pid_max"];
        refuse_alike(
            &lab,
            "beyond kernel.pid_max",
            &pi_with("processes = [100000]"),
            &[],
            &same,
            &says,
        );
    }
    if !io_schedulers().iter().any(|s| s == "cfq") {
        let cfq = format!("{write}[matrix]\nworkload = [\"w\"]\niosched = [\"none\", \"cfq\"]\n");
        let says = [
            "s.toml:8:20",
            "does not offer the I/O scheduler \"cfq\"",
            "run with --skip-unavailable",
        ];
        refuse_alike(&lab, "a scheduler this kernel lacks", &cfq, &[], &same, &says);
    }
    // Issue 47: a read-only /sys (a container's) refused the I/O cells only as they failed.
    if no_read_only_sys().is_none() {
        let io = format!("{write}[matrix]\nworkload = [\"w\"]\niosched = [\"none\"]\n");
        let says = ["s.toml:8:12", "/sys/block is read-only", "remount /sys read-write"];
        refuse_alike(&lab, "a read-only /sys", &io, &[], &with_read_only_sys, &says);
        let says = ["can run no cell of", "/sys/block is read-only"];
        let skip = ["--skip-unavailable"];
        refuse_alike(&lab, "a read-only /sys, skipped", &io, &skip, &with_read_only_sys, &says);
    }
    let hidden =
        Command::new("unshare").args(["--mount", "--propagation", "private", "true"]).status();
    require!(
        hidden.is_ok_and(|s| s.success()),
        "no private mount namespace here (unshare --mount)"
    );
    let says = ["asks for cgroup settings", "no usable cgroup hierarchy"];
    let weighted = pi_with("cpu_weight = [200]");
    refuse_alike(
        &lab,
        "cgroups this machine cannot honour",
        &weighted,
        &[],
        &without_cgroups,
        &says,
    );
    assert!(!lab.db().exists(), "refused before anything was recorded");
}

#[test]
fn check_names_every_refusal_not_only_the_first() {
    let lab = Lab::new();
    let cpus = pi_with("affinity = [\"0-255\"]");
    let journal_file = lab.spec("not-a-dir", "");
    let state_is_a_file = |mut c: Command| {
        c.env("SCHEDLAB_STATE_DIR", &journal_file);
        c
    };
    let said = refuse_alike(
        &lab,
        "three problems",
        &cpus,
        &["--dir", "/proc/sys"],
        &state_is_a_file,
        &["does not exist on this machine", "--dir", "restore journal's directory"],
    );
    assert_eq!(said.matches("error: ").count(), 3, "one error line per refusal: {said}");
    assert!(!lab.db().exists(), "refused before anything was recorded");
}
