//! Validation of `periodic` workloads and of the `scheduler` and `utilisation` settings.

use crate::error::SpecError;
use crate::raw::{RawCanonical, RawGenerate, RawTask, RawWorkload};
use crate::validate::{Ctx, GroupDef};
use schedlab_plan::{
    canonical_set, Affinity, Class, GenSpec, Group, PeriodChoice, Periodic, PeriodicBody, Policy,
    RtScheduler, SetBatch, TaskParams, TaskSource, UtilisationMeasure, DISPATCH_MAX_TASKS,
    DISPATCH_RUN_PRIORITY, MAX_WORKER_PRIORITY, RM_TOP_PRIORITY,
};
use serde_spanned::Spanned;
use std::ops::Range;

/// Default run time of a periodic set, s.
const DEFAULT_DURATION_S: f64 = 10.0;
/// Default dispatcher quantum, ms (the seed's 10 ms).
const DEFAULT_QUANTUM_MS: f64 = 10.0;
/// Default CPU demand of a job as a fraction of C: the rest covers dispatch and switches.
const DEFAULT_WORK_FRACTION: f64 = 0.9;
/// Default bytes a `read` job reads, KiB.
const DEFAULT_READ_KIB: i64 = 64;
/// Most tasks in one set (the dispatcher's region holds this many slots).
const MAX_TASKS: i64 = DISPATCH_MAX_TASKS as i64;
/// Most generated sets per cell.
const MAX_SETS: i64 = 10_000_000;

fn ms_to_ns(cx: &Ctx, v: &Spanned<f64>, what: &str, allow_zero: bool) -> Result<u64, SpecError> {
    let x = *v.get_ref();
    let ok = x.is_finite() && (x > 0.0 || (allow_zero && x == 0.0)) && x <= 1e7;
    if !ok {
        let range = if allow_zero { "0 or more" } else { "more than 0" };
        return cx.err(
            v.span(),
            format!("{what} must be a number of milliseconds, {range} and at most 10^7, got {x}"),
        );
    }
    Ok((x * 1e6).round() as u64)
}

/// A scheduler name for periodic sets.
pub(crate) fn scheduler_name(cx: &Ctx, v: &Spanned<String>) -> Result<String, SpecError> {
    match RtScheduler::parse(v.get_ref()) {
        Some(s) => Ok(s.name().to_string()),
        None => {
            let known: Vec<&str> = RtScheduler::ALL.iter().map(|s| s.name()).collect();
            cx.err(
                v.span(),
                format!(
                    "unknown scheduler \"{}\"; expected one of: {}",
                    v.get_ref(),
                    known.join(", ")
                ),
            )
        }
    }
}

/// A target utilisation for a generated set.
pub(crate) fn utilisation_value(cx: &Ctx, v: &Spanned<f64>) -> Result<f64, SpecError> {
    let u = *v.get_ref();
    if !(u.is_finite() && u > 0.0 && u <= 256.0) {
        return cx
            .err(v.span(), format!("utilisation must be more than 0 and at most 256, got {u}"));
    }
    Ok(u)
}

fn window(
    cx: &Ctx,
    x: &Option<Spanned<i64>>,
    y: &Option<Spanned<i64>>,
    at: Range<usize>,
) -> Result<(u32, u32), SpecError> {
    let xv = match x {
        Some(v) => cx.int_in(v, 0, 1_000_000, "x")? as u32,
        None => 0,
    };
    let yv = match y {
        Some(v) => cx.int_in(v, 0, 1_000_000, "y")? as u32,
        None => 0,
    };
    if xv > yv || (xv > 0 && yv == 0) {
        let span = x.as_ref().map(|s| s.span()).unwrap_or(at);
        return cx.err(span, format!("window x/y = {xv}/{yv}: x (misses tolerated) must not exceed y (the window length)"));
    }
    Ok((xv, yv))
}

