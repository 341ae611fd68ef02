//! Live tests: real worker processes (the `dispatch-helper` binary) driven by a real
//! dispatcher at SCHED_FIFO 98 on one CPU. They need root (CAP_SYS_NICE, CAP_IPC_LOCK) and
//! skip with a message otherwise. They run one at a time (they share a CPU), assert
//! properties rather than tight timings (the machine is shared), and kill and reap every
//! child on every exit path.

use schedlab_dispatch::{
    remove_stale, scheduler_of, Actuator, Config, DispatchPolicy, Dispatcher, Metrics, Priorities,
    Region, RunState, StatusReader, TaskCfg, TaskState,
};
use schedlab_policy::dwcs::{feasibility, WindowTask};
use schedlab_policy::Window;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;
const Q: u64 = 10 * MS;
/// A canonical job needs one quantum of service; the worker burns this much of it, leaving
/// room for interrupts, the dispatcher, and the 5 % the RT throttle keeps for others.
const WORK: u64 = 7 * MS;

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time, each after earlier work's writeback has drained.
fn serial() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    schedlab_sys::procfs::settle_writeback(std::time::Duration::from_secs(20));
    guard
}

fn root_or_skip(test: &str) -> bool {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test}: skipped: needs root (SCHED_FIFO and mlockall)");
        return false;
    }
    true
}

/// The last online CPU: the one least likely to be busy with the test harness.
fn test_cpu() -> u32 {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let last = online.trim().rsplit([',', '-']).next().and_then(|s| s.parse().ok());
    last.unwrap_or(0)
}

