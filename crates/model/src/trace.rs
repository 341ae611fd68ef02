//! What a cell repetition's kernel trace says (computed by the trace crate from the
//! scheduler's tracepoints): per worker, where its time went and who took its CPU; per CPU,
//! busy and idle time. The words are `perf sched timehist`'s where the meaning is the same:
//! run time, wait (runnable) time, scheduling delay (woken to running).

use serde::{Deserialize, Serialize};

/// Who took the CPU from a worker that was still runnable (its involuntary switch-outs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptedBy {
    /// Another worker of the cell (or a thread or child of one).
    pub worker: u64,
    /// schedlab's engine (any of its threads, the trace reader included).
    pub engine: u64,
    /// A kernel thread (or the idle task, when the CPU was taken away with nothing to run).
    pub kernel: u64,
    /// Any other process on the machine.
    pub other: u64,
}

impl PreemptedBy {
    /// The switch-outs counted.
    pub fn total(&self) -> u64 {
        self.worker + self.engine + self.kernel + self.other
    }
}

/// One worker's figures from the trace. A worker's threads and the children it made count
/// as the worker, as wait4 counts them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerTrace {
    /// The worker's pid.
    pub pid: i32,
    /// Time on a CPU, seconds (trace CPU time: compare with wait4 user + sys).
    pub run_s: f64,
    /// Time runnable but not running (waiting for a CPU), seconds.
    pub runnable_s: f64,
    /// Time blocked or sleeping, seconds.
    pub blocked_s: f64,
    /// Switch-outs while still runnable (preempted or yielding): wait4's ru_nivcsw counts
    /// the same switches.
    pub involuntary: u64,
    /// Switch-outs to sleep or block (ru_nvcsw counts these and the last one at exit).
    pub voluntary: u64,
    /// Who took the CPU at each involuntary switch-out.
    pub preempted_by: PreemptedBy,
    /// Wake-ups timed (woken, or made runnable for the first time, to running).
    pub wakeups: u64,
    /// Median wake-up latency, µs.
    pub wakeup_p50_us: Option<f64>,
    /// 99th percentile wake-up latency, µs.
    pub wakeup_p99_us: Option<f64>,
    /// Largest wake-up latency, µs.
    pub wakeup_max_us: Option<f64>,
    /// The wake-up latency histogram in ns ([`crate::hist::encode`]), mergeable.
    pub wakeup_hist: Option<String>,
    /// Times the kernel moved it between CPUs (sched_migrate_task).
    pub migrations: u64,
    /// CPUs it ran on, ascending.
    pub cpus: Vec<u32>,
    /// Tasks counted: the worker, its threads and children.
    pub tasks: u32,
}

/// One CPU's time over the traced window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTrace {
    /// The CPU.
    pub cpu: u32,
    /// Time running any task but the idle task, seconds.
    pub busy_s: f64,
    /// Time idle, seconds.
    pub idle_s: f64,
}

/// A cell repetition's trace figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellTrace {
    /// Per worker, in the order the workers were given.
    pub workers: Vec<WorkerTrace>,
    /// Per CPU that the trace saw switch, ascending.
    pub cpus: Vec<CpuTrace>,
    /// Events the kernel's buffers lost (0 when the figures are complete).
    pub lost_events: u64,
    /// Switches the trace did not show (a task left a CPU no traced switch gave it): each
    /// is taken to have happened at the CPU's previous switch.
    #[serde(default)]
    pub untraced_switches: u64,
    /// Events decoded.
    pub events: u64,
    /// The window the figures cover, seconds.
    pub span_s: f64,
}

/// A cell repetition's capture kept as the kernel gave it (the trace crate's SLTRACE1 file,
/// zstd-compressed), with what an export needs to place and name its events. It never
/// travels as JSON: the store keeps it in a blob table, the spool in a file of its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawTrace {
    /// Where and whose the capture is.
    pub meta: RawTraceMeta,
    /// The SLTRACE1 bytes, zstd-compressed.
    pub zstd: Vec<u8>,
}

/// What a kept capture needs besides its bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawTraceMeta {
    /// Bytes of the SLTRACE1 file before compression.
    pub raw_bytes: u64,
    /// The cell's release on the trace's clock (CLOCK_MONOTONIC ns).
    pub release_ns: u64,
    /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC when the capture stopped, ns: Perfetto's clock is
    /// boot time.
    pub boot_offset_ns: i64,
    /// The engine's process id.
    pub engine_pid: i32,
    /// The engine's threads when the capture stopped (the trace reader's among them).
    pub engine_tids: Vec<i32>,
    /// The live dispatchers' pids (periodic cells under edf or dwcs).
    #[serde(default)]
    pub dispatchers: Vec<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_json_has_the_names_the_trace_command_prints() {
        let w = WorkerTrace { pid: 7, preempted_by: PreemptedBy { worker: 2, engine: 1, kernel: 0, other: 3 }, ..Default::default() };
        let json = serde_json::to_string(&w).unwrap();
        for key in [
            "\"pid\":7",
            "\"run_s\"",
            "\"runnable_s\"",
            "\"blocked_s\"",
            "\"involuntary\"",
            "\"migrations\"",
            "\"wakeup_p50_us\"",
            "\"wakeup_p99_us\"",
        ] {
            assert!(json.contains(key), "{key} in {json}");
        }
        assert!(json.contains("\"preempted_by\":{\"worker\":2,\"engine\":1,\"kernel\":0,\"other\":3}"), "{json}");
        assert_eq!(w.preempted_by.total(), 6);
        let cell = CellTrace { lost_events: 4, ..Default::default() };
        assert!(serde_json::to_string(&cell).unwrap().contains("\"lost_events\":4"));
        assert_eq!(serde_json::from_str::<WorkerTrace>(&json).unwrap(), w);
    }
}
