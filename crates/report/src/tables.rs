//! The tables of `schedlab show`: per-cell totals (like the PA3 scheduler study's Figure 11)
//! and per-process means (its Figure 12), each value a mean over repetitions with its 95%
//! confidence interval (analysis shapes it to stay in the quantity's range).

use crate::labels;
use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use schedlab_analysis::{CellStats, IoStats, RtStats, Summary, TraceStats};
use schedlab_plan::axis;

/// Formats a summary as `mean ±ci` (`mean +up/-down` when the interval is not symmetric at
/// `prec` decimals), or the mean with why it has no interval (`1.25 (n < 3)`); `-` when there
/// is no data.
pub fn fmt_summary(s: &Summary, prec: usize) -> String {
    if s.n == 0 || s.mean.is_nan() {
        return "-".into();
    }
    let mean = format!("{:.*}", prec, s.mean);
    match s.interval() {
        Ok((lo, hi)) => format!("{mean} {}", offsets(s.mean, lo, hi, prec)),
        Err(why) => format!("{mean} ({})", why.mark()),
    }
}

/// An interval as offsets from its centre: `±h` when both round alike at `prec` decimals,
/// else `+up/-down`.
pub fn offsets(centre: f64, lo: f64, hi: f64, prec: usize) -> String {
    let up = format!("{:.*}", prec, hi - centre);
    let down = format!("{:.*}", prec, centre - lo);
    if up == down {
        format!("±{up}")
    } else {
        format!("+{up}/-{down}")
    }
}

/// Marks the count of repetitions of a cell that stopped repeating adaptively before its
/// interval reached the target (see [`repetitions_note`]).
pub const NOT_REACHED: &str = "†";

/// The `n` column: repetitions in the figures, marked [`NOT_REACHED`] when the cell's
/// adaptive repetitions ended without reaching their target.
pub fn reps(n: usize, p: &schedlab_model::CellParams) -> String {
    match &p.repetitions {
        Some(o) if !o.reached => format!("{n}{NOT_REACHED}"),
        _ => n.to_string(),
    }
}

/// How the cells' adaptive repetitions ended, as a footnote to the tables, e.g. "adaptive
/// repetitions (3 to 30 until the 95% CI of the main figure is within ±5% of the mean): 5 of 6
/// cells reached it; † marks the one that did not: cpu/other/n8 (30 repetitions, ±12.1%)";
/// None under fixed repetitions.
pub fn repetitions_note<'a>(cells: impl Iterator<Item = &'a schedlab_model::CellParams>) -> Option<String> {
    let mut seen: Vec<(&str, &schedlab_model::RepetitionOutcome)> = Vec::new();
    for p in cells {
        if let Some(o) = &p.repetitions {
            if !seen.iter().any(|(k, _)| *k == p.key) {
                seen.push((&p.key, o));
            }
        }
    }
    let t = seen.first()?.1.target;
    let missed: Vec<String> = seen
        .iter()
        .filter(|(_, o)| !o.reached)
        .map(|(key, o)| {
            let h = o.half_width_pct.map_or_else(|| "no interval".to_string(), |h| format!("±{h:.1}%"));
            format!("{key} ({} repetitions, {h})", o.repetitions)
        })
        .collect();
    let mut note = format!(
        "adaptive repetitions ({} to {} until the 95% CI of the main figure is within ±{}% of the mean): {} of {} cells reached it",
        t.min,
        t.max,
        t.ci_pct,
        seen.len() - missed.len(),
        seen.len()
    );
    if !missed.is_empty() {
        note.push_str(&format!("; {NOT_REACHED} marks the {} that did not: {}", missed.len(), missed.join(", ")));
    }
    Some(note)
}

/// What the run held /dev/cpu_dma_latency at, e.g. "held at 0 us in 4 of 10 cells (the
/// real-time ones)"; None when no cell held it (nor for runs from before it was stored).
pub fn dma_latency_note(stats: &[CellStats]) -> Option<String> {
    let mut held: Vec<u32> = stats.iter().filter_map(|s| s.cpu_dma_latency_us).collect();
    if held.is_empty() {
        return None;
    }
    let n = held.len();
    held.sort_unstable();
    held.dedup();
    let values = held.iter().map(|v| format!("{v} us")).collect::<Vec<_>>().join(" / ");
    Some(format!("held at {values} in {n} of {} cells (the real-time and periodic ones), as cyclictest holds it", stats.len()))
}

