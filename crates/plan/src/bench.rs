//! The field's own benchmarks as workload kinds: hackbench's messaging, perf's pipe
//! ping-pong and schbench. One schedlab worker runs the whole benchmark; its tasks are its
//! threads or forked children, so every setting made on the worker is theirs too.

use serde::{Deserialize, Serialize};

/// How messaging's senders reach their receivers (hackbench's default, or its `-p`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ipc {
    /// A UNIX stream socket pair per sender and receiver.
    Socket,
    /// A pipe per sender and receiver.
    Pipe,
}

impl Ipc {
    /// Both, in spec order.
    pub const ALL: [Ipc; 2] = [Ipc::Socket, Ipc::Pipe];
    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            Ipc::Socket => "socket",
            Ipc::Pipe => "pipe",
        }
    }
}

/// hackbench (`perf bench sched messaging`): `groups` groups of `fds` senders and `fds`
/// receivers; each sender sends `loops` messages of `message_bytes` to every receiver of
/// its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Messaging {
    /// Groups (`-g`); the `processes` axis sweeps it.
    pub groups: u32,
    /// Senders and receivers per group (`-f`).
    pub fds: u32,
    /// Messages each sender sends to each receiver (`-l`).
    pub loops: u64,
    /// Sockets or pipes (`-p`).
    pub ipc: Ipc,
    /// Threads of the worker instead of forked children (`-T`).
    pub threads: bool,
    /// Bytes per message (`-s`).
    pub message_bytes: u32,
}

impl Messaging {
    /// Messages sent in the whole run.
    pub fn messages(&self) -> u64 {
        self.groups as u64 * self.fds as u64 * self.fds as u64 * self.loops
    }
}

/// `perf bench sched pipe`: two tasks passing a word back and forth over two pipes, `loops`
/// round trips; `pairs` such pairs run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipeBench {
    /// Round trips per pair (`-l`).
    pub loops: u64,
    /// Threads of the worker instead of a forked child (`-T`).
    pub threads: bool,
    /// Independent pairs (1 in perf); the `processes` axis sweeps it.
    pub pairs: u32,
}

/// schbench: message threads post requests to their worker threads through futexes; a
/// worker wakes, does its request (a think-time sleep and `operations` multiplications of
/// matrices over `footprint_kb`) and reports back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schbench {
    /// Message threads (`-m`); the `processes` axis sweeps it.
    pub message_threads: u32,
    /// Worker threads per message thread (`-t`); 0: the worker's CPUs divided among the
    /// message threads, rounded up (schbench's default).
    pub workers: u32,
    /// How long it runs, milliseconds (`-r`, given in seconds).
    pub runtime_ms: u64,
    /// Matrix multiplications per request (`-n`).
    pub operations: u32,
    /// Size of the matrices' data, KiB (`-F`).
    pub footprint_kb: u32,
    /// Think time slept by the worker per request, µs (`-s`).
    pub sleep_us: u32,
    /// Requests per second over all workers (`-R`); 0: as fast as they go.
    pub rps: u32,
}

impl Messaging {
    /// hackbench's defaults: 10 groups of 20 and 20, 100 loops, 100-byte messages over
    /// sockets, processes.
    pub const DEFAULT: Messaging = Messaging {
        groups: 10,
        fds: 20,
        loops: 100,
        ipc: Ipc::Socket,
        threads: false,
        message_bytes: 100,
    };
}

impl PipeBench {
    /// perf's defaults: 1,000,000 round trips between two processes.
    pub const DEFAULT: PipeBench = PipeBench { loops: 1_000_000, threads: false, pairs: 1 };
}

impl Schbench {
    /// schbench's defaults: one message thread, a worker per CPU, 30 s, 5 operations over
    /// 256 KiB, 100 µs think time, no rate limit.
    pub const DEFAULT: Schbench = Schbench {
        message_threads: 1,
        workers: 0,
        runtime_ms: 30_000,
        operations: 5,
        footprint_kb: 256,
        sleep_us: 100,
        rps: 0,
    };

    /// Worker threads per message thread on a worker allowed `cpus` CPUs.
    pub fn workers_on(&self, cpus: u32) -> u32 {
        match self.workers {
            0 => cpus.max(1).div_ceil(self.message_threads.max(1)),
            n => n,
        }
    }
}

/// Which original's output a `command` workload prints, to be parsed into the benchmark
/// figures after it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputParser {
    /// rt-tests' `hackbench` (`Time:`), or `perf bench sched messaging` (`Total time:`).
    #[serde(rename = "hackbench")]
    Hackbench,
    /// `perf bench sched pipe` (`usecs/op`, `ops/sec`).
    #[serde(rename = "perf-bench-pipe")]
    PerfBenchPipe,
    /// schbench: its percentiles on stderr, or its `--json` on stdout.
    #[serde(rename = "schbench")]
    Schbench,
}

impl OutputParser {
    /// Every parser, in spec order.
    pub const ALL: [OutputParser; 3] =
        [OutputParser::Hackbench, OutputParser::PerfBenchPipe, OutputParser::Schbench];
    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            OutputParser::Hackbench => "hackbench",
            OutputParser::PerfBenchPipe => "perf-bench-pipe",
            OutputParser::Schbench => "schbench",
        }
    }
}

/// The tasks one benchmark worker runs: (processes, tasks), the worker itself included.
/// schbench's automatic worker count is taken as one per message thread here (the CPUs a
/// worker gets are known only when it runs).
pub fn bench_tasks(w: &crate::Workload) -> Option<(u64, u64)> {
    let (spawned, threads) = match w {
        crate::Workload::Messaging(m) => (2 * m.groups as u64 * m.fds as u64, m.threads),
        // The worker is one end of the first pair.
        crate::Workload::Pipe(p) => (2 * p.pairs as u64 - 1, p.threads),
        crate::Workload::Schbench(b) => {
            (b.message_threads as u64 * (1 + b.workers.max(1) as u64), true)
        }
        _ => return None,
    };
    Some(if threads { (1, 1 + spawned) } else { (1 + spawned, 1 + spawned) })
}
