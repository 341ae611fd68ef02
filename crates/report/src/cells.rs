//! The per-cell summary a write-up quotes: each cell named by its key (the key `trace --cell`
//! takes), for `schedlab show` (table, Markdown, CSV, JSON) and `export --per cell`. The
//! tables are those of [`crate::tables`], narrowed: the key stands for the row labels, and
//! the figures are the ones asked for.

use crate::cols::{self, Col, Narrow};
use crate::tables::{self, Figure, Named, PER_PROCESS, TOTALS};
use schedlab_analysis::bench::{self, BenchFigure};
use schedlab_analysis::rt::{self, RtFigure};
use schedlab_analysis::trace::{self, TraceFigure};
use schedlab_analysis::{BenchStats, CellStats, IoStats, RtStats, Summary, TraceStats};
use schedlab_model::CellParams;
use serde_json::{json, Map, Value};

/// Every per-cell figure: the totals, then the per-process means.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    TOTALS.iter().chain(PER_PROCESS.iter())
}

/// The figures `show --metric` chose: of the per-cell tables, and of the real-time table
/// ([`rt::FIGURES`], periodic cells only).
#[derive(Clone)]
pub struct Chosen {
    /// Of the per-cell totals and per-process means.
    pub cell: Vec<&'static Figure>,
    /// Of the real-time table.
    pub rt: Vec<&'static RtFigure>,
    /// Of the benchmark table ([`bench::FIGURES`]).
    pub bench: Vec<&'static BenchFigure>,
}

impl Chosen {
    /// Every figure.
    pub fn all() -> Chosen {
        Chosen {
            cell: figures().collect(),
            rt: rt::FIGURES.iter().collect(),
            bench: bench::FIGURES.iter().collect(),
        }
    }
}

/// Every figure name `show --metric` knows, in the tables' order.
fn known() -> Vec<&'static str> {
    figures()
        .map(|f| f.name)
        .chain(rt::FIGURES.iter().map(|f| f.name))
        .chain(bench::FIGURES.iter().map(|f| f.name))
        .collect()
}

/// `show --metric`'s help, made from the figure registries (so it never misses a figure):
/// every name `--metric` takes, by table.
pub fn metric_help() -> String {
    let names = |it: &mut dyn Iterator<Item = &'static str>| it.collect::<Vec<_>>().join(", ");
    format!(
        "Only these per-cell figures, comma-separated, named as in `--format json`: {} (cell totals), {}; \
         of periodic task sets: {}; of the field's benchmarks (native and parsed): {}",
        names(&mut TOTALS.iter().map(|f| f.name)),
        names(&mut PER_PROCESS.iter().map(|f| f.name)),
        names(&mut rt::FIGURES.iter().map(|f| f.name)),
        names(&mut bench::FIGURES.iter().map(|f| f.name)),
    )
}

/// A figure name that no per-cell or real-time figure has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFigure {
    /// The name as given.
    pub name: String,
}

