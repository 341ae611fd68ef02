use super::*;
use crate::decode::{Switch, WakeTarget};

const R_PLUS: i64 = 0x100;
const S: i64 = 0x1;
const Z: i64 = 0x20;

fn comm(name: &str) -> Comm {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

fn sw(ts: u64, cpu: u32, prev: i32, state: i64, next: i32) -> Event {
    let next_comm = comm(match next {
        0 => "swapper/0",
        n if n >= 9000 => "kworker/0:1",
        _ => "task",
    });
    Switch::new((prev, comm("task")), state, (next, next_comm), 120).at(ts, cpu)
}

/// Events whose recording task does not matter to the test carry none (-1).
fn waking(ts: u64, pid: i32) -> Event {
    Event { ts, cpu: 0, current: -1, kind: EventKind::Waking(WakeTarget { pid, target_cpu: 0 }) }
}

fn ev(ts: u64, kind: EventKind) -> Event {
    Event { ts, cpu: 0, current: -1, kind }
}

/// An event `current` recorded on `cpu`.
fn by(current: i32, ts: u64, cpu: u32, kind: EventKind) -> Event {
    Event { ts, cpu, current, kind }
}

/// Pids from 9000 are kernel threads, others other processes.
fn by_pid(pid: i32, _: &Comm) -> Who {
    if pid >= 9000 {
        Who::Kernel
    } else {
        Who::Other
    }
}

const ALL: TimeSpan = TimeSpan { start_ns: 0, end_ns: 1000 };

#[test]
fn a_workers_time_splits_into_running_runnable_and_blocked() {
    let events = [
        sw(0, 0, 0, 0, 10),
        sw(100, 0, 10, R_PLUS, 20),
        sw(150, 0, 20, S, 10),
        sw(300, 0, 10, S, 0),
        waking(400, 10),
        ev(405, EventKind::Wakeup(WakeTarget { pid: 10, target_cpu: 1 })),
        sw(420, 1, 0, 0, 10),
        ev(450, EventKind::Exit { pid: 10 }),
        sw(500, 1, 10, Z, 0),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!((w.run_s * 1e9, w.runnable_s * 1e9, w.blocked_s * 1e9), (330.0, 65.0, 105.0));
    assert_eq!((w.involuntary, w.voluntary), (1, 1), "the last switch of a dead task is neither");
    assert_eq!(w.preempted_by, PreemptedBy { other: 1, ..Default::default() });
    assert_eq!(w.cpus, [0, 1]);
    assert_eq!(
        (w.wakeups, w.wakeup_p50_us, w.wakeup_max_us),
        (1, Some(0.015), Some(0.015)),
        "queued by its sched_wakeup at 405 (not its waking at 400), running at 420"
    );
    assert_eq!(
        c.cpus,
        [
            CpuTrace { cpu: 0, busy_s: 300e-9, idle_s: 700e-9 },
            CpuTrace { cpu: 1, busy_s: 80e-9, idle_s: 500e-9 }
        ]
    );
    assert_eq!((c.events, c.span_s), (9, 1e-6));
}

#[test]
fn each_preemptor_is_classified_once_by_kind() {
    let (a, b, engine, kworker, other) = (10, 11, 500, 9001, 77);
    let events = [
        sw(0, 0, 0, 0, a),
        sw(10, 0, a, R_PLUS, b),
        sw(20, 0, b, R_PLUS, a),
        sw(30, 0, a, R_PLUS, engine),
        sw(40, 0, engine, S, a),
        sw(50, 0, a, R_PLUS, kworker),
        sw(60, 0, kworker, 0x80, b),
        sw(70, 0, b, R_PLUS, kworker),
        sw(80, 0, kworker, 0x80, a),
        sw(90, 0, a, 0, other),
        sw(100, 0, other, S, a),
        sw(110, 0, a, R_PLUS, 0),
        sw(120, 0, 0, 0, a),
    ];
    let mut asked = Vec::new();
    let c =
        figures(&events, &Roles { workers: &[a, b], engine: &[engine] }, ALL, 0, |pid, comm| {
            asked.push((pid, crate::decode::comm_str(comm).into_owned()));
            by_pid(pid, comm)
        });
    assert_eq!(
        asked,
        [(other, "task".to_string()), (kworker, "kworker/0:1".to_string())],
        "workers, the engine and idle need no asking; each other task once"
    );
    let pa = c.workers[0].preempted_by;
    assert_eq!(
        pa,
        PreemptedBy { worker: 1, engine: 1, kernel: 2, other: 1 },
        "a yield (R) counts like R+, the idle task as the kernel"
    );
    assert_eq!(c.workers[0].involuntary, 5);
    assert_eq!(
        c.workers[1].preempted_by,
        PreemptedBy { worker: 1, kernel: 1, ..Default::default() }
    );
}

#[test]
fn threads_and_children_count_with_their_worker_and_the_engines_with_the_engine() {
    let (w, thread, engine, helper) = (10, 12, 500, 501);
    let events = [
        ev(0, EventKind::Fork { parent: engine, child: w }),
        ev(1, EventKind::Fork { parent: engine, child: helper }),
        ev(2, EventKind::Fork { parent: w, child: thread }),
        ev(3, EventKind::WakeupNew(WakeTarget { pid: thread, target_cpu: 1 })),
        sw(5, 1, 0, 0, thread),
        sw(105, 1, thread, R_PLUS, helper),
        sw(110, 1, helper, S, thread),
        sw(200, 1, thread, Z, 0),
    ];
    let c = figures(&events, &Roles { workers: &[w], engine: &[engine] }, ALL, 0, |_, _| {
        panic!("nothing to ask")
    });
    let wt = &c.workers[0];
    assert_eq!(wt.tasks, 2);
    assert_eq!(wt.run_s * 1e9, 190.0);
    assert_eq!(wt.runnable_s * 1e9, 2.0 + 5.0, "new at 3, running at 5; preempted 105..110");
    assert_eq!(
        wt.preempted_by,
        PreemptedBy { engine: 1, ..Default::default() },
        "the engine's child is the engine's"
    );
    assert_eq!(
        (wt.wakeups, wt.wakeup_p50_us),
        (1, Some(0.002)),
        "a new task's first run is timed from wakeup_new"
    );
}

#[test]
fn time_and_counts_are_kept_to_the_window() {
    let events = [
        sw(0, 0, 0, 0, 10),
        sw(50, 0, 10, R_PLUS, 20),
        sw(60, 0, 20, S, 10),
        ev(70, EventKind::Migrate { pid: 10, orig_cpu: 0, dest_cpu: 1 }),
        sw(300, 0, 10, R_PLUS, 20),
        ev(320, EventKind::Migrate { pid: 10, orig_cpu: 1, dest_cpu: 0 }),
        ev(330, EventKind::Migrate { pid: 20, orig_cpu: 1, dest_cpu: 0 }),
        sw(350, 0, 20, S, 10),
    ];
    let win = TimeSpan { start_ns: 100, end_ns: 400 };
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, win, 3, by_pid);
    let w = &c.workers[0];
    assert_eq!(w.run_s * 1e9, 200.0 + 50.0, "100..300 and 350..400");
    assert_eq!(w.runnable_s * 1e9, 50.0);
    assert_eq!((w.involuntary, w.migrations), (1, 1), "only what happened inside");
    assert_eq!(c.cpus[0].busy_s * 1e9, 300.0);
    assert_eq!(c.lost_events, 3);
    assert_eq!(c.span_s, 300e-9);
}

#[test]
fn a_state_before_the_first_event_is_inferred_from_it() {
    // 10 was running when tracing began, 11 runnable, 12 asleep.
    let events = [sw(100, 0, 10, R_PLUS, 11), wakeup(150, 12), sw(200, 0, 11, S, 12)];
    let c = figures(&events, &Roles { workers: &[10, 11, 12], engine: &[] }, ALL, 0, by_pid);
    assert_eq!(c.workers[0].run_s * 1e9, 100.0);
    assert_eq!(c.workers[0].runnable_s * 1e9, 900.0, "runnable to the end");
    assert_eq!(c.workers[1].runnable_s * 1e9, 100.0);
    assert_eq!(c.workers[2].blocked_s * 1e9, 150.0);
    assert_eq!(c.workers[2].run_s * 1e9, 800.0);
    assert_eq!(c.workers[2].wakeups, 1);
}

#[test]
fn wake_up_latencies_make_a_mergeable_histogram() {
    let mut events = vec![sw(0, 0, 10, S, 0)];
    let mut ts = 0;
    for i in 1..=100u64 {
        ts += 10_000;
        events.push(wakeup(ts, 10));
        ts += i * 1_000; // 1 .. 100 µs
        events.push(sw(ts, 0, 0, 0, 10));
        ts += 1_000;
        events.push(sw(ts, 0, 10, S, 0));
    }
    let c = figures(
        &events,
        &Roles { workers: &[10], engine: &[] },
        TimeSpan { start_ns: 0, end_ns: ts },
        0,
        by_pid,
    );
    let w = &c.workers[0];
    assert_eq!(w.wakeups, 100);
    let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() <= b * 0.01);
    assert!(
        near(w.wakeup_p50_us, 50.0) && near(w.wakeup_p99_us, 99.0) && near(w.wakeup_max_us, 100.0),
        "{w:?}"
    );
    let h = hist::decode(w.wakeup_hist.as_deref().unwrap()).unwrap();
    assert_eq!(h.len(), 100);
    assert_eq!(w.voluntary, 101);
}

