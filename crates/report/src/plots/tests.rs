//! Figures from the mock pa3 run: which charts, what they hold, and that the PNG shows them.

use super::*;
use crate::testdata::{lab1_records, pa3_records, COUNTS, RT_SCHEDULERS};
use schedlab_analysis::cell_stats;

fn pa3_charts() -> Vec<Chart> {
    let stats = cell_stats(&pa3_records(1.0));
    charts(&FigureInput { stats: &stats, cpus: 4, io: &[], rt: &[], traces: &[], sets: &[] })
}

/// Decodes a PNG into (width, height, RGB bytes).
pub(crate) fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info().unwrap();
    let mut buf = vec![0; dec.output_buffer_size().unwrap()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Pixels within a small distance of `c`.
pub(crate) fn count_colour(rgb: &[u8], c: (u8, u8, u8)) -> usize {
    rgb.chunks_exact(3)
        .filter(|p| p[0].abs_diff(c.0) < 12 && p[1].abs_diff(c.1) < 12 && p[2].abs_diff(c.2) < 12)
        .count()
}

#[test]
fn one_chart_per_workload_and_figure() {
    let charts = pa3_charts();
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    let mut want = Vec::new();
    for fig in ["wall", "involuntary", "voluntary", "throughput", "cpu"] {
        for w in ["cpu", "io", "mixed"] {
            want.push(format!("{fig}-{w}"));
        }
    }
    assert_eq!(ids, want);
    for c in &charts {
        assert_eq!(c.categories, COUNTS.map(|n| n.to_string()).to_vec(), "{}", c.id);
        let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["other", "fifo prio 98", "rr prio 98"], "{}", c.id);
        assert!(c.series.iter().all(|s| s.points.len() == 3), "{}", c.id);
    }
}

#[test]
fn points_are_means_with_their_intervals() {
    let charts = pa3_charts();
    let wall_cpu = &charts[0];
    // cpu/other/n10: per-process wall 1.284 s x (0.97, 1.00, 1.03) over the repetitions.
    let p = wall_cpu.series[0].points[0];
    assert_eq!(p.x, 0);
    assert!((p.y - 1.284).abs() < 1e-9, "{p:?}");
    // sd = 0.03 * 1.284; on the log scale h = t(0.975, 2) * (sd / mean) / sqrt(3) = 4.302653 * 0.03 / 1.732051,
    // and the bar runs from mean e^-h to mean e^h.
    let h = 4.302_652_730 * 0.03 / 3f64.sqrt();
    assert!((p.hi - p.y * h.exp()).abs() < 1e-9 && (p.lo - p.y * (-h).exp()).abs() < 1e-9, "{p:?}");
    assert_eq!(p.no_bar, None);
    let cpu = charts.iter().find(|c| c.id == "cpu-cpu").unwrap();
    assert_eq!(cpu.reference, Some((400.0, "all 4 CPUs".to_string())));
}

#[test]
fn cells_without_repetitions_are_left_out() {
    let mut recs = pa3_records(1.0);
    for r in recs.iter_mut().filter(|r| r.params.key == "cpu/fifo:98/n50") {
        r.status = schedlab_model::CellStatus::Failed;
        r.samples.clear();
    }
    let stats = cell_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 4, io: &[], rt: &[], traces: &[], sets: &[] });
    let fifo = &charts[0].series[1];
    assert_eq!(fifo.points.iter().map(|p| p.x).collect::<Vec<_>>(), vec![0, 2]);
}

#[test]
fn a_run_with_nothing_measured_has_no_figures() {
    assert!(charts(&FigureInput { stats: &[], cpus: 2, io: &[], rt: &[], traces: &[], sets: &[] })
        .is_empty());
}

#[test]
fn png_shows_every_series_and_text() {
    for c in pa3_charts().iter().filter(|c| c.id == "wall-cpu" || c.id == "involuntary-io") {
        let bytes = png(c).unwrap();
        if let Some(dir) = std::env::var_os("SCHEDLAB_DEBUG_PNG") {
            std::fs::write(std::path::Path::new(&dir).join(format!("{}.png", c.id)), &bytes)
                .unwrap();
        }
        let (w, h, rgb) = decode(&bytes);
        assert_eq!((w, h), (WIDTH, HEIGHT));
        for (i, series) in c.series.iter().enumerate() {
            let n = count_colour(&rgb, PALETTE[series.colour.unwrap_or(i)]);
            assert!(n > 150, "{}: series {i} has only {n} pixels of its colour", c.id);
        }
        // Titles, ticks and legend are drawn in black with the embedded font.
        let dark = rgb.chunks_exact(3).filter(|p| p.iter().all(|v| *v < 60)).count();
        assert!(dark > 800, "{}: only {dark} dark pixels: is text drawn?", c.id);
    }
}

