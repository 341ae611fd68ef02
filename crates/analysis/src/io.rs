//! I/O figures of a cell across repetitions (seed 002's bars, plus latency): aggregate
//! throughput, per-file times, per-operation latency percentiles from the workers'
//! histograms, and the device's request counts, each a [`Summary`] over repetitions.

use crate::cells::EMPTY;
use crate::hist::{merge, quantile_us};
use crate::{Domain, Summary};
use schedlab_model::hist::Histogram;
use schedlab_model::{CellParams, CellRecord, IoSummary};
use std::collections::BTreeMap;

/// I/O figures of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct IoStats {
    /// Which cell.
    pub params: CellParams,
    /// Repetitions with I/O results.
    pub reps: usize,
    /// "read" or "write" (of the first I/O worker), and its mode.
    pub op: String,
    /// I/O mode.
    pub mode: String,
    /// The scheduler active on the queue during the cell (read back), as seen in each
    /// repetition; several only if something changed it under the run.
    pub schedulers: Vec<String>,
    /// The device whose queue the scheduler is on.
    pub queue_device: String,
    /// Release to last reap, seconds (the seed's "time to finish").
    pub makespan: Summary,
    /// Bytes of all measured I/O workers / makespan, MB/s (10^6 B).
    pub mb_s: Summary,
    /// Mean time from opening a file to closing it (fsync included), seconds.
    pub file_time: Summary,
    /// Per-operation latency percentiles of the repetition's merged histogram, microseconds.
    pub lat_p50_us: Summary,
    /// 90th percentile.
    pub lat_p90_us: Summary,
    /// 99th percentile.
    pub lat_p99_us: Summary,
    /// 99.9th percentile.
    pub lat_p999_us: Summary,
    /// Maximum.
    pub lat_max_us: Summary,
    /// The pooled latency distribution of all repetitions (p50, p90, p99, p99.9, max in us).
    pub pooled_us: [f64; 5],
    /// Requests completed by the data device (reads + writes).
    pub dev_ios: Summary,
    /// Requests merged by the data device's scheduler (reads + writes).
    pub dev_merges: Summary,
    /// Mean request size at the device, KiB (sectors x 512 / requests).
    pub dev_req_kib: Summary,
    /// Weighted time in queue at the data device, seconds.
    pub dev_queue_s: Summary,
}

/// The cells of a run that did I/O (par_write/par_read workers), in cell order.
pub fn io_stats(records: &[CellRecord]) -> Vec<IoStats> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup && r.status.is_ok()) {
        if r.samples.iter().any(|s| !s.background && s.io().is_some()) {
            by_cell.entry(r.params.cell_id).or_default().push(r);
        }
    }
    by_cell.into_values().filter_map(|reps| summarise(&reps)).collect()
}