/// What a table's `±` and marks mean, for the line above it.
pub const INTERVAL_NOTE: &str = "± = 95% CI over repetitions, +up/-down where it is not symmetric (log scale for times, \
                                 counts and rates, logit scale for shares and percentages); (n < 3): too few repetitions \
                                 for an interval; (± > mean): its half-width exceeds the mean";

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled).set_header(header.to_vec());
    for i in 3..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Each cell's (workload, policy) row names: the workload with the groups it competes with,
/// the policy with its affinity and cgroup, each only where the cells differ in it (lab1's
/// `hash vs 8 bg` | `other, spread, weight 200`).
fn row_labels(stats: &[CellStats]) -> Vec<(String, String)> {
    labels::rows(&stats.iter().map(|s| &s.params).collect::<Vec<_>>(), true)
}

/// The workload column of tables with their own scheduler columns (I/O, real-time): the
/// workload and, where the cells differ in it, what it competes with (`fft vs 1 flood`).
fn workload_names<'a>(params: impl Iterator<Item = &'a schedlab_model::CellParams>) -> Vec<String> {
    labels::rows(&params.collect::<Vec<_>>(), false).into_iter().map(|(w, _)| w).collect()
}

/// The note on failed repetitions: how many of the cell's were left out of its figures,
/// how many of them timed out, and the first reason.
fn left_out(failed: usize, ok: usize, timed_out: usize, why: Option<&str>) -> String {
    let t = if timed_out > 0 { format!(", {timed_out} timed out") } else { String::new() };
    format!("FAILED {failed} of {} reps (left out{t}): {}", failed + ok, why.unwrap_or("?"))
}

/// Why a cell's numbers may be incomplete: failures, time-outs, signals, non-zero exits.
pub fn status(s: &CellStats) -> String {
    let mut notes = Vec::new();
    if s.failed > 0 {
        notes.push(left_out(s.failed, s.reps, s.timed_out, s.failure.as_deref()));
    }
    if s.signalled > 0 {
        notes.push(format!("{} killed by signal", s.signalled));
    }
    if s.nonzero_exit > 0 {
        notes.push(format!("{} exit != 0", s.nonzero_exit));
    }
    notes.join("; ")
}

/// Columns of the per-cell totals (the last one, notes, is text).
pub const TOTALS_HEADER: [&str; 11] = [
    axis::WORKLOAD.header,
    axis::POLICY.header,
    axis::PROCESSES.header,
    "n",
    "wall [s]",
    "user [CPU-s]",
    "sys [CPU-s]",
    "CPU [%]",
    "preempted",
    "blocked",
    "notes",
];

/// Rows of the per-cell totals, one per cell; the terminal and the HTML report both draw these.
pub fn totals_rows(stats: &[CellStats]) -> Vec<Vec<String>> {
    stats
        .iter()
        .zip(row_labels(stats))
        .map(|(s, (workload, policy))| {
            vec![
                workload,
                policy,
                s.params.processes.to_string(),
                reps(s.reps, &s.params),
                fmt_summary(&s.makespan, 2),
                fmt_summary(&s.user_total, 2),
                fmt_summary(&s.sys_total, 2),
                fmt_summary(&s.cpu_pct_total, 0),
                fmt_summary(&s.invol_total, 0),
                fmt_summary(&s.vol_total, 0),
                status(s),
            ]
        })
        .collect()
}

/// Columns of the per-process means.
pub const PER_PROCESS_HEADER: [&str; 11] = [
    axis::WORKLOAD.header,
    axis::POLICY.header,
    axis::PROCESSES.header,
    "n",
    "wall/proc [s]",
    "user/proc",
    "sys/proc",
    "CPU/proc [%]",
    "preempted/proc",
    "blocked/proc",
    "procs/s",
];

/// Rows of the per-process means, one per cell; shared by the terminal and the HTML report.
pub fn per_process_rows(stats: &[CellStats]) -> Vec<Vec<String>> {
    stats
        .iter()
        .zip(row_labels(stats))
        .map(|(s, (workload, policy))| {
            vec![
                workload,
                policy,
                s.params.processes.to_string(),
                reps(s.reps, &s.params),
                fmt_summary(&s.wall_per_proc, 3),
                fmt_summary(&s.user_per_proc, 3),
                fmt_summary(&s.sys_per_proc, 4),
                fmt_summary(&s.cpu_pct_per_proc, 0),
                fmt_summary(&s.invol_per_proc, 1),
                fmt_summary(&s.vol_per_proc, 1),
                fmt_summary(&s.throughput, 2),
            ]
        })
        .collect()
}

/// Per-cell totals: wall (makespan), user, sys, CPU%, preempted, blocked.
pub fn totals(stats: &[CellStats]) -> Table {
    let mut t = table(&TOTALS_HEADER);
    for row in totals_rows(stats) {
        t.add_row(row);
    }
    t
}

