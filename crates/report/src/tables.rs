//! The tables of `schedlab show`: per-cell totals (like the PA3 scheduler study's Figure 11)
//! and per-process means (its Figure 12), each value a mean over repetitions with its 95%
//! confidence interval (analysis shapes it to stay in the quantity's range).

use crate::cols::{self, Align, Col, Narrow};
use crate::labels;
use comfy_table::Table;
use schedlab_analysis::rt::{self, InTable};
use schedlab_analysis::trace::{self, Reading, TraceFigure};
use schedlab_analysis::{CellStats, IoStats, NoInterval, RtStats, Summary, TraceStats};
use schedlab_model::trace::{CellTrace, PreemptedBy, WorkerTrace};
use schedlab_model::{CpuTheory, Sample};
use schedlab_plan::axis;

/// Formats a summary as `mean ±ci` (`mean +up/-down` when the interval is not symmetric at
/// `prec` decimals), or the mean marked with why it has no interval: [`FEW`] for too few
/// repetitions (`1.25*`), [`WIDE`] for an interval wider than the mean (`1.25‡`), each
/// explained once by its table's footnote ([`footnotes`]); `-` when there is no data.
pub fn fmt_summary(s: &Summary, prec: usize) -> String {
    if s.n == 0 || s.mean.is_nan() {
        return "-".into();
    }
    let mean = format!("{:.*}", prec, s.mean);
    match s.interval() {
        Ok((lo, hi)) => format!("{mean} {}", offsets(s.mean, lo, hi, prec)),
        Err(why) => format!("{mean}{}", mark(why)),
    }
}

/// Marks a mean shown without an interval because it has fewer than 3 repetitions.
pub const FEW: &str = "*";

/// The footnote of a table with values marked [`FEW`].
pub const FEW_NOTE: &str = "* fewer than 3 repetitions: no interval";

/// Marks a mean shown without an interval because the interval's half-width exceeds it.
pub const WIDE: &str = "‡";

/// The footnote of a table with values marked [`WIDE`].
pub const WIDE_NOTE: &str = "‡ the 95% CI's half-width exceeds the mean: no interval";

/// The mark of a figure shown without its interval, explained once under its table.
pub fn mark(why: NoInterval) -> &'static str {
    match why {
        NoInterval::FewValues => FEW,
        NoInterval::WiderThanEstimate => WIDE,
    }
}

/// The footnotes of a table whose cells are `rows`: one per mark ([`FEW`], [`WIDE`]) some
/// figure carries.
pub fn footnotes(rows: &[Vec<String>]) -> Vec<&'static str> {
    [(FEW, FEW_NOTE), (WIDE, WIDE_NOTE)]
        .into_iter()
        .filter(|(mark, _)| has_mark(rows, mark))
        .map(|(_, note)| note)
        .collect()
}
/// The longest note a terminal table keeps in its row; a longer one keeps its head (the
/// text before its first `: `) and a numbered reference to the rest, printed once under the
/// table ([`long_notes`]).
pub const NOTE_CHARS: usize = 40;

/// Moves the long parts of the `notes` column of `rows` (notes are `; `-separated) to
/// numbered footnotes, returned in order, one per distinct text (`[1] cannot be simulated:
/// ...`): a table of failed cells stays as wide as its figures instead of its longest reason.
pub fn long_notes(rows: &mut [Vec<String>], notes: Option<usize>) -> Vec<String> {
    let Some(col) = notes else { return Vec::new() };
    let mut texts: Vec<String> = Vec::new();
    for row in rows.iter_mut() {
        let Some(cell) = row.get_mut(col) else { continue };
        let parts: Vec<String> = cell
            .split("; ")
            .map(|part| {
                if part.chars().count() <= NOTE_CHARS {
                    return part.to_string();
                }
                let (head, rest) = match part.split_once(": ") {
                    Some((h, r)) if h.chars().count() <= NOTE_CHARS => (h, r),
                    _ => ("", part),
                };
                let n = match texts.iter().position(|t| t == rest) {
                    Some(i) => i + 1,
                    None => {
                        texts.push(rest.to_string());
                        texts.len()
                    }
                };
                if head.is_empty() {
                    format!("[{n}]")
                } else {
                    format!("{head} [{n}]")
                }
            })
            .collect();
        *cell = parts.join("; ");
    }
    texts.iter().enumerate().map(|(i, t)| format!("[{}] {t}", i + 1)).collect()
}