#[test]
fn svg_holds_the_title_labels_and_lines() {
    let c = &pa3_charts()[0];
    let s = svg(c).unwrap();
    assert!(s.starts_with("<svg"), "{}", &s[..80]);
    assert!(s.contains("Wall time per process: cpu (pi)"));
    // plotters writes each text on its own line.
    assert!(s.contains(">\n500\n</text>") && s.contains(">\nfifo prio 98\n</text>"), "{s}");
    for (r, g, b) in PALETTE.iter().take(3) {
        assert!(s.contains(&format!("#{r:02X}{g:02X}{b:02X}")), "colour {r},{g},{b} missing");
    }
}

#[test]
fn a_single_count_and_repetition_still_draws() {
    let recs: Vec<_> =
        pa3_records(1.0).into_iter().filter(|r| r.params.processes == 10 && r.rep == 0).collect();
    let stats = cell_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 0, io: &[], rt: &[], traces: &[], sets: &[] });
    assert_eq!(charts.len(), 15);
    let c = &charts[0];
    assert_eq!(c.categories, vec!["10"]);
    let p = c.series[0].points[0];
    assert_eq!(p.lo, p.hi, "one repetition has no interval");
    assert_eq!(p.no_bar, Some(NoInterval::FewValues));
    assert!(charts.iter().all(|c| c.reference.is_none()), "no CPU count, no ceiling");
    let (_, _, rgb) = decode(&png(c).unwrap());
    assert!(count_colour(&rgb, PALETTE[0]) > 20);
}

#[test]
fn slugs_are_file_name_safe() {
    assert_eq!(slug("My Load/2"), "my_load_2");
    assert_eq!(slug("io-bound"), "io-bound");
}

fn lab1_charts() -> Vec<Chart> {
    let stats = cell_stats(&lab1_records());
    charts(&FigureInput { stats: &stats, cpus: 2, io: &[], rt: &[], traces: &[], sets: &[] })
}

fn chart<'a>(charts: &'a [Chart], id: &str) -> &'a Chart {
    charts.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no chart {id}"))
}

/// (series name, means in x order).
fn means(c: &Chart) -> Vec<(&str, Vec<f64>)> {
    c.series.iter().map(|s| (s.name.as_str(), s.points.iter().map(|p| p.y).collect())).collect()
}

fn assert_close(got: &[(&str, Vec<f64>)], want: &[(&str, Vec<f64>)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((gn, gv), (wn, wv)) in got.iter().zip(want) {
        assert_eq!(gn, wn);
        assert_eq!(gv.len(), wv.len(), "{gn}: {gv:?}");
        for (g, w) in gv.iter().zip(wv) {
            assert!((g - w).abs() < 1e-9, "{gn}: got {gv:?}, want {wv:?}");
        }
    }
}

const LAB1_SERIES: [&str; 4] =
    ["unpinned, no cgroup", "unpinned, weight 200", "spread, no cgroup", "spread, weight 200"];

#[test]
fn a_fairness_run_gets_charts_per_background_setting_with_a_series_per_affinity_and_weight() {
    let charts = lab1_charts();
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    let mut want: Vec<String> = Vec::new();
    for fig in ["wall", "involuntary", "voluntary", "throughput", "cpu", "jain"] {
        want.extend([format!("{fig}-hash"), format!("{fig}-hash-8_bg")]);
    }
    want.extend(
        [
            "completion-hash-n4",
            "completion-hash-n8",
            "completion-hash-n4-8_bg",
            "completion-hash-n8-8_bg",
        ]
        .map(String::from),
    );
    want.push("share-hash-8_bg".into());
    assert_eq!(ids, want);
    for c in &charts {
        let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, LAB1_SERIES, "{}", c.id);
    }
    assert_eq!(chart(&charts, "wall-hash-8_bg").title, "Wall time per process: hash, with 8 bg");
    assert_eq!(
        chart(&charts, "completion-hash-n8-8_bg").title,
        "Completion times: 8 hash, with 8 bg"
    );
}

#[test]
fn jain_means_are_the_hand_computed_indices() {
    let charts = lab1_charts();
    let jain = chart(&charts, "jain-hash-8_bg");
    assert_eq!(jain.categories, ["4", "8"]);
    assert_eq!(jain.reference, Some((1.0, "perfectly fair".to_string())));
    // Throughputs 1 : 1/2 unpinned, 1 : 4/5 spread, in equal halves, the same in every repetition.
    let (unpinned, spread) = (2.25 / 2.5, 3.24 / 3.28);
    let want = [
        ("unpinned, no cgroup", vec![unpinned; 2]),
        ("unpinned, weight 200", vec![unpinned; 2]),
        ("spread, no cgroup", vec![spread; 2]),
        ("spread, weight 200", vec![spread; 2]),
    ];
    assert_close(&means(jain), &want);
    assert!((unpinned - 0.9).abs() < 1e-12 && (spread - 0.987_804_878).abs() < 1e-9);
    let p = jain.series[0].points[0];
    assert!(
        (p.hi - p.lo).abs() < 1e-12,
        "equal indices in every repetition have no interval: {p:?}"
    );
    let alone = chart(&charts, "jain-hash");
    assert_close(&means(alone), &LAB1_SERIES.map(|n| (n, vec![1.0, 1.0])));
}

