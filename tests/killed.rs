//! kill -9 at any moment (issue 15, item 5): whatever a SIGKILL of the engine leaves,
//! `schedlab restore` (or the next `schedlab run`) undoes it and removes the journal. Runs
//! small experiments that cover every phase (loop device set-up, mkfs, mount, I/O scheduler
//! switch, cgroups, background groups, live dispatchers, cells, clean-up), kills the engine
//! at seeded random moments over each run's whole length, and after each `restore` finds
//! nothing of the run left on the machine.

use crate::util::{is_root, measuring, Lab};
use schedlab_sys::journal::Entry;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Loop device, mkfs, mount, and three cells switching the loop device's I/O scheduler (one
/// with tunables).
const IO: &str = r#"
name = "killed-io"
[device]
size_mib = 64
[workloads.w]
kind = "par_write"
files = 4
file_bytes = 2_000_000
threads = 2
buffer_bytes = 65536
mode = "fsync"
[iosched.dl]
scheduler = "mq-deadline"
tunables = { read_expire = 250, nr_requests = 16 }
[matrix]
workload = ["w"]
iosched = ["bfq", "dl", "kyber"]
"#;

/// lab1's shape, small: hashers with a cgroup weight against a background group.
const CGROUPS: &str = r#"
name = "killed-cgroups"
trace = "timeline"
[matrix]
workload = ["hash"]
processes = [2]
affinity = ["all", "spread"]
cpu_weight = [200]
[matrix.groups.bg]
processes = [1]
[groups.bg]
workload = "spin"
background = true
[workloads.hash]
kind = "hash"
hashes = 20_000
[workloads.spin]
kind = "pi"
iterations = 1_000_000_000
"#;

/// Periodic sets under the live dispatchers (their status regions) and under fifo-rm (the
/// set's start file).
const PERIODIC: &str = r#"
name = "killed-rt"
[matrix]
workload = ["set"]
scheduler = ["edf", "dwcs", "fifo-rm"]
[workloads.set]
kind = "periodic"
duration_s = 0.4
canonical = { tasks = 3, x = 1, y = 3, period_quanta = 4 }
"#;

/// SIGKILLs to deliver (a third per experiment).
const KILLS: usize = 60;
const SEED: u64 = 0x5EED_0015_0005;

/// splitmix64: a seeded sequence, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A process: pid, start time (against pid reuse) and command line.
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    start: u64,
    cmdline: String,
}

fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn processes() -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let Some(ppid) = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
        else {
            continue;
        };
        out.push((pid, ppid));
    }
    out
}

/// The engine's children now (workers, dispatchers, mkfs).
fn children(engine: i32) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|(_, ppid)| *ppid == engine)
        .filter_map(|(pid, _)| {
            let (start, running) = schedlab_sys::procfs::process_start(pid)?;
            running.then(|| Proc { pid, start, cmdline: cmdline(pid).unwrap_or_default() })
        })
        .collect()
}

/// One device queue's settings: scheduler, queue tunables and the scheduler's own.
fn queue_settings(dev: &Path) -> BTreeMap<String, String> {
    let q = dev.join("queue");
    let mut out = BTreeMap::new();
    for k in ["scheduler", "nr_requests", "read_ahead_kb"] {
        if let Ok(v) = std::fs::read_to_string(q.join(k)) {
            out.insert(k.to_string(), v.trim().to_string());
        }
    }
    if let Ok(rd) = std::fs::read_dir(q.join("iosched")) {
        for f in rd.filter_map(Result::ok) {
            if let Ok(v) = std::fs::read_to_string(f.path()) {
                out.insert(
                    format!("iosched/{}", f.file_name().to_string_lossy()),
                    v.trim().to_string(),
                );
            }
        }
    }
    out
}

/// Every block device queue's settings.
fn queues() -> BTreeMap<String, BTreeMap<String, String>> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("queue/scheduler").exists())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), queue_settings(&e.path())))
        .collect()
}

