//! What a worker does: the work bodies and their amounts.

use serde::{Deserialize, Serialize};

/// What a worker does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Workload {
    /// Monte-Carlo pi: pure CPU.
    Pi {
        /// Random points drawn.
        iterations: u64,
    },
    /// Read blocks from an input file and write them to an O_SYNC output file.
    Copy {
        /// Bytes copied.
        transfer_bytes: u64,
        /// Bytes per read/write.
        block_bytes: u64,
        /// Size of each worker's random input file.
        input_bytes: u64,
    },
    /// Pi that writes its counters to an O_SYNC file every `write_every` iterations.
    Mixed {
        /// Random points drawn.
        iterations: u64,
        /// Iterations between synchronous writes.
        write_every: u64,
    },
    /// 128-bit CityHash of a 4 KiB random buffer, repeated (the seed's hashing load).
    Hash {
        /// Hashes computed.
        hashes: u64,
    },
    /// A user program, exec'd as an argument vector (never through a shell).
    Command {
        /// Program and arguments; `{index}` and `{dir}` are substituted.
        argv: Vec<String>,
        /// How its output states a benchmark's figures, if it is one of the originals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parse: Option<crate::OutputParser>,
    },
    /// Threads writing files in parallel on the experiment device (seed 002's par_write).
    #[serde(rename = "par_write")]
    ParWrite(ParIo),
    /// Threads reading files made in an unmeasured set-up step.
    #[serde(rename = "par_read")]
    ParRead(ParIo),
    /// A periodic real-time task set: one worker per task (seed 003).
    Periodic(Box<crate::Periodic>),
    /// Disturbance: datagrams sent to itself over 127.0.0.1 as fast as it can (network stack
    /// and softirq load; a sender and a receiver thread).
    #[serde(rename = "udp_flood")]
    UdpFlood {
        /// Datagrams sent.
        packets: u64,
        /// Payload bytes per datagram (1..=65507).
        packet_bytes: u64,
    },
    /// Disturbance: O_DIRECT random reads of the worker's own file, each completed by a
    /// device interrupt.
    #[serde(rename = "io_interrupts")]
    IoInterrupts {
        /// Reads done.
        reads: u64,
        /// Bytes per read (a multiple of 4096).
        read_bytes: u64,
        /// Size of the file the worker makes in its cell directory (a multiple of 4096).
        file_bytes: u64,
    },
    /// hackbench's groups of senders and receivers, run by one worker.
    Messaging(crate::Messaging),
    /// perf's pipe ping-pong, run by one worker.
    Pipe(crate::PipeBench),
    /// schbench's message and worker threads, run by one worker.
    Schbench(crate::Schbench),
}

/// How `par_write` and `par_read` do their I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Plain write(2)/read(2) through the page cache (the seed's mode).
    Buffered,
    /// O_SYNC: every write waits for the device.
    Sync,
    /// O_DIRECT: no page cache; buffer, size and offsets aligned to 4096 bytes.
    Direct,
    /// Buffered writes, fsync(2) before each file is closed (counted in its time).
    Fsync,
}

impl IoMode {
    /// All modes.
    pub const ALL: [IoMode; 4] = [IoMode::Buffered, IoMode::Sync, IoMode::Direct, IoMode::Fsync];
    /// The spec name.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Buffered => "buffered",
            IoMode::Sync => "sync",
            IoMode::Direct => "direct",
            IoMode::Fsync => "fsync",
        }
    }
}

/// The alignment O_DIRECT needs here (logical block size of any device we create).
pub const DIRECT_ALIGN: u64 = 4096;

/// The largest UDP payload over IPv4 (65535 - 8 - 20): `udp_flood`'s largest `packet_bytes`.
pub const MAX_PACKET_BYTES: u64 = 65_507;

