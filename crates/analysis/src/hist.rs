//! Latency histograms stored in records (`schedlab_model::hist`): merging the encoded
//! histograms of many workers, percentiles in microseconds, and a cumulative distribution.

use schedlab_model::hist::{self, Histogram};

/// The union of the encoded histograms (those that do not decode are skipped); None when
/// none decodes. The union auto-resizes, so histograms of any bounds merge.
pub(crate) fn merge<'a>(encoded: impl IntoIterator<Item = &'a str>) -> Option<Histogram<u64>> {
    let mut out: Option<Histogram<u64>> = None;
    for h in encoded.into_iter().filter_map(hist::decode) {
        let union =
            out.get_or_insert_with(|| Histogram::new(3).expect("3 significant digits is valid"));
        // An auto-resizing histogram accepts any value, so adding cannot fail.
        let _ = union.add(&h);
    }
    out
}

/// The `q` quantile (0..=1) of a histogram of nanoseconds, in microseconds; None when empty.
pub(crate) fn quantile_us(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3)
}

/// The quantiles a distribution is drawn at: every 1% up to 99%, then every 0.1% up to
/// 99.9%, every 0.01% up to 99.99%, and the maximum, so the tail is not lost.
fn cdf_quantiles() -> impl Iterator<Item = f64> {
    let body = (0..100).map(|i| i as f64 / 100.0);
    let tail = (1..10).map(|i| 0.99 + i as f64 / 1000.0);
    let far = (1..10).map(|i| 0.999 + i as f64 / 10_000.0);
    body.chain(tail).chain(far).chain(std::iter::once(1.0))
}

/// The cumulative distribution of a histogram of nanoseconds: (value in microseconds,
/// fraction of values at or below it), at [`cdf_quantiles`]; empty when the histogram is.
pub(crate) fn cdf_us(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    cdf_quantiles().map(|q| (h.value_at_quantile(q) as f64 / 1e3, q)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(values: &[u64]) -> String {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        hist::encode(&h)
    }

    #[test]
    fn merging_takes_the_union_and_skips_what_does_not_decode() {
        let (a, b) = (encoded(&[1000, 2000]), encoded(&[3000, 4000, 250_000]));
        let h = merge([a.as_str(), "not base64!", b.as_str()]).unwrap();
        assert_eq!(h.len(), 5);
        // Sorted 1, 2, 3, 4, 250 us: the median is 3 us, the maximum 250 us (to 3 digits).
        assert!((quantile_us(&h, 0.5).unwrap() - 3.0).abs() < 0.005);
        assert!((quantile_us(&h, 1.0).unwrap() - 250.0).abs() < 0.5);
        assert!(merge(["???"]).is_none());
        assert!(merge([]).is_none());
    }

    #[test]
    fn the_distribution_rises_from_the_minimum_to_the_maximum() {
        let h =
            merge([encoded(&(1..=1000).map(|i| i * 1000).collect::<Vec<_>>()).as_str()]).unwrap();
        let c = cdf_us(&h);
        assert_eq!(c.len(), 100 + 9 + 9 + 1);
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1), "monotone");
        // Values 1..1000 us: 1 us at q 0, 500 us at q 0.5, 1000 us at q 1 (to 3 digits).
        assert!((c[0].0 - 1.0).abs() < 0.01 && c[0].1 == 0.0, "{:?}", c[0]);
        assert!((c[50].0 - 500.0).abs() < 0.5 && c[50].1 == 0.5, "{:?}", c[50]);
        assert!((c[c.len() - 1].0 - 1000.0).abs() < 1.0 && c[c.len() - 1].1 == 1.0);
        assert!(cdf_us(&Histogram::new(3).unwrap()).is_empty());
    }
}
