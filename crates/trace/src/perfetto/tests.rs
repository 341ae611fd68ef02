use super::*;
use crate::decode::{Switch, WakeTarget};

fn comm(s: &str) -> Comm {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

fn sw(ts: u64, cpu: u32, prev: i32, state: i64, next: i32) -> Event {
    let name = |p: i32| comm(if p == 0 { "swapper/0" } else { "schedlab" });
    Switch::new((prev, name(prev)), state, (next, name(next)), 120).at(ts, cpu)
}

fn export(events: &[Event], processes: &[Process], tracks: &[Track]) -> (Trace, ExportSummary) {
    let x = Export {
        events,
        cpus: &[0, 1, 2],
        boot_offset_ns: 7_000,
        clock_at_ns: 1_000,
        realtime_at_ns: Some(1_700_000_000_000_000_000),
        machine: TraceMachine { release: "6.18.0".into(), arch: "x86_64".into(), cpus: 3 },
        processes,
        tracks,
    };
    let mut bytes = Vec::new();
    let sum = write(&x, &mut bytes).unwrap();
    assert_eq!(sum.bytes, bytes.len() as u64);
    (Trace::decode(bytes.as_slice()).expect("the crate's own decoder reads it"), sum)
}

fn block(bytes: u32) -> crate::decode::Block {
    let mut rwbs = [0u8; 10];
    rwbs[..2].copy_from_slice(b"WS");
    crate::decode::Block { dev: (7 << 20) | 3, sector: 2048, nr_sector: 8, bytes, error: 0, rwbs }
}

#[test]
fn a_capture_round_trips_through_the_protobuf_decoder() {
    let events = vec![
        Event {
            ts: 900,
            cpu: 1,
            current: 7,
            kind: EventKind::Waking(WakeTarget { pid: 42, target_cpu: 1 }),
        },
        sw(1_000, 1, 7, 0x1, 42),
        Event { ts: 1_100, cpu: 1, current: -1, kind: EventKind::Lost { count: Some(3) } },
        Event {
            ts: 1_200,
            cpu: 1,
            current: 42,
            kind: EventKind::Migrate { pid: 43, orig_cpu: 0, dest_cpu: 1 },
        },
        sw(1_300, 0, 42, 0x100, 0),
        Event { ts: 1_400, cpu: 0, current: 42, kind: EventKind::Fork { parent: 42, child: 44 } },
        Event { ts: 1_500, cpu: 0, current: 42, kind: EventKind::Exit { pid: 42 } },
        Event { ts: 1_600, cpu: 2, current: 0, kind: EventKind::BlockIssue(block(4096)) },
        Event { ts: 1_700, cpu: 2, current: 0, kind: EventKind::BlockComplete(block(0)) },
    ];
    let processes = [Process {
        pid: 42,
        ppid: 7,
        name: "schedlab worker main#0".into(),
        threads: vec![42, 45],
    }];
    let tracks = [
        Track {
            name: "cell".into(),
            pid: None,
            marks: vec![Mark { ts_ns: 1_000, name: "release".into(), end_ns: None }],
        },
        Track {
            name: "schedlab worker main#0".into(),
            pid: Some(42),
            marks: vec![Mark { ts_ns: 1_050, name: "run".into(), end_ns: Some(1_250) }],
        },
    ];
    let (trace, sum) = export(&events, &processes, &tracks);
    assert_eq!(sum.switches, BTreeMap::from([(0, 1), (1, 1)]));
    assert_eq!(
        (sum.events.values().sum::<u64>(), sum.lost_bundles, sum.marks, sum.processes),
        (8, 1, 2, 1)
    );
    let p = &trace.packet;
    let snap = p[0].clock_snapshot.as_ref().unwrap();
    let clock = |id| snap.clocks.iter().find(|c| c.clock_id == Some(id)).and_then(|c| c.timestamp);
    assert_eq!(
        (clock(CLOCK_BOOTTIME), clock(CLOCK_MONOTONIC)),
        (Some(8_000), Some(1_000)),
        "one instant on both clocks"
    );
    assert_eq!(
        p[1].system_info.as_ref().unwrap().utsname.as_ref().unwrap().release.as_deref(),
        Some("6.18.0")
    );
    let tree = p[2].process_tree.as_ref().unwrap();
    assert_eq!(tree.processes[0].cmdline, vec!["schedlab worker main#0".to_string()]);
    assert_eq!(
        (tree.threads.len(), tree.threads[0].tid, tree.threads[0].tgid),
        (1, Some(45), Some(42))
    );
    let bundles: Vec<&FtraceEventBundle> =
        p.iter().filter_map(|p| p.ftrace_events.as_ref()).collect();
    // CPU 1: the waking before the loss, then the rest after it; CPU 0: its two events; CPU 2 none.
    let shape: Vec<(u32, usize, bool)> = bundles
        .iter()
        .map(|b| (b.cpu.unwrap(), b.event.len(), b.lost_events == Some(true)))
        .collect();
    assert_eq!(shape, vec![(1, 2, false), (0, 3, false), (1, 1, true), (2, 2, false)]);
    let Some(Ftrace::BlockRqIssue(b)) = &bundles[3].event[0].event else { panic!() };
    assert_eq!(
        (b.dev, b.sector, b.nr_sector, b.bytes, b.rwbs.as_deref()),
        (Some((7 << 20) | 3), Some(2048), Some(8), Some(4096), Some("WS"))
    );
    assert!(
        matches!(&bundles[3].event[1].event, Some(Ftrace::BlockRqComplete(c)) if c.error == Some(0))
    );
    let first = &bundles[0].event[0];
    assert_eq!(first.timestamp, Some(7_900), "monotonic 900 ns + the boot offset");
    assert_eq!(
        first.pid,
        Some(7),
        "before its first switch a CPU runs the task that switch takes off"
    );
    let Some(Ftrace::SchedWaking(w)) = &first.event else { panic!("{first:?}") };
    assert_eq!((w.pid, w.target_cpu, w.comm.as_deref()), (Some(42), Some(1), Some("schedlab")));
    let Some(Ftrace::SchedSwitch(s)) = &bundles[0].event[1].event else { panic!() };
    assert_eq!(bundles[0].event[1].pid, Some(7), "a switch is recorded by the task leaving");
    assert_eq!(
        (s.prev_pid, s.prev_state, s.next_pid, s.next_comm.as_deref()),
        (Some(7), Some(1), Some(42), Some("schedlab"))
    );
    assert_eq!(bundles[2].event[0].pid, Some(42), "the migrate ran while 42 had CPU 1");
    let Some(Ftrace::SchedProcessExit(x)) = &bundles[1].event[2].event else { panic!() };
    assert_eq!(x.tgid, Some(42), "a named process's exit is its process's");
    let marks: Vec<&TracePacket> = p.iter().filter(|p| p.track_event.is_some()).collect();
    let kinds: Vec<(u64, i32, Option<&str>)> = marks
        .iter()
        .map(|p| {
            let e = p.track_event.as_ref().unwrap();
            assert_eq!(p.timestamp_clock_id, Some(CLOCK_MONOTONIC));
            (p.timestamp.unwrap(), e.r#type.unwrap(), e.name.as_deref())
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1_000, INSTANT, Some("release")),
            (1_050, SLICE_BEGIN, Some("run")),
            (1_250, SLICE_END, None)
        ]
    );
    let tracks: Vec<&TracePacket> = p.iter().filter(|p| p.track_descriptor.is_some()).collect();
    assert_eq!(
        tracks[0].sequence_flags,
        Some(SEQ_INCREMENTAL_STATE_CLEARED),
        "the marks' sequence starts clean"
    );
    let worker = tracks[1].track_descriptor.as_ref().unwrap();
    assert_eq!(worker.process.as_ref().unwrap().pid, Some(42));
    assert_eq!(marks[1].track_event.as_ref().unwrap().track_uuid, worker.uuid);
}

#[test]
fn a_simulated_schedule_becomes_the_switches_a_kernel_would_trace() {
    let seg = |cpu, pid, start_ns, end_ns, left| Segment { cpu, pid, start_ns, end_ns, left };
    let segments = [
        seg(0, 1, 0, 10, Left::Preempted),
        seg(0, 2, 11, 20, Left::Blocked), // 1 ns of switch cost: a direct switch
        seg(0, 1, 30, 40, Left::Exited),  // idle in between
        seg(1, 2, 50, 60, Left::Preempted),
        seg(1, 2, 60, 70, Left::Running), // the same task goes on: no switch
    ];
    let events = switches(&segments, 2, |p| comm(&format!("t{p}")));
    let got: Vec<(u64, u32, &str, i32, i64, i32)> = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::Switch(s) => (e.ts, e.cpu, "switch", s.prev_pid, s.prev_state, s.next_pid),
            EventKind::Exit { pid } => (e.ts, e.cpu, "exit", *pid, 0, 0),
            k => panic!("{k:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 0, "switch", 0, 0, 1),
            (10, 0, "switch", 1, 0x100, 2),
            (20, 0, "switch", 2, 0x2, 0),
            (30, 0, "switch", 0, 0, 1),
            (40, 0, "exit", 1, 0, 0),
            (40, 0, "switch", 1, 0x20, 0),
            (50, 1, "switch", 0, 0, 2),
        ]
    );
    let EventKind::Switch(s) = &events[1].kind else { panic!() };
    assert!(s.prev_runnable && comm_str(&s.next_comm) == "t2");
}