#[test]
fn completion_times_are_sorted_within_repetitions_with_intervals_over_them() {
    let charts = lab1_charts();
    let c = chart(&charts, "completion-hash-n4-8_bg");
    assert_eq!(c.categories, ["1", "2", "3", "4"]);
    // Even hashers take base seconds, odd ones (1 + skew) times that; base 2 without weight, 1.5 with.
    let want = [
        ("unpinned, no cgroup", vec![2.0, 2.0, 4.0, 4.0]),
        ("unpinned, weight 200", vec![1.5, 1.5, 3.0, 3.0]),
        ("spread, no cgroup", vec![2.0, 2.0, 2.5, 2.5]),
        ("spread, weight 200", vec![1.5, 1.5, 1.875, 1.875]),
    ];
    assert_close(&means(c), &want);
    // The repetitions are 0.97, 1, 1.03 times the mean: sd 0.03 y, so h = t(0.975, 2) 0.03 / sqrt(3) on the log scale.
    let p = c.series[0].points[3];
    let h = 4.302_652_730 * 0.03 / 3f64.sqrt();
    assert!((p.hi - p.y * h.exp()).abs() < 1e-9 && (p.lo - p.y * (-h).exp()).abs() < 1e-9, "{p:?}");
    assert_eq!(chart(&charts, "completion-hash-n8").categories.len(), 8);
}

#[test]
fn group_share_is_the_measured_groups_cpu_share_only_where_it_competes() {
    let charts = lab1_charts();
    assert!(
        charts.iter().all(|c| c.id != "share-hash"),
        "a group alone has all of the CPU: nothing to show"
    );
    let share = chart(&charts, "share-hash-8_bg");
    // n hashers x 1 CPU-s against 8 spinners x 1 CPU-s, or x 1/2 at weight 200.
    let want = [
        ("unpinned, no cgroup", vec![4.0 / 12.0, 8.0 / 16.0]),
        ("unpinned, weight 200", vec![4.0 / 8.0, 8.0 / 12.0]),
        ("spread, no cgroup", vec![4.0 / 12.0, 8.0 / 16.0]),
        ("spread, weight 200", vec![4.0 / 8.0, 8.0 / 12.0]),
    ];
    assert_close(&means(share), &want);
}

#[test]
fn error_bars_of_noisy_repetitions_stay_above_zero_and_within_bounds() {
    use schedlab_analysis::Domain;
    // A time over three repetitions far apart, whose t interval went below zero, and Jain's
    // index and a share near their bounds, whose t intervals left [0, 1].
    for (xs, d, max) in [
        ([0.2, 0.25, 1.2], Domain::NonNegative, f64::INFINITY),
        ([0.99, 0.93, 1.0], Domain::FRACTION, 1.0),
        ([0.02, 0.09, 0.01], Domain::FRACTION, 1.0),
    ] {
        let v = Summary::in_domain(&xs, d).unwrap();
        let t = Summary::of(&xs).unwrap();
        assert!(t.ci_low < 0.0 || t.ci_high > max, "the symmetric interval left the domain: {t:?}");
        let p = point(0, &v);
        assert!(p.lo >= 0.0 && p.hi <= max && p.lo <= p.y && p.y <= p.hi, "{xs:?}: {p:?}");
    }
}

#[test]
fn points_without_an_error_bar_are_named_in_the_caption() {
    // pa3 at n = 2: every point lacks its bar, and the caption says why.
    let recs: Vec<_> = pa3_records(1.0).into_iter().filter(|r| r.rep < 2).collect();
    let stats = cell_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 4, io: &[], rt: &[], traces: &[], sets: &[] });
    for c in &charts {
        assert!(
            c.series
                .iter()
                .flat_map(|s| &s.points)
                .all(|p| p.lo == p.y && p.hi == p.y && p.no_bar.is_some()),
            "{}",
            c.id
        );
        assert!(
            c.caption.contains("No error bar on any point: fewer than 3 repetitions (n < 3)."),
            "{}",
            c.caption
        );
    }
    // Three repetitions: bars everywhere, no note.
    assert!(pa3_charts().iter().all(|c| !c.caption.contains("No error bar")));
    // One cell short of repetitions: the note counts it.
    let recs: Vec<_> = pa3_records(1.0)
        .into_iter()
        .filter(|r| r.params.key != "cpu/other/n10" || r.rep < 2)
        .collect();
    let stats = cell_stats(&recs);
    let c = &charts_of(&stats)[0];
    assert!(
        c.caption.contains("No error bar on 1 of the 9 points: fewer than 3 repetitions"),
        "{}",
        c.caption
    );
}

