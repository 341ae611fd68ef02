//! Helpers shared by subcommands: exit codes, loading specs, opening the store.

use schedlab_model::AdaptiveTarget;
use schedlab_store::{RunRow, Store};
use std::path::Path;

/// An error with a specific exit status (2 for bad input).
#[derive(Debug)]
pub struct Exit {
    /// Process exit status.
    pub code: u8,
    /// What to tell the user.
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Bad input: exit status 2.
pub fn bad_input(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Exit { code: 2, message: message.to_string() })
}

/// Reads and validates a spec (the built-in quick experiment when `file` is None), then
/// applies command-line overrides. Paths in a file resolve against its directory; the
/// built-in experiment's (it has none) would resolve against the current directory.
pub fn load_spec(
    file: Option<&Path>,
    scale: Option<f64>,
    repetitions: Option<Repetitions>,
) -> anyhow::Result<schedlab_spec::Spec> {
    let parsed = match file {
        Some(p) => {
            let bytes = std::fs::read(p)
                .map_err(|e| bad_input(format!("cannot read {}: {e}", p.display())))?;
            let path = p.display().to_string();
            schedlab_spec::decode(&path, &bytes).and_then(|text| {
                schedlab_spec::parse_at(&path, text, &schedlab_spec::spec_dir(&path))
            })
        }
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| bad_input(format!("cannot resolve the current directory: {e}")))?;
            schedlab_spec::parse_at("<built-in quick.toml>", schedlab_spec::BUILTIN_QUICK, &cwd)
        }
    };
    let mut spec = parsed.map_err(|e| bad_input(e.to_string()))?;
    if let Some(f) = scale {
        spec.plan.scale(schedlab_spec::bounds::scale(f).map_err(bad_input)?);
    }
    if let Some(r) = repetitions {
        apply_repetitions(&mut spec.plan, r);
        if let Some(why) = schedlab_spec::bounds::too_many_steps(&spec.plan) {
            return Err(bad_input(format!("--repetitions {r}: {why}")));
        }
    }
    Ok(spec)
}

/// Sets `plan`'s repetitions as `--repetitions` gives them.
pub fn apply_repetitions(plan: &mut schedlab_spec::Plan, r: Repetitions) {
    match r {
        Repetitions::Count(n) => {
            plan.repetitions = n;
            plan.adaptive = None;
        }
        Repetitions::Auto => {
            plan.repetitions = AdaptiveTarget::AUTO.min;
            plan.adaptive = Some(AdaptiveTarget::AUTO);
        }
    }
}

/// The flags of `schedlab run` that `schedlab slurm` passes on to each shard's run: one
/// declaration for both, so their names, checks and help agree.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunFlags {
    /// Multiply every work amount (iterations, bytes) by this factor.
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Override the number of measured repetitions per cell: a count, or auto (each cell
    /// 3 to 30 times, until the 95% CI of its main figure is within 5% of the mean).
    #[arg(long)]
    pub repetitions: Option<Repetitions>,
    /// Per-cell watchdog in seconds (overrides the spec's timeout_s).
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    /// Run real-time cells even though RT throttling is disabled on this machine.
    #[arg(long)]
    pub allow_unthrottled: bool,
    /// Parent directory for the experiment's files (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Supervise as an ordinary task instead of at SCHED_FIFO 99. The engine's wake-ups
    /// (one per worker exit) then never preempt workers, but RT workers can delay the
    /// watchdog and the reaping times.
    #[arg(long)]
    pub no_engine_rt: bool,
    /// Trace the scheduler in every cell repetition (as `trace = true` in the spec):
    /// per-worker figures aggregated in the kernel by schedlab's BPF programs, at a cost
    /// stored with them; `--trace=timeline` (as `trace = "timeline"`) also captures every
    /// event through tracefs, for `schedlab trace export` and the report's state chart.
    /// `schedlab trace` shows what they say. Needs the kernel's BTF and root (or CAP_BPF and
    /// CAP_PERFMON).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "bpf", value_name = "HOW")]
    pub trace: Option<TraceArg>,
    /// The timeline's trace buffer per CPU, KiB (as `trace_buffer_kb` in the spec; default
    /// 4096).
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u32).range(kb(schedlab_spec::TRACE_BUFFER_KB.start())..=kb(schedlab_spec::TRACE_BUFFER_KB.end())))]
    pub trace_buffer_kb: Option<u32>,
    /// The campaign a shard belongs to (default: derived from the spec text, scale,
    /// repetitions and the number of shards, so shards started apart agree).
    #[arg(long, value_name = "ID")]
    pub campaign: Option<String>,
}

