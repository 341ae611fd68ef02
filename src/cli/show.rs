//! `schedlab show`: a stored run as tables.

use super::campaign::Subject;
use super::common::{open_existing, pick_run, sim_model, utc};
use schedlab_store::Store;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of `schedlab show`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id, or a campaign (`campaign:ID` or its id); the newest run without it.
    pub run: Option<String>,
}

/// Prints the header, the per-cell totals and the per-process means of a run.
pub fn print_run(store: &Store, id: i64) -> anyhow::Result<()> {
    print_subject(&super::campaign::of_run(store, pick_run(store, Some(id))?)?)
}

/// A stored run's name as a line shows it: control characters as '?', at most
/// [`schedlab_spec::ECHO_CHARS`] characters (a spec may name a run with 100 KB).
pub fn shown_name(name: &str) -> String {
    let plain: String = name.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    schedlab_spec::cut(&plain, schedlab_spec::ECHO_CHARS)
}

/// A campaign's shards: where each ran and which cells each machine measured.
fn print_campaign(s: &Subject) -> anyhow::Result<()> {
    let r = &s.run;
    outln!(
        "{} — {} ({}, {}), {} shard runs, started {} UTC, {} cell repetitions stored, scale {}",
        s.name(),
        shown_name(&r.name),
        r.mode,
        r.status,
        s.shards.len(),
        utc(r.started_unix),
        r.cells_done,
        r.scale
    );
    for sh in &s.shards {
        let e = &sh.env;
        outln!(
            "  shard {}: run {} ({}) on {}: {} CPUs, {}, kernel {}, {} cell repetitions, {}",
            sh.identity.shard.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
            sh.id,
            sh.identity.uuid,
            e.machine.label(),
            e.cpus,
            e.cpu_model,
            e.kernel,
            sh.cells_done,
            sh.status
        );
    }
    outln!("\nMeasured on (repetitions per machine: the cells measured so):");
    for line in s.measured_on_lines(12) {
        outln!("  {line}");
    }
    for w in s.pooling_warnings() {
        outln!("warning: {w}");
    }
    Ok(())
}

/// Prints the header, the per-cell totals and the per-process means of a run or campaign.
pub fn print_subject(subject: &Subject) -> anyhow::Result<()> {
    let run = &subject.run;
    let cells = &subject.cells;
    let stats = schedlab_analysis::cell_stats(cells);
    if subject.campaign.is_some() {
        print_campaign(subject)?;
    } else {
        outln!(
            "run {} — {} ({}, {}), started {} UTC, {} cell repetitions stored, scale {}",
            run.id,
            shown_name(&run.name),
            run.mode,
            run.status,
            utc(run.started_unix),
            run.cells_done,
            run.scale
        );
        outln!(
            "machine: {} CPUs, {}, kernel {}, RT throttling {}/{} us",
            run.env.cpus,
            run.env.cpu_model,
            run.env.kernel,
            run.env.rt_runtime_us.map(|v| v.to_string()).unwrap_or("?".into()),
            run.env.rt_period_us.map(|v| v.to_string()).unwrap_or("?".into())
        );
    }
    if let Some(model) = sim_model(cells) {
        outln!("model: {model}");
    }
    if let Some(note) = schedlab_report::tables::dma_latency_note(&stats) {
        outln!("cpu_dma_latency {note}.");
    }
    print_knobs(&run.knobs_before, cells)?;
    outln!("\nValues are means over n repetitions; {}.", schedlab_report::tables::INTERVAL_NOTE);
    outln!("\nPer cell, totals over its processes (mean ±95% CI over n repetitions; preempted = involuntary, blocked = voluntary context switches):");
    outln!("{}", schedlab_report::tables::totals(&stats));
    outln!(
        "\nPer process (mean of each repetition's per-process mean, ±95% CI over n repetitions):"
    );
    outln!("{}", schedlab_report::tables::per_process(&stats));
    let grouped = stats.iter().any(|s| {
        s.params.groups.len() > 1
            || s.params.groups.iter().any(|g| {
                g.affinity != "all"
                    || g.cpu_weight.is_some()
                    || g.cpu_max.is_some()
                    || g.cpuset.is_some()
            })
            || s.params.workload_kind == "hash"
    });
    if grouped {
        outln!("\nThroughput and fairness (measured groups only; background groups count only in the CPU shares):");
        outln!("{}", schedlab_report::tables::fairness(&stats));
    }
    let io = schedlab_analysis::io_stats(cells);
    if !io.is_empty() {
        outln!(
            "\nI/O (mean ±95% CI over n repetitions; MB/s = bytes of the cell / its time; latency per read/write call, percentiles of each repetition's merged histogram; device counters from /sys/block/<dev>/stat):"
        );
        outln!("{}", schedlab_report::tables::io(&io));
    }
    let rt = schedlab_analysis::rt_stats(cells);
    if !rt.is_empty() {
        outln!(
            "\nReal-time task sets (mean ±95% CI over n repetitions; per process = averaged over the set's tasks; missed = misses / jobs; violations of (x, y) windows, fixed and sliding; latency = scheduling latency (wake-up, or hand-off under the edf and dwcs dispatchers), percentiles of each repetition's merged histogram; every job: export --jobs):"
        );
        outln!("{}", schedlab_report::tables::rt(&rt));
        if let Some(note) = schedlab_report::tables::rt_placement_note(&rt, run.env.cpus) {
            outln!("{note}.");
        }
        if let Some(t) = schedlab_report::tables::rt_cpus(&rt) {
            outln!("\nPartitioned sets, per CPU (the same figures for each CPU's tasks; C/T and min util. = that CPU's share):");
            outln!("{t}");
        }
    }
    if let Some(note) = schedlab_report::tables::repetitions_note(cells.iter().map(|c| &c.params)) {
        outln!("\n{note}.");
    }
    print_failures(cells)?;
    if !run.warnings.is_empty() {
        outln!("\n{} warning(s) during the run:", run.warnings.len());
        for w in run.warnings.iter().take(20) {
            outln!("  - {w}");
        }
    }
    if let Some(w) = schedlab_report::noise::noise_warning(cells, run.env.cpus as usize) {
        outln!("\nwarning: {w}");
    }
    Ok(())
}

