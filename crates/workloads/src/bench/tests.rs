use super::*;
use schedlab_plan::{Ipc, Messaging, PipeBench, Schbench};

#[test]
fn messaging_delivers_every_message_with_processes_threads_sockets_and_pipes() {
    for (threads, ipc) in
        [(false, Ipc::Socket), (true, Ipc::Socket), (false, Ipc::Pipe), (true, Ipc::Pipe)]
    {
        let m = Messaging { groups: 2, fds: 3, loops: 20, ipc, threads, message_bytes: 100 };
        let o = messaging(&m).unwrap_or_else(|e| panic!("threads {threads} {ipc:?}: {e}"));
        assert_eq!(o.messages, 2 * 3 * 3 * 20);
        assert!(o.time_s > 0.0 && o.time_s < 30.0, "{o:?}");
    }
}

#[test]
fn a_message_larger_than_one_write_arrives_whole() {
    // 64 KiB messages over pipes exceed what one write may take at a time.
    let m = Messaging {
        groups: 1,
        fds: 2,
        loops: 4,
        ipc: Ipc::Pipe,
        threads: true,
        message_bytes: 65_536,
    };
    assert_eq!(messaging(&m).unwrap().messages, 16);
}

#[test]
fn pipe_counts_every_round_trip_of_every_pair() {
    for (threads, pairs) in [(false, 1), (true, 1), (false, 2), (true, 3)] {
        let p = PipeBench { loops: 2000, threads, pairs };
        let o = pipe_pingpong(&p).unwrap_or_else(|e| panic!("threads {threads}: {e}"));
        assert_eq!(o.round_trips, 2000 * pairs as u64);
        assert!(o.time_s > 0.0);
        let us = o.us_per_op(p.loops);
        assert!((us - o.time_s * 1e6 / 2000.0).abs() < 1e-9);
        assert!((o.ops_per_s() * o.time_s - (2000 * pairs) as f64).abs() < 1e-6);
    }
}

fn tiny(rps: u32) -> Schbench {
    Schbench {
        message_threads: 1,
        workers: 2,
        runtime_ms: 400,
        operations: 1,
        footprint_kb: 16,
        sleep_us: 0,
        rps,
    }
}

#[test]
fn schbench_measures_wakeups_requests_and_rates() {
    let f = schbench(&tiny(0), 2).unwrap();
    assert_eq!(f.source, "schbench");
    let (w, r, rps) = (f.wakeup_us.unwrap(), f.request_us.unwrap(), f.rps.unwrap());
    let n = f.requests.unwrap();
    assert!(n > 10, "{f:?}");
    // Every request has a latency unless it took under 1 µs; zero-µs wake-ups are not kept.
    assert!(r.samples <= n && r.samples > 0, "{f:?}");
    assert!(w.samples <= n + 2, "{f:?}");
    assert!(w.p50 <= w.p90 && w.p90 <= w.p99 && w.p99 <= w.p999, "{w:?}");
    assert!(r.p50 <= r.p90 && r.p90 <= r.p99 && r.p99 <= r.p999, "{r:?}");
    // Two rate samples, the start's and the end's: the run is shorter than a second.
    assert_eq!(rps.samples, 2);
    assert!(rps.p20 <= rps.p50 && rps.p50 <= rps.p90 && rps.p90 > 0.0, "{rps:?}");
    assert!((f.average_rps.unwrap() - n as f64 / 0.4).abs() < 1e-6);
}

#[test]
fn schbench_with_a_rate_serves_about_that_many_requests() {
    let f = schbench(&tiny(50), 2).unwrap();
    let n = f.requests.unwrap();
    // The rate thread queues 50 in its first second, all at its start.
    assert!((1..=50).contains(&n), "{f:?}");
}

#[test]
fn schbench_defaults_to_the_cpus_over_the_message_threads() {
    let b = Schbench { workers: 0, message_threads: 2, ..tiny(0) };
    assert_eq!((b.workers_on(5), b.workers_on(4), b.workers_on(1)), (3, 2, 1));
    assert_eq!(matrix_size(256), 104);
}