/// The footnote of a simulated run's tables, whose repetitions are identical by construction.
pub const DETERMINISTIC_NOTE: &str =
    "simulated: the repetitions are identical by construction (deterministic), so no interval";

/// True when a cell of `rows` holds a figure marked `mark` (a digit followed by the mark).
fn has_mark(rows: &[Vec<String>], mark: &str) -> bool {
    rows.iter().flatten().any(|c| c.match_indices(mark).any(|(i, _)| marks(c, i)))
}

/// True when the mark at byte `i` of `cell` follows a digit (marks a figure).
fn marks(cell: &str, i: usize) -> bool {
    cell[..i].chars().next_back().is_some_and(|d| d.is_ascii_digit())
}

/// `rows` without [`FEW`] marks: for the simulator's repetitions, which have no spread to
/// estimate ([`DETERMINISTIC_NOTE`] says so once).
pub fn without_few(rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    let strip = |c: String| {
        let mut out = String::with_capacity(c.len());
        let mut last = 0;
        for (i, m) in c.match_indices(FEW) {
            out.push_str(&c[last..i]);
            if !marks(&c, i) {
                out.push_str(m);
            }
            last = i + m.len();
        }
        out.push_str(&c[last..]);
        out
    };
    rows.into_iter().map(|r| r.into_iter().map(strip).collect()).collect()
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
pub fn repetitions_note<'a>(
    cells: impl Iterator<Item = &'a schedlab_model::CellParams>,
) -> Option<String> {
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
            let h =
                o.half_width_pct.map_or_else(|| "no interval".to_string(), |h| format!("±{h:.1}%"));
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
        note.push_str(&format!(
            "; {NOT_REACHED} marks the {} that did not: {}",
            missed.len(),
            missed.join(", ")
        ));
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
pub const INTERVAL_NOTE: &str = "± = 95% CI, +up/-down where not symmetric (log scale for times, \
                                 counts and rates; logit scale for shares and percentages)";

/// A row of a per-cell table: the cell's figures (or a part of them) with its row names.
pub struct Named<'a, T> {
    /// The figures.
    pub s: &'a T,
    /// The workload column.
    pub workload: String,
    /// The policy column (empty in tables that have their own scheduler columns).
    pub policy: String,
}

/// A figure of the row's cell as `mean ±ci` at `prec` decimals.
fn summary<'a, T: 'static>(
    header: &'static str,
    prec: usize,
    get: fn(&T) -> &Summary,
) -> Col<Named<'a, T>> {
    Col::num(header, move |r: &Named<T>| fmt_summary(get(r.s), prec))
}

/// The workload and policy columns (row labels: see [`Narrow::Label`]).
fn names<'a, T>() -> [Col<Named<'a, T>>; 2] {
    [
        Col::text(axis::WORKLOAD.header, |r: &Named<T>| r.workload.clone()),
        Col::text(axis::POLICY.header, |r: &Named<T>| r.policy.clone()),
    ]
    .map(|c| c.narrowed(Narrow::Label))
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

/// Why a cell's numbers may be incomplete or suspect: failures, time-outs, signals, non-zero exits,
/// time the hypervisor stole, CFS bandwidth throttling.
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
    if let Some(p) = s.steal_pct.filter(|p| *p >= STEAL_NOTE_PCT) {
        notes.push(format!("hypervisor stole {p:.1}% of CPU time"));
    }
    notes.extend(s.throttle.as_ref().map(crate::limits::throttle_note));
    notes.join("; ")
}

/// The hypervisor's steal (percent of the CPUs' time, a cell's mean) from which a cell's
/// notes say its timings are suspect: stolen time stretches wall times and trace intervals
/// but not wait4's CPU times.
pub const STEAL_NOTE_PCT: f64 = 1.0;

/// The processes and `n` columns of the per-cell tables.
fn processes_and_reps<'a>() -> [Col<Named<'a, CellStats>>; 2] {
    [
        Col::text(axis::PROCESSES.header, |r: &Named<CellStats>| r.s.params.processes.to_string())
            .aligned(Align::KEY_NUM)
            .narrowed(Narrow::Label),
        Col::num("n", |r: &Named<CellStats>| reps(r.s.reps, &r.s.params)),
    ]
}

