//! Multiprocessor schedules: global EDF worked by hand, and the Dhall effect.

use schedlab_policy::PolicySpec;
use schedlab_sim::{SimConfig, TaskSpec};

use crate::run;

fn global_edf(horizon: u64) -> SimConfig {
    SimConfig::new(2, PolicySpec::Edf).with_horizon(horizon)
}

/// t1 = (3, 6), t2 = (2, 4), t3 = (4, 8) on 2 CPUs, U = 1.5.
/// t=0: t2 (d 4) and t1 (d 6) run, t3 (d 8) waits; t=2: t3 takes CPU 0;
/// t=4: t2 takes idle CPU 1; t=6: t1 returns to CPU 1, its last CPU;
/// t=8: t2 takes idle CPU 0, t3 (d 16) cannot preempt t1 (d 12);
/// t=9: t3 on CPU 1; t=12: t2 (d 16) on CPU 0, t1 (d 18) waits for t3 (d 16);
/// t=13: t1 on CPU 1.
#[test]
fn global_edf_two_cpus_by_hand() {
    let tasks = [
        TaskSpec::periodic("t1", 3, 6),
        TaskSpec::periodic("t2", 2, 4),
        TaskSpec::periodic("t3", 4, 8),
    ];
    let r = run(&global_edf(16), &tasks);
    assert_eq!(r.slices_of(0), vec![(1, 0, 3), (1, 6, 9), (1, 13, 16)]);
    assert_eq!(r.slices_of(1), vec![(0, 0, 2), (1, 4, 6), (0, 8, 10), (0, 12, 14)]);
    assert_eq!(r.slices_of(2), vec![(0, 2, 6), (1, 9, 13)]);
    assert_eq!(r.total_misses(), 0);
    let migrations: Vec<_> = r.tasks.iter().map(|t| t.migrations).collect();
    assert_eq!(migrations, vec![0, 2, 1]);
    assert!(r.tasks.iter().all(|t| t.preemptions == 0));
    assert_eq!(r.cpus[0].busy + r.cpus[1].busy, 3 * 3 + 4 * 2 + 2 * 4);
}

fn dhall() -> [TaskSpec; 3] {
    [
        TaskSpec::periodic("light1", 2, 10),
        TaskSpec::periodic("light2", 2, 10),
        TaskSpec::periodic("heavy", 10, 11),
    ]
}

/// Dhall's effect: two light tasks with earlier deadlines take both CPUs
/// first, and the heavy task (U = 0.91) can no longer finish in time,
/// though total utilisation is only 1.31 of 2.
#[test]
fn dhall_effect_global_edf_misses() {
    let r = run(&global_edf(12), &dhall());
    assert_eq!(r.slices_of(0), vec![(0, 0, 2), (1, 10, 12)]);
    assert_eq!(r.slices_of(1), vec![(1, 0, 2)]);
    assert_eq!(r.slices_of(2), vec![(0, 2, 12)]);
    assert_eq!(r.tasks[2].deadline_misses, 1);
    assert_eq!(r.tasks[2].response.max, Some(12));
    assert_eq!(r.tasks[0].migrations, 1);
    // At 12, light2 (last on CPU 1) and heavy (last on CPU 0) each go home.
    let again = run(&global_edf(14), &dhall());
    assert_eq!(again.slices_of(1), vec![(1, 0, 2), (1, 12, 14)]);
    assert_eq!(again.slices_of(2), vec![(0, 2, 14)]);
    assert_eq!(again.tasks[2].migrations, 0);
}

/// Partitioning the same set (lights on CPU 0, heavy alone on CPU 1) meets every deadline.
#[test]
fn dhall_set_is_fine_partitioned() {
    let config = global_edf(110).partitioned(vec![0, 0, 1]);
    let r = run(&config, &dhall());
    assert_eq!(r.total_misses(), 0);
    assert!(r.tasks.iter().all(|t| t.migrations == 0));
    assert_eq!(r.tasks[2].jobs, 10);
    let global = run(&global_edf(110), &dhall());
    assert!(global.tasks[2].deadline_misses > 0);
}

/// Global RM on two CPUs: the lowest-priority running task is the one preempted.
#[test]
fn global_preemption_picks_the_lowest_priority_victim() {
    let tasks = [
        TaskSpec::periodic("mid", 4, 10),
        TaskSpec::periodic("low", 4, 20),
        TaskSpec::periodic("high", 2, 5).at(1).jobs(1),
    ];
    let r = run(&SimConfig::new(2, PolicySpec::Rm).with_horizon(10), &tasks);
    assert_eq!(r.slices_of(0), vec![(0, 0, 4)]);
    assert_eq!(r.slices_of(1), vec![(1, 0, 1), (1, 3, 6)]);
    assert_eq!(r.slices_of(2), vec![(1, 1, 3)]);
    assert_eq!(r.tasks[1].preemptions, 1);
    assert!(r.tasks[2].finished);
}
