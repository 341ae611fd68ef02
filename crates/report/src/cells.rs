//! The per-cell summary a write-up quotes: each cell named by its key (the key `trace --cell`
//! takes), for `schedlab show` (table, Markdown, CSV, JSON) and `export --per cell`. The
//! tables are those of [`crate::tables`], narrowed: the key stands for the row labels, and
//! the figures are the ones asked for.

use crate::cols::{self, Col};
use crate::tables::{self, Figure, Named, PER_PROCESS, TOTALS};
use schedlab_analysis::{CellStats, IoStats, RtStats, Summary, TraceStats};
use schedlab_model::CellParams;
use serde_json::{json, Map, Value};

/// Every per-cell figure: the totals, then the per-process means.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    TOTALS.iter().chain(PER_PROCESS.iter())
}

/// A figure name that no per-cell figure has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFigure {
    /// The name as given.
    pub name: String,
}

impl std::fmt::Display for UnknownFigure {
    /// Suggests the closest name and lists them all.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known: Vec<&str> = figures().map(|f| f.name).collect();
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
pub fn chosen(names: &[String]) -> Result<Vec<&'static Figure>, UnknownFigure> {
    if let Some(bad) = names.iter().find(|n| !figures().any(|f| f.name == n.as_str())) {
        return Err(UnknownFigure { name: bad.clone() });
    }
    Ok(figures().filter(|f| names.is_empty() || names.iter().any(|n| n == f.name)).collect())
}

/// One object per cell: `key`, `workload`, `policy`, `processes`, `n`, then for each figure
/// its mean as `NAME` and its 95% interval as `NAME_ci_low` and `NAME_ci_high` (null where
/// there is none). The names are stable: scripts read them.
pub fn values(stats: &[CellStats], figs: &[&Figure]) -> Vec<Value> {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
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
            for f in figs {
                let x: &Summary = (f.get)(s);
                let (lo, hi) = x.interval().unwrap_or((f64::NAN, f64::NAN));
                let mean = if x.n == 0 { f64::NAN } else { x.mean };
                row.insert(f.name.into(), num(mean));
                row.insert(format!("{}_ci_low", f.name), num(lo));
                row.insert(format!("{}_ci_high", f.name), num(hi));
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

/// The row-label columns a cell's key stands for (workload, policy, processes, scheduler,
/// utilisation): the narrow tables leave them out.
pub const LABELS: [&str; 5] = ["workload", "policy", "procs", "scheduler", "utilisation"];

/// `cols` as `show` draws them: the key first; the row labels only when `wide`; none of
/// the columns headed `drop`.
pub fn narrow<'a, T: Keyed>(
    cols: Vec<Col<Named<'a, T>>>,
    wide: bool,
    drop: &[&str],
) -> Vec<Col<Named<'a, T>>> {
    let kept = cols.into_iter().filter(|c| {
        !drop.contains(&c.header.as_str()) && (wide || !LABELS.contains(&c.header.as_str()))
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
    let mut drop = unchosen(figs);
    if !wide {
        drop.extend(tables::SCHED_PER_PROCESS);
    }
    narrow(tables::per_process_columns_for(stats), wide, &drop)
}

/// Columns of the I/O table a narrow `show` leaves to `--wide`.
pub const IO_SECONDARY: [&str; 6] =
    ["file [s]", "p99.9 [us]", "dev reqs", "merged", "req [KiB]", "in queue [s]"];

/// Columns of the real-time table a narrow `show` leaves to `--wide`.
pub const RT_SECONDARY: [&str; 5] =
    ["min util.", "misses/proc", "fixed viol./proc", "in violation [%]", "latency p50 [us]"];

/// The widest a terminal table is drawn without `--wide`.
pub const MAX_WIDTH: usize = 160;

/// `cols` as `draw` writes them, leaving out the columns headed `spare`, in that order, while
/// the first line (a terminal table's top border) is wider than [`MAX_WIDTH`]; with the
/// note naming what it left (`--wide` shows them) under it.
pub fn fit<R>(mut cols: Vec<Col<R>>, spare: &[&str], draw: impl Fn(&[Col<R>]) -> String) -> String {
    let mut left = Vec::new();
    loop {
        let text = draw(&cols);
        let width = text.lines().next().map_or(0, |l| l.chars().count());
        match spare.iter().find(|h| cols.iter().any(|c| c.header == **h)) {
            Some(h) if width > MAX_WIDTH => {
                cols.retain(|c| c.header != *h);
                left.push(*h);
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
pub fn markdown(stats: &[CellStats], figs: &[&Figure], deterministic: bool) -> String {
    let rows = tables::named(stats);
    let mut out = match deterministic {
        true => format!("{}.\n\n", tables::DETERMINISTIC_NOTE),
        false => String::new(),
    };
    for (title, set, cols) in [
        ("Per cell, totals over its processes", &TOTALS[..], totals_columns(false, figs)),
        ("Per process", &PER_PROCESS[..], per_process_columns(stats, false, figs)),
    ] {
        if any_of(figs, set) {
            out.push_str(&format!("{title} (mean ±95% CI over n repetitions):\n"));
            out.push_str(&render(&cols, &rows, true, deterministic));
            out.push('\n');
        }
    }
    out
}

/// Shorter headers of the per-cell trace table for the terminal.
const TRACE_HEADERS: [(&str, &str); 4] = [
    ("wake-up p50 [us]", "wake p50 [us]"),
    ("wake-up p99 [us]", "wake p99 [us]"),
    ("lost events", "lost"),
    ("untraced switches", "untraced sw."),
];

/// The per-cell trace table as `schedlab trace` draws it without `--cell`: the report's
/// columns ([`tables::trace_cell_columns`]) with shorter headers, and who preempted the
/// processes as percentages (`w/e/k/o [%]`).
pub fn trace_columns() -> Vec<Col<TraceStats>> {
    tables::trace_cell_columns()
        .into_iter()
        .map(|mut c| {
            if c.header.starts_with("preempted by") {
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
            if let Some((_, short)) = TRACE_HEADERS.iter().find(|(long, _)| c.header == *long) {
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
        let two = chosen(&["preempted".into(), "wall_s".into()]).unwrap();
        assert_eq!(two.iter().map(|f| f.name).collect::<Vec<_>>(), ["wall_s", "preempted"]);
        assert_eq!(chosen(&[]).unwrap().len(), TOTALS.len() + PER_PROCESS.len());
    }
}
