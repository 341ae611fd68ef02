//! Each parser pinned on outputs the originals printed (tests/fixtures/bench): rt-tests 2.4's
//! hackbench, perf 6.1's `bench sched messaging` and `bench sched pipe`, and schbench built
//! from five commits (48aed1d of 2023 before --json; b43ca6f, the first --json; 0b26515;
//! 73cb919; 24e32b8, the newest), each run `-m 1 -t 2 -r 2 -F 64 -n 1 [-j out.json]`.

use super::*;
use schedlab_plan::OutputParser::{Hackbench, PerfBenchPipe, Schbench};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../../../../tests/fixtures/bench/", $name))
    };
}

#[test]
fn hackbench_and_perf_messaging_give_their_time() {
    for (out, want) in [
        (fixture!("hackbench-rt-tests.stdout"), 0.097),
        (fixture!("hackbench-rt-tests-threads-pipe.stdout"), 0.032),
        (fixture!("perf-bench-messaging.stdout"), 0.695),
        (fixture!("perf-bench-messaging-threads-pipe.stdout"), 0.055),
    ] {
        let f = parse(Hackbench, out, "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((f.source.as_str(), f.time_s, f.us_per_op), ("hackbench", Some(want), None));
    }
}

#[test]
fn perf_pipe_gives_usecs_and_ops() {
    let f = parse(PerfBenchPipe, fixture!("perf-bench-pipe.stdout"), "").unwrap();
    assert_eq!((f.us_per_op, f.ops_per_s, f.time_s), (Some(12.126350), Some(82465.0), None));
    let f = parse(PerfBenchPipe, fixture!("perf-bench-pipe-threads.stdout"), "").unwrap();
    assert_eq!((f.us_per_op, f.ops_per_s), (Some(8.963600), Some(111562.0)));
    assert_eq!(f.source, "perf-bench-pipe");
}

#[test]
fn schbench_text_of_every_version() {
    for (err, wakeup, request, rps, avg) in [
        (
            fixture!("schbench-48aed1d.stderr"),
            (130.0, 653.0, 3700.0, 6136.0, 2351),
            (515.0, 2788.0, 17312.0, 30432.0),
            (0.0, 1162.0, 1186.0, 3),
            1175.5,
        ),
        (
            fixture!("schbench-24e32b8.stderr"),
            (166.0, 669.0, 3180.0, 5880.0, 1825),
            (605.0, 4104.0, 17248.0, 77184.0),
            (0.0, 761.0, 1058.0, 3),
            912.5,
        ),
    ] {
        let f = parse(Schbench, "", err).unwrap_or_else(|e| panic!("{e}"));
        let w = f.wakeup_us.unwrap();
        assert_eq!((w.p50, w.p90, w.p99, w.p999, w.samples), wakeup);
        let r = f.request_us.unwrap();
        assert_eq!((r.p50, r.p90, r.p99, r.p999), request);
        let p = f.rps.unwrap();
        assert_eq!((p.p20, p.p50, p.p90, p.samples), rps);
        assert_eq!((f.average_rps, f.source.as_str()), (Some(avg), "schbench"));
    }
    for err in [
        fixture!("schbench-b43ca6f.stderr"),
        fixture!("schbench-0b26515.stderr"),
        fixture!("schbench-73cb919.stderr"),
    ] {
        let f = parse(Schbench, "", err).unwrap_or_else(|e| panic!("{e}"));
        assert!(f.wakeup_us.unwrap().p99 >= f.wakeup_us.unwrap().p50);
    }
}

#[test]
fn schbench_json_of_every_shape_agrees_with_its_text() {
    for (json, text) in [
        (fixture!("schbench-b43ca6f.json"), fixture!("schbench-b43ca6f.stderr")),
        (fixture!("schbench-0b26515.json"), fixture!("schbench-0b26515.stderr")),
        (fixture!("schbench-73cb919.json"), fixture!("schbench-73cb919.stderr")),
        (fixture!("schbench-24e32b8.json"), fixture!("schbench-24e32b8.stderr")),
    ] {
        let j = parse(Schbench, json, "").unwrap_or_else(|e| panic!("{e}"));
        let t = parse(Schbench, "", text).unwrap();
        let pick = |f: &BenchFigures| {
            let (w, r, p) = (f.wakeup_us.unwrap(), f.request_us.unwrap(), f.rps.unwrap());
            [w.p50, w.p90, w.p99, w.p999, r.p50, r.p90, r.p99, r.p999, p.p20, p.p50, p.p90]
        };
        assert_eq!(pick(&j), pick(&t), "{json}");
    }
}

#[test]
fn the_last_block_of_a_long_run_is_the_final_one() {
    let one = fixture!("schbench-24e32b8.stderr");
    let interval =
        one.replace("166 ", "999 ").replace("average rps: 912.50", "current rps: 900.00");
    let f = parse(Schbench, "", &format!("{interval}{one}")).unwrap();
    assert_eq!(f.wakeup_us.unwrap().p50, 166.0);
}

#[test]
fn an_output_that_does_not_parse_names_the_line() {
    let e = parse(Hackbench, "Running in process mode\nSegmentation fault\n", "").unwrap_err();
    assert_eq!(e.line, "Segmentation fault");
    assert!(e.to_string().contains("not a line hackbench prints"), "{e}");
    let e = parse(Hackbench, "Running in process mode\n", "").unwrap_err();
    assert!(e.why.contains("no `Time:`") && e.line == "Running in process mode", "{e}");
    let e = parse(PerfBenchPipe, "# Running\n     Total time: 0.2 [sec]\n  12 usecs/op\n", "")
        .unwrap_err();
    assert!(e.why.contains("ops/sec"), "{e}");
    let e = parse(Schbench, "", "Wakeup Latencies percentiles (usec) runtime 2 (s) (5 total samples)\n\t  50.0th: 1 (1 samples)\nkilled\n").unwrap_err();
    assert_eq!(e.line, "killed");
    let e = parse(Schbench, "{\"int\": {}}", "").unwrap_err();
    assert!(e.why.contains("wakeup_latency_pct50.0"), "{e}");
    let e = parse(Schbench, "", "").unwrap_err();
    assert_eq!(e.line, "(no output)");
}
