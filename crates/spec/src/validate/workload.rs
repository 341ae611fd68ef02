//! `[workloads.NAME]`: the kinds, their keys and defaults, and the built-in workloads named
//! after their kind. Periodic sets are checked in `periodic_check`, disturbances in `disturb`.

use super::{bench, disturb, Ctx, Locations};
use crate::error::SpecError;
use crate::paths::{PathKey, PathUse};
use crate::raw::RawWorkload;
use schedlab_plan::{IoMode, OutputParser, ParIo, Workload, DIRECT_ALIGN};
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::ops::Range;

const DEFAULT_PI_ITERATIONS: i64 = 100_000_000;
const DEFAULT_MIXED_ITERATIONS: i64 = 50_000_000;
const DEFAULT_WRITE_EVERY: i64 = 100_000;
const DEFAULT_TRANSFER: i64 = 102_400;
const DEFAULT_BLOCK: i64 = 1024;
const DEFAULT_INPUT: i64 = 1 << 20;
/// The seed computed about 722,000 hashes in 5 s on its machine.
const DEFAULT_HASHES: i64 = 722_000;
/// One 100 MiB file, one thread, 64 KiB per call, through the page cache.
const DEFAULT_PAR_IO: ParIo = ParIo {
    files: 1,
    file_bytes: 100 << 20,
    threads: 1,
    buffer_bytes: 64 << 10,
    mode: IoMode::Buffered,
};

/// A workload name must be defined under [workloads] or be a built-in one.
pub(crate) fn check_workload_name(
    cx: &Ctx,
    w: &Spanned<String>,
    workloads: &BTreeMap<String, Workload>,
) -> Result<(), SpecError> {
    let n = w.get_ref();
    if workloads.contains_key(n) || builtin_workload(n).is_some() {
        return Ok(());
    }
    let known: Vec<&str> = workloads
        .keys()
        .map(String::as_str)
        .chain(["pi", "copy", "mixed", "hash", "par_write", "par_read"])
        .chain(disturb::KINDS)
        .chain(bench::KINDS)
        .collect();
    cx.err(
        w.span(),
        format!(
            "unknown workload \"{n}\"{}; define it under [workloads.{n}] or use one of: {}",
            schedlab_plan::suggest::did_you_mean(n, known.iter().copied()),
            known.join(", ")
        ),
    )
}

/// The built-in workload of this name (a kind with its defaults), if there is one.
pub(super) fn builtin_workload(name: &str) -> Option<Workload> {
    Some(match name {
        "pi" => Workload::Pi { iterations: DEFAULT_PI_ITERATIONS as u64 },
        "copy" => Workload::Copy {
            transfer_bytes: DEFAULT_TRANSFER as u64,
            block_bytes: DEFAULT_BLOCK as u64,
            input_bytes: DEFAULT_INPUT as u64,
        },
        "mixed" => Workload::Mixed {
            iterations: DEFAULT_MIXED_ITERATIONS as u64,
            write_every: DEFAULT_WRITE_EVERY as u64,
        },
        "hash" => Workload::Hash { hashes: DEFAULT_HASHES as u64 },
        "par_write" => Workload::ParWrite(DEFAULT_PAR_IO),
        "par_read" => Workload::ParRead(DEFAULT_PAR_IO),
        _ => return disturb::builtin(name).or_else(|| bench::builtin(name)),
    })
}

/// A workload key, where it was written, and the kinds it belongs to.
pub(super) type KeyKinds<'a> = (&'a str, Option<Range<usize>>, &'a [&'a str]);

/// One `[workloads.NAME]` entry, checked; a command's program path is recorded for the
/// filesystem check.
pub(super) fn workload(
    cx: &Ctx,
    w: &RawWorkload,
    seed: u64,
    locs: &mut Locations,
) -> Result<Workload, SpecError> {
    let kind = w.kind.get_ref().as_str();
    disturb::check_keys(cx, w, kind)?;
    bench::check_keys(cx, w, kind)?;
    if let Some(p) = crate::periodic_check::workload(cx, w, seed)? {
        return Ok(Workload::Periodic(Box::new(p)));
    }
    check_keys(cx, w, kind)?;
    match kind {
        "pi" => Ok(Workload::Pi {
            iterations: pos(cx, &w.iterations, DEFAULT_PI_ITERATIONS, "iterations")?,
        }),
        "hash" => Ok(Workload::Hash { hashes: pos(cx, &w.hashes, DEFAULT_HASHES, "hashes")? }),
        "mixed" => mixed(cx, w),
        "copy" => copy(cx, w),
        "udp_flood" | "io_interrupts" => disturb::workload(cx, w, kind),
        "par_write" | "par_read" => par_io(cx, w, kind),
        "messaging" | "pipe" | "schbench" => bench::workload(cx, w, kind),
        _ => command(cx, w, locs),
    }
}

