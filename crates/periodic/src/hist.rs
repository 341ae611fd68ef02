//! The wake-up latency histogram: creation with fixed bounds (so recording never
//! allocates), percentiles, and a compact serialisable form that can be merged.
//!
//! **Serialised form** ([`HistogramBuckets`]): the histogram's bounds and precision plus the
//! list of non-empty buckets as `[value_ns, count]` pairs, where `value_ns` is the highest
//! value equivalent to the bucket (what HdrHistogram's recorded iterator reports).
//! Recording `count` copies of `value_ns` into a histogram of the same bounds and precision
//! rebuilds it exactly, so analysis can merge the histograms of many tasks and runs and take
//! percentiles of the union. It is plain JSON, readable without an HdrHistogram library.

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
    Histogram::new_with_bounds(LATENCY_LOW_NS, LATENCY_HIGH_NS, LATENCY_SIGFIG).expect("constant, valid bounds")
}

/// A histogram as bounds, precision and its non-empty buckets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramBuckets {
    /// Lowest trackable value.
    pub low: u64,
    /// Highest trackable value.
    pub high: u64,
    /// Significant decimal digits.
    pub sigfig: u8,
    /// `[value, count]` for each non-empty bucket, in increasing value.
    pub buckets: Vec<[u64; 2]>,
}

/// Why buckets could not be turned back into a histogram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    /// Bounds or precision are invalid.
    #[error("invalid histogram bounds {low}..{high} with {sigfig} significant digits")]
    Bounds {
        /// Lowest trackable value.
        low: u64,
        /// Highest trackable value.
        high: u64,
        /// Significant digits.
        sigfig: u8,
    },
    /// A bucket value is outside the bounds.
    #[error("bucket value {0} is outside the histogram's bounds")]
    Value(u64),
    /// Two histograms have different bounds or precision.
    #[error("histograms with different bounds or precision cannot be merged")]
    Mismatch,
}

impl HistogramBuckets {
    /// The buckets of `h`.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        let buckets = h.iter_recorded().map(|v| [v.value_iterated_to(), v.count_since_last_iteration()]).collect();
        HistogramBuckets { low: h.low(), high: h.high(), sigfig: h.sigfig(), buckets }
    }

    /// Total count.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b[1]).sum()
    }

    /// Rebuilds the histogram.
    pub fn to_histogram(&self) -> Result<Histogram<u64>, HistogramError> {
        let mut h = Histogram::new_with_bounds(self.low, self.high, self.sigfig).map_err(|_| HistogramError::Bounds {
            low: self.low,
            high: self.high,
            sigfig: self.sigfig,
        })?;
        for &[value, count] in &self.buckets {
            h.record_n(value, count).map_err(|_| HistogramError::Value(value))?;
        }
        Ok(h)
    }

    /// Merges several serialised histograms of the same bounds and precision into one.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a HistogramBuckets>) -> Result<Option<Histogram<u64>>, HistogramError> {
        let mut merged: Option<Histogram<u64>> = None;
        for part in parts {
            let h = part.to_histogram()?;
            match merged.as_mut() {
                None => merged = Some(h),
                Some(m) if (m.low(), m.high(), m.sigfig()) == (h.low(), h.high(), h.sigfig()) => {
                    m.add(&h).map_err(|_| HistogramError::Mismatch)?;
                }
                Some(_) => return Err(HistogramError::Mismatch),
            }
        }
        Ok(merged)
    }
}

/// Percentiles of a latency histogram, in ns (all 0 when it is empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
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

impl LatencySummary {
    /// Summarises `h`, with `overflow` samples that were clamped to its top.
    pub fn of(h: &Histogram<u64>, overflow: u64) -> Self {
        if h.is_empty() {
            return LatencySummary { overflow, ..Default::default() };
        }
        LatencySummary {
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
    fn buckets_round_trip_exactly() {
        let h = sample();
        let b = HistogramBuckets::from_histogram(&h);
        assert_eq!(b.count(), 1003);
        assert!(b.buckets.windows(2).all(|w| w[0][0] < w[1][0]), "increasing values");
        let json = serde_json::to_string(&b).unwrap();
        let back: HistogramBuckets = serde_json::from_str(&json).unwrap();
        let h2 = back.to_histogram().unwrap();
        assert_eq!(h2.len(), h.len());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h2.value_at_quantile(q), h.value_at_quantile(q), "q = {q}");
        }
        assert_eq!(HistogramBuckets::from_histogram(&h2), b, "a second round trip changes nothing");
    }

    #[test]
    fn merge_is_the_union() {
        let mut a = new_latency_histogram();
        let mut b = new_latency_histogram();
        a.record_n(10_000, 90).unwrap();
        b.record_n(1_000_000, 10).unwrap();
        let parts = [HistogramBuckets::from_histogram(&a), HistogramBuckets::from_histogram(&b)];
        let m = HistogramBuckets::merge(&parts).unwrap().unwrap();
        assert_eq!(m.len(), 100);
        assert!(m.equivalent(m.value_at_quantile(0.5), 10_000));
        assert!(m.equivalent(m.value_at_quantile(0.95), 1_000_000));
        assert!(HistogramBuckets::merge(&[]).unwrap().is_none());
        let other = HistogramBuckets { sigfig: 2, ..parts[0].clone() };
        assert_eq!(HistogramBuckets::merge([&parts[0], &other]).unwrap_err(), HistogramError::Mismatch);
    }

    #[test]
    fn bad_buckets_are_refused() {
        let b = HistogramBuckets { low: 1, high: 1000, sigfig: 3, buckets: vec![[5000, 1]] };
        assert_eq!(b.to_histogram().unwrap_err(), HistogramError::Value(5000));
        let b = HistogramBuckets { low: 1, high: 1000, sigfig: 9, buckets: vec![] };
        assert!(matches!(b.to_histogram(), Err(HistogramError::Bounds { .. })));
    }

    #[test]
    fn summary_percentiles() {
        let s = LatencySummary::of(&sample(), 2);
        assert_eq!((s.samples, s.overflow), (1003, 2));
        let h = sample();
        assert!(h.equivalent(s.p50_ns, 502_000), "{}", s.p50_ns);
        assert!(h.equivalent(s.p90_ns, 903_000), "{}", s.p90_ns);
        assert!(h.equivalent(s.max_ns, 5_000_000) && h.equivalent(s.min_ns, 1000));
        assert!(s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns && s.p99_ns <= s.p999_ns && s.p999_ns <= s.max_ns);
        assert_eq!(LatencySummary::of(&new_latency_histogram(), 0), LatencySummary::default());
    }
}
