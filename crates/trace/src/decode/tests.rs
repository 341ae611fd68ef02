use super::*;
use crate::testpages::{
    exec_rec, fixture_formats, switch_rec, wake_rec, Page, HEADER, SWITCH_ID, WAKING_ID,
};

fn decoder() -> Decoder {
    Decoder::new(HEADER, &fixture_formats()).unwrap()
}

fn decode_pages(pages: &[Vec<u8>]) -> (Vec<Event>, PageStats) {
    let mut out = Vec::new();
    let mut stats = PageStats::default();
    let d = decoder();
    for p in pages {
        d.decode_page(1, p, &mut out, &mut stats);
    }
    (out, stats)
}

fn switch_of(e: &Event) -> Switch {
    match &e.kind {
        EventKind::Switch(s) => *s,
        k => panic!("not a switch: {k:?}"),
    }
}

#[test]
fn deltas_accumulate_from_the_page_timestamp() {
    let mut p = Page::new(1_000);
    p.record(5, &switch_rec(10, 0, 20, "a", "b"));
    p.record(7, &wake_rec(WAKING_ID, 10, 1));
    let (ev, stats) = decode_pages(&[p.bytes()]);
    assert_eq!(ev.len(), 2);
    assert_eq!((ev[0].ts, ev[0].cpu), (1_005, 1));
    let s = switch_of(&ev[0]);
    assert_eq!(
        (s.prev_pid, s.next_pid, comm_str(&s.prev_comm).as_ref(), comm_str(&s.next_comm).as_ref()),
        (10, 20, "a", "b")
    );
    assert_eq!(ev[0].current, 10, "a switch is recorded by the task leaving (common_pid)");
    assert_eq!(
        ev[1],
        Event {
            ts: 1_012,
            cpu: 1,
            current: 0,
            kind: EventKind::Waking(WakeTarget { pid: 10, target_cpu: 1 })
        }
    );
    assert_eq!(stats, PageStats { pages: 1, ..Default::default() });
}

#[test]
fn a_time_extend_carries_the_high_bits_of_a_long_delta() {
    let gap = 5_000_000_000u64; // 5 s: far beyond 27 bits of ns
    let mut p = Page::new(1_000);
    p.record(0, &wake_rec(WAKING_ID, 1, 0));
    p.extend(gap);
    p.record(3, &wake_rec(WAKING_ID, 2, 0));
    let (ev, _) = decode_pages(&[p.bytes()]);
    assert_eq!(ev.iter().map(|e| e.ts).collect::<Vec<_>>(), [1_000, 1_000 + gap + 3]);
}

#[test]
fn an_absolute_timestamp_replaces_the_running_clock() {
    let mut p = Page::new(1_000);
    p.record(1, &wake_rec(WAKING_ID, 1, 0));
    p.absolute(777_000_000_000);
    p.record(2, &wake_rec(WAKING_ID, 2, 0));
    let (ev, _) = decode_pages(&[p.bytes()]);
    assert_eq!(ev.iter().map(|e| e.ts).collect::<Vec<_>>(), [1_001, 777_000_000_002]);
    // The top five bits absolute stamps lack come from the running clock.
    let running = (0x08 << 56) | 100;
    assert_eq!(fix_abs(200, running), (0x08 << 56) | 200);
    assert_eq!(
        fix_abs(5, running),
        (0x10 << 56) | 5,
        "the low bits wrapped: the top bits moved on"
    );
    assert_eq!(fix_abs(5, 100), 5);
}

#[test]
fn a_discarded_record_is_skipped_without_moving_the_clock_and_null_padding_ends_the_page() {
    let mut p = Page::new(100);
    p.record(1, &wake_rec(WAKING_ID, 1, 0));
    p.discarded(40, 9);
    p.record(2, &wake_rec(WAKING_ID, 2, 0));
    p.null_padding();
    let (ev, stats) = decode_pages(&[p.bytes_with_trailing(&switch_rec(1, 0, 2, "x", "y"))]);
    assert_eq!(ev.iter().map(|e| e.ts).collect::<Vec<_>>(), [101, 103]);
    assert_eq!(stats.malformed, 0);
}

#[test]
fn a_record_with_its_length_in_array0_is_read() {
    let mut p = Page::new(0);
    let rec = exec_rec(42, "/usr/bin/a-rather-long-program-name-past-the-small-record-limit-of-112-bytes-so-it-takes-the-long-form");
    assert!(rec.len() > 112);
    p.record(4, &rec);
    p.record_long(1, &wake_rec(WAKING_ID, 3, 1));
    let (ev, _) = decode_pages(&[p.bytes()]);
    assert_eq!(
        ev[0].kind,
        EventKind::Exec {
            pid: 42,
            filename: "/usr/bin/a-rather-long-program-name-past-the-small-record-limit-of-112-bytes-so-it-takes-the-long-form".into()
        }
    );
    assert_eq!(
        ev[1],
        Event {
            ts: 5,
            cpu: 1,
            current: 0,
            kind: EventKind::Waking(WakeTarget { pid: 3, target_cpu: 1 })
        }
    );
}