/// Parses a `kind = "periodic"` workload; None for any other kind (after checking it uses
/// no periodic key).
pub(crate) fn workload(
    cx: &Ctx,
    w: &RawWorkload,
    seed: u64,
) -> Result<Option<Periodic>, SpecError> {
    if !periodic_keys(cx, w)? {
        return Ok(None);
    }
    let quantum_ns = match &w.quantum_ms {
        Some(q) => {
            let ns = ms_to_ns(cx, q, "quantum_ms", false)?;
            if ns < 100_000 {
                return cx.err(q.span(), "quantum_ms must be at least 0.1 (100 us)");
            }
            ns
        }
        None => (DEFAULT_QUANTUM_MS * 1e6) as u64,
    };
    let duration_ns = match &w.duration_s {
        Some(d) if !(d.get_ref().is_finite() && *d.get_ref() > 0.0 && *d.get_ref() <= 86_400.0) => {
            return cx.err(
                d.span(),
                format!("duration_s must be more than 0 and at most 86400, got {}", d.get_ref()),
            )
        }
        Some(d) => (d.get_ref() * 1e9).round() as u64,
        None => (DEFAULT_DURATION_S * 1e9) as u64,
    };
    let cpu = match &w.cpu {
        Some(c) => Some(cx.int_in(c, 0, 4095, "cpu")? as u32),
        None => None,
    };
    let cpus =
        match (&w.cpus, &w.cpu) {
            (Some(c), Some(_)) => return cx.err(
                c.span(),
                "give `cpu` (the set on one CPU) or `cpus` (partitioned over several), not both",
            ),
            // The validator checks these CPUs against the machine like any CPU list.
            (Some(c), None) => crate::validate::cpu_list(cx, c, &mut Default::default())?,
            (None, _) => Vec::new(),
        };
    let work_ppm = match &w.work_fraction {
        Some(f) if !(f.get_ref().is_finite() && *f.get_ref() > 0.0 && *f.get_ref() <= 1.0) => {
            return cx.err(
                f.span(),
                format!(
                    "work_fraction must be more than 0 and at most 1 (a fraction of C), got {}",
                    f.get_ref()
                ),
            )
        }
        Some(f) => (f.get_ref() * 1e6).round() as u32,
        None => (DEFAULT_WORK_FRACTION * 1e6) as u32,
    };
    let body = body(cx, w)?;
    let mut batch = None;
    let (tasks, source, priorities) = task_set(cx, w, quantum_ns, seed, &mut batch)?;
    let utilisation = match &source {
        TaskSource::Generated(g) => Some(g.utilisation),
        _ => None,
    };
    // The set's own scheduler, used where no `scheduler` axis or group setting names one.
    let scheduler = match &w.scheduler {
        Some(s) => RtScheduler::parse(&scheduler_name(cx, s)?).expect("a checked name"),
        None => RtScheduler::Other,
    };
    let set = Periodic {
        tasks,
        source,
        body,
        duration_ns,
        quantum_ns,
        cpu,
        cpus,
        work_ppm,
        fill: w.fill.as_ref().map(|f| *f.get_ref()).unwrap_or(false),
        scheduler,
        utilisation,
        priorities,
        batch,
        live_set: None,
    };
    Ok(Some(match &w.generate {
        Some(g) if batch.is_some() => first_of_batch(cx, set, g.span())?,
        _ => set,
    }))
}

