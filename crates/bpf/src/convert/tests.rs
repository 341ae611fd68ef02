use super::*;

/// A worker (slot 0), a dispatcher (slot 1) and a second worker (slot 2), as the maps
/// would hold them after a cell that ended at 10 s.
fn maps() -> Maps {
    let mut hists = vec![vec![0u32; hist::BUCKETS]; 3];
    hists[0][hist::bucket(5_000)] = 3;
    hists[0][hist::bucket(40_000)] = 1;
    Maps {
        aggs: vec![
            Agg {
                root: 100,
                tasks: 2,
                run_ns: 3_000_000_000,
                runnable_ns: 1_000_000_000,
                // One task lived 1..9 s; the other, from 2 s, is still alive.
                life_ns: 8_000_000_000,
                open_start_sum: 2_000_000_000,
                alive: 1,
                involuntary: 9,
                voluntary: 4,
                by_worker: 1,
                by_engine: 1,
                by_kernel: 2,
                by_other: 1,
                wakeups: 4,
                wake_max: 40_123,
                migrations: 6,
                cpus: [0b101, 0, 0, 1],
            },
            Agg { root: 200, tasks: 1, ..Default::default() },
            Agg { root: 300, tasks: 1, life_ns: 1_000_000_000, ..Default::default() },
        ],
        hists,
        // Four switch-outs to worker 300 and two to dispatcher 200 before their roles
        // were known; one of slot 2's.
        unresolved: vec![(0, 300, 3), (0, 200, 1), (2, 100, 5)],
        cpus: vec![
            (
                0,
                CpuAcc {
                    last: 9_000_000_000,
                    busy: 5_000_000_000,
                    idle: 3_000_000_000,
                    cur_idle: 1,
                    seen: 1,
                },
            ),
            (
                1,
                CpuAcc {
                    last: 9_500_000_000,
                    busy: 7_000_000_000,
                    idle: 1_500_000_000,
                    cur_idle: 0,
                    seen: 1,
                },
            ),
            (2, CpuAcc::default()),
        ],
        ..Default::default()
    }
}

#[test]
fn the_maps_become_the_workers_figures_in_their_order() {
    let t = cell_trace(&maps(), &[300, 100, 400], 1_000_000_000, 10_000_000_000);
    assert_eq!(t.workers.iter().map(|w| w.pid).collect::<Vec<_>>(), [300, 100, 400]);
    let w = &t.workers[1];
    assert_eq!((w.run_s, w.runnable_s), (3.0, 1.0));
    // 8 s ended plus 10 - 2 s still alive, less run and runnable.
    assert!((w.blocked_s - 12.0).abs() < 1e-9, "{}", w.blocked_s);
    assert_eq!((w.involuntary, w.voluntary, w.migrations, w.tasks), (9, 4, 6, 2));
    assert_eq!(w.preempted_by, PreemptedBy { worker: 4, engine: 2, kernel: 2, other: 1 });
    assert_eq!(w.cpus, [0, 2, 192]);
    assert_eq!(w.wakeups, 4);
    assert!((w.wakeup_p50_us.unwrap() - 5.0).abs() <= 0.05, "{:?}", w.wakeup_p50_us);
    assert!((w.wakeup_p99_us.unwrap() - 40.0).abs() <= 0.4, "{:?}", w.wakeup_p99_us);
    assert_eq!(w.wakeup_max_us, Some(40.123));
    let h = schedlab_model::hist::decode(w.wakeup_hist.as_deref().unwrap()).unwrap();
    assert_eq!(h.len(), 4);
    assert_eq!((w.untraced_s, w.states.is_none()), (0.0, true));
    // The other worker: its unresolved switch-out went to a worker.
    assert_eq!(t.workers[0].preempted_by.worker, 5);
    assert_eq!(t.workers[0].blocked_s, 1.0);
    assert_eq!(t.workers[0].wakeup_p50_us, None);
    assert_eq!(t.workers[0].wakeup_hist, None);
    // A worker the programs never saw has no figures.
    assert_eq!(t.workers[2], WorkerTrace { pid: 400, ..Default::default() });
    // CPUs: the time since the last switch goes to what ran then; a CPU never seen is left out.
    assert_eq!(t.cpus.len(), 2);
    assert_eq!((t.cpus[0].busy_s, t.cpus[0].idle_s), (5.0, 4.0));
    assert_eq!((t.cpus[1].busy_s, t.cpus[1].idle_s), (7.5, 1.5));
    assert_eq!(t.span_s, 9.0);
    assert_eq!((t.lost_events, t.untraced_switches, t.slice_s), (0, 0, 0.0));
}

#[test]
fn staged_wake_ups_and_tasks_alive_at_the_end_join_their_slots() {
    let mut m = maps();
    // Two wake-ups of slot 2 still staged, one of a slot that does not exist.
    let b = hist::bucket(7_000) as u32;
    m.staged = vec![2 << 11 | b, 2 << 11 | b, 9 << 11 | b];
    // A task of slot 2 alive at the end, with the kernel's counts for it.
    let row = TaskRow {
        slot: 2,
        root: 300,
        wakeups: 2,
        wake_max: 9_000,
        cpus_lo: 0b10,
        by_kernel: 3,
        live: 1,
        ..Default::default()
    };
    let kernel = KernelCounts {
        run_ns: 500_000_000,
        runnable_ns: 100_000_000,
        voluntary: 2,
        involuntary: 3,
        migrations: 1,
    };
    m.live = vec![LiveTask { row, kernel: Some(kernel) }];
    m.lost_tasks = 1;
    let t = cell_trace(&m, &[300], 1_000_000_000, 10_000_000_000);
    let w = &t.workers[0];
    assert_eq!((w.run_s, w.runnable_s), (0.5, 0.1));
    assert_eq!((w.voluntary, w.involuntary, w.migrations), (2, 3, 1));
    assert_eq!(w.preempted_by.kernel, 3);
    assert_eq!(w.wakeups, 2);
    assert_eq!(w.cpus, [1]);
    assert_eq!(w.wakeup_max_us, Some(9.0));
    let h = schedlab_model::hist::decode(w.wakeup_hist.as_deref().unwrap()).unwrap();
    assert_eq!(h.len(), 2);
    assert!((w.wakeup_p50_us.unwrap() - 7.0).abs() <= 0.07, "{:?}", w.wakeup_p50_us);
    assert_eq!(t.lost_events, 1);
}
