//! Decoding speed: events per second decoding a real capture (the fixture, or the file in
//! SCHEDLAB_TRACE_BENCH_FILE), every CPU's pages to typed events merged by timestamp, and
//! the same plus the per-worker figures of every task in it. Plain `harness = false`: each
//! pass is timed, the median and the best are printed.
//!
//!   cargo bench -p schedlab-trace --bench decode

use schedlab_trace::decode::EventKind;
use schedlab_trace::figures::{figures, Roles, TimeSpan, Who};
use schedlab_trace::{decode, Raw};
use std::time::{Duration, Instant};

/// Times `f` until `budget` is spent (at least 5 passes); returns the sorted pass times.
fn passes(budget: Duration, mut f: impl FnMut() -> usize) -> Vec<Duration> {
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 5 || start.elapsed() < budget {
        let t = Instant::now();
        std::hint::black_box(f());
        times.push(t.elapsed());
    }
    times.sort();
    times
}

fn report(what: &str, events: usize, times: &[Duration]) {
    let rate = |d: &Duration| events as f64 / d.as_secs_f64() / 1e6;
    println!(
        "{what}: {events} events, median {:.2} ms = {:.1} M events/s (best {:.1}, {} passes)",
        times[times.len() / 2].as_secs_f64() * 1e3,
        rate(&times[times.len() / 2]),
        rate(&times[0]),
        times.len()
    );
}

fn main() {
    let path = std::env::var("SCHEDLAB_TRACE_BENCH_FILE").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/io-other-50.sltrace").to_string()
    });
    let raw =
        Raw::read_from(std::io::BufReader::new(std::fs::File::open(&path).expect("the capture")))
            .expect("a capture");
    let n = decode(&raw).expect("decodes").events.len();
    println!("{path}: {:.1} MB of pages", raw.bytes() as f64 / 1e6);
    report("decode", n, &passes(Duration::from_secs(3), || decode(&raw).unwrap().events.len()));
    // Every task that ran counts as a worker: the figures' heaviest case.
    let d = decode(&raw).unwrap();
    let mut pids: Vec<i32> = d
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Switch(s) if s.next_pid != 0 => Some(s.next_pid),
            _ => None,
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let window = TimeSpan { start_ns: raw.start_ns, end_ns: raw.stop_ns };
    report(
        &format!("decode + figures of {} tasks", pids.len()),
        n,
        &passes(Duration::from_secs(3), || {
            let d = decode(&raw).unwrap();
            figures(&d.events, &Roles { workers: &pids, engine: &[] }, window, 0, |_, _| Who::Other)
                .workers
                .len()
        }),
    );
}