#[test]
fn a_worker_without_events_has_zero_figures() {
    let c = figures(&[sw(10, 0, 1, S, 2)], &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!(
        (w.pid, w.run_s, w.involuntary, w.wakeup_p50_us.is_none(), w.wakeup_hist.is_none()),
        (10, 0.0, 0, true, true)
    );
}

#[test]
fn a_switch_the_trace_did_not_show_and_nothing_bounds_leaves_its_gap_untraced() {
    // 10 is preempted by 67, whose switch back to 10 is never recorded; 10 leaves at 500.
    let events = [
        sw(0, 0, 0, 0, 10),
        sw(100, 0, 10, R_PLUS, 67),
        sw(500, 0, 10, R_PLUS, 20),
        sw(600, 0, 20, S, 10),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!(
        (w.run_s * 1e9, w.runnable_s * 1e9, w.untraced_s * 1e9),
        (100.0 + 400.0, 100.0, 400.0),
        "100..500: 67's, then 10's"
    );
    assert_eq!(w.involuntary, 2, "both switch-outs were real");
    assert_eq!(c.untraced_switches, 1);
    assert_eq!(c.cpus[0].busy_s * 1e9, 1000.0, "67 and 10 are both tasks: busy either way");
}

#[test]
fn a_hidden_tasks_run_before_an_untraced_switch_in_is_not_counted_as_the_workers() {
    // pa3 FIFO/RR 500: 10 is preempted by 74, a task whose switch-outs the kernel never
    // traces; 74 runs (an interrupt recorded an event in its time, at 150), gives the CPU
    // back to 10 untraced, and 10 is seen running (an interrupt of it, at 300) before it
    // leaves at 500. Counting 10 from 100 made trace CPU time 10 to 40 ms above wait4.
    let kworker = EventKind::Waking(WakeTarget { pid: 9001, target_cpu: 0 });
    let events = [
        sw(0, 0, 0, 0, 10),
        sw(100, 0, 10, R_PLUS, 74),
        by(74, 150, 0, kworker.clone()),
        by(10, 300, 0, kworker),
        sw(500, 0, 10, R_PLUS, 20),
        sw(600, 0, 20, S, 10),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!(
        w.run_s * 1e9,
        100.0 + 200.0 + 400.0,
        "0..100, from its first sign at 300 to 500, 600..1000"
    );
    assert_eq!(w.untraced_s * 1e9, 150.0, "150..300: 74's or 10's, the trace cannot say");
    assert_eq!(w.runnable_s * 1e9, 50.0 + 100.0, "100..150 (74 ran) and 500..600");
    assert_eq!(w.preempted_by, PreemptedBy { other: 2, ..Default::default() });
    assert_eq!(c.untraced_switches, 1);
}

#[test]
fn idle_time_before_an_untraced_switch_in_is_neither_the_workers_run_nor_busy() {
    // CPU 1 idles; an interrupt wakes 10 at 50 and the idle task's softirq moves it there
    // at 80; the switch away from idle is not traced; 10 wakes someone at 120 and sleeps at
    // 400.
    let events = [
        sw(0, 1, 10, S, 0),
        by(0, 50, 1, EventKind::Wakeup(WakeTarget { pid: 10, target_cpu: 1 })),
        by(0, 80, 1, EventKind::Migrate { pid: 10, orig_cpu: 0, dest_cpu: 1 }),
        by(10, 120, 1, EventKind::Waking(WakeTarget { pid: 77, target_cpu: 1 })),
        sw(400, 1, 10, S, 0),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    let ns = |s: f64| (s * 1e9).round();
    assert_eq!(
        (ns(w.blocked_s), ns(w.runnable_s), ns(w.untraced_s), ns(w.run_s)),
        (50.0 + 600.0, 30.0, 40.0, 280.0)
    );
    assert_eq!(
        c.cpus[0],
        CpuTrace { cpu: 1, busy_s: 280e-9, idle_s: 680e-9 },
        "80..120 is idle or 10's: neither"
    );
}

#[test]
fn a_task_cannot_have_run_on_a_cpu_before_it_was_moved_there() {
    // 10, preempted on CPU 1 at 0, is moved to CPU 0 at 250 while 74 (untraced) has it.
    let events = [
        sw(0, 1, 10, R_PLUS, 20),
        sw(100, 0, 30, S, 74),
        by(20, 250, 1, EventKind::Migrate { pid: 10, orig_cpu: 1, dest_cpu: 0 }),
        sw(400, 0, 10, S, 0),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!((w.runnable_s * 1e9, w.untraced_s * 1e9, w.run_s * 1e9), (250.0, 150.0, 0.0));
}

#[test]
fn the_state_bar_shows_when_a_worker_ran_waited_and_slept() {
    // Over 0..6400 ns (64 slices of 100): worker 10 runs 0..3200, waits for the CPU
    // 3200..4800, runs 4800..5600 and sleeps from 5600 to the end.
    let window = TimeSpan { start_ns: 0, end_ns: 6400 };
    let events = [
        sw(0, 0, 0, 0, 10),
        sw(3200, 0, 10, R_PLUS, 20),
        sw(4800, 0, 20, S, 10),
        sw(5600, 0, 10, S, 0),
    ];
    let t = figures(&events, &Roles { workers: &[10], engine: &[] }, window, 0, by_pid);
    assert!((t.slice_s - 100e-9).abs() < 1e-15, "{}", t.slice_s);
    let bar = t.workers[0].states.as_ref().expect("a state bar").decode().unwrap();
    assert_eq!(bar.len(), STATE_SLICES);
    assert!(bar[..32].iter().all(|s| *s == [1.0, 0.0, 0.0]), "running first: {:?}", &bar[..32]);
    assert!(bar[32..48].iter().all(|s| *s == [0.0, 1.0, 0.0]), "then runnable: {:?}", &bar[32..48]);
    assert!(bar[48..56].iter().all(|s| *s == [1.0, 0.0, 0.0]));
    assert!(bar[56..].iter().all(|s| *s == [0.0, 0.0, 1.0]), "then asleep to the end");
    // The bar and the totals are the same time.
    let w = &t.workers[0];
    let summed: f64 = bar.iter().map(|s| s[0]).sum::<f64>() * t.slice_s;
    assert!((summed - w.run_s).abs() < 1e-12, "{summed} against {}", w.run_s);
}

#[test]
fn a_stretch_inside_one_slice_fills_its_share_of_it() {
    let window = TimeSpan { start_ns: 0, end_ns: 640 };
    // 10 ns slices; worker 10 runs 3..8 of the first one only.
    let events = [sw(3, 0, 0, 0, 10), sw(8, 0, 10, S, 0)];
    let t = figures(&events, &Roles { workers: &[10], engine: &[] }, window, 0, by_pid);
    let bar = t.workers[0].states.as_ref().unwrap().decode().unwrap();
    assert!((bar[0][0] - 8.0 / 15.0).abs() < 1e-12, "5 of 10 ns rounds to 8/15: {:?}", bar[0]);
    assert_eq!(bar[1], [0.0, 0.0, 1.0]);
}

/// The fold's handlers, each called alone (as a source other than decoded events would).
mod handlers {
    use super::*;

    fn fold(workers: &[i32], engine: &[i32]) -> Fold {
        Fold::new(&Roles { workers, engine }, ALL)
    }

    fn switch(prev: i32, state: i64, next: i32) -> Switch {
        match sw(0, 0, prev, state, next).kind {
            EventKind::Switch(s) => s,
            _ => unreachable!(),
        }
    }

    fn nobody(_: i32, _: &Comm) -> Who {
        panic!("nothing to ask")
    }

    #[test]
    fn a_wakeup_ends_a_blocked_span_and_times_the_next_switch_in() {
        let mut f = fold(&[10], &[]);
        f.switch(100, 0, &switch(10, S, 0));
        f.woken(300, 10);
        f.woken(310, 10);
        f.switch(350, 0, &switch(0, 0, 10));
        let w = &f.finish(0, nobody).workers[0];
        assert_eq!(
            (w.blocked_s * 1e9, w.runnable_s * 1e9),
            (200.0, 50.0),
            "the second wake-up is the same one"
        );
        assert_eq!((w.wakeups, w.wakeup_p50_us), (1, Some(0.05)));
    }

    #[test]
    fn a_new_task_is_runnable_from_its_first_wakeup() {
        let mut f = fold(&[10], &[]);
        f.wakeup_new(200, 10);
        f.switch(260, 0, &switch(0, 0, 10));
        let w = &f.finish(0, nobody).workers[0];
        assert_eq!(
            ((w.runnable_s * 1e9).round(), (w.run_s * 1e9).round(), w.wakeups),
            (60.0, 740.0, 1)
        );
    }

    #[test]
    fn migrations_in_the_window_count_and_others_do_not() {
        let mut f = fold(&[10], &[]);
        f.migrate(5, 10, 3);
        f.migrate(2000, 10, 1);
        f.migrate(6, 99, 1);
        assert_eq!(f.finish(0, nobody).workers[0].migrations, 1);
    }

    #[test]
    fn a_fork_adds_the_child_to_its_parents_side() {
        let mut f = fold(&[10], &[500]);
        f.fork(10, 11);
        f.fork(11, 12);
        f.fork(500, 501);
        f.fork(77, 78);
        f.switch(10, 0, &switch(0, 0, 12));
        f.switch(20, 0, &switch(12, R_PLUS, 501));
        let c = f.finish(0, nobody);
        assert_eq!(c.workers[0].tasks, 3, "the worker, its child and grandchild");
        assert_eq!(c.workers[0].preempted_by, PreemptedBy { engine: 1, ..Default::default() });
    }

    #[test]
    fn seen_events_bound_an_untraced_switch_in() {
        let mut f = fold(&[10], &[]);
        f.switch(100, 0, &switch(0, 0, 20));
        f.seen(150, 0, 20);
        f.seen(200, 0, 10);
        f.switch(300, 0, &switch(10, S, 0));
        let c = f.finish(0, nobody);
        assert_eq!(c.untraced_switches, 1);
        let w = &c.workers[0];
        assert_eq!(
            (w.run_s * 1e9, w.untraced_s * 1e9),
            (100.0, 50.0),
            "ran from its first sign at 200; 150..200 untraced"
        );
    }

    #[test]
    fn the_fold_counts_the_events_it_was_given() {
        let mut f = fold(&[10], &[]);
        f.event(&waking(10, 10));
        f.event(&ev(20, EventKind::Exit { pid: 10 }));
        assert_eq!(f.finish(3, nobody).events, 2);
    }
}

fn wakeup(ts: u64, pid: i32) -> Event {
    ev(ts, EventKind::Wakeup(WakeTarget { pid, target_cpu: 0 }))
}

/// Issue 28, item 3: a sched_waking that comes while the task is still on its CPU is its
/// wake-up once the task has gone to sleep: the kernel queues it after the switch-out, at
/// its sched_wakeup, which starts its runnable wait and its latency (it was lost: its wait
/// counted as blocked, no latency).
#[test]
fn a_wakeup_racing_the_switch_out_is_not_lost() {
    let events = [
        sw(0, 0, 0, 0, 10),
        waking(100, 10),
        sw(105, 0, 10, S, 0),
        wakeup(110, 10),
        sw(300, 1, 0, 0, 10),
        sw(400, 1, 10, Z, 0),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!(w.wakeups, 1);
    assert_eq!(w.wakeup_max_us, Some(0.19), "from the wakeup at 110 to the switch-in at 300");
    assert_eq!((w.run_s * 1e9, w.runnable_s * 1e9, w.blocked_s * 1e9), (205.0, 190.0, 5.0));
}

/// A waking that finds the task running and queued is no wake-up: its sched_wakeup comes
/// while it still runs, and its next sleep is timed from its own sched_wakeup.
#[test]
fn a_waking_of_a_running_task_wakes_nothing() {
    let events = [
        sw(0, 0, 0, 0, 10),
        waking(100, 10),
        wakeup(101, 10),
        sw(200, 0, 10, S, 0),
        waking(500, 10),
        wakeup(501, 10),
        sw(520, 0, 0, 0, 10),
        sw(600, 0, 10, Z, 0),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!(w.wakeups, 1);
    assert_eq!(w.wakeup_max_us, Some(0.019));
    assert_eq!((w.run_s * 1e9, w.runnable_s * 1e9, w.blocked_s * 1e9), (280.0, 19.0, 301.0));
}

/// A wake-up whose switch-in the kernel did not trace still ended there: it counts, its
/// latency up to the earliest the task could have run (exact when the idle task's last sign
/// and the woken task's first sign meet).
#[test]
fn a_wake_up_ended_by_an_untraced_switch_in_counts() {
    let events = [
        sw(0, 0, 10, S, 0),
        wakeup(100, 10),
        by(0, 140, 0, EventKind::Waking(WakeTarget { pid: 77, target_cpu: 0 })),
        by(10, 140, 0, EventKind::Waking(WakeTarget { pid: 78, target_cpu: 0 })),
        sw(300, 0, 10, S, 0),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!((w.wakeups, w.wakeup_max_us, w.untraced_s), (1, Some(0.04), 0.0));
    assert_eq!((w.run_s * 1e9, w.runnable_s * 1e9), (160.0, 40.0));
}

/// The same when the untraced switch-in comes before any switch on its CPU: the woken task's
/// first sign there bounds its wake-up and begins its run (they were lost, with that run).
#[test]
fn a_wake_up_ended_before_a_cpus_first_switch_counts() {
    let events = [
        ev(10, EventKind::WakeupNew(WakeTarget { pid: 10, target_cpu: 1 })),
        by(10, 50, 1, EventKind::Waking(WakeTarget { pid: 78, target_cpu: 1 })),
        sw(300, 1, 10, R_PLUS, 9001),
    ];
    let c = figures(&events, &Roles { workers: &[10], engine: &[] }, ALL, 0, by_pid);
    let w = &c.workers[0];
    assert_eq!((w.wakeups, w.involuntary, c.untraced_switches), (1, 1, 1));
    // Nothing says what ran on CPU 1 before: it may have run from its wakeup at 10, so its
    // latency reads 0 and 10..50 is untraced.
    assert_eq!(w.wakeup_max_us, Some(0.0));
    assert_eq!((w.run_s * 1e9, w.runnable_s * 1e9, w.untraced_s * 1e9), (250.0, 700.0, 40.0));
}