/// The notes column: why a cell's numbers may be incomplete ([`status`]).
pub fn notes_column<'a>() -> Col<Named<'a, CellStats>> {
    Col::text("notes", |r: &Named<CellStats>| status(r.s)).aligned(Align::TRAILING_TEXT)
}

/// Columns of the per-cell totals.
pub fn totals_columns<'a>() -> Vec<Col<Named<'a, CellStats>>> {
    let mut cols: Vec<Col<Named<CellStats>>> =
        names().into_iter().chain(processes_and_reps()).collect();
    cols.extend(TOTALS.iter().map(Figure::column));
    cols.push(notes_column());
    cols
}

/// Columns of the per-process means.
pub fn per_process_columns<'a>() -> Vec<Col<Named<'a, CellStats>>> {
    let mut cols: Vec<Col<Named<CellStats>>> =
        names().into_iter().chain(processes_and_reps()).collect();
    cols.extend(PER_PROCESS.iter().map(Figure::column));
    cols
}

/// A figure of the per-cell tables: its name in exports and `show --metric`, its header,
/// its digits, where it is in a cell's statistics and whether a narrow table spares it.
pub struct Figure {
    /// The name in JSON and CSV (`wall_s`), stable across versions.
    pub name: &'static str,
    /// The table header (`wall [s]`).
    pub header: &'static str,
    /// Decimals shown.
    pub digits: usize,
    /// The cell's summary of it.
    pub get: fn(&CellStats) -> &Summary,
    /// Whether a narrow table draws it ([`Narrow::Spare`]: while there is room).
    pub narrow: Narrow,
}

impl Figure {
    /// A figure: its name, header, decimals and summary.
    pub const fn new(
        name: &'static str,
        header: &'static str,
        digits: usize,
        get: fn(&CellStats) -> &Summary,
    ) -> Figure {
        Figure { name, header, digits, get, narrow: Narrow::Keep }
    }

    /// The same figure, left out of a table too wide for the terminal in `rank`'s turn.
    pub const fn spare(self, rank: u8) -> Figure {
        Figure { narrow: Narrow::Spare(rank), ..self }
    }

    /// The figure's column in a per-cell table.
    pub fn column<'a>(&self) -> Col<Named<'a, CellStats>> {
        summary(self.header, self.digits, self.get).narrowed(self.narrow)
    }
}

/// The figures of the per-cell totals.
pub const TOTALS: [Figure; 6] = [
    Figure::new("wall_s", "wall [s]", 2, |s| &s.makespan),
    Figure::new("user_s", "user [CPU-s]", 2, |s| &s.user_total).spare(1),
    Figure::new("sys_s", "sys [CPU-s]", 2, |s| &s.sys_total).spare(0),
    Figure::new("cpu_pct", "CPU [%]", 0, |s| &s.cpu_pct_total),
    Figure::new("preempted", "preempted", 0, |s| &s.invol_total),
    Figure::new("blocked", "blocked", 0, |s| &s.vol_total).spare(2),
];

/// The figures of the per-process means.
pub const PER_PROCESS: [Figure; 7] = [
    Figure::new("wall_per_proc_s", "wall/proc [s]", 3, |s| &s.wall_per_proc),
    Figure::new("user_per_proc_s", "user/proc", 3, |s| &s.user_per_proc).spare(1),
    Figure::new("sys_per_proc_s", "sys/proc", 4, |s| &s.sys_per_proc).spare(0),
    Figure::new("cpu_pct_per_proc", "CPU/proc [%]", 0, |s| &s.cpu_pct_per_proc),
    Figure::new("preempted_per_proc", "preempted/proc", 1, |s| &s.involuntary_per_proc),
    Figure::new("blocked_per_proc", "blocked/proc", 1, |s| &s.voluntary_per_proc).spare(2),
    Figure::new("procs_per_s", "procs/s", 2, |s| &s.throughput).spare(3),
];

/// Columns of the per-process means for `stats`: [`per_process_columns`], then the
/// scheduler's own figures (`/proc/PID/schedstat` and `sched`) when some cell has them (runs
/// stored before them do not), secondary ([`Narrow::Wide`]).
pub fn per_process_columns_for<'a>(stats: &[CellStats]) -> Vec<Col<Named<'a, CellStats>>> {
    let mut cols = per_process_columns();
    let fig = |header, prec, get: fn(&CellStats) -> Option<&Summary>| {
        Col::num(header, move |r: &Named<CellStats>| {
            get(r.s).map_or("-".into(), |s| fmt_summary(s, prec))
        })
        .narrowed(Narrow::Wide)
    };
    if stats.iter().any(|s| s.run_delay_per_proc.is_some()) {
        cols.push(fig("run delay/proc [s]", 3, |s| s.run_delay_per_proc.as_ref()));
    }
    if stats.iter().any(|s| s.sched_migrations_per_proc.is_some()) {
        cols.push(fig("migrations/proc", 1, |s| s.sched_migrations_per_proc.as_ref()));
    }
    cols
}

