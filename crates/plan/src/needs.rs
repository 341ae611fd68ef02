//! What a cell adds to the machine while it runs: its processes, tasks (every process and
//! thread takes a pid and counts against kernel.threads-max and RLIMIT_NPROC) and an
//! estimate of its private memory, from measured per-worker figures (see the constants).

use crate::{Cell, Workload};

/// The engine's own threads while a cell runs: itself, the report collector, the progress
/// bar's ticker.
pub const ENGINE_THREADS: u64 = 3;
/// Private memory of one ordinary worker (pi, mixed, copy, hash, command), KiB: measured at
/// most 0.85 MiB RssAnon + 0.1 MiB page tables (debug build; release 0.33 MiB RssAnon) on
/// the 2-CPU test VM, sampled from /proc/PID/status while workers ran; about doubled. The
/// binary's code is shared page cache and not counted per worker.
pub const WORKER_KIB: u64 = 2048;
/// A periodic worker or a live dispatcher, KiB: measured 1.3 MiB RssAnon (debug build,
/// memory locked), about tripled; job records come on top.
pub const RT_WORKER_KIB: u64 = 4096;
/// Per job a periodic worker or dispatcher keeps: the 72-byte record and its encoding in the
/// report, bytes.
pub const JOB_BYTES: u64 = 256;
/// Each extra thread of a worker: its touched stack and its kernel stack, KiB.
pub const THREAD_KIB: u64 = 256;
/// A udp_flood worker's two sockets' buffers in the kernel (2 x net.core.*mem_default,
/// 208 KiB each), KiB.
pub const SOCKET_KIB: u64 = 512;

/// What one cell adds to the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CellNeeds {
    /// Worker and dispatcher processes.
    pub processes: u64,
    /// Tasks: their threads and the engine's.
    pub tasks: u64,
    /// Estimated private memory, KiB.
    pub mem_kib: u64,
}

/// Tasks and estimated KiB of one worker of `w` (for a periodic set: of all its workers and
/// dispatchers, as (processes, tasks, KiB)).
fn workload_needs(w: &Workload, processes: u64) -> CellNeeds {
    let plain = |threads: u64, kib: u64| CellNeeds {
        processes,
        tasks: processes * threads,
        mem_kib: processes * kib,
    };
    match w {
        Workload::Pi { .. }
        | Workload::Mixed { .. }
        | Workload::Hash { .. }
        | Workload::Command { .. } => plain(1, WORKER_KIB),
        Workload::Copy { block_bytes, .. } => plain(1, WORKER_KIB + block_bytes.div_ceil(1024)),
        Workload::ParWrite(p) | Workload::ParRead(p) => {
            let t = p.threads as u64;
            plain(1 + t, WORKER_KIB + t * (THREAD_KIB + p.buffer_bytes.div_ceil(1024)))
        }
        Workload::UdpFlood { packet_bytes, .. } => {
            plain(2, WORKER_KIB + THREAD_KIB + SOCKET_KIB + 2 * packet_bytes.div_ceil(1024))
        }
        Workload::IoInterrupts { read_bytes, .. } => {
            plain(1, WORKER_KIB + read_bytes.div_ceil(1024))
        }
        Workload::Messaging(_) | Workload::Pipe(_) | Workload::Schbench(_) => {
            let (procs, tasks) = crate::bench_tasks(w).expect("a benchmark kind");
            // Children and threads share the worker's pages; each has its stacks and page
            // tables. Messaging's sockets may each hold a full buffer.
            let sockets = match w {
                Workload::Messaging(m) if m.ipc == crate::Ipc::Socket => {
                    m.groups as u64 * m.fds as u64 * SOCKET_KIB / 2
                }
                Workload::Schbench(b) => {
                    b.message_threads as u64 * b.workers.max(1) as u64 * 3 * b.footprint_kb as u64
                }
                _ => 0,
            };
            CellNeeds {
                processes: processes * procs,
                tasks: processes * tasks,
                mem_kib: processes * (WORKER_KIB + (tasks - 1) * THREAD_KIB + sockets),
            }
        }
        Workload::Periodic(p) => {
            let jobs: u64 = p.tasks.iter().map(|t| p.jobs(t)).sum();
            let workers = p.tasks.len() as u64;
            let mut n = CellNeeds {
                processes: workers,
                tasks: workers,
                mem_kib: workers * RT_WORKER_KIB + (jobs * JOB_BYTES).div_ceil(1024),
            };
            if p.scheduler.dispatched() {
                // One dispatcher per CPU the set uses, each tallying its tasks' jobs.
                let d = (p.cpus.len().max(1) as u64).min(workers);
                n.processes += d;
                n.tasks += d;
                n.mem_kib += d * RT_WORKER_KIB + (jobs * JOB_BYTES).div_ceil(1024);
            }
            n
        }
    }
}

impl Cell {
    /// The tasks and estimated memory this cell adds while it runs (the engine's threads
    /// included).
    pub fn needs(&self) -> CellNeeds {
        let mut n = CellNeeds { tasks: ENGINE_THREADS, ..Default::default() };
        for g in &self.groups {
            let w = workload_needs(&g.workload, g.processes as u64);
            n.processes += w.processes;
            n.tasks += w.tasks;
            n.mem_kib += w.mem_kib;
        }
        n
    }
}