/// True for a periodic workload, which may use no other kind's key; any other kind may use
/// no periodic key.
fn periodic_keys(cx: &Ctx, w: &RawWorkload) -> Result<bool, SpecError> {
    let kind = w.kind.get_ref().as_str();
    let periodic_keys: [(&str, Option<Range<usize>>); 12] = [
        ("scheduler", w.scheduler.as_ref().map(|v| v.span())),
        ("body", w.body.as_ref().map(|v| v.span())),
        ("duration_s", w.duration_s.as_ref().map(|v| v.span())),
        ("quantum_ms", w.quantum_ms.as_ref().map(|v| v.span())),
        ("cpu", w.cpu.as_ref().map(|v| v.span())),
        ("cpus", w.cpus.as_ref().map(|v| v.span())),
        ("work_fraction", w.work_fraction.as_ref().map(|v| v.span())),
        ("fill", w.fill.as_ref().map(|v| v.span())),
        ("read_kib", w.read_kib.as_ref().map(|v| v.span())),
        ("tasks", w.tasks.as_ref().map(|v| v.span())),
        ("generate", w.generate.as_ref().map(|v| v.span())),
        ("canonical", w.canonical.as_ref().map(|v| v.span())),
    ];
    if kind != "periodic" {
        if let Some((name, Some(at))) = periodic_keys.iter().find(|(_, s)| s.is_some()) {
            return cx.err(
                at.clone(),
                format!("`{name}` applies only to a workload of kind \"periodic\", not \"{kind}\""),
            );
        }
        return Ok(false);
    }
    let other_keys: [(&str, Option<Range<usize>>); 12] = [
        ("iterations", w.iterations.as_ref().map(|v| v.span())),
        ("write_every", w.write_every.as_ref().map(|v| v.span())),
        ("transfer_bytes", w.transfer_bytes.as_ref().map(|v| v.span())),
        ("block_bytes", w.block_bytes.as_ref().map(|v| v.span())),
        ("input_bytes", w.input_bytes.as_ref().map(|v| v.span())),
        ("hashes", w.hashes.as_ref().map(|v| v.span())),
        ("argv", w.argv.as_ref().map(|v| v.span())),
        ("files", w.files.as_ref().map(|v| v.span())),
        ("file_bytes", w.file_bytes.as_ref().map(|v| v.span())),
        ("threads", w.threads.as_ref().map(|v| v.span())),
        ("buffer_bytes", w.buffer_bytes.as_ref().map(|v| v.span())),
        ("mode", w.mode.as_ref().map(|v| v.span())),
    ];
    if let Some((name, Some(at))) = other_keys.iter().find(|(_, s)| s.is_some()) {
        return cx.err(
            at.clone(),
            format!("`{name}` does not apply to a workload of kind \"periodic\""),
        );
    }
    Ok(true)
}

/// `body` (spin, fft or read) and `read_kib`, which only a reading body takes.
fn body(cx: &Ctx, w: &RawWorkload) -> Result<PeriodicBody, SpecError> {
    let body = match w.body.as_ref().map(|b| (b.get_ref().as_str(), b.span())) {
        None | Some(("spin", _)) => PeriodicBody::Spin,
        Some(("fft", _)) => PeriodicBody::Fft,
        Some(("read", _)) => {
            let kib = match &w.read_kib {
                Some(k) => cx.int_in(k, 4, 1 << 20, "read_kib")?,
                None => DEFAULT_READ_KIB,
            };
            if kib % 4 != 0 {
                return cx.err(
                    w.read_kib.as_ref().unwrap().span(),
                    "read_kib must be a multiple of 4 (jobs read 4 KiB chunks)",
                );
            }
            PeriodicBody::Read { bytes: kib as u64 * 1024 }
        }
        Some((other, at)) => {
            return cx
                .err(at, format!("unknown body \"{other}\"; expected one of: spin, fft, read"))
        }
    };
    if let (Some(k), false) = (&w.read_kib, matches!(body, PeriodicBody::Read { .. })) {
        return cx.err(k.span(), "read_kib applies only to body = \"read\"");
    }

    Ok(body)
}

/// The task set, from exactly one of `tasks`, `generate` and `canonical`, with where it came
/// from and the tasks' own priorities; a generated batch is left in `batch`.
fn task_set(
    cx: &Ctx,
    w: &RawWorkload,
    quantum_ns: u64,
    seed: u64,
    batch: &mut Option<SetBatch>,
) -> Result<(Vec<TaskParams>, TaskSource, Vec<u32>), SpecError> {
    let given: Vec<&str> = [
        ("tasks", w.tasks.is_some()),
        ("generate", w.generate.is_some()),
        ("canonical", w.canonical.is_some()),
    ]
    .iter()
    .filter(|(_, g)| *g)
    .map(|(n, _)| *n)
    .collect();
    if given.len() != 1 {
        let msg = if given.is_empty() {
            "a periodic workload needs its task set: `tasks = [{ c_ms = .., t_ms = .. }, ..]`, `generate = { tasks = .., utilisation = .. }` or `canonical = { tasks = .., period_quanta = .. }`".to_string()
        } else {
            format!(
                "give exactly one of tasks, generate and canonical, not {}",
                given.join(" and ")
            )
        };
        return cx.err(w.kind.span(), msg);
    }
    Ok(if let Some(list) = &w.tasks {
        let (tasks, priorities) = explicit(cx, list)?;
        (tasks, TaskSource::Explicit, priorities)
    } else if let Some(g) = &w.generate {
        let spec = gen_spec(cx, g.get_ref(), g.span(), quantum_ns, seed)?;
        *batch = set_batch(cx, g.get_ref())?;
        let tasks = spec
            .generate()
            .or_else(|e| cx.err(g.span(), format!("cannot generate the task set: {e}")))?;
        (tasks, TaskSource::Generated(spec), Vec::new())
    } else {
        let c = w.canonical.as_ref().expect("one of the three");
        (canonical(cx, c.get_ref(), c.span(), quantum_ns)?, TaskSource::Canonical, Vec::new())
    })
}