/// A known kind, and every key given one that belongs to it: any other key is an error at
/// its own location.
fn check_keys(cx: &Ctx, w: &RawWorkload, kind: &str) -> Result<(), SpecError> {
    let sp = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span());
    // Which keys belong to which kinds: any other key is an error at its own location.
    let io: &[&str] = &["par_write", "par_read"];
    let fields: [KeyKinds; 13] = [
        ("iterations", sp(&w.iterations), &["pi", "mixed"]),
        ("write_every", sp(&w.write_every), &["mixed"]),
        ("transfer_bytes", sp(&w.transfer_bytes), &["copy"]),
        ("block_bytes", sp(&w.block_bytes), &["copy"]),
        ("input_bytes", sp(&w.input_bytes), &["copy"]),
        ("hashes", sp(&w.hashes), &["hash"]),
        ("argv", w.argv.as_ref().map(|a| a.span()), &["command"]),
        ("parse", w.parse.as_ref().map(|a| a.span()), &["command"]),
        ("files", sp(&w.files), io),
        ("file_bytes", sp(&w.file_bytes), &["par_write", "par_read", "io_interrupts"]),
        (
            "threads",
            w.threads.as_ref().map(|t| t.span()),
            &["par_write", "par_read", "messaging", "pipe"],
        ),
        ("buffer_bytes", sp(&w.buffer_bytes), io),
        ("mode", w.mode.as_ref().map(|m| m.span()), io),
    ];
    if !["pi", "mixed", "copy", "hash", "command", "par_write", "par_read"].contains(&kind)
        && !disturb::KINDS.contains(&kind)
        && !bench::KINDS.contains(&kind)
    {
        return cx.err(
            w.kind.span(),
            format!("unknown workload kind \"{kind}\"; expected one of: pi, copy, mixed, hash, command, par_write, par_read, periodic, udp_flood, io_interrupts, messaging, pipe, schbench"),
        );
    }
    foreign_keys(cx, kind, &fields)
}

/// The first of `keys` written (`Some` span) that does not belong to `kind`, as an error at
/// its value.
pub(super) fn foreign_keys(cx: &Ctx, kind: &str, keys: &[KeyKinds]) -> Result<(), SpecError> {
    for (name, span, kinds) in keys {
        if let Some(span) = span.as_ref().filter(|_| !kinds.contains(&kind)) {
            return cx.err(
                span.clone(),
                format!("`{name}` does not apply to a workload of kind \"{kind}\""),
            );
        }
    }
    Ok(())
}

/// A positive count, or its default when not given.
fn pos(cx: &Ctx, v: &Option<Spanned<i64>>, def: i64, what: &str) -> Result<u64, SpecError> {
    match v {
        Some(s) => cx.int_in(s, 1, i64::MAX, what).map(|x| x as u64),
        None => Ok(def as u64),
    }
}

/// `kind = "mixed"`: computation with a write every `write_every` iterations.
fn mixed(cx: &Ctx, w: &RawWorkload) -> Result<Workload, SpecError> {
    let iterations = pos(cx, &w.iterations, DEFAULT_MIXED_ITERATIONS, "iterations")?;
    let write_every = pos(cx, &w.write_every, DEFAULT_WRITE_EVERY, "write_every")?;
    if write_every > iterations {
        return cx.err(
            w.write_every.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
            format!("write_every ({write_every}) is larger than iterations ({iterations}): no write would happen"),
        );
    }
    Ok(Workload::Mixed { iterations, write_every })
}

/// `kind = "copy"`: blocks copied from an input file.
fn copy(cx: &Ctx, w: &RawWorkload) -> Result<Workload, SpecError> {
    let transfer_bytes = pos(cx, &w.transfer_bytes, DEFAULT_TRANSFER, "transfer_bytes")?;
    let block_bytes = pos(cx, &w.block_bytes, DEFAULT_BLOCK, "block_bytes")?;
    let input_bytes = pos(cx, &w.input_bytes, DEFAULT_INPUT, "input_bytes")?;
    if block_bytes > 64 << 20 {
        return cx
            .err(w.block_bytes.as_ref().unwrap().span(), "block_bytes must be at most 64 MiB");
    }
    if input_bytes < block_bytes {
        return cx.err(
            w.input_bytes.as_ref().map(|s| s.span()).unwrap_or(w.kind.span()),
            format!("input_bytes ({input_bytes}) must be at least block_bytes ({block_bytes})"),
        );
    }
    if input_bytes > 1 << 34 {
        return cx
            .err(w.input_bytes.as_ref().unwrap().span(), "input_bytes must be at most 16 GiB");
    }
    Ok(Workload::Copy { transfer_bytes, block_bytes, input_bytes })
}

