use super::super::workload::one::{err, spec, workload};
use crate::{parse, Workload};
use schedlab_plan::{Ipc, Messaging, PipeBench, Schbench};

#[test]
fn each_kind_has_the_originals_defaults() {
    let m = Messaging::DEFAULT;
    assert_eq!(workload("kind = \"messaging\"\n"), Workload::Messaging(m));
    // hackbench's own: 10 groups of 20 and 20, 100 loops, sockets, processes, 100 bytes.
    let all = (m.groups, m.fds, m.loops, m.ipc, m.threads, m.message_bytes);
    assert_eq!(all, (10, 20, 100, Ipc::Socket, false, 100));
    assert_eq!(
        workload("kind = \"pipe\"\n"),
        Workload::Pipe(PipeBench { loops: 1_000_000, threads: false, pairs: 1 })
    );
    let b = Schbench::DEFAULT;
    assert_eq!(workload("kind = \"schbench\"\n"), Workload::Schbench(b));
    // schbench's own: one message thread, workers from the CPUs, 30 s, 5 operations, 256 KiB,
    // 100 µs of think time, no rate limit.
    let all = (b.message_threads, b.workers, b.runtime_ms, b.operations, b.footprint_kb);
    assert_eq!((all, b.sleep_us, b.rps), ((1, 0, 30_000, 5, 256), 100, 0));
    // The built-in workloads named after the kinds are the same.
    for kind in ["messaging", "pipe", "schbench"] {
        let text = format!("name = \"t\"\n[matrix]\nworkload = [\"{kind}\"]\n");
        let s = parse("t.toml", &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.plan.cells[0].primary().workload, workload(&format!("kind = \"{kind}\"\n")));
        assert_eq!(s.plan.cells[0].primary().workload.kind(), kind);
    }
}

#[test]
fn the_issues_example_reads_as_written() {
    let w = workload(
        "kind = \"messaging\"\ngroups = 4\nloops = 1000\nipc = \"pipe\"\nthreads = true\nmessage_bytes = 64\nfds = 10\n",
    );
    let m = Messaging {
        groups: 4,
        fds: 10,
        loops: 1000,
        ipc: Ipc::Pipe,
        threads: true,
        message_bytes: 64,
    };
    assert_eq!(w, Workload::Messaging(m));
    assert_eq!((w.work_units(), w.count()), (4 * 10 * 10 * 1000, Some(4)));
    let w = workload("kind = \"pipe\"\nloops = 200_000\nthreads = true\npairs = 2\n");
    assert_eq!(w, Workload::Pipe(PipeBench { loops: 200_000, threads: true, pairs: 2 }));
    assert_eq!(w.work_units(), 400_000);
    let w = workload(
        "kind = \"schbench\"\nmessage_threads = 1\nworkers = 2\nruntime_s = 5\noperations = 5\nfootprint_kb = 256\nsleep_us = 0\nrps = 0\n",
    );
    // Every key given, each as the issue wrote it; the ones equal to schbench's defaults too.
    let b = Schbench { workers: 2, runtime_ms: 5000, sleep_us: 0, ..Schbench::DEFAULT };
    assert_eq!(w, Workload::Schbench(b));
    assert_eq!((b.message_threads, b.operations, b.footprint_kb, b.rps), (1, 5, 256, 0));
    let w = workload("kind = \"schbench\"\nruntime_s = 0.25\n");
    assert!(matches!(w, Workload::Schbench(Schbench { runtime_ms: 250, .. })), "{w:?}");
}

#[test]
fn values_out_of_range_are_errors_at_the_value() {
    for (text, col, words) in [
        ("kind = \"messaging\"\ngroups = 0\n", 10, "groups must be between 1"),
        (
            "kind = \"messaging\"\nmessage_bytes = 65537\n",
            17,
            "message_bytes must be between 1 and 65536",
        ),
        ("kind = \"messaging\"\nipc = \"tcp\"\n", 7, "ipc must be \"socket\" or \"pipe\""),
        ("kind = \"messaging\"\nthreads = 4\n", 11, "threads is true"),
        ("kind = \"messaging\"\ngroups = 5000\nfds = 20\n", 10, "more than 100000 tasks"),
        ("kind = \"pipe\"\nloops = 0\n", 9, "loops must be between 1"),
        ("kind = \"pipe\"\npairs = -1\n", 9, "pairs must be between 1"),
        ("kind = \"schbench\"\nruntime_s = 0\n", 13, "runtime_s must be above 0"),
        ("kind = \"schbench\"\nworkers = -1\n", 11, "workers must be between 0"),
        ("kind = \"schbench\"\nmessage_threads = 0\n", 19, "message_threads must be between 1"),
        ("kind = \"schbench\"\noperations = 0\n", 14, "operations must be between 1"),
        ("kind = \"par_write\"\nthreads = true\n", 11, "threads is a count here"),
    ] {
        let e = err(text);
        assert_eq!((e.line, e.col), (6, col), "{text}: {e}");
        assert!(e.message.contains(words), "{text}: {e}");
    }
}