fn backing_file(dev: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/block/{dev}/loop/backing_file"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Whether a live process holds `dev`'s queue lock (`blockdev::QueueLock`, an flock on its
/// scheduler file): a run of someone else's, whose settings are its own business.
fn queue_locked(dev: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = std::fs::metadata(format!("/sys/block/{dev}/queue/scheduler")) else {
        return false;
    };
    let id = format!("{:02x}:{:02x}:{}", libc::major(md.dev()), libc::minor(md.dev()), md.ino());
    std::fs::read_to_string("/proc/locks")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("FLOCK") && l.split_whitespace().any(|w| w == id))
}

fn cgroup_parents() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("/sys/fs/cgroup/schedlab")];
    if let Ok(rd) = std::fs::read_dir("/sys/fs/cgroup") {
        out.extend(rd.filter_map(Result::ok).map(|e| e.path().join("schedlab")));
    }
    out.into_iter().filter(|p| p.is_dir()).collect()
}

/// What the machine looked like before the first run.
struct Before {
    queues: BTreeMap<String, BTreeMap<String, String>>,
    cgroup_parents: Vec<PathBuf>,
}

/// Everything of the runs by `engines` still on the machine, one line each.
fn leftovers(lab: &Lab, before: &Before, engines: &[i32], kids: &[Proc]) -> Vec<String> {
    let mut out = Vec::new();
    let labdir = lab.dir.path().canonicalize().unwrap().to_string_lossy().into_owned();
    if let Ok(rd) = std::fs::read_dir(lab.path("state")) {
        out.extend(
            rd.filter_map(Result::ok)
                .map(|e| format!("journal file {}", e.file_name().to_string_lossy())),
        );
    }
    for e in std::fs::read_dir(lab.dir.path()).unwrap().filter_map(Result::ok) {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("schedlab-") {
            out.push(format!("experiment directory {n}"));
        }
    }
    for e in std::fs::read_dir("/sys/block").unwrap().filter_map(Result::ok) {
        let dev = e.file_name().to_string_lossy().into_owned();
        if let Some(b) = backing_file(&dev).filter(|b| b.starts_with(&labdir)) {
            out.push(format!("loop device {dev} backed by {b}"));
        }
    }
    for m in std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
    {
        if m.starts_with(&labdir) {
            out.push(format!("mount {m}"));
        }
    }
    for parent in cgroup_parents() {
        for e in std::fs::read_dir(&parent)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
        {
            let n = e.file_name().to_string_lossy().into_owned();
            if engines.iter().any(|pid| n.starts_with('r') && n.contains(&format!("-{pid}-c"))) {
                out.push(format!("cgroup {}", e.path().display()));
            }
        }
        let empty = std::fs::read_dir(&parent)
            .map(|rd| !rd.filter_map(Result::ok).any(|e| e.path().is_dir()))
            .unwrap_or(false);
        if empty && !before.cgroup_parents.contains(&parent) {
            out.push(format!("cgroup {} (empty)", parent.display()));
        }
    }
    let now = queues();
    for (dev, was) in &before.queues {
        let foreign = backing_file(dev).is_some_and(|b| !b.starts_with(&labdir));
        let Some(is) = now.get(dev) else { continue };
        if is != was && !foreign && !queue_locked(dev) {
            let diff: Vec<String> = is
                .iter()
                .filter(|(k, v)| was.get(*k) != Some(v))
                .map(|(k, v)| format!("{k} = {v} (was {:?})", was.get(k)))
                .collect();
            out.push(format!("{dev}'s queue: {}", diff.join(", ")));
        }
    }
    // The traced cells' tracefs instances, wherever tracefs is mounted (a mount of the
    // engine's own is in the lab's state directory, which the mount check above covers).
    for m in std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - tracefs "))
    {
        let Some(dir) = m.split_whitespace().nth(4) else { continue };
        for e in std::fs::read_dir(format!("{dir}/instances"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let n = e.file_name().to_string_lossy().into_owned();
            if engines.iter().any(|pid| n.starts_with(&format!("schedlab-{pid}-"))) {
                out.push(format!("tracefs instance {dir}/instances/{n}"));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(schedlab_dispatch::shm::default_dir()) {
        for e in rd.filter_map(Result::ok) {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("dispatch-")
                && engines.iter().any(|pid| n.contains(&format!("-{pid}-")))
            {
                out.push(format!("dispatcher region {n}"));
            }
        }
    }
    for k in kids {
        if schedlab_sys::procfs::process_start(k.pid) == Some((k.start, true)) {
            out.push(format!("process {} ({})", k.pid, k.cmdline));
        }
    }
    for (pid, _) in processes() {
        let running = || schedlab_sys::procfs::process_start(pid).is_some_and(|s| s.1);
        if pid != std::process::id() as i32
            && cmdline(pid).is_some_and(|c| c.contains(&labdir))
            && running()
        {
            out.push(format!("process {pid} ({})", cmdline(pid).unwrap_or_default()));
        }
    }
    out
}

/// The leftovers once things that end by themselves had a moment (a dying worker, a loop
/// device detached when its last user closes it).
fn settled_leftovers(lab: &Lab, before: &Before, engines: &[i32], kids: &[Proc]) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let left = leftovers(lab, before, engines, kids);
        if left.is_empty() || t0.elapsed() > Duration::from_secs(5) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the engine was doing when it was killed: from the changes its journal held in force
/// and the children it had.
fn phase(lab: &Lab, kids: &[Proc]) -> &'static str {
    let journals: Vec<PathBuf> = std::fs::read_dir(lab.path("state"))
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    let Some(journal) = journals.first() else { return "start-up (no journal yet)" };
    let entries = schedlab_sys::journal::in_force(journal).unwrap_or_default();
    let has = |f: fn(&Entry) -> bool| entries.iter().any(f);
    let kid = |s: &str| kids.iter().any(|k| k.cmdline.contains(s));
    if kid("mkfs") {
        "mkfs"
    } else if has(|e| matches!(e, Entry::DetachLoop { .. }))
        && !has(|e| matches!(e, Entry::Unmount { .. }))
    {
        "loop device attach"
    } else if kid("__dispatch") {
        "periodic cell, dispatchers running"
    } else if has(|e| matches!(e, Entry::RemoveFiles { .. } | Entry::RemoveFile { .. })) {
        "dispatcher regions made, workers starting or reaped"
    } else if has(|e| matches!(e, Entry::RemoveCgroup { .. })) {
        if kid("__worker") {
            "cgroup cell running"
        } else {
            "cgroups made or being removed"
        }
    } else if has(|e| matches!(e, Entry::Restore { .. })) {
        if kid("__worker") {
            "I/O cell running"
        } else {
            "I/O scheduler set, no workers (switch, cache drop, restore)"
        }
    } else if kid("__worker") {
        "cell running (no settings)"
    } else if has(|e| matches!(e, Entry::Unmount { .. })) {
        "device mounted, between cells"
    } else if has(|e| matches!(e, Entry::RemoveTree { .. })) {
        "experiment directory, between cells"
    } else {
        "journal empty (before the first change, or after the last undo)"
    }
}

fn start(lab: &Lab, spec: &Path) -> Child {
    lab.cmd(&["run", spec.to_str().unwrap(), "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn restore(lab: &Lab) -> String {
    let out = lab.run(&["restore"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "restore failed ({}): {text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// When to kill a run.
#[derive(Debug, Clone, Copy)]
enum When {
    /// This long after its start.
    After(Duration),
    /// As soon as it is seen in this phase.
    In(&'static str),
}

/// Starts `spec`, SIGKILLs the engine when `when` says, and returns the phase it was killed
/// in (None: the run ended first, or never reached the phase) and its children at the time.
fn run_and_kill(
    lab: &Lab,
    spec: &Path,
    when: When,
    engines: &mut Vec<i32>,
) -> (Option<&'static str>, Vec<Proc>) {
    let mut child = start(lab, spec);
    let engine = child.id() as i32;
    engines.push(engine);
    let kids = match when {
        When::After(delay) => {
            std::thread::sleep(delay);
            children(engine)
        }
        When::In(want) => loop {
            let kids = children(engine);
            if phase(lab, &kids) == want || child.try_wait().unwrap().is_some() {
                break kids;
            }
            std::thread::sleep(Duration::from_millis(1));
        },
    };
    let killed = match child.try_wait().unwrap() {
        Some(_) => None,
        None => {
            child.kill().unwrap();
            Some(phase(lab, &kids))
        }
    };
    child.wait().unwrap();
    (killed, kids)
}

#[test]
fn restore_leaves_nothing_after_sigkill_at_any_moment() {
    require!(is_root(), "loop devices, mounts, cgroups and I/O schedulers need root");
    require!(Path::new("/dev/loop-control").exists(), "no loop devices here (/dev/loop-control)");
    require!(schedlab_sys::blockdev::mkfs_tool("ext4").is_some(), "mkfs.ext4 is not installed");
    require!(
        crate::util::tracing_possible(),
        "this kernel has no tracefs (the cgroup runs are traced)"
    );
    let cpu_weight = schedlab_sys::cgroup::Settings { weight: Some(200), ..Default::default() };
    require!(
        schedlab_sys::cgroup::detect(&schedlab_sys::Root::default())
            .is_some_and(|h| h.check(&cpu_weight).is_ok()),
        "no cgroup hierarchy with the cpu controller"
    );
    let _one = measuring();
    let t_test = Instant::now();
    let lab = Lab::new();
    let specs = [
        (
            "io",
            lab.spec(
                "io.toml",
                &IO.replace("\"bfq\"", &format!("\"{}\"", crate::util::bfq_or("none"))),
            ),
        ),
        ("cgroups", lab.spec("cg.toml", CGROUPS)),
        ("periodic", lab.spec("rt.toml", PERIODIC)),
    ];
    let before = Before { queues: queues(), cgroup_parents: cgroup_parents() };
    let mut engines = Vec::new();

    // Two whole runs of each: how long one takes (the shorter: the kills are spread over
    // it), and that a normal end leaves nothing either.
    let mut length = Vec::new();
    for (name, spec) in &specs {
        let mut shortest = Duration::MAX;
        for _ in 0..2 {
            let t0 = Instant::now();
            let child = start(&lab, spec);
            engines.push(child.id() as i32);
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            shortest = shortest.min(t0.elapsed());
            let left = settled_leftovers(&lab, &before, &engines, &[]);
            assert!(left.is_empty(), "{name}, after a normal run: {left:#?}");
        }
        length.push(shortest);
    }

    // Seeded random moments over each run's whole length, a quarter of them in the first
    // 300 ms (start-up, journal, experiment directory, device); then, for a phase no random
    // kill hit, kills at the moment it is seen.
    let mut rng = Rng(SEED);
    let mut random = |k: usize| {
        let i = k % specs.len();
        let span =
            if rng.unit() < 0.25 { length[i].min(Duration::from_millis(300)) } else { length[i] };
        (i, When::After(span.mul_f64(rng.unit())))
    };
    let mut plan: Vec<(usize, When)> = (0..KILLS).map(&mut random).collect();
    // Phases a kill must land in (the run waits for them), and phases worth a try whose
    // window may be too short to catch by polling.
    let targets = [
        (0, "mkfs", true),
        (0, "loop device attach", false),
        (0, "I/O cell running", true),
        (0, "device mounted, between cells", true),
        (1, "cgroup cell running", true),
        (1, "cgroups made or being removed", false),
        (2, "periodic cell, dispatchers running", true),
        (2, "dispatcher regions made, workers starting or reaped", false),
        (2, "experiment directory, between cells", true),
    ];
    let mut by_phase: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_spec: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut kills, mut targeted, mut ended_first, mut undone) = (0, 0, 0, 0);
    let mut step = 0;
    while step < plan.len() {
        let (i, when) = plan[step];
        step += 1;
        let (name, spec) = &specs[i];
        let (killed, kids) = run_and_kill(&lab, spec, when, &mut engines);
        match killed {
            Some(p) => {
                kills += 1;
                targeted += usize::from(matches!(when, When::In(_)));
                *by_phase.entry(p).or_default() += 1;
                *by_spec.entry(name).or_default() += 1;
            }
            None => ended_first += 1,
        }
        let said = restore(&lab);
        undone += said.lines().filter(|l| l.contains("undone:")).count();
        let left = settled_leftovers(&lab, &before, &engines, &kids);
        assert!(
            left.is_empty(),
            "{name} killed {when:?} in {killed:?} (seed {SEED:#x}, step {step}); restore said:\n{said}\nleft: {left:#?}"
        );
        if step == plan.len() {
            // Runs that ended before their kill are made up for.
            for k in 0..(KILLS.saturating_sub(kills)).min((2 * KILLS).saturating_sub(plan.len())) {
                plan.push(random(k));
            }
            for (i, want, _) in targets {
                let tries =
                    plan.iter().filter(|(_, w)| matches!(w, When::In(p) if *p == want)).count();
                if !by_phase.contains_key(want) && tries < 3 {
                    plan.push((i, When::In(want)));
                }
            }
        }
    }

    // Without `restore`: the next run undoes what a killed one left, before it starts.
    // The kill must land: a run that ended before the phase was seen is restored and tried again.
    let mut kids = Vec::new();
    for attempt in 1..=5 {
        let (killed, k) =
            run_and_kill(&lab, &specs[1].1, When::In("cgroup cell running"), &mut engines);
        kids = k;
        if killed.is_some() {
            break;
        }
        assert!(attempt < 5, "five cgroup runs ended before one was seen running its cell");
        restore(&lab);
    }
    let next = start(&lab, &specs[1].1);
    engines.push(next.id() as i32);
    let out = next.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("restore: "),
        "the next run said nothing of the killed one's journal"
    );
    let left = settled_leftovers(&lab, &before, &engines, &kids);
    assert!(left.is_empty(), "after a kill and a whole run: {left:#?}");

    eprintln!(
        "killed: {kills} SIGKILLs ({targeted} at a phase seen, the rest at seeded random moments, seed {SEED:#x}; \
         {ended_first} runs ended before their kill), each followed by `schedlab restore`, which undid {undone} \
         changes: leftovers found: 0 ({:.0} s)",
        t_test.elapsed().as_secs_f64()
    );
    eprintln!("killed: by experiment: {by_spec:?}; a whole run takes {length:.2?}");
    for (p, n) in &by_phase {
        eprintln!("killed:   {n:3}  {p}");
    }
    assert!(kills >= KILLS, "only {kills} of the runs were killed");
    for (_, want, _) in targets.iter().filter(|t| t.2) {
        assert!(by_phase.contains_key(want), "no kill landed in phase \"{want}\": {by_phase:?}");
    }
}

/// A dispatcher whose engine died before the dispatcher could ask to die with it (its parent
/// is then another process) exits at once instead of waiting for workers that are gone.
#[test]
fn a_dispatcher_whose_engine_is_gone_exits_at_once() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            schedlab_runner::rt::DISPATCH_SUBCOMMAND,
            "/nonexistent-region",
            "{}",
            "/nonexistent-out",
        ])
        .env(schedlab_runner::rt::ENGINE_PID_ENV, "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
}
