//! `schedlab trace`: what the kernel's scheduler trace of a run's cells says, per worker.

use super::common::{bad_input, open_existing, pick_run};
use schedlab_model::trace::{CellTrace, ObserverCost};
use schedlab_model::CellRecord;
use std::path::Path;
use std::process::ExitCode;

/// Output formats of `schedlab trace`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A table per cell repetition.
    Table,
    /// One JSON array of cell repetitions.
    Json,
}

/// Arguments of `schedlab trace`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Export one cell repetition instead of printing figures.
    #[command(subcommand)]
    pub export: Option<Sub>,
    /// Run id (the newest run without it).
    pub run: Option<i64>,
    /// Only the cell with this key (as `show` prints it).
    #[arg(long, value_name = "KEY")]
    pub cell: Option<String>,
    /// Only this repetition (1-based, as `show` counts them).
    #[arg(long, value_name = "N")]
    pub rep: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Every column of the per-worker table (without it, a table wider than 160 columns
    /// leaves its group, untraced, wait4 and CPU columns out and says so).
    #[arg(long)]
    pub wide: bool,
}

/// `schedlab trace`'s subcommand.
#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Write one cell repetition as a Perfetto trace (ui.perfetto.dev), or trace-cmd's trace.dat.
    Export(super::trace_export::Args),
}

/// Runs `schedlab trace`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    if let Some(Sub::Export(e)) = a.export {
        return super::trace_export::run(db, e);
    }
    let store = open_existing(db)?;
    let run = pick_run(&store, a.run)?;
    let cells = store.cells(run.id)?;
    let traced: Vec<&CellRecord> = cells.iter().filter(|c| c.trace.is_some()).collect();
    if traced.is_empty() {
        return Err(bad_input(format!("run {} has no kernel traces: run it with --trace (or trace = true in the spec), as root", run.id)));
    }
    if let Some(k) = &a.cell {
        if !traced.iter().any(|c| &c.params.key == k) {
            let keys: Vec<&str> = traced.iter().map(|c| c.params.key.as_str()).collect();
            return Err(bad_input(format!(
                "run {} has no traced cell {k:?}{}",
                run.id,
                super::show::key_hint(k, &keys, "traced cells")
            )));
        }
    }
    if a.cell.is_none() && a.rep.is_none() && a.format == Format::Table {
        let stats = schedlab_analysis::trace_stats(&cells);
        let [times, counts] = schedlab_report::cells::trace_tables();
        sayln!(
            "run {}: the kernel's trace per traced cell, per process: mean (±95% CI) over the \
             measured repetitions; --cell KEY shows each worker.",
            run.id
        );
        outln!("\nWhere the time went:");
        outln!("{}", schedlab_report::cells::render(&times, &stats, false, false).trim_end());
        outln!("\nWho took the CPU (involuntary switches, by whom):");
        outln!("{}", schedlab_report::cells::render(&counts, &stats, false, false).trim_end());
        sayln!("{PREEMPTED_BY}");
        if let Some(line) = cost_summary(&cells) {
            outln!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let chosen: Vec<&CellRecord> = traced
        .into_iter()
        .filter(|c| a.cell.as_ref().is_none_or(|k| &c.params.key == k))
        .filter(|c| a.rep.is_none_or(|r| c.rep + 1 == r))
        .collect();
    if chosen.is_empty() {
        return Err(bad_input(format!(
            "no traced repetition {} of that cell in run {}",
            a.rep.unwrap_or(0),
            run.id
        )));
    }
    match a.format {
        Format::Json => {
            let out: Vec<serde_json::Value> = chosen.iter().map(|c| json(c)).collect();
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        Format::Table => {
            for c in chosen {
                let t = c.trace.as_ref().expect("filtered on traces");
                println!(
                    "{} rep {}{}: lost events {}{}",
                    c.params.key,
                    c.rep + 1,
                    if c.warmup { " (warm-up)" } else { "" },
                    t.lost_events,
                    if t.untraced_switches > 0 {
                        format!(
                            ", {} switches the trace did not show (their time: untraced)",
                            t.untraced_switches
                        )
                    } else {
                        String::new()
                    }
                );
                println!("{}", schedlab_report::tables::trace_fitted(t, &c.samples, a.wide));
                if let Some(b) = &t.bpf {
                    println!("The same execution as the BPF programs aggregated it (the kernel's own clocks):");
                    println!("{}", schedlab_report::tables::trace_fitted(b, &c.samples, a.wide));
                }
                let cpus: Vec<String> = t
                    .cpus
                    .iter()
                    .map(|p| format!("cpu{} busy {:.3} s, idle {:.3} s", p.cpu, p.busy_s, p.idle_s))
                    .collect();
                println!("{}", cpus.join("; "));
                if let Some(o) = cost(t) {
                    let line = cost_line(o.events, o.ns_per_event * o.events as f64, t.span_s);
                    println!("observing cost {line}");
                }
                println!();
            }
            println!("{PREEMPTED_BY}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What the "preempted by" figures count, under the tables.
const PREEMPTED_BY: &str = "preempted by: w = another worker of the cell, e = schedlab's engine, \
                            k = a kernel thread, o = another process";

/// What the BPF observer of a cell repetition cost, if it was observed (in a cell recorded
/// both ways, the figures beside the timeline's say).
fn cost(t: &CellTrace) -> Option<&ObserverCost> {
    t.observer.as_ref().or_else(|| t.bpf.as_ref().and_then(|b| b.observer.as_ref()))
}

/// "N ns/event, M events/s (K events)".
fn cost_line(events: u64, ns: f64, span_s: f64) -> String {
    let per_event = if events == 0 { 0.0 } else { ns / events as f64 };
    let per_s = if span_s > 0.0 { events as f64 / span_s } else { 0.0 };
    format!("{per_event:.0} ns/event, {per_s:.0} events/s ({events} events)")
}

/// One line on what observing the run's cells cost: all of them together, and the cells
/// that cost the least and the most per event (each cell's with --cell).
fn cost_summary(cells: &[CellRecord]) -> Option<String> {
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
fn json(c: &CellRecord) -> serde_json::Value {
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
