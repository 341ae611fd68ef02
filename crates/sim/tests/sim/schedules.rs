//! Uniprocessor textbook schedules: RM, EDF, DM, FIFO, RR.

use schedlab_policy::PolicySpec;
use schedlab_sim::{MissAction, SimResult, TaskSpec};

use crate::{run, spans, uni};

/// A Liu & Layland style set, (C, T) = (1, 4), (2, 6), (3, 12): utilisation 1, hyperperiod 12.
fn rm_textbook_set() -> [TaskSpec; 3] {
    [
        TaskSpec::periodic("t1", 1, 4),
        TaskSpec::periodic("t2", 2, 6),
        TaskSpec::periodic("t3", 3, 12),
    ]
}

/// Liu & Layland style set: RM priorities, response times from response-time analysis.
#[test]
fn rm_textbook_set_matches_response_time_analysis() {
    let r = run(&uni(PolicySpec::Rm, 12), &rm_textbook_set());
    assert_eq!(spans(&r, 0), vec![(0, 1), (4, 5), (8, 9)]);
    assert_eq!(spans(&r, 1), vec![(1, 3), (6, 8)]);
    assert_eq!(spans(&r, 2), vec![(3, 4), (5, 6), (9, 10)]);
    // R1 = 1, R2 = 3, R3 = 3 + 3*1 + 2*2 = 10.
    assert_eq!(r.tasks[0].response.max, Some(1));
    assert_eq!(r.tasks[1].response.max, Some(3));
    assert_eq!(r.tasks[2].response.max, Some(10));
    assert_eq!(r.tasks[1].response.all, vec![3, 2]);
    assert_eq!(r.tasks[1].response.mean, Some(2.5));
    assert_eq!(r.total_misses(), 0);
    assert_eq!(r.tasks[2].preemptions, 2);
    assert_eq!(r.tasks[0].blocks, 3);
    assert_eq!(r.cpus[0].busy, 10);
}

fn buttazzo() -> [TaskSpec; 2] {
    [TaskSpec::periodic("t1", 2, 5), TaskSpec::periodic("t2", 4, 7)]
}

/// Buttazzo: T1 = (2, 5), T2 = (4, 7), U = 0.97. RM misses T2's first deadline.
#[test]
fn rm_misses_buttazzo_set() {
    let r = run(&uni(PolicySpec::Rm, 35), &buttazzo());
    assert_eq!(
        spans(&r, 0),
        vec![(0, 2), (5, 7), (10, 12), (15, 17), (20, 22), (25, 27), (30, 32)]
    );
    assert_eq!(
        spans(&r, 1),
        vec![(2, 5), (7, 10), (12, 15), (17, 20), (22, 25), (27, 30), (32, 34)]
    );
    assert_eq!(r.tasks[0].deadline_misses, 0);
    assert_eq!(r.tasks[1].deadline_misses, 1);
    assert_eq!(r.tasks[1].jobs, 5);
    // Job 1 finished at 8 against deadline 7.
    assert_eq!(r.tasks[1].response.max, Some(8));
    assert_eq!(r.tasks[1].preemptions, 5);
}

/// The same set under EDF meets every deadline over the hyperperiod.
#[test]
fn edf_schedules_buttazzo_set() {
    let r = run(&uni(PolicySpec::Edf, 35), &buttazzo());
    assert_eq!(
        spans(&r, 0),
        vec![(0, 2), (6, 8), (12, 14), (15, 17), (20, 22), (26, 28), (32, 34)]
    );
    assert_eq!(spans(&r, 1), vec![(2, 6), (8, 12), (14, 15), (17, 20), (22, 26), (28, 32)]);
    assert_eq!(r.total_misses(), 0);
    assert_eq!(r.tasks[0].jobs, 7);
    assert_eq!(r.tasks[1].jobs, 5);
    // Only at 15 does a release (T1, deadline 20) beat the running job (T2, deadline 21).
    assert_eq!(r.tasks[1].preemptions, 1);
    assert_eq!(r.tasks[0].preemptions, 0);
}