fn charts_of(stats: &[schedlab_analysis::CellStats]) -> Vec<Chart> {
    charts(&FigureInput { stats, cpus: 4, io: &[], rt: &[], traces: &[], sets: &[] })
}

#[test]
fn runs_that_do_not_study_fairness_get_no_fairness_figures() {
    let stats = cell_stats(&pa3_records(1.0));
    assert!(!measures_fairness(&stats));
    // A real pa3 run stores its one group: unpinned, no cgroup.
    let mut recs = pa3_records(1.0);
    for r in &mut recs {
        let p = &r.params;
        let g = schedlab_model::GroupParams {
            name: "main".into(),
            processes: p.processes,
            affinity: "all".into(),
            ..Default::default()
        };
        r.params.groups = vec![g];
    }
    let stats = cell_stats(&recs);
    assert!(!measures_fairness(&stats));
    let ids: Vec<String> =
        charts(&FigureInput { stats: &stats, cpus: 4, io: &[], rt: &[], traces: &[], sets: &[] })
            .into_iter()
            .map(|c| c.id)
            .collect();
    assert_eq!(ids.len(), 15, "{ids:?}");
    // Pinning the processes of one cell makes it a fairness study.
    recs[0].params.groups[0].affinity = "spread".into();
    let stats = cell_stats(&recs);
    assert!(measures_fairness(&stats));
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 4, io: &[], rt: &[], traces: &[], sets: &[] });
    assert!(
        charts.iter().any(|c| c.id == "jain-cpu")
            && charts.iter().any(|c| c.id == "completion-cpu-n500")
    );
    assert!(charts.iter().all(|c| !c.id.starts_with("share")), "one group: no share");
}

#[test]
fn fairness_pngs_show_every_series() {
    let charts = lab1_charts();
    for id in ["jain-hash-8_bg", "completion-hash-n8-8_bg", "share-hash-8_bg"] {
        let c = chart(&charts, id);
        let bytes = png(c).unwrap();
        if let Some(dir) = std::env::var_os("SCHEDLAB_DEBUG_PNG") {
            std::fs::write(std::path::Path::new(&dir).join(format!("{id}.png")), &bytes).unwrap();
        }
        let (_, _, rgb) = decode(&bytes);
        for (i, c) in PALETTE.iter().take(4).enumerate() {
            let n = count_colour(&rgb, *c);
            assert!(n > 150, "{id}: series {i} has only {n} pixels of its colour");
        }
        let s = svg(c).unwrap();
        assert!(
            s.contains(">\nspread,\n</text>") && s.contains(">\nweight 200\n</text>"),
            "legend labels wrap: {id}"
        );
    }
}

