use super::*;
use crate::cells::test_record;
use crate::Metric;
use schedlab_model::{CellStatus, Extra, LatencyPercentiles, RpsPercentiles, Sample};

fn figures(source: &str, time: f64, p99: f64) -> BenchFigures {
    BenchFigures {
        source: source.into(),
        time_s: Some(time),
        wakeup_us: Some(LatencyPercentiles { p50: 1.0, p90: 2.0, p99, p999: 9.0, samples: 10 }),
        rps: Some(RpsPercentiles { p20: 5.0, p50: 6.0, p90: 7.0, samples: 3 }),
        ..Default::default()
    }
}

fn rec(cell: u32, rep: u32, benches: &[Option<BenchFigures>]) -> CellRecord {
    let params = CellParams { cell_id: cell, key: format!("k{cell}"), ..Default::default() };
    let samples = benches
        .iter()
        .enumerate()
        .map(|(i, b)| Sample {
            index: i as u32,
            extra: Extra { bench: b.clone(), ..Default::default() },
            ..Default::default()
        })
        .collect();
    test_record(params, rep, 1.0, samples)
}

#[test]
fn names_are_unique_and_the_issues() {
    let mut names: Vec<&str> = FIGURES.iter().map(|f| f.name).collect();
    assert_eq!(
        names,
        [
            "time_s",
            "us_per_op",
            "ops_per_s",
            "wakeup_p50_us",
            "wakeup_p90_us",
            "wakeup_p99_us",
            "wakeup_p999_us",
            "request_p50_us",
            "request_p90_us",
            "request_p99_us",
            "request_p999_us",
            "rps_p20",
            "rps_p50",
            "rps_p90"
        ]
    );
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), FIGURES.len());
}

#[test]
fn a_repetitions_value_is_the_mean_of_the_workers_that_state_it() {
    let r = rec(
        0,
        0,
        &[Some(figures("hackbench", 2.0, 10.0)), None, Some(figures("hackbench", 4.0, 30.0))],
    );
    assert_eq!(TIME.of_repetition(&r), Some(3.0));
    assert_eq!(WAKEUP_P99.of_repetition(&r), Some(20.0));
    assert_eq!(US_PER_OP.of_repetition(&r), None, "not stated");
    let failed = CellRecord { status: CellStatus::Failed, ..r.clone() };
    assert_eq!(TIME.of_repetition(&failed), None);
    let warm = CellRecord { warmup: true, ..r };
    assert_eq!(TIME.of_repetition(&warm), None);
}

#[test]
fn cells_without_figures_are_left_out_and_the_rest_summarised() {
    let recs = vec![
        rec(0, 0, &[None]),
        rec(1, 0, &[Some(figures("messaging", 1.9, 10.0))]),
        rec(1, 1, &[Some(figures("messaging", 2.1, 10.0))]),
        rec(1, 2, &[Some(figures("messaging", 2.0, 10.0))]),
    ];
    let s = bench_stats(&recs);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].params.cell_id, s[0].source.as_str(), s[0].reps), (1, "messaging", 3));
    assert_eq!(s[0][&TIME].n, 3);
    assert!((s[0][&TIME].mean - 2.0).abs() < 1e-12);
    assert!(s[0][&TIME].interval().is_ok(), "three repetitions give an interval");
    assert_eq!(s[0][&RPS_P50].mean, 6.0);
    assert_eq!(s[0][&US_PER_OP].n, 0);
    assert_eq!(s[0].iter().count(), FIGURES.len());
}

#[test]
fn every_figure_is_a_compare_metric_by_its_name() {
    for f in FIGURES {
        let m = Metric::parse(f.name).unwrap_or_else(|| panic!("{}", f.name));
        assert_eq!((m.name(), m.label()), (f.name, f.description));
    }
    let r = rec(0, 0, &[Some(figures("schbench", 2.0, 40.0))]);
    assert_eq!(Metric::parse("wakeup_p99_us").unwrap().value(&r), Some(40.0));
    assert_eq!(Metric::parse("time_s").unwrap().value(&r), Some(2.0));
}