impl std::fmt::Display for UnknownFigure {
    /// Suggests the closest name and lists them all.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = known();
        write!(
            f,
            "unknown figure \"{}\"{}; figures: {}",
            self.name,
            schedlab_plan::suggest::did_you_mean(&self.name, known.iter().copied()),
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownFigure {}

/// The figures named in `names` (every figure when it is empty), in the tables' order; an
/// unknown name is an error that suggests the closest and lists them all.
pub fn chosen(names: &[String]) -> Result<Chosen, UnknownFigure> {
    let known = known();
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(UnknownFigure { name: bad.clone() });
    }
    let named = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
    Ok(Chosen {
        cell: figures().filter(|f| named(f.name)).collect(),
        rt: rt::FIGURES.iter().filter(|f| named(f.name)).collect(),
        bench: bench::FIGURES.iter().filter(|f| named(f.name)).collect(),
    })
}

/// A summary's mean and 95% interval under `name`, `name_ci_low` and `name_ci_high` (null
/// where there is none).
fn insert(row: &mut Map<String, Value>, name: &str, x: Option<&Summary>) {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let (lo, hi) = x.and_then(|x| x.interval().ok()).unwrap_or((f64::NAN, f64::NAN));
    let mean = x.filter(|x| x.n > 0).map_or(f64::NAN, |x| x.mean);
    row.insert(name.into(), num(mean));
    row.insert(format!("{name}_ci_low"), num(lo));
    row.insert(format!("{name}_ci_high"), num(hi));
}

/// One object per cell: `key`, `workload`, `policy`, `processes`, `n`, then for each figure
/// its mean as `NAME` and its 95% interval as `NAME_ci_low` and `NAME_ci_high` (null where
/// there is none); when the run has periodic sets (`rt` is not empty), then each chosen
/// real-time figure likewise (null for the other cells), and when it has benchmark figures
/// (`bench` is not empty), each chosen one of those. The names are stable: scripts read them.
pub fn values(
    stats: &[CellStats],
    rt: &[RtStats],
    bench: &[BenchStats],
    figs: &Chosen,
) -> Vec<Value> {
    stats
        .iter()
        .map(|s| {
            let p = &s.params;
            let mut row = Map::new();
            row.insert("key".into(), json!(p.key));
            row.insert("workload".into(), json!(p.workload));
            row.insert("policy".into(), json!(p.policy));
            row.insert("processes".into(), json!(p.processes));
            row.insert("n".into(), json!(s.reps));
            for f in &figs.cell {
                insert(&mut row, f.name, Some((f.get)(s)));
            }
            if !rt.is_empty() {
                let set = rt.iter().find(|r| r.params.key == p.key);
                for f in &figs.rt {
                    insert(&mut row, f.name, set.map(|r| &r.figures[f]));
                }
            }
            if !bench.is_empty() {
                let b = bench.iter().find(|b| b.params.key == p.key);
                for f in &figs.bench {
                    insert(&mut row, f.name, b.map(|b| &b[f]));
                }
            }
            Value::Object(row)
        })
        .collect()
}

/// A row of a per-cell table whose statistics carry their cell's parameters.
pub trait Keyed {
    /// The cell's parameters.
    fn params(&self) -> &CellParams;
}

impl Keyed for CellStats {
    fn params(&self) -> &CellParams {
        &self.params
    }
}

impl Keyed for IoStats {
    fn params(&self) -> &CellParams {
        &self.params
    }
}

impl Keyed for RtStats {
    fn params(&self) -> &CellParams {
        &self.params
    }
}

/// The `cell` column: the cell's key, as `trace --cell` and `show --cell` take it.
pub fn key_column<'a, T: Keyed>() -> Col<Named<'a, T>> {
    Col::text("cell", |r: &Named<T>| r.s.params().key.clone())
}

/// `cols` as `show` draws them: the key first; the row labels ([`Narrow::Label`]) and
/// secondary figures ([`Narrow::Wide`]) only when `wide`; none of the columns headed `drop`
/// (the figures not chosen, [`unchosen`]).
pub fn narrow<'a, T: Keyed>(
    cols: Vec<Col<Named<'a, T>>>,
    wide: bool,
    drop: &[&str],
) -> Vec<Col<Named<'a, T>>> {
    let kept = cols.into_iter().filter(|c| {
        !drop.contains(&c.header.as_str())
            && (wide || !matches!(c.narrow, Narrow::Label | Narrow::Wide))
    });
    std::iter::once(key_column()).chain(kept).collect()
}

/// True when one of `figs` is in `set` (a table with no chosen figure is left out).
pub fn any_of(figs: &[&Figure], set: &[Figure]) -> bool {
    figs.iter().any(|f| set.iter().any(|g| g.name == f.name))
}

/// The headers of the per-cell figures not among `figs`, for [`narrow`]'s `drop`.
pub fn unchosen(figs: &[&Figure]) -> Vec<&'static str> {
    figures().filter(|f| !figs.iter().any(|g| g.name == f.name)).map(|f| f.header).collect()
}

/// The per-cell totals as `show` draws them (see [`narrow`]), with the figures `figs`.
pub fn totals_columns<'a>(wide: bool, figs: &[&Figure]) -> Vec<Col<Named<'a, CellStats>>> {
    narrow(tables::totals_columns(), wide, &unchosen(figs))
}

/// The per-process means of `stats` as `show` draws them (see [`narrow`]), with the figures
/// `figs`; where the run has them, the scheduler's own figures with `wide` only.
pub fn per_process_columns<'a>(
    stats: &[CellStats],
    wide: bool,
    figs: &[&Figure],
) -> Vec<Col<Named<'a, CellStats>>> {
    narrow(tables::per_process_columns_for(stats), wide, &unchosen(figs))
}

/// The widest a terminal table is drawn without `--wide`.
pub const MAX_WIDTH: usize = 160;

