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

impl<'a> std::iter::Sum<&'a PreemptedBy> for PreemptedBy {
    fn sum<I: Iterator<Item = &'a PreemptedBy>>(iter: I) -> PreemptedBy {
        iter.fold(PreemptedBy::default(), |a, b| PreemptedBy {
            worker: a.worker + b.worker,
            engine: a.engine + b.engine,
            kernel: a.kernel + b.kernel,
            other: a.other + b.other,
        })
    }
}

/// One worker's figures from the trace. A worker's threads and the children it made count
/// as the worker, as wait4 counts them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerTrace {
    /// The worker's pid.
    pub pid: i32,
    /// Time the trace shows it on a CPU, seconds (trace CPU time: wait4's user + sys lies
    /// between it and it plus `untraced_s`).
    pub run_s: f64,
    /// Time runnable but not running (waiting for a CPU), seconds.
    pub runnable_s: f64,
    /// Time blocked or sleeping, seconds.
    pub blocked_s: f64,
    /// Time before switch-ins the trace did not show (`CellTrace::untraced_switches`) that
    /// it may have spent on the CPU: between the last sign of another task there and the
    /// first of it, seconds; counted as neither run, runnable nor blocked.
    #[serde(default)]
    pub untraced_s: f64,
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
    /// Times the kernel moved it between CPUs (sched_migrate_task; the BPF observer reads
    /// the kernel's count of them, `se.nr_migrations`).
    pub migrations: u64,
    /// CPUs it ran on, ascending.
    pub cpus: Vec<u32>,
    /// Tasks counted: the worker, its threads and children.
    pub tasks: u32,
    /// Its states over the window, slice by slice (the report's state bar); absent in
    /// traces stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<StateBar>,
}

/// Slices a traced window is cut into for the state bars.
pub const STATE_SLICES: usize = 64;

/// A worker's states over a traced window cut into equal slices ([`CellTrace::slice_s`]):
/// for each slice, the shares of it the worker spent running, runnable and blocked, each
/// in fifteenths, one hex digit each (three per slice; a slice before the worker existed
/// or after it ended is `000`). A fifteenth of a 64th of the window is finer than a bar
/// in the report can show, and 5,040 workers keep under 1 MB.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StateBar(pub String);

impl StateBar {
    /// Encodes per-slice nanoseconds (running, runnable, blocked) of slices `slice_ns` long.
    pub fn encode(slices: &[[u64; 3]], slice_ns: u64) -> StateBar {
        let digit = |ns: u64| {
            let share = if slice_ns == 0 { 0.0 } else { ns as f64 / slice_ns as f64 };
            let d = (share.clamp(0.0, 1.0) * 15.0).round() as u32;
            char::from_digit(d, 16).expect("0..=15 is a hex digit")
        };
        StateBar(slices.iter().flat_map(|s| s.map(digit)).collect())
    }

    /// The shares (running, runnable, blocked) of each slice, 0 to 1; None when the text is
    /// not three hex digits per slice.
    pub fn decode(&self) -> Option<Vec<[f64; 3]>> {
        let digits: Option<Vec<f64>> =
            self.0.chars().map(|c| c.to_digit(16).map(|d| d as f64 / 15.0)).collect();
        let digits = digits?;
        (digits.len() % 3 == 0)
            .then(|| digits.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
    }
}

/// One CPU's time over the traced window. Busy and idle can fall short of the window by
/// time around an untraced switch between the idle task and another that the trace cannot
/// give to either.
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
    /// is placed between the CPU's last event from another task and its first from the
    /// task leaving, the time between counted in that worker's `untraced_s`.
    #[serde(default)]
    pub untraced_switches: u64,
    /// Events decoded.
    pub events: u64,
    /// The window the figures cover, seconds.
    pub span_s: f64,
    /// The length of a slice of the workers' state bars, seconds (0 without them).
    #[serde(default)]
    pub slice_s: f64,
    /// What observing cost, when the figures were aggregated in the kernel by schedlab's
    /// BPF programs (absent for figures from a tracefs capture).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<ObserverCost>,
    /// The same cell's figures as the BPF programs aggregated them, when the timeline was
    /// captured too (`--trace=timeline`): the two ways of recording one execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf: Option<Box<CellTrace>>,
}

/// The BPF programs' own cost over a cell (the kernel's run-time statistics).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObserverCost {
    /// Per program.
    pub programs: Vec<ProgramCost>,
    /// Program runs, all programs together (the events observed).
    pub events: u64,
    /// Time in the programs per event, ns.
    pub ns_per_event: f64,
    /// Events per second of the window.
    pub events_per_s: f64,
}

