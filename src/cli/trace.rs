//! `schedlab trace`: what the kernel's scheduler trace of a run's cells says, per worker.

use super::common::{bad_input, open_existing, pick_run};
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
                schedlab_session::subject::key_hint(k, &keys, "traced cells")
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
        if let Some(line) = schedlab_report::observing::cost_summary(&cells) {
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
            let out: Vec<serde_json::Value> =
                chosen.iter().map(|c| schedlab_report::observing::json(c)).collect();
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
                if let Some(o) = schedlab_report::observing::cost(t) {
                    let line = schedlab_report::observing::cost_line(
                        o.events,
                        o.ns_per_event * o.events as f64,
                        t.span_s,
                    );
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