/// Deadline-monotonic honours a short relative deadline that rate-monotonic ignores.
#[test]
fn dm_beats_rm_with_constrained_deadline() {
    let tasks =
        [TaskSpec::periodic("long", 3, 10), TaskSpec::periodic("urgent", 1, 20).deadline(3)];
    let rm = run(&uni(PolicySpec::Rm, 20), &tasks);
    assert_eq!(spans(&rm, 1), vec![(3, 4)]);
    assert_eq!(rm.tasks[1].deadline_misses, 1);
    let dm = run(&uni(PolicySpec::Dm, 20), &tasks);
    assert_eq!(spans(&dm, 1), vec![(0, 1)]);
    assert_eq!(spans(&dm, 0), vec![(1, 4), (10, 13)]);
    assert_eq!(dm.total_misses(), 0);
}

#[test]
fn fifo_preempts_only_for_higher_priority() {
    let tasks = [
        TaskSpec::burst("low", 5).priority(1),
        TaskSpec::burst("high", 2).priority(9).at(1),
        TaskSpec::burst("peer", 1).priority(1).at(1),
    ];
    let r = run(&uni(PolicySpec::Fifo, 100), &tasks);
    assert_eq!(spans(&r, 0), vec![(0, 1), (3, 7)]);
    assert_eq!(spans(&r, 1), vec![(1, 3)]);
    // The preempted task resumes before its equal-priority peer (head of the queue).
    assert_eq!(spans(&r, 2), vec![(7, 8)]);
    assert_eq!(r.tasks[0].preemptions, 1);
    assert_eq!(r.tasks[0].completion, Some(7));
}

/// Three tasks, quantum 2, bursts 5/3/1: A B C A B A.
#[test]
fn round_robin_quantum_two() {
    let tasks = [TaskSpec::burst("a", 5), TaskSpec::burst("b", 3), TaskSpec::burst("c", 1)];
    let r = run(&uni(PolicySpec::Rr { quantum: 2 }, 100), &tasks);
    assert_eq!(spans(&r, 0), vec![(0, 2), (5, 7), (8, 9)]);
    assert_eq!(spans(&r, 1), vec![(2, 4), (7, 8)]);
    assert_eq!(spans(&r, 2), vec![(4, 5)]);
    let done: Vec<_> = r.tasks.iter().map(|t| t.completion).collect();
    assert_eq!(done, vec![Some(9), Some(8), Some(5)]);
    let wall: Vec<_> = r.tasks.iter().map(|t| t.wall).collect();
    assert_eq!(wall, vec![Some(9), Some(8), Some(5)]);
    let pre: Vec<_> = r.tasks.iter().map(|t| t.preemptions).collect();
    assert_eq!(pre, vec![2, 1, 0]);
    assert!(r.tasks.iter().all(|t| t.finished));
    // Without a horizon the simulation ends with the last completion.
    let open = run(&schedlab_sim::SimConfig::new(1, PolicySpec::Rr { quantum: 2 }), &tasks);
    assert_eq!(open.end, 9);
    assert_eq!(open.trace, r.trace);
}

#[test]
fn round_robin_alone_is_not_preempted() {
    let r = run(&uni(PolicySpec::Rr { quantum: 2 }, 100), &[TaskSpec::burst("solo", 7)]);
    assert_eq!(spans(&r, 0), vec![(0, 7)]);
    assert_eq!(r.tasks[0].preemptions, 0);
    assert_eq!(r.cpus[0].switches, 1);
}

