//! Captures on this machine: they need root and a kernel with tracefs, and print why they
//! skip otherwise. They run one at a time (they share two CPUs with everything else).

use schedlab_sys::journal::{self, Journal};
use schedlab_sys::Root;
use schedlab_trace::capture::ReaderPolicy;
use schedlab_trace::{cell_trace, decode, Capture, CaptureOptions, Tracefs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Why this machine cannot run the test, if it cannot.
fn unavailable() -> Option<String> {
    schedlab_trace::tracefs::preflight(&Root::default()).err().map(|e| e.to_string())
}

macro_rules! require_tracing {
    () => {
        if let Some(why) = unavailable() {
            schedlab_testkit::skip(why);
            return;
        }
    };
}

/// A state directory of the test's own (journals, the private tracefs mount point),
/// removed when the test ends, passed or failed, unless something is still mounted in it
/// (a tracefs mount's instances are everyone's: never delete through one).
struct State(PathBuf);

impl Drop for State {
    fn drop(&mut self) {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let inside = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(4))
            .any(|m| Path::new(m).starts_with(&self.0));
        if !inside {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn state(tag: &str) -> State {
    let d = std::env::temp_dir().join(format!("schedlab-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    State(d)
}

fn is_mount_point(p: &Path) -> bool {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    schedlab_sys::blockdev::mounts_of_type(&text, "tracefs").iter().any(|m| m == p)
}

/// A CPU-bound shell loop (builtins only: no child of its own), pinned to `cpu` if given.
fn spin(iterations: u32, cpu: Option<u32>) -> std::process::Child {
    let mut c = Command::new("sh");
    c.args(["-c", &format!("i=0; while [ $i -lt {iterations} ]; do i=$((i+1)); done")]);
    if let Some(cpu) = cpu {
        // SAFETY: sched_setaffinity is async-signal-safe; the set is built before the fork.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
        unsafe {
            c.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    c.spawn().expect("sh runs")
}

/// wait4 of exactly that child: its CPU seconds (user + sys) and involuntary switches.
fn reap(child: &std::process::Child) -> (f64, i64) {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(r, child.id() as i32, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}");
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_nivcsw)
}

#[test]
fn trace_cpu_time_and_involuntary_switches_agree_with_wait4() {
    require_tracing!();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let state = state("wait4");
    let dir = &state.0;
    let mut j = Journal::create(dir).unwrap();
    let tfs = Tracefs::find_or_mount(&Root::default(), &mut j).unwrap();
    // The instance records every task of the machine: under other sessions' load its
    // buffers can overrun, and a capture that lost events cannot be checked against wait4.
    // Such an attempt is said and retried; three lossy attempts in a row fail. wait4's time
    // leaves out what the hypervisor stole while a child ran on a CPU, the trace's does not:
    // a capture off by more than the bound is a timing result, judged by the project's rule
    // (retried, and a skip when the host stole a real share of the CPU every time).
    let mut kept = None;
    let judged = schedlab_testkit::in_some_attempt(
        "trace_cpu_time_and_involuntary_switches_agree_with_wait4",
        3,
        |_| {
            let mut attempt = 0;
            let (cell, usage, pids) = loop {
                attempt += 1;
                let cap = Capture::start(
                    &tfs,
                    &mut j,
                    &CaptureOptions { avoid_cpus: vec![0], ..Default::default() },
                )
                .unwrap();
                // Two pinned to CPU 0 take it from each other; the third runs where it is put.
                let children =
                    [spin(400_000, Some(0)), spin(400_000, Some(0)), spin(250_000, None)];
                let usage: Vec<(f64, i64)> = children.iter().map(reap).collect();
                let raw = cap.stop(&mut j).unwrap();
                let d = decode(&raw).unwrap();
                let pids: Vec<i32> = children.iter().map(|c| c.id() as i32).collect();
                let me =
                    schedlab_trace::procs::threads(&Root::default(), std::process::id() as i32);
                let cell = cell_trace(&raw, &d, &pids, &me, None);
                // A switch the trace did not show is repaired from the CPU's previous switch, which
                // overcounts when hidden threads ran between (docs/ARCHITECTURE.md, Kernel traces):
                // an attempt whose repaired time breaks the bound is said and retried too.
                let off = cell
                    .workers
                    .iter()
                    .zip(&usage)
                    .any(|(w, (cpu_s, _))| (w.run_s - cpu_s).abs() > (0.02 * cpu_s).max(0.010));
                if cell.lost_events == 0 && !(off && attempt < 3 && cell.untraced_switches > 0) {
                    break (cell, usage, pids);
                }
                let stats: Vec<_> = raw.cpus.iter().map(|c| c.stats).collect();
                eprintln!(
                "attempt {attempt}: the buffers lost {} events, {} untraced switches (machine load): {stats:?}",
                cell.lost_events, cell.untraced_switches
            );
                assert!(attempt < 3, "three captures in a row lost events: {stats:?}");
            };
            for ((w, (cpu_s, nivcsw)), pid) in cell.workers.iter().zip(&usage).zip(&pids) {
                eprintln!(
                "pid {pid}: trace run {:.4} s (+ untraced {:.4} s), wait4 {cpu_s:.4} s; involuntary {} vs ru_nivcsw {nivcsw}; preempted by {:?}; runnable {:.3} s, cpus {:?}",
                w.run_s, w.untraced_s, w.involuntary, w.preempted_by, w.runnable_s, w.cpus
            );
                assert!(*cpu_s > 0.05, "the child did work");
                // wait4 lies between what the trace saw and that plus what it could not see.
                let tol = (0.02 * cpu_s).max(0.010);
                if !(w.run_s - tol <= *cpu_s && *cpu_s <= w.run_s + w.untraced_s + tol) {
                    return Err(format!(
                        "pid {pid}: trace {:.4} s (+ untraced {:.4} s) against wait4 {cpu_s:.4} s",
                        w.run_s, w.untraced_s
                    ));
                }
                assert!(
                    (w.involuntary as i64 - nivcsw).abs() <= 2,
                    "pid {pid}: {} against ru_nivcsw {nivcsw}",
                    w.involuntary
                );
                assert_eq!(w.preempted_by.total(), w.involuntary);
            }
            kept = Some(cell);
            Ok(())
        },
    );
    if let schedlab_testkit::Judged::Spoiled(_) = judged {
        assert!(j.close().is_empty());
        return;
    }
    let cell = kept.expect("the attempt that held kept its capture");
    let pair = &cell.workers[..2];
    // Each starts where it was forked and pins itself before exec: CPU 0 and maybe one more.
    assert!(
        pair.iter().all(|w| w.preempted_by.worker > 0 && w.cpus.contains(&0)),
        "the pinned pair preempt each other: {pair:?}"
    );
    assert!(
        !cell.cpus.is_empty()
            && cell.cpus.iter().all(|c| c.busy_s + c.idle_s <= cell.span_s + 1e-6)
    );
    assert!(
        !tfs.schedlab_instances().iter().any(|n| n.contains(&format!("-{}-", std::process::id()))),
        "the instance went with stop"
    );
    assert!(j.close().is_empty());
    assert!(
        !is_mount_point(tfs.dir()) || !tfs.mounted_here(),
        "the private mount went with the journal"
    );
}

/// The global instance's settings a capture must leave as they were.
fn global_settings(tfs: &Path) -> Vec<(String, String)> {
    [
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "current_tracer",
        "set_event",
        "buffer_percent",
        "trace_options",
        "events/sched/sched_switch/enable",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read_to_string(tfs.join(f)).unwrap_or_default()))
    .collect()
}

#[test]
fn a_capture_leaves_no_instance_and_the_global_settings_as_they_were() {
    require_tracing!();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let state = state("clean");
    let dir = &state.0;
    let mut j = Journal::create(dir).unwrap();
    let tfs = Tracefs::find_or_mount(&Root::default(), &mut j).unwrap();
    let before = global_settings(tfs.dir());
    let mine = |tfs: &Tracefs| {
        tfs.schedlab_instances()
            .into_iter()
            .filter(|n| n.contains(&format!("-{}-", std::process::id())))
            .count()
    };
    // The engine supervises at SCHED_FIFO 99: its reader must not.
    let (reader_policy, reader_cpu) = std::thread::scope(|s| {
        s.spawn(|| {
            schedlab_sys::sched::raise_engine().unwrap();
            let cap = Capture::start(
                &tfs,
                &mut j,
                &CaptureOptions { avoid_cpus: vec![0], ..Default::default() },
            )
            .unwrap();
            assert_eq!(mine(&tfs), 1);
            let options =
                std::fs::read_to_string(cap.instance().path().join("trace_options")).unwrap();
            assert!(
                options.lines().any(|o| o == "norecord-cmd"),
                "the instance saves no comms: {options}"
            );
            // SAFETY: plain syscall on a thread of ours.
            let policy = unsafe { libc::sched_getscheduler(cap.reader_tid()) };
            let cpu =
                std::fs::read_to_string(format!("/proc/self/task/{}/status", cap.reader_tid()))
                    .unwrap();
            let allowed = cpu
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap()
                .trim()
                .to_string();
            drop(cap); // not stopped: an error path
            schedlab_sys::sched::lower_engine().unwrap();
            (policy, allowed)
        })
        .join()
        .unwrap()
    });
    assert_eq!(reader_policy, libc::SCHED_OTHER);
    let online = schedlab_sys::cpus::online(&Root::default());
    if online.len() > 1 {
        assert_eq!(
            reader_cpu,
            online.last().unwrap().to_string(),
            "pinned away from the workers' CPU 0"
        );
    }
    assert_eq!(mine(&tfs), 0, "a dropped capture removes its instance");
    // Among RT workers the reader is RT below them.
    let opts = CaptureOptions { reader: ReaderPolicy::for_cell(Some(98)), ..Default::default() };
    let cap = Capture::start(&tfs, &mut j, &opts).unwrap();
    // SAFETY: plain syscall on a thread of ours.
    assert_eq!(unsafe { libc::sched_getscheduler(cap.reader_tid()) }, libc::SCHED_FIFO);
    cap.stop(&mut j).unwrap();
    let cap = Capture::start(&tfs, &mut j, &CaptureOptions::default()).unwrap();
    let raw = cap.stop(&mut j).unwrap();
    assert_eq!(mine(&tfs), 0, "a stopped one too");
    assert!(
        raw.stop_ns >= raw.start_ns
            && raw.formats.len() == schedlab_trace::tracefs::SCHED_EVENTS.len()
    );
    assert_eq!(global_settings(tfs.dir()), before);
    assert!(j.close().is_empty());
}

/// Set in the environment of the helper below, which captures until it is killed.
const HELPER: &str = "SCHEDLAB_TRACE_TEST_HELPER_STATE";

#[test]
#[ignore = "run by a_killed_capture_is_undone_by_replaying_its_journal"]
fn capture_until_killed() {
    let Some(dir) = std::env::var_os(HELPER) else { return };
    let mut j = Journal::create(Path::new(&dir)).unwrap();
    let tfs = Tracefs::find_or_mount(&Root::default(), &mut j).unwrap();
    let cap = Capture::start(&tfs, &mut j, &CaptureOptions::default()).unwrap();
    println!("capturing {} {}", cap.instance().path().display(), tfs.mounted_here());
    std::thread::sleep(std::time::Duration::from_secs(60));
    drop(cap);
}

#[test]
fn a_killed_capture_is_undone_by_replaying_its_journal() {
    require_tracing!();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let state = state("killed");
    let dir = &state.0;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "capture_until_killed",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(HELPER, dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    while !line.contains("capturing ") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0,
            "the helper ended before capturing"
        );
    }
    let mut words = line[line.find("capturing ").unwrap()..].split_whitespace().skip(1);
    let instance = PathBuf::from(words.next().unwrap());
    let mounted_here = words.next() == Some("true");
    assert!(instance.is_dir());
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(instance.is_dir(), "nothing undid it: the process was killed");
    let lines = journal::recover(dir, false);
    assert!(!lines.iter().any(|l| l.contains("FAILED")), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("RemoveTraceInstance")), "{lines:#?}");
    let mount = instance.parent().and_then(Path::parent).unwrap().to_path_buf();
    if mounted_here {
        assert!(
            !is_mount_point(&mount) && !mount.exists(),
            "the private mount and its directory are gone: {lines:#?}"
        );
        // Look for the instance through a tracefs of our own.
        let mut j = Journal::create(dir).unwrap();
        let tfs = Tracefs::find_or_mount(&Root::default(), &mut j).unwrap();
        assert!(
            !tfs.dir().join("instances").join(instance.file_name().unwrap()).exists(),
            "the instance is gone"
        );
        assert!(j.close().is_empty());
    } else {
        assert!(!instance.exists(), "the instance is gone");
    }
}
