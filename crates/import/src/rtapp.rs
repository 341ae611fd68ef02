//! rt-app's task description -> schedlab periodic task sets, one per scheduling class, with
//! everything that does not map exactly listed.
//!
//! A periodic rt-app thread does `run` C then waits on a `timer` of period T (or `sleep`s);
//! its policy picks the set: SCHED_OTHER/BATCH/IDLE -> `other`, SCHED_FIFO -> `fifo` and
//! SCHED_RR -> `rr` (each task at its rt-app priority; beside SCHED_FIFO threads, SCHED_RR ones
//! join the `fifo` set), SCHED_DEADLINE -> `deadline` (C, T, D from dl-runtime, dl-period,
//! dl-deadline).

use crate::json::JsonValue;
use crate::ImportError;
use schedlab_plan::{Class, TaskParams, DISPATCH_MAX_TASKS as MAX_SET_TASKS};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Run time of a set when the rt-app file gives no duration, s (schedlab's default).
pub const DEFAULT_DURATION_S: f64 = 10.0;

/// An rt-app policy name (`SCHED_FIFO`) as schedlab's class.
pub fn parse_policy(s: &str) -> Option<Class> {
    let class = s.strip_prefix("SCHED_").filter(|n| *n == n.to_ascii_uppercase())?;
    Class::parse(&class.to_ascii_lowercase())
}

/// rt-app's name of a class (`SCHED_FIFO`).
pub fn rtapp_name(c: Class) -> String {
    format!("SCHED_{}", c.name().to_ascii_uppercase())
}

/// The schedlab periodic scheduler whose set takes a task of this class.
pub fn scheduler(c: Class) -> &'static str {
    match c {
        Class::Other | Class::Batch | Class::Idle => "other",
        Class::Fifo => "fifo",
        Class::Rr => "rr",
        Class::Deadline => "deadline",
    }
}

/// An rt-app SCHED_FIFO/RR priority as a schedlab task's: 1 to 98 (99 is the engine's).
pub fn schedlab_priority(p: i64) -> i64 {
    p.clamp(1, schedlab_plan::MAX_WORKER_PRIORITY)
}

/// rt-app's default priority: a nice value for the fair classes, 10 for the RT ones.
fn default_priority(c: Class) -> i64 {
    if c.is_rt() {
        10
    } else {
        0
    }
}

/// One schedlab task made from one rt-app thread (one instance).
#[derive(Debug, Clone, PartialEq)]
pub struct RtAppTask {
    /// The thread's name, with `[i]` for instance i of several.
    pub name: String,
    /// Where it came from, for the spec's comment.
    pub origin: String,
    /// Its rt-app policy.
    pub policy: Class,
    /// Its rt-app priority (nice for the fair classes).
    pub priority: i64,
    /// C, us (dl-runtime for SCHED_DEADLINE, else the job's run time).
    pub c_us: u64,
    /// T, us.
    pub t_us: u64,
    /// D, us, when it differs from T.
    pub d_us: Option<u64>,
    /// First release after the set's start (rt-app's `delay`), us.
    pub phase_us: u64,
    /// The job's busy time (its run/runtime events), us.
    pub work_us: u64,
    /// Its CPU mask, when it has one.
    pub cpus: Option<Vec<u32>>,
}

/// One schedlab periodic set: the tasks of one scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct Set {
    /// The workload's name in the spec.
    pub name: String,
    /// The schedlab scheduler.
    pub scheduler: &'static str,
    /// Its tasks, in file order.
    pub tasks: Vec<RtAppTask>,
    /// The one CPU of the set, when its tasks name one.
    pub cpu: Option<u32>,
    /// The CPUs it is partitioned over, when its tasks name several.
    pub cpus: Vec<u32>,
    /// A job's work as a fraction of C.
    pub work_fraction: f64,
}

/// What an rt-app file became.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// How long each set runs, s.
    pub duration_s: f64,
    /// The sets, one per scheduler, in the order other, fifo, rr, deadline.
    pub sets: Vec<Set>,
    /// What could not be mapped exactly, one line each.
    pub unmapped: Vec<String>,
}

