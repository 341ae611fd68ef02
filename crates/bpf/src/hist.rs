//! The wake-up latency buckets the BPF program counts in (the same layout as
//! `bucket()` in `bpf/sched.bpf.c`): values below 128 ns exactly, then 64 buckets per power
//! of two up to 2^36 ns, so a bucket is at most 1/64 of its values wide and its middle is
//! within 1/128 of any of them; longer latencies fall in the last bucket.

use schedlab_model::hist::Histogram;

/// Values counted exactly, one bucket each.
pub const EXACT: u64 = 128;
/// Buckets per power of two above [`EXACT`].
pub const SUB: u64 = 64;
/// Buckets in all.
pub const BUCKETS: usize = 1984;

/// The bucket of `v` ns.
pub fn bucket(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let m = 63 - v.leading_zeros() as u64;
    if m > 35 {
        return BUCKETS - 1;
    }
    (EXACT + (m - 7) * SUB + ((v >> (m - 6)) - SUB)) as usize
}

/// The values of bucket `b`: its lowest and its width.
pub fn bounds(b: usize) -> (u64, u64) {
    let b = b as u64;
    if b < EXACT {
        return (b, 1);
    }
    let m = 7 + (b - EXACT) / SUB;
    let mantissa = SUB + (b - EXACT) % SUB;
    (mantissa << (m - 6), 1 << (m - 6))
}

/// The value a bucket stands for: its middle.
pub fn middle(b: usize) -> u64 {
    let (lo, width) = bounds(b);
    lo + width / 2
}

/// The counts of the buckets as a histogram of the model's encoding (each bucket's count
/// recorded at its middle), None when nothing was counted.
pub fn to_hdr(counts: &[u32]) -> Option<Histogram<u64>> {
    let mut h = Histogram::new(3).expect("3 significant figures are allowed");
    for (b, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
        h.record_n(middle(b), n as u64).ok()?;
    }
    (!h.is_empty()).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        // The smallest value with at least q of the values at or below it, as HdrHistogram.
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn every_value_falls_in_the_bucket_that_holds_it() {
        let mut v = 1u64;
        while v < 1 << 36 {
            for x in [v, v + 1, v * 3 / 2, v * 2 - 1].into_iter().filter(|&x| x < 1 << 36) {
                let (lo, width) = bounds(bucket(x));
                assert!(lo <= x && x < lo + width, "{x} in [{lo}, {})", lo + width);
                assert!(width * 64 <= x.max(64), "bucket of {x} is {width} wide");
            }
            v = v * 5 / 4 + 1;
        }
        assert_eq!(bucket(127), 127);
        assert_eq!(bucket(128), 128);
        assert_eq!(bucket((1 << 36) - 1), BUCKETS - 1);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert!(bucket((1 << 36) - 1) < BUCKETS);
    }

    #[test]
    fn p50_p99_of_the_buckets_are_within_one_percent_of_exact() {
        // Latencies spread over five decades, a deterministic sequence.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut samples: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let decades = (x % 1_000_000) as f64 / 200_000.0;
                (200.0 * 10f64.powf(decades)) as u64
            })
            .collect();
        samples.sort_unstable();
        let mut counts = vec![0u32; BUCKETS];
        for &s in &samples {
            counts[bucket(s)] += 1;
        }
        let h = to_hdr(&counts).unwrap();
        assert_eq!(h.len(), samples.len() as u64);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let exact = exact_quantile(&samples, q) as f64;
            let got = h.value_at_quantile(q) as f64;
            assert!((got - exact).abs() <= exact * 0.01, "q{q}: {got} against {exact}");
        }
        let max = *samples.last().unwrap() as f64;
        assert!((h.max() as f64 - max).abs() <= max * 0.01);
        assert!(to_hdr(&vec![0; BUCKETS]).is_none());
    }
}
