//! The scheduler's knobs as matrix axes (issue 20): values stored as read back, every knob
//! put back after a normal end, Ctrl-C and kill -9 + `restore`; a longer RR time slice
//! means fewer preemptions; an unknown knob or a refused value changes nothing.
//!
//! These tests change kernel.sched_rr_timeslice_ms, which other tests read: each holds
//! `measuring()` while it does, and [`Sysctls`] puts every value back whatever happens.

use crate::util::{is_root, measuring, wait_exit, wait_for, Lab};
use std::collections::BTreeMap;
use std::time::Duration;

const RR: &str = "kernel.sched_rr_timeslice_ms";
const AUTOGROUP: &str = "kernel.sched_autogroup_enabled";
/// The RR time slice the tests put in place before a run, unlike any value they sweep.
const RR_BEFORE: &str = "37";

fn file(knob: &str) -> String {
    format!("/proc/sys/kernel/{}", knob.strip_prefix("kernel.").unwrap())
}

fn read(knob: &str) -> String {
    std::fs::read_to_string(file(knob)).unwrap().trim().to_string()
}

/// The machine's values of the knobs a test touches, put back when dropped (a failed
/// assertion included).
struct Sysctls(BTreeMap<&'static str, String>);

impl Sysctls {
    fn save() -> Sysctls {
        Sysctls([RR, AUTOGROUP].into_iter().map(|k| (k, read(k))).collect())
    }

    fn now() -> BTreeMap<&'static str, String> {
        [RR, AUTOGROUP].into_iter().map(|k| (k, read(k))).collect()
    }
}

impl Drop for Sysctls {
    fn drop(&mut self) {
        for (k, v) in &self.0 {
            let _ = std::fs::write(file(k), v);
        }
    }
}

/// The two knobs swept over every combination, with `workload`'s cells.
fn sweep_spec(workload: &str) -> String {
    format!(
        "name = \"knobs\"\nrepetitions = 1\n[matrix]\nworkload = [\"w\"]\nprocesses = [2]\n\
         [matrix.knobs]\n\"{RR}\" = [5, 100]\n\"{AUTOGROUP}\" = [0, 1]\n[workloads.w]\n{workload}"
    )
}

#[test]
fn a_knob_sweep_stores_values_read_back_and_every_knob_is_put_back_after_end_ctrl_c_and_kill_9() {
    require!(is_root(), "writing sysctls needs root");
    let lab = Lab::new();
    let _one = measuring();
    let _saved = Sysctls::save();
    std::fs::write(file(RR), RR_BEFORE).unwrap();
    let before = Sysctls::now();

    // A normal end: one cell per combination, each storing what was in force.
    let spec = lab.spec("sweep.toml", &sweep_spec("kind = \"pi\"\niterations = 200000\n"));
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    assert_eq!(Sysctls::now(), before, "after a normal end");
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    assert_eq!(
        run.knobs_before.get(RR).map(String::as_str),
        Some(RR_BEFORE),
        "the run keeps the values from before it"
    );
    assert_eq!(run.knobs_before.get(AUTOGROUP), before.get(AUTOGROUP));
    let cells = store.cells(run.id).unwrap();
    assert_eq!(cells.len(), 4);
    for c in &cells {
        assert_eq!(c.params.knobs.len(), 2, "{}", c.params.key);
        for (k, asked) in &c.params.knobs {
            assert!(
                c.params.key.contains(&format!("/{}={asked}", k.strip_prefix("kernel.").unwrap())),
                "{}",
                c.params.key
            );
            // Both read back as written (the RR slice itself is whole ticks: at HZ=250 the
            // kernel gives an RR task 8 ms for 5, as sched_rr_get_interval says).
            assert_eq!(c.knobs.get(k), Some(asked), "{} in force during {}", k, c.params.key);
        }
    }

    // Ctrl-C in the middle of a cell, and kill -9 then `restore`: sleeping workers, so the
    // cells are long and a signal lands while the first cell's knobs are in force.
    let spec =
        lab.spec("long.toml", &sweep_spec("kind = \"command\"\nargv = [\"sleep\", \"7.3571\"]\n"));
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let mut child = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
        wait_for("the first cell's knobs", Duration::from_secs(60), || {
            read(RR) == "5" && read(AUTOGROUP) == "0"
        });
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = wait_exit(&mut child, Duration::from_secs(30));
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(130), "stopped by SIGINT");
        } else {
            assert_eq!(read(RR), "5", "a killed engine leaves its knobs for restore");
            let out = lab.run(&["restore"]);
            assert!(out.status.success(), "restore: {}", String::from_utf8_lossy(&out.stderr));
        }
        assert_eq!(Sysctls::now(), before, "after signal {signal}");
    }
}

