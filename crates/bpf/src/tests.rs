use super::*;
use schedlab_testkit::skip;
use std::process::Command;

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
    let mut obs = Observer::start(Path::new(KERNEL_BTF), 2).expect("the observer starts");
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
        "observed: {w:?}\ncost: {:.1} ns/event over {} events ({:.0}/s)",
        cost.ns_per_event, cost.events, cost.events_per_s
    );
    assert_eq!(w.pid, pid);
    assert!(w.tasks >= 4, "sh, two sleeps, a subshell: {}", w.tasks);
    assert_eq!(w.involuntary, ru.ru_nivcsw as u64, "nivcsw");
    assert_eq!(w.preempted_by.total(), w.involuntary);
    let cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
    assert!((w.run_s - cpu).abs() <= (cpu * 0.01).max(0.002), "run {} against {cpu}", w.run_s);
    assert!(w.wakeups >= 3, "at least the sleeps' wake-ups: {}", w.wakeups);
    assert!(w.wakeup_p50_us.is_some() && w.wakeup_max_us >= w.wakeup_p99_us);
    assert!(w.blocked_s >= 0.025, "it slept 30 ms: {}", w.blocked_s);
    assert!(!w.cpus.is_empty());
    assert!(cost.events > 0 && cost.programs.len() == PROGRAMS.len());
    assert!(t.cpus.iter().all(|c| (c.busy_s + c.idle_s - t.span_s).abs() < 0.001), "{:?}", t.cpus);
    // The kernel frees a program once its last descriptor closes, after a grace period.
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        loaded_schedlab_programs().unwrap().is_empty()
    });
    assert!(gone, "still loaded: {:?}", loaded_schedlab_programs());
}

#[test]
fn a_missing_btf_is_named() {
    let why = unavailable(Path::new("/nonexistent/btf/vmlinux")).unwrap();
    assert!(why.contains("/nonexistent/btf/vmlinux") && why.contains("BTF"), "{why}");
    assert!(matches!(
        Observer::start(Path::new("/nonexistent/btf/vmlinux"), 1),
        Err(BpfError::Unavailable(_))
    ));
}