/// rt-app's `global` object, the keys schedlab uses; the rest are listed as not mapped.
#[derive(Debug, Default, Deserialize)]
struct Global {
    #[serde(default)]
    duration: Option<i64>,
    #[serde(default)]
    default_policy: Option<String>,
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

/// What an event or key in a thread or phase object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Run,
    Sleep,
    Timer,
    /// An event schedlab has no counterpart for, with the reason.
    Unmapped(&'static str),
    /// A property (loop, policy, ...), read by name.
    Property,
    Unknown,
}

const PROPERTIES: [&str; 12] = [
    "loop",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "cpus",
    "util_min",
    "util_max",
    "nodes_membind",
    "taskgroup",
    "delay",
];
/// Keys only a thread object has ("period"/"deadline": rt-app's legacy dl-period/dl-deadline).
const THREAD_KEYS: [&str; 4] = ["instance", "phases", "period", "deadline"];

/// rt-app matches events by prefix, in this order ("runtime" before "run", "memrun" before "mem").
fn classify(key: &str, thread_level: bool) -> Key {
    if PROPERTIES.contains(&key) || (thread_level && THREAD_KEYS.contains(&key)) {
        return Key::Property;
    }
    const SYNC: &str = "mutexes and condition variables shared between threads: schedlab's periodic tasks are independent";
    const WAKE: &str = "wake-ups by another thread: schedlab releases tasks by time only";
    let table: [(&str, Key); 21] = [
        ("sleep", Key::Sleep),
        ("runtime", Key::Run),
        ("run", Key::Run),
        ("memrun", Key::Unmapped("memory phase: schedlab's periodic jobs spin, do FFTs or read")),
        ("mem", Key::Unmapped("memory phase: schedlab's periodic jobs spin, do FFTs or read")),
        ("iorun", Key::Unmapped("I/O phase to rt-app's io_device: schedlab's jobs read (body = \"read\") but never write")),
        ("lock", Key::Unmapped(SYNC)),
        ("unlock", Key::Unmapped(SYNC)),
        ("signal", Key::Unmapped(SYNC)),
        ("broad", Key::Unmapped(SYNC)),
        ("wait", Key::Unmapped(SYNC)),
        ("sync", Key::Unmapped(SYNC)),
        ("barrier", Key::Unmapped("a barrier between threads: schedlab's periodic tasks are independent")),
        ("timer", Key::Timer),
        ("resume", Key::Unmapped(WAKE)),
        ("suspend", Key::Unmapped(WAKE)),
        ("yield", Key::Unmapped("sched_yield: schedlab's jobs never yield")),
        ("fork", Key::Unmapped("a thread forked later: schedlab starts every task with the set")),
        ("sem_post", Key::Unmapped(WAKE)),
        ("sem_wait", Key::Unmapped(WAKE)),
        ("slack", Key::Unknown),
    ];
    table.iter().find(|(p, _)| key.starts_with(p)).map(|(_, k)| *k).unwrap_or(Key::Unknown)
}

/// Scheduling settings of a thread or phase object, as written.
#[derive(Debug, Clone, Default)]
struct Sched {
    policy: Option<String>,
    priority: Option<i64>,
    dl_runtime: Option<u64>,
    dl_period: Option<u64>,
    dl_deadline: Option<u64>,
    cpus: Option<Vec<u32>>,
}

impl Sched {
    /// `over`'s settings where it has them, else these.
    fn overridden(&self, over: &Sched) -> Sched {
        Sched {
            policy: over.policy.clone().or(self.policy.clone()),
            priority: over.priority.or(self.priority),
            dl_runtime: over.dl_runtime.or(self.dl_runtime),
            dl_period: over.dl_period.or(self.dl_period),
            dl_deadline: over.dl_deadline.or(self.dl_deadline),
            cpus: over.cpus.clone().or(self.cpus.clone()),
        }
    }
}

/// One phase's events, summed.
#[derive(Debug, Clone, Default)]
struct RtAppPhase {
    name: String,
    run_us: u64,
    sleep_us: u64,
    /// (ref, period us, mode) of each timer event.
    timers: Vec<(String, u64, String)>,
    /// How many times the phase repeats in a round of the thread (rt-app's phase `loop`).
    loops: u64,
    sched: Sched,
}

impl RtAppPhase {
    /// How long one round of the phase takes when every job is on time, us.
    fn round_us(&self) -> u64 {
        let period = match self.timers.as_slice() {
            [] => self.run_us + self.sleep_us,
            ts => ts.iter().map(|t| t.1).sum(),
        };
        self.loops * period
    }
}

fn int(at: &str, key: &str, v: &JsonValue) -> Result<i64, ImportError> {
    match v {
        JsonValue::Num(x) if x.fract() == 0.0 && x.abs() < 9e15 => Ok(*x as i64),
        other => Err(ImportError::from(format!(
            "{at}: \"{key}\" must be an integer, not {}",
            other.kind()
        ))),
    }
}

fn us(at: &str, key: &str, v: &JsonValue) -> Result<u64, ImportError> {
    let x = int(at, key, v)?;
    u64::try_from(x).map_err(|_| {
        ImportError::from(format!("{at}: \"{key}\" must be 0 or more microseconds, got {x}"))
    })
}

fn sched_of(at: &str, obj: &[(String, JsonValue)]) -> Result<Sched, ImportError> {
    let mut s = Sched::default();
    for (k, v) in obj {
        match k.as_str() {
            "policy" => match v {
                JsonValue::Str(p) if parse_policy(p).is_some() => s.policy = Some(p.clone()),
                JsonValue::Str(p) => {
                    return Err(ImportError::from(format!(
                    "{at}: unknown policy \"{p}\"; rt-app's are SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE"
                )))
                }
                other => return Err(ImportError::from(format!("{at}: \"policy\" must be a string, not {}", other.kind()))),
            },
            "priority" => s.priority = Some(int(at, k, v)?),
            "dl-runtime" => s.dl_runtime = Some(us(at, k, v)?),
            "dl-period" => s.dl_period = Some(us(at, k, v)?),
            "dl-deadline" => s.dl_deadline = Some(us(at, k, v)?),
            "cpus" => {
                let JsonValue::Arr(a) = v else {
                    return Err(ImportError::from(format!("{at}: \"cpus\" must be an array of CPU numbers, not {}", v.kind())));
                };
                let cpus = a.iter().map(|c| us(at, "cpus", c).map(|c| c as u32)).collect::<Result<Vec<u32>, ImportError>>()?;
                s.cpus = Some(cpus);
            }
            _ => {}
        }
    }
    Ok(s)
}

/// Reads one phase object (or a thread object with its events inline), noting what it drops.
fn phase(
    at: &str,
    name: &str,
    obj: &[(String, JsonValue)],
    thread_level: bool,
    unmapped: &mut Vec<String>,
) -> Result<RtAppPhase, ImportError> {
    let loops = match obj.iter().rev().find(|(k, _)| k == "loop") {
        Some((_, v)) => int(at, "loop", v)?.max(0) as u64,
        None => 1,
    };
    let mut p = RtAppPhase {
        name: name.to_string(),
        sched: sched_of(at, obj)?,
        loops,
        ..RtAppPhase::default()
    };
    for (k, v) in obj {
        match classify(k, thread_level) {
            Key::Run => p.run_us += us(at, k, v)?,
            Key::Sleep => p.sleep_us += us(at, k, v)?,
            Key::Timer => {
                let period = v
                    .get("period")
                    .ok_or_else(|| format!("{at}: timer \"{k}\" has no \"period\""))?;
                let r = match v.get("ref") {
                    Some(JsonValue::Str(r)) => r.clone(),
                    _ => {
                        return Err(ImportError::from(format!(
                            "{at}: timer \"{k}\" needs a \"ref\" string"
                        )))
                    }
                };
                let mode = match v.get("mode") {
                    Some(JsonValue::Str(m)) => m.clone(),
                    _ => "relative".to_string(),
                };
                p.timers.push((r, us(at, "period", period)?, mode));
            }
            Key::Unmapped(why) => unmapped.push(format!("{at}: \"{k}\" left out ({why})")),
            Key::Property => match k.as_str() {
                "util_min" | "util_max" => unmapped.push(format!(
                    "{at}: \"{k}\" left out (uclamp: schedlab sets no utilisation clamps)"
                )),
                "nodes_membind" => unmapped.push(format!(
                    "{at}: \"{k}\" left out (NUMA binding: schedlab binds no memory)"
                )),
                "taskgroup" => unmapped.push(format!(
                    "{at}: \"{k}\" left out (cgroups of periodic sets are not supported)"
                )),
                _ => {}
            },
            Key::Unknown => unmapped.push(format!("{at}: unknown key \"{k}\" left out")),
        }
    }
    Ok(p)
}

/// The (C, T, work) a phase describes, or why it is not a periodic job.
fn pattern(p: &RtAppPhase, at: &str, unmapped: &mut Vec<String>) -> Option<(u64, u64)> {
    if p.run_us == 0 {
        return None;
    }
    let t = match p.timers.as_slice() {
        [] if p.sleep_us > 0 => {
            unmapped.push(format!(
                "{at}: no timer: T taken as run + sleep = {} us (rt-app's sleep starts when the run ends, so its period stretches with every delay; schedlab releases on time)",
                p.run_us + p.sleep_us
            ));
            return Some((p.run_us, p.run_us + p.sleep_us));
        }
        [] => return None,
        [(_, t, _)] => *t,
        several => {
            let sum = several.iter().map(|(_, t, _)| t).sum();
            unmapped.push(format!(
                "{at}: {} timers in one phase: T taken as the sum of their periods, {sum} us",
                several.len()
            ));
            sum
        }
    };
    if p.sleep_us > 0 {
        unmapped.push(format!(
            "{at}: sleep of {} us inside the job left out (a schedlab job is one burst of C)",
            p.sleep_us
        ));
    }
    Some((p.run_us, t))
}

/// Converts a parsed rt-app file.
pub fn import(root: &JsonValue) -> Result<Imported, ImportError> {
    let JsonValue::Obj(top) = root else {
        return Err(ImportError::from(format!(
            "the file must be a JSON object, not {}",
            root.kind()
        )));
    };
    let mut unmapped = Vec::new();
    let global: Global = match root.get("global") {
        Some(g) => serde_json::from_value(to_value(g)).map_err(|e| format!("\"global\": {e}"))?,
        None => Global::default(),
    };
    for (k, _) in top {
        match k.as_str() {
            "tasks" | "global" => {}
            "resources" => {
                unmapped.push("\"resources\" left out (rt-app creates them for locks and conditions, which are not mapped)".into())
            }
            other => unmapped.push(format!("unknown top-level key \"{other}\" left out")),
        }
    }
    if !global.rest.is_empty() {
        let keys: Vec<&str> = global.rest.keys().map(String::as_str).collect();
        unmapped.push(format!(
            "global: {} left out (rt-app's calibration, logging and tracing options; schedlab locks a periodic worker's memory and calibrates on its own)",
            keys.join(", ")
        ));
    }
    let default_policy = match &global.default_policy {
        Some(p) => {
            parse_policy(p).ok_or_else(|| format!("global: unknown default_policy \"{p}\""))?
        }
        None => Class::Other,
    };
    let tasks = match root.get("tasks") {
        Some(JsonValue::Obj(t)) if !t.is_empty() => t,
        Some(JsonValue::Obj(_)) => {
            return Err(ImportError::from("\"tasks\" is empty: nothing to import"))
        }
        Some(other) => {
            return Err(ImportError::from(format!(
                "\"tasks\" must be an object of named threads, not {}",
                other.kind()
            )))
        }
        None => {
            return Err(ImportError::from(
                "no \"tasks\" object: rt-app files describe their threads in \"tasks\"",
            ))
        }
    };
    let mut out: Vec<(RtAppTask, Option<u64>)> = Vec::new();
    let mut timer_users: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut relative = false;
    for (name, obj) in tasks {
        let at = format!("task \"{name}\"");
        let JsonValue::Obj(entries) = obj else {
            return Err(ImportError::from(format!("{at} must be an object, not {}", obj.kind())));
        };
        for (p, r) in thread(&at, name, entries, obj, default_policy, &mut unmapped)? {
            relative |= p.relative;
            for t in &p.timers {
                timer_users.entry(t.clone()).or_default().push(p.task.name.clone());
            }
            out.push((p.task, r));
        }
        // Four sets (other, fifo, rr, deadline) hold no more: refused before the rest is read.
        if out.len() > 4 * MAX_SET_TASKS {
            return Err(ImportError::from(format!(
                "more than {} periodic threads: a periodic set holds at most {MAX_SET_TASKS} tasks",
                4 * MAX_SET_TASKS
            )));
        }
    }
    for (r, users) in &timer_users {
        if users.len() > 1 && !r.starts_with("unique") {
            unmapped.push(format!(
                "timer \"{r}\" is shared by {}: rt-app wakes them from one timer; schedlab releases each task on its own period",
                users.join(", ")
            ));
        }
    }
    if relative {
        unmapped.push("timers in relative mode (rt-app's default) re-arm from a late job's end; schedlab releases stay on start + k T (rt-app's absolute mode) and the late job counts as a miss".into());
    }
    let duration_s = match global.duration {
        Some(d) if d > 0 => d as f64,
        _ => {
            let finite: Option<Vec<f64>> =
                out.iter().map(|(_, l)| l.map(|us| us as f64 / 1e6)).collect();
            match finite {
                Some(v) if !v.is_empty() => v.into_iter().fold(0.0, f64::max).max(0.001),
                _ => {
                    unmapped.push(format!(
                        "global duration is -1 or absent (run until stopped): duration_s = {DEFAULT_DURATION_S} (schedlab's default)"
                    ));
                    DEFAULT_DURATION_S
                }
            }
        }
    };
    let sets = sets(out.into_iter().map(|(t, _)| t).collect(), &mut unmapped);
    if let Some(s) = sets.iter().find(|s| s.tasks.len() > MAX_SET_TASKS) {
        return Err(ImportError::from(format!(
            "{} {} threads would form one periodic set: it holds at most {MAX_SET_TASKS} tasks",
            s.tasks.len(),
            s.scheduler
        )));
    }
    if sets.is_empty() {
        return Err(ImportError::from(format!(
            "no periodic task to import (a periodic thread runs, then waits on a timer or sleeps); not mapped:\n  {}",
            unmapped.join("\n  ")
        )));
    }
    Ok(Imported { duration_s, sets, unmapped })
}

/// One mapped instance of a thread, with the timers it uses.
struct Mapped {
    task: RtAppTask,
    timers: Vec<String>,
    relative: bool,
}

fn thread(
    at: &str,
    name: &str,
    entries: &[(String, JsonValue)],
    obj: &JsonValue,
    default_policy: Class,
    unmapped: &mut Vec<String>,
) -> Result<Vec<(Mapped, Option<u64>)>, ImportError> {
    let instances = obj.get("instance").map(|v| int(at, "instance", v)).transpose()?.unwrap_or(1);
    if instances <= 0 {
        unmapped.push(format!("{at}: instance {instances} creates no thread; left out"));
        return Ok(Vec::new());
    }
    if instances > MAX_SET_TASKS as i64 {
        return Err(ImportError::from(format!(
            "{at}: instance {instances}: a periodic set holds at most {MAX_SET_TASKS} tasks"
        )));
    }
    let delay = obj.get("delay").map(|v| us(at, "delay", v)).transpose()?.unwrap_or(0);
    let has_phases = obj.get("phases").is_some();
    let mut base = sched_of(at, entries)?;
    // rt-app's legacy thread-level names for the deadline parameters.
    if base.dl_period.is_none() {
        base.dl_period = obj.get("period").map(|v| us(at, "period", v)).transpose()?;
    }
    if base.dl_deadline.is_none() {
        base.dl_deadline = obj.get("deadline").map(|v| us(at, "deadline", v)).transpose()?;
    }
    // Inline, "runtime" is also a run event; rt-app reads it as dl-runtime as well.
    let is_dl =
        base.policy.as_deref().and_then(parse_policy).unwrap_or(default_policy) == Class::Deadline;
    if base.dl_runtime.is_none() && (has_phases || is_dl) {
        base.dl_runtime = obj.get("runtime").map(|v| us(at, "runtime", v)).transpose()?;
    }
    let phases: Vec<RtAppPhase> = match obj.get("phases") {
        Some(JsonValue::Obj(ph)) => {
            for (k, _) in entries {
                if !matches!(classify(k, true), Key::Property) && k != "runtime" {
                    unmapped.push(format!("{at}: \"{k}\" beside \"phases\" left out (rt-app reads events inside phases)"));
                }
            }
            let mut v = Vec::new();
            for (pn, po) in ph {
                let pat = format!("{at} phase \"{pn}\"");
                let JsonValue::Obj(pe) = po else {
                    return Err(ImportError::from(format!(
                        "{pat} must be an object, not {}",
                        po.kind()
                    )));
                };
                v.push(phase(&pat, pn, pe, false, unmapped)?);
            }
            v
        }
        Some(other) => {
            return Err(ImportError::from(format!(
                "{at}: \"phases\" must be an object, not {}",
                other.kind()
            )))
        }
        None => vec![phase(at, "", entries, true, unmapped)?],
    };
    let loops = obj.get("loop").map(|v| int(at, "loop", v)).transpose()?.filter(|&n| n >= 0);
    if let Some(n) = loops {
        unmapped.push(format!("{at}: loop {n}: rt-app stops the thread after {n} rounds; schedlab runs every task for the set's duration"));
    }
    // How long the thread runs when it stops by itself, us: with phases, `loop` repeats all
    // of them; inline, it is the one phase's own loop.
    let lifetime_us = loops.map(|n| {
        let round: u64 = phases.iter().map(RtAppPhase::round_us).sum();
        delay + if has_phases { n as u64 * round } else { round }
    });

    let mut chosen: Option<(usize, u64, u64)> = None;
    for (i, p) in phases.iter().enumerate() {
        let pat =
            if p.name.is_empty() { at.to_string() } else { format!("{at} phase \"{}\"", p.name) };
        let sched = base.overridden(&p.sched);
        let is_dl = sched.policy.as_deref().and_then(parse_policy).unwrap_or(default_policy)
            == Class::Deadline;
        let found = pattern(p, &pat, unmapped).or_else(|| {
            // A deadline thread's reservation gives its period even when it runs back to back.
            (is_dl && p.run_us > 0 && sched.dl_runtime.unwrap_or(0) > 0).then(|| {
                let rt = sched.dl_runtime.unwrap_or(0);
                (p.run_us, sched.dl_period.unwrap_or(rt))
            })
        });
        match (found, chosen) {
            (Some((c, t)), None) => chosen = Some((i, c, t)),
            (Some((c, t)), Some((first, c0, t0))) if (c, t) != (c0, t0) || phases[first].sched.policy != p.sched.policy => {
                unmapped.push(format!(
                    "{pat} (run {c} us every {t} us) left out: a schedlab task repeats one job; phase \"{}\" (run {c0} us every {t0} us) is mapped",
                    phases[first].name
                ))
            }
            (Some(_), Some(_)) => {}
            (None, _) if p.run_us == 0 && p.timers.is_empty() && p.sleep_us == 0 => {}
            (None, _) => unmapped.push(format!(
                "{pat} left out: not periodic (a periodic job runs, then waits on a timer or sleeps; this one {})",
                if p.run_us == 0 { "has no run" } else { "never waits" }
            )),
        }
    }
    let Some((idx, run_us, period_us)) = chosen else {
        unmapped.push(format!("{at} left out: none of its phases is a periodic job"));
        return Ok(Vec::new());
    };
    let p = &phases[idx];
    let sched = base.overridden(&p.sched);
    let policy = sched.policy.as_deref().and_then(parse_policy).unwrap_or(default_policy);
    let priority = sched.priority.unwrap_or(default_priority(policy));
    let (c_us, t_us, d_us) = if policy == Class::Deadline {
        match sched.dl_runtime.filter(|&r| r > 0) {
            Some(rt) => {
                let t = sched.dl_period.unwrap_or(rt);
                let d = sched.dl_deadline.unwrap_or(t);
                if t != period_us {
                    unmapped.push(format!(
                        "{at}: its job repeats every {period_us} us but dl-period is {t} us: T = dl-period, as the kernel's reservation"
                    ));
                }
                (rt, t, (d != t).then_some(d))
            }
            None => {
                unmapped.push(format!(
                    "{at}: SCHED_DEADLINE without dl-runtime (rt-app would fail to set it): C = its run, {run_us} us, T = D = {period_us} us"
                ));
                (run_us, period_us, None)
            }
        }
    } else {
        if sched.dl_runtime.is_some_and(|r| r > 0) {
            unmapped.push(format!(
                "{at}: dl-runtime on {} (a custom slice) left out: periodic sets take no slice",
                rtapp_name(policy)
            ));
        }
        (run_us, period_us, None)
    };
    let params = TaskParams {
        c_ns: c_us * 1000,
        t_ns: t_us * 1000,
        d_ns: d_us.map(|d| d * 1000),
        x: 0,
        y: 0,
        phase_ns: delay * 1000,
    };
    if let Err(e) = params.validate() {
        unmapped.push(format!(
            "{at} left out: C = {c_us} us, T = {t_us} us is not a valid periodic task ({e})"
        ));
        return Ok(Vec::new());
    }
    let from = if p.name.is_empty() { String::new() } else { format!(", phase \"{}\"", p.name) };
    let timer = match p.timers.as_slice() {
        [] => format!("sleep {} us", p.sleep_us),
        ts => format!("timer {} us", ts.iter().map(|t| t.1).sum::<u64>()),
    };
    let dl = if policy == Class::Deadline {
        format!(
            ", dl-runtime {c_us} dl-period {t_us}{}",
            d_us.map(|d| format!(" dl-deadline {d}")).unwrap_or_default()
        )
    } else {
        String::new()
    };
    let prio = match scheduler(policy) {
        "other" => format!(" nice {priority}"),
        "fifo" | "rr" => format!(" priority {priority}"),
        _ => String::new(),
    };
    let relative = p.timers.iter().any(|t| t.2 != "absolute");
    let timers: Vec<String> = p.timers.iter().map(|t| t.0.clone()).collect();
    Ok((0..instances)
        .map(|i| {
            let tname = if instances > 1 { format!("{name}[{i}]") } else { name.to_string() };
            let inst =
                if instances > 1 { format!(" instance {i} of {instances}") } else { String::new() };
            let origin = format!(
                "rt-app thread \"{name}\"{inst}{from}: {}{prio}, run {run_us} us, {timer}{dl}",
                rtapp_name(policy)
            );
            let task = RtAppTask {
                name: tname,
                origin,
                policy,
                priority,
                c_us,
                t_us,
                d_us,
                phase_us: delay,
                work_us: run_us,
                cpus: sched.cpus.clone(),
            };
            (Mapped { task, timers: timers.clone(), relative }, lifetime_us)
        })
        .collect())
}

/// The tasks grouped into one set per scheduler, with each set's CPUs and work fraction.
fn sets(tasks: Vec<RtAppTask>, unmapped: &mut Vec<String>) -> Vec<Set> {
    let mut out = Vec::new();
    // rt-app runs SCHED_FIFO and SCHED_RR threads together: one set keeps them together.
    let with_fifo = tasks.iter().any(|t| t.policy == Class::Fifo);
    let set_of = |t: &RtAppTask| {
        if with_fifo && t.policy == Class::Rr {
            "fifo"
        } else {
            scheduler(t.policy)
        }
    };
    for sched in ["other", "fifo", "rr", "deadline"] {
        let mine: Vec<RtAppTask> = tasks.iter().filter(|t| set_of(t) == sched).cloned().collect();
        if mine.is_empty() {
            continue;
        }
        let name = format!("rtapp_{}", sched.replace('-', "_"));
        for t in &mine {
            match t.policy {
                Class::Batch | Class::Idle => {
                    unmapped.push(format!("{}: {} runs as SCHED_OTHER (schedlab's `other` set)", t.name, rtapp_name(t.policy)))
                }
                Class::Rr if sched == "fifo" => unmapped.push(format!(
                    "{}: SCHED_RR runs as SCHED_FIFO, in the set of the SCHED_FIFO threads (a set has one class): no time slice among equal priorities",
                    t.name
                )),
                _ => {}
            }
            if sched == "other" && t.priority != 0 {
                unmapped.push(format!(
                    "{}: nice {} left out (an `other` set runs at nice 0)",
                    t.name, t.priority
                ));
            }
            if t.policy.is_rt() && schedlab_priority(t.priority) != t.priority {
                unmapped.push(format!(
                    "{}: {} priority {} becomes {} (schedlab's workers run at 1 to 98; 99 is its engine's)",
                    t.name,
                    rtapp_name(t.policy),
                    t.priority,
                    schedlab_priority(t.priority)
                ));
            }
        }
        let (cpu, cpus) = placement(&mine, sched, unmapped);
        let work_fraction = work_fraction(&mine, unmapped);
        out.push(Set { name, scheduler: sched, tasks: mine, cpu, cpus, work_fraction });
    }
    if out.len() > 1 {
        let names: Vec<String> =
            out.iter().map(|s| format!("{} ({})", s.name, s.scheduler)).collect();
        unmapped.push(format!(
            "the threads use {} scheduling classes, which rt-app runs together; a schedlab cell holds one periodic set under one scheduler, so each class is a set of its own in a cell of its own: {}",
            out.len(),
            names.join(", ")
        ));
    }
    out
}

fn placement(
    tasks: &[RtAppTask],
    sched: &str,
    unmapped: &mut Vec<String>,
) -> (Option<u32>, Vec<u32>) {
    if sched == "deadline" {
        for t in tasks.iter().filter(|t| t.cpus.is_some()) {
            unmapped.push(format!(
                "{}: cpus {:?} left out (schedlab runs SCHED_DEADLINE tasks on every CPU: the kernel refuses narrower affinity outside an exclusive cpuset)",
                t.name,
                t.cpus.as_ref().unwrap()
            ));
        }
        return (None, Vec::new());
    }
    let masks: Vec<Option<&Vec<u32>>> = tasks.iter().map(|t| t.cpus.as_ref()).collect();
    if masks.iter().all(Option::is_none) {
        unmapped.push(format!(
            "set {sched}: no cpus, so rt-app lets the threads run on any CPU; schedlab pins the set to one CPU (the last online)"
        ));
        return (None, Vec::new());
    }
    let mut union: Vec<u32> = masks.iter().flatten().flat_map(|m| m.iter().copied()).collect();
    union.sort_unstable();
    union.dedup();
    let same = masks.windows(2).all(|w| w[0] == w[1]);
    match (same, union.as_slice()) {
        (true, [one]) => (Some(*one), Vec::new()),
        (true, _) => {
            unmapped.push(format!(
                "set {sched}: cpus {union:?} lets each thread migrate among them; schedlab partitions the set over them, each task pinned to one"
            ));
            (None, union)
        }
        (false, _) => {
            unmapped.push(format!(
                "set {sched}: the threads' cpus differ ({}); schedlab partitions the set over their union {union:?}, each task pinned to one",
                tasks
                    .iter()
                    .map(|t| format!("{} {}", t.name, t.cpus.as_ref().map(|c| format!("{c:?}")).unwrap_or_else(|| "any".into())))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if let [one] = union.as_slice() {
                (Some(*one), Vec::new())
            } else {
                (None, union)
            }
        }
    }
}

/// The job's work as a fraction of C: 1 when every task's run is its C (rt-app's run is the
/// whole job), else the common ratio, else 1 with the tasks whose work differs listed.
fn work_fraction(tasks: &[RtAppTask], unmapped: &mut Vec<String>) -> f64 {
    let ratios: Vec<f64> = tasks.iter().map(|t| t.work_us as f64 / t.c_us as f64).collect();
    let first = ratios[0];
    if ratios.iter().all(|r| (r - first).abs() < 1e-9) && first > 0.0 && first <= 1.0 {
        return first;
    }
    for t in tasks.iter().filter(|t| t.work_us != t.c_us) {
        unmapped.push(format!(
            "{}: its job runs {} us but C is {} us; schedlab's jobs in this set spin all of C",
            t.name, t.work_us, t.c_us
        ));
    }
    1.0
}

fn to_value(j: &JsonValue) -> serde_json::Value {
    match j {
        JsonValue::Null => serde_json::Value::Null,
        JsonValue::Bool(b) => (*b).into(),
        JsonValue::Num(x) if x.fract() == 0.0 && x.abs() < 9e15 => (*x as i64).into(),
        JsonValue::Num(x) => (*x).into(),
        JsonValue::Str(s) => s.clone().into(),
        JsonValue::Arr(a) => a.iter().map(to_value).collect(),
        JsonValue::Obj(e) => e
            .iter()
            .map(|(k, v)| (k.clone(), to_value(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}
