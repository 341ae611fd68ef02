//! DWCS: the seed's example and small sets worked by hand.

use schedlab_policy::dwcs::{feasibility, WindowTask};
use schedlab_policy::{PolicySpec, Window};
use schedlab_sim::{MissAction, TaskSpec};

use crate::{run, spans, uni};

const DWCS: PolicySpec = PolicySpec::Dwcs { work_conserving: true };
const DWCS_NWC: PolicySpec = PolicySpec::Dwcs { work_conserving: false };

/// The seed's P1: C = 1, T = 2, W = 1/2, alone: one quantum per request period.
#[test]
fn seed_example_single_task() {
    let task = TaskSpec::periodic("p1", 1, 2).window(1, 2);
    let r = run(&uni(DWCS, 16), &[task]);
    assert_eq!(
        spans(&r, 0),
        vec![(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15)]
    );
    assert_eq!(r.tasks[0].deadline_misses, 0);
    assert_eq!(r.tasks[0].jobs, 8);
    let f = feasibility(&[WindowTask { wcet: 1, period: 2, window: Window::new(1, 2) }]);
    assert_eq!(f.utilisation, 0.25);
    assert!(f.feasible && f.canonical);
}

/// The seed's P1 as a CPU-bound process (a burst of 4 quanta): the
/// work-conserving flag decides whether it may run ahead of its periods.
#[test]
fn seed_example_as_a_process_and_the_work_conserving_flag() {
    let mut p1 = TaskSpec::burst("p1", 4).window(1, 2);
    p1.params.period = Some(2);
    p1.params.wcet = Some(1);
    let eager = run(&uni(DWCS, 20), std::slice::from_ref(&p1));
    assert_eq!(spans(&eager, 0), vec![(0, 4)]);
    assert_eq!(eager.tasks[0].preemptions, 0);
    let strict = run(&uni(DWCS_NWC, 20), &[p1]);
    assert_eq!(spans(&strict, 0), vec![(0, 1), (2, 3), (4, 5), (6, 7)]);
    assert_eq!(strict.tasks[0].completion, Some(7));
    // Each time it is switched out while still ready counts as involuntary.
    assert_eq!(strict.tasks[0].preemptions, 3);
}

fn overloaded_pair() -> [TaskSpec; 2] {
    // Each needs the whole CPU, but may miss 1 of every 2 deadlines:
    // minimum utilisation 1/2 + 1/2 = 1, canonical (K = 1).
    let t = |name| TaskSpec::periodic(name, 1, 1).window(1, 2).on_miss(MissAction::Drop);
    [t("a"), t("b")]
}

/// Worked by hand. t=0: equal deadlines and constraints, first come runs (a).
/// t=1: a serviced (1/2 -> 1/1), b missed (1/2 -> 0/1): b has the lower
/// constraint. t=2: b serviced (0/1 -> 0/0 -> reset 1/2), a missed
/// (1/1 -> 0/0 -> reset 1/2): tie, a has waited longer. And so on.
#[test]
fn two_task_overload_alternates_and_keeps_windows() {
    let set = overloaded_pair();
    let f = feasibility(&[WindowTask { wcet: 1, period: 1, window: Window::new(1, 2) }; 2]);
    assert!(f.feasible && f.canonical);
    assert_eq!(f.utilisation, 1.0);
    let r = run(&uni(DWCS, 6), &set);
    assert_eq!(spans(&r, 0), vec![(0, 1), (2, 3), (4, 5)]);
    assert_eq!(spans(&r, 1), vec![(1, 2), (3, 4), (5, 6)]);
    for t in &r.tasks {
        assert_eq!(t.jobs, 3, "{}", t.name);
        assert_eq!(t.dropped, 3, "{}", t.name);
        assert_eq!(t.deadline_misses, 3, "{}", t.name);
        assert_eq!(
            (t.windows.fixed.violations, t.windows.sliding.violations),
            (0, 0),
            "{}",
            t.name
        );
    }
}

/// Plain EDF breaks the tie the same way every time and starves b: every window violated.
#[test]
fn edf_starves_the_same_pair() {
    let r = run(&uni(PolicySpec::Edf, 6), &overloaded_pair());
    assert_eq!(spans(&r, 0), vec![(0, 6)]);
    assert_eq!(r.tasks[0].deadline_misses, 0);
    assert_eq!(r.tasks[1].deadline_misses, 6);
    let w = r.tasks[1].windows;
    assert_eq!(
        (w.fixed.windows, w.fixed.violations, w.sliding.windows, w.sliding.violations),
        (3, 3, 5, 5)
    );
}

/// A 0/0 window tolerates no loss: DWCS is EDF, and every miss is a violation.
#[test]
fn hard_windows_make_dwcs_edf() {
    let tasks = [TaskSpec::periodic("t1", 2, 5), TaskSpec::periodic("t2", 4, 7)];
    let dwcs = run(&uni(DWCS, 35), &tasks);
    let edf = run(&uni(PolicySpec::Edf, 35), &tasks);
    assert_eq!(dwcs.total_misses(), 0);
    // DWCS does not preempt a quantum, EDF does: compare the first, preemption-free stretch.
    assert_eq!(&dwcs.trace[..4], &edf.trace[..4]);
    let late =
        run(&uni(DWCS, 10), &[TaskSpec::periodic("late", 3, 5), TaskSpec::periodic("hog", 3, 5)]);
    assert_eq!(late.total_misses(), 2);
    let v: u64 = late.tasks.iter().map(|t| t.windows.sliding.violations).sum();
    assert_eq!(v, 2);
}