/// `cols` as `draw` writes them; when `fitting`, leaving out the spare columns
/// ([`Narrow::Spare`], lowest rank first) while the first line (a terminal table's top
/// border) is wider than [`MAX_WIDTH`], with the note naming what it left (`--wide` shows
/// them) under it.
pub fn fit<R>(mut cols: Vec<Col<R>>, fitting: bool, draw: impl Fn(&[Col<R>]) -> String) -> String {
    let mut left = Vec::new();
    loop {
        let text = draw(&cols);
        let width = text.lines().next().map_or(0, |l| l.chars().count());
        let spare = cols.iter().enumerate().filter_map(|(i, c)| match c.narrow {
            Narrow::Spare(rank) => Some((rank, i)),
            _ => None,
        });
        match spare.min() {
            Some((_, i)) if fitting && width > MAX_WIDTH => {
                left.push(cols.remove(i).header);
            }
            _ if left.is_empty() => return text,
            _ => {
                let left = left.join(", ");
                return format!("{text}\n(to fit {MAX_WIDTH} columns, --wide shows: {left})");
            }
        }
    }
}

/// A table for the terminal, or in Markdown, each with a footnote when a value is marked
/// [`tables::FEW`]; `deterministic` (the simulator's identical repetitions) leaves the marks
/// and the footnote out.
pub fn render<R>(cols: &[Col<R>], items: &[R], markdown: bool, deterministic: bool) -> String {
    let mut rows = cols::rows(cols, items);
    if deterministic {
        rows = tables::without_few(rows);
    }
    let notes = tables::footnotes(&rows);
    if !markdown {
        let long = tables::long_notes(&mut rows, cols.iter().position(|c| c.header == "notes"));
        let notes: String =
            notes.iter().map(|n| n.to_string()).chain(long).map(|n| n + "\n").collect();
        return format!("{}\n{notes}", cols::table_of(cols, rows));
    }
    // Markdown reads a `*` as emphasis, and one at the start of a line as a list item.
    let escape = |s: &str| s.replace('*', "\\*");
    let rows: Vec<Vec<String>> =
        rows.iter().map(|r| r.iter().map(|c| escape(c)).collect()).collect();
    let notes: String = notes.iter().map(|n| format!("\n{}\n", escape(n))).collect();
    format!("\n{}{notes}", cols::markdown(cols, &rows))
}

/// The per-cell summary as Markdown (`export --per cell --format markdown`): the totals and
/// the per-process means of the figures `figs`, rows named by key.
pub fn markdown(
    stats: &[CellStats],
    rt: &[RtStats],
    bench: &[BenchStats],
    figs: &Chosen,
    deterministic: bool,
) -> String {
    let rows = tables::named(stats);
    let mut out = match deterministic {
        true => format!("{}.\n\n", tables::DETERMINISTIC_NOTE),
        false => String::new(),
    };
    let head = |title: &str| format!("{title} (mean ±95% CI over n repetitions):\n");
    for (title, set, cols) in [
        ("Per cell, totals over its processes", &TOTALS[..], totals_columns(false, &figs.cell)),
        ("Per process", &PER_PROCESS[..], per_process_columns(stats, false, &figs.cell)),
    ] {
        if any_of(&figs.cell, set) {
            out.push_str(&head(title));
            out.push_str(&render(&cols, &rows, true, deterministic));
            out.push('\n');
        }
    }
    if !rt.is_empty() && !figs.rt.is_empty() {
        out.push_str(&head("Real-time task sets"));
        out.push_str(&render(&rt_columns(false, figs), &tables::rt_named(rt), true, deterministic));
        out.push('\n');
    }
    if !bench.is_empty() && !figs.bench.is_empty() {
        out.push_str(&head("Benchmarks"));
        out.push_str(&render(
            &bench_columns(bench, false, figs),
            &crate::bench::named(bench),
            true,
            deterministic,
        ));
        out.push('\n');
    }
    out
}

/// The benchmark table as `show` draws it (see [`narrow`]), with the chosen benchmark figures.
pub fn bench_columns<'a>(
    bench: &[BenchStats],
    wide: bool,
    figs: &Chosen,
) -> Vec<Col<Named<'a, BenchStats>>> {
    narrow(crate::bench::columns(bench, &figs.bench), wide, &[])
}

/// The real-time table as `show` draws it (see [`narrow`]), with the chosen real-time figures.
pub fn rt_columns<'a>(wide: bool, figs: &Chosen) -> Vec<Col<Named<'a, RtStats>>> {
    let drop: Vec<&str> =
        rt::FIGURES.iter().filter(|f| !figs.rt.contains(f)).map(|f| f.header).collect();
    narrow(tables::rt_columns(), wide, &drop)
}