/// How `--trace` records a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceArg {
    /// Per-worker figures aggregated in the kernel (schedlab's BPF programs).
    Bpf,
    /// The figures, and every scheduler event captured through tracefs.
    Timeline,
}

impl TraceArg {
    /// The plan's mode for it.
    pub fn mode(self) -> schedlab_spec::TraceMode {
        match self {
            TraceArg::Bpf => schedlab_spec::TraceMode::Bpf,
            TraceArg::Timeline => schedlab_spec::TraceMode::TimelineAndBpf,
        }
    }
}

fn kb(x: &u32) -> i64 {
    i64::from(*x)
}

impl RunFlags {
    /// These flags as words of a `schedlab run` command line (`--campaign` aside, which
    /// the caller places), each path quoted by `quote`.
    pub fn to_words(&self, quote: impl Fn(&Path) -> String) -> Vec<String> {
        let mut words = Vec::new();
        if let Some(s) = self.scale {
            words.extend(["--scale".into(), s.to_string()]);
        }
        if let Some(r) = self.repetitions {
            words.extend(["--repetitions".into(), r.to_string()]);
        }
        if let Some(t) = self.timeout {
            words.extend(["--timeout".into(), t.to_string()]);
        }
        match self.trace {
            Some(TraceArg::Bpf) => words.push("--trace".into()),
            Some(TraceArg::Timeline) => words.push("--trace=timeline".into()),
            None => {}
        }
        if let Some(kb) = self.trace_buffer_kb {
            words.extend(["--trace-buffer-kb".into(), kb.to_string()]);
        }
        if self.allow_unthrottled {
            words.push("--allow-unthrottled".into());
        }
        if self.no_engine_rt {
            words.push("--no-engine-rt".into());
        }
        if let Some(d) = &self.dir {
            words.extend(["--dir".into(), quote(d)]);
        }
        words
    }
}

/// `--repetitions`: a count, or `auto` (adaptive, [`AdaptiveTarget::AUTO`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repetitions {
    /// Exactly this many measured repetitions per cell.
    Count(u32),
    /// Each cell until its main figure's 95% interval is within 5% of the mean (3 to 30).
    Auto,
}

impl std::str::FromStr for Repetitions {
    type Err = BadRepetitions;

    fn from_str(s: &str) -> Result<Self, BadRepetitions> {
        match s {
            "auto" => Ok(Repetitions::Auto),
            n => match n.parse::<u32>() {
                Ok(c) if (1..=schedlab_spec::bounds::MAX_REPETITIONS).contains(&c) => {
                    Ok(Repetitions::Count(c))
                }
                _ => Err(BadRepetitions(n.to_string())),
            },
        }
    }
}

/// A `--repetitions` value that is neither a count nor `auto`.
#[derive(Debug)]
pub struct BadRepetitions(String);

impl std::fmt::Display for BadRepetitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "expected a count from 1 to {}, or auto, got \"{}\"",
            schedlab_spec::bounds::MAX_REPETITIONS,
            self.0
        )
    }
}

impl std::error::Error for BadRepetitions {}

impl std::fmt::Display for Repetitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repetitions::Count(n) => write!(f, "{n}"),
            Repetitions::Auto => f.write_str("auto"),
        }
    }
}

/// How many repetitions each cell of `plan` runs, in words.
pub fn repetitions_label(plan: &schedlab_spec::Plan) -> String {
    match &plan.adaptive {
        None => format!("{} repetitions", plan.repetitions),
        Some(t) => format!(
            "{} to {} repetitions until the 95% CI is within ±{}% of the mean",
            t.min, t.max, t.ci_pct
        ),
    }
}

