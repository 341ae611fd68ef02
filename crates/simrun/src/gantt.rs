//! A Gantt chart (SVG, drawn with plotters) of a simulation's trace: one row per worker,
//! one bar per stretch it ran, coloured by CPU.

use std::sync::Once;

use plotters::prelude::*;
use schedlab_policy::Time;
use schedlab_sim::SimResult;

/// Why no chart could be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GanttError {
    /// The range is empty or reversed.
    #[error("the time range is empty: --from ({from} ns) must be before --to ({to} ns)")]
    EmptyRange {
        /// Start of the range.
        from: Time,
        /// End of the range.
        to: Time,
    },
    /// The simulation kept no trace, or nothing ran in the range.
    #[error(
        "nothing ran between {from} and {to} ns of simulated time (the cell ended at {end} ns)"
    )]
    NothingRan {
        /// Start of the range.
        from: Time,
        /// End of the range.
        to: Time,
        /// When the simulation ended.
        end: Time,
    },
    /// plotters failed.
    #[error("drawing the chart failed: {0}")]
    Draw(String),
}

const WIDTH: u32 = 1200;
const ROW_PX: u32 = 16;
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

const FONT: &str = "sans-serif";

/// plotters lays text out with a registered font: the embedded DejaVu Sans, so no system
/// font is needed (the SVG itself names `sans-serif` and leaves drawing to the viewer).
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

/// Draws the slices of `result`'s trace that overlap `[from, to)` (simulated ns), clipped
/// to that range; every task that ran in it gets a row, in input order.
pub fn svg(result: &SimResult, title: &str, from: Time, to: Time) -> Result<String, GanttError> {
    if from >= to {
        return Err(GanttError::EmptyRange { from, to });
    }
    let slices: Vec<_> = result.trace.iter().filter(|s| s.end > from && s.start < to).collect();
    let mut tasks: Vec<usize> = slices.iter().map(|s| s.task).collect();
    tasks.sort_unstable();
    tasks.dedup();
    if tasks.is_empty() {
        return Err(GanttError::NothingRan { from, to, end: result.end });
    }
    register_font();
    let rows = tasks.len();
    // Row r (task tasks[r]) is centred on y = rows - 1 - r, so the first task is on top.
    let y_of = |task: usize| (rows - 1 - tasks.binary_search(&task).unwrap_or(0)) as f64;
    let name_at = |y: f64| -> String {
        let r = y.round();
        if (y - r).abs() > 1e-6 || r < 0.0 || r as usize >= rows {
            return String::new();
        }
        result.tasks.get(tasks[rows - 1 - r as usize]).map(|t| t.name.clone()).unwrap_or_default()
    };
    let ms = |t: Time| t as f64 / 1e6;
    let height = 90 + ROW_PX * rows as u32;
    let mut out = String::new();
    let draw = |e: &dyn std::fmt::Display| GanttError::Draw(e.to_string());
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(ms(from)..ms(to), -0.5..rows as f64 - 0.5)
            .map_err(|e| draw(&e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.min(60))
            .y_label_formatter(&|y| name_at(*y))
            .x_desc("simulated time since the release [ms]")
            .draw()
            .map_err(|e| draw(&e))?;
        let mut cpus: Vec<usize> = slices.iter().map(|s| s.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        for cpu in cpus {
            let color = COLORS[cpu % COLORS.len()];
            let bars = slices.iter().filter(|s| s.cpu == cpu).map(|s| {
                let y = y_of(s.task);
                Rectangle::new(
                    [(ms(s.start.max(from)), y - 0.35), (ms(s.end.min(to)), y + 0.35)],
                    color.filled(),
                )
            });
            chart.draw_series(bars).map_err(|e| draw(&e))?.label(format!("CPU {cpu}")).legend(
                move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()),
            );
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw(&e))?;
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(out)
}