/// The per-cell tables' rows: each cell with its row names.
pub fn named(stats: &[CellStats]) -> Vec<Named<'_, CellStats>> {
    stats
        .iter()
        .zip(row_labels(stats))
        .map(|(s, (workload, policy))| Named { s, workload, policy })
        .collect()
}

/// Rows of the per-cell totals, one per cell; the terminal and the HTML report both draw these.
pub fn totals_rows(stats: &[CellStats]) -> Vec<Vec<String>> {
    cols::rows(&totals_columns(), &named(stats))
}

/// Rows of the per-process means, one per cell; shared by the terminal and the HTML report.
pub fn per_process_rows(stats: &[CellStats]) -> Vec<Vec<String>> {
    cols::rows(&per_process_columns_for(stats), &named(stats))
}

/// Per-cell totals: wall (makespan), user, sys, CPU%, preempted, blocked.
pub fn totals(stats: &[CellStats]) -> Table {
    cols::table(&totals_columns(), &named(stats))
}

/// Per-process means: wall, user, sys, CPU%, preempted and blocked per process.
pub fn per_process(stats: &[CellStats]) -> Table {
    cols::table(&per_process_columns_for(stats), &named(stats))
}

/// Columns of the throughput and fairness table.
pub fn fairness_columns() -> Vec<Col<CellStats>> {
    let fig = |header, prec, get: fn(&CellStats) -> &Summary| {
        Col::num(header, move |s: &CellStats| fmt_summary(get(s), prec))
    };
    vec![
        Col::text("cell", |s: &CellStats| s.params.key.clone()),
        Col::text("procs", |s: &CellStats| {
            s.params
                .groups
                .iter()
                .map(|g| format!("{}{}", g.processes, if g.background { "bg" } else { "" }))
                .collect::<Vec<_>>()
                .join("+")
        }),
        Col::text("n", |s: &CellStats| reps(s.reps, &s.params)).aligned(Align::KEY_NUM),
        fig("makespan [s]", 3, |s| &s.makespan).narrowed(Narrow::Spare(5)),
        fig("procs/s", 3, |s| &s.throughput).narrowed(Narrow::Spare(3)),
        fig("units/s", 0, |s| &s.work_rate).narrowed(Narrow::Spare(2)),
        fig("Jain", 3, |s| &s.jain).narrowed(Narrow::Spare(4)),
        fig("max dev [s]", 3, |s| &s.max_dev_completion).narrowed(Narrow::Spare(1)),
        fig("CV", 3, |s| &s.cv_completion).narrowed(Narrow::Spare(0)),
        Col::text("CPU share by group", |s: &CellStats| {
            let shares = s
                .group_share
                .iter()
                .map(|(g, x)| format!("{g} {}", fmt_summary(&x.scaled(100.0), 0)))
                .collect::<Vec<_>>()
                .join(", ");
            if shares.is_empty() {
                "-".into()
            } else {
                format!("{shares} (%)")
            }
        })
        .aligned(Align::TRAILING_TEXT),
    ]
}

/// Throughput and fairness per cell (seed 004's tables): makespan, processes and work
/// units per second, Jain's index over per-process throughput, the max deviation of
/// completion time from its mean, its coefficient of variation, and each group's CPU share.
pub fn fairness(stats: &[CellStats]) -> Table {
    cols::table(&fairness_columns(), stats)
}

/// Rows of the tables with their own scheduler columns: each cell with its workload name.
pub(crate) fn named_by_workload<T>(
    stats: &[T],
    params: impl Fn(&T) -> &schedlab_model::CellParams,
) -> Vec<Named<'_, T>> {
    stats
        .iter()
        .zip(workload_names(stats.iter().map(params)))
        .map(|(s, workload)| Named { s, workload, policy: String::new() })
        .collect()
}

