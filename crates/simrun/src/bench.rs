//! The field's benchmarks as chains of wake-ups: `pipe` (perf bench sched pipe) and
//! `messaging` (hackbench) become the simulator's tasks passing messages over channels
//! (`sim`'s `Phase::Send` and `Phase::Recv`), scheduled by the cell's class model.
//!
//! - `pipe`: per pair, task a writes, wakes b and waits for the reply; b reads, writes back
//!   and waits. Each write and each read is [`Params::ipc_call_ns`] of CPU, so a hop (one
//!   write, the partner's read) costs twice that on top of the switch to the partner.
//! - `messaging`: per group, `fds` receivers each reading from one channel that all `fds`
//!   senders of the group write to (hackbench's socket or pipe per receiver); each sender
//!   sends `loops` messages to every receiver, a write's CPU before each; each receiver
//!   reads `fds x loops`, a read's CPU after each. A full channel blocks its senders, an
//!   empty one its receiver. Capacity in messages: [`capacity`].
//!
//! A task woken by a message is ready at once when it last ran on its waker's CPU, and
//! [`Params::wakeup_ns`] later when it ran on another (the IPI and idle exit). Each worker
//! of the group runs its own benchmark: its tasks inherit its pinning (all on its CPU, or
//! wherever the model puts them). Threads and processes are modelled alike (the switch
//! cost is one figure). The worker's sample sums its tasks (CPU, switches, blocks) and spans
//! from its first task's start to its last task's end; `extra.bench` holds `time_s`
//! (release to the last task's end, as the measured worker's start byte to its end) and
//! for pipe `us_per_op` and `ops_per_s`.

use schedlab_model::{BenchFigures, CellRecord};
use schedlab_plan::{Cell, Ipc, Workload};
use schedlab_policy::Time;
use schedlab_sim::{Phase, SimConfig, SimResult, TaskResult, TaskSpec, WorkSpec};

use crate::model::{
    group_limit, mapping, pin_of, policy_spec, task_params, CellInput, Unsupported,
};
use crate::Params;

/// The kernel's default socket send buffer (`net.core.wmem_default`), bytes: hackbench's
/// senders share the buffer of the socket they write to.
pub const SOCKET_BUFFER_BYTES: u64 = 212_992;

/// What each message costs a socket's buffer besides its bytes: `SKB_TRUESIZE`'s `struct
/// sk_buff` (232 bytes, 256 aligned) and `struct skb_shared_info` (320) on x86-64.
pub const SKB_OVERHEAD_BYTES: u64 = 576;

/// A pipe's default capacity: 16 pages of 4 KiB; small writes fill a page before the next.
pub const PIPE_PAGES: u64 = 16;

/// Bytes of each of perf's pipe messages (an `int`).
const PIPE_WORD_BYTES: u32 = 4;

/// Whether the workload is simulated here.
pub fn modelled(w: &Workload) -> bool {
    matches!(w, Workload::Pipe(_) | Workload::Messaging(_))
}

/// How many messages of `message_bytes` a channel holds before its writers block: a
/// socket's default send buffer over each message's true size, or a pipe's 16 pages with
/// as many whole messages per page as fit (at least one message either way).
pub fn capacity(ipc: Ipc, message_bytes: u32) -> u32 {
    const PAGE: u64 = 4096;
    let bytes = u64::from(message_bytes.max(1));
    let n = match ipc {
        Ipc::Socket => SOCKET_BUFFER_BYTES / (bytes + SKB_OVERHEAD_BYTES),
        Ipc::Pipe if bytes <= PAGE => PIPE_PAGES * (PAGE / bytes),
        Ipc::Pipe => PIPE_PAGES * PAGE / bytes,
    };
    n.clamp(1, u64::from(u32::MAX)) as u32
}

/// One worker's benchmark: its tasks, with channel numbers from `first_channel` on, and the
/// capacities of the channels it adds.
fn worker_tasks(
    w: &Workload,
    p: &Params,
    first_channel: u32,
) -> (Vec<(String, WorkSpec)>, Vec<u32>) {
    let call = p.ipc_call_ns.max(1);
    let mut tasks = Vec::new();
    let mut channels = Vec::new();
    match w {
        Workload::Pipe(b) => {
            for k in 0..b.pairs {
                let (there, back) = (first_channel + 2 * k, first_channel + 2 * k + 1);
                channels.extend([capacity(Ipc::Pipe, PIPE_WORD_BYTES); 2]);
                let a = vec![
                    Phase::Compute(call),
                    Phase::Send(there),
                    Phase::Recv(back),
                    Phase::Compute(call),
                ];
                let b_ = vec![Phase::Recv(there), Phase::Compute(2 * call), Phase::Send(back)];
                tasks.push((format!("p{k}a"), WorkSpec::Repeat { phases: a, rounds: b.loops }));
                tasks.push((format!("p{k}b"), WorkSpec::Repeat { phases: b_, rounds: b.loops }));
            }
        }
        Workload::Messaging(m) => {
            for g in 0..m.groups {
                let first = first_channel + g * m.fds;
                channels
                    .extend(std::iter::repeat_n(capacity(m.ipc, m.message_bytes), m.fds as usize));
                // hackbench starts a group's receivers before its senders.
                for r in 0..m.fds {
                    let phases = vec![Phase::Recv(first + r), Phase::Compute(call)];
                    let rounds = u64::from(m.fds) * m.loops;
                    tasks.push((format!("g{g}r{r}"), WorkSpec::Repeat { phases, rounds }));
                }
                let round: Vec<Phase> = (0..m.fds)
                    .flat_map(|r| [Phase::Compute(call), Phase::Send(first + r)])
                    .collect();
                for s in 0..m.fds {
                    let work = WorkSpec::Repeat { phases: round.clone(), rounds: m.loops };
                    tasks.push((format!("g{g}s{s}"), work));
                }
            }
        }
        _ => unreachable!("only modelled workloads come here"),
    }
    (tasks, channels)
}

