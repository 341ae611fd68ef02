//! One stored cell repetition as a Perfetto trace (or trace-cmd's trace.dat): a measured
//! one from its kept kernel capture, a simulated one by simulating it again from the stored
//! plan, model parameters and any per-worker demands, named and marked alike, so a measured
//! cell and its simulation open side by side.

use crate::Error;
use schedlab_model::{CellRecord, Environment};
use schedlab_store::{RunRow, Store};
use schedlab_trace::decode::Comm;
use schedlab_trace::perfetto::{self, cell, Export, Left, Process, Segment, TraceMachine};

/// Simulated timestamps start here (1 s), so no event sits at Perfetto's zero.
const SIM_BASE_NS: u64 = 1_000_000_000;
/// Simulated workers' pids: this plus the worker's index.
const SIM_PID: i32 = 1000;

/// The stored repetition `rep` (1-based, not a warm-up) of the cell `key`.
pub fn pick_cell(store: &Store, run: &RunRow, key: &str, rep: u32) -> Result<CellRecord, Error> {
    let cells = store.cells(run.id)?;
    let reps: Vec<&CellRecord> =
        cells.iter().filter(|c| c.params.key == key && !c.warmup).collect();
    if reps.is_empty() {
        let keys: Vec<&str> = cells.iter().map(|c| c.params.key.as_str()).collect();
        return Err(Error::refused(format!(
            "run {} has no cell {key:?}{}",
            run.id,
            crate::subject::key_hint(key, &keys, "its cells")
        )));
    }
    match reps.iter().find(|c| c.rep + 1 == rep) {
        Some(c) => Ok((*c).clone()),
        None => {
            let have: Vec<String> = reps.iter().map(|c| (c.rep + 1).to_string()).collect();
            Err(Error::refused(format!(
                "run {} has no repetition {rep} of cell {key}; stored repetitions: {}",
                run.id,
                have.join(", ")
            )))
        }
    }
}

/// The machine as the export names it.
fn machine(env: &Environment, cpus: u32) -> TraceMachine {
    TraceMachine { release: env.kernel.clone(), arch: std::env::consts::ARCH.into(), cpus }
}

/// A measured cell: its kept capture, decoded, with the workers, the engine and the
/// dispatchers named and the marks placed on the capture's clock.
pub fn measured(
    store: &Store,
    run: &RunRow,
    rec: &CellRecord,
    what: &str,
    dat: bool,
) -> Result<(Vec<u8>, String), Error> {
    let Some(kept) = store.raw_trace(run.id, rec.params.cell_id, rec.rep, rec.warmup)? else {
        return Err(Error::refused(match &rec.trace {
            Some(t) if t.observer.is_some() => format!("{what} was traced in the kernel (BPF figures) without its timeline; run it again with --trace=timeline (or trace = \"timeline\" in the spec) to export it"),
            Some(_) => format!("{what} was traced by a schedlab that did not keep the kernel's capture; run it again with --trace=timeline to export it"),
            None => format!(
                "{what} was not traced; run it with --trace=timeline (or trace = \"timeline\" in the spec), as root"
            ),
        }));
    };
    let raw = schedlab_trace::Raw::unkeep(&kept)
        .map_err(|e| Error::Failed(format!("the kept capture of {what} cannot be read: {e}")))?;
    let decoded = schedlab_trace::decode(&raw)
        .map_err(|e| Error::Failed(format!("the kept capture of {what} cannot be decoded: {e}")))?;
    let mut bytes = Vec::new();
    if dat {
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
pub fn simulated(
    store: &Store,
    run: &RunRow,
    rec: &CellRecord,
    what: &str,
) -> Result<(Vec<u8>, String), Error> {
    let plan: schedlab_spec::Plan = serde_json::from_str(&run.plan_json)
        .map_err(|e| Error::Failed(format!("run {}'s stored plan cannot be read: {e}", run.id)))?;
    let cell = plan
        .cells
        .iter()
        .find(|c| c.index == rec.params.cell_id)
        .ok_or_else(|| Error::refused(format!("{what} is not in the run's stored plan")))?;
    let params =
        rec.samples.iter().find_map(|s| s.extra.sim.as_ref()).map(|o| o.model.clone()).ok_or_else(
            || {
                Error::refused(format!(
                    "{what} has no stored model parameters (it was not simulated: {})",
                    rec.message.as_deref().unwrap_or("no samples")
                ))
            },
        )?;
    // Workers that took their CPU demand from a measured run keep it in their samples.
    let demand = schedlab_simrun::demand::stored(rec)
        .map_err(|e| Error::refused(format!("{what} cannot be simulated again: {e}")))?;
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
        return Err(Error::refused(format!(
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
