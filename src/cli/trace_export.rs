//! `schedlab trace export`: one traced cell repetition as a Perfetto trace (or trace-cmd's
//! trace.dat), from its kept kernel capture; a simulated run's cell by simulating it again
//! from the stored plan, model parameters and any per-worker demands, named and marked alike, so a measured cell
//! and its simulation open side by side.

use super::common::{bad_input, open_existing, pick_run};
use schedlab_model::{CellRecord, Environment};
use schedlab_store::{RunRow, Store};
use schedlab_trace::decode::Comm;
use schedlab_trace::perfetto::{self, cell, Export, Left, Process, Segment, TraceMachine};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Output formats of `schedlab trace export`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Perfetto's protobuf trace (ui.perfetto.dev opens it).
    Pftrace,
    /// trace-cmd's trace.dat: the kernel's pages as captured (measured runs only).
    Dat,
}

/// Arguments of `schedlab trace export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id (the newest run without it).
    pub run: Option<i64>,
    /// The cell, by key (as `show` prints it).
    #[arg(long, value_name = "KEY")]
    pub cell: String,
    /// The repetition (1-based, as `show` counts them).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub rep: u32,
    /// The file to write (must not exist unless --force).
    #[arg(long, short, value_name = "FILE.pftrace")]
    pub output: PathBuf,
    /// The format (default: dat for a file named *.dat, else pftrace).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Replace an existing file (never written through: a link is replaced, not followed).
    #[arg(long)]
    pub force: bool,
}

/// Simulated timestamps start here (1 s), so no event sits at Perfetto's zero.
const SIM_BASE_NS: u64 = 1_000_000_000;
/// Simulated workers' pids: this plus the worker's index.
const SIM_PID: i32 = 1000;

/// Runs `schedlab trace export`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let format = a.format.unwrap_or(if a.output.extension().is_some_and(|e| e == "dat") {
        Format::Dat
    } else {
        Format::Pftrace
    });
    let store = open_existing(db)?;
    let run = pick_run(&store, a.run)?;
    let rec = pick_cell(&store, &run, &a.cell, a.rep)?;
    check_output(&a.output, a.force)?;
    let what = format!("{} rep {} of run {}", rec.params.key, a.rep, run.id);
    let (bytes, summary) = if run.mode == "sim" {
        if format == Format::Dat {
            return Err(bad_input(format!("run {} is simulated: it has no kernel pages for a trace.dat; export it as .pftrace", run.id)));
        }
        simulated(&store, &run, &rec, &what)?
    } else {
        measured(&store, &run, &rec, &what, format)?
    };
    write_new(&a.output, &bytes, a.force)?;
    println!(
        "wrote {} ({:.1} MB): {what}; {summary}",
        a.output.display(),
        bytes.len() as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

/// The stored repetition `rep` (1-based, not a warm-up) of the cell `key`.
fn pick_cell(store: &Store, run: &RunRow, key: &str, rep: u32) -> anyhow::Result<CellRecord> {
    let cells = store.cells(run.id)?;
    let reps: Vec<&CellRecord> =
        cells.iter().filter(|c| c.params.key == key && !c.warmup).collect();
    if reps.is_empty() {
        let keys: Vec<&str> = cells.iter().map(|c| c.params.key.as_str()).collect();
        return Err(bad_input(format!(
            "run {} has no cell {key:?}{}",
            run.id,
            super::show::key_hint(key, &keys, "its cells")
        )));
    }
    match reps.iter().find(|c| c.rep + 1 == rep) {
        Some(c) => Ok((*c).clone()),
        None => {
            let have: Vec<String> = reps.iter().map(|c| (c.rep + 1).to_string()).collect();
            Err(bad_input(format!(
                "run {} has no repetition {rep} of cell {key}; stored repetitions: {}",
                run.id,
                have.join(", ")
            )))
        }
    }
}

/// Refuses an output path that exists, unless `force` and it is a file or a link.
fn check_output(path: &Path, force: bool) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(bad_input(format!("cannot use {}: {e}", path.display()))),
        Ok(m) if m.is_dir() => {
            Err(bad_input(format!("{} is a directory; name a file to write", path.display())))
        }
        Ok(_) if !force => Err(bad_input(format!(
            "{} already exists; choose a new file, or pass --force to replace it",
            path.display()
        ))),
        Ok(_) => Ok(()),
    }
}