/// Shorter headers of trace figures' per-cell columns for the terminal.
pub const TRACE_HEADERS: [(&TraceFigure, &str); 6] = [
    (&trace::WAKEUP_P50, "wake p50 [us]"),
    (&trace::WAKEUP_P90, "wake p90 [us]"),
    (&trace::WAKEUP_P99, "wake p99 [us]"),
    (&trace::WAKEUP_P999, "wake p99.9 [us]"),
    (&trace::LOST_EVENTS, "lost"),
    (&trace::UNTRACED_SWITCHES, "untraced sw."),
];

/// True when `c` is the per-cell column of trace figure `f`.
fn is_column_of(c: &Col<TraceStats>, f: &TraceFigure) -> bool {
    f.cell_header == Some(c.header.as_str())
}

/// The per-cell trace table as `schedlab trace` draws it without `--cell`: the report's
/// columns ([`tables::trace_cell_columns`]) with shorter headers, and who preempted the
/// processes as percentages (`w/e/k/o [%]`).
pub fn trace_columns() -> Vec<Col<TraceStats>> {
    tables::trace_cell_columns()
        .into_iter()
        .map(|mut c| {
            if is_column_of(&c, &trace::PREEMPTED_BY) {
                return Col::text("preempted by w/e/k/o [%]", |s: &TraceStats| {
                    let by = &s.preempted_by;
                    let pct = |n: u64| format!("{:.0}", 100.0 * n as f64 / by.total() as f64);
                    match by.total() {
                        0 => "-".into(),
                        _ => [by.worker, by.engine, by.kernel, by.other].map(pct).join("/"),
                    }
                })
                .aligned(c.align);
            }
            if let Some((_, short)) = TRACE_HEADERS.iter().find(|(f, _)| is_column_of(&c, f)) {
                c.header = short.to_string();
            }
            c
        })
        .collect()
}

/// [`trace_columns`] as two narrower tables, each with the cell and `n`: where the time
/// went (the columns in seconds and microseconds), then who took the CPU (the counts).
pub fn trace_tables() -> [Vec<Col<TraceStats>>; 2] {
    let (mut times, mut counts) = (tables::trace_cell_names(), tables::trace_cell_names());
    let names = times.len();
    for c in trace_columns().into_iter().skip(names) {
        match c.header.ends_with("[s]") || c.header.ends_with("[us]") {
            true => times.push(c),
            false => counts.push(c),
        }
    }
    [times, counts]
}

/// True when `key` matches `pattern`: the key itself, or a glob where `*` stands for any
/// characters (`cpu/fifo*`, `*/n10`).
pub fn key_matches(pattern: &str, key: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == key;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !key.starts_with(first) || key.len() < first.len() + last.len() || !key.ends_with(last) {
        return false;
    }
    let mut rest = &key[first.len()..key.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_patterns_are_exact_keys_or_globs() {
        assert!(key_matches("cpu/fifo:98/n10", "cpu/fifo:98/n10"));
        assert!(!key_matches("cpu/fifo:98/n1", "cpu/fifo:98/n10"));
        assert!(key_matches("cpu/fifo*", "cpu/fifo:98/n10"));
        assert!(key_matches("*/n10", "cpu/fifo:98/n10"));
        assert!(key_matches("cpu/*/n10", "cpu/rr:98/n10"));
        assert!(!key_matches("cpu/*/n10", "io/rr:98/n10"));
        assert!(!key_matches("cpu/*/n10", "cpu/rr:98/n100"));
        assert!(key_matches("*", "anything"));
        assert!(!key_matches("a*a", "a"), "the two ends may not overlap");
    }

    #[test]
    fn unknown_figures_are_refused_with_the_closest_named() {
        let e = chosen(&["wal_s".into()]).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("did you mean \"wall_s\"?") && e.contains("procs_per_s"), "{e}");
        let two = chosen(&["preempted".into(), "wall_s".into(), "miss_pct".into()]).unwrap();
        assert_eq!(two.cell.iter().map(|f| f.name).collect::<Vec<_>>(), ["wall_s", "preempted"]);
        assert_eq!(two.rt, [&rt::MISS_PCT]);
        let all = chosen(&[]).unwrap();
        assert_eq!(all.cell.len(), TOTALS.len() + PER_PROCESS.len());
        assert_eq!(all.rt.len(), rt::FIGURES.len());
    }
}
