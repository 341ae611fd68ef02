//! Drawing a [`Chart`] with plotters: the same drawing code on the SVG backend (text
//! left to the viewer's fonts) and on the bitmap backend (text rasterised with the
//! embedded DejaVu Sans through ab_glyph, so PNGs need no fontconfig or system font).

use super::{Chart, ChartKind, Point, Series};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::sync::Once;

/// Figure width in pixels.
pub const WIDTH: u32 = 760;
/// Figure height in pixels.
pub const HEIGHT: u32 = 420;
const LEGEND_WIDTH: u32 = 180;
const FONT: &str = "sans-serif";

/// Series colours (Okabe-Ito, distinguishable with the common colour-vision deficiencies).
pub const PALETTE: [(u8, u8, u8); 7] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
    (0, 0, 0),
];

/// Drawing a chart failed.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotError(pub String);

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot draw the figure: {}", self.0)
    }
}

impl std::error::Error for PlotError {}

fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded font is valid TrueType; failure would leave text undrawn, which the PNG tests catch.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, PlotError> {
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart).map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// The chart as a PNG image (RGB, [`WIDTH`] x [`HEIGHT`]).
pub fn png(chart: &Chart) -> Result<Vec<u8>, PlotError> {
    register_font();
    let mut rgb = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart).map_err(err)?;
        root.present().map_err(err)?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(err)?;
    w.write_image_data(&rgb).map_err(err)?;
    w.finish().map_err(err)?;
    Ok(out)
}

/// The colour and marker index of series `i`: its own when it has one, else its position.
fn style(i: usize, s: &Series) -> usize {
    s.colour.unwrap_or(i)
}

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// Trims a tick value to at most 4 decimals without trailing zeros.
fn tick(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

fn y_max(chart: &Chart) -> f64 {
    let data = chart.series.iter().flat_map(|s| &s.points).flat_map(|p| [p.y, p.hi]);
    let top = data
        .chain(chart.reference.iter().map(|r| r.0))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if top > 0.0 {
        top * 1.12
    } else {
        1.0
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
    match chart.kind {
        ChartKind::Lines | ChartKind::Bars => draw_categories(&plot_area, chart)?,
        ChartKind::Cdf { log_x } => draw_cdf(&plot_area, chart, log_x)?,
        ChartKind::States => draw_states(&plot_area, chart)?,
    }
    legend(&legend_area, chart)
}

/// The plot area with the chart's title and margins.
fn builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    chart: &'b Chart,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.caption(&chart.title, (FONT, 20).into_font().style(FontStyle::Bold))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(64);
    b
}

fn draw_categories<DB: DrawingBackend>(
    plot_area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> DrawResult<DB> {
    let n = chart.categories.len().max(1);
    let top = y_max(chart);
    let mut cc =
        builder(plot_area, chart).build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)?;
    let cats = &chart.categories;
    let x_fmt = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() {
            cats[i as usize].clone()
        } else {
            String::new()
        }
    };
    // At most ~16 labels (every other rank of 32 processes): more would overlap.
    mesh(&mut cc, chart, (n + 1).min(17), &x_fmt, false)?;

    if let Some((value, _)) = &chart.reference {
        cc.draw_series(std::iter::once(PathElement::new(
            vec![(-0.5, *value), (n as f64 - 0.5, *value)],
            RGBColor(120, 120, 120).stroke_width(1),
        )))?;
    }
    let k = chart.series.len();
    if chart.kind == ChartKind::Bars {
        // Bars side by side in 80% of each category.
        let width = 0.8 / k.max(1) as f64;
        for (i, s) in chart.series.iter().enumerate() {
            for p in &s.points {
                let x0 = p.x as f64 - 0.4 + i as f64 * width;
                cc.draw_series(std::iter::once(Rectangle::new(
                    [(x0 + 0.01, 0.0), (x0 + width - 0.01, p.y)],
                    colour(style(i, s)).filled(),
                )))?;
                error_bar(
                    &mut cc,
                    x0 + width / 2.0,
                    p,
                    (width / 4.0).min(0.035),
                    RGBColor(40, 40, 40),
                )?;
            }
        }
        return Ok(());
    }
    // Spread the series a little around each category so their error bars do not overlap.
    let dodge_step = if k > 1 { (0.3 / (k - 1) as f64).min(0.08) } else { 0.0 };
    for (i, s) in chart.series.iter().enumerate() {
        let c = colour(style(i, s));
        let dx = (i as f64 - (k as f64 - 1.0) / 2.0) * dodge_step;
        let at = |p: &Point| (p.x as f64 + dx, p.y);
        if s.dashed {
            cc.draw_series(DashedLineSeries::new(
                s.points.iter().map(at),
                8,
                5,
                c.stroke_width(2),
            ))?;
        } else {
            cc.draw_series(LineSeries::new(s.points.iter().map(at), c.stroke_width(2)))?;
        }
        for p in &s.points {
            error_bar(&mut cc, p.x as f64 + dx, p, 0.035, c)?;
        }
        for p in &s.points {
            let (x, y) = at(p);
            cc.plotting_area().draw(&(EmptyElement::at((x, y)) + marker(style(i, s), c)))?;
        }
    }
    Ok(())
}