/// Checks the plan's experiment device against this machine (privilege, a real disk's
/// confirmation, offered schedulers, space) before anything is changed; returns a line
/// describing the device for the user, if there is one.
pub fn check_device(
    spec: &schedlab_spec::Spec,
    dir: Option<&Path>,
    yes_device: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let Some(d) = &spec.plan.device else { return Ok(None) };
    let parent = dir
        .map(Path::to_path_buf)
        .or_else(|| spec.plan.dir.clone())
        .unwrap_or_else(std::env::temp_dir);
    let facts = schedlab_sys::blockdev::facts(&schedlab_sys::Root::default(), d, &parent);
    spec.check_device(&facts, yes_device).map_err(|e| bad_input(e.to_string()))?;
    let line = match &d.target {
        schedlab_spec::DeviceTarget::Loop { fs, direct_io, .. } => format!(
            "device: a {} MiB loop device ({fs}{}) backed by a file in {}, removed afterwards; iosched axis sets {}",
            spec.plan.loop_size_mib().unwrap_or(0),
            if *direct_io { ", direct I/O" } else { "" },
            parent.display(),
            match d.queue {
                schedlab_spec::QueueTarget::Device => "the loop device's queue".to_string(),
                schedlab_spec::QueueTarget::Backing => format!("the backing disk's queue ({})", facts.disk.as_deref().unwrap_or("?")),
            }
        ),
        schedlab_spec::DeviceTarget::Dir { path } => {
            format!("device: files in a new directory under {path} on {} (confirmed)", facts.disk.as_deref().unwrap_or("?"))
        }
    };
    Ok(Some(format!(
        "{line}; page cache dropped before each cell: {}",
        if d.drop_caches { "yes" } else { "no" }
    )))
}

/// Records a new run of `spec`'s plan (stored as `plan_json`) with this command line; returns its id.
pub fn create_run(
    store: &Store,
    spec: &schedlab_spec::Spec,
    mode: schedlab_model::Mode,
    env: &schedlab_model::Environment,
    plan_json: &str,
) -> anyhow::Result<i64> {
    let plan = &spec.plan;
    // Nothing has changed yet when the database refuses the run (read-only, full): bad input.
    let refused = |e: schedlab_store::DbError| {
        bad_input(format!(
            "cannot record a new run in {}: {e}",
            store.path().unwrap_or("the database")
        ))
    };
    store
        .create_run(&schedlab_store::NewRun {
            name: &plan.name,
            mode,
            spec_path: &plan.source_path,
            spec_text: &spec.text,
            spec_hash: &spec.hash,
            plan_json,
            scale: plan.scale,
            env,
            command_line: &std::env::args().collect::<Vec<_>>().join(" "),
        })
        .map_err(refused)
}

