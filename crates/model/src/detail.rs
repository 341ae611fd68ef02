//! What a worker reports about itself beyond wait4's accounting ([`Extra`], a sample's
//! `extra`), and what its workload measured ([`Detail`]).
//!
//! The store keeps an [`Extra`] as JSON text in the sample's `extra` column, and exports
//! show that text, so the serialised shape is a stored format: every shape an earlier
//! version wrote still reads back (the tests below keep one of each), and fields are
//! declared in the order earlier versions wrote them, so exports print the same text.

use crate::dispatch::WorkerStats;
use crate::sim_params::Params;
use crate::{IoSummary, RtTask};
use serde::{Deserialize, Serialize};

/// A worker's own report and what the engine or simulator adds to it. Every field is
/// absent when unknown (a worker that died before it reported has none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    /// The scheduling class the worker saw itself under after the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Its nice value after the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// The CPU it was on at the end (at exec for a command; the last one it ran on when
    /// simulated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<i32>,
    /// Migrations between CPUs (simulated runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// What its workload measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
    /// Why its setup or work failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A simulated worker: the policy model and the parameters that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimOrigin>,
    /// A periodic task's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt: Option<RtTask>,
    /// A benchmark kind's figures, or those parsed from a command's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<crate::BenchFigures>,
    /// The stored text, when it could not be read as an `Extra` (written by a version that
    /// knew shapes this one does not): kept so that exports still show it.
    #[serde(skip)]
    pub unreadable: Option<String>,
}

impl Extra {
    /// Reads the stored JSON text; text this version cannot read is kept as it is.
    pub fn from_stored(text: &str) -> Extra {
        match serde_json::from_str::<Option<Extra>>(text) {
            Ok(e) => e.unwrap_or_default(),
            Err(_) => Extra { unreadable: Some(text.to_string()), ..Default::default() },
        }
    }

    /// The JSON text to store (or the unreadable text it was read from, unchanged).
    pub fn to_stored(&self) -> String {
        match &self.unreadable {
            Some(t) => t.clone(),
            None => serde_json::to_string(self).expect("an Extra always serialises"),
        }
    }
}

/// Which policy model and parameters simulated a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimOrigin {
    /// The policy model (fifo, rr, fair, edf, dwcs, ...).
    pub policy: String,
    /// The model's parameters.
    pub model: Params,
    /// The worker's CPU demand in ns, when it was its own (taken from a measured run) rather
    /// than its workload's amount at the model's rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_ns: Option<u64>,
}

/// What a workload measured, one shape per kind of workload. Stored untagged (its fields
/// only), so a shape is recognised by its fields: the larger shapes come first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Detail {
    /// `par_write` / `par_read`.
    Io(IoSummary),
    /// A periodic task that ran its own job loop.
    Periodic(PeriodicDetail),
    /// A periodic task driven by the live dispatcher.
    Dispatched(DispatchedDetail),
    /// The `udp_flood` disturbance.
    Flood(FloodOutcome),
    /// The `io_interrupts` disturbance.
    Irq(IrqOutcome),
    /// A `command` workload: the program it exec'd.
    Exec {
        /// The program.
        exec: String,
    },
    /// `mixed`: pi with synchronous writes.
    Mixed {
        /// The pi estimate.
        estimate: f64,
        /// Synchronous writes made.
        sync_writes: u64,
    },
    /// `pi`.
    Pi {
        /// The pi estimate.
        estimate: f64,
    },
    /// `hash`: the digest of the last hash, so the work cannot be optimised away.
    Hash {
        /// 128-bit digest in hex.
        digest: String,
    },
    /// `copy`, and simulated workers: synchronous writes made.
    Writes {
        /// Synchronous writes made.
        sync_writes: u64,
    },
}

impl Detail {
    /// Synchronous writes made (`mixed`, `copy`, simulated), if the workload makes them.
    pub fn sync_writes(&self) -> Option<u64> {
        match self {
            Detail::Mixed { sync_writes, .. } | Detail::Writes { sync_writes } => {
                Some(*sync_writes)
            }
            _ => None,
        }
    }
}