/// The batch a generated set asks for (`sets`, `live`, `job_records`, `horizon`), None for
/// the one set (no `sets`, or `sets = 1` without the other keys).
fn set_batch(cx: &Ctx, g: &RawGenerate) -> Result<Option<SetBatch>, SpecError> {
    let sets = match &g.sets {
        Some(n) => cx.int_in(n, 1, MAX_SETS, "sets")? as u32,
        None => {
            let given = [
                ("live", g.live.as_ref().map(|v| v.span())),
                ("job_records", g.job_records.as_ref().map(|v| v.span())),
                ("horizon", g.horizon.as_ref().map(|v| v.span())),
            ];
            if let Some((name, Some(at))) = given.into_iter().find(|(_, s)| s.is_some()) {
                return cx.err(
                    at,
                    format!("`{name}` applies to many sets per cell: give `sets = N` too"),
                );
            }
            return Ok(None);
        }
    };
    let live = match &g.live {
        Some(k) => cx.int_in(k, 0, i64::from(sets), "live (at most `sets`)")? as u32,
        None => 1,
    };
    let hyperperiod = match g.horizon.as_ref().map(|h| (h.get_ref().as_str(), h.span())) {
        None | Some(("duration", _)) => false,
        Some(("hyperperiod", _)) => true,
        Some((other, at)) => {
            return cx.err(at, format!("horizon must be \"duration\" (duration_s) or \"hyperperiod\" (the hyperperiod when shorter), got \"{other}\""))
        }
    };
    Ok(Some(SetBatch {
        sets,
        live,
        job_records: g.job_records.as_ref().is_some_and(|j| *j.get_ref()),
        hyperperiod,
    }))
}

/// A batch's workload with set 0 as its tasks (what `check` analyses and `run` measures).
pub(crate) fn first_of_batch(
    cx: &Ctx,
    set: Periodic,
    at: Range<usize>,
) -> Result<Periodic, SpecError> {
    match set.nth_set(0) {
        Some(Ok((_, first))) => Ok(Periodic { duration_ns: set.duration_ns, ..first }),
        Some(Err(e)) => cx.err(at, format!("cannot generate set 0 of the batch: {e}")),
        None => Ok(set),
    }
}

/// The listed tasks and their own priorities (every task's, or none).
fn explicit(
    cx: &Ctx,
    list: &Spanned<Vec<Spanned<RawTask>>>,
) -> Result<(Vec<TaskParams>, Vec<u32>), SpecError> {
    if list.get_ref().is_empty() {
        return cx.err(list.span(), "tasks must list at least one task");
    }
    if list.get_ref().len() as i64 > MAX_TASKS {
        return cx.err(list.span(), format!("at most {MAX_TASKS} tasks per set"));
    }
    let mut out = Vec::new();
    let mut priorities = Vec::new();
    let with = list.get_ref().iter().filter(|t| t.get_ref().priority.is_some()).count();
    for t in list.get_ref() {
        let r = t.get_ref();
        match &r.priority {
            Some(p) => priorities.push(cx.int_in(
                p,
                1,
                MAX_WORKER_PRIORITY,
                "priority (99 is reserved for the engine)",
            )? as u32),
            None if with > 0 => {
                return cx.err(t.span(), "give every task a `priority` (the fifo and rr schedulers run each at its own), or none");
            }
            None => {}
        }
        let c_ns = ms_to_ns(cx, &r.c_ms, "c_ms", false)?;
        let t_ns = ms_to_ns(cx, &r.t_ms, "t_ms", false)?;
        let d_ns = r.d_ms.as_ref().map(|d| ms_to_ns(cx, d, "d_ms", false)).transpose()?;
        let phase_ns = r
            .phase_ms
            .as_ref()
            .map(|p| ms_to_ns(cx, p, "phase_ms", true))
            .transpose()?
            .unwrap_or(0);
        let (x, y) = window(cx, &r.x, &r.y, t.span())?;
        let task = TaskParams { c_ns, t_ns, d_ns, x, y, phase_ns };
        if let Err(e) = task.validate() {
            return cx.err(t.span(), format!("this task is not valid: {e}"));
        }
        out.push(task);
    }
    Ok((out, priorities))
}

