//! Raw spec -> Plan: defaults, ranges, name resolution, the matrix product.

use crate::error::SpecError;
use crate::plan::*;
use crate::raw::*;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

/// A byte span in the source, for later errors.
pub type Location = Range<usize>;

/// Where names were defined or used, so later checks can point at them.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    /// Policy name -> span of its definition, or of its first use in the matrix.
    pub policies: BTreeMap<String, Location>,
}

/// What this process is allowed to do, as far as the spec is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// CAP_SYS_NICE (root has it): any policy, priority and nice.
    pub sys_nice: bool,
    /// RLIMIT_RTPRIO soft limit: highest RT priority allowed without CAP_SYS_NICE.
    pub rtprio_limit: u64,
    /// Lowest nice allowed without CAP_SYS_NICE (from RLIMIT_NICE: 20 - limit).
    pub min_nice: i32,
}

const DEFAULT_PI_ITERATIONS: i64 = 100_000_000;
const DEFAULT_MIXED_ITERATIONS: i64 = 50_000_000;
const DEFAULT_WRITE_EVERY: i64 = 100_000;
const DEFAULT_TRANSFER: i64 = 102_400;
const DEFAULT_BLOCK: i64 = 1024;
const DEFAULT_INPUT: i64 = 1 << 20;
const DEFAULT_RT_PRIORITY: i64 = 50;
const DEFAULT_TIMEOUT_S: f64 = 1800.0;
const MAX_PROCESSES: i64 = 100_000;
/// The kernel refuses SCHED_DEADLINE runtimes below 1024 ns.
const MIN_DL_RUNTIME_NS: u64 = 1024;

struct Ctx<'a> {
    path: &'a str,
    src: &'a str,
}

impl Ctx<'_> {
    fn err<T>(&self, span: Range<usize>, msg: impl Into<String>) -> Result<T, SpecError> {
        Err(SpecError::at(self.path, self.src, Some(span), msg))
    }

    fn int_in(&self, v: &Spanned<i64>, lo: i64, hi: i64, what: &str) -> Result<i64, SpecError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return self.err(v.span(), format!("{what} must be between {lo} and {hi}, got {x}"));
        }
        Ok(x)
    }
}