/// An I/O-scheduler sweep: two cases x two schedulers x two repetitions, known times.
fn io_records() -> Vec<schedlab_model::CellRecord> {
    use schedlab_model::{hist, CellIo, CellParams, CellRecord, IoSummary, Sample};
    let mut out = Vec::new();
    for (cell, (workload, sched, makespan)) in
        [("big", "none", 2.0), ("big", "bfq", 4.0), ("small", "none", 1.0), ("small", "bfq", 3.0)]
            .into_iter()
            .enumerate()
    {
        for rep in 0..2u32 {
            let mut h = hist::Histogram::<u64>::new(3).unwrap();
            h.record(1000 * (cell as u64 + 1)).unwrap();
            let io = IoSummary {
                op: "write".into(),
                mode: "fsync".into(),
                bytes: 8_000_000,
                files: 1,
                hist: hist::encode(&h),
                ..Default::default()
            };
            out.push(CellRecord {
                params: CellParams {
                    cell_id: cell as u32,
                    key: format!("{workload}/other/n1/iosched={sched}"),
                    workload: workload.into(),
                    workload_kind: "par_write".into(),
                    policy: "other".into(),
                    class: "other".into(),
                    processes: 1,
                    iosched: Some(sched.into()),
                    ..Default::default()
                },
                rep,
                makespan_s: makespan + rep as f64 * 0.1,
                samples: vec![Sample {
                    wall_s: makespan,
                    extra: schedlab_model::Extra {
                        detail: Some(schedlab_model::Detail::Io(io)),
                        ..Default::default()
                    },
                    ..Default::default()
                }],
                io: Some(CellIo {
                    scheduler: sched.into(),
                    queue_device: "loop0".into(),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
    out
}

#[test]
fn an_io_sweep_gets_the_io_figures_and_no_per_process_count_figures() {
    let recs = io_records();
    let stats = cell_stats(&recs);
    let io = schedlab_analysis::io_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 2, io: &io, rt: &[], traces: &[], sets: &[] });
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["io-time", "io-mbs", "io-p50", "io-p99", "io-p999"]);
    let time = &charts[0];
    assert_eq!(time.categories, ["none", "bfq"]);
    let names: Vec<&str> = time.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["big", "small"]);
    // big under bfq: 4.0 and 4.1 s.
    let p = time.series[0].points[1];
    assert_eq!(p.x, 1);
    assert!((p.y - 4.05).abs() < 1e-9, "{p:?}");
    assert_eq!(
        (p.lo, p.hi, p.no_bar),
        (p.y, p.y, Some(NoInterval::FewValues)),
        "two repetitions: no error bar"
    );
    assert!(
        time.caption.contains("No error bar on any point: fewer than 3 repetitions"),
        "{}",
        time.caption
    );
    // Median latency of "small" under bfq (the fourth cell) is 4 us.
    assert!((charts[2].series[1].points[1].y - 4.0).abs() < 0.01);
    // Without I/O statistics, nothing is drawn for these cells.
    assert!(super::charts(&FigureInput {
        stats: &stats,
        cpus: 2,
        io: &[],
        rt: &[],
        traces: &[],
        sets: &[]
    })
    .is_empty());
}

fn rt_charts(workloads: &[&str], utilisations: &[Option<f64>]) -> Vec<Chart> {
    let recs = crate::testdata::rt_records(workloads, utilisations);
    let stats = cell_stats(&recs);
    let rt = schedlab_analysis::rt_stats(&recs);
    charts(&FigureInput { stats: &stats, cpus: 2, io: &[], rt: &rt, traces: &[], sets: &[] })
}

fn names(c: &Chart) -> Vec<&str> {
    c.series.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn a_utilisation_sweep_gets_lines_per_scheduler_and_a_wakeup_distribution_per_utilisation() {
    let charts = rt_charts(&["set"], &[Some(0.25), Some(0.5)]);
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    // No per-process-count figures: every cell has the set's 4 processes.
    assert_eq!(
        ids,
        ["rt-violations", "rt-violation-time", "rt-misses", "rt-wakeup-u0_25", "rt-wakeup-u0_5"]
    );
    let v = &charts[0];
    assert_eq!(
        (v.kind, v.title.as_str()),
        (ChartKind::Lines, "Average violations per process against utilisation")
    );
    assert_eq!(v.categories, ["0.25", "0.5"]);
    assert!(v.caption.contains("Sliding windows are drawn"), "{}", v.caption);
    // 2k + r sliding violations per task in repetition r, k = (scheduler + 1) (utilisation + 1).
    let want = [
        ("other", vec![2.5, 4.5]),
        ("fifo-rm", vec![4.5, 8.5]),
        ("edf", vec![6.5, 12.5]),
        ("dwcs", vec![8.5, 16.5]),
    ];
    assert_close(&means(v), &want);
    // Repetitions 2k and 2k + 1: the t interval 2.5 ± 6.35 reached below zero; at n = 2 no bar is drawn.
    let p = v.series[0].points[0];
    assert_eq!((p.lo, p.hi, p.no_bar), (2.5, 2.5, Some(NoInterval::FewValues)), "{p:?}");
    let misses = chart(&charts, "rt-misses");
    assert_close(&means(misses)[..1], &[("other", vec![5.5, 10.5])]);
    assert!(misses.series.iter().flat_map(|s| &s.points).all(|p| p.lo >= 0.0 && p.hi <= 100.0));
    assert_close(&means(chart(&charts, "rt-violation-time"))[..1], &[("other", vec![2.5, 4.5])]);
    // Wake-ups where the tasks timed their own releases, hand-offs where the dispatcher's
    // workers timed them, nothing where neither was recorded (edf here).
    let w = chart(&charts, "rt-wakeup-u0_5");
    assert_eq!(
        (w.kind, names(w)),
        (ChartKind::Cdf { log_x: true }, vec!["other", "fifo-rm", "dwcs (hand-off)"])
    );
    assert_eq!(w.title, "Scheduling latency, utilisation 0.5");
    // dwcs at 0.5: k = 8, hand-offs 8..160 us.
    assert!(
        (w.series[2].curve.last().unwrap().0 - 160.0).abs() < 0.2,
        "{:?}",
        w.series[2].curve.last()
    );
    // fifo-rm at 0.5: k = 4, wake-ups 4..80 us; the pooled median is the 10th of 20 values.
    let curve = &w.series[1].curve;
    assert!((curve[50].0 - 40.0).abs() < 0.1 && curve[50].1 == 0.5, "{:?}", curve[50]);
    assert!((curve.last().unwrap().0 - 80.0).abs() < 0.1);
    assert!(w.caption.contains("fifo-rm 160 over 2 repetitions"), "{}", w.caption);
}

#[test]
fn a_single_utilisation_gets_bars_per_scheduler() {
    let charts = rt_charts(&["set"], &[Some(0.5)]);
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["rt-violations", "rt-violation-time", "rt-misses", "rt-wakeup-u0_5"]);
    let m = chart(&charts, "rt-misses");
    assert_eq!(
        (m.kind, m.title.as_str()),
        (ChartKind::Bars, "Deadline miss ratio per scheduler, utilisation 0.5")
    );
    assert_eq!(m.categories, RT_SCHEDULERS);
    assert_close(&means(m), &[("set", vec![5.5, 10.5, 15.5, 20.5])]);
    assert_eq!(m.series[0].points.iter().map(|p| p.x).collect::<Vec<_>>(), [0, 1, 2, 3]);
    // A listed set (no utilisation axis) is drawn the same way, without the value.
    let charts = rt_charts(&["set"], &[None]);
    assert_eq!(charts[0].title, "Average violations per process per scheduler");
    assert_eq!(charts.last().unwrap().id, "rt-wakeup");
}

#[test]
fn several_workloads_get_a_series_per_scheduler_and_workload() {
    let charts = rt_charts(&["a", "b"], &[Some(0.25), Some(0.5)]);
    let v = chart(&charts, "rt-violations");
    assert_eq!(v.series.len(), 8);
    assert_eq!(&names(v)[..3], ["other, a", "fifo-rm, a", "edf, a"]);
    assert_eq!(names(v)[4], "other, b");
    let w = chart(&charts, "rt-wakeup-b-u0_25");
    assert_eq!(w.title, "Scheduling latency: b, utilisation 0.25");
    assert_eq!(charts.iter().filter(|c| c.id.starts_with("rt-wakeup")).count(), 4);
}

#[test]
fn runs_without_periodic_sets_get_no_real_time_figures() {
    let recs = pa3_records(1.0);
    assert!(schedlab_analysis::rt_stats(&recs).is_empty());
    assert!(pa3_charts().iter().all(|c| !c.id.starts_with("rt-")));
}

#[test]
fn real_time_pngs_show_every_series() {
    let charts = rt_charts(&["set"], &[Some(0.25), Some(0.5)]);
    let bars = rt_charts(&["set"], &[Some(0.5)]);
    for (k, c) in [
        chart(&charts, "rt-violations"),
        chart(&charts, "rt-wakeup-u0_25"),
        chart(&bars, "rt-misses"),
    ]
    .into_iter()
    .enumerate()
    {
        let bytes = png(c).unwrap();
        if let Some(dir) = std::env::var_os("SCHEDLAB_DEBUG_PNG") {
            std::fs::write(std::path::Path::new(&dir).join(format!("{}-{k}.png", c.id)), &bytes)
                .unwrap();
        }
        let (_, _, rgb) = decode(&bytes);
        for (i, series) in c.series.iter().enumerate() {
            let n = count_colour(&rgb, PALETTE[series.colour.unwrap_or(i)]);
            assert!(n > 150, "{}: series {i} has only {n} pixels of its colour", c.id);
        }
        let s = svg(c).unwrap();
        assert!(s.contains(&format!(">\n{}\n</text>", c.series[0].name)), "{}: legend", c.id);
    }
}

#[test]
fn a_scheduler_keeps_its_colour_in_every_real_time_chart() {
    let mut recs = crate::testdata::rt_records(&["set"], &[Some(0.25), Some(0.5)]);
    // Without "other" at 0.5, fifo-rm is the first line of that wake-up chart, in its own colour.
    recs.retain(|r| r.params.key != "set/other/utilisation=0.5/n4");
    let stats = cell_stats(&recs);
    let rt = schedlab_analysis::rt_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 2, io: &[], rt: &rt, traces: &[], sets: &[] });
    let colours = |id: &str| {
        chart(&charts, id).series.iter().map(|s| (s.name.clone(), s.colour)).collect::<Vec<_>>()
    };
    assert_eq!(
        colours("rt-wakeup-u0_5"),
        [("fifo-rm".to_string(), Some(1)), ("dwcs (hand-off)".to_string(), Some(3))]
    );
    assert_eq!(colours("rt-wakeup-u0_25")[1], ("fifo-rm".to_string(), Some(1)));
    assert_eq!(colours("rt-violations")[3], ("dwcs".to_string(), Some(3)));
    let (_, _, rgb) = decode(&png(chart(&charts, "rt-wakeup-u0_5")).unwrap());
    assert!(
        count_colour(&rgb, PALETTE[1]) > 150 && count_colour(&rgb, PALETTE[0]) < 20,
        "drawn in fifo-rm's colour"
    );
    // Several workloads: a series per scheduler and workload, coloured in turn.
    assert!(rt_charts(&["a", "b"], &[Some(0.25), Some(0.5)])[0]
        .series
        .iter()
        .all(|s| s.colour.is_none()));
}