fn gen_spec(
    cx: &Ctx,
    g: &RawGenerate,
    at: Range<usize>,
    quantum_ns: u64,
    seed: u64,
) -> Result<GenSpec, SpecError> {
    let tasks = cx.int_in(&g.tasks, 1, MAX_TASKS, "tasks")? as usize;
    let utilisation = match &g.utilisation {
        Some(u) => utilisation_value(cx, u)?,
        None => 0.5,
    };
    let measure = match g.measure.as_ref().map(|m| (m.get_ref().as_str(), m.span())) {
        None | Some(("window_min", _)) => UtilisationMeasure::WindowMin,
        Some(("plain", _)) => UtilisationMeasure::Plain,
        Some((other, span)) => {
            return cx
                .err(span, format!("measure must be \"window_min\" (sum of (1 - x/y) C/T) or \"plain\" (sum of C/T), got \"{other}\""))
        }
    };
    // Periods are whole quanta, so the dispatcher's decisions line up with releases.
    let min_ns = g
        .min_period_ms
        .as_ref()
        .map(|v| ms_to_ns(cx, v, "min_period_ms", false))
        .transpose()?
        .unwrap_or(2 * quantum_ns);
    let max_ns = g
        .max_period_ms
        .as_ref()
        .map(|v| ms_to_ns(cx, v, "max_period_ms", false))
        .transpose()?
        .unwrap_or(20 * quantum_ns);
    if min_ns > max_ns {
        return cx.err(
            at,
            format!(
                "min_period_ms ({}) is larger than max_period_ms ({})",
                min_ns as f64 / 1e6,
                max_ns as f64 / 1e6
            ),
        );
    }
    if max_ns / quantum_ns < min_ns.div_ceil(quantum_ns) {
        return cx
            .err(at, "no whole number of quanta lies between min_period_ms and max_period_ms");
    }
    let c_granularity_ns = g
        .c_granularity_ms
        .as_ref()
        .map(|v| ms_to_ns(cx, v, "c_granularity_ms", false))
        .transpose()?
        .unwrap_or(1_000_000);
    let (x, y) = window(cx, &g.x, &g.y, at.clone())?;
    let seed = match &g.seed {
        Some(s) => cx.int_in(s, 0, i64::MAX, "seed")? as u64,
        None => seed,
    };
    Ok(GenSpec {
        tasks,
        utilisation,
        measure,
        periods: PeriodChoice::LogUniform { min_ns, max_ns, granularity_ns: quantum_ns },
        x,
        y,
        c_granularity_ns,
        min_c_ns: None,
        max_task_utilisation: 1.0,
        seed,
        canonical_k_ns: g.canonical.as_ref().is_some_and(|c| *c.get_ref()).then_some(quantum_ns),
    })
}

fn canonical(
    cx: &Ctx,
    c: &RawCanonical,
    at: Range<usize>,
    quantum_ns: u64,
) -> Result<Vec<TaskParams>, SpecError> {
    let tasks = cx.int_in(&c.tasks, 1, MAX_TASKS, "tasks")? as usize;
    let q = cx.int_in(&c.period_quanta, 1, 1_000_000, "period_quanta")? as u64;
    let (x, y) = window(cx, &c.x, &c.y, at.clone())?;
    canonical_set(tasks, x, y, q, quantum_ns)
        .or_else(|e| cx.err(at, format!("cannot build the canonical set: {e}")))
}