/// `kind = "par_write"` or `"par_read"`: files written or read by threads.
fn par_io(cx: &Ctx, w: &RawWorkload, kind: &str) -> Result<Workload, SpecError> {
    let d = DEFAULT_PAR_IO;
    let files = pos(cx, &w.files, d.files as i64, "files")?;
    let file_bytes = pos(cx, &w.file_bytes, d.file_bytes as i64, "file_bytes")?;
    let threads = match &w.threads {
        Some(t) => match t.get_ref() {
            toml::Value::Integer(n) => {
                cx.int_in(&Spanned::new(t.span(), *n), 1, 4096, "threads")? as u32
            }
            other => return cx.err(t.span(), format!("threads is a count here, got {other}")),
        },
        None => d.threads,
    };
    let buffer_bytes = match &w.buffer_bytes {
        Some(b) => cx.int_in(b, 1, 64 << 20, "buffer_bytes")? as u64,
        None => d.buffer_bytes,
    };
    if files > 1_000_000 {
        return cx.err(w.files.as_ref().unwrap().span(), "files must be at most 1000000");
    }
    let mode = match &w.mode {
        None => d.mode,
        Some(m) => match IoMode::ALL.into_iter().find(|x| x.name() == m.get_ref()) {
            Some(x) => x,
            None => {
                return cx.err(
                    m.span(),
                    format!(
                        "mode must be buffered, sync, direct or fsync, got \"{}\"",
                        m.get_ref()
                    ),
                )
            }
        },
    };
    let at = |v: &Option<Spanned<i64>>| v.as_ref().map(|s| s.span()).unwrap_or(w.kind.span());
    if kind == "par_read" && matches!(mode, IoMode::Sync | IoMode::Fsync) {
        return cx.err(
            w.mode.as_ref().unwrap().span(),
            "a par_read reads: mode must be buffered or direct",
        );
    }
    if mode == IoMode::Direct {
        if buffer_bytes % DIRECT_ALIGN != 0 {
            return cx.err(
                at(&w.buffer_bytes),
                format!("mode = \"direct\" needs buffer_bytes to be a multiple of {DIRECT_ALIGN}"),
            );
        }
        if file_bytes % DIRECT_ALIGN != 0 {
            return cx.err(
                at(&w.file_bytes),
                format!("mode = \"direct\" needs file_bytes to be a multiple of {DIRECT_ALIGN}"),
            );
        }
    }
    let p = ParIo { files, file_bytes, threads, buffer_bytes, mode };
    Ok(if kind == "par_write" { Workload::ParWrite(p) } else { Workload::ParRead(p) })
}

/// `kind = "command"`: a program with its arguments.
fn command(cx: &Ctx, w: &RawWorkload, locs: &mut Locations) -> Result<Workload, SpecError> {
    let Some(argv) = &w.argv else {
        return cx
            .err(w.kind.span(), "a command workload needs argv = [\"program\", \"arg\", ...]");
    };
    if argv.get_ref().is_empty() || argv.get_ref()[0].get_ref().is_empty() {
        return cx.err(argv.span(), "argv must name a program");
    }
    for a in argv.get_ref() {
        if a.get_ref().contains('\0') {
            return cx.err(a.span(), "arguments may not contain NUL bytes");
        }
    }
    let mut args: Vec<String> = argv.get_ref().iter().map(|a| a.get_ref().clone()).collect();
    let program = &argv.get_ref()[0];
    if crate::paths::is_program_path(program.get_ref()) {
        let path = crate::paths::resolve(cx.base, program.get_ref());
        // A per-worker program ("./w{index}") is known only at run time.
        if !program.get_ref().contains("{index}") {
            locs.paths.push(PathUse {
                key: PathKey::Program,
                path: path.clone(),
                span: program.span(),
            });
        }
        args[0] = path.to_string_lossy().into_owned();
    }
    let parse = match &w.parse {
        None => None,
        Some(p) => match OutputParser::ALL.into_iter().find(|x| x.name() == p.get_ref()) {
            Some(x) => Some(x),
            None => {
                return cx.err(
                    p.span(),
                    format!(
                    "parse must be \"hackbench\", \"perf-bench-pipe\" or \"schbench\", got \"{}\"",
                    p.get_ref()
                ),
                )
            }
        },
    };
    if let Some(parser) = parse.filter(|_| {
        !crate::paths::is_program_path(program.get_ref()) && !program.get_ref().contains('{')
    }) {
        locs.paths.push(PathUse {
            key: PathKey::Original(parser),
            path: program.get_ref().into(),
            span: program.span(),
        });
    }
    Ok(Workload::Command { argv: args, parse })
}

/// Test helpers for the kinds' own tests: a spec of one workload `w` on the matrix.
#[cfg(test)]
pub(super) mod one {
    use crate::{parse, Spec, SpecError, Workload};

    /// The spec with `[workloads.w]` holding `kind_and_keys` (its keys start on line 6).
    pub fn spec(kind_and_keys: &str) -> Result<Spec, SpecError> {
        parse(
            "t.toml",
            &format!("name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\n{kind_and_keys}"),
        )
    }

    /// Its error.
    pub fn err(kind_and_keys: &str) -> SpecError {
        spec(kind_and_keys).expect_err("spec should be rejected")
    }

    /// Its first cell's workload.
    pub fn workload(kind_and_keys: &str) -> Workload {
        spec(kind_and_keys).unwrap_or_else(|e| panic!("{e}")).plan.cells[0]
            .primary()
            .workload
            .clone()
    }
}