/// The first two curves of a response time chart end at 9 ms and 18 ms, in µs: the longest
/// response of the fixture's jobs taking 1x and 2x.
fn assert_longest_9_and_18_ms(c: &Chart) {
    let last = |i: usize| c.series[i].curve.last().unwrap().0;
    assert!(
        (last(0) - 9_000.0).abs() < 10.0 && (last(1) - 18_000.0).abs() < 20.0,
        "{} {}",
        last(0),
        last(1)
    );
}

#[test]
fn per_job_records_give_a_response_time_distribution() {
    let recs = crate::testdata::rt_records_with_jobs(1);
    let stats = cell_stats(&recs);
    let rt = schedlab_analysis::rt_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 2, io: &[], rt: &rt, traces: &[], sets: &[] });
    let c = chart(&charts, "rt-response-u0_5");
    assert_eq!((c.kind, names(c)), (ChartKind::Cdf { log_x: false }, vec!["fifo-rm", "dwcs"]));
    assert_eq!(c.title, "Response time, utilisation 0.5");
    // 4 tasks x 2 repetitions x 9 finished jobs; fifo-rm's longest 9 ms, dwcs's 18 ms.
    assert!(c.caption.contains("fifo-rm 72 (+8 unfinished) over 2 repetitions"), "{}", c.caption);
    assert_longest_9_and_18_ms(c);
    assert_eq!(c.series[1].colour, Some(3), "dwcs keeps its colour");
    // Without records, no such chart.
    assert!(rt_charts(&["set"], &[Some(0.5)]).iter().all(|c| !c.id.starts_with("rt-response")));
}

