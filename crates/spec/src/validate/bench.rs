//! The field's benchmarks as kinds, `messaging` (hackbench), `pipe` (perf bench sched pipe)
//! and `schbench`: their own keys, the originals' defaults and option names, ranges.

use super::workload::KeyKinds;
use super::Ctx;
use crate::error::SpecError;
use crate::raw::RawWorkload;
use schedlab_plan::{Ipc, Messaging, PipeBench, Schbench, Workload};
use serde_spanned::Spanned;

/// The kind names.
pub(super) const KINDS: [&str; 3] = ["messaging", "pipe", "schbench"];

/// Most tasks one benchmark worker may start (a messaging group is 2 x fds of them).
const MAX_TASKS: i64 = 100_000;
/// Largest message: a pipe's default capacity, so a write never waits for half a message.
const MAX_MESSAGE_BYTES: i64 = 65_536;
/// Longest schbench run, seconds (a day).
const MAX_RUNTIME_S: f64 = 86_400.0;

/// The benchmark kinds' own keys are errors (at the key's value) in a workload of any other
/// kind; `threads` is shared with par_write/par_read and checked with them.
pub(super) fn check_keys(cx: &Ctx, w: &RawWorkload, kind: &str) -> Result<(), SpecError> {
    let sp = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span());
    let keys: [KeyKinds; 13] = [
        ("groups", sp(&w.groups), &["messaging"]),
        ("fds", sp(&w.fds), &["messaging"]),
        ("loops", sp(&w.loops), &["messaging", "pipe"]),
        ("ipc", w.ipc.as_ref().map(|s| s.span()), &["messaging"]),
        ("message_bytes", sp(&w.message_bytes), &["messaging"]),
        ("pairs", sp(&w.pairs), &["pipe"]),
        ("message_threads", sp(&w.message_threads), &["schbench"]),
        ("workers", sp(&w.workers), &["schbench"]),
        ("runtime_s", w.runtime_s.as_ref().map(|s| s.span()), &["schbench"]),
        ("operations", sp(&w.operations), &["schbench"]),
        ("footprint_kb", sp(&w.footprint_kb), &["schbench"]),
        ("sleep_us", sp(&w.sleep_us), &["schbench"]),
        ("rps", sp(&w.rps), &["schbench"]),
    ];
    super::workload::foreign_keys(cx, kind, &keys)
}

/// The built-in workloads of these names: the kinds with the originals' defaults.
pub(super) fn builtin(name: &str) -> Option<Workload> {
    match name {
        "messaging" => Some(Workload::Messaging(Messaging::DEFAULT)),
        "pipe" => Some(Workload::Pipe(PipeBench::DEFAULT)),
        "schbench" => Some(Workload::Schbench(Schbench::DEFAULT)),
        _ => None,
    }
}

/// A `[workloads.NAME]` of one of [`KINDS`], whose keys were already checked to belong to it.
pub(super) fn workload(cx: &Ctx, w: &RawWorkload, kind: &str) -> Result<Workload, SpecError> {
    let int = |v: &Option<Spanned<i64>>, lo: i64, hi: i64, def: u64, what: &str| match v {
        Some(s) => cx.int_in(s, lo, hi, what).map(|x| x as u64),
        None => Ok(def),
    };
    match kind {
        "messaging" => {
            let d = Messaging::DEFAULT;
            let groups = int(&w.groups, 1, MAX_TASKS, d.groups as u64, "groups")? as u32;
            let fds = int(&w.fds, 1, MAX_TASKS / 2, d.fds as u64, "fds")? as u32;
            if 2 * groups as i64 * fds as i64 > MAX_TASKS {
                let at = w.groups.as_ref().or(w.fds.as_ref()).map_or(w.kind.span(), |s| s.span());
                return cx.err(
                    at,
                    format!("{groups} groups of 2 x {fds} tasks are more than {MAX_TASKS} tasks for one worker"),
                );
            }
            Ok(Workload::Messaging(Messaging {
                groups,
                fds,
                loops: int(&w.loops, 1, i64::MAX, d.loops, "loops")?,
                ipc: ipc(cx, w)?,
                threads: threads(cx, w)?,
                message_bytes: int(
                    &w.message_bytes,
                    1,
                    MAX_MESSAGE_BYTES,
                    d.message_bytes as u64,
                    "message_bytes",
                )? as u32,
            }))
        }
        "pipe" => {
            let d = PipeBench::DEFAULT;
            Ok(Workload::Pipe(PipeBench {
                loops: int(&w.loops, 1, i64::MAX, d.loops, "loops")?,
                threads: threads(cx, w)?,
                pairs: int(&w.pairs, 1, MAX_TASKS / 2, d.pairs as u64, "pairs")? as u32,
            }))
        }
        _ => {
            let d = Schbench::DEFAULT;
            let u32_max = u32::MAX as i64;
            let message_threads =
                int(&w.message_threads, 1, 4096, d.message_threads as u64, "message_threads")?;
            let workers = int(&w.workers, 0, 4096, d.workers as u64, "workers")?;
            let runtime_ms = match &w.runtime_s {
                None => d.runtime_ms,
                Some(r) => {
                    let s = *r.get_ref();
                    if !(s > 0.0 && s <= MAX_RUNTIME_S) {
                        return cx.err(
                            r.span(),
                            format!(
                                "runtime_s must be above 0 and at most {MAX_RUNTIME_S}, got {s}"
                            ),
                        );
                    }
                    ((s * 1e3).round() as u64).max(1)
                }
            };
            Ok(Workload::Schbench(Schbench {
                message_threads: message_threads as u32,
                workers: workers as u32,
                runtime_ms,
                operations: int(&w.operations, 1, u32_max, d.operations as u64, "operations")?
                    as u32,
                footprint_kb: int(
                    &w.footprint_kb,
                    1,
                    1 << 22,
                    d.footprint_kb as u64,
                    "footprint_kb",
                )? as u32,
                sleep_us: int(&w.sleep_us, 0, 60_000_000, d.sleep_us as u64, "sleep_us")? as u32,
                rps: int(&w.rps, 0, u32_max, d.rps as u64, "rps")? as u32,
            }))
        }
    }
}

/// `ipc = "socket" | "pipe"`.
fn ipc(cx: &Ctx, w: &RawWorkload) -> Result<Ipc, SpecError> {
    let Some(v) = &w.ipc else { return Ok(Messaging::DEFAULT.ipc) };
    match Ipc::ALL.into_iter().find(|i| i.name() == v.get_ref()) {
        Some(i) => Ok(i),
        None => {
            cx.err(v.span(), format!("ipc must be \"socket\" or \"pipe\", got \"{}\"", v.get_ref()))
        }
    }
}

/// `threads = true | false`: threads of the worker instead of forked children.
fn threads(cx: &Ctx, w: &RawWorkload) -> Result<bool, SpecError> {
    match &w.threads {
        None => Ok(false),
        Some(t) => match t.get_ref() {
            toml::Value::Boolean(b) => Ok(*b),
            other => cx.err(
                t.span(),
                format!(
                    "threads is true (threads of the worker) or false (forked processes) here, got {other}"
                ),
            ),
        },
    }
}

#[cfg(test)]
mod tests;
