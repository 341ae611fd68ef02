//! I/O, mixed phases, overheads, the fair model and SCHED_DEADLINE servers.

use schedlab_policy::PolicySpec;
use schedlab_sim::{Phase, SimConfig, TaskSpec, WorkSpec};

use crate::{run, spans, uni};

/// Two I/O-bound tasks share one FIFO device: the second request waits for the first.
#[test]
fn io_bound_tasks_queue_on_one_device() {
    let tasks = [TaskSpec::io("a", 1, 3, 2), TaskSpec::io("b", 1, 3, 2)];
    let r = run(&SimConfig::new(1, PolicySpec::Fifo), &tasks);
    // a: compute 0-1, I/O 1-4, compute 4-5, I/O 7-10, compute 10-11.
    // b: compute 1-2, I/O 4-7, compute 7-8, I/O 10-13, compute 13-14.
    assert_eq!(spans(&r, 0), vec![(0, 1), (4, 5), (10, 11)]);
    assert_eq!(spans(&r, 1), vec![(1, 2), (7, 8), (13, 14)]);
    let done: Vec<_> = r.tasks.iter().map(|t| t.completion).collect();
    assert_eq!(done, vec![Some(11), Some(14)]);
    assert!(r.tasks.iter().all(|t| t.blocks == 2 && t.cpu_time == 3));
    assert!(r.tasks.iter().all(|t| t.preemptions == 0));
    assert_eq!(r.end, 14);
}

#[test]
fn mixed_phases_run_back_to_back_computes_without_a_switch() {
    let mixed = TaskSpec::new(
        "m",
        WorkSpec::Mixed {
            phases: vec![
                Phase::Compute(2),
                Phase::Compute(1),
                Phase::Io(4),
                Phase::Compute(1),
                Phase::Io(1),
            ],
        },
    );
    let r = run(&SimConfig::new(1, PolicySpec::Fifo), &[mixed]);
    assert_eq!(spans(&r, 0), vec![(0, 3), (7, 8)]);
    // It finishes when its last I/O completes.
    assert_eq!(r.tasks[0].completion, Some(9));
    assert_eq!(r.tasks[0].blocks, 2);
}

#[test]
fn switch_and_migration_costs_delay_progress() {
    let tasks = [TaskSpec::burst("a", 2), TaskSpec::burst("b", 2)];
    let r = run(&SimConfig::new(1, PolicySpec::Fifo).with_costs(1, 5), &tasks);
    assert_eq!(spans(&r, 0), vec![(1, 3)]);
    assert_eq!(spans(&r, 1), vec![(4, 6)]);
    assert_eq!(r.cpus[0].overhead, 2);
    assert_eq!(r.cpus[0].switches, 2);
    // First progress comes after the switch cost.
    assert_eq!((r.tasks[0].started, r.tasks[1].started), (Some(1), Some(4)));
    assert_eq!(r.tasks[1].last_cpu, Some(0));
    // A task moved across CPUs pays the migration cost too.
    let tasks = [
        TaskSpec::periodic("mover", 2, 10).priority(1).jobs(2),
        TaskSpec::burst("blocker", 12).priority(5).at(9),
    ];
    let config = SimConfig::new(2, PolicySpec::Fifo).with_horizon(30).with_costs(1, 2);
    let r = run(&config, &tasks);
    assert_eq!(r.slices_of(0), vec![(0, 1, 3), (1, 13, 15)]);
    assert_eq!(r.tasks[0].migrations, 1);
}

/// nice 0 against nice 5 (weights 1024 and 335): about 75% and 25% of the CPU.
#[test]
fn fair_shares_follow_nice_weights() {
    let tasks = [TaskSpec::burst("nice0", 1_000_000), TaskSpec::burst("nice5", 1_000_000).nice(5)];
    let r = run(&uni(PolicySpec::Fair { base_slice: 30 }, 100_000), &tasks);
    let (a, b) = (r.tasks[0].cpu_time as f64, r.tasks[1].cpu_time as f64);
    assert_eq!(a + b, 100_000.0);
    let expected = 1024.0 / (1024.0 + 335.0);
    assert!((a / (a + b) - expected).abs() < 0.005, "share {}", a / (a + b));
    // Equal weights split evenly, to within one slice.
    let even = [TaskSpec::burst("x", 1_000_000), TaskSpec::burst("y", 1_000_000)];
    let r = run(&uni(PolicySpec::Fair { base_slice: 30 }, 100_000), &even);
    assert!(r.tasks[0].cpu_time.abs_diff(r.tasks[1].cpu_time) <= 30);
}