/// Lists the measured repetitions left out of the figures because they failed, with why.
/// The knobs the run found and put back, and each set of values in force (read back).
fn print_knobs(
    before: &std::collections::BTreeMap<String, String>,
    cells: &[schedlab_model::CellRecord],
) -> anyhow::Result<()> {
    let list = |m: &std::collections::BTreeMap<String, String>| {
        m.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
    };
    if !before.is_empty() {
        outln!("knobs before the run (put back after it): {}", list(before));
    }
    let mut seen: Vec<(&std::collections::BTreeMap<String, String>, usize)> = Vec::new();
    for c in cells.iter().filter(|c| !c.knobs.is_empty()) {
        match seen.iter_mut().find(|(k, _)| *k == &c.knobs) {
            Some((_, n)) => *n += 1,
            None => seen.push((&c.knobs, 1)),
        }
    }
    for (k, n) in seen {
        outln!("knobs in force (read back) in {n} cell repetition(s): {}", list(k));
    }
    Ok(())
}

fn print_failures(cells: &[schedlab_model::CellRecord]) -> anyhow::Result<()> {
    let measured: Vec<_> = cells.iter().filter(|c| !c.warmup).collect();
    let failed: Vec<_> = measured.iter().filter(|c| !c.status.is_ok()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    outln!(
        "
{} of {} measured cell repetitions FAILED and are left out of the figures above:",
        failed.len(),
        measured.len()
    );
    const SHOWN: usize = 20;
    for c in failed.iter().take(SHOWN) {
        outln!(
            "  - {} rep {}: {}: {}",
            c.params.key,
            c.rep + 1,
            c.status.as_str(),
            c.message.as_deref().unwrap_or("?")
        );
    }
    if failed.len() > SHOWN {
        outln!(
            "  ... and {} more (`schedlab export` has every one: cell_status, cell_message)",
            failed.len() - SHOWN
        );
    }
    Ok(())
}

/// Runs `schedlab show`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(db)?;
    print_subject(&super::campaign::load(&store, a.run.as_deref())?)?;
    Ok(ExitCode::SUCCESS)
}