/// Per-process means: wall, user, sys, CPU%, preempted and blocked per process.
pub fn per_process(stats: &[CellStats]) -> Table {
    let mut t = table(&PER_PROCESS_HEADER);
    for row in per_process_rows(stats) {
        t.add_row(row);
    }
    t
}

/// Throughput and fairness per cell (seed 004's tables): makespan, processes and work
/// units per second, Jain's index over per-process throughput, the max deviation of
/// completion time from its mean, its coefficient of variation, and each group's CPU share.
pub fn fairness(stats: &[CellStats]) -> Table {
    let mut t = table(&["cell", "procs", "n", "makespan [s]", "procs/s", "units/s", "Jain", "max dev [s]", "CV", "CPU share by group"]);
    for s in stats {
        let shares = s.group_share.iter().map(|(g, x)| format!("{g} {}", fmt_summary(&x.scaled(100.0), 0))).collect::<Vec<_>>().join(", ");
        t.add_row(vec![
            s.params.key.clone(),
            s.params
                .groups
                .iter()
                .map(|g| format!("{}{}", g.processes, if g.background { "bg" } else { "" }))
                .collect::<Vec<_>>()
                .join("+"),
            reps(s.reps, &s.params),
            fmt_summary(&s.makespan, 3),
            fmt_summary(&s.throughput, 3),
            fmt_summary(&s.work_rate, 0),
            fmt_summary(&s.jain, 3),
            fmt_summary(&s.max_dev_completion, 3),
            fmt_summary(&s.cv_completion, 3),
            if shares.is_empty() { "-".into() } else { format!("{shares} (%)") },
        ]);
    }
    t
}

/// Columns of the I/O table.
pub const IO_HEADER: [&str; 15] = [
    axis::WORKLOAD.header,
    axis::IOSCHED.header,
    "op",
    "n",
    "time [s]",
    "MB/s",
    "file [s]",
    "p50 [us]",
    "p99 [us]",
    "p99.9 [us]",
    "max [us]",
    "dev reqs",
    "merged",
    "req [KiB]",
    "in queue [s]",
];

/// Rows of the I/O table (seed 002's figures plus latency and device counters), one per
/// cell that did I/O; shared by the terminal and the HTML report.
pub fn io_rows(stats: &[IoStats]) -> Vec<Vec<String>> {
    stats
        .iter()
        .zip(workload_names(stats.iter().map(|s| &s.params)))
        .map(|(s, workload)| {
            let sched = match (&s.params.iosched, s.schedulers.as_slice()) {
                (Some(name), [one]) if name == one => format!("{one} ({})", s.queue_device),
                (Some(name), seen) => format!("{name} = {} ({})", seen.join("/"), s.queue_device),
                (None, seen) => format!("{} ({})", seen.join("/"), s.queue_device),
            };
            vec![
                workload,
                sched,
                format!("{} {}", s.op, s.mode),
                reps(s.reps, &s.params),
                fmt_summary(&s.makespan, 2),
                fmt_summary(&s.mb_s, 1),
                fmt_summary(&s.file_time, 3),
                fmt_summary(&s.lat_p50_us, 0),
                fmt_summary(&s.lat_p99_us, 0),
                fmt_summary(&s.lat_p999_us, 0),
                fmt_summary(&s.lat_max_us, 0),
                fmt_summary(&s.dev_ios, 0),
                fmt_summary(&s.dev_merges, 0),
                fmt_summary(&s.dev_req_kib, 0),
                fmt_summary(&s.dev_queue_s, 2),
            ]
        })
        .collect()
}

/// The I/O table: time, throughput, per-file time, per-call latency percentiles and the
/// data device's request counts per cell.
pub fn io(stats: &[IoStats]) -> Table {
    let mut t = table(&IO_HEADER);
    for row in io_rows(stats) {
        t.add_row(row);
    }
    t
}

/// Columns of the real-time table.
pub const RT_HEADER: [&str; 14] = [
    axis::WORKLOAD.header,
    axis::SCHEDULER.header,
    axis::UTILISATION.header,
    "n",
    "min util.",
    "jobs",
    "missed [%]",
    "misses/proc",
    "fixed viol./proc",
    "sliding viol./proc",
    "in violation [%]",
    "latency p50 [us]",
    "latency p99 [us]",
    "notes",
];