type Categories<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The colours of running, runnable and blocked in state charts.
const STATE_COLOURS: [RGBColor; 3] =
    [RGBColor(0, 158, 115), RGBColor(230, 159, 0), RGBColor(86, 180, 233)];
const STATE_NAMES: [&str; 3] = ["running", "runnable", "blocked"];

/// Rows of slices: a band per row (top row first), each run of equal slices one stack of
/// three rectangles (running at the bottom), so a CPU-bound worker's row is a few
/// rectangles, not one per slice.
fn draw_states<DB: DrawingBackend>(
    plot_area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> DrawResult<DB> {
    let st = &chart.states;
    let n = st.rows.len().max(1);
    let slices = st.rows.iter().map(|(_, s)| s.len()).max().unwrap_or(0).max(1);
    let end = st.slice_s * slices as f64;
    let end = if end > 0.0 { end } else { 1.0 };
    let mut cc = builder(plot_area, chart).build_cartesian_2d(0f64..end, 0f64..n as f64)?;
    let labels = |v: &f64| {
        // Row r's band is [n - r - 1, n - r); its label sits at the band's middle.
        let r = n as f64 - v - 0.5;
        let i = r.round();
        if (r - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < st.rows.len() {
            st.rows[i as usize].0.clone()
        } else {
            String::new()
        }
    };
    cc.configure_mesh()
        .disable_y_mesh()
        .x_labels(8)
        .x_label_formatter(&|v| tick(*v))
        .y_labels(2 * n + 1)
        .y_label_formatter(&labels)
        .x_desc(&chart.x_label)
        .label_style((FONT, if n > 16 { 10 } else { 14 }))
        .axis_desc_style((FONT, 16))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(TRANSPARENT)
        .draw()?;
    let mut rects = Vec::new();
    for (r, (_, shares)) in st.rows.iter().enumerate() {
        let base = (n - r - 1) as f64 + 0.1;
        let mut k = 0;
        while k < shares.len() {
            let mut j = k + 1;
            while j < shares.len() && shares[j] == shares[k] {
                j += 1;
            }
            let (x0, x1) = (k as f64 * st.slice_s, j as f64 * st.slice_s);
            let mut y = base;
            for (state, share) in shares[k].iter().enumerate() {
                let h = share.clamp(0.0, 1.0) * 0.8;
                if h > 0.0 {
                    rects.push(Rectangle::new(
                        [(x0, y), (x1, (y + h).min(base + 0.8))],
                        STATE_COLOURS[state].filled(),
                    ));
                    y += h;
                }
            }
            k = j;
        }
    }
    cc.draw_series(rects)?;
    Ok(())
}

/// The point's confidence interval at `x` with caps `cap` wide each side (nothing without one).
fn error_bar<DB: DrawingBackend>(
    cc: &mut Categories<'_, DB>,
    x: f64,
    p: &Point,
    cap: f64,
    c: RGBColor,
) -> DrawResult<DB> {
    if p.hi > p.lo {
        let style = c.stroke_width(2);
        cc.draw_series([
            PathElement::new(vec![(x, p.lo), (x, p.hi)], style),
            PathElement::new(vec![(x - cap, p.lo), (x + cap, p.lo)], style),
            PathElement::new(vec![(x - cap, p.hi), (x + cap, p.hi)], style),
        ])?;
    }
    Ok(())
}

/// The x range of the chart's curves: from the smallest positive value (a log axis has no
/// 0) to the largest, widened to a decade's edges on a log axis.
fn cdf_range(chart: &Chart, log_x: bool) -> (f64, f64) {
    let xs = || chart.series.iter().flat_map(|s| &s.curve).map(|p| p.0).filter(|x| x.is_finite());
    let (lo, hi) =
        (xs().filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min), xs().fold(0.0f64, f64::max));
    if !lo.is_finite() || hi <= 0.0 {
        return (if log_x { 0.1 } else { 0.0 }, 1.0);
    }
    if log_x {
        (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()))
    } else {
        (0.0, hi * 1.05)
    }
}

fn draw_cdf<DB: DrawingBackend>(
    plot_area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    log_x: bool,
) -> DrawResult<DB> {
    let (lo, hi) = cdf_range(chart, log_x);
    if log_x {
        let mut cc =
            builder(plot_area, chart).build_cartesian_2d((lo..hi).log_scale(), 0f64..1.0)?;
        mesh(&mut cc, chart, 8, &|v| tick(*v), true)?;
        for (i, s) in chart.series.iter().enumerate() {
            cc.draw_series(LineSeries::new(
                s.curve.iter().map(|&(x, y)| (x.max(lo), y)),
                colour(style(i, s)).stroke_width(2),
            ))?;
        }
    } else {
        let mut cc = builder(plot_area, chart).build_cartesian_2d(lo..hi, 0f64..1.0)?;
        mesh(&mut cc, chart, 8, &|v| tick(*v), true)?;
        for (i, s) in chart.series.iter().enumerate() {
            cc.draw_series(LineSeries::new(
                s.curve.iter().copied(),
                colour(style(i, s)).stroke_width(2),
            ))?;
        }
    }
    Ok(())
}