#[test]
fn keys_of_the_other_kinds_are_rejected_both_ways() {
    for (text, key) in [
        ("kind = \"pi\"\nloops = 10\n", "loops"),
        ("kind = \"pipe\"\ngroups = 10\n", "groups"),
        ("kind = \"messaging\"\npairs = 2\n", "pairs"),
        ("kind = \"schbench\"\nloops = 10\n", "loops"),
        ("kind = \"schbench\"\nthreads = true\n", "threads"),
        ("kind = \"messaging\"\nworkers = 2\n", "workers"),
        ("kind = \"pipe\"\nrps = 2\n", "rps"),
        ("kind = \"hash\"\nsleep_us = 2\n", "sleep_us"),
        ("kind = \"messaging\"\niterations = 2\n", "iterations"),
        ("kind = \"udp_flood\"\nfds = 2\n", "fds"),
    ] {
        let e = err(text);
        assert_eq!((e.line, e.col), (6, key.len() + 4), "{e}");
        assert!(e.message.contains(&format!("`{key}` does not apply")), "{e}");
    }
    let e = err("kind = \"schbenc\"\n");
    assert!(e.message.contains("schbench") && e.message.contains("messaging"), "{e}");
}

#[test]
fn processes_sweeps_each_kinds_own_count_with_one_worker() {
    for (kind, count) in [
        (
            "messaging",
            (|w: &Workload| match w {
                Workload::Messaging(m) => m.groups,
                _ => 0,
            }) as fn(&Workload) -> u32,
        ),
        ("pipe", |w| match w {
            Workload::Pipe(p) => p.pairs,
            _ => 0,
        }),
        ("schbench", |w| match w {
            Workload::Schbench(b) => b.message_threads,
            _ => 0,
        }),
    ] {
        let text = format!(
            "name = \"t\"\n[matrix]\nworkload = [\"w\"]\nprocesses = [1, 3]\n[workloads.w]\nkind = \"{kind}\"\n"
        );
        let s = parse("t.toml", &text).unwrap_or_else(|e| panic!("{e}"));
        let cells = &s.plan.cells;
        assert_eq!(cells.len(), 2);
        for (c, n) in cells.iter().zip([1, 3]) {
            let g = c.primary();
            assert_eq!(g.processes, 1, "{kind}: one worker runs the benchmark");
            assert_eq!(count(&g.workload), n, "{kind}");
            assert_eq!((g.count(), c.params().processes), (n, n), "{kind}");
            assert_eq!(c.key, format!("w/other/n{n}"));
        }
    }
    // Not given, the workload's own count stands.
    let s = spec("kind = \"messaging\"\ngroups = 4\n").unwrap();
    let c = &s.plan.cells[0];
    assert_eq!((c.primary().processes, c.params().processes, c.key.as_str()), (1, 4, "w/other/n4"));
}

#[test]
fn scale_shortens_loops_and_runtime_but_not_the_shape() {
    let text = "name = \"t\"\n[matrix]\nworkload = [\"messaging\", \"pipe\", \"schbench\"]\n";
    let mut s = parse("t.toml", text).unwrap_or_else(|e| panic!("{e}"));
    s.plan.scale(0.01);
    let w: Vec<Workload> = s.plan.cells.iter().map(|c| c.primary().workload.clone()).collect();
    assert_eq!(w[0], Workload::Messaging(Messaging { loops: 1, ..Messaging::DEFAULT }));
    assert_eq!(w[1], Workload::Pipe(PipeBench { loops: 10_000, ..PipeBench::DEFAULT }));
    assert_eq!(w[2], Workload::Schbench(Schbench { runtime_ms: 300, ..Schbench::DEFAULT }));
}

#[test]
fn a_benchmark_worker_counts_its_tasks() {
    let s = spec("kind = \"messaging\"\ngroups = 2\nfds = 5\n").unwrap();
    let n = s.plan.cells[0].needs();
    // The worker, 2 x 2 x 5 forked children, the engine's threads.
    assert_eq!((n.processes, n.tasks), (21, 21 + schedlab_plan::ENGINE_THREADS));
    let s = spec("kind = \"messaging\"\ngroups = 2\nfds = 5\nthreads = true\n").unwrap();
    let n = s.plan.cells[0].needs();
    assert_eq!((n.processes, n.tasks), (1, 21 + schedlab_plan::ENGINE_THREADS));
    let s = spec("kind = \"schbench\"\nmessage_threads = 2\nworkers = 3\n").unwrap();
    let n = s.plan.cells[0].needs();
    assert_eq!((n.processes, n.tasks), (1, 1 + 2 * 4 + schedlab_plan::ENGINE_THREADS));
}

#[test]
fn a_command_names_the_parser_of_its_output() {
    use schedlab_plan::OutputParser;
    for (name, p) in [
        ("hackbench", OutputParser::Hackbench),
        ("perf-bench-pipe", OutputParser::PerfBenchPipe),
        ("schbench", OutputParser::Schbench),
    ] {
        let w = workload(&format!("kind = \"command\"\nargv = [\"x\"]\nparse = \"{name}\"\n"));
        assert_eq!(w, Workload::Command { argv: vec!["x".into()], parse: Some(p) });
    }
    let e = err("kind = \"command\"\nargv = [\"x\"]\nparse = \"fio\"\n");
    assert_eq!((e.line, e.col), (7, 9), "{e}");
    assert!(e.message.contains("\"hackbench\", \"perf-bench-pipe\" or \"schbench\""), "{e}");
    let e = err("kind = \"schbench\"\nparse = \"schbench\"\n");
    assert!(e.message.contains("`parse` does not apply"), "{e}");
}

#[test]
fn a_deadline_policy_is_refused_for_a_benchmark_kind() {
    let text = "name = \"t\"\n[matrix]\nworkload = [\"pipe\"]\npolicy = [\"dl\"]\n\
                [policies.dl]\nclass = \"deadline\"\nruntime_us = 100\nperiod_us = 1000\n";
    let e = parse("t.toml", text).expect_err("refused");
    assert!(e.message.contains("SCHED_DEADLINE task may make neither"), "{e}");
    assert!(e.message.contains("\"pipe\" (pipe)"), "{e}");
}