fn summarise(reps: &[&CellRecord]) -> Option<IoStats> {
    let first = reps.first()?;
    let ios: Vec<Vec<IoSummary>> = reps
        .iter()
        .map(|r| {
            r.samples.iter().filter(|s| !s.background).filter_map(|s| s.io().cloned()).collect()
        })
        .collect();
    let per = |f: &dyn Fn(usize) -> Option<f64>| -> Summary {
        let xs: Vec<f64> = (0..reps.len()).filter_map(f).filter(|x| x.is_finite()).collect();
        Summary::in_domain(&xs, Domain::NonNegative).unwrap_or(EMPTY)
    };
    let merged: Vec<Option<Histogram<u64>>> =
        ios.iter().map(|rep| merge(rep.iter().map(|io| io.hist.as_str()))).collect();
    let pooled = merge(ios.iter().flatten().map(|io| io.hist.as_str()));
    let lat = |q: f64| per(&|i| merged[i].as_ref().and_then(|h| quantile_us(h, q)));
    let dev = |i: usize| reps[i].io.as_ref().and_then(|io| io.stats.first().cloned());
    let mut schedulers: Vec<String> = Vec::new();
    for r in reps {
        if let Some(s) = r.io.as_ref().map(|io| io.scheduler.clone()) {
            if !schedulers.contains(&s) {
                schedulers.push(s);
            }
        }
    }
    let pq = |q: f64| pooled.as_ref().and_then(|h| quantile_us(h, q)).unwrap_or(f64::NAN);
    let any = ios.iter().flatten().next()?;
    Some(IoStats {
        params: first.params.clone(),
        reps: reps.len(),
        op: any.op.clone(),
        mode: any.mode.clone(),
        schedulers,
        queue_device: first.io.as_ref().map(|io| io.queue_device.clone()).unwrap_or_default(),
        makespan: per(&|i| Some(reps[i].makespan_s)),
        mb_s: per(&|i| {
            let bytes: u64 = ios[i].iter().map(|x| x.bytes).sum();
            (reps[i].makespan_s > 0.0).then(|| bytes as f64 / reps[i].makespan_s / 1e6)
        }),
        file_time: per(&|i| {
            let t: Vec<f64> =
                ios[i].iter().flat_map(|x| x.file_times.iter().map(|f| f.3 - f.2)).collect();
            (!t.is_empty()).then(|| t.iter().sum::<f64>() / t.len() as f64)
        }),
        lat_p50_us: lat(0.5),
        lat_p90_us: lat(0.9),
        lat_p99_us: lat(0.99),
        lat_p999_us: lat(0.999),
        lat_max_us: lat(1.0),
        pooled_us: [pq(0.5), pq(0.9), pq(0.99), pq(0.999), pq(1.0)],
        dev_ios: per(&|i| dev(i).map(|d| (d.read_ios + d.write_ios) as f64)),
        dev_merges: per(&|i| dev(i).map(|d| (d.read_merges + d.write_merges) as f64)),
        dev_req_kib: per(&|i| {
            dev(i).filter(|d| d.read_ios + d.write_ios > 0).map(|d| {
                (d.read_sectors + d.write_sectors) as f64 * 512.0
                    / 1024.0
                    / (d.read_ios + d.write_ios) as f64
            })
        }),
        dev_queue_s: per(&|i| dev(i).map(|d| d.time_in_queue_ms as f64 / 1e3)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::test_record;
    use schedlab_model::{hist, CellIo, DiskStatDelta, Sample};

    fn rec(rep: u32, makespan: f64, lat_ns: &[u64], bytes: u64) -> CellRecord {
        let mut h = hist::Histogram::<u64>::new(3).unwrap();
        for &v in lat_ns {
            h.record(v).unwrap();
        }
        let io = IoSummary {
            op: "write".into(),
            mode: "fsync".into(),
            bytes,
            files: 2,
            hist: hist::encode(&h),
            file_times: vec![(0, 0, 0.0, 1.0), (1, 0, 1.0, 4.0)],
            ..Default::default()
        };
        let params = CellParams {
            cell_id: 0,
            key: "w/other/n1/iosched=bfq".into(),
            iosched: Some("bfq".into()),
            ..Default::default()
        };
        let samples = vec![Sample {
            extra: schedlab_model::Extra {
                detail: Some(schedlab_model::Detail::Io(io)),
                ..Default::default()
            },
            ..Default::default()
        }];
        let stats = vec![DiskStatDelta {
            device: "loop0".into(),
            write_ios: 100,
            write_merges: 10,
            write_sectors: 100 * 256,
            time_in_queue_ms: 500,
            ..Default::default()
        }];
        let io = CellIo {
            device: "loop0".into(),
            queue_device: "loop0".into(),
            scheduler: "bfq".into(),
            tunables: vec![],
            stats,
        };
        CellRecord { io: Some(io), ..test_record(params, rep, makespan, samples) }
    }

    #[test]
    fn throughput_latency_and_device_figures_over_repetitions() {
        let recs = vec![
            rec(0, 2.0, &[1000, 2000, 3000, 4000], 4_000_000),
            rec(1, 4.0, &[5000, 6000, 7000, 8000], 4_000_000),
        ];
        let s = &io_stats(&recs)[0];
        assert_eq!(s.reps, 2);
        assert_eq!(
            (s.op.as_str(), s.mode.as_str(), s.schedulers.as_slice()),
            ("write", "fsync", &["bfq".to_string()][..])
        );
        // 4 MB in 2 s and in 4 s: 2.0 and 1.0 MB/s.
        assert!((s.mb_s.mean - 1.5).abs() < 1e-9);
        // Files took 1 s and 3 s: mean 2 s in both repetitions.
        assert!((s.file_time.mean - 2.0).abs() < 1e-9 && s.file_time.sd.abs() < 1e-12);
        // Medians 2 us and 6 us (HdrHistogram, 3 significant digits: exact at these values).
        assert!((s.lat_p50_us.mean - 4.0).abs() < 0.01, "{:?}", s.lat_p50_us);
        assert!((s.lat_max_us.mean - 6.0).abs() < 0.01);
        // Pooled over both repetitions: 8 values, median 4 us, max 8 us.
        assert!(
            (s.pooled_us[0] - 4.0).abs() < 0.01 && (s.pooled_us[4] - 8.0).abs() < 0.01,
            "{:?}",
            s.pooled_us
        );
        assert_eq!(s.dev_ios.mean, 100.0);
        assert!((s.dev_req_kib.mean - 128.0).abs() < 1e-9);
        assert!((s.dev_queue_s.mean - 0.5).abs() < 1e-9);
    }

    #[test]
    fn runs_without_io_have_no_io_figures() {
        let mut r = rec(0, 1.0, &[1000], 10);
        r.samples[0].extra = schedlab_model::Extra {
            detail: Some(schedlab_model::Detail::Pi { estimate: 3.0 }),
            ..Default::default()
        };
        assert!(io_stats(&[r]).is_empty());
    }
}