/// The group of one cell whose workload is periodic: the scheduler and utilisation applied,
/// one process per task.
pub(crate) fn resolve_group(
    cx: &Ctx,
    gname: &str,
    wname: &str,
    mut p: Periodic,
    def: &GroupDef,
    at: Range<usize>,
) -> Result<Group, SpecError> {
    let bad = |what: &str| -> Result<Group, SpecError> {
        cx.err(
            at.clone(),
            format!("group \"{gname}\" runs the periodic workload \"{wname}\": {what}"),
        )
    };
    if def.policy.is_some() || def.priority.is_some() || def.nice.is_some() {
        return bad("it is scheduled by `scheduler` (other, fifo-rm, fifo-dm, deadline, edf, dwcs, fifo, rr), not by policy, priority or nice (a task's own priority goes on the task, for fifo and rr)");
    }
    if def.affinity.is_some() {
        return bad("its tasks are pinned to the workload's `cpu`; remove `affinity`");
    }
    if def.background {
        return bad("a periodic set cannot be a background group");
    }
    let scheduler = def.scheduler.as_deref().and_then(RtScheduler::parse).unwrap_or(p.scheduler);
    if let Some(u) = def.utilisation {
        let TaskSource::Generated(spec) = &mut p.source else {
            return bad("a `utilisation` needs a generated task set (`generate = { .. }`), not a listed or canonical one");
        };
        spec.utilisation = u;
        p.tasks = match spec.generate() {
            Ok(t) => t,
            Err(e) => return bad(&format!("cannot generate its task set at utilisation {u}: {e}")),
        };
        p.utilisation = Some(u);
        if p.batch.is_some() {
            p = first_of_batch(cx, p, at.clone())?;
        }
    }
    if let Some(n) = def.processes {
        if n as usize != p.tasks.len() {
            return bad(&format!(
                "it has {} tasks, one process each, but processes = {n}; leave processes out",
                p.tasks.len()
            ));
        }
    }
    if scheduler.explicit_priorities() && p.priorities.len() != p.tasks.len() {
        return bad(&format!(
            "scheduler {} runs each task at its own priority: list the tasks with one each, `tasks = [{{ c_ms = .., t_ms = .., priority = .. }}, ..]`",
            scheduler.name()
        ));
    }
    p.scheduler = scheduler;
    let policy = match scheduler {
        // Under edf-scx/dwcs-scx every worker is an ordinary task on sched_ext; schedlab's
        // scheduler runs the chosen one.
        RtScheduler::Other | RtScheduler::EdfScx | RtScheduler::DwcsScx => Policy::OTHER,
        RtScheduler::FifoRm | RtScheduler::FifoDm => Policy::rt(Class::Fifo, RM_TOP_PRIORITY),
        // The highest of the set: what the privilege check must allow.
        RtScheduler::Fifo | RtScheduler::Rr => Policy::rt(
            if scheduler == RtScheduler::Fifo { Class::Fifo } else { Class::Rr },
            p.priorities.iter().copied().max().unwrap_or(1),
        ),
        RtScheduler::Deadline => {
            if let Some(t) = p.tasks.iter().find(|t| t.c_ns < 1024) {
                return bad(&format!(
                    "SCHED_DEADLINE needs a runtime of at least 1024 ns, and a task has C = {} ns",
                    t.c_ns
                ));
            }
            p.tasks[0].deadline_policy()
        }
        // The dispatcher runs the chosen worker at SCHED_FIFO 97; the others wait at SCHED_OTHER.
        RtScheduler::Edf | RtScheduler::Dwcs => Policy::rt(Class::Fifo, DISPATCH_RUN_PRIORITY),
    };
    Ok(Group {
        name: gname.to_string(),
        workload_name: wname.to_string(),
        processes: p.tasks.len() as u32,
        workload: schedlab_plan::Workload::Periodic(Box::new(p)),
        policy_name: scheduler.name().to_string(),
        policy,
        affinity: Affinity::All,
        cgroup: def.cgroup.clone(),
        background: false,
        work_scale: None,
    })
}