#[test]
fn a_comparison_draws_each_shared_cells_response_times_of_both_runs() {
    let a = schedlab_analysis::rt_stats(&crate::testdata::rt_records_with_jobs(1));
    // Run B: the same cells, every job taking twice as long; dwcs's records not loaded.
    let mut b_recs = crate::testdata::rt_records_with_jobs(2);
    for r in b_recs.iter_mut().filter(|r| r.params.key.contains("/dwcs/")) {
        r.samples.iter_mut().for_each(|s| s.jobs = None);
    }
    let b = schedlab_analysis::rt_stats(&b_recs);
    let charts = super::comparison_charts(&a, &b, "run 1 (measured)", "run 2 (simulated)");
    // Only fifo-rm has records on both sides.
    assert_eq!(charts.len(), 1, "{:?}", charts.iter().map(|c| &c.id).collect::<Vec<_>>());
    let c = &charts[0];
    assert_eq!(c.id, "compare-rt-response-set_fifo-rm_utilisation_0_5_n4");
    assert_eq!(c.title, "Response time, A against B: set/fifo-rm/utilisation=0.5/n4");
    assert_eq!(names(c), vec!["run 1 (measured)", "run 2 (simulated)"]);
    assert_eq!((c.series[0].colour, c.series[1].colour), (Some(0), Some(1)));
    // Finishing 1..9 ms after release: median 5 ms in A, 10 ms in B; 72 finished, 8 dropped.
    assert!(
        c.caption.contains("run 1 (measured): median 5.00 ms, 99th percentile 9.00 ms, 72 finished jobs (+8 unfinished)"),
        "{}",
        c.caption
    );
    assert!(
        c.caption.contains("run 2 (simulated): median 10.0 ms, 99th percentile 18.0 ms"),
        "{}",
        c.caption
    );
    assert_longest_9_and_18_ms(c);
    // No run B cells, no chart; and each chart renders.
    assert!(super::comparison_charts(&a, &[], "A", "B").is_empty());
    assert!(svg(c).unwrap().contains("run 2 (simulated)"));
}

#[test]
fn quiet_and_flooded_sets_are_separate_series_and_rows() {
    use schedlab_model::GroupParams;
    // The DWCS study's sets quiet and under a UDP flood: same workload, scheduler and
    // utilisation, told apart only by the background group.
    let quiet = crate::testdata::rt_records(&["set"], &[Some(0.25), Some(0.5)]);
    let main = |p: &schedlab_model::CellParams| GroupParams {
        name: "main".into(),
        class: "other".into(),
        processes: p.processes,
        ..Default::default()
    };
    let flood = GroupParams {
        name: "flood".into(),
        class: "other".into(),
        processes: 1,
        background: true,
        ..Default::default()
    };
    let mut recs = Vec::new();
    for r in &quiet {
        let mut q = r.clone();
        q.params.groups = vec![main(&r.params)];
        let mut f = r.clone();
        f.params.cell_id += 100;
        f.params.key.push_str("+flood.processes=1");
        f.params.groups = vec![main(&r.params), flood.clone()];
        recs.extend([q, f]);
    }
    let stats = cell_stats(&recs);
    let rt = schedlab_analysis::rt_stats(&recs);
    let charts =
        charts(&FigureInput { stats: &stats, cpus: 2, io: &[], rt: &rt, traces: &[], sets: &[] });
    let v = chart(&charts, "rt-violations");
    let quiet_names: Vec<&str> = names(v).into_iter().filter(|n| !n.contains("flood")).collect();
    let flood_names: Vec<String> = quiet_names.iter().map(|n| format!("{n} vs 1 flood")).collect();
    assert_eq!(
        names(v),
        [quiet_names.clone(), flood_names.iter().map(String::as_str).collect()].concat()
    );
    assert!(quiet_names.len() >= 4, "{quiet_names:?}");
    assert!(
        v.series.iter().all(|s| s.points.len() == 2 && s.points[0].x == 0 && s.points[1].x == 1),
        "one point per utilisation"
    );
    let wake = chart(&charts, "rt-wakeup-u0_5");
    assert!(names(wake).contains(&"other vs 1 flood"), "{:?}", names(wake));
    let rows = crate::tables::rt_rows(&rt);
    let named: Vec<String> = rows.iter().map(|r| r[..3].join(" | ")).collect();
    assert!(
        named.contains(&"set | other | 0.25".to_string())
            && named.contains(&"set vs 1 flood | other | 0.25".to_string()),
        "{named:#?}"
    );
}

