//! Issue #17's state bars: for each traced cell, one row per worker of its first traced
//! repetition, coloured by what the kernel trace says the worker was doing over time
//! (running, runnable but waiting for a CPU, blocked or asleep).

use super::{slug, Chart, ChartKind, FigureInput, StateRows};
use schedlab_analysis::TraceStats;

/// Rows drawn at most: more would be thinner than a pixel line of text; a larger cell shows
/// this many workers, evenly spaced by index.
pub const MAX_ROWS: usize = 32;

/// The workers drawn of `n`: all up to [`MAX_ROWS`], else that many evenly spaced.
fn picked(n: usize) -> Vec<usize> {
    if n <= MAX_ROWS {
        return (0..n).collect();
    }
    (0..MAX_ROWS).map(|k| k * (n - 1) / (MAX_ROWS - 1)).collect()
}

fn chart(s: &TraceStats) -> Option<Chart> {
    let (rep, trace, groups) = s.example.as_ref()?;
    if trace.slice_s <= 0.0 {
        return None;
    }
    let shown = picked(trace.workers.len());
    let mut rows = Vec::new();
    for &i in &shown {
        let w = &trace.workers[i];
        let shares = w.states.as_ref().and_then(|b| b.decode())?;
        let group = groups.get(i).filter(|g| !g.is_empty() && *g != "main");
        let label = match group {
            Some(g) => format!("{g} #{i}"),
            None => format!("#{i}"),
        };
        rows.push((label, shares));
    }
    let n = trace.workers.len();
    let which = if shown.len() < n {
        format!(
            "{} of its {n} workers, evenly spaced by index (#k is the worker's index)",
            shown.len()
        )
    } else {
        format!("each of its {n} workers (#k is the worker's index)")
    };
    Some(Chart {
        kind: ChartKind::States,
        id: format!("states-{}", slug(&s.params.key)),
        title: format!("Worker states: {}", s.params.key),
        caption: format!(
            "What the kernel's scheduler trace of repetition {rep} says {which} was doing over the traced window (from the \
             capture's start, before the workers were spawned, to its stop after the last was reaped), cut into slices of \
             {:.3} ms: each slice of a row is filled by the shares of it spent running (green), runnable but waiting for a \
             CPU (orange) and blocked or asleep (blue); blank is before the worker existed or after it exited.",
            trace.slice_s * 1e3
        ),
        x_label: "seconds since the trace began".into(),
        y_label: String::new(),
        categories: Vec::new(),
        series: Vec::new(),
        reference: None,
        states: StateRows { slice_s: trace.slice_s, rows },
    })
}

/// One state chart per traced cell whose trace kept the state bars.
pub(super) fn state_bars(d: &FigureInput) -> Vec<Chart> {
    d.traces.iter().filter_map(chart).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_cells_show_evenly_spaced_workers_first_and_last_included() {
        assert_eq!(picked(3), vec![0, 1, 2]);
        let p = picked(500);
        assert_eq!(p.len(), MAX_ROWS);
        assert_eq!((p[0], *p.last().unwrap()), (0, 499));
        assert!(p.windows(2).all(|w| w[0] < w[1]));
    }
}