#[test]
fn missed_event_flags_become_a_lost_marker_with_the_stored_count() {
    let mut p = Page::new(50);
    p.record(0, &wake_rec(WAKING_ID, 1, 0));
    p.missed(Some(1234));
    let mut q = Page::new(60);
    q.record(0, &wake_rec(WAKING_ID, 2, 0));
    q.missed(None);
    let (ev, stats) = decode_pages(&[p.bytes(), q.bytes()]);
    assert_eq!(ev[0].kind, EventKind::Lost { count: Some(1234) });
    assert_eq!(
        ev[1].kind,
        EventKind::Waking(WakeTarget { pid: 1, target_cpu: 0 }),
        "the flag's bits are not taken for length"
    );
    assert_eq!((ev[2].ts, &ev[2].kind), (60, &EventKind::Lost { count: None }));
    assert_eq!(ev.len(), 4);
    assert_eq!((stats.missed_pages, stats.missed_counted), (2, 1234));
}

#[test]
fn prev_state_says_runnable_only_for_r_and_r_plus() {
    let d = decoder();
    let state = |s: i64| {
        let mut p = Page::new(0);
        p.record(0, &switch_rec(5, s, 6, "w", "v"));
        let mut out = Vec::new();
        d.decode_page(0, &p.bytes(), &mut out, &mut PageStats::default());
        let s = switch_of(&out[0]);
        (s.prev_runnable, s.prev_dead)
    };
    assert_eq!(state(0), (true, false), "R: yielded or woken before it slept");
    assert_eq!(state(0x100), (true, false), "R+: preempted");
    assert_eq!(state(0x1), (false, false), "S");
    assert_eq!(state(0x2), (false, false), "D");
    assert_eq!(state(0x80), (false, false), "I: an idle kernel thread sleeping, not preempted");
    assert_eq!(state(0x20), (false, true), "Z: its last switch");
    assert_eq!(state(0x10), (false, true), "X");
}

#[test]
fn records_of_events_without_a_format_are_counted_not_guessed() {
    let mut p = Page::new(0);
    let mut rec = wake_rec(WAKING_ID, 1, 0);
    rec[0..2].copy_from_slice(&999u16.to_le_bytes());
    p.record(1, &rec);
    p.record(1, &wake_rec(WAKING_ID, 2, 0));
    let (ev, stats) = decode_pages(&[p.bytes()]);
    assert_eq!((ev.len(), stats.unknown), (1, 1));
    assert_eq!(ev[0].ts, 2, "the unknown record's delta still counts");
}

#[test]
fn a_length_past_the_page_stops_that_page_only() {
    let mut p = Page::new(0);
    p.record(1, &wake_rec(WAKING_ID, 1, 0));
    p.raw_word(0, Some(100_000)); // type_len 0 claiming 100 kB
    let mut q = Page::new(10);
    q.record(0, &wake_rec(WAKING_ID, 2, 0));
    let (ev, stats) = decode_pages(&[p.bytes(), q.bytes()]);
    assert_eq!(ev.len(), 2);
    assert_eq!((stats.pages, stats.malformed), (2, 1));
}

#[test]
fn cpus_are_merged_by_timestamp_keeping_cpu_order_on_ties() {
    let page = |ts: u64, pids: &[(u32, i32)]| {
        let mut p = Page::new(ts);
        for (d, pid) in pids {
            p.record(*d, &wake_rec(WAKING_ID, *pid, 0));
        }
        p.bytes()
    };
    let raw = Raw {
        header_page: HEADER.into(),
        formats: fixture_formats(),
        page_size: 4096,
        cpus: vec![
            crate::raw::CpuRaw {
                cpu: 0,
                pages: [page(10, &[(0, 1), (10, 2)]), page(40, &[(0, 3)])].concat(),
                stats: Default::default(),
            },
            crate::raw::CpuRaw {
                cpu: 1,
                pages: page(5, &[(0, 4), (15, 5), (10, 6)]),
                stats: Default::default(),
            },
        ],
        ..Default::default()
    };
    let d = decode(&raw).unwrap();
    let order: Vec<(u64, u32, i32)> = d
        .events
        .iter()
        .map(|e| match e.kind {
            EventKind::Waking(w) => (e.ts, e.cpu, w.pid),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(order, [(5, 1, 4), (10, 0, 1), (20, 0, 2), (20, 1, 5), (30, 1, 6), (40, 0, 3)]);
    assert_eq!(d.stats.pages, 3);
}

#[test]
fn every_fixture_event_is_planned() {
    let d = decoder();
    assert!(matches!(d.plans[SWITCH_ID as usize], Some(ReadPlan::Switch { .. })));
    let planned = d.plans.iter().flatten().count();
    assert_eq!(planned, 10, "switch, 3 wake-ups, migrate, fork, exec, exit, 2 block");
}