/// Creates `path` exclusively (after unlinking what is there, with `force`) and writes `bytes`.
fn write_new(path: &Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    if force && std::fs::symlink_metadata(path).is_ok() {
        std::fs::remove_file(path)
            .map_err(|e| anyhow::anyhow!("cannot replace {}: {e}", path.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| bad_input(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| {
        let _ = std::fs::remove_file(path);
        anyhow::anyhow!("cannot write {}: {e}", path.display())
    })
}

/// The machine as the export names it.
fn machine(env: &Environment, cpus: u32) -> TraceMachine {
    TraceMachine { release: env.kernel.clone(), arch: std::env::consts::ARCH.into(), cpus }
}

/// A measured cell: its kept capture, decoded, with the workers, the engine and the
/// dispatchers named and the marks placed on the capture's clock.
fn measured(
    store: &Store,
    run: &RunRow,
    rec: &CellRecord,
    what: &str,
    format: Format,
) -> anyhow::Result<(Vec<u8>, String)> {
    let Some(kept) = store.raw_trace(run.id, rec.params.cell_id, rec.rep, rec.warmup)? else {
        return Err(bad_input(match &rec.trace {
            Some(t) if t.observer.is_some() => format!("{what} was traced in the kernel (BPF figures) without its timeline; run it again with --trace=timeline (or trace = \"timeline\" in the spec) to export it"),
            Some(_) => format!("{what} was traced by a schedlab that did not keep the kernel's capture; run it again with --trace=timeline to export it"),
            None => format!(
                "{what} was not traced; run it with --trace=timeline (or trace = \"timeline\" in the spec), as root"
            ),
        }));
    };
    let raw = schedlab_trace::Raw::unkeep(&kept)
        .map_err(|e| anyhow::anyhow!("the kept capture of {what} cannot be read: {e}"))?;
    let decoded = schedlab_trace::decode(&raw)
        .map_err(|e| anyhow::anyhow!("the kept capture of {what} cannot be decoded: {e}"))?;
    let mut bytes = Vec::new();
    if format == Format::Dat {
        schedlab_trace::tracedat::write(
            &raw,
            &schedlab_trace::tracedat::names(&decoded),
            &mut bytes,
        )?;
        let switches = decoded.events.iter().filter(|e| e.kind.name() == "sched_switch").count();
        return Ok((
            bytes,
            format!(
                "{} events ({switches} sched_switch) as trace-cmd's trace.dat",
                decoded.events.len()
            ),
        ));
    }
    let m = &kept.meta;
    let mut processes = cell::worker_processes(rec, m.engine_pid, |i| rec.samples[i].pid);
    // The capture's reader thread has ended by the time the engine's threads are listed.
    let mut threads = m.engine_tids.clone();
    threads.extend(
        (raw.reader_tid > 0 && !threads.contains(&raw.reader_tid)).then_some(raw.reader_tid),
    );
    processes.push(Process { pid: m.engine_pid, ppid: 0, name: "schedlab engine".into(), threads });
    for (i, d) in m.dispatchers.iter().enumerate() {
        processes.push(Process {
            pid: *d,
            ppid: m.engine_pid,
            name: format!("schedlab dispatcher #{i}"),
            threads: Vec::new(),
        });
    }
    let jobs = store.job_logs(run.id, rec.params.cell_id, rec.rep, rec.warmup)?;
    let set_start = m.release_ns + schedlab_runner::rt::START_LEAD_NS;
    let tracks = cell::tracks(rec, m.release_ns, set_start, &jobs, |i| rec.samples[i].pid);
    let cpus: Vec<u32> = raw.cpus.iter().map(|c| c.cpu).collect();
    let x = Export {
        events: &decoded.events,
        cpus: &cpus,
        boot_offset_ns: m.boot_offset_ns,
        clock_at_ns: m.release_ns,
        realtime_at_ns: Some((rec.started_unix * 1e9) as u64),
        machine: machine(&run.env, run.env.cpus),
        processes: &processes,
        tracks: &tracks,
    };
    let summary = perfetto::write(&x, &mut bytes)?;
    Ok((bytes, describe(&summary)))
}

/// A simulated cell: simulated again (deterministic) from the stored plan and the model
/// parameters its samples keep, checked against the stored record, its slices as switches.
fn simulated(
    store: &Store,
    run: &RunRow,
    rec: &CellRecord,
    what: &str,
) -> anyhow::Result<(Vec<u8>, String)> {
    let plan: schedlab_spec::Plan = serde_json::from_str(&run.plan_json)
        .map_err(|e| anyhow::anyhow!("run {}'s stored plan cannot be read: {e}", run.id))?;
    let cell = plan
        .cells
        .iter()
        .find(|c| c.index == rec.params.cell_id)
        .ok_or_else(|| bad_input(format!("{what} is not in the run's stored plan")))?;
    let params =
        rec.samples.iter().find_map(|s| s.extra.sim.as_ref()).map(|o| o.model.clone()).ok_or_else(
            || {
                bad_input(format!(
                    "{what} has no stored model parameters (it was not simulated: {})",
                    rec.message.as_deref().unwrap_or("no samples")
                ))
            },
        )?;
    // Workers that took their CPU demand from a measured run keep it in their samples.
    let demand = schedlab_simrun::demand::stored(rec)
        .map_err(|e| bad_input(format!("{what} cannot be simulated again: {e}")))?;
    let sim = schedlab_simrun::simulate_cell_with(
        cell,
        &params,
        demand.as_deref(),
        schedlab_simrun::horizon(&plan),
        true,
    );
    let same = sim.record.makespan_s == rec.makespan_s
        && sim.record.samples.len() == rec.samples.len()
        && sim
            .record
            .samples
            .iter()
            .zip(&rec.samples)
            .all(|(a, b)| a.wall_s == b.wall_s && a.user_s == b.user_s);
    let Some(result) = sim.traced.filter(|_| same) else {
        return Err(bad_input(format!(
            "simulating {what} again does not give the stored schedule (stored by schedlab {}, this is {}); simulate the spec again to export it",
            run.env.tool_version,
            env!("CARGO_PKG_VERSION")
        )));
    };
    let left = |stop: Option<schedlab_policy::Stop>| {
        use schedlab_policy::Stop;
        match stop {
            Some(Stop::Preempted | Stop::Expired) => Left::Preempted,
            Some(Stop::Blocked) => Left::Blocked,
            Some(Stop::Done | Stop::Aborted) => Left::Slept,
            Some(Stop::Exited) => Left::Exited,
            None => Left::Running,
        }
    };
    let segments: Vec<Segment> = result
        .trace
        .iter()
        .map(|s| Segment {
            cpu: s.cpu as u32,
            pid: SIM_PID + s.task as i32,
            start_ns: SIM_BASE_NS + s.start,
            end_ns: SIM_BASE_NS + s.end,
            left: left(s.stop),
        })
        .collect();
    // Workers exec schedlab, so a measured worker's comm is "schedlab": the same here.
    let comm = |pid: i32| -> Comm {
        let name: &[u8] = if pid == 0 { b"swapper" } else { b"schedlab" };
        let mut c = [0u8; 16];
        c[..name.len()].copy_from_slice(name);
        c
    };
    let events =
        perfetto::switches(&segments, params.switch_cost_ns + params.migration_cost_ns, comm);
    let processes = cell::worker_processes(rec, 0, |i| SIM_PID + i as i32);
    let jobs = store.job_logs(run.id, rec.params.cell_id, rec.rep, rec.warmup)?;
    let tracks = cell::tracks(rec, SIM_BASE_NS, SIM_BASE_NS, &jobs, |i| SIM_PID + i as i32);
    let cpus: Vec<u32> = (0..params.cpus as u32).collect();
    let x = Export {
        events: &events,
        cpus: &cpus,
        boot_offset_ns: 0,
        clock_at_ns: SIM_BASE_NS,
        realtime_at_ns: None,
        machine: machine(&run.env, params.cpus as u32),
        processes: &processes,
        tracks: &tracks,
    };
    let mut bytes = Vec::new();
    let summary = perfetto::write(&x, &mut bytes)?;
    Ok((bytes, describe(&summary)))
}

/// The export's summary: sched_switch per CPU, the other events by name, names and marks.
fn describe(s: &perfetto::ExportSummary) -> String {
    let cpus: Vec<String> = s.switches.iter().map(|(c, n)| format!("cpu{c}={n}")).collect();
    let others: Vec<String> = s
        .events
        .iter()
        .filter(|(k, _)| **k != "sched_switch")
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    format!(
        "sched_switch {} ({}); other events: {}; {} processes named; {} marks{}",
        s.switches.values().sum::<u64>(),
        cpus.join(" "),
        if others.is_empty() { "none".to_string() } else { others.join(" ") },
        s.processes,
        s.marks,
        if s.lost_bundles > 0 {
            format!("; {} bundles after lost events", s.lost_bundles)
        } else {
            String::new()
        }
    )
}
