//! Against a fake /sys/kernel/sched_ext that a fake scheduler (a shell script the test
//! writes, exec'd by path) fills in as a real one's kernel would, and a fake "kernel" thread
//! that unloads it when its process is gone.

use super::*;
use schedlab_sys::journal::Journal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The fake scheduler: `fake ROOT MODE`. It says it runs, "loads" (state enabled, root/ops,
/// enable_seq + 1) and waits; on SIGINT it unloads and exits, unless MODE is `stubborn`
/// (ignores SIGINT) or `broken` (fails before loading).
const FAKE: &str = r#"#!/bin/sh
S="$1/sys/kernel/sched_ext"
echo $$ > "$1/fake.pid"
if [ "$2" = broken ]; then echo "fake: libbpf: failed to load: no BTF"; exit 1; fi
if [ "$2" = stubborn ]; then trap '' INT; else trap 'echo disabled > "$S/state"; : > "$S/root/ops"; exit 0' INT; fi
echo "fake: running"
echo fake_0.1_x86_64 > "$S/root/ops"
echo enabled > "$S/state"
# As the kernel does: the load is counted after the state reads enabled.
sleep 0.2
echo $(( $(cat "$S/enable_seq") + 1 )) > "$S/enable_seq"
while :; do sleep 0.02; done
"#;

struct Fake {
    dir: PathBuf,
    root: Root,
    program: String,
    stop_kernel: Arc<AtomicBool>,
}

impl Fake {
    fn new(tag: &str) -> Fake {
        let dir = std::env::temp_dir().join(format!("schedlab-scx-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = dir.join("root/sys/kernel/sched_ext");
        std::fs::create_dir_all(s.join("root")).unwrap();
        std::fs::create_dir_all(dir.join("root/dev")).unwrap();
        std::fs::create_dir_all(dir.join("cell")).unwrap();
        for (f, v) in
            [("state", "disabled"), ("root/ops", ""), ("enable_seq", "0"), ("switch_all", "1")]
        {
            std::fs::write(s.join(f), format!("{v}\n")).unwrap();
        }
        std::fs::write(dir.join("root/dev/kmsg"), "6,1,1,-;sched_ext: an older record\n").unwrap();
        let program = dir.join("scx_fake");
        std::fs::write(&program, FAKE).unwrap();
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let root = Root::new(dir.join("root"));
        // The "kernel": a scheduler whose process is gone is unloaded, with a log record.
        let stop_kernel = Arc::new(AtomicBool::new(false));
        let (stop, d) = (Arc::clone(&stop_kernel), dir.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let pid: Option<i32> = std::fs::read_to_string(d.join("root/fake.pid"))
                    .ok()
                    .and_then(|p| p.trim().parse().ok());
                let state = std::fs::read_to_string(d.join("root/sys/kernel/sched_ext/state"))
                    .unwrap_or_default();
                if let Some(pid) = pid.filter(|_| state.trim() == "enabled") {
                    if schedlab_sys::procfs::process_start(pid).is_none_or(|(_, alive)| !alive) {
                        let mut k = std::fs::OpenOptions::new()
                            .append(true)
                            .open(d.join("root/dev/kmsg"))
                            .unwrap();
                        std::io::Write::write_all(
                            &mut k,
                            b"6,9,9,-;sched_ext: BPF scheduler \"fake_0.1\" disabled (unregistered from user space)\n",
                        )
                        .unwrap();
                        std::fs::write(d.join("root/sys/kernel/sched_ext/state"), "disabled\n")
                            .unwrap();
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Fake { program: program.to_string_lossy().into_owned(), root, dir, stop_kernel }
    }

    fn scx(&self, mode: &str) -> CpuScheduler {
        CpuScheduler::Scx(ScxProgram {
            program: self.program.clone(),
            args: vec![self.root.dir().to_string_lossy().into_owned(), mode.into()],
        })
    }

    fn journal(&self) -> Journal {
        Journal::create(&self.dir.join("state")).unwrap()
    }

    fn state(&self) -> String {
        scx::state(&self.root).unwrap()
    }

    fn pid(&self) -> i32 {
        std::fs::read_to_string(self.root.path("/fake.pid")).unwrap().trim().parse().unwrap()
    }

    fn load(&self, mode: &str, j: &mut Journal) -> Loaded {
        match prepare(&self.root, &self.dir.join("cell"), j, &self.scx(mode)) {
            Ok(Some(l)) => l,
            Err(e) => panic!("{e}"),
            Ok(None) => panic!("nothing loaded"),
        }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop_kernel.store(true, Ordering::Relaxed);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn gone(pid: i32) -> bool {
    schedlab_sys::procfs::process_start(pid).is_none_or(|(_, alive)| !alive)
}

#[test]
fn a_sched_ext_scheduler_is_journaled_then_loaded_as_root_ops_names_it_and_stopped_by_sigint() {
    let f = Fake::new("load");
    let mut j = f.journal();
    let mut l = f.load("polite", &mut j);
    assert_eq!(f.state(), "enabled");
    let r = &l.record;
    assert_eq!(
        (r.ops.as_str(), r.name.as_str(), r.version.as_str()),
        ("fake_0.1_x86_64", "fake", "0.1_x86_64")
    );
    assert_eq!((r.enable_seq, r.switch_all, r.pid), (Some(1), Some(true), f.pid()));
    assert_eq!(r.args[1], "polite");
    assert!(
        matches!(j.entries(), [Entry::StopScheduler { pid, .. }] if *pid == f.pid()),
        "{:?}",
        j.entries()
    );
    assert!(l.lost().is_none(), "running as loaded");
    l.stop().unwrap();
    assert_eq!(f.state(), "disabled");
    assert!(!l.record.killed && l.record.stop_s.is_some());
    assert!(gone(f.pid()), "stopped and reaped");
    assert!(j.close().is_empty(), "the journal's undo finds nothing left to stop");
}

#[test]
fn enable_seq_is_taken_once_the_kernel_counted_the_load_not_when_the_state_reads_enabled() {
    let f = Fake::new("seq");
    let mut j = f.journal();
    let mut l = f.load("polite", &mut j);
    assert_eq!(l.record.enable_seq, Some(1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(l.lost(), None, "the count taken at the load does not change under the cell");
    l.stop().unwrap();
    assert!(j.close().is_empty());
}

#[test]
fn the_scheduler_logs_colours_are_left_out_of_a_failure() {
    assert_eq!(
        strip_ansi("00:06:56 \u{1b}[0m\u{1b}[34m[INFO] \u{1b}[0mscheduler options"),
        "00:06:56 [INFO] scheduler options"
    );
}

#[test]
fn a_scheduler_deaf_to_sigint_is_killed_after_the_grace_period() {
    let f = Fake::new("stubborn");
    let mut j = f.journal();
    let mut l = f.load("stubborn", &mut j);
    l.stop().unwrap();
    assert!(l.record.killed, "SIGKILL after {SCHEDULER_GRACE:?}");
    assert!(l.record.stop_s.unwrap() >= SCHEDULER_GRACE.as_secs_f64());
    assert_eq!(f.state(), "disabled");
    assert!(gone(f.pid()));
    assert!(j.close().is_empty());
}

#[test]
fn a_scheduler_that_dies_mid_cell_is_reported_with_its_last_output_and_the_kernels_reason() {
    let f = Fake::new("dies");
    let mut j = f.journal();
    let mut l = f.load("polite", &mut j);
    // SAFETY: killing the fake scheduler this test started.
    unsafe { libc::kill(f.pid(), libc::SIGKILL) };
    let t0 = Instant::now();
    let why = loop {
        if let Some(why) = l.lost() {
            break why;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "never seen lost");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        why.contains("the sched_ext scheduler fake exited during the cell (signal: 9"),
        "{why}"
    );
    assert!(why.contains("its last output: fake: running"), "{why}");
    // The kernel's record may come just after the exit is seen: asked again, it is there.
    std::thread::sleep(Duration::from_millis(100));
    let mut l2 = l;
    let again = l2.failure("again");
    assert!(
        why.contains(
            "kernel: sched_ext: BPF scheduler \"fake_0.1\" disabled (unregistered from user space)"
        ) || again.contains("kernel: sched_ext: BPF scheduler \"fake_0.1\" disabled"),
        "{why} / {again}"
    );
    assert!(
        !why.contains("an older record") && !again.contains("an older record"),
        "only records since the start"
    );
    l2.stop().unwrap();
    assert_eq!(f.state(), "disabled");
    assert!(j.close().is_empty());
}

#[test]
fn a_scheduler_that_fails_to_load_fails_the_cell_with_its_output() {
    let f = Fake::new("broken");
    let mut j = f.journal();
    let e = prepare(&f.root, &f.dir.join("cell"), &mut j, &f.scx("broken"))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("the sched_ext scheduler scx_fake did not load: it exited (exit status: 1) before sched_ext was enabled"), "{e}");
    assert!(e.contains("its last output: fake: libbpf: failed to load: no BTF"), "{e}");
    assert_eq!(f.state(), "disabled");
    assert!(j.close().is_empty());
}

#[test]
fn a_scheduler_loaded_by_someone_else_refuses_eevdf_and_scx_cells_alike() {
    let f = Fake::new("taken");
    std::fs::write(f.root.path(&format!("{}/state", scx::SYSFS)), "enabled\n").unwrap();
    std::fs::write(f.root.path(&format!("{}/root/ops", scx::SYSFS)), "lavd_1.0\n").unwrap();
    let mut j = f.journal();
    for s in [CpuScheduler::Eevdf, f.scx("polite")] {
        let e =
            prepare(&f.root, &f.dir.join("cell"), &mut j, &s).err().expect("refused").to_string();
        assert!(e.contains("sched_ext is enabled (lavd_1.0) before the cell"), "{e}");
    }
    assert!(j.entries().is_empty() && !f.root.path("/fake.pid").exists(), "nothing started");
    // No sched_ext at all: eevdf runs, a sched_ext scheduler cannot.
    std::fs::remove_dir_all(f.root.path(scx::SYSFS)).unwrap();
    assert!(matches!(
        prepare(&f.root, &f.dir.join("cell"), &mut j, &CpuScheduler::Eevdf),
        Ok(None)
    ));
    let e = prepare(&f.root, &f.dir.join("cell"), &mut j, &f.scx("polite"))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("this kernel has no sched_ext"), "{e}");
    assert!(j.close().is_empty());
}

#[test]
fn the_journal_stops_a_scheduler_a_killed_run_left_and_leaves_a_reused_pid_alone() {
    let f = Fake::new("journal");
    let mut j = f.journal();
    let l = f.load("polite", &mut j);
    // The engine dies without its Drop: the scheduler stays loaded, the journal says so.
    std::mem::forget(l);
    assert_eq!(f.state(), "enabled");
    let in_force = schedlab_sys::journal::in_force(j.path()).unwrap();
    assert!(matches!(in_force.as_slice(), [Entry::StopScheduler { .. }]), "{in_force:?}");
    assert!(j.close().is_empty(), "restore's undo");
    assert_eq!(f.state(), "disabled");
    // A zombie until this process reaps it (the forgotten Child): gone as far as the undo cares.
    assert!(gone(f.pid()));
    // SAFETY: reaping the zombie child the test forgot.
    unsafe { libc::waitpid(f.pid(), std::ptr::null_mut(), 0) };
    // An entry whose pid now belongs to another process (another start time) kills nothing.
    let mut other = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let mut j = f.journal();
    j.record(Entry::StopScheduler {
        pid: other.id() as i32,
        start: 1,
        state: scx::state_path(&f.root),
    })
    .unwrap();
    assert!(j.close().is_empty());
    assert!(other.try_wait().unwrap().is_none(), "a reused pid is left alone");
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn workers_off_their_cells_scheduler_fail_it_by_pid() {
    let cell = |s: CpuScheduler| Cell {
        index: 0,
        key: "k".into(),
        groups: vec![],
        io: None,
        knobs: Default::default(),
        cpu_scheduler: Some(s),
    };
    let seen = |on: &[Option<bool>], switch_all| SchedExtCell {
        loaded: Some(ScxLoaded { switch_all, ..Default::default() }),
        workers: on
            .iter()
            .enumerate()
            .map(|(i, &e)| WorkerExt { group: "main".into(), pid: 10 + i as i32, ext_enabled: e })
            .collect(),
    };
    let scx = cell(CpuScheduler::parse("scx:scx_fake").unwrap());
    assert_eq!(misplaced(&scx, &seen(&[Some(true), Some(true)], Some(true))), None);
    let why = misplaced(&scx, &seen(&[Some(true), Some(false), None], Some(false))).unwrap();
    assert!(
        why.starts_with("2 of 3 workers were not on sched_ext")
            && why.contains("[11, 12]")
            && why.contains("switch_all 0"),
        "{why}"
    );
    let eevdf = cell(CpuScheduler::Eevdf);
    assert_eq!(
        misplaced(&eevdf, &seen(&[Some(false), None], None)),
        None,
        "no ext.enabled line is not on sched_ext"
    );
    assert!(misplaced(&eevdf, &seen(&[Some(true)], None))
        .unwrap()
        .contains("on sched_ext under eevdf"));
}

/// A scx_stats server at the fake root's socket: on one connection, each request line gets
/// the next of `answers` (as scx schedulers do, a counter's answer is its change since the
/// previous read); returns the requests it saw.
fn stats_server(f: &Fake, answers: Vec<&'static str>) -> std::thread::JoinHandle<Vec<String>> {
    let path = scx::stats_socket(&f.root);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        let (mut conn, _) = listener.accept().unwrap();
        let mut lines = std::io::BufReader::new(conn.try_clone().unwrap()).lines();
        let mut asked = Vec::new();
        for answer in answers {
            asked.push(lines.next().unwrap().unwrap());
            conn.write_all(format!("{answer}\n").as_bytes()).unwrap();
        }
        asked
    })
}

#[test]
fn a_schedulers_own_statistics_are_read_before_the_release_and_after_the_cell() {
    let f = Fake::new("stats");
    let server = stats_server(
        &f,
        vec![
            r#"{"errno":0,"args":{"resp":{"nr_running":3,"nr_kthread_dispatches":10,"name":"fake","cpus":{"0":{"busy":true}}}}}"#,
            r#"{"errno":0,"args":{"resp":{"nr_running":1,"nr_kthread_dispatches":25,"name":"fake","cpus":{"0":{"busy":false}}}}}"#,
        ],
    );
    let mut j = f.journal();
    let mut l = f.load("polite", &mut j);
    l.stats_before_release();
    l.stats_after_cell();
    let asked = server.join().unwrap();
    assert_eq!(
        asked, [r#"{"req":"stats","args":{"target":"top"}}"#; 2],
        "two reads on one connection"
    );
    let s = l.record.stats.clone().expect("the scheduler serves statistics");
    assert_eq!(s.socket, scx::stats_socket(&f.root).to_string_lossy());
    assert_eq!((s.before["nr_kthread_dispatches"], s.cell["nr_kthread_dispatches"]), (10.0, 25.0));
    assert_eq!(
        (s.cell["nr_running"], s.before["cpus.0.busy"], s.cell["cpus.0.busy"]),
        (1.0, 1.0, 0.0)
    );
    assert!(!s.before.contains_key("name"), "strings are not figures: {:?}", s.before);
    assert_eq!(s.error, None);
    l.stop().unwrap();
}

#[test]
fn a_stats_read_the_scheduler_refuses_is_kept_with_its_reason() {
    let f = Fake::new("stats-err");
    let server = stats_server(
        &f,
        vec![
            r#"{"errno":0,"args":{"resp":{"nr_running":3}}}"#,
            r#"{"errno":22,"args":{"resp":"unknown stat target"}}"#,
        ],
    );
    let mut j = f.journal();
    let mut l = f.load("polite", &mut j);
    l.stats_before_release();
    l.stats_after_cell();
    server.join().unwrap();
    let s = l.record.stats.clone().unwrap();
    assert_eq!(s.before["nr_running"], 3.0);
    assert!(s.cell.is_empty());
    assert!(
        s.error
            .as_deref()
            .is_some_and(|e| e.contains("errno 22") && e.contains("unknown stat target")),
        "{:?}",
        s.error
    );
    l.stop().unwrap();
}

#[test]
fn a_scheduler_without_a_stats_socket_has_no_statistics() {
    let f = Fake::new("nostats");
    let mut j = f.journal();
    let mut l = f.load("polite", &mut j);
    l.stats_before_release();
    l.stats_after_cell();
    assert_eq!(l.record.stats, None);
    l.stop().unwrap();
}

#[test]
fn schedlab_scx_is_not_started_without_sched_ext_or_over_another_scheduler() {
    let f = Fake::new("dispatcher");
    let mut j = f.journal();
    let cell = f.dir.join("cell");
    std::fs::write(f.root.path("/sys/kernel/sched_ext/state"), "enabled\n").unwrap();
    std::fs::write(f.root.path("/sys/kernel/sched_ext/root/ops"), "lavd_1.0\n").unwrap();
    let e = start_dispatcher(&f.root, &cell, &mut j, vec![]).err().expect("refused");
    assert!(e.to_string().contains("sched_ext is enabled (lavd_1.0) before the cell"), "{e}");
    std::fs::remove_dir_all(f.root.path("/sys/kernel/sched_ext")).unwrap();
    let e = start_dispatcher(&f.root, &cell, &mut j, vec![]).err().expect("refused");
    assert!(e.to_string().contains("this kernel has no sched_ext"), "{e}");
    assert!(j.entries().is_empty(), "nothing started, nothing journaled");
}
