//! Figures from the mock pa3 run: which charts, what they hold, and that the PNG shows them.

use super::*;
use crate::testdata::{pa3_records, COUNTS};
use schedlab_analysis::cell_stats;

fn pa3_charts() -> Vec<Chart> {
    let stats = cell_stats(&pa3_records(1.0));
    charts(&FigureInput { stats: &stats, cpus: 4 })
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
    rgb.chunks_exact(3).filter(|p| p[0].abs_diff(c.0) < 12 && p[1].abs_diff(c.1) < 12 && p[2].abs_diff(c.2) < 12).count()
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
    // sd = 0.03 * 1.284, half width = t(0.975, 2) * sd / sqrt(3) = 4.302653 * 0.03852 / 1.732051
    let half = 4.302_652_730 * 0.03 * 1.284 / 3f64.sqrt();
    assert!((p.hi - p.y - half).abs() < 1e-6 && (p.y - p.lo - half).abs() < 1e-6, "{p:?}");
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
    let charts = charts(&FigureInput { stats: &stats, cpus: 4 });
    let fifo = &charts[0].series[1];
    assert_eq!(fifo.points.iter().map(|p| p.x).collect::<Vec<_>>(), vec![0, 2]);
}

#[test]
fn a_run_with_nothing_measured_has_no_figures() {
    assert!(charts(&FigureInput { stats: &[], cpus: 2 }).is_empty());
}

#[test]
fn png_shows_every_series_and_text() {
    for c in pa3_charts().iter().filter(|c| c.id == "wall-cpu" || c.id == "involuntary-io") {
        let bytes = png(c).unwrap();
        if let Some(dir) = std::env::var_os("SCHEDLAB_DEBUG_PNG") {
            std::fs::write(std::path::Path::new(&dir).join(format!("{}.png", c.id)), &bytes).unwrap();
        }
        let (w, h, rgb) = decode(&bytes);
        assert_eq!((w, h), (WIDTH, HEIGHT));
        for (i, _) in c.series.iter().enumerate() {
            let n = count_colour(&rgb, PALETTE[i]);
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
    let recs: Vec<_> = pa3_records(1.0).into_iter().filter(|r| r.params.processes == 10 && r.rep == 0).collect();
    let stats = cell_stats(&recs);
    let charts = charts(&FigureInput { stats: &stats, cpus: 0 });
    assert_eq!(charts.len(), 15);
    let c = &charts[0];
    assert_eq!(c.categories, vec!["10"]);
    let p = c.series[0].points[0];
    assert_eq!(p.lo, p.hi, "one repetition has no interval");
    assert!(charts.iter().all(|c| c.reference.is_none()), "no CPU count, no ceiling");
    let (_, _, rgb) = decode(&png(c).unwrap());
    assert!(count_colour(&rgb, PALETTE[0]) > 20);
}

#[test]
fn slugs_are_file_name_safe() {
    assert_eq!(slug("My Load/2"), "my_load_2");
    assert_eq!(slug("io-bound"), "io-bound");
}