/// What a periodic worker's own job loop reports beside its task results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeriodicDetail {
    /// Wake-up latencies beyond the histogram's range.
    pub latency_overflow: u64,
    /// Its memory was locked (mlockall) for the loop.
    pub memory_locked: bool,
    /// Jobs skipped because they could start only after their deadline.
    pub skipped: u64,
    /// Jobs that started after their release because the previous one was still running.
    pub late_starts: u64,
    /// Job bodies that failed (a read error, ...).
    pub body_errors: u64,
    /// Minor page faults inside the loop.
    pub minor_faults_in_loop: u64,
    /// Major page faults inside the loop.
    pub major_faults_in_loop: u64,
}

/// What a worker driven by the live dispatcher reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchedDetail {
    /// The worker side's own tally (jobs done, hand-off latency).
    pub dispatch: WorkerStats,
    /// Its memory was locked for the run.
    pub memory_locked: bool,
}

/// What a flood did (one round, or the running total of a repeating worker).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloodOutcome {
    /// Datagrams the sender handed to the kernel.
    pub sent: u64,
    /// Datagrams the receiver got.
    pub received: u64,
    /// sent - received: datagrams the kernel dropped (full receive buffer).
    pub dropped: u64,
    /// Payload bytes received.
    pub bytes: u64,
    /// Payload bytes per datagram.
    pub packet_bytes: u64,
}

impl FloodOutcome {
    /// Adds a round to the running total.
    pub fn add(&mut self, o: &FloodOutcome) {
        self.sent += o.sent;
        self.received += o.received;
        self.dropped += o.dropped;
        self.bytes += o.bytes;
        self.packet_bytes = o.packet_bytes;
    }
}