/// Wake-up placement and preemption: a newcomer starts at V with half a slice.
/// Hog alone: v = 0, vd = 5; at 5 it renews its slice (vd = 15).
#[test]
fn fair_newcomer_preempts_only_with_an_earlier_virtual_deadline() {
    let config = uni(PolicySpec::Fair { base_slice: 10 }, 50);
    // Arriving at 7: v = 7, vd = 12 < 15, so it preempts the hog at once.
    let early = [TaskSpec::burst("hog", 100), TaskSpec::burst("new", 3).at(7)];
    let r = run(&config, &early);
    assert_eq!(spans(&r, 1), vec![(7, 10)]);
    assert_eq!(spans(&r, 0), vec![(0, 7), (10, 50)]);
    assert_eq!(r.tasks[0].preemptions, 1);
    // Arriving at 13: vd = 18 > 15, so it waits for the hog's slice to end.
    let late = [TaskSpec::burst("hog", 100), TaskSpec::burst("new", 3).at(13)];
    let r = run(&config, &late);
    assert_eq!(spans(&r, 1), vec![(15, 18)]);
    assert_eq!(spans(&r, 0), vec![(0, 15), (18, 50)]);
    assert_eq!(r.tasks[1].response.max, Some(5));
}

/// A hard reservation (2 every 5) caps an overrunning task; a second server keeps its deadlines.
#[test]
fn cbs_isolates_an_overrunning_task() {
    let tasks = [
        TaskSpec::burst("overrun", 100).reservation(2, 5, 5),
        TaskSpec::periodic("victim", 3, 5).reservation(3, 5, 5),
    ];
    let r = run(&uni(PolicySpec::Cbs { hard: true }, 50), &tasks);
    assert_eq!(spans(&r, 0)[..3], [(0, 2), (5, 7), (10, 12)]);
    assert_eq!(spans(&r, 1)[..3], [(2, 5), (7, 10), (12, 15)]);
    assert_eq!(r.tasks[0].cpu_time, 20);
    assert_eq!(r.tasks[1].deadline_misses, 0);
    // A soft reservation postpones the deadline at once instead of throttling.
    let soft = run(
        &uni(PolicySpec::Cbs { hard: false }, 50),
        &[TaskSpec::burst("alone", 10).reservation(2, 5, 5)],
    );
    assert_eq!(spans(&soft, 0), vec![(0, 10)]);
}

/// A job that ends on the last of its budget leaves its replenishment to its next wake-up,
/// not to a timer: the schedule is the one a timer gives, and a run without a horizon still
/// ends at the replenishment (as it did when the timer fired then).
#[test]
fn cbs_replenishment_left_to_the_wake_up_keeps_the_schedule_and_the_end() {
    let tasks = [
        TaskSpec::periodic("exact", 2, 5).reservation(2, 5, 5).jobs(3),
        TaskSpec::periodic("other", 1, 4).reservation(1, 4, 4).jobs(3),
    ];
    let r = run(&SimConfig::new(1, PolicySpec::Cbs { hard: true }), &tasks);
    assert_eq!(spans(&r, 0), vec![(1, 3), (5, 7), (10, 12)]);
    assert_eq!(spans(&r, 1), vec![(0, 1), (4, 5), (8, 9)]);
    assert_eq!(r.tasks.iter().map(|t| t.deadline_misses).sum::<u64>(), 0);
    // "exact" is throttled at 12 until its next period at 15, which no event reaches.
    assert_eq!(r.end, 15);
}

/// Tasks without a reservation only get what the servers leave.
#[test]
fn cbs_background_tasks_fill_the_gaps() {
    let tasks = [TaskSpec::burst("bg", 6), TaskSpec::periodic("server", 2, 4).reservation(2, 4, 4)];
    let r = run(&uni(PolicySpec::Cbs { hard: true }, 20), &tasks);
    assert_eq!(spans(&r, 1)[..3], [(0, 2), (4, 6), (8, 10)]);
    assert_eq!(spans(&r, 0), vec![(2, 4), (6, 8), (10, 12)]);
    assert_eq!(r.tasks[0].completion, Some(12));
    assert_eq!(r.tasks[0].preemptions, 2);
}

/// Each slice says why its task left the CPU, as a sched_switch's prev_state would.
#[test]
fn each_slice_says_why_its_task_left_the_cpu() {
    use schedlab_policy::Stop;
    let stops = |r: &schedlab_sim::SimResult| {
        r.trace.iter().map(|s| (s.task, s.start, s.end, s.stop)).collect::<Vec<_>>()
    };
    let tasks = [TaskSpec::io("a", 1, 3, 2), TaskSpec::io("b", 1, 3, 2)];
    let r = run(&SimConfig::new(1, PolicySpec::Fifo), &tasks);
    assert_eq!(
        stops(&r)[..3],
        [
            (0, 0, 1, Some(Stop::Blocked)),
            (1, 1, 2, Some(Stop::Blocked)),
            (0, 4, 5, Some(Stop::Blocked))
        ],
    );
    assert_eq!(stops(&r).last(), Some(&(1, 13, 14, Some(Stop::Exited))));
    let r = run(
        &SimConfig::new(1, PolicySpec::Rr { quantum: 2 }),
        &[TaskSpec::burst("a", 4), TaskSpec::burst("b", 4)],
    );
    assert_eq!(
        stops(&r),
        vec![
            (0, 0, 2, Some(Stop::Expired)),
            (1, 2, 4, Some(Stop::Expired)),
            (0, 4, 6, Some(Stop::Exited)),
            (1, 6, 8, Some(Stop::Exited))
        ]
    );
}