/// Why a real-time cell's numbers may be incomplete or differ in kind: failed starts,
/// time-outs, who counted, the feasibility test's guarantee.
fn rt_notes(s: &RtStats) -> String {
    let mut notes = Vec::new();
    if s.failed > 0 {
        notes.push(left_out(s.failed, s.reps, s.timed_out, s.failure.as_deref()));
    }
    if s.source == "dispatcher" {
        notes.push("dispatcher's tally".into());
    }
    match s.latency_kind.as_str() {
        "" if s.reps > 0 => notes.push("no latencies recorded".into()),
        "hand-off" => notes.push("latency = hand-off".into()),
        _ => {}
    }
    if s.guaranteed {
        notes.push("DWCS-guaranteed".into());
    }
    notes.join("; ")
}

/// Rows of the real-time table (seed 003), one per periodic cell; shared by the terminal
/// and the HTML report.
pub fn rt_rows(stats: &[RtStats]) -> Vec<Vec<String>> {
    stats
        .iter()
        .zip(workload_names(stats.iter().map(|s| &s.params)))
        .map(|(s, workload)| {
            let mut row = vec![
                workload,
                s.scheduler.clone(),
                s.utilisation.map_or_else(|| "-".into(), |u| u.to_string()),
                reps(s.reps, &s.params),
                s.min_utilisation.map_or_else(|| "-".into(), |u| format!("{u:.3}")),
            ];
            let figures = [
                (&s.jobs, 0),
                (&s.miss_pct, 2),
                (&s.misses_per_proc, 1),
                (&s.fixed_violations_per_proc, 1),
                (&s.sliding_violations_per_proc, 1),
                (&s.time_in_violation_pct, 2),
                (&s.wakeup_p50_us, 1),
                (&s.wakeup_p99_us, 1),
            ];
            row.extend(figures.iter().map(|(x, prec)| fmt_summary(x, *prec)));
            row.push(rt_notes(s));
            row
        })
        .collect()
}

/// The real-time table: per periodic cell, jobs, deadline misses, window violations per
/// process, time in violation and wake-up latency percentiles.
pub fn rt(stats: &[RtStats]) -> Table {
    let mut t = table(&RT_HEADER);
    if let Some(c) = t.column_mut(RT_HEADER.len() - 1) {
        c.set_cell_alignment(CellAlignment::Left);
    }
    for row in rt_rows(stats) {
        t.add_row(row);
    }
    t
}

/// Columns of the per-CPU table of partitioned real-time sets.
pub const RT_CPU_HEADER: [&str; 11] = [
    axis::WORKLOAD.header,
    axis::SCHEDULER.header,
    axis::UTILISATION.header,
    "cpu",
    "tasks",
    "C/T",
    "min util.",
    "jobs",
    "missed [%]",
    "sliding viol./proc",
    "in violation [%]",
];

/// Rows of the per-CPU table: one per CPU of each partitioned periodic cell (cells on one
/// CPU have none); shared by the terminal and the HTML report.
pub fn rt_cpu_rows(stats: &[RtStats]) -> Vec<Vec<String>> {
    stats
        .iter()
        .zip(workload_names(stats.iter().map(|s| &s.params)))
        .flat_map(|(s, workload)| {
            s.per_cpu.iter().map(move |c| {
                let mut row = vec![
                    workload.clone(),
                    s.scheduler.clone(),
                    s.utilisation.map_or_else(|| "-".into(), |u| u.to_string()),
                    c.cpu.to_string(),
                    c.tasks.to_string(),
                    c.theory.as_ref().map_or_else(|| "-".into(), |t| format!("{:.3}", t.plain_utilisation)),
                    c.theory.as_ref().map_or_else(|| "-".into(), |t| format!("{:.3}", t.min_utilisation)),
                ];
                let figures = [(&c.jobs, 0), (&c.miss_pct, 2), (&c.sliding_violations_per_proc, 1), (&c.time_in_violation_pct, 2)];
                row.extend(figures.iter().map(|(x, prec)| fmt_summary(x, *prec)));
                row
            })
        })
        .collect()
}

/// The per-CPU table of partitioned sets, or None when no cell was partitioned.
pub fn rt_cpus(stats: &[RtStats]) -> Option<Table> {
    let rows = rt_cpu_rows(stats);
    (!rows.is_empty()).then(|| {
        let mut t = table(&RT_CPU_HEADER);
        for row in rows {
            t.add_row(row);
        }
        t
    })
}

/// Columns of the per-worker trace table (`schedlab trace`).
pub const TRACE_HEADER: [&str; 14] = [
    "worker",
    "pid",
    "group",
    "run [s]",
    "untraced [s]",
    "wait4 cpu [s]",
    "runnable [s]",
    "blocked [s]",
    "involuntary",
    "preempted by w/e/k/o",
    "migrations",
    "wake-up p50 [us]",
    "wake-up p99 [us]",
    "cpus",
];