/// Columns of the I/O table.
pub fn io_columns<'a>() -> Vec<Col<Named<'a, IoStats>>> {
    vec![
        names().into_iter().next().expect("the workload column"),
        Col::text(axis::IOSCHED.header, |r: &Named<IoStats>| {
            let s = r.s;
            match (&s.params.iosched, s.schedulers.as_slice()) {
                (Some(name), [one]) if name == one => format!("{one} ({})", s.queue_device),
                (Some(name), seen) => format!("{name} = {} ({})", seen.join("/"), s.queue_device),
                (None, seen) => format!("{} ({})", seen.join("/"), s.queue_device),
            }
        }),
        Col::text("op", |r: &Named<IoStats>| format!("{} {}", r.s.op, r.s.mode)),
        Col::num("n", |r: &Named<IoStats>| reps(r.s.reps, &r.s.params)),
        summary("time [s]", 2, |s: &IoStats| &s.makespan),
        summary("MB/s", 1, |s: &IoStats| &s.mb_s),
        summary("file [s]", 3, |s: &IoStats| &s.file_time).narrowed(Narrow::Wide),
        summary("p50 [us]", 0, |s: &IoStats| &s.lat_p50_us),
        summary("p99 [us]", 0, |s: &IoStats| &s.lat_p99_us).narrowed(Narrow::Spare(1)),
        summary("p99.9 [us]", 0, |s: &IoStats| &s.lat_p999_us).narrowed(Narrow::Wide),
        summary("max [us]", 0, |s: &IoStats| &s.lat_max_us).narrowed(Narrow::Spare(0)),
        summary("dev reqs", 0, |s: &IoStats| &s.dev_ios).narrowed(Narrow::Wide),
        summary("merged", 0, |s: &IoStats| &s.dev_merges).narrowed(Narrow::Wide),
        summary("req [KiB]", 0, |s: &IoStats| &s.dev_req_kib).narrowed(Narrow::Wide),
        summary("in queue [s]", 2, |s: &IoStats| &s.dev_queue_s).narrowed(Narrow::Wide),
    ]
}

/// The I/O table's rows: each cell that did I/O with its workload name.
pub fn io_named(stats: &[IoStats]) -> Vec<Named<'_, IoStats>> {
    named_by_workload(stats, |s| &s.params)
}

/// Rows of the I/O table (seed 002's figures plus latency and device counters), one per
/// cell that did I/O; shared by the terminal and the HTML report.
pub fn io_rows(stats: &[IoStats]) -> Vec<Vec<String>> {
    cols::rows(&io_columns(), &io_named(stats))
}

/// The I/O table: time, throughput, per-file time, per-call latency percentiles and the
/// data device's request counts per cell.
pub fn io(stats: &[IoStats]) -> Table {
    cols::table(&io_columns(), &io_named(stats))
}

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
    // A set on one CPU is the rule (a partitioned one has its own table): say when it was not.
    if let Some(p) = s.placement.filter(|p| *p == schedlab_analysis::Placement::Global) {
        notes.push(p.note());
    }
    if s.guaranteed {
        notes.push("DWCS-guaranteed".into());
    }
    notes.join("; ")
}

/// One sentence under the real-time table when the schedulers of one workload had different
/// CPUs (a set on one CPU beside SCHED_DEADLINE's global EDF over all `machine_cpus`), so that
/// a reader does not compare their misses as if each had had the same CPUs; None when not.
pub fn rt_placement_note(stats: &[RtStats], machine_cpus: u32) -> Option<String> {
    use schedlab_analysis::Placement;
    let mut workloads: Vec<&str> = Vec::new();
    for s in stats {
        if !workloads.contains(&s.params.workload.as_str()) {
            workloads.push(&s.params.workload);
        }
    }
    let mut parts = Vec::new();
    for w in workloads {
        let mut by: Vec<(String, Vec<&str>)> = Vec::new();
        for s in stats.iter().filter(|s| s.params.workload == w) {
            let what = match s.placement {
                None => continue,
                Some(Placement::One(_)) => "one CPU".to_string(),
                Some(Placement::Partitioned(n)) => format!("{n} CPUs (partitioned)"),
                Some(Placement::Global) => {
                    format!("all {machine_cpus} CPUs (the kernel's global EDF)")
                }
            };
            match by.iter_mut().find(|(x, _)| *x == what) {
                Some((_, names)) if names.contains(&s.scheduler.as_str()) => {}
                Some((_, names)) => names.push(&s.scheduler),
                None => by.push((what, vec![&s.scheduler])),
            }
        }
        if by.len() > 1 {
            let on: Vec<String> =
                by.iter().map(|(what, names)| format!("{} on {what}", names.join(", "))).collect();
            parts.push(format!("{w}: {}", on.join("; ")));
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "The schedulers had different CPUs ({}): a set on more CPUs can meet deadlines that one CPU cannot",
            parts.join("; ")
        )
    })
}