#[test]
fn rr_workers_are_preempted_fewer_times_per_cpu_second_at_a_100_ms_slice_than_at_5_ms() {
    require!(is_root(), "SCHED_RR and sysctls need root");
    require!(
        crate::util::tracing_possible(),
        "this kernel has no tracefs (the test counts switches between workers in the trace)"
    );
    require!(
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) == 2,
        "the property is stated for 2 CPUs"
    );
    let lab = Lab::new();
    let _one = measuring();
    let _saved = Sysctls::save();
    let spec = lab.spec(
        "rr.toml",
        &format!(
            "name = \"rr\"\nrepetitions = 1\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"rr\"]\nprocesses = [8]\n\
             [matrix.knobs]\n\"{RR}\" = [5, 100]\n[workloads.cpu]\nkind = \"pi\"\niterations = 60000000\n"
        ),
    );
    // Traced, so that only the switch-outs where another worker took the CPU count: the
    // suite's other tests run engines at SCHED_FIFO 99 beside this one, which preempt an RR
    // worker at any slice.
    lab.ok(&["run", spec.to_str().unwrap(), "-q", "--trace"]);
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    let per_cpu_second = |slice: &str| {
        let c =
            store.cells(run.id).unwrap().into_iter().find(|c| c.params.knobs[RR] == slice).unwrap();
        assert_eq!(c.knobs[RR], slice);
        let t = c.trace.as_ref().expect("a traced cell");
        let (by_worker, run_s) = t
            .workers
            .iter()
            .fold((0.0, 0.0), |(n, r), w| (n + w.preempted_by.worker as f64, r + w.run_s));
        by_worker / run_s
    };
    let (short, long) = (per_cpu_second("5"), per_cpu_second("100"));
    // 8 RR workers on 2 CPUs give way to each other at each slice's end: about 1000/5 (the
    // slice is whole ticks: 8 ms at 250 Hz) and 1000/100 times per CPU-second.
    assert!(
        long < short / 4.0,
        "switch-outs to another worker per CPU-second: {long:.1} at 100 ms, {short:.1} at 5 ms"
    );
    eprintln!("switch-outs to another worker per CPU-second: {short:.1} at a 5 ms RR slice, {long:.1} at 100 ms");
}

#[test]
fn an_unknown_knob_or_a_value_the_kernel_refuses_exits_2_naming_it_at_its_line_and_changes_nothing()
{
    let lab = Lab::new();
    // Other tests here change these knobs while they hold the lock.
    let _one = measuring();
    let before = Sysctls::now();
    let base = "name = \"bad\"\n[matrix]\nworkload = [\"pi\"]\n[matrix.knobs]\n";
    for (knob, value, col) in
        [("kernel.sched_nonsense", "[1]", 1), (RR, "[5, -5]", 38), (AUTOGROUP, "[2]", 37)]
    {
        let spec = lab.spec("bad.toml", &format!("{base}\"{knob}\" = {value}\n"));
        for cmd in ["check", "run"] {
            let out =
                lab.run(&[cmd, spec.to_str().unwrap(), "-q"][..if cmd == "check" { 2 } else { 3 }]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {knob} = {value}: {err}");
            assert!(
                err.contains(&format!("bad.toml:5:{col}")) && err.contains(knob),
                "{cmd}: {err}"
            );
            assert_eq!(Sysctls::now(), before, "{cmd} {knob} = {value} changed nothing");
        }
    }
    assert!(
        !lab.db().exists()
            || schedlab_store::Store::open(&lab.db()).unwrap().runs().unwrap().is_empty(),
        "no run recorded"
    );
}

/// debugfs's scheduler files: where the kernel refuses them (this VM: EPERM even for
/// root), a spec that uses one fails at `check` with that reason, at its line.
#[test]
fn a_debugfs_knob_the_kernel_refuses_fails_at_check_with_the_reason_at_its_line() {
    require!(is_root(), "mounting debugfs needs root");
    let lab = Lab::new();
    let mnt = lab.path("debug");
    std::fs::create_dir(&mnt).unwrap();
    let spec = lab.spec(
        "dbg.toml",
        "name = \"dbg\"\n[matrix]\nworkload = [\"pi\"]\n[knobs]\n\"sched.preempt\" = \"full\"\n",
    );
    let standard = schedlab_sys::knobs::debugfs(&schedlab_sys::Root::default());
    if standard.is_none() {
        let out = lab.run(&["check", spec.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("dbg.toml:5:1") && err.contains("debugfs is not mounted"), "{err}");
    }
    // Mounted (here, in the test's own directory, unmounted after), the files themselves.
    let c = std::ffi::CString::new(mnt.to_str().unwrap()).unwrap();
    // SAFETY: valid C strings.
    let mounted = unsafe {
        libc::mount(c"debugfs".as_ptr(), c.as_ptr(), c"debugfs".as_ptr(), 0, std::ptr::null())
    } == 0;
    require!(mounted, "debugfs cannot be mounted here");
    struct Unmount(std::ffi::CString);
    impl Drop for Unmount {
        fn drop(&mut self) {
            // SAFETY: a valid C string.
            unsafe { libc::umount2(self.0.as_ptr(), libc::MNT_DETACH) };
        }
    }
    let _unmount = Unmount(c);
    let dir = standard.unwrap_or(mnt).join("sched/preempt");
    let refused =
        std::fs::read_to_string(&dir).err().and_then(|e| e.raw_os_error()) == Some(libc::EPERM);
    require!(refused, "this kernel lets root read its debugfs sched files");
    let out = lab.run(&["check", spec.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("dbg.toml:5:1")
            && err.contains("sched.preempt cannot be used")
            && err.contains("EPERM"),
        "{err}"
    );
}