pub(crate) fn validate(path: &str, src: &str, raw: RawSpec) -> Result<(Plan, Locations), SpecError> {
    let cx = Ctx { path, src };
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return cx.err(raw.name.span(), "name must not be empty");
    }
    let repetitions = match &raw.repetitions {
        Some(r) => cx.int_in(r, 1, 100_000, "repetitions")? as u32,
        None => 1,
    };
    let warmup = match &raw.warmup {
        Some(r) => cx.int_in(r, 0, 1000, "warmup")? as u32,
        None => 0,
    };
    let order = match &raw.order {
        None => Order::Sequential,
        Some(o) => match o.get_ref().as_str() {
            "sequential" => Order::Sequential,
            "random" => Order::Random,
            other => return cx.err(o.span(), format!("order must be \"sequential\" or \"random\", got \"{other}\"")),
        },
    };
    let seed = match &raw.seed {
        Some(s) => cx.int_in(s, 0, i64::MAX, "seed")? as u64,
        None => 0x05ee_d1ab,
    };
    let timeout = match &raw.timeout_s {
        Some(t) if !(*t.get_ref() > 0.0 && t.get_ref().is_finite()) => {
            return cx.err(t.span(), format!("timeout_s must be a positive number of seconds, got {}", t.get_ref()))
        }
        Some(t) => Duration::from_secs_f64(*t.get_ref()),
        None => Duration::from_secs_f64(DEFAULT_TIMEOUT_S),
    };
    let dir = raw.dir.as_ref().map(|d| std::path::PathBuf::from(d.get_ref()));

    let mut workloads = BTreeMap::new();
    for (k, v) in &raw.workloads {
        check_name(&cx, k)?;
        workloads.insert(k.get_ref().clone(), workload(&cx, v.get_ref())?);
    }
    let mut locations = Locations::default();
    let mut policies = BTreeMap::new();
    for (k, v) in &raw.policies {
        check_name(&cx, k)?;
        policies.insert(k.get_ref().clone(), policy(&cx, v.get_ref())?);
        locations.policies.insert(k.get_ref().clone(), k.span());
    }

    let m = raw.matrix.get_ref();
    if m.workload.get_ref().is_empty() {
        return cx.err(m.workload.span(), "matrix.workload must list at least one workload");
    }
    let mut wl_axis = Vec::new();
    for w in m.workload.get_ref() {
        let wl = match workloads.get(w.get_ref()) {
            Some(wl) => wl.clone(),
            None => match builtin_workload(w.get_ref()) {
                Some(wl) => wl,
                None => {
                    let known: Vec<&str> = workloads.keys().map(String::as_str).chain(["pi", "copy", "mixed"]).collect();
                    return cx.err(
                        w.span(),
                        format!(
                            "unknown workload \"{}\"; define it under [workloads.{}] or use one of: {}",
                            w.get_ref(),
                            w.get_ref(),
                            known.join(", ")
                        ),
                    );
                }
            },
        };
        wl_axis.push((w.get_ref().clone(), wl));
    }
    let mut pol_axis = Vec::new();
    match &m.policy {
        None => pol_axis.push(("other".to_string(), builtin_policy(Class::Other))),
        Some(list) => {
            if list.get_ref().is_empty() {
                return cx.err(list.span(), "matrix.policy must list at least one policy");
            }
            for p in list.get_ref() {
                let pol = match policies.get(p.get_ref()) {
                    Some(pol) => *pol,
                    None => match Class::parse(p.get_ref()) {
                        Some(c) => builtin_policy(c),
                        None => {
                            let known: Vec<&str> = policies.keys().map(String::as_str).chain(Class::ALL.iter().map(|c| c.name())).collect();
                            return cx.err(
                                p.span(),
                                format!(
                                    "unknown policy \"{}\"; define it under [policies.{}] or use one of: {}",
                                    p.get_ref(),
                                    p.get_ref(),
                                    known.join(", ")
                                ),
                            );
                        }
                    },
                };
                locations.policies.entry(p.get_ref().clone()).or_insert_with(|| p.span());
                pol_axis.push((p.get_ref().clone(), pol));
            }
        }
    }
    let processes: Vec<u32> = match &m.processes {
        None => vec![1],
        Some(list) => {
            if list.get_ref().is_empty() {
                return cx.err(list.span(), "matrix.processes must list at least one count");
            }
            list.get_ref().iter().map(|p| cx.int_in(p, 1, MAX_PROCESSES, "processes").map(|x| x as u32)).collect::<Result<_, _>>()?
        }
    };
    let priorities: Option<Vec<u32>> = match &m.priority {
        None => None,
        Some(list) => Some(
            list.get_ref()
                .iter()
                .map(|p| cx.int_in(p, 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)").map(|x| x as u32))
                .collect::<Result<_, _>>()?,
        ),
    };
    let nices: Option<Vec<i32>> = match &m.nice {
        None => None,
        Some(list) => Some(list.get_ref().iter().map(|p| cx.int_in(p, -20, 19, "nice").map(|x| x as i32)).collect::<Result<_, _>>()?),
    };

    let mut cells = Vec::new();
    for (wname, wl) in &wl_axis {
        for (pname, pol) in &pol_axis {
            // A priority axis only means something to fifo/rr; other classes get one cell.
            let prios: Vec<Option<u32>> = match (&priorities, pol.class.is_rt()) {
                (Some(ps), true) => ps.iter().map(|p| Some(*p)).collect(),
                _ => vec![None],
            };
            let nice_vals: Vec<Option<i32>> = match &nices {
                Some(ns) => ns.iter().map(|n| Some(*n)).collect(),
                None => vec![None],
            };
            for prio in &prios {
                for nice in &nice_vals {
                    for &n in &processes {
                        let mut p = *pol;
                        if let Some(pr) = prio {
                            p.priority = *pr;
                        }
                        if let Some(ni) = nice {
                            p.nice = *ni;
                        }
                        let mut key = format!("{wname}/{pname}");
                        if prio.is_some() || (p.class.is_rt() && p.priority as i64 != DEFAULT_RT_PRIORITY) {
                            key.push_str(&format!(":{}", p.priority));
                        }
                        if nice.is_some() {
                            key.push_str(&format!("/nice{}", p.nice));
                        }
                        key.push_str(&format!("/n{n}"));
                        cells.push(Cell {
                            index: cells.len() as u32,
                            key,
                            workload_name: wname.clone(),
                            workload: wl.clone(),
                            policy_name: pname.clone(),
                            policy: p,
                            processes: n,
                        });
                    }
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for c in &cells {
        if !seen.insert(c.key.clone()) {
            return cx.err(raw.matrix.span(), format!("the matrix produces the cell {} twice: remove the duplicate axis value", c.key));
        }
    }
    let plan = Plan {
        name,
        description: raw.description.clone(),
        source_path: path.to_string(),
        repetitions,
        warmup,
        order,
        seed,
        timeout,
        dir,
        scale: 1.0,
        cells,
    };
    Ok((plan, locations))
}

fn check_name(cx: &Ctx, k: &Spanned<String>) -> Result<(), SpecError> {
    let ok = !k.get_ref().is_empty() && k.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return cx.err(k.span(), format!("name \"{}\" may only use letters, digits, '-' and '_'", k.get_ref()));
    }
    Ok(())
}

fn builtin_workload(name: &str) -> Option<Workload> {
    Some(match name {
        "pi" => Workload::Pi { iterations: DEFAULT_PI_ITERATIONS as u64 },
        "copy" => {
            Workload::Copy { transfer_bytes: DEFAULT_TRANSFER as u64, block_bytes: DEFAULT_BLOCK as u64, input_bytes: DEFAULT_INPUT as u64 }
        }
        "mixed" => Workload::Mixed { iterations: DEFAULT_MIXED_ITERATIONS as u64, write_every: DEFAULT_WRITE_EVERY as u64 },
        _ => return None,
    })
}

fn builtin_policy(class: Class) -> Policy {
    Policy {
        class,
        priority: if class.is_rt() { DEFAULT_RT_PRIORITY as u32 } else { 0 },
        nice: 0,
        // 5 ms every 100 ms: admits up to 38 workers on 2 CPUs at 95% RT bandwidth.
        deadline: (class == Class::Deadline).then_some(DeadlineParams {
            runtime_ns: 5_000_000,
            deadline_ns: 100_000_000,
            period_ns: 100_000_000,
        }),
    }
}

/// Rejects keys that belong to another kind, pointing at the key's value.
fn reject(cx: &Ctx, kind: &str, fields: &[(&str, Option<Range<usize>>)]) -> Result<(), SpecError> {
    for (name, span) in fields {
        if let Some(span) = span {
            return cx.err(span.clone(), format!("`{name}` does not apply to a workload of kind \"{kind}\""));
        }
    }
    Ok(())
}

fn workload(cx: &Ctx, w: &RawWorkload) -> Result<Workload, SpecError> {
    let sp = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span());
    let pos = |v: &Option<Spanned<i64>>, def: i64, what: &str| -> Result<u64, SpecError> {
        match v {
            Some(s) => cx.int_in(s, 1, i64::MAX, what).map(|x| x as u64),
            None => Ok(def as u64),
        }
    };
    let argv_span = w.argv.as_ref().map(|a| a.span());
    match w.kind.get_ref().as_str() {
        "pi" => {
            reject(
                cx,
                "pi",
                &[
                    ("write_every", sp(&w.write_every)),
                    ("transfer_bytes", sp(&w.transfer_bytes)),
                    ("block_bytes", sp(&w.block_bytes)),
                    ("input_bytes", sp(&w.input_bytes)),
                    ("argv", argv_span),
                ],
            )?;
            Ok(Workload::Pi { iterations: pos(&w.iterations, DEFAULT_PI_ITERATIONS, "iterations")? })
        }
        "mixed" => {
            reject(
                cx,
                "mixed",
                &[
                    ("transfer_bytes", sp(&w.transfer_bytes)),
                    ("block_bytes", sp(&w.block_bytes)),
                    ("input_bytes", sp(&w.input_bytes)),
                    ("argv", argv_span),
                ],
            )?;
            let iterations = pos(&w.iterations, DEFAULT_MIXED_ITERATIONS, "iterations")?;
            let write_every = pos(&w.write_every, DEFAULT_WRITE_EVERY, "write_every")?;
            if write_every > iterations {
                return cx.err(
                    w.write_every.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
                    format!("write_every ({write_every}) is larger than iterations ({iterations}): no write would happen"),
                );
            }
            Ok(Workload::Mixed { iterations, write_every })
        }
        "copy" => {
            reject(cx, "copy", &[("iterations", sp(&w.iterations)), ("write_every", sp(&w.write_every)), ("argv", argv_span)])?;
            let transfer_bytes = pos(&w.transfer_bytes, DEFAULT_TRANSFER, "transfer_bytes")?;
            let block_bytes = pos(&w.block_bytes, DEFAULT_BLOCK, "block_bytes")?;
            let input_bytes = pos(&w.input_bytes, DEFAULT_INPUT, "input_bytes")?;
            if block_bytes > 64 << 20 {
                return cx.err(w.block_bytes.as_ref().unwrap().span(), "block_bytes must be at most 64 MiB");
            }
            if input_bytes < block_bytes {
                return cx.err(
                    w.input_bytes.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
                    format!("input_bytes ({input_bytes}) must be at least block_bytes ({block_bytes})"),
                );
            }
            if input_bytes > 1 << 34 {
                return cx.err(w.input_bytes.as_ref().unwrap().span(), "input_bytes must be at most 16 GiB");
            }
            Ok(Workload::Copy { transfer_bytes, block_bytes, input_bytes })
        }
        "command" => {
            reject(
                cx,
                "command",
                &[
                    ("iterations", sp(&w.iterations)),
                    ("write_every", sp(&w.write_every)),
                    ("transfer_bytes", sp(&w.transfer_bytes)),
                    ("block_bytes", sp(&w.block_bytes)),
                    ("input_bytes", sp(&w.input_bytes)),
                ],
            )?;
            let Some(argv) = &w.argv else {
                return cx.err(w.kind.span(), "a command workload needs argv = [\"program\", \"arg\", ...]");
            };
            if argv.get_ref().is_empty() || argv.get_ref()[0].get_ref().is_empty() {
                return cx.err(argv.span(), "argv must name a program");
            }
            for a in argv.get_ref() {
                if a.get_ref().contains('\0') {
                    return cx.err(a.span(), "arguments may not contain NUL bytes");
                }
            }
            Ok(Workload::Command { argv: argv.get_ref().iter().map(|a| a.get_ref().clone()).collect() })
        }
        other => cx.err(w.kind.span(), format!("unknown workload kind \"{other}\"; expected one of: pi, copy, mixed, command")),
    }
}

fn policy(cx: &Ctx, p: &RawPolicy) -> Result<Policy, SpecError> {
    let Some(class) = Class::parse(p.class.get_ref()) else {
        return cx.err(
            p.class.span(),
            format!("unknown class \"{}\"; expected one of: other, batch, idle, fifo, rr, deadline", p.class.get_ref()),
        );
    };
    let mut pol = builtin_policy(class);
    if let Some(pr) = &p.priority {
        if !class.is_rt() {
            return cx
                .err(pr.span(), format!("priority applies only to fifo and rr; {} tasks have static priority 0 (use nice)", class.name()));
        }
        pol.priority = cx.int_in(pr, 1, MAX_WORKER_PRIORITY, "priority (99 is reserved for the engine)")? as u32;
    }
    if let Some(n) = &p.nice {
        pol.nice = cx.int_in(n, -20, 19, "nice")? as i32;
    }
    let dl_fields = [&p.runtime_us, &p.deadline_us, &p.period_us];
    if class != Class::Deadline {
        if let Some(f) = dl_fields.iter().find_map(|f| f.as_ref()) {
            return cx.err(f.span(), "runtime_us, deadline_us and period_us apply only to class \"deadline\"");
        }
    } else {
        let d = pol.deadline.expect("deadline class has defaults");
        let us = |v: &Option<Spanned<i64>>, def: u64, what: &str| -> Result<u64, SpecError> {
            match v {
                Some(s) => cx.int_in(s, 1, 1 << 40, what).map(|x| x as u64 * 1000),
                None => Ok(def),
            }
        };
        let runtime_ns = us(&p.runtime_us, d.runtime_ns, "runtime_us")?;
        let period_ns = us(&p.period_us, d.period_ns, "period_us")?;
        let deadline_ns = match &p.deadline_us {
            Some(_) => us(&p.deadline_us, period_ns, "deadline_us")?,
            None => period_ns,
        };
        let at = p.runtime_us.as_ref().or(p.deadline_us.as_ref()).or(p.period_us.as_ref()).map(|s| s.span()).unwrap_or(p.class.span());
        if runtime_ns < MIN_DL_RUNTIME_NS {
            return cx.err(at, "runtime_us must be at least 2 (the kernel's minimum is 1024 ns)");
        }
        if !(runtime_ns <= deadline_ns && deadline_ns <= period_ns) {
            return cx.err(
                at,
                format!(
                    "SCHED_DEADLINE needs runtime <= deadline <= period, got {} <= {} <= {} us",
                    runtime_ns / 1000,
                    deadline_ns / 1000,
                    period_ns / 1000
                ),
            );
        }
        pol.deadline = Some(DeadlineParams { runtime_ns, deadline_ns, period_ns });
    }
    Ok(pol)
}

pub(crate) fn check_allowed(plan: &Plan, locs: &Locations, src: &str, caps: &Capabilities) -> Result<(), SpecError> {
    if caps.sys_nice {
        return Ok(());
    }
    for c in &plan.cells {
        let p = &c.policy;
        let problem = match p.class {
            Class::Deadline => Some("SCHED_DEADLINE needs CAP_SYS_NICE (run as root); RLIMIT_RTPRIO does not allow it".to_string()),
            Class::Fifo | Class::Rr if p.priority as u64 > caps.rtprio_limit => Some(format!(
                "SCHED_{} priority {} needs CAP_SYS_NICE (run as root) or RLIMIT_RTPRIO >= {}; this process has neither (RLIMIT_RTPRIO = {})",
                p.class.name().to_uppercase(),
                p.priority,
                p.priority,
                caps.rtprio_limit
            )),
            _ if p.nice < caps.min_nice => Some(format!("nice {} needs CAP_SYS_NICE (run as root) or RLIMIT_NICE >= {}; the lowest nice allowed here is {}", p.nice, 20 - p.nice, caps.min_nice)),
            _ => None,
        };
        if let Some(msg) = problem {
            let span = locs.policies.get(&c.policy_name).cloned();
            return Err(SpecError::at(&plan.source_path, src, span, format!("policy \"{}\": {msg}", c.policy_name)));
        }
    }
    Ok(())
}