/// Axes, ticks (`x_labels` on the x axis, written by `x_fmt`), their descriptions and the
/// grid (vertical lines only with `x_grid`).
fn mesh<'b, DB: DrawingBackend, X>(
    cc: &'b mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    chart: &Chart,
    x_labels: usize,
    x_fmt: &'b dyn Fn(&f64) -> String,
    x_grid: bool,
) -> DrawResult<DB>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut m = cc.configure_mesh();
    if !x_grid {
        m.disable_x_mesh();
    }
    m.x_labels(x_labels)
        .x_label_formatter(x_fmt)
        .y_labels(6)
        .y_label_formatter(&|v| tick(*v))
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(TRANSPARENT)
        .draw()
}

/// The marker of series `i`: circle, triangle, square, diamond, in turn.
fn marker<DB: DrawingBackend>(i: usize, c: RGBColor) -> DynElement<'static, DB, (i32, i32)> {
    let fill = c.filled();
    match i % 4 {
        0 => Circle::new((0, 0), 5, fill).into_dyn(),
        1 => TriangleMarker::new((0, 0), 7, fill).into_dyn(),
        2 => Rectangle::new([(-5, -5), (5, 5)], fill).into_dyn(),
        _ => Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], fill).into_dyn(),
    }
}

fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: &Chart) -> DrawResult<DB> {
    let font = (FONT, 16).into_font();
    let mut y = 52;
    if chart.kind == ChartKind::States {
        for (c, name) in STATE_COLOURS.iter().zip(STATE_NAMES) {
            area.draw(&Rectangle::new([(9, y - 8), (29, y + 8)], c.filled()))?;
            area.draw(&Text::new(name, (42, y - 7), font.clone()))?;
            y += 24;
        }
    }
    for (i, s) in chart.series.iter().enumerate() {
        let c = colour(style(i, s));
        match chart.kind {
            ChartKind::Lines if s.dashed => {
                for x in [4, 16, 28] {
                    area.draw(&PathElement::new(vec![(x, y), (x + 6, y)], c.stroke_width(2)))?;
                }
                area.draw(&(EmptyElement::at((19, y)) + marker(style(i, s), c)))?;
            }
            ChartKind::Lines => {
                area.draw(&PathElement::new(vec![(4, y), (34, y)], c.stroke_width(2)))?;
                area.draw(&(EmptyElement::at((19, y)) + marker(style(i, s), c)))?;
            }
            ChartKind::Bars => area.draw(&Rectangle::new([(9, y - 8), (29, y + 8)], c.filled()))?,
            ChartKind::Cdf { .. } | ChartKind::States => {
                area.draw(&PathElement::new(vec![(4, y), (34, y)], c.stroke_width(3)))?
            }
        }
        let lines = wrap(&s.name);
        let extra = 18 * (lines.len() as i32 - 1);
        for (k, line) in lines.into_iter().enumerate() {
            area.draw(&Text::new(line, (42, y - 7 + 18 * k as i32), font.clone()))?;
        }
        y += 24 + extra;
    }
    if let Some((_, label)) = &chart.reference {
        area.draw(&PathElement::new(
            vec![(4, y), (34, y)],
            RGBColor(120, 120, 120).stroke_width(1),
        ))?;
        area.draw(&Text::new(label.clone(), (42, y - 7), font.clone()))?;
        y += 24;
    }
    let note = match chart.kind {
        ChartKind::Cdf { .. } => "pooled over repetitions",
        ChartKind::Bars => "whiskers: 95% CI",
        ChartKind::Lines => "bars: 95% CI",
        ChartKind::States => "one row per worker",
    };
    area.draw(&Text::new(note, (4, y + 4), (FONT, 14).into_font().color(&RGBColor(90, 90, 90))))?;
    Ok(())
}

/// Characters of a legend line that fit beside the marker.
const LEGEND_CHARS: usize = 15;

/// A legend label in lines of at most [`LEGEND_CHARS`], broken after its commas
/// (`spread, weight 200` -> `spread,` / `weight 200`); a longer part keeps its own line.
fn wrap(label: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in label.split_inclusive(", ") {
        match lines.last_mut() {
            Some(l) if l.len() + part.trim_end().len() <= LEGEND_CHARS => l.push_str(part),
            _ => lines.push(part.to_string()),
        }
    }
    let mut lines: Vec<String> = lines.into_iter().map(|l| l.trim_end().to_string()).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::{tick, wrap};

    #[test]
    fn long_legend_labels_break_after_commas() {
        assert_eq!(wrap("fifo prio 98"), ["fifo prio 98"]);
        assert_eq!(wrap("spread, weight 200"), ["spread,", "weight 200"]);
        assert_eq!(wrap("a, b, unpinned, no cgroup"), ["a, b, unpinned,", "no cgroup"]);
        assert_eq!(wrap(""), [""]);
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.30000000000000004), "0.3");
        assert_eq!(tick(250.0), "250");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(12345.6), "12346");
        assert_eq!(tick(0.00125), "0.0013");
    }
}
