//! A traced cell: the capture around the workers' lives and the figures from it.

use super::spawn::Worker;
use super::CellCtx;
use schedlab_bpf::{Observer, Role};
use schedlab_model::trace::{CellTrace, RawTrace};
use schedlab_plan::{Affinity, Cell};
use schedlab_trace::capture::ReaderPolicy;
use schedlab_trace::{Capture, CaptureOptions, Raw};

/// Starts the capture before any worker exists: the reader below every RT worker, away
/// from the CPUs the workers are pinned to when there is a CPU left.
pub(super) fn start(
    cx: &mut CellCtx,
    cell: &Cell,
    (tracefs, buffer_kb): (&schedlab_trace::Tracefs, Option<u32>),
) -> Result<Capture, schedlab_trace::TraceError> {
    let mut opts = CaptureOptions::default();
    if let Some(kb) = buffer_kb {
        opts.settings.buffer_kb = kb;
    }
    // Block requests only where the cell sets an I/O scheduler, the cells that study the
    // block layer: no figure reads them, and in pa3's mixed cells they were a fifth of the
    // events (docs/ARCHITECTURE.md, Kernel traces).
    opts.settings.block = cell.io.is_some();
    opts.reader = ReaderPolicy::for_cell(cell.is_realtime().then_some(1));
    opts.avoid_cpus = worker_cpus(cell, cx.online);
    Capture::start(tracefs, cx.journal, &opts)
}

/// Tells the observer what the engine's new children are, before any is released. One it
/// could not be told about is sorted out when its figures are read.
pub(super) fn register(
    cx: &mut CellCtx,
    cell: &Cell,
    observer: Option<&mut Observer>,
    pids: impl Iterator<Item = i32>,
    role: Role,
) {
    let Some(o) = observer else { return };
    for pid in pids {
        if let Err(e) = o.register(pid, role) {
            cx.warnings.push(format!("cell {}: {e}", cell.key));
            return;
        }
    }
}

/// The observer's figures of the workers (in index order). Figures that cannot be read
/// become a warning: the cell's measurements stand without them.
pub(super) fn observed(
    cx: &mut CellCtx,
    cell: &Cell,
    observer: Observer,
    workers: &[Worker],
) -> Option<CellTrace> {
    let mut ordered: Vec<&Worker> = workers.iter().collect();
    ordered.sort_by_key(|w| w.index);
    let pids: Vec<i32> = ordered.iter().map(|w| w.pid).collect();
    match observer.finish(&pids) {
        Ok(t) => {
            let unseen = t.workers.iter().filter(|w| w.tasks == 0).count();
            if unseen > 0 {
                cx.warnings.push(format!(
                    "cell {}: the BPF observer did not see {unseen} of {} workers start: their figures are empty",
                    cell.key,
                    t.workers.len()
                ));
            }
            Some(t)
        }
        Err(e) => {
            cx.warnings.push(format!("cell {}: the BPF observer's figures: {e}", cell.key));
            None
        }
    }
}

/// The CPUs the cell's workers may use: the union of their groups' lists when every group
/// is pinned to a list, else every online CPU.
fn worker_cpus(cell: &Cell, online: &[u32]) -> Vec<u32> {
    let mut cpus = Vec::new();
    for g in &cell.groups {
        match (&g.affinity, &g.cgroup.cpuset) {
            (Affinity::List(l), _) => cpus.extend(l),
            (_, Some(set)) => cpus.extend(set),
            _ => return online.to_vec(),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Stops the capture and computes the figures of the workers (in index order), with the
/// engine's threads and the live dispatchers counted as the engine, and keeps the capture
/// itself (compressed) for export. A capture that cannot be read becomes a warning: the
/// cell's measurements stand without it.
pub(super) fn finish(
    cx: &mut CellCtx,
    cell: &Cell,
    capture: Capture,
    workers: &[Worker],
    dispatchers: &[i32],
    release_ns: u64,
) -> (Option<CellTrace>, Option<RawTrace>) {
    let raw = match capture.stop(cx.journal) {
        Ok(r) => r,
        Err(e) => {
            cx.warnings.push(format!("cell {}: the kernel trace could not be read: {e}", cell.key));
            return (None, None);
        }
    };
    let pid = std::process::id() as i32;
    let threads = schedlab_trace::procs::threads(cx.root, pid);
    let kept = match raw.keep(release_ns, pid, &threads, dispatchers) {
        Ok(k) => Some(k),
        Err(e) => {
            cx.warnings.push(format!(
                "cell {}: the kernel trace could not be kept for export: {e}",
                cell.key
            ));
            None
        }
    };
    (figures(cx, cell, &raw, workers, threads, dispatchers), kept)
}

/// The figures of a stopped capture.
fn figures(
    cx: &mut CellCtx,
    cell: &Cell,
    raw: &Raw,
    workers: &[Worker],
    threads: Vec<i32>,
    dispatchers: &[i32],
) -> Option<CellTrace> {
    let decoded = match schedlab_trace::decode(raw) {
        Ok(d) => d,
        Err(e) => {
            cx.warnings
                .push(format!("cell {}: the kernel trace could not be decoded: {e}", cell.key));
            return None;
        }
    };
    let mut ordered: Vec<&Worker> = workers.iter().collect();
    ordered.sort_by_key(|w| w.index);
    let pids: Vec<i32> = ordered.iter().map(|w| w.pid).collect();
    let mut engine = threads;
    engine.extend(dispatchers);
    let t = schedlab_trace::cell_trace(raw, &decoded, &pids, &engine, None);
    if t.lost_events > 0 {
        cx.warnings.push(format!(
            "cell {}: the kernel trace lost {} events (buffers overran): its figures undercount; raise trace_buffer_kb",
            cell.key, t.lost_events
        ));
    }
    Some(t)
}
