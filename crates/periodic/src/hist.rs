//! The wake-up latency histogram: creation with fixed bounds (so recording never
//! allocates) and percentiles. Records carry it in `schedlab_model::hist`'s encoding, which
//! analysis merges across tasks and runs.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Smallest latency tracked, in ns.
pub const LATENCY_LOW_NS: u64 = 1;
/// Largest latency tracked (60 s); larger values are counted as overflow and recorded as this.
pub const LATENCY_HIGH_NS: u64 = 60_000_000_000;
/// Significant decimal digits: values are resolved to 0.1 %.
pub const LATENCY_SIGFIG: u8 = 3;

/// A latency histogram with fixed bounds: it never resizes, so recording never allocates.
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LATENCY_LOW_NS, LATENCY_HIGH_NS, LATENCY_SIGFIG)
        .expect("constant, valid bounds")
}

/// Percentiles of a latency histogram, in ns (all 0 when it is empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyPercentiles {
    /// Samples recorded.
    pub samples: u64,
    /// Samples above [`LATENCY_HIGH_NS`] (recorded as that value).
    pub overflow: u64,
    /// Smallest value.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest value.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: f64,
}

impl LatencyPercentiles {
    /// Summarises `h`, with `overflow` samples that were clamped to its top.
    pub fn of(h: &Histogram<u64>, overflow: u64) -> Self {
        if h.is_empty() {
            return LatencyPercentiles { overflow, ..Default::default() };
        }
        LatencyPercentiles {
            samples: h.len(),
            overflow,
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            mean_ns: h.mean(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Histogram<u64> {
        let mut h = new_latency_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        h.record_n(5_000_000, 3).unwrap();
        h
    }

    #[test]
    fn summary_percentiles() {
        let s = LatencyPercentiles::of(&sample(), 2);
        assert_eq!((s.samples, s.overflow), (1003, 2));
        let h = sample();
        assert!(h.equivalent(s.p50_ns, 502_000), "{}", s.p50_ns);
        assert!(h.equivalent(s.p90_ns, 903_000), "{}", s.p90_ns);
        assert!(h.equivalent(s.max_ns, 5_000_000) && h.equivalent(s.min_ns, 1000));
        assert!(
            s.p50_ns <= s.p90_ns
                && s.p90_ns <= s.p99_ns
                && s.p99_ns <= s.p999_ns
                && s.p999_ns <= s.max_ns
        );
        assert_eq!(
            LatencyPercentiles::of(&new_latency_histogram(), 0),
            LatencyPercentiles::default()
        );
    }
}