/// The shape of a parallel I/O job: `files` files of `file_bytes` each, shared out among
/// `threads` threads (each takes the next file when it finishes one), `buffer_bytes` per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParIo {
    /// Files per worker process.
    pub files: u64,
    /// Bytes per file.
    pub file_bytes: u64,
    /// Threads per worker process.
    pub threads: u32,
    /// Bytes per read/write call.
    pub buffer_bytes: u64,
    /// How the I/O is done.
    pub mode: IoMode,
}

impl ParIo {
    /// The shape with `file_bytes` multiplied by `factor` (files and threads stay: they are
    /// the case's shape); at least one byte, and a multiple of 4096 for O_DIRECT.
    pub fn scaled(&self, factor: f64) -> ParIo {
        let mut b = ((self.file_bytes as f64 * factor).round() as u64).max(1);
        if self.mode == IoMode::Direct {
            b = b.div_ceil(DIRECT_ALIGN).max(1) * DIRECT_ALIGN;
        }
        ParIo { file_bytes: b, ..*self }
    }

    /// Bytes one worker process moves.
    pub fn bytes(&self) -> u64 {
        self.files * self.file_bytes
    }
}

impl Workload {
    /// The kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Pi { .. } => "pi",
            Workload::Copy { .. } => "copy",
            Workload::Mixed { .. } => "mixed",
            Workload::Hash { .. } => "hash",
            Workload::Command { .. } => "command",
            Workload::ParWrite(_) => "par_write",
            Workload::ParRead(_) => "par_read",
            Workload::Periodic(_) => "periodic",
            Workload::UdpFlood { .. } => "udp_flood",
            Workload::IoInterrupts { .. } => "io_interrupts",
            Workload::Messaging(_) => "messaging",
            Workload::Pipe(_) => "pipe",
            Workload::Schbench(_) => "schbench",
        }
    }

    /// True for the workloads that need the experiment's block device.
    pub fn is_io(&self) -> bool {
        matches!(self, Workload::ParWrite(_) | Workload::ParRead(_))
    }

    /// Bytes one worker keeps on the experiment device while it runs (outputs and inputs).
    pub fn device_bytes(&self) -> u64 {
        match self {
            Workload::ParWrite(p) | Workload::ParRead(p) => p.bytes(),
            Workload::Copy { transfer_bytes, input_bytes, .. } => transfer_bytes + input_bytes,
            Workload::Mixed { iterations, write_every } => (iterations / write_every) * 64,
            // Its file lives in the cell directory, which is on the device when there is one.
            Workload::IoInterrupts { file_bytes, .. } => *file_bytes,
            _ => 0,
        }
    }

    /// The workload made `factor` times the work where its figures show it (the `work_scale`
    /// axis): as [`Workload::scaled`], except that a schbench's requests each do `factor`
    /// times the operations (request latency and rps move) instead of running longer.
    pub fn slowed(&self, factor: f64) -> Workload {
        match self {
            Workload::Schbench(b) => Workload::Schbench(crate::Schbench {
                operations: ((b.operations as f64 * factor).round() as u32).max(1),
                ..*b
            }),
            _ => self.scaled(factor),
        }
    }

    /// The workload with every work amount multiplied by `factor` (at least one unit of each).
    pub fn scaled(&self, factor: f64) -> Workload {
        let s = |v: u64| ((v as f64 * factor).round() as u64).max(1);
        match self {
            Workload::Pi { iterations } => Workload::Pi { iterations: s(*iterations) },
            Workload::Copy { transfer_bytes, block_bytes, input_bytes } => Workload::Copy {
                transfer_bytes: s(*transfer_bytes).max(*block_bytes),
                block_bytes: *block_bytes,
                input_bytes: *input_bytes,
            },
            Workload::Mixed { iterations, write_every } => {
                let iterations = s(*iterations);
                // Keep the number of synchronous writes proportional too.
                Workload::Mixed { iterations, write_every: s(*write_every).min(iterations) }
            }
            Workload::Hash { hashes } => Workload::Hash { hashes: s(*hashes) },
            Workload::Command { .. } => self.clone(),
            Workload::ParWrite(p) => Workload::ParWrite(p.scaled(factor)),
            Workload::ParRead(p) => Workload::ParRead(p.scaled(factor)),
            Workload::Periodic(p) => Workload::Periodic(Box::new(p.scaled(factor))),
            Workload::UdpFlood { packets, packet_bytes } => {
                Workload::UdpFlood { packets: s(*packets), packet_bytes: *packet_bytes }
            }
            Workload::IoInterrupts { reads, read_bytes, file_bytes } => Workload::IoInterrupts {
                reads: s(*reads),
                read_bytes: *read_bytes,
                file_bytes: *file_bytes,
            },
            Workload::Messaging(m) => {
                Workload::Messaging(crate::Messaging { loops: s(m.loops), ..*m })
            }
            Workload::Pipe(p) => Workload::Pipe(crate::PipeBench { loops: s(p.loops), ..*p }),
            Workload::Schbench(b) => {
                Workload::Schbench(crate::Schbench { runtime_ms: s(b.runtime_ms), ..*b })
            }
        }
    }

    /// The benchmark kinds' own count, which the `processes` axis sweeps: messaging's
    /// groups, pipe's pairs, schbench's message threads (None for the other kinds, whose
    /// `processes` is their number of worker processes).
    pub fn count(&self) -> Option<u32> {
        match self {
            Workload::Messaging(m) => Some(m.groups),
            Workload::Pipe(p) => Some(p.pairs),
            Workload::Schbench(b) => Some(b.message_threads),
            _ => None,
        }
    }

    /// The workload with its own count ([`Workload::count`]) set to `n`; other kinds are
    /// returned as they are.
    pub fn with_count(&self, n: u32) -> Workload {
        match self {
            Workload::Messaging(m) => Workload::Messaging(crate::Messaging { groups: n, ..*m }),
            Workload::Pipe(p) => Workload::Pipe(crate::PipeBench { pairs: n, ..*p }),
            Workload::Schbench(b) => {
                Workload::Schbench(crate::Schbench { message_threads: n, ..*b })
            }
            other => other.clone(),
        }
    }

    /// Work units one worker performs (iterations or bytes; 1 for a command; datagrams sent
    /// for udp_flood, reads for io_interrupts; messages for messaging, round trips over all
    /// pairs for pipe, the run's milliseconds for schbench, whose requests are counted as
    /// they come).
    pub fn work_units(&self) -> u64 {
        match self {
            Workload::Pi { iterations } | Workload::Mixed { iterations, .. } => *iterations,
            Workload::Hash { hashes } => *hashes,
            Workload::Copy { transfer_bytes, .. } => *transfer_bytes,
            Workload::Command { .. } => 1,
            Workload::ParWrite(p) | Workload::ParRead(p) => p.bytes(),
            // Jobs of the set's first task; a worker reports the jobs of its own task.
            Workload::Periodic(p) => p.tasks.first().map(|t| p.jobs(t)).unwrap_or(1),
            Workload::UdpFlood { packets, .. } => *packets,
            Workload::IoInterrupts { reads, .. } => *reads,
            Workload::Messaging(m) => m.messages(),
            Workload::Pipe(p) => p.loops * p.pairs as u64,
            Workload::Schbench(b) => b.runtime_ms,
        }
    }

    /// The periodic task set, for a periodic workload.
    pub fn periodic(&self) -> Option<&crate::Periodic> {
        match self {
            Workload::Periodic(p) => Some(p),
            _ => None,
        }
    }

    /// Synchronous writes one worker performs.
    pub fn sync_writes(&self) -> u64 {
        match self {
            Workload::Copy { transfer_bytes, block_bytes, .. } => {
                transfer_bytes.div_ceil(*block_bytes)
            }
            Workload::Mixed { iterations, write_every } => iterations / write_every,
            _ => 0,
        }
    }
}