/// The utilisation axis's value of a real-time cell.
fn utilisation(s: &RtStats) -> String {
    s.utilisation.map_or_else(|| "-".into(), |u| u.to_string())
}

/// Columns of the real-time table: the cell's names, then every figure of
/// [`schedlab_analysis::rt::FIGURES`] the table has ([`InTable`]), then the notes.
pub fn rt_columns<'a>() -> Vec<Col<Named<'a, RtStats>>> {
    let mut cols = vec![
        names().into_iter().next().expect("the workload column"),
        Col::text(axis::SCHEDULER.header, |r: &Named<RtStats>| r.s.scheduler.clone())
            .narrowed(Narrow::Label),
        Col::text(axis::UTILISATION.header, |r: &Named<RtStats>| utilisation(r.s))
            .aligned(Align::KEY_NUM)
            .narrowed(Narrow::Label),
        Col::num("n", |r: &Named<RtStats>| reps(r.s.reps, &r.s.params)),
        Col::num("min util.", |r: &Named<RtStats>| {
            r.s.min_utilisation.map_or_else(|| "-".into(), |u| format!("{u:.3}"))
        })
        .narrowed(Narrow::Wide),
    ];
    for f in rt::FIGURES {
        let col =
            Col::num(f.header, move |r: &Named<RtStats>| fmt_summary(&r.s.figures[f], f.digits));
        match f.in_table {
            InTable::Narrow => cols.push(col),
            InTable::Wide => cols.push(col.narrowed(Narrow::Wide)),
            InTable::No => {}
        }
    }
    cols.push(Col::text("notes", |r: &Named<RtStats>| rt_notes(r.s)));
    cols
}

/// The real-time table's rows: each periodic cell with its workload name.
pub fn rt_named(stats: &[RtStats]) -> Vec<Named<'_, RtStats>> {
    named_by_workload(stats, |s| &s.params)
}

/// Rows of the real-time table (seed 003), one per periodic cell; shared by the terminal
/// and the HTML report.
pub fn rt_rows(stats: &[RtStats]) -> Vec<Vec<String>> {
    cols::rows(&rt_columns(), &rt_named(stats))
}

/// The real-time table: per periodic cell, jobs, deadline misses, window violations per
/// process, time in violation and wake-up latency percentiles.
pub fn rt(stats: &[RtStats]) -> Table {
    cols::table(&rt_columns(), &rt_named(stats))
}

/// A CPU of a partitioned set with its cell's figures.
pub struct CpuRow<'a> {
    /// The cell.
    pub cell: &'a RtStats,
    /// The CPU.
    pub cpu: &'a schedlab_analysis::CpuRt,
    /// The workload column.
    pub workload: String,
}

/// Columns of the per-CPU table of partitioned real-time sets: the cell and CPU, its
/// tasks' share, then the figures of [`schedlab_analysis::rt::FIGURES`] marked `per_cpu`.
pub fn rt_cpu_columns<'a>() -> Vec<Col<CpuRow<'a>>> {
    let theory = |header, get: fn(&CpuTheory) -> f64| {
        Col::num(header, move |r: &CpuRow| {
            r.cpu.theory.as_ref().map_or_else(|| "-".into(), |t| format!("{:.3}", get(t)))
        })
    };
    let mut cols = vec![
        Col::text(axis::WORKLOAD.header, |r: &CpuRow| r.workload.clone()),
        Col::text(axis::SCHEDULER.header, |r: &CpuRow| r.cell.scheduler.clone()),
        Col::text(axis::UTILISATION.header, |r: &CpuRow| utilisation(r.cell)),
        Col::num("cpu", |r: &CpuRow| r.cpu.cpu.to_string()),
        Col::num("tasks", |r: &CpuRow| r.cpu.tasks.to_string()),
        theory("C/T", |t| t.plain_utilisation),
        theory("min util.", |t| t.min_utilisation),
    ];
    for f in rt::FIGURES.iter().filter(|f| f.per_cpu) {
        cols.push(Col::num(f.header, move |r: &CpuRow| fmt_summary(&r.cpu.figures[f], f.digits)));
    }
    cols
}