/// A batch's stored sets: at utilisations 0.5 and 1.0, four sets each on one CPU under edf
/// (all scheduled at 0.5, one at 1.0) with the edf-qpa test's verdicts, and two on two CPUs.
fn batch_rows() -> Vec<schedlab_model::sets::TaskSetRow> {
    use schedlab_model::sets::{SetTask, SetVerdict, TaskSetRow};
    let row = |cpus: u32, u: f64, seed: u64, ok: bool| TaskSetRow {
        cell_id: cpus,
        index: seed as u32,
        seed,
        scheduler: "edf".into(),
        utilisation: u,
        plain_utilisation: u,
        min_utilisation: u,
        cpus,
        tasks: vec![SetTask { c_ns: 1, t_ns: 2, d_ns: 2, x: 0, y: 0 }; 4],
        jobs: 100,
        misses: u64::from(!ok),
        violations: 4 * u64::from(!ok),
        schedulable: ok,
        tests: vec![(
            if cpus == 1 { "edf-qpa" } else { "gfb" }.into(),
            if ok { SetVerdict::Yes } else { SetVerdict::No },
        )],
        message: None,
        jobs_log: None,
    };
    let mut rows: Vec<TaskSetRow> = (0..4).map(|s| row(1, 0.5, s, true)).collect();
    rows.extend((4..8).map(|s| row(1, 1.0, s, s == 4)));
    rows.extend([row(2, 0.5, 8, true), row(2, 1.0, 9, false)]);
    rows
}

#[test]
fn a_batch_gets_acceptance_curves_per_cpu_count_with_dashed_tests() {
    let rows = batch_rows();
    let charts =
        charts(&FigureInput { stats: &[], cpus: 2, io: &[], rt: &[], traces: &[], sets: &rows });
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["acceptance-1cpu", "acceptance-2cpus", "set-violations-1cpu", "set-violations-2cpus"]
    );
    let c = &charts[0];
    assert_eq!(c.categories, ["0.5", "1"]);
    assert_eq!(names(c), ["edf", "edf-qpa (test)"]);
    assert_eq!(c.series.iter().map(|s| s.dashed).collect::<Vec<_>>(), [false, true]);
    let p = c.series[0].points[1];
    assert_eq!((p.x, p.y), (1, 0.25));
    assert_eq!((p.lo, p.hi), schedlab_analysis::wilson(1, 4, 1.959_963_984_540_054));
    assert!(c.caption.contains("edf 0.500"), "weighted (0.5 + 0.25) / 1.5: {}", c.caption);
    // Violations per process: 4 over 4 tasks in each of the three missed sets at 1.0.
    assert_eq!(charts[2].series[0].points[1].y, 0.75);
    let s = svg(c).unwrap();
    assert!(s.contains("Acceptance ratio against utilisation, one CPU"));
    assert!(s.contains("stroke-dasharray") || s.matches("<polyline").count() > 2, "dashed");
    assert!(svg(&charts[1]).unwrap().contains("2 CPUs (partitioned)"));
}

#[test]
fn measured_cells_of_another_run_go_on_top_of_the_batches_violations() {
    let recs = crate::testdata::rt_records(&["set"], &[Some(0.5), Some(1.0)]);
    let rt = schedlab_analysis::rt_stats(&recs);
    let mut charts = sets_with_measured(&batch_rows(), &rt, "run 7 (measured)");
    charts.retain(|c| c.id.starts_with("set-violations"));
    // The two-CPU batch has no measured cell on two CPUs: no chart for it.
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["set-violations-measured-1cpu"]);
    let c = &charts[0];
    let first = format!("set/{}, run 7 (measured)", RT_SCHEDULERS[0]);
    assert_eq!(names(c)[..2], ["edf", first.as_str()]);
    // The first scheduler (k = 1 x (u index + 1)) violates 2k + r sliding windows per task,
    // r = 0 and 1: means 2.5 at 0.5 and 4.5 at 1.0.
    let ys: Vec<f64> = c.series[1].points.iter().map(|p| p.y).collect();
    assert_eq!(ys, [2.5, 4.5]);
    assert!(c.title.ends_with("with run 7 (measured)"), "{}", c.title);
    assert!(svg(c).unwrap().contains("run 7 (measured)"));
    assert!(sets_with_measured(&batch_rows(), &[], "x").is_empty());
}