impl ObserverCost {
    /// The cost of these programs over a window of `span_s` seconds.
    pub fn new(programs: Vec<ProgramCost>, span_s: f64) -> ObserverCost {
        let events: u64 = programs.iter().map(|p| p.run_cnt).sum();
        let ns: u64 = programs.iter().map(|p| p.run_time_ns).sum();
        ObserverCost {
            programs,
            events,
            ns_per_event: if events == 0 { 0.0 } else { ns as f64 / events as f64 },
            events_per_s: if span_s > 0.0 { events as f64 / span_s } else { 0.0 },
        }
    }
}

/// One BPF program's run-time statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramCost {
    /// The program (its tracepoint).
    pub name: String,
    /// Times it ran.
    pub run_cnt: u64,
    /// Time it ran, ns.
    pub run_time_ns: u64,
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
        let w = WorkerTrace {
            pid: 7,
            preempted_by: PreemptedBy { worker: 2, engine: 1, kernel: 0, other: 3 },
            ..Default::default()
        };
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
        assert!(
            json.contains("\"preempted_by\":{\"worker\":2,\"engine\":1,\"kernel\":0,\"other\":3}"),
            "{json}"
        );
        assert_eq!(w.preempted_by.total(), 6);
        let both: PreemptedBy = [w.preempted_by, w.preempted_by].iter().sum();
        assert_eq!(both, PreemptedBy { worker: 4, engine: 2, kernel: 0, other: 6 });
        let cell = CellTrace { lost_events: 4, ..Default::default() };
        assert!(serde_json::to_string(&cell).unwrap().contains("\"lost_events\":4"));
        assert_eq!(serde_json::from_str::<WorkerTrace>(&json).unwrap(), w);
    }

    #[test]
    fn observer_cost_is_per_event_and_per_second_and_absent_from_older_traces() {
        let cost = ObserverCost::new(
            vec![
                ProgramCost { name: "sched_switch".into(), run_cnt: 300, run_time_ns: 24_000 },
                ProgramCost { name: "sched_waking".into(), run_cnt: 100, run_time_ns: 4_000 },
            ],
            2.0,
        );
        assert_eq!((cost.events, cost.ns_per_event, cost.events_per_s), (400, 70.0, 200.0));
        assert_eq!(ObserverCost::new(Vec::new(), 0.0).ns_per_event, 0.0);
        // A trace stored before the BPF observer reads back without it, and one without
        // it writes no new keys.
        let old = r#"{"workers":[],"cpus":[],"lost_events":0,"events":5,"span_s":1.0}"#;
        let t: CellTrace = serde_json::from_str(old).unwrap();
        assert_eq!((t.observer.as_ref(), t.bpf.as_ref(), t.events), (None, None, 5));
        let json = serde_json::to_string(&t).unwrap();
        assert!(!json.contains("observer") && !json.contains("bpf"), "{json}");
        let both = CellTrace { observer: Some(cost), bpf: Some(Box::new(t.clone())), ..t };
        let back: CellTrace = serde_json::from_str(&serde_json::to_string(&both).unwrap()).unwrap();
        assert_eq!(back, both);
    }

    #[test]
    fn a_state_bar_round_trips_to_the_nearest_fifteenth() {
        let bar = StateBar::encode(&[[1000, 0, 0], [500, 250, 250], [0, 0, 0], [2000, 0, 0]], 1000);
        assert_eq!(bar.0, "f00844000f00");
        let shares = bar.decode().unwrap();
        assert_eq!(shares.len(), 4);
        assert_eq!(shares[0], [1.0, 0.0, 0.0]);
        assert!(
            (shares[1][0] - 8.0 / 15.0).abs() < 1e-12 && (shares[1][1] - 4.0 / 15.0).abs() < 1e-12
        );
        assert_eq!(shares[3], [1.0, 0.0, 0.0], "more than the slice is clamped to all of it");
        assert_eq!(StateBar("f0".into()).decode(), None);
        assert_eq!(StateBar("fgz".into()).decode(), None);
        let json =
            serde_json::to_string(&WorkerTrace { states: Some(bar.clone()), ..Default::default() })
                .unwrap();
        assert!(json.contains("\"states\":\"f00844000f00\""), "{json}");
        assert!(!serde_json::to_string(&WorkerTrace::default()).unwrap().contains("states"));
    }
}
