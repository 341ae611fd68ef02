//! `schedlab check`: validate a spec and print the plan without running anything.

use super::common::{bad_input, load_spec};
use comfy_table::{presets, ColumnConstraint, ContentArrangement, Table, Width};
use schedlab_spec::Workload;
use schedlab_sys::{env, Root};
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
}

/// Nanoseconds per hash round (4 KiB CityHash128) on this machine, from a short run.
fn hash_ns_per_round() -> f64 {
    let n = 5_000;
    let mut buf = Box::new([7u8; schedlab_workloads::HASH_BUFFER]);
    let t = std::time::Instant::now();
    std::hint::black_box(schedlab_workloads::hash(n, &mut buf, &mut schedlab_workloads::NoProbe));
    t.elapsed().as_nanos() as f64 / n as f64
}

/// Nanoseconds per pi iteration on this machine, from a short calibration run.
fn pi_ns_per_iteration() -> f64 {
    let n = 5_000_000;
    let t = std::time::Instant::now();
    std::hint::black_box(schedlab_workloads::pi(n, 1, 0, &mut schedlab_workloads::NoProbe));
    t.elapsed().as_nanos() as f64 / n as f64
}

fn amount(w: &Workload) -> String {
    match w {
        Workload::Pi { iterations } => format!("{iterations} iterations"),
        Workload::Mixed { iterations, write_every } => {
            format!("{iterations} iterations, O_SYNC write every {write_every}")
        }
        Workload::Copy { transfer_bytes, block_bytes, .. } => {
            format!("{transfer_bytes} B in {block_bytes} B O_SYNC writes")
        }
        Workload::Hash { hashes } => format!("{hashes} CityHash128 of 4 KiB"),
        Workload::Command { argv } => format!("exec {}", argv.join(" ")),
        Workload::ParWrite(p) | Workload::ParRead(p) => {
            format!(
                "{} x {} B in {} thread(s), {} B per call, {}",
                p.files,
                p.file_bytes,
                p.threads,
                p.buffer_bytes,
                p.mode.name()
            )
        }
        Workload::Periodic(p) => format!(
            "one task each, {} body, {:.1} s, sum C/T {:.3}{}",
            p.body.name(),
            p.duration_ns as f64 / 1e9,
            p.deadline_bandwidth(),
            if p.scheduler.dispatched() {
                format!(", quantum {} ms", p.quantum_ns as f64 / 1e6)
            } else {
                String::new()
            }
        ),
        Workload::UdpFlood { packets, packet_bytes } => {
            format!("{packets} UDP datagrams of {packet_bytes} B over 127.0.0.1")
        }
        Workload::IoInterrupts { reads, read_bytes, file_bytes } => {
            format!("{reads} O_DIRECT reads of {read_bytes} B at random in a {file_bytes} B file")
        }
    }
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
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let mut spec = load_spec(Some(&a.file), a.scale, a.repetitions)?;
    if let Some(how) = a.trace {
        spec.plan.trace.all = true;
        spec.plan.trace.mode = how.mode();
        spec.plan.trace.timeline.clear();
    }
    if let Some(d) = &a.dir {
        schedlab_spec::not_kernel_fs("--dir", d).map_err(bad_input)?;
    }
    let plan = &spec.plan;
    let caps = env::capabilities(&Root::default());
    let allowed = spec.check_allowed(&caps);
    let ns = pi_ns_per_iteration();
    let hash_ns = hash_ns_per_round();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    let per_rep = (plan.repetitions + plan.warmup) as u64;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let (mut cpu_total, mut writes_total, mut procs_total) = (0.0, 0u64, 0u64);
    // Cells whose estimated wall time per repetition reaches the watchdog: (cell, key, s).
    let mut too_long: Vec<(u32, &str, f64)> = Vec::new();
    for c in &plan.cells {
        let (mut cell_cpu_s, mut longest_process_s) = (0.0f64, 0.0f64);
        for (gi, g) in c.groups.iter().enumerate() {
            let per_process_ns = match g.workload {
                Workload::Pi { iterations } | Workload::Mixed { iterations, .. } => {
                    iterations as f64 * ns
                }
                Workload::Hash { hashes } => hashes as f64 * hash_ns,
                Workload::Periodic(ref p) => {
                    p.tasks.iter().map(|t| p.jobs(t) as f64 * p.work_ns(t) as f64).sum::<f64>()
                        / p.tasks.len() as f64
                }
                _ => 0.0,
            };
            let cpu_s = per_process_ns * 1e-9 * g.processes as f64;
            let writes = g.workload.sync_writes() * g.processes as u64;
            if !g.background {
                cpu_total += cpu_s * per_rep as f64;
                writes_total += writes * per_rep;
                // A periodic set runs for its duration_s, which check_watchdog compares.
                if g.workload.periodic().is_none() {
                    cell_cpu_s += cpu_s;
                    longest_process_s = longest_process_s.max(per_process_ns * 1e-9);
                }
            }
            procs_total += g.processes as u64 * per_rep;
            let pol = match g.policy.class {
                cl if cl.is_rt() => {
                    format!("{} ({} prio {})", g.policy_name, cl.name(), g.policy.priority)
                }
                cl => format!(
                    "{} ({}{})",
                    g.policy_name,
                    cl.name(),
                    if g.policy.nice != 0 {
                        format!(" nice {}", g.policy.nice)
                    } else {
                        String::new()
                    } + &g
                        .policy
                        .slice_ns
                        .map(|ns| format!(" slice {} us", ns / 1000))
                        .unwrap_or_default()
                ),
            };
            let mut place = vec![format!("affinity {}", g.affinity.label())];
            if let Some(w) = g.cgroup.cpu_weight {
                place.push(format!("weight {w}"));
            }
            if let Some((q, p)) = g.cgroup.cpu_max {
                place.push(format!("max {q}/{p} us"));
            }
            if let Some(cs) = &g.cgroup.cpuset {
                place.push(format!("cpuset {}", schedlab_spec::cpulist::format(cs)));
            }
            rows.push(vec![
                if gi == 0 { c.index.to_string() } else { String::new() },
                if gi == 0 { c.key.clone() } else { String::new() },
                format!("{}{}", g.name, if g.background { " (background)" } else { "" }),
                format!("{} ({})", g.workload_name, g.workload.kind()),
                pol,
                g.processes.to_string(),
                place.join(", "),
                amount(&g.workload),
                if g.background { "until stopped".into() } else { format!("{cpu_s:.2}") },
                writes.to_string(),
            ]);
        }
        // No repetition ends before its longest process, nor before the cell's CPUs did its work.
        let wall_s = longest_process_s.max(cell_cpu_s / cpus);
        if wall_s >= plan.timeout.as_secs_f64() {
            too_long.push((c.index, &c.key, wall_s));
        }
    }
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
    let cpus_ok = spec
        .check_cpus(&schedlab_sys::cpus::online(&Root::default()))
        .and(spec.check_paths(a.dir.is_some()))
        .and(spec.check_watchdog(plan.timeout));
    let limits_ok = super::machine::check_limits(&spec, &Root::default());
    let knobs_ok = super::machine::check_knobs(&spec, &Root::default());
    let scx_ok = super::machine::check_scx(&spec, &Root::default());
    if let Ok(facts) = &knobs_ok {
        for (name, now) in super::machine::knobs_before(facts) {
            let held = plan.knobs.get(&name).map(|v| format!("held at {} for the run", v.label()));
            let mut swept: Vec<String> = Vec::new();
            for v in plan.cells.iter().filter_map(|c| c.knobs.get(&name)).map(|v| v.label()) {
                if !swept.contains(&v) {
                    swept.push(v);
                }
            }
            let what = held.unwrap_or_else(|| format!("swept over {}", swept.join(", ")));
            outln!("knob {name}: {now} now, {what}; journaled and put back after");
        }
    }
    for (line, warning) in super::common::feasibility_lines(plan, cpus as usize) {
        outln!("{}{line}", if warning { "warning: " } else { "" });
    }
    for line in super::common::analysis_lines(plan, cpus as usize) {
        outln!("{line}");
    }
    for (cell, key, wall_s) in &too_long {
        outln!(
            "warning: cell {cell} ({key}) needs at least {wall_s:.0} s per repetition (estimated here), and the watchdog stops each cell repetition after {:.0} s",
            plan.timeout.as_secs_f64()
        );
    }
    if let Some((cell, _, longest)) = too_long.iter().max_by(|a, b| a.2.total_cmp(&b.2)) {
        // Located at the longest cell's first workload, as every refusal of the spec is.
        let workload = plan.cells.iter().find(|c| c.index == *cell).and_then(|c| c.groups.first());
        let span = workload
            .and_then(|g| spec.locations.workloads.iter().find(|(w, _)| *w == g.workload_name))
            .map_or(spec.locations.matrix.clone(), |(_, s)| s.clone());
        let message = format!(
            "{} of {} cells would be stopped by the watchdog in every repetition (the longest needs about {:.0} s, the watchdog allows {:.0} s): lower --scale, or raise timeout_s (run --timeout)",
            too_long.len(),
            plan.cells.len(),
            longest,
            plan.timeout.as_secs_f64()
        );
        let e = schedlab_spec::SpecError::at(&plan.source_path, &spec.text, span, message);
        return Err(bad_input(e.to_string()));
    }
    // In the order `run` refuses them: privileges, CPUs, limits, then the device.
    allowed
        .and(cpus_ok)
        .and(limits_ok)
        .and(scx_ok)
        .and(knobs_ok.map(|_| ()))
        .map_err(|e| bad_input(e.to_string()))?;
    super::machine::check_trace(&spec, &Root::default())?;
    if let Some(line) =
        super::common::check_device(&spec, a.dir.as_deref(), a.yes_device.as_deref())?
    {
        outln!("{line}");
    }
    if let Some(p) = caps.rt_placement.as_ref().filter(|_| plan.has_realtime()) {
        outln!("real-time: {}", p.why);
    }
    outln!("ok: the spec is valid, this process may apply every policy in it, and every cell fits this machine's limits");
    Ok(ExitCode::SUCCESS)
}
