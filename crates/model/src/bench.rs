//! The figures of the field's benchmarks (hackbench, perf bench sched pipe, schbench), as
//! the native kinds measure them and as a parsed command's output states them: one shape,
//! so an original and its native kind are compared name for name.

use serde::{Deserialize, Serialize};

/// One run's benchmark figures; each is absent when the benchmark does not state it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchFigures {
    /// Where the figures come from: `messaging`, `pipe` or `schbench` (a native kind), or
    /// the parser of a command's output (`hackbench`, `perf-bench-pipe`, `schbench`).
    pub source: String,
    /// Messaging: the time from the start signal to the last task's end, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    /// Pipe: µs per round trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_per_op: Option<f64>,
    /// Pipe: round trips per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_s: Option<f64>,
    /// schbench: wake-up latency percentiles, µs (p50, p90, p99, p99.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup_us: Option<LatencyPercentiles>,
    /// schbench: request latency percentiles, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_us: Option<LatencyPercentiles>,
    /// schbench: requests-per-second percentiles over its one-second samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps: Option<RpsPercentiles>,
    /// schbench: requests completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// schbench: requests per second over the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_rps: Option<f64>,
    /// A parsed command: what it printed, stdout then stderr (each at most
    /// [`KEPT_OUTPUT_BYTES`], its end kept), whether it parsed or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// The most of each of a parsed command's streams kept in [`BenchFigures::output`].
pub const KEPT_OUTPUT_BYTES: usize = 32 << 10;

/// The four latency percentiles schbench prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyPercentiles {
    /// 50th percentile.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile (schbench's headline).
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Samples behind them.
    pub samples: u64,
}

/// The three rate percentiles schbench prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RpsPercentiles {
    /// 20th percentile.
    pub p20: f64,
    /// 50th percentile (schbench's headline).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// One-second samples behind them.
    pub samples: u64,
}
