//! A real capture kept as a fixture (a pa3 `io` cell of 50 O_SYNC copy workers under
//! SCHED_OTHER at scale 0.25, with block events, taken by `examples/capture.rs` on the
//! 2-CPU VM this was built on) decoded and checked against the kernel's own counters and,
//! where trace-cmd is installed, against `trace-cmd report` on the same pages.

use schedlab_trace::decode::EventKind;
use schedlab_trace::{decode, tracedat, Decoded, Raw};
use std::collections::BTreeMap;
use std::process::Command;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/io-other-50.sltrace");

fn fixture() -> (Raw, Decoded) {
    let raw =
        Raw::read_from(std::io::BufReader::new(std::fs::File::open(FIXTURE).unwrap())).unwrap();
    let d = decode(&raw).unwrap();
    (raw, d)
}

#[test]
fn every_event_the_kernel_says_it_gave_is_decoded_in_order() {
    let (raw, d) = fixture();
    let read: u64 = raw.cpus.iter().map(|c| c.stats.read).sum();
    assert_eq!(d.events.len() as u64, read, "the buffers' `read events` counters");
    assert_eq!(
        (raw.lost(), d.stats.malformed, d.stats.unknown, d.stats.missed_pages),
        (0, 0, 0, 0)
    );
    assert!(d.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert!(
        d.events.iter().all(|e| (raw.start_ns..=raw.stop_ns).contains(&e.ts)),
        "timestamps are CLOCK_MONOTONIC, inside the capture"
    );
    let execs = d
        .events
        .iter()
        .filter(
            |e| matches!(&e.kind, EventKind::Exec { filename, .. } if filename.ends_with("schedlab")),
        )
        .count();
    assert_eq!(execs, 51, "the engine and its 50 workers exec schedlab");
}

/// (ts ns, cpu, the task that recorded it, event name) of each event.
type Lines = Vec<(u64, u32, i32, String)>;
/// (ts ns, prev pid, next pid) of each switch.
type Switches = Vec<(u64, i32, i32)>;

/// trace-cmd's report of the fixture as a trace.dat; None when trace-cmd is not installed.
fn trace_cmd(raw: &Raw, d: &Decoded) -> Option<(Lines, Switches)> {
    let dat = std::env::temp_dir().join(format!("schedlab-fixture-{}.dat", std::process::id()));
    tracedat::write(raw, &tracedat::names(d), std::fs::File::create(&dat).unwrap()).unwrap();
    let out = Command::new("trace-cmd").args(["report", "-t", "-i"]).arg(&dat).output();
    let _ = std::fs::remove_file(&dat);
    let out = out.ok()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (mut all, mut switches) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // "comm-pid [001] 17420.136117701: sched_switch: details"
        let Some(open) = line.find(" [") else { continue };
        let Some(current) =
            line[..open].trim().rsplit_once('-').and_then(|(_, pid)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let rest = &line[open + 2..];
        let (Some((cpu, rest)), true) =
            (rest.split_once("] "), rest.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let (ts, rest) = rest.split_once(": ").unwrap();
        let (s, ns) = ts.split_once('.').unwrap();
        let ts: u64 = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
        let (event, details) = rest.split_once(':').unwrap();
        if event == "sched_switch" {
            let pid = |side: &str| {
                side[..side.rfind(" [").unwrap()]
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .trim()
                    .parse::<i32>()
                    .unwrap()
            };
            let (prev, next) = details.trim().split_once(" ==> ").unwrap();
            switches.push((ts, pid(prev), pid(next)));
        }
        all.push((ts, cpu.parse().unwrap(), current, event.to_string()));
    }
    Some((all, switches))
}

#[test]
fn trace_cmd_reads_the_same_events_from_the_same_pages() {
    let (raw, d) = fixture();
    let Some((mut theirs, mut their_switches)) = trace_cmd(&raw, &d) else {
        schedlab_testkit::skip("trace-cmd is not installed (apt-get install trace-cmd)");
        return;
    };
    let mut ours: Lines =
        d.events.iter().map(|e| (e.ts, e.cpu, e.current, e.kind.name().to_string())).collect();
    let mut our_switches: Switches = d
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Switch(s) => Some((e.ts, s.prev_pid, s.next_pid)),
            _ => None,
        })
        .collect();
    for v in [&mut ours, &mut theirs] {
        v.sort();
    }
    our_switches.sort_unstable();
    their_switches.sort_unstable();
    let count = |v: &[(u64, u32, i32, String)]| {
        v.iter().fold(BTreeMap::new(), |mut m, (_, _, _, n)| {
            *m.entry(n.clone()).or_insert(0) += 1;
            m
        })
    };
    assert_eq!(count(&ours), count(&theirs));
    assert_eq!(
        ours, theirs,
        "every event at the same nanosecond on the same CPU, recorded by the same task"
    );
    assert_eq!(our_switches, their_switches);
}