/// Worker processes and a region directory, cleaned up whatever happens.
struct Lab {
    dir: PathBuf,
    workers: Vec<Child>,
    others: Vec<Child>,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let dir =
            PathBuf::from(format!("/dev/shm/schedlab-dispatch-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Lab { dir, workers: Vec::new(), others: Vec::new() }
    }

    fn spawn_workers(&mut self, region: &Path, work: &[u64]) -> Vec<i32> {
        work.iter()
            .enumerate()
            .map(|(slot, w)| {
                let child = Command::new(env!("CARGO_BIN_EXE_dispatch-helper"))
                    .args(["worker", region.to_str().unwrap(), &slot.to_string(), &w.to_string()])
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawning a worker");
                let pid = child.id() as i32;
                self.workers.push(child);
                pid
            })
            .collect()
    }

    fn worker_pids(&self) -> Vec<i32> {
        self.workers.iter().map(|c| c.id() as i32).collect()
    }

    /// Waits until every worker exited; true if all did within `limit`.
    fn workers_exit_within(&mut self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if self.workers.iter_mut().all(|c| matches!(c.try_wait(), Ok(Some(_)))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in self.others.iter_mut().chain(self.workers.iter_mut()) {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One task: C = c, T = t, window x/y, and the worker's CPU time per job.
#[derive(Clone, Copy)]
struct Spec {
    c: u64,
    t: u64,
    x: u32,
    y: u32,
    work: u64,
}

fn spec(c: u64, t: u64, x: u32, y: u32, work: u64) -> Spec {
    Spec { c, t, x, y, work }
}

fn config(
    cpu: u32,
    policy: DispatchPolicy,
    specs: &[Spec],
    pids: &[i32],
    secs: f64,
    fill: bool,
) -> Config {
    let tasks = specs
        .iter()
        .zip(pids)
        .map(|(s, &pid)| TaskCfg { pid, c_ns: s.c, t_ns: s.t, d_ns: 0, x: s.x, y: s.y })
        .collect();
    let mut cfg = Config::new(cpu, policy, tasks);
    cfg.quantum_ns = Q;
    cfg.duration_ns = Some((secs * 1e9) as u64);
    cfg.fill = fill;
    cfg
}

/// Runs a whole in-process dispatcher over fresh workers; `during` runs in the test thread
/// while the dispatcher runs (given the region path).
fn run_set(
    tag: &str,
    policy: DispatchPolicy,
    specs: &[Spec],
    secs: f64,
    fill: bool,
    during: impl FnOnce(&Path, &mut Lab),
) -> (Metrics, Lab) {
    let cpu = test_cpu();
    let mut lab = Lab::new(tag);
    let region = Region::create(&lab.dir, cpu, specs.len()).expect("region");
    let path = region.path().to_path_buf();
    let work: Vec<u64> = specs.iter().map(|s| s.work).collect();
    let pids = lab.spawn_workers(&path, &work);
    let cfg = config(cpu, policy, specs, &pids, secs, fill);
    let dispatcher = Dispatcher::new(cfg, region).expect("dispatcher");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || dispatcher.run(&flag));
    during(&path, &mut lab);
    let metrics = handle.join().expect("dispatcher thread").expect("dispatcher run");
    report(tag, &metrics);
    assert!(!path.exists(), "the region file is removed at the end");
    (metrics, lab)
}

fn report(tag: &str, m: &Metrics) {
    eprintln!(
        "{tag}: {} ticks, {} decisions, {} switches, latency p50 {} us p99 {} us max {} us, decision p99 {} us, overruns {}, faults {}/{}",
        m.ticks,
        m.decisions,
        m.switches,
        m.dispatch_latency.p50_ns / 1000,
        m.dispatch_latency.p99_ns / 1000,
        m.dispatch_latency.max_ns / 1000,
        m.decision_cost.p99_ns / 1000,
        m.overruns,
        m.minor_faults,
        m.major_faults
    );
    for t in &m.tasks {
        eprintln!(
            "  slot {} T {} ms {}: released {} completed {} missed {} windows {} violated {} policy {:?}",
            t.slot,
            t.t_ns / MS,
            t.window,
            t.released,
            t.completed,
            t.missed,
            t.windows,
            t.window_violations,
            t.policy.map(|p| (p.serviced, p.missed, p.violations))
        );
    }
}

/// Returns early with a message when a property does not hold.
macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        let holds: bool = $cond;
        if !holds {
            return Err(format!($($msg)+));
        }
    };
}

/// Timing properties can be spoiled by other tenants of a shared machine (another process at
/// a higher RT priority, a stalled vCPU), the workers alone or the dispatcher too (then it
/// shows overruns). So the property must hold in one of `ATTEMPTS` (testkit's rule: a policy
/// bug fails every one; a hypervisor that stole CPU time in every attempt makes it a skip).
const ATTEMPTS: usize = 4;

fn in_some_attempt<E: std::fmt::Display>(
    test: &str,
    mut attempt: impl FnMut() -> (Metrics, Result<(), E>),
) {
    schedlab_testkit::in_some_attempt(test, ATTEMPTS, |_| {
        let (m, verdict) = attempt();
        verdict.map_err(|e| format!("{e} ({} dispatcher overruns)", m.overruns))
    });
}

fn assert_rt_hygiene(m: &Metrics) {
    assert_eq!((m.minor_faults, m.major_faults), (0, 0), "page faults inside the loop");
    assert!(m.ticks > 0 && m.dispatch_latency.samples > 0);
    assert_eq!(m.control_errors, 0);
    assert_job_logs_agree(m);
}

/// Every task's per-job records tell the same story as its tally: one record per counted
/// job, the met ones are the completed ones, releases one period apart from the start,
/// and a finished job started (was dispatched) no later than it finished.
fn assert_job_logs_agree(m: &Metrics) {
    assert_eq!(m.job_logs.len(), m.tasks.len());
    for (t, log) in m.tasks.iter().zip(&m.job_logs) {
        assert_eq!((log.source.as_str(), log.d_ns, log.unrecorded), ("dispatcher", t.d_ns, 0));
        assert_eq!(log.jobs.len() as u64, t.completed + t.missed, "slot {}", t.slot);
        assert_eq!(log.met(), t.completed, "slot {}", t.slot);
        for (k, j) in log.jobs.iter().enumerate() {
            assert_eq!(j.release_ns, k as u64 * t.t_ns, "slot {} job {k}", t.slot);
            if let Some(f) = j.finish_ns {
                assert!(j.start_ns.is_some_and(|s| s <= f), "slot {} job {k}: {j:?}", t.slot);
            }
            assert_eq!(
                j.met,
                j.finish_ns.is_some_and(|f| f <= t.d_ns),
                "slot {} job {k}: {j:?}",
                t.slot
            );
        }
    }
}

#[test]
fn edf_at_half_utilisation_meets_its_deadlines() {
    if !root_or_skip("edf_at_half_utilisation_meets_its_deadlines") {
        return;
    }
    let _s = serial();
    // Utilisation 4/20 + 6/40 + 5/50 + 10/200 = 0.5; periods on the quantum grid.
    let set = [
        spec(4 * MS, 20 * MS, 0, 0, 4 * MS),
        spec(6 * MS, 40 * MS, 0, 0, 6 * MS),
        spec(5 * MS, 50 * MS, 0, 0, 5 * MS),
        spec(10 * MS, 200 * MS, 0, 0, 10 * MS),
    ];
    in_some_attempt("edf", || {
        let (m, _lab) = run_set("edf", DispatchPolicy::Edf, &set, 4.0, true, |_, _| {});
        assert_rt_hygiene(&m);
        let verdict = (|| {
            let released = m.total_released();
            check!(
                m.total_missed() <= 2 + released / 100,
                "{} of {released} jobs missed",
                m.total_missed()
            );
            for t in &m.tasks {
                let expected = 4_000 * MS / t.t_ns;
                check!(
                    t.released + 1 >= expected,
                    "slot {}: {} released, {expected} due",
                    t.slot,
                    t.released
                );
                check!(
                    t.completed * 10 >= t.released * 9,
                    "slot {} progresses: {} of {}",
                    t.slot,
                    t.completed,
                    t.released
                );
            }
            check!(
                m.completion_wakeups > 0,
                "jobs finish inside quanta and the next one is dispatched at once"
            );
            Ok(())
        })();
        (m, verdict)
    });
}

/// A canonical set (C = one quantum, T a multiple of it) with minimum utilisation 0.87
/// whose raw demand (1.45 quanta per quantum) forces DWCS to drop jobs every period.
fn canonical_set() -> Vec<Spec> {
    vec![
        spec(Q, 2 * Q, 1, 2, WORK),
        spec(Q, 2 * Q, 1, 2, WORK),
        spec(Q, 4 * Q, 1, 3, WORK),
        spec(Q, 5 * Q, 0, 0, WORK),
    ]
}

#[test]
fn dwcs_keeps_a_feasible_canonical_set_within_its_windows() {
    if !root_or_skip("dwcs_keeps_a_feasible_canonical_set_within_its_windows") {
        return;
    }
    let _s = serial();
    let set = canonical_set();
    let f = feasibility(
        &set.iter()
            .map(|s| WindowTask { wcet: s.c, period: s.t, window: Window::new(s.x, s.y) })
            .collect::<Vec<_>>(),
    );
    assert!(f.canonical && f.feasible && f.utilisation <= 0.9, "{f:?}");
    in_some_attempt("dwcs", || {
        let (m, _lab) = run_set(
            "dwcs",
            DispatchPolicy::Dwcs { work_conserving: true },
            &set,
            5.0,
            false,
            |_, _| {},
        );
        assert_rt_hygiene(&m);
        let verdict = (|| {
            check!(m.total_windows() > 600, "{} windows judged", m.total_windows());
            check!(
                m.violation_ratio() < 0.01,
                "sliding-window violations {} of {}",
                m.total_window_violations(),
                m.total_windows()
            );
            let fixed: u64 = m.tasks.iter().map(|t| t.fixed_window_violations).sum();
            let fixed_windows: u64 = m.tasks.iter().map(|t| t.fixed_windows).sum();
            check!(
                fixed * 100 < fixed_windows,
                "fixed-window violations {fixed} of {fixed_windows}"
            );
            // Raw demand is 1.45 quanta per quantum: DWCS must have dropped jobs, within the windows.
            check!(m.total_missed() > m.total_released() / 10, "only {} misses", m.total_missed());
            for t in &m.tasks {
                check!(t.completed > 0, "slot {} progresses", t.slot);
            }
            Ok(())
        })();
        (m, verdict)
    });
}

#[test]
fn under_overload_dwcs_spreads_misses_by_window_where_edf_starves_the_last_tie() {
    if !root_or_skip("under_overload_dwcs_spreads_misses_by_window_where_edf_starves_the_last_tie")
    {
        return;
    }
    let _s = serial();
    // Utilisation 1.5: three tasks of one quantum every two. All deadlines coincide, so each
    // period one job of three must be dropped. EDF breaks the tie by release, then task id,
    // so the last task (the hard one, 0/0) always loses. DWCS breaks it by window (rule 2:
    // lowest x'/y' first; rule 3 among zero constraints), so the hard task is always served
    // and the two 1/2 tasks take turns missing: within their windows.
    let set = [spec(Q, 2 * Q, 1, 2, WORK), spec(Q, 2 * Q, 1, 2, WORK), spec(Q, 2 * Q, 0, 0, WORK)];
    in_some_attempt("overload", || {
        let (edf, _lab) = run_set("overload-edf", DispatchPolicy::Edf, &set, 3.0, false, |_, _| {});
        let (dwcs, _lab) = run_set(
            "overload-dwcs",
            DispatchPolicy::Dwcs { work_conserving: true },
            &set,
            3.0,
            false,
            |_, _| {},
        );
        for m in [&edf, &dwcs] {
            assert_rt_hygiene(m);
        }
        let verdict = (|| {
            for m in [&edf, &dwcs] {
                check!(
                    m.total_missed() * 5 > m.total_released(),
                    "{}: overload shows misses",
                    m.policy
                );
            }
            let miss_ratio = |m: &Metrics, i: usize| {
                m.tasks[i].missed as f64 / m.tasks[i].released.max(1) as f64
            };
            check!(miss_ratio(&edf, 2) > 0.8, "EDF starves the last tie: {}", miss_ratio(&edf, 2));
            check!(
                miss_ratio(&dwcs, 2) < 0.1,
                "DWCS serves the hard task: {}",
                miss_ratio(&dwcs, 2)
            );
            for i in 0..2 {
                let r = miss_ratio(&dwcs, i);
                check!((0.3..0.7).contains(&r), "DWCS shares the losses: slot {i} misses {r}");
            }
            check!(
                dwcs.total_window_violations() * 5 < edf.total_window_violations(),
                "DWCS {} vs EDF {} violated windows",
                dwcs.total_window_violations(),
                edf.total_window_violations()
            );
            Ok(())
        })();
        // Either run being spoiled allows a repeat.
        let mut m = dwcs;
        m.overruns += edf.overruns;
        (m, verdict)
    });
}

#[test]
fn status_shows_live_changing_state_and_the_end_of_the_run() {
    if !root_or_skip("status_shows_live_changing_state_and_the_end_of_the_run") {
        return;
    }
    let _s = serial();
    let mut reader = None;
    let mut snaps = Vec::new();
    let (m, mut lab) = run_set(
        "status",
        DispatchPolicy::Dwcs { work_conserving: true },
        &canonical_set(),
        2.0,
        false,
        |path, _| {
            let r = StatusReader::open(path).expect("reader");
            let t0 = Instant::now();
            while r.snapshot().state != RunState::Running {
                assert!(t0.elapsed() < Duration::from_secs(20), "the dispatcher never started");
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(300));
            snaps.push(r.snapshot());
            std::thread::sleep(Duration::from_millis(400));
            snaps.push(r.snapshot());
            reader = Some(r);
        },
    );
    let jobs = |s: &schedlab_dispatch::Snapshot| s.tasks.iter().map(|t| t.released).sum::<u64>();
    let (a, b) = (&snaps[0], &snaps[1]);
    assert!(a.dispatcher_alive && b.dispatcher_alive && a.consistent && b.consistent);
    assert!(jobs(b) > jobs(a), "jobs move: {} then {}", jobs(a), jobs(b));
    assert!(b.decisions > a.decisions && b.elapsed_ns > a.elapsed_ns);
    assert!(
        b.tasks.iter().all(|t| t.x_cur.is_some() && t.deadline_ns.is_some()),
        "DWCS shows x'/y' and deadlines"
    );
    let json = serde_json::to_string(b).expect("snapshot serialises");
    assert!(json.contains("\"x_cur\"") && json.contains("\"window_violations\""));
    eprintln!("{b}");
    let end = reader.expect("reader").snapshot();
    assert!(!end.dispatcher_alive, "gone after the run");
    assert_eq!(end.state, RunState::Finished);
    assert!(end.tasks.iter().all(|t| t.state != TaskState::Running));
    assert_eq!(jobs(&end), m.total_released());
    // Told to shut down, the workers exit, none at a real-time priority.
    assert!(lab.workers_exit_within(Duration::from_secs(15)), "workers exit after the run");
    assert!(StatusReader::discover(&lab.dir).unwrap().is_empty(), "no state left behind");
    lab.workers.clear();
}

#[test]
fn a_killed_dispatcher_leaves_no_worker_at_rt_priority_and_no_state_behind() {
    if !root_or_skip("a_killed_dispatcher_leaves_no_worker_at_rt_priority_and_no_state_behind") {
        return;
    }
    let _s = serial();
    let cpu = test_cpu();
    let set = canonical_set();
    let mut lab = Lab::new("kill");
    let region = Region::create(&lab.dir, cpu, set.len()).expect("region");
    let work: Vec<u64> = set.iter().map(|s| s.work).collect();
    let pids = lab.spawn_workers(region.path(), &work);
    // The dispatcher process takes the region over; its pid goes into the header.
    let path = region.disown();
    let mut cfg =
        config(cpu, DispatchPolicy::Dwcs { work_conserving: true }, &set, &pids, 1.0, false);
    cfg.duration_ns = None;
    let child = Command::new(env!("CARGO_BIN_EXE_dispatch-helper"))
        .args(["dispatcher", path.to_str().unwrap(), &serde_json::to_string(&cfg).unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawning the dispatcher");
    let dpid = child.id() as i32;
    lab.others.push(child);
    let reader = StatusReader::open(&path).expect("reader");
    let t0 = Instant::now();
    while !(reader.snapshot().state == RunState::Running
        && reader.snapshot().dispatcher_pid == dpid)
    {
        assert!(t0.elapsed() < Duration::from_secs(10), "the dispatcher process never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Kill it while a worker runs at SCHED_FIFO (the chosen one), so that worker must demote itself.
    let pids = lab.worker_pids();
    let t0 = Instant::now();
    let fifo = loop {
        if let Some(&p) =
            pids.iter().find(|&&p| scheduler_of(p).is_ok_and(|s| s == libc::SCHED_FIFO))
        {
            break p;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "no worker was ever seen at SCHED_FIFO");
        std::thread::sleep(Duration::from_micros(200));
    };
    assert!(reader.snapshot().dispatcher_alive);
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(dpid, libc::SIGKILL) };
    let was_fifo = scheduler_of(fifo).is_ok_and(|s| s == libc::SCHED_FIFO);
    let _ = lab.others[0].wait();
    assert!(!reader.snapshot().dispatcher_alive, "the status reports the dispatcher gone");
    // The workers notice, demote themselves and exit; none is left real-time meanwhile.
    let t0 = Instant::now();
    loop {
        let rt: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|&p| scheduler_of(p).is_ok_and(schedlab_dispatch::is_rt_policy))
            .collect();
        if rt.is_empty() {
            break;
        }
        // They take milliseconds (printed below); the bound is for a host that stalls the VM.
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "workers still real-time 15 s after the dispatcher died: {rt:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("kill: worker {fifo} at FIFO when the dispatcher died: {was_fifo}; none real-time {} ms later", t0.elapsed().as_millis());
    assert!(
        lab.workers_exit_within(Duration::from_secs(15)),
        "workers exit when their dispatcher is gone"
    );
    // The engine's clean-up finds the orphaned region and removes it.
    assert_eq!(remove_stale(&lab.dir).unwrap(), vec![path.clone()]);
    assert!(!path.exists());
}

/// Priorities, with every call written down.
#[derive(Default)]
struct Recording {
    calls: std::cell::RefCell<Vec<(&'static str, i32)>>,
}

impl Actuator for Recording {
    fn park(&self, pid: i32) -> std::io::Result<()> {
        self.calls.borrow_mut().push(("park", pid));
        Priorities.park(pid)
    }

    fn grant(&self, pid: i32) -> std::io::Result<()> {
        self.calls.borrow_mut().push(("grant", pid));
        Priorities.grant(pid)
    }
}

#[test]
fn another_actuator_carries_out_every_choice_one_worker_at_a_time() {
    if !root_or_skip("another_actuator_carries_out_every_choice_one_worker_at_a_time") {
        return;
    }
    let _s = serial();
    let set = canonical_set();
    let cpu = test_cpu();
    let mut lab = Lab::new("actuator");
    let region = Region::create(&lab.dir, cpu, set.len()).expect("region");
    let work: Vec<u64> = set.iter().map(|s| s.work).collect();
    let pids = lab.spawn_workers(region.path(), &work);
    let cfg = config(cpu, DispatchPolicy::Dwcs { work_conserving: true }, &set, &pids, 1.0, false);
    let actuator = Recording::default();
    let m = Dispatcher::new(cfg, region)
        .expect("dispatcher")
        .run_with(&AtomicBool::new(false), &actuator)
        .expect("dispatcher run");
    let calls = actuator.calls.into_inner();
    let n = pids.len();
    let parked = |calls: &[(&str, i32)]| {
        let mut p: Vec<i32> = calls.iter().map(|c| c.1).collect();
        p.sort();
        calls.iter().all(|c| c.0 == "park") && p == pids
    };
    assert!(parked(&calls[..n]), "every worker parked before the loop: {:?}", &calls[..n]);
    assert!(parked(&calls[calls.len() - n..]), "and at the end: {:?}", &calls[calls.len() - n..]);
    let mut holder = None;
    let mut grants = 0;
    for &(what, pid) in &calls[n..calls.len() - n] {
        assert!(pids.contains(&pid), "{what} of {pid}, not a worker");
        if what == "grant" {
            assert_eq!(holder, None, "{pid} granted while {holder:?} holds the CPU");
            holder = Some(pid);
            grants += 1;
        } else if holder == Some(pid) {
            holder = None;
        }
    }
    let dispatches: u64 = m.tasks.iter().map(|t| t.dispatches).sum();
    assert!(grants > 0 && grants <= dispatches, "{grants} grants, {dispatches} dispatches");
    assert!(pids.iter().all(|p| calls.contains(&("grant", *p))), "every worker ran: {calls:?}");
    assert!(m.tasks.iter().all(|t| t.completed > 0));
}