/// The per-CPU table's rows: one per CPU of each partitioned periodic cell (cells on one
/// CPU have none).
pub fn rt_cpu_named(stats: &[RtStats]) -> Vec<CpuRow<'_>> {
    rt_named(stats)
        .into_iter()
        .flat_map(|n| {
            n.s.per_cpu.iter().map(move |cpu| CpuRow {
                cell: n.s,
                cpu,
                workload: n.workload.clone(),
            })
        })
        .collect()
}

/// Rows of the per-CPU table; shared by the terminal and the HTML report.
pub fn rt_cpu_rows(stats: &[RtStats]) -> Vec<Vec<String>> {
    cols::rows(&rt_cpu_columns(), &rt_cpu_named(stats))
}

/// The per-CPU table of partitioned sets, or None when no cell was partitioned.
pub fn rt_cpus(stats: &[RtStats]) -> Option<Table> {
    let rows = rt_cpu_named(stats);
    (!rows.is_empty()).then(|| cols::table(&rt_cpu_columns(), &rows))
}

/// A row of the per-worker trace table.
pub enum WorkerRow<'a> {
    /// A worker: its position in the trace, its figures and its sample (matched by pid).
    Worker(usize, &'a WorkerTrace, Option<&'a Sample>),
    /// The last row: every worker of the trace.
    All(&'a CellTrace, &'a [Sample]),
}

/// Sums `x` over the workers of a trace.
fn sum(t: &CellTrace, x: impl Fn(&WorkerTrace) -> f64) -> f64 {
    t.workers.iter().map(x).fold(0.0, |a, b| a + b)
}

/// A trace figure's cell in the per-worker table.
fn worker_cell(f: &TraceFigure, r: &WorkerRow) -> String {
    let prec = f.unit.worker_digits();
    let by_str =
        |by: &PreemptedBy| format!("{}/{}/{}/{}", by.worker, by.engine, by.kernel, by.other);
    match (f.reading, r) {
        (Reading::PerWorker(get), WorkerRow::Worker(_, w, _)) => format!("{:.*}", prec, get(w)),
        (Reading::PerWorker(get), WorkerRow::All(t, _)) => format!("{:.*}", prec, sum(t, get)),
        (Reading::Wait4Cpu, WorkerRow::Worker(_, _, s)) => {
            s.map(|s| format!("{:.*}", prec, s.user_s + s.sys_s)).unwrap_or_else(|| "-".into())
        }
        (Reading::Wait4Cpu, WorkerRow::All(t, samples)) => {
            let cpu = |w: &WorkerTrace| {
                samples.iter().find(|s| s.pid == w.pid).map(|s| s.user_s + s.sys_s).unwrap_or(0.0)
            };
            format!("{:.*}", prec, sum(t, cpu))
        }
        (Reading::PreemptedBy, WorkerRow::Worker(_, w, _)) => by_str(&w.preempted_by),
        (Reading::PreemptedBy, WorkerRow::All(t, _)) => {
            by_str(&t.workers.iter().map(|w| &w.preempted_by).sum())
        }
        (Reading::Wakeup { worker, .. }, WorkerRow::Worker(_, w, _)) => {
            worker(w).map(|x| format!("{x:.prec$}")).unwrap_or_else(|| "-".into())
        }
        (Reading::Cpus, WorkerRow::Worker(_, w, _)) => cpu_list(&w.cpus),
        (Reading::PerTrace(get), WorkerRow::All(t, _)) => get(t).to_string(),
        (Reading::Wakeup { .. } | Reading::Cpus, WorkerRow::All(..))
        | (Reading::PerTrace(_), WorkerRow::Worker(..)) => String::new(),
    }
}

