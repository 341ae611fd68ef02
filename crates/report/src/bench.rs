//! The benchmark table: per cell whose workers stated the field's benchmark figures (a
//! `messaging`, `pipe` or `schbench` kind, or a command with `parse`), each figure of
//! [`bench::FIGURES`] that some cell has, mean ±95% CI over its repetitions.

use crate::cells::Keyed;
use crate::cols::{Col, Narrow};
use crate::tables::{fmt_summary, named_by_workload, reps, Named};
use schedlab_analysis::bench::{self, BenchFigure};
use schedlab_analysis::BenchStats;
use schedlab_model::CellParams;

impl Keyed for BenchStats {
    fn params(&self) -> &CellParams {
        &self.params
    }
}

/// What the table says about itself, after its title.
pub const NOTE: &str = "mean ±95% CI over n repetitions; the native kinds and the parsed originals state the same names: time = hackbench's Time, us/op and ops/s = perf bench sched pipe's, wakeup, request and rps percentiles = schbench's";

/// The table's rows: each cell with figures, with its workload name.
pub fn named(stats: &[BenchStats]) -> Vec<Named<'_, BenchStats>> {
    named_by_workload(stats, |s| &s.params)
}

/// Its columns: where the figures come from, the repetitions, then each of `figs` that
/// some cell of `stats` has.
pub fn columns<'a>(
    stats: &[BenchStats],
    figs: &[&'static BenchFigure],
) -> Vec<Col<Named<'a, BenchStats>>> {
    let mut cols = vec![
        Col::text("source", |r: &Named<BenchStats>| r.s.source.clone()).narrowed(Narrow::Label),
        Col::num("n", |r: &Named<BenchStats>| reps(r.s.reps, &r.s.params)),
    ];
    for f in bench::FIGURES.iter().filter(|f| figs.contains(f)) {
        if stats.iter().any(|s| s[f].n > 0) {
            cols.push(Col::num(f.header, move |r: &Named<BenchStats>| match r.s[f].n {
                0 => "-".into(),
                _ => fmt_summary(&r.s[f], f.digits),
            }));
        }
    }
    cols
}