/// Refuses a database path whose directory is missing (SQLite would only say "unable to
/// open database file"): bad input, named, before anything on the machine is changed.
pub fn check_db_dir(db: &Path) -> anyhow::Result<()> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => return Ok(()),
    };
    if !dir.is_dir() && !db.exists() {
        let what = if dir.exists() { "is not a directory" } else { "does not exist" };
        return Err(bad_input(format!(
            "cannot create the results database {}: its directory {} {what} (create it, or pass another --db / SCHEDLAB_DB)",
            db.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Opens the results database.
pub fn open_store(db: &Path) -> anyhow::Result<Store> {
    check_db_dir(db)?;
    Store::open(db)
        .map_err(|e| anyhow::anyhow!("cannot open the results database {}: {e}", db.display()))
}

/// Opens an existing database for reading; a missing file is bad input, not a new database.
pub fn open_existing(db: &Path) -> anyhow::Result<Store> {
    if !db.exists() {
        return Err(bad_input(format!(
            "no results database at {} (run an experiment first, or pass --db / SCHEDLAB_DB)",
            db.display()
        )));
    }
    open_store(db)
}

/// The run named on the command line, or the newest.
pub fn pick_run(store: &Store, id: Option<i64>) -> anyhow::Result<RunRow> {
    match id {
        Some(id) => store
            .run(id)?
            .ok_or_else(|| bad_input(format!("there is no run {id} (see `schedlab runs`)"))),
        None => store.latest(None)?.ok_or_else(|| bad_input("the database holds no runs yet")),
    }
}

/// A simulated run's model in one line, from the parameters its samples keep.
pub fn sim_model(records: &[schedlab_model::CellRecord]) -> Option<String> {
    records
        .iter()
        .flat_map(|r| &r.samples)
        .find_map(|s| s.extra.sim.as_ref())
        .map(|o| o.model.describe())
}

/// Formats unix seconds as UTC `YYYY-MM-DD HH:MM:SS`.
pub fn utc(secs: f64) -> String {
    jiff::Timestamp::from_second(secs as i64)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|_| "?".into())
}

/// What `run` and `simulate` do with each workload that asks for many sets per cell:
/// (line, is_warning).
fn batch_lines(plan: &schedlab_spec::Plan) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        let (Some(p), false) = (g.workload.periodic(), seen.contains(&g.workload_name.as_str()))
        else {
            continue;
        };
        let Some(b) = p.batch else { continue };
        seen.push(&g.workload_name);
        let measured = match b.live {
            1 => "only set 0 (the set the lines below analyse)".to_string(),
            k => format!(
                "sets 0 to {} (set 0 under the cell's key, set i as KEY/set=i; `report SIM --compare RUN` puts them on the simulated curves)",
                k - 1
            ),
        };
        out.push((
            format!(
                "workload {}: {} generated sets per cell; `schedlab simulate` simulates them all, `run` measures {measured}{}",
                g.workload_name,
                b.sets,
                if b.hyperperiod { "; each simulated over its hyperperiod when shorter than duration_s" } else { "" }
            ),
            false,
        ));
    }
    out
}

/// What the DWCS feasibility test says about each distinct periodic task set of a plan,
/// printed before a run: (line, is_warning).
pub fn feasibility_lines(plan: &schedlab_spec::Plan, cpus: usize) -> Vec<(String, bool)> {
    let mut out = batch_lines(plan);
    let mut seen: Vec<(String, Vec<schedlab_periodic::TaskParams>)> = Vec::new();
    for c in &plan.cells {
        for g in &c.groups {
            // A batch's live sets beyond set 0 get no lines of their own (set 0 stands for them).
            let Some(p) = g.workload.periodic().filter(|p| p.live_set.is_none()) else { continue };
            if seen.iter().any(|(w, t)| *w == g.workload_name && *t == p.tasks) {
                continue;
            }
            seen.push((g.workload_name.clone(), p.tasks.clone()));
            let same_set = |s: schedlab_spec::RtScheduler| {
                plan.cells.iter().flat_map(|c| &c.groups).any(|h| {
                    h.workload.periodic().is_some_and(|q| q.tasks == p.tasks && q.scheduler == s)
                })
            };
            let f = schedlab_periodic::feasibility(&p.tasks);
            let at = match p.utilisation {
                Some(u) => format!("{} at utilisation {u}", g.workload_name),
                None => g.workload_name.clone(),
            };
            if same_set(schedlab_spec::RtScheduler::Deadline) {
                out.extend(deadline_admission(p, &at, cpus));
            }
            // The DWCS feasibility test (canonical, guaranteed) speaks only of sets DWCS
            // schedules; any scheduler confined to one CPU drops jobs of a set more than its worth.
            let one_cpu = plan.cells.iter().flat_map(|c| &c.groups).any(|h| {
                h.workload.periodic().is_some_and(|q| {
                    q.tasks == p.tasks && q.scheduler != schedlab_spec::RtScheduler::Deadline
                })
            });
            if !same_set(schedlab_spec::RtScheduler::Dwcs) {
                if one_cpu && f.min_utilisation > 1.0 + 1e-9 {
                    out.push((
                        format!(
                            "task set {at}: {} tasks, sum C/T = {:.3}, even the windows' minimum (sum (1 - x/y) C/T = {:.3}) is more than one CPU's worth, so window violations are expected",
                            p.tasks.len(),
                            f.utilisation,
                            f.min_utilisation
                        ),
                        true,
                    ));
                }
                continue;
            }
            let head = format!(
                "task set {at}: {} tasks, sum C/T = {:.3}, DWCS minimum utilisation sum (1 - x/y) C/T = {:.3}",
                p.tasks.len(),
                f.utilisation,
                f.min_utilisation
            );
            let placement = p.pinned_placement(cpus.saturating_sub(1) as u32);
            let per_cpu = p.feasibility_per_cpu(Some(&placement));
            if per_cpu.len() > 1 {
                let shares: Vec<String> = per_cpu
                    .iter()
                    .map(|(c, idx, f)| {
                        let tasks: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
                        format!(
                            "CPU {c}: tasks {}, sum C/T = {:.3}, minimum utilisation = {:.3}",
                            tasks.join(" "),
                            f.utilisation,
                            f.min_utilisation
                        )
                    })
                    .collect();
                let line = format!("{head}; partitioned (first-fit decreasing by C/T; deadline tasks stay global): {}", shares.join("; "));
                if per_cpu.iter().all(|(_, _, f)| f.guaranteed) {
                    out.push((format!("{line}; every CPU's share is canonical and <= 1: the DWCS feasibility test guarantees every window (in theory, without overheads)"), false));
                } else if let Some((c, _, _)) =
                    per_cpu.iter().find(|(_, _, f)| f.min_utilisation > 1.0 + 1e-9)
                {
                    out.push((format!("{line}; CPU {c}'s share is more than one CPU's worth, so window violations are expected"), true));
                } else {
                    out.push((
                        format!("{line}; not every CPU's share is canonical, so the DWCS feasibility guarantee does not apply"),
                        true,
                    ));
                }
            } else if f.guaranteed {
                out.push((
                    format!("{head}; canonical (K = {} ms) and <= 1: the DWCS feasibility test guarantees every window (in theory, without overheads)", f.canonical_k_ns.unwrap_or(0) as f64 / 1e6),
                    false,
                ));
            } else if f.min_utilisation > 1.0 + 1e-9 {
                out.push((
                    format!("{head}: more than one CPU's worth, so window violations are expected"),
                    true,
                ));
            } else {
                let why = f.not_canonical_because.unwrap_or_default();
                out.push((format!("{head}; not canonical ({why}), so the DWCS feasibility guarantee does not apply"), true));
            }
        }
    }
    out
}

/// The warning that SCHED_DEADLINE's admission control will refuse set `p`, if it will.
fn deadline_admission(
    p: &schedlab_spec::Periodic,
    at: &str,
    cpus: usize,
) -> Option<(String, bool)> {
    let limit = cpus as f64 * 0.95;
    (p.deadline_bandwidth() > limit).then(|| {
        (
            format!(
                "task set {at}: SCHED_DEADLINE admission will refuse it: sum of runtime/period {:.3} exceeds {limit:.2} ({cpus} CPUs x 95%)",
                p.deadline_bandwidth()
            ),
            true,
        )
    })
}

/// The classic schedulability tests' verdicts on each distinct periodic task set of the plan
/// (`schedlab_schedulability::TESTS`): the uniprocessor tests for one CPU, the partitioned
/// and global ones for `cpus` when there are several. Two lines per set, each within 160
/// columns for the tests' names.
pub fn analysis_lines(plan: &schedlab_spec::Plan, cpus: usize) -> Vec<String> {
    use schedlab_schedulability::{Task, Verdict, TESTS};
    let mut out = Vec::new();
    let mut seen: Vec<&[schedlab_periodic::TaskParams]> = Vec::new();
    for g in plan.cells.iter().flat_map(|c| &c.groups) {
        let Some(p) = g.workload.periodic().filter(|p| p.live_set.is_none()) else { continue };
        if seen.contains(&p.tasks.as_slice()) {
            continue;
        }
        seen.push(&p.tasks);
        let set: Vec<Task> = p
            .tasks
            .iter()
            .map(|t| Task::new(t.c_ns, t.t_ns).deadline(t.d_ns.unwrap_or(t.t_ns)).window(t.x, t.y))
            .collect();
        let verdicts = |m: usize, multi: bool| -> String {
            TESTS
                .iter()
                // No explicit priorities here: the plan's order is not a priority.
                .filter(|t| t.name != "rta-priority")
                .filter(|t| t.uniprocessor != multi)
                .map(|t| {
                    let word = match (t.run)(&set, m).verdict {
                        Verdict::Schedulable => "yes",
                        Verdict::NotSchedulable => "no",
                        Verdict::Inconclusive => "?",
                    };
                    format!("{} {word}", t.name)
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at = match p.utilisation {
            Some(u) => format!("{} at utilisation {u}", g.workload_name),
            None => g.workload_name.clone(),
        };
        let offsets = if p.tasks.iter().any(|t| t.phase_ns > 0) {
            " (release offsets ignored: a set with offsets may do better)"
        } else {
            ""
        };
        out.push(format!("analysis of task set {at}{offsets}, one CPU: {}", verdicts(1, false)));
        if cpus > 1 {
            out.push(format!("  on {cpus} CPUs: {}", verdicts(cpus, true)));
        }
    }
    if !out.is_empty() {
        out.push(
            "  (yes = schedulable, no = not, ? = a sufficient test could not tell; `schedlab_schedulability` names each test's source)"
                .into(),
        );
    }
    out
}
