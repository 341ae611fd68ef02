use super::*;
use schedlab_testkit::skip;
use std::process::Command;
use std::sync::Mutex;

/// Observers of this process follow each other's children, and the first test waits for
/// every schedlab program to be gone: one observer at a time.
static OBSERVING: Mutex<()> = Mutex::new(());

/// Spawns `sh -c script` as a child of this process and waits for it with wait4: its exit
/// status and rusage (the child's and its reaped children's).
fn run_child(script: &str) -> (i32, libc::rusage) {
    let child = Command::new("/bin/sh").args(["-c", script]).spawn().expect("sh");
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our unreaped child; status and ru are valid to write.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    std::mem::forget(child);
    (pid, ru)
}

fn tv_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

#[test]
fn a_child_observed_in_the_kernel_agrees_with_wait4() {
    if let Some(why) = unavailable(Path::new(KERNEL_BTF)) {
        return skip(why);
    }
    let _one = OBSERVING.lock().unwrap_or_else(|e| e.into_inner());
    // With and without the wake-up programs: everything else is the same.
    for wakeups in [true, false] {
        let mut obs =
            Observer::start(Path::new(KERNEL_BTF), 2, wakeups).expect("the observer starts");
        // Spin, sleep (wake-ups), fork (a child counted with it), yield to each other.
        let (pid, ru) = run_child(
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 0.02; sleep 0.01; \
             (j=0; while [ $j -lt 5000 ]; do j=$((j+1)); done) & wait",
        );
        obs.register(pid, Role::Worker).unwrap();
        let t = obs.finish(&[pid]).expect("the observer's figures");
        let w = &t.workers[0];
        let cost = t.observer.as_ref().unwrap();
        eprintln!(
            "observed (wake-ups timed: {wakeups}): {w:?}\ncost: {:.1} ns/event over {} events ({:.0}/s)",
            cost.ns_per_event, cost.events, cost.events_per_s
        );
        assert_eq!(w.pid, pid);
        assert!(w.tasks >= 4, "sh, two sleeps, a subshell: {}", w.tasks);
        assert_eq!(w.involuntary, ru.ru_nivcsw as u64, "nivcsw");
        assert_eq!(w.preempted_by.total(), w.involuntary);
        let cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
        assert!((w.run_s - cpu).abs() <= (cpu * 0.01).max(0.002), "run {} against {cpu}", w.run_s);
        let woken = cost.programs.iter().filter(|p| p.name.starts_with("sched_wakeup"));
        if wakeups {
            assert!(w.wakeups >= 3, "at least the sleeps' wake-ups: {}", w.wakeups);
            assert!(w.wakeup_p50_us.is_some() && w.wakeup_max_us >= w.wakeup_p99_us);
        } else {
            assert_eq!((w.wakeups, w.wakeup_p50_us), (0, None), "no wake-up timed");
            assert!(woken.clone().all(|p| p.run_cnt == 0), "{:?}", cost.programs);
        }
        assert!(w.blocked_s >= 0.025, "it slept 30 ms: {}", w.blocked_s);
        assert!(!w.cpus.is_empty());
        assert!(cost.events > 0 && cost.programs.len() == PROGRAMS.len());
        assert!(
            t.cpus.iter().all(|c| (c.busy_s + c.idle_s - t.span_s).abs() < 0.001),
            "{:?}",
            t.cpus
        );
    }
    // The kernel frees a program once its last descriptor closes, after a grace period.
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        loaded_schedlab_programs().unwrap().is_empty()
    });
    assert!(gone, "still loaded: {:?}", loaded_schedlab_programs());
}

/// A pipe's two ends.
fn pipe() -> [libc::c_int; 2] {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    fds
}

/// Forks a process that pins itself to `cpu` and forks a partner: the two pass a byte back
/// and forth over two pipes `rounds` times: the one woken runs at once, when its partner
/// blocks or is preempted by it. Then each writes its pid to `ready` and blocks reading
/// `hold` until its write end closes; the first reaps its partner and both exit. Returns
/// the first one's pid.
fn fork_ping_pong(cpu: usize, rounds: u32, ready: libc::c_int, hold: [libc::c_int; 2]) -> i32 {
    let (ab, ba) = (pipe(), pipe());
    // SAFETY: the child makes system calls only (no allocation, no lock: this process has
    // other threads) and ends with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid > 0 {
        for fd in ab.into_iter().chain(ba) {
            // SAFETY: our own descriptors, closed once.
            unsafe { libc::close(fd) };
        }
        return pid;
    }
    // SAFETY: as above; every pointer is to this frame's own variables.
    unsafe {
        libc::close(hold[1]);
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        let partner = libc::fork();
        let (rd, wr) = if partner == 0 { (ab[0], ba[1]) } else { (ba[0], ab[1]) };
        let mut b = 0u8;
        let byte = &mut b as *mut u8 as *mut libc::c_void;
        for _ in 0..rounds {
            if partner != 0 {
                libc::write(wr, byte, 1);
            }
            libc::read(rd, byte, 1);
            if partner == 0 {
                libc::write(wr, byte, 1);
            }
        }
        let me = libc::getpid();
        libc::write(ready, &me as *const i32 as *const libc::c_void, 4);
        libc::read(hold[0], byte, 1);
        if partner > 0 {
            libc::waitpid(partner, std::ptr::null_mut(), 0);
        }
        libc::_exit(0)
    }
}