/// What a late job does: a (C = 3, priority 2) leaves b (C = 2, priority 1) one unit of
/// every period of 4, so b's jobs run late. a runs 0-3, 4-7, 8-11.
#[test]
fn late_jobs_continue_skip_or_drop() {
    let set = |miss: MissAction| {
        [
            TaskSpec::periodic("a", 3, 4).priority(2).jobs(3).on_miss(miss),
            TaskSpec::periodic("b", 2, 4).priority(1).jobs(3).window(1, 2).on_miss(miss),
        ]
    };
    // Continue: b's jobs finish at 8, 13 and 15, all late.
    let r = run(&uni(PolicySpec::Fifo, 40), &set(MissAction::Continue));
    assert_eq!(spans(&r, 1), vec![(3, 4), (7, 8), (11, 15)]);
    let b = &r.tasks[1];
    assert_eq!(
        (b.jobs, b.deadline_misses, b.dropped, b.completion, b.ended),
        (3, 3, 0, Some(15), Some(15))
    );
    // Per job: (release, start, finish, met); job 2 starts when job 1 hands over at 13.
    let log = |r: &SimResult, i: usize| {
        r.tasks[i].job_log.iter().map(|j| (j.release, j.start, j.finish, j.met)).collect::<Vec<_>>()
    };
    assert_eq!(
        log(&r, 1),
        vec![
            (0, Some(3), Some(8), false),
            (4, Some(11), Some(13), false),
            (8, Some(13), Some(15), false)
        ]
    );
    assert_eq!(
        log(&r, 0),
        vec![
            (0, Some(0), Some(3), true),
            (4, Some(4), Some(7), true),
            (8, Some(8), Some(11), true)
        ]
    );
    // Skip: job 0 finishes late at 8, when job 1's deadline (8) has come: job 1 is skipped
    // and job 2 (released at 8, due 12) starts; it ends at 13, late.
    let r = run(&uni(PolicySpec::Fifo, 40), &set(MissAction::Skip));
    assert_eq!(spans(&r, 1), vec![(3, 4), (7, 8), (11, 13)]);
    let b = &r.tasks[1];
    assert_eq!(
        (b.jobs, b.deadline_misses, b.dropped, b.completion, b.finished),
        (2, 3, 1, Some(13), true)
    );
    assert_eq!(b.ended, Some(13));
    assert_eq!(
        log(&r, 1),
        vec![(0, Some(3), Some(8), false), (4, None, None, false), (8, Some(11), Some(13), false)]
    );
    assert_eq!(b.response.max, Some(8));
    // Three misses in a row against 1/2: trailing windows MM and MM are violated; fixed
    // window [MM] is, the partial [M] is not.
    assert_eq!((b.windows.deadlines, b.windows.periods_in_violation), (3, 2));
    assert_eq!((b.windows.fixed.violations, b.windows.sliding.violations), (1, 2));
    assert_eq!(r.tasks[0].deadline_misses, 0);
    // Drop: every job of b is abandoned at its deadline after one unit.
    let r = run(&uni(PolicySpec::Fifo, 40), &set(MissAction::Drop));
    assert_eq!(spans(&r, 1), vec![(3, 4), (7, 8), (11, 12)]);
    let b = &r.tasks[1];
    assert_eq!((b.jobs, b.deadline_misses, b.dropped, b.finished), (0, 3, 3, true));
    // It completed nothing, and ended when its last job was dropped.
    assert_eq!((b.completion, b.ended), (None, Some(12)));
    assert_eq!(
        log(&r, 1),
        vec![(0, Some(3), None, false), (4, Some(7), None, false), (8, Some(11), None, false)]
    );
    // Without recording, no log.
    let quiet = schedlab_sim::simulate(
        &uni(PolicySpec::Fifo, 40).recording(false, false),
        &set(MissAction::Drop),
    )
    .unwrap();
    assert!(quiet.tasks.iter().all(|t| t.job_log.is_empty()));
}

/// The scheduler's own figures of the RM set: time ready but not running and dispatches,
/// read off the slices above (t3: ready 0-3, 4-5 and 6-9; t1's fourth job is released and
/// dispatched at the horizon, 12, without running).
#[test]
fn rm_textbook_set_counts_runnable_time_and_dispatches() {
    let r = run(&uni(PolicySpec::Rm, 12), &rm_textbook_set());
    let got: Vec<(u64, u64)> = r.tasks.iter().map(|t| (t.runnable, t.dispatches)).collect();
    assert_eq!(got, vec![(0, 4), (1, 2), (7, 3)]);
    let t3 = &r.tasks[2];
    assert_eq!(t3.runnable + t3.cpu_time, t3.response.max.unwrap(), "its response: ran or waited");
    assert_eq!(t3.dispatches, 1 + t3.preemptions, "one dispatch, then one after each preemption");
}