/// One cell repetition's trace, a row per worker (beside its wait4 CPU time, which lies
/// between run and run + untraced) and a last row of totals.
pub fn trace(t: &schedlab_model::trace::CellTrace, samples: &[schedlab_model::Sample]) -> Table {
    let mut tb = table(&TRACE_HEADER);
    let us = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into());
    let mut tot = schedlab_model::trace::WorkerTrace::default();
    let mut cpu = 0.0;
    for (i, w) in t.workers.iter().enumerate() {
        let s = samples.iter().find(|s| s.pid == w.pid);
        let by = &w.preempted_by;
        tb.add_row(vec![
            s.map(|s| s.index).unwrap_or(i as u32).to_string(),
            w.pid.to_string(),
            s.map(|s| s.group.clone()).unwrap_or_default(),
            format!("{:.4}", w.run_s),
            format!("{:.4}", w.untraced_s),
            s.map(|s| format!("{:.4}", s.user_s + s.sys_s)).unwrap_or_else(|| "-".into()),
            format!("{:.4}", w.runnable_s),
            format!("{:.4}", w.blocked_s),
            w.involuntary.to_string(),
            format!("{}/{}/{}/{}", by.worker, by.engine, by.kernel, by.other),
            w.migrations.to_string(),
            us(w.wakeup_p50_us),
            us(w.wakeup_p99_us),
            crate::tables::cpu_list(&w.cpus),
        ]);
        tot.run_s += w.run_s;
        tot.untraced_s += w.untraced_s;
        tot.runnable_s += w.runnable_s;
        tot.blocked_s += w.blocked_s;
        tot.involuntary += w.involuntary;
        tot.migrations += w.migrations;
        tot.preempted_by.worker += by.worker;
        tot.preempted_by.engine += by.engine;
        tot.preempted_by.kernel += by.kernel;
        tot.preempted_by.other += by.other;
        cpu += s.map(|s| s.user_s + s.sys_s).unwrap_or(0.0);
    }
    let by = &tot.preempted_by;
    tb.add_row(vec![
        "all".to_string(),
        String::new(),
        String::new(),
        format!("{:.4}", tot.run_s),
        format!("{:.4}", tot.untraced_s),
        format!("{cpu:.4}"),
        format!("{:.4}", tot.runnable_s),
        format!("{:.4}", tot.blocked_s),
        tot.involuntary.to_string(),
        format!("{}/{}/{}/{}", by.worker, by.engine, by.kernel, by.other),
        tot.migrations.to_string(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    tb
}

/// Columns of the report's per-cell trace table: where the processes' time went and who
/// took their CPU.
pub const TRACE_CELL_HEADER: [&str; 12] = [
    "cell",
    "n",
    "run [s]",
    "runnable [s]",
    "blocked [s]",
    "involuntary",
    "preempted by: worker / engine / kernel / other",
    "migrations",
    "wake-up p50 [us]",
    "wake-up p99 [us]",
    "lost events",
    "untraced switches",
];

/// "12 (40%)": a count with its share of `total`.
fn share(n: u64, total: u64) -> String {
    if total == 0 {
        return n.to_string();
    }
    format!("{n} ({:.0}%)", 100.0 * n as f64 / total as f64)
}

/// One row per traced cell: per process means over the traced repetitions (±95% CI), the
/// involuntary switch-outs of all repetitions by who took the CPU.
pub fn trace_rows(stats: &[TraceStats]) -> Vec<Vec<String>> {
    stats
        .iter()
        .map(|s| {
            let by = &s.preempted_by;
            let total = by.total();
            vec![
                s.params.key.clone(),
                reps(s.reps, &s.params),
                fmt_summary(&s.run_per_proc, 4),
                fmt_summary(&s.runnable_per_proc, 4),
                fmt_summary(&s.blocked_per_proc, 4),
                fmt_summary(&s.involuntary_per_proc, 1),
                [by.worker, by.engine, by.kernel, by.other].map(|n| share(n, total)).join(" / "),
                fmt_summary(&s.migrations_per_proc, 1),
                fmt_summary(&s.wakeup_p50_us, 1),
                fmt_summary(&s.wakeup_p99_us, 1),
                s.lost_events.to_string(),
                s.untraced_switches.to_string(),
            ]
        })
        .collect()
}

/// A CPU list in the kernel's short form (`0-2,5`).
fn cpu_list(cpus: &[u32]) -> String {
    schedlab_plan::cpulist::format(cpus)
}