/// Columns of the per-worker trace table (`schedlab trace`): the worker, then every trace
/// figure with a per-worker column.
pub fn trace_columns<'a>() -> Vec<Col<WorkerRow<'a>>> {
    let mut cols = vec![
        Col::text("worker", |r: &WorkerRow| match r {
            WorkerRow::Worker(i, _, s) => s.map(|s| s.index).unwrap_or(*i as u32).to_string(),
            WorkerRow::All(..) => "all".into(),
        }),
        Col::text("pid", |r: &WorkerRow| match r {
            WorkerRow::Worker(_, w, _) => w.pid.to_string(),
            WorkerRow::All(..) => String::new(),
        }),
        Col::text("group", |r: &WorkerRow| match r {
            WorkerRow::Worker(_, _, s) => s.map(|s| s.group.clone()).unwrap_or_default(),
            WorkerRow::All(..) => String::new(),
        })
        .narrowed(Narrow::Spare(0)),
    ];
    for f in trace::FIGURES {
        if let Some(header) = f.worker_header {
            let col = Col::num(header, move |r: &WorkerRow| worker_cell(f, r));
            cols.push(match TRACE_SPARE.iter().position(|g| g.name == f.name) {
                Some(i) => col.narrowed(Narrow::Spare(1 + i as u8)),
                None => col,
            });
        }
    }
    cols
}

/// The rows of the per-worker trace table: each worker, then all of them.
fn worker_rows<'a>(t: &'a CellTrace, samples: &'a [Sample]) -> Vec<WorkerRow<'a>> {
    let mut rows: Vec<WorkerRow> = t
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| WorkerRow::Worker(i, w, samples.iter().find(|s| s.pid == w.pid)))
        .collect();
    rows.push(WorkerRow::All(t, samples));
    rows
}

/// The per-worker trace table as `schedlab trace` draws it: without `wide`, a table wider
/// than [`crate::cells::MAX_WIDTH`] leaves the group column, then [`TRACE_SPARE`], to
/// `--wide` until it fits.
pub fn trace_fitted(t: &CellTrace, samples: &[Sample], wide: bool) -> String {
    let rows = worker_rows(t, samples);
    crate::cells::fit(trace_columns(), !wide, |cols| cols::table(cols, &rows).to_string())
}

/// The figures of the per-worker trace table that a table too wide leaves to `--wide`, in
/// that order (after the group column).
pub const TRACE_SPARE: [&TraceFigure; 3] = [&trace::UNTRACED, &trace::WAIT4_CPU, &trace::CPUS];

/// "12 (40%)": a count with its share of `total`.
fn share(n: u64, total: u64) -> String {
    if total == 0 {
        return n.to_string();
    }
    format!("{n} ({:.0}%)", 100.0 * n as f64 / total as f64)
}

/// A trace figure's cell in the per-cell table.
fn cell_cell(f: &TraceFigure, s: &TraceStats) -> String {
    match f.reading {
        Reading::PerWorker(_) | Reading::Wakeup { .. } => {
            fmt_summary(s.summary(f), f.unit.mean_digits())
        }
        Reading::PreemptedBy => {
            let by = &s.preempted_by;
            let total = by.total();
            [by.worker, by.engine, by.kernel, by.other].map(|n| share(n, total)).join(" / ")
        }
        Reading::PerTrace(_) => s.sum(f).to_string(),
        Reading::Cpus | Reading::Wait4Cpu => String::new(),
    }
}

/// Columns of the report's per-cell trace table (where the processes' time went and who
/// took their CPU): the cell, then every trace figure with a per-cell column.
pub fn trace_cell_columns() -> Vec<Col<TraceStats>> {
    let mut cols = trace_cell_names();
    for f in trace::FIGURES {
        if let Some(header) = f.cell_header {
            let col = Col::num(header, move |s: &TraceStats| cell_cell(f, s));
            cols.push(if matches!(f.reading, Reading::PreemptedBy) {
                col.aligned(Align::TRAILING_TEXT)
            } else {
                col
            });
        }
    }
    cols
}

/// The first columns of the per-cell trace table: the cell's key and `n`.
pub fn trace_cell_names() -> Vec<Col<TraceStats>> {
    vec![
        Col::text("cell", |s: &TraceStats| s.params.key.clone()),
        Col::num("n", |s: &TraceStats| reps(s.reps, &s.params)),
    ]
}

/// One row per traced cell: per process means over the traced repetitions (±95% CI), the
/// involuntary switch-outs of all repetitions by who took the CPU.
pub fn trace_rows(stats: &[TraceStats]) -> Vec<Vec<String>> {
    cols::rows(&trace_cell_columns(), stats)
}

/// A CPU list in the kernel's short form (`0-2,5`).
fn cpu_list(cpus: &[u32]) -> String {
    schedlab_plan::cpulist::format(cpus)
}
