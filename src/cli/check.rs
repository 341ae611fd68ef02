//! `schedlab check`: validate a spec and print the plan without running anything.

use super::common::load_spec;
use comfy_table::{presets, ColumnConstraint, ContentArrangement, Table, Width};
use schedlab_session::{MeasureOptions, Session};
use schedlab_spec::Workload;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `schedlab check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Experiment file (TOML).
    pub file: PathBuf,
    /// Multiply every work amount by this factor.
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Override the number of measured repetitions: a count, or auto (3 to 30, until the
    /// 95% CI is within 5% of the mean).
    #[arg(long)]
    pub repetitions: Option<super::common::Repetitions>,
    /// Parent directory for the experiment's files, as `run --dir` (for the device check).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Confirm that the experiment may use this real disk, as `run --yes-device`.
    #[arg(long, value_name = "NAME")]
    pub yes_device: Option<String>,
    /// Also print the workload and policy columns (the cell key already names both).
    #[arg(long)]
    pub wide: bool,
    /// Check that every cell could be traced here, as `run --trace` would trace it.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "bpf", value_name = "HOW")]
    pub trace: Option<super::common::TraceArg>,
    #[command(flatten)]
    pub rt: super::common::RtFlags,
    #[command(flatten)]
    pub skip: super::common::SkipFlag,
    /// The machine's overheads, a JSON object of `schedlab_schedulability::Overheads` (ns:
    /// release_latency, scheduling, context_switch, cache_delay, release, tick, tick_period;
    /// percentile, source): the periodic sets' analysis then adds the `+overheads` tests and
    /// the response times with overheads. Without it, the newest `schedlab calibrate` in the
    /// results database is used, if there is one.
    #[arg(long, value_name = "FILE")]
    pub overheads: Option<PathBuf>,
}

/// The plan's headers; [`plan_table`] leaves out those marked optional when no cell needs them.
const HEADERS: [(&str, Optional); 10] = [
    ("cell", Optional::No),
    ("key", Optional::No),
    ("group", Optional::Groups),
    ("workload", Optional::Wide),
    ("policy", Optional::Wide),
    ("procs", Optional::No),
    ("pinning / cgroup", Optional::Placement),
    ("work per process", Optional::No),
    ("CPU-s / rep", Optional::No),
    ("writes / rep", Optional::No),
];

/// When a column of the plan's table is left out.
#[derive(PartialEq)]
enum Optional {
    /// Never.
    No,
    /// When every cell has one group, the main one.
    Groups,
    /// When every group runs on every CPU outside any cgroup setting.
    Placement,
    /// Unless `--wide` is given.
    Wide,
}

/// The widest the plan's table is drawn: the descriptions (of groups, placement and work)
/// wrap; keys, names and numbers never do.
const TABLE_WIDTH: u16 = 160;

/// The narrowest a wrapped column of the plan's table becomes (a very long key may then
/// widen the table past [`TABLE_WIDTH`]).
const WRAPPED_WIDTH: usize = 14;

/// The plan's table, one row per group of each cell, without the columns no cell needs, at
/// most [`TABLE_WIDTH`] characters wide.
fn plan_table(plan: &schedlab_spec::Plan, rows: Vec<Vec<String>>, wide: bool) -> Table {
    let groups = plan.cells.iter().any(|c| c.groups.len() > 1);
    let placed = plan.cells.iter().flat_map(|c| &c.groups).any(|g| {
        g.affinity.label() != "all"
            || g.cgroup.cpu_weight.is_some()
            || g.cgroup.cpu_max.is_some()
            || g.cgroup.cpuset.is_some()
    });
    let keep = |o: &Optional| match o {
        Optional::No => true,
        Optional::Groups => groups,
        Optional::Placement => placed,
        Optional::Wide => wide,
    };
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(TABLE_WIDTH)
        .set_header(HEADERS.iter().filter(|(_, o)| keep(o)).map(|(h, _)| *h));
    let mut widest: Vec<usize> = Vec::new();
    for row in rows {
        let row: Vec<String> =
            row.into_iter().zip(&HEADERS).filter(|(_, (_, o))| keep(o)).map(|(c, _)| c).collect();
        widest.resize(row.len(), 0);
        for (w, c) in widest.iter_mut().zip(&row) {
            *w = (*w).max(c.chars().count());
        }
        t.add_row(row);
    }
    let wrapped = ["group", "workload", "policy", "pinning / cgroup", "work per process"];
    let shown = HEADERS.iter().filter(|(_, o)| keep(o));
    for (i, (header, _)) in shown.enumerate() {
        let longest = widest.get(i).copied().unwrap_or(0).max(header.chars().count());
        let col = t.column_mut(i).expect("a column per header");
        col.set_constraint(match wrapped.contains(header) {
            true => {
                ColumnConstraint::LowerBoundary(Width::Fixed(longest.min(WRAPPED_WIDTH) as u16))
            }
            false => ColumnConstraint::ContentWidth,
        });
    }
    t
}

/// Runs `schedlab check`.
pub fn run(db: &std::path::Path, a: Args) -> anyhow::Result<ExitCode> {
    let mut spec = load_spec(Some(&a.file), a.scale, a.repetitions)?;
    let (overheads, elsewhere) =
        schedlab_session::calibrate::overheads_for(db, a.overheads.as_deref(), &spec.plan)?.unzip();
    if let Some(how) = a.trace {
        spec.plan.trace.all = true;
        spec.plan.trace.mode = how.mode();
        spec.plan.trace.timeline.clear();
    }
    let o = MeasureOptions {
        dir: a.dir.clone(),
        yes_device: a.yes_device.clone(),
        allow_unthrottled: a.rt.allow_unthrottled,
        no_engine_rt: a.rt.no_engine_rt,
        skip_unavailable: a.skip.skip_unavailable,
        escape_limits: a.rt.escape_limits,
        ..MeasureOptions::default()
    };
    // The preflight `run` looks with: every refusal a run of this file would meet here.
    let mut look = Session::new(db, String::new()).look(&mut spec, &o);
    let plan = &spec.plan;
    let ns = schedlab_workloads::calibrate::pi_ns_quick();
    let hash_ns = schedlab_workloads::calibrate::hash_ns_quick();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    let per_rep = (plan.repetitions + plan.warmup) as u64;
    let schedlab_session::estimate::Estimate {
        rows,
        cpu_total,
        writes_total,
        procs_total,
        too_long,
    } = schedlab_session::estimate::estimate(plan, ns, hash_ns, cpus);
    let t = plan_table(plan, rows, a.wide);
    sayln!(
        "{}: {} — {} cells x ({} + {} warm-up), order {:?}, seed {}, scale {}, watchdog {:.0} s per cell",
        plan.source_path,
        plan.name,
        plan.cells.len(),
        super::common::repetitions_label(plan),
        plan.warmup,
        plan.order,
        plan.seed,
        plan.scale,
        plan.timeout.as_secs_f64()
    );
    outln!("{t}");
    sayln!(
        "total: {} worker processes, {:.1} CPU-seconds of measured work (>= {:.1} s wall on {} CPUs; pi {:.2} ns/iteration, hash {:.0} ns/round, measured now), {} synchronous writes",
        procs_total, cpu_total, cpu_total / cpus, cpus, ns, hash_ns, writes_total
    );
    if let Some(t) = &plan.adaptive {
        let most = (t.max + plan.warmup) as f64 / per_rep as f64;
        outln!(
            "adaptive repetitions: these totals are at min = {}; a cell that runs to max = {} takes {most:.1} times as much",
            t.min,
            t.max
        );
    }
    if plan
        .cells
        .iter()
        .flat_map(|c| &c.groups)
        .any(|g| matches!(g.workload, Workload::Command { .. }))
        && plan.scale != 1.0
    {
        outln!("note: --scale does not change command workloads (schedlab cannot know their work amount)");
    }
    for line in look.skipped().iter().chain(&look.notes) {
        outln!("{line}");
    }
    for (line, warning) in schedlab_session::notes::feasibility_lines(plan, cpus as usize) {
        outln!("{}{line}", if warning { "warning: " } else { "" });
    }
    let elsewhere = elsewhere.flatten().map(|w| format!("warning: {w}"));
    let lines = schedlab_session::notes::analysis_lines(plan, cpus as usize, overheads.as_ref());
    for line in lines.into_iter().chain(elsewhere) {
        outln!("{line}");
    }
    for (cell, key, wall_s) in &too_long {
        outln!(
            "warning: cell {cell} ({key}) needs at least {wall_s:.0} s per repetition (estimated here), and the watchdog stops each cell repetition after {:.0} s",
            plan.timeout.as_secs_f64()
        );
    }
    let watchdog = schedlab_session::estimate::watchdog_refusal(&spec, &too_long);
    look.refusals.extend(watchdog.map(|e| e.to_string()));
    if let Some(refused) = look.refusal() {
        return Err(refused.into());
    }
    outln!("ok: the spec is valid, this process may apply every policy in it, and every cell fits this machine's limits");
    Ok(ExitCode::SUCCESS)
}
