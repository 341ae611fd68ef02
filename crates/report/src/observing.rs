//! What observing a run's cells in the kernel cost (the BPF programs' own run time), in
//! words, and a traced cell repetition as JSON, for `schedlab trace`.

use schedlab_model::trace::{CellTrace, ObserverCost};
use schedlab_model::CellRecord;

/// What the BPF observer of a cell repetition cost, if it was observed (in a cell recorded
/// both ways, the figures beside the timeline's say).
pub fn cost(t: &CellTrace) -> Option<&ObserverCost> {
    t.observer.as_ref().or_else(|| t.bpf.as_ref().and_then(|b| b.observer.as_ref()))
}

/// "N ns/event, M events/s (K events)".
pub fn cost_line(events: u64, ns: f64, span_s: f64) -> String {
    let per_event = if events == 0 { 0.0 } else { ns / events as f64 };
    let per_s = if span_s > 0.0 { events as f64 / span_s } else { 0.0 };
    format!("{per_event:.0} ns/event, {per_s:.0} events/s ({events} events)")
}

/// One line on what observing the run's cells cost: all of them together, and the cells
/// that cost the least and the most per event (each cell's with --cell).
pub fn cost_summary(cells: &[CellRecord]) -> Option<String> {
    let costs = cell_costs(cells);
    let (events, ns, span) =
        costs.iter().fold((0, 0.0, 0.0), |(e, n, s), c| (e + c.1, n + c.2, s + c.3));
    let per_event = |c: &(String, u64, f64, f64)| if c.1 == 0 { 0.0 } else { c.2 / c.1 as f64 };
    let least = costs.iter().min_by(|a, b| per_event(a).total_cmp(&per_event(b)))?;
    let most = costs.iter().max_by(|a, b| per_event(a).total_cmp(&per_event(b)))?;
    Some(format!(
        "observing cost (the BPF programs' own run time), all cells: {}; per cell from {:.0} ({}) to {:.0} ns/event ({})",
        cost_line(events, ns, span),
        per_event(least),
        least.0,
        per_event(most),
        most.0
    ))
}

/// Per observed cell (in the order of the records), its events, ns in the programs and
/// seconds observed over its measured repetitions.
fn cell_costs(cells: &[CellRecord]) -> Vec<(String, u64, f64, f64)> {
    let mut out: Vec<(String, u64, f64, f64)> = Vec::new();
    for c in cells.iter().filter(|c| !c.warmup) {
        let Some((t, o)) = c.trace.as_ref().and_then(|t| Some((t, cost(t)?))) else { continue };
        let i = match out.iter().position(|(k, ..)| *k == c.params.key) {
            Some(i) => i,
            None => {
                out.push((c.params.key.clone(), 0, 0.0, 0.0));
                out.len() - 1
            }
        };
        out[i].1 += o.events;
        out[i].2 += o.ns_per_event * o.events as f64;
        out[i].3 += t.span_s;
    }
    out
}

/// A cell repetition's trace as JSON: the stored record, with the cell's identity (and
/// what observing cost, when the BPF programs observed it).
pub fn json(c: &CellRecord) -> serde_json::Value {
    let t = c.trace.as_ref().expect("filtered on traces");
    let mut v = serde_json::json!({
        "key": c.params.key,
        "rep": c.rep + 1,
        "warmup": c.warmup,
        "lost_events": t.lost_events,
        "untraced_switches": t.untraced_switches,
        "cpus": t.cpus,
        "workers": t.workers,
    });
    if let Some(o) = cost(t) {
        v["observer"] = serde_json::json!(o);
    }
    if let Some(b) = &t.bpf {
        v["bpf"] = serde_json::json!({ "cpus": b.cpus, "workers": b.workers });
    }
    v
}