/// Tasks per worker of a modelled workload.
fn tasks_per_worker(w: &Workload) -> usize {
    match w {
        Workload::Pipe(b) => 2 * b.pairs as usize,
        Workload::Messaging(m) => 2 * (m.groups * m.fds) as usize,
        _ => 0,
    }
}

/// The simulator's inputs for a cell whose group runs `pipe` or `messaging`: every
/// worker's tasks, each placed as its worker is.
pub fn cell_input(
    cell: &Cell,
    p: &Params,
    horizon: Time,
    trace: bool,
) -> Result<CellInput, Unsupported> {
    let refuse = |reason: String| Unsupported { key: cell.key.clone(), reason };
    let [g] = cell.groups.as_slice() else {
        return Err(refuse(
            "a benchmark's tasks are simulated alone; other groups beside it are not modelled"
                .to_string(),
        ));
    };
    if let Some(why) = group_limit(g) {
        return Err(refuse(why));
    }
    let all: Vec<u32> = (0..p.cpus as u32).collect();
    let params = task_params(&g.policy, p);
    let (mut tasks, mut placement, mut channels) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..g.processes {
        let pin = pin_of(g, i, &all).map_err(|e| refuse(e.0))?;
        let (work, added) = worker_tasks(&g.workload, p, channels.len() as u32);
        channels.extend(added);
        for (name, workload) in work {
            let name = if g.processes == 1 { name } else { format!("w{i}{name}") };
            tasks.push(TaskSpec { name, arrival: 0, workload, params: params.clone() });
            placement.push((0, pin));
        }
    }
    let mapping = mapping(&placement).map_err(|e| refuse(e.0))?;
    let config = SimConfig::new(p.cpus, policy_spec(g.policy.class, p));
    let mut config = SimConfig { costs: crate::overheads::costs(p), ..config }
        .with_channels(channels)
        .with_horizon(horizon)
        .recording(trace, false);
    config.mapping = mapping;
    Ok(CellInput { config, tasks, placement })
}

/// Whether `cell` is simulated here.
pub fn is_bench_cell(cell: &Cell) -> bool {
    cell.groups.iter().any(|g| modelled(&g.workload))
}

/// One worker's tasks as one: CPU, switches, blocks and migrations summed, from the first
/// release and start to the last end, finished when every task finished.
fn merge(name: String, tasks: &[TaskResult]) -> TaskResult {
    let last = tasks.iter().max_by_key(|t| t.ended).expect("a worker has tasks");
    let finished = tasks.iter().all(|t| t.finished);
    let ended = if finished { tasks.iter().filter_map(|t| t.ended).max() } else { None };
    let release = tasks.iter().filter_map(|t| t.release).min();
    let sum = |f: fn(&TaskResult) -> u64| tasks.iter().map(f).sum::<u64>();
    TaskResult {
        name,
        release,
        started: tasks.iter().filter_map(|t| t.started).min(),
        last_cpu: last.last_cpu,
        completion: ended,
        ended,
        wall: ended.zip(release).map(|(e, r)| e - r),
        finished,
        cpu_time: sum(|t| t.cpu_time),
        preemptions: sum(|t| t.preemptions),
        blocks: sum(|t| t.blocks),
        migrations: sum(|t| t.migrations),
        runnable: sum(|t| t.runnable),
        dispatches: sum(|t| t.dispatches),
        released: 1,
        jobs: u64::from(finished),
        ..last.clone()
    }
}

/// The record of a simulated benchmark cell: one sample per worker, its tasks merged, with
/// the benchmark's figures in `extra.bench`, as a measured worker's.
pub fn record(
    cell: &Cell,
    p: &Params,
    result: &SimResult,
    placement: &[(usize, Option<u32>)],
    horizon: Time,
) -> CellRecord {
    let g = &cell.groups[0];
    let per = tasks_per_worker(&g.workload);
    let workers: Vec<TaskResult> = result
        .tasks
        .chunks(per)
        .enumerate()
        .map(|(i, tasks)| merge(format!("w{i}"), tasks))
        .collect();
    let placement: Vec<_> = placement.iter().step_by(per).copied().collect();
    let mut merged = SimResult {
        policy: result.policy.clone(),
        end: result.end,
        events: result.events,
        tasks: workers,
        cpus: result.cpus.clone(),
        trace: Vec::new(),
    };
    let mut rec = crate::record::record(cell, p, &mut merged, &placement, horizon);
    for (s, t) in rec.samples.iter_mut().zip(&merged.tasks) {
        let Some(end) = t.ended else { continue };
        s.extra.bench = Some(figures(&g.workload, end - t.release.unwrap_or(0)));
    }
    rec
}

/// The figures of a worker whose benchmark took `time` ns from its release, in the shape
/// and with the definitions of the measured worker's (`model::BenchFigures`).
pub fn figures(w: &Workload, time: Time) -> BenchFigures {
    let time_s = time as f64 / 1e9;
    let mut f = BenchFigures { source: w.kind().to_string(), ..BenchFigures::default() };
    match w {
        Workload::Pipe(b) => {
            f.us_per_op = Some(time_s * 1e6 / b.loops as f64);
            f.ops_per_s = Some((b.loops * u64::from(b.pairs)) as f64 / time_s);
        }
        _ => f.time_s = Some(time_s),
    }
    f
}