/// Sleeps the kernel counted for task `pid` (nr_voluntary_switches of /proc/PID/sched).
fn voluntary(pid: i32) -> u64 {
    schedlab_sys::procfs::TaskSched::read(&schedlab_sys::Root::default(), pid)
        .voluntary
        .unwrap_or_else(|| panic!("/proc/{pid}/sched has no nr_voluntary_switches"))
}

/// Whether task `pid` is asleep (S in /proc/PID/stat).
fn asleep(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('S'))
}

/// A wake-up that the woken task's partner answers by blocking (or by being preempted) at
/// once has a latency of its own: the time from the enqueue to the switch. The kernel's
/// run_delay reads 0 for one that preempts (its clock update is skipped), so these are
/// timed from sched_wakeup. Each wake-up of a sleep is counted once: while both tasks
/// sleep, the wake-ups timed are the sleeps the kernel counted (nr_voluntary_switches),
/// each task's creation standing for the sleep it is in.
#[test]
fn a_ping_pong_on_one_cpu_times_every_wake_up_and_counts_the_kernels_sleeps() {
    if let Some(why) = unavailable(Path::new(KERNEL_BTF)) {
        return skip(why);
    }
    let _one = OBSERVING.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: a zeroed cpu_set_t is valid for sched_getaffinity to fill.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: allowed is a cpu_set_t of the size given.
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) };
    // SAFETY: CPU_ISSET reads the set only.
    let cpu = (0..libc::CPU_SETSIZE as usize).find(|&c| unsafe { libc::CPU_ISSET(c, &allowed) });
    let (ready, hold) = (pipe(), pipe());
    const ROUNDS: u32 = 2000;
    let mut obs = Observer::start(Path::new(KERNEL_BTF), 1, true).expect("the observer starts");
    let pid = fork_ping_pong(cpu.expect("a CPU this test may use"), ROUNDS, ready[1], hold);
    obs.register(pid, Role::Worker).unwrap();
    let mut pids = [0i32; 2];
    for p in &mut pids {
        // SAFETY: p is an i32 to fill.
        let n = unsafe { libc::read(ready[0], p as *mut i32 as *mut libc::c_void, 4) };
        assert_eq!(n, 4, "a pid from the ping-pong");
    }
    // Both asleep on `hold`, and staying so.
    let sleeps = || pids.iter().map(|&p| voluntary(p)).sum::<u64>();
    let mut before = sleeps();
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = sleeps();
        if now == before && pids.iter().all(|&p| asleep(p)) {
            break;
        }
        before = now;
    }
    let t = obs.finish(&[pid]).expect("the observer's figures");
    assert_eq!(sleeps(), before, "the two tasks slept on while the maps were read");
    for fd in [hold[1], ready[0], ready[1], hold[0]] {
        // SAFETY: our own descriptors, closed once.
        unsafe { libc::close(fd) };
    }
    let mut status = 0;
    // SAFETY: pid is our unreaped child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    let w = &t.workers[0];
    eprintln!("ping-pong: {w:?}");
    assert_eq!(w.tasks, 2);
    // Each round one of them blocks at least (the other, preempted by the one it woke, may
    // find its byte already there).
    assert!(w.wakeups >= ROUNDS as u64, "a wake-up a round at least: {}", w.wakeups);
    assert_eq!(w.wakeups, before, "wake-ups timed against the kernel's sleeps {pids:?}");
    let h = schedlab_model::hist::decode(w.wakeup_hist.as_deref().expect("a histogram"))
        .expect("it decodes");
    assert_eq!(h.len(), w.wakeups);
    assert!(h.min() > 0, "every wake-up has a latency: the shortest {} ns", h.min());
    assert!(w.wakeup_p50_us.is_some_and(|p| p > 0.0) && w.wakeup_max_us >= w.wakeup_p99_us);
}

#[test]
fn a_missing_btf_is_named() {
    let why = unavailable(Path::new("/nonexistent/btf/vmlinux")).unwrap();
    assert!(why.contains("/nonexistent/btf/vmlinux") && why.contains("BTF"), "{why}");
    assert!(matches!(
        Observer::start(Path::new("/nonexistent/btf/vmlinux"), 1, true),
        Err(BpfError::Unavailable(_))
    ));
}