/// What the disturbance's reads did (one round, or the running total of a repeating worker).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqOutcome {
    /// Reads done.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
    /// True if the reads bypassed the page cache (O_DIRECT).
    pub direct: bool,
    /// Why O_DIRECT was not used, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    type ExtraCheck = fn(&Extra) -> bool;

    /// One `extra` of each shape earlier versions stored, as they wrote it, with the detail
    /// it must read as.
    fn stored_shapes() -> Vec<(&'static str, ExtraCheck)> {
        vec![
            (r#"{"policy":"SCHED_OTHER","nice":0,"cpu":1,"detail":{"estimate":3.14}}"#, |e| {
                matches!(e.detail, Some(Detail::Pi { .. }))
            }),
            (
                r#"{"policy":"SCHED_FIFO","nice":0,"cpu":0,"detail":{"digest":"0123456789abcdef0123456789abcdef"}}"#,
                |e| matches!(e.detail, Some(Detail::Hash { .. })),
            ),
            (
                r#"{"policy":"SCHED_OTHER","nice":5,"cpu":1,"detail":{"estimate":3.1,"sync_writes":4}}"#,
                |e| matches!(e.detail, Some(Detail::Mixed { sync_writes: 4, .. })),
            ),
            (r#"{"policy":"SCHED_BATCH","nice":0,"cpu":1,"detail":{"sync_writes":5}}"#, |e| {
                matches!(e.detail, Some(Detail::Writes { sync_writes: 5 }))
            }),
            (r#"{"policy":"SCHED_OTHER","nice":0,"cpu":1,"detail":{"exec":"/bin/false"}}"#, |e| {
                matches!(e.detail, Some(Detail::Exec { .. }))
            }),
            (
                r#"{"policy":"SCHED_OTHER","nice":0,"cpu":0,"detail":{"op":"write","mode":"direct","bytes":4096,"files":1,"threads":2,"ops":1,"mb_s":12.5,"lat_ns":{"p50":1.0,"p90":2.0,"p99":3.0,"p999":4.0,"max":5.0,"mean":2.5,"count":1},"hist":"","file_times":[[0,1,0.0,0.5]],"thread_bytes":[4096,0],"fsync_s":0.0}}"#,
                |e| matches!(&e.detail, Some(Detail::Io(io)) if io.file_times.len() == 1),
            ),
            (
                r#"{"policy":"SCHED_OTHER","nice":0,"cpu":1,"detail":{"sent":10,"received":9,"dropped":1,"bytes":900,"packet_bytes":100}}"#,
                |e| matches!(e.detail, Some(Detail::Flood(FloodOutcome { dropped: 1, .. }))),
            ),
            (
                r#"{"policy":"SCHED_OTHER","nice":0,"cpu":1,"detail":{"reads":3,"bytes":12288,"direct":false,"fallback":"tmpfs"}}"#,
                |e| matches!(&e.detail, Some(Detail::Irq(IrqOutcome { fallback: Some(_), .. }))),
            ),
            (
                r#"{"policy":"SCHED_FIFO","nice":0,"cpu":1,"detail":{"latency_overflow":0,"memory_locked":true,"skipped":2,"late_starts":1,"body_errors":0,"minor_faults_in_loop":0,"major_faults_in_loop":0},"rt":{"c_ns":1,"t_ns":10,"d_ns":10,"x":0,"y":1,"jobs":5,"met":5,"misses":0,"fixed_windows":5,"fixed_violations":0,"sliding_windows":5,"sliding_violations":0,"time_in_violation_pct":0.0,"response_mean_ns":2.0,"response_max_ns":3,"lateness_max_ns":-7,"cpu_mean_ns":1.0,"wakeup":null,"wakeup_hist":null,"handoff":null,"handoff_hist":null,"source":"worker"}}"#,
                |e| {
                    matches!(e.detail, Some(Detail::Periodic(PeriodicDetail { skipped: 2, .. })))
                        && e.rt.as_ref().is_some_and(|t| t.jobs == 5)
                },
            ),
            (
                r#"{"policy":"SCHED_OTHER","nice":0,"cpu":1,"detail":{"dispatch":{"jobs_done":7,"jobs_abandoned":1,"exit":"shutdown","handoff":{"samples":8,"p50_ns":1,"p99_ns":2,"max_ns":3,"mean_ns":1.5},"handoff_hist":""},"memory_locked":false}}"#,
                |e| matches!(&e.detail, Some(Detail::Dispatched(d)) if d.dispatch.jobs_done == 7),
            ),
            (r#"{"policy":"SCHED_OTHER","nice":0,"cpu":1,"error":"setup: no such file"}"#, |e| {
                e.error.is_some() && e.detail.is_none()
            }),
            (
                r#"{"policy":"fifo","nice":0,"cpu":null,"migrations":0,"detail":{"sync_writes":0},"sim":{"policy":"fifo","model":{"cpus":2,"ns_per_iteration":2.5,"ns_per_hash":0.0,"write_cpu_ns":1000,"write_service_ns":40000,"rr_quantum_ns":100000000,"fair_slice_ns":3500000,"switch_cost_ns":1700,"migration_cost_ns":15000,"setup_ns":0,"rt_share":0.95}}}"#,
                |e| e.cpu.is_none() && e.sim.as_ref().is_some_and(|s| s.model.cpus == 2),
            ),
            ("{}", |e| *e == Extra::default()),
            ("null", |e| *e == Extra::default()),
        ]
    }

    /// The JSON value of `text` without null members (an absent field is stored as nothing).
    fn without_nulls(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => serde_json::Value::Object(
                m.into_iter()
                    .filter(|(_, x)| !x.is_null())
                    .map(|(k, x)| (k, without_nulls(x)))
                    .collect(),
            ),
            other => other,
        }
    }

    #[test]
    fn every_shape_an_earlier_version_stored_reads_typed_and_stores_the_same_values() {
        for (text, is) in stored_shapes() {
            let e = Extra::from_stored(text);
            assert!(e.unreadable.is_none(), "not read: {text}");
            assert!(is(&e), "read as {e:?}: {text}");
            let again: serde_json::Value = serde_json::from_str(&e.to_stored()).unwrap();
            let was: serde_json::Value = serde_json::from_str(text).unwrap();
            // RtTask's null members are its own (kept); only absent fields of Extra drop.
            if was.is_object() {
                assert_eq!(without_nulls(again), without_nulls(was), "{text}");
            }
            assert_eq!(Extra::from_stored(&e.to_stored()), e, "round trip of {text}");
        }
    }

    #[test]
    fn text_this_version_cannot_read_is_kept_as_it_was() {
        let text = r#"{"detail":{"something":"new"},"policy":7}"#;
        let e = Extra::from_stored(text);
        assert_eq!(e.unreadable.as_deref(), Some(text));
        assert_eq!(e.to_stored(), text);
    }
}
