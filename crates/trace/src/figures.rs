//! Per-worker and per-CPU figures from a cell's decoded events: a pure function of the
//! events, the workers' and engine's pids and a classifier for the other tasks that took a
//! worker's CPU (the real one reads /proc once per task, at the end: [`crate::procs`]).
//!
//! Each task is in one state at a time, changed only by events: running (switched in),
//! runnable (switched out still runnable, or woken), blocked (switched out asleep), dead
//! (its last switch). Before a task's first event its state is inferred from that event
//! (switched out: it was running; switched in: runnable; woken: blocked), since any earlier
//! change inside the window would have been an event. Time is counted inside the window
//! only; counts only for events inside it.
//!
//! Some switches are not in the trace at all: on the machine this was built on (a
//! Firecracker guest), no switch away from the guest's init threads is ever recorded, nor
//! many away from the idle task, so the task the CPU went to next seems to leave a CPU it
//! never got. Such a switch shows as a switch-out whose task is not the one the CPU's last
//! switch brought, or, before the CPU's first traced switch, of a task known to be runnable
//! or asleep (counted: `untraced_switches`). When the task got the CPU is bounded by
//! the CPU's own events, each of which names the task running when it was recorded: not
//! before the last one another task recorded there (nor before the task became runnable or
//! was moved to that CPU), not after the first one it recorded itself (or its switch-out).
//! Only the time from that first sign counts as run; the span between the two bounds is the
//! worker's `untraced_s`, time it may have run but the trace cannot say, so wait4's user +
//! sys lies between run and run + untraced. A CPU's time in that span counts as busy or
//! idle only when the tasks on both sides of it are of one kind.

use crate::decode::{Comm, Event, EventKind, Switch};
use schedlab_model::hist::{self, Histogram};
use schedlab_model::trace::{
    CellTrace, CpuTrace, PreemptedBy, StateBar, WorkerTrace, STATE_SLICES,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// What kind of task took a worker's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// A worker of the cell (its threads and children too).
    Worker,
    /// schedlab's engine.
    Engine,
    /// A kernel thread, or the idle task.
    Kernel,
    /// Any other task.
    Other,
}

/// The tasks of a cell.
#[derive(Debug, Clone, Copy)]
pub struct Roles<'a> {
    /// The workers' pids, in the order their figures are wanted.
    pub workers: &'a [i32],
    /// The engine's tasks: its threads (the trace reader's included). Tasks they create
    /// that are not workers count as the engine's too.
    pub engine: &'a [i32],
}

/// The span of time the figures cover, CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSpan {
    /// From.
    pub start_ns: u64,
    /// To.
    pub end_ns: u64,
}

impl TimeSpan {
    fn clip(&self, from: u64, to: u64) -> u64 {
        to.min(self.end_ns).saturating_sub(from.max(self.start_ns))
    }

    fn holds(&self, ts: u64) -> bool {
        (self.start_ns..=self.end_ns).contains(&ts)
    }

    /// The length of one of the [`STATE_SLICES`] slices of the state bars (at least 1 ns).
    fn slice_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns).div_ceil(STATE_SLICES as u64).max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkerState {
    Unknown,
    Running(u64),
    Runnable(u64),
    Blocked(u64),
    Dead,
}

/// One task of a worker.
#[derive(Debug)]
struct WorkerTask {
    worker: usize,
    state: WorkerState,
    /// When its pending wake-up put it on a run queue.
    waking: Option<u64>,
    /// The CPU the kernel last moved it to, and when.
    arrived: Option<(u32, u64)>,
}

impl WorkerTask {
    fn new(worker: usize) -> WorkerTask {
        WorkerTask { worker, state: WorkerState::Unknown, waking: None, arrived: None }
    }
}

/// What a stretch of a worker's time was.
#[derive(Debug, Clone, Copy)]
enum Span {
    Run = 0,
    Runnable = 1,
    Blocked = 2,
}

/// A worker's running totals.
#[derive(Debug)]
struct Acc {
    /// Per slice of the window ([`TimeSpan::slice_ns`]): ns running, runnable, blocked.
    slices: Vec<[u64; 3]>,
    run: u64,
    runnable: u64,
    blocked: u64,
    /// Time before untraced switch-ins that may have been its run.
    untraced: u64,
    involuntary: u64,
    voluntary: u64,
    /// Who took the CPU, by task, with the comm it had: resolved at the end.
    preemptors: HashMap<i32, (u64, Comm)>,
    wakeups: Histogram<u64>,
    migrations: u64,
    cpus: BTreeSet<u32>,
    tasks: u32,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            slices: vec![[0; 3]; STATE_SLICES],
            run: 0,
            runnable: 0,
            blocked: 0,
            untraced: 0,
            involuntary: 0,
            voluntary: 0,
            preemptors: HashMap::new(),
            wakeups: Histogram::new(3).expect("3 significant figures are allowed"),
            migrations: 0,
            cpus: BTreeSet::new(),
            tasks: 1,
        }
    }
}

impl Acc {
    /// Counts `from..to`, clipped to the window, as `kind`: in the totals and in the slices
    /// it overlaps.
    fn span(&mut self, kind: Span, window: &TimeSpan, from: u64, to: u64) {
        let d = window.clip(from, to);
        match kind {
            Span::Run => self.run += d,
            Span::Runnable => self.runnable += d,
            Span::Blocked => self.blocked += d,
        }
        let (mut t, end) = (from.max(window.start_ns), to.min(window.end_ns));
        let slice = window.slice_ns();
        while t < end {
            let k = (((t - window.start_ns) / slice) as usize).min(STATE_SLICES - 1);
            let upto = if k == STATE_SLICES - 1 {
                end
            } else {
                (window.start_ns + (k as u64 + 1) * slice).min(end)
            };
            self.slices[k][kind as usize] += upto - t;
            t = upto;
        }
    }
}

/// A CPU's running totals.
#[derive(Debug, Default)]
struct CpuTotals {
    /// The task on it and since when, once a switch said.
    current: Option<(i32, u64)>,
    /// Since its last switch, each event's time and the task that recorded it.
    seen: Vec<(u64, i32)>,
    busy: u64,
    idle: u64,
}

impl CpuTotals {
    /// Counts `from..to` as `pid`'s: idle for the idle task, else busy.
    fn count(&mut self, window: &TimeSpan, pid: i32, from: u64, to: u64) {
        let d = window.clip(from, to);
        if pid == 0 {
            self.idle += d;
        } else {
            self.busy += d;
        }
    }

    /// Counts the current task's time up to `ts`.
    fn close(&mut self, window: &TimeSpan, ts: u64) {
        if let Some((pid, since)) = self.current {
            self.count(window, pid, since, ts);
        }
    }
}

/// Where a task leaving a CPU at `ts` got it, when the switch that gave it was not traced
/// and the CPU's last traced switch, at `came`, brought another: after `lo`, the last sign
/// of another task there (an event it recorded, or that switch), and by `hi`, the first
/// sign of this one (an event it recorded, or its switch-out).
#[derive(Debug, Clone, Copy)]
struct Gap {
    lo: u64,
    hi: u64,
}

impl Gap {
    fn of(seen: &[(u64, i32)], task: i32, came: u64, ts: u64) -> Gap {
        let first = seen.iter().position(|&(_, t)| t == task);
        let lo = seen[..first.unwrap_or(seen.len())].last().map_or(came, |&(t, _)| t.max(came));
        let hi = first.map_or(ts, |i| seen[i].0).max(lo);
        Gap { lo, hi }
    }
}

/// The figures of a cell's events (in timestamp order) over `window`. `classify` is asked,
/// once per task, about each task that took a worker's CPU and is neither a worker's nor
/// the engine's, with the comm the trace gave it; `lost` is what the buffers lost.
pub fn figures(
    events: &[Event],
    roles: &Roles,
    window: TimeSpan,
    lost: u64,
    classify: impl FnMut(i32, &Comm) -> Who,
) -> CellTrace {
    let mut fold = Fold::new(roles, window);
    for e in events {
        fold.event(e);
    }
    fold.finish(lost, classify)
}

/// The fold of a cell's events into its figures: the state of every task, worker and CPU
/// so far, changed by one handler per kind of event, in timestamp order. [`figures`] feeds
/// it decoded events; another source of the same events (a BPF program's, say) can call the
/// handlers directly.
#[derive(Debug)]
pub struct Fold {
    window: TimeSpan,
    /// The workers' pids, in the order of their figures.
    workers: Vec<i32>,
    /// The workers' tasks (their threads and children too), by pid.
    tasks: HashMap<i32, WorkerTask>,
    /// Per worker, its running totals.
    acc: Vec<Acc>,
    /// The engine's tasks.
    engine: HashSet<i32>,
    cpus: BTreeMap<u32, CpuTotals>,
    /// Switches the trace did not show.
    untraced: u64,
    /// Events folded.
    events: u64,
}

impl Fold {
    /// A fold of the events of a cell with these tasks over `window`, before any event.
    pub fn new(roles: &Roles, window: TimeSpan) -> Fold {
        Fold {
            window,
            workers: roles.workers.to_vec(),
            tasks: roles
                .workers
                .iter()
                .enumerate()
                .map(|(i, &pid)| (pid, WorkerTask::new(i)))
                .collect(),
            acc: roles.workers.iter().map(|_| Acc::new()).collect(),
            engine: roles.engine.iter().copied().collect(),
            cpus: BTreeMap::new(),
            untraced: 0,
            events: 0,
        }
    }

    /// Folds one event into the figures, by its kind.
    pub fn event(&mut self, e: &Event) {
        self.events += 1;
        if !matches!(e.kind, EventKind::Switch(_)) && e.current >= 0 {
            self.seen(e.ts, e.cpu, e.current);
        }
        match &e.kind {
            EventKind::Switch(s) => self.switch(e.ts, e.cpu, s),
            EventKind::Wakeup(w) => self.woken(e.ts, w.pid),
            EventKind::WakeupNew(w) => self.wakeup_new(e.ts, w.pid),
            EventKind::Migrate { pid, dest_cpu, .. } => self.migrate(e.ts, *pid, *dest_cpu as u32),
            EventKind::Fork { parent, child } => self.fork(*parent, *child),
            // A wake-up's latency runs from its sched_wakeup (see `woken`).
            EventKind::Waking(_)
            | EventKind::Exec { .. }
            | EventKind::Exit { .. }
            | EventKind::BlockIssue(_)
            | EventKind::BlockComplete(_)
            | EventKind::Lost { .. } => {}
        }
    }

    /// An event other than a switch that `current` recorded on `cpu`: a sign that it was
    /// running there (see the module's docs on untraced switches).
    pub fn seen(&mut self, ts: u64, cpu: u32, current: i32) {
        self.cpus.entry(cpu).or_default().seen.push((ts, current));
    }

    /// sched_switch on `cpu`: `s.prev_pid` left it, `s.next_pid` took it.
    pub fn switch(&mut self, ts: u64, cpu_id: u32, s: &Switch) {
        let window = self.window;
        let cpu = self.cpus.entry(cpu_id).or_default();
        // The task leaving is not the one the last switch here brought: the switch that
        // brought it was not traced (see the module's docs).
        let gap = match cpu.current {
            Some((came_pid, came)) if came_pid != s.prev_pid => {
                let g = Gap::of(&cpu.seen, s.prev_pid, came, ts);
                cpu.count(&window, came_pid, came, g.lo);
                if (came_pid == 0) == (s.prev_pid == 0) {
                    cpu.count(&window, came_pid, g.lo, g.hi);
                }
                cpu.count(&window, s.prev_pid, g.hi, ts);
                if window.holds(ts) {
                    self.untraced += 1;
                }
                Some(g)
            }
            // The CPU's first switch, of a task known not to be running: the switch that
            // gave it the CPU was not traced either (what ran there before is unknown, so the
            // CPU's time before stays uncounted).
            None if self.tasks.get(&s.prev_pid).is_some_and(|t| {
                matches!(t.state, WorkerState::Runnable(_) | WorkerState::Blocked(_))
            }) =>
            {
                let g = Gap::of(&cpu.seen, s.prev_pid, window.start_ns, ts);
                if window.holds(ts) {
                    self.untraced += 1;
                }
                Some(g)
            }
            _ => {
                cpu.close(&window, ts);
                None
            }
        };
        cpu.seen.clear();
        cpu.current = Some((s.next_pid, ts));
        if let Some(t) = self.tasks.get_mut(&s.prev_pid) {
            let a = &mut self.acc[t.worker];
            let since = match (t.state, gap) {
                (WorkerState::Running(since), _) => Some(since),
                (WorkerState::Unknown, None) => Some(window.start_ns),
                (
                    WorkerState::Unknown | WorkerState::Runnable(_) | WorkerState::Blocked(_),
                    Some(g),
                ) => {
                    let (kind, since) = match t.state {
                        WorkerState::Blocked(since) => (Span::Blocked, since),
                        WorkerState::Runnable(since) => (Span::Runnable, since),
                        _ => (Span::Runnable, window.start_ns),
                    };
                    // Nor can it have run before it was runnable, or here before the
                    // kernel moved it here.
                    let moved = t.arrived.filter(|(c, _)| *c == cpu_id).map_or(0, |(_, at)| at);
                    let lo = g.lo.max(since).max(moved).min(g.hi);
                    a.span(kind, &window, since, lo);
                    a.untraced += window.clip(lo, g.hi);
                    // The untraced switch-in ended its pending wake-up, no later than it
                    // could have run: exact when nothing of it is untraced.
                    if let Some(w) = t.waking.take().filter(|_| window.holds(lo)) {
                        let _ = a.wakeups.record(lo.saturating_sub(w));
                    }
                    Some(g.hi)
                }
                _ => None,
            };
            if let Some(since) = since {
                a.span(Span::Run, &window, since, ts);
            }
            t.state = if s.prev_dead {
                WorkerState::Dead
            } else if s.prev_runnable {
                if window.holds(ts) {
                    a.involuntary += 1;
                    let p = a.preemptors.entry(s.next_pid).or_insert((0, s.next_comm));
                    p.0 += 1;
                }
                WorkerState::Runnable(ts)
            } else {
                if window.holds(ts) {
                    a.voluntary += 1;
                }
                WorkerState::Blocked(ts)
            };
            t.waking = None;
        }
        if let Some(t) = self.tasks.get_mut(&s.next_pid) {
            let a = &mut self.acc[t.worker];
            match t.state {
                WorkerState::Runnable(since) => a.span(Span::Runnable, &window, since, ts),
                WorkerState::Unknown => a.span(Span::Runnable, &window, window.start_ns, ts),
                // Woken without a wake-up event (lost, or not traced).
                WorkerState::Blocked(since) => a.span(Span::Blocked, &window, since, ts),
                WorkerState::Running(_) | WorkerState::Dead => {}
            }
            if let Some(w) = t.waking.take() {
                if window.holds(ts) {
                    let _ = a.wakeups.record(ts.saturating_sub(w));
                }
            }
            t.state = WorkerState::Running(ts);
            a.cpus.insert(cpu_id);
        }
    }

    /// sched_wakeup of `pid`: the wake-up put it on a run queue, where it is runnable until
    /// it gets a CPU. The kernel's own runnable wait (`run_delay`) starts there too, as do
    /// runqlat's and `perf sched latency`'s; from sched_waking it would also count the
    /// wake-up's way to the CPU it queues on (an IPI away, several µs on a VM), during
    /// which the task is not yet queued. A waking that raced its switch-out is queued only
    /// after the switch, so its sched_wakeup comes after it too. A task still running (or
    /// already runnable) was not asleep: nothing changes.
    pub fn woken(&mut self, ts: u64, pid: i32) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            let since = match t.state {
                WorkerState::Blocked(since) => since,
                WorkerState::Unknown => self.window.start_ns,
                _ => return,
            };
            self.acc[t.worker].span(Span::Blocked, &self.window, since, ts);
            t.state = WorkerState::Runnable(ts);
            t.waking = Some(ts);
        }
    }

    /// sched_wakeup_new: `pid` was made runnable for the first time.
    pub fn wakeup_new(&mut self, ts: u64, pid: i32) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            t.state = WorkerState::Runnable(ts);
            t.waking = Some(ts);
        }
    }

    /// sched_migrate_task: the kernel moved `pid` to `dest_cpu`.
    pub fn migrate(&mut self, ts: u64, pid: i32, dest_cpu: u32) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            if self.window.holds(ts) {
                self.acc[t.worker].migrations += 1;
            }
            t.arrived = Some((dest_cpu, ts));
        }
    }

    /// sched_process_fork: a worker's new task counts as the worker, an engine task's as the
    /// engine.
    pub fn fork(&mut self, parent: i32, child: i32) {
        if self.tasks.contains_key(&child) || self.engine.contains(&child) {
            return;
        }
        if let Some(w) = self.tasks.get(&parent).map(|t| t.worker) {
            self.tasks.insert(child, WorkerTask::new(w));
            self.acc[w].tasks += 1;
        } else if self.engine.contains(&parent) {
            self.engine.insert(child);
        }
    }

    /// The figures: what is still open counted to the window's end, each task that took a
    /// worker's CPU classified once (`classify` for those neither a worker's nor the
    /// engine's), `lost` the events the buffers lost.
    pub fn finish(self, lost: u64, mut classify: impl FnMut(i32, &Comm) -> Who) -> CellTrace {
        let Fold { window, workers, tasks, mut acc, engine, cpus, untraced, events } = self;
        for t in tasks.values() {
            let a = &mut acc[t.worker];
            match t.state {
                WorkerState::Running(since) => a.span(Span::Run, &window, since, window.end_ns),
                WorkerState::Runnable(since) => {
                    a.span(Span::Runnable, &window, since, window.end_ns)
                }
                WorkerState::Blocked(since) => a.span(Span::Blocked, &window, since, window.end_ns),
                WorkerState::Unknown | WorkerState::Dead => {}
            }
        }
        let cpus = cpus
            .into_iter()
            .map(|(cpu, mut a)| {
                a.close(&window, window.end_ns);
                CpuTrace { cpu, busy_s: secs(a.busy), idle_s: secs(a.idle) }
            })
            .collect();
        let mut kinds: HashMap<i32, Who> = HashMap::new();
        let mut who = |pid: i32, comm: &Comm| -> Who {
            if tasks.contains_key(&pid) {
                Who::Worker
            } else if engine.contains(&pid) {
                Who::Engine
            } else if pid == 0 {
                Who::Kernel
            } else {
                *kinds.entry(pid).or_insert_with(|| classify(pid, comm))
            }
        };
        let workers =
            acc.into_iter().zip(workers).map(|(a, pid)| a.worker(pid, &window, &mut who)).collect();
        CellTrace {
            workers,
            cpus,
            lost_events: lost,
            untraced_switches: untraced,
            events,
            span_s: secs(window.end_ns.saturating_sub(window.start_ns)),
            slice_s: secs(window.slice_ns()),
            observer: None,
            bpf: None,
        }
    }
}

impl Acc {
    /// The worker's figures, `who` telling what kind of task each preemptor was.
    fn worker(
        self,
        pid: i32,
        window: &TimeSpan,
        who: &mut impl FnMut(i32, &Comm) -> Who,
    ) -> WorkerTrace {
        let mut by = PreemptedBy::default();
        let mut preemptors: Vec<_> = self.preemptors.into_iter().collect();
        preemptors.sort_unstable_by_key(|(p, _)| *p);
        for (p, (n, comm)) in preemptors {
            match who(p, &comm) {
                Who::Worker => by.worker += n,
                Who::Engine => by.engine += n,
                Who::Kernel => by.kernel += n,
                Who::Other => by.other += n,
            }
        }
        let h = &self.wakeups;
        let us = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e3);
        WorkerTrace {
            pid,
            run_s: secs(self.run),
            runnable_s: secs(self.runnable),
            blocked_s: secs(self.blocked),
            untraced_s: secs(self.untraced),
            involuntary: self.involuntary,
            voluntary: self.voluntary,
            preempted_by: by,
            wakeups: h.len(),
            wakeup_p50_us: us(0.5),
            wakeup_p99_us: us(0.99),
            wakeup_max_us: (!h.is_empty()).then(|| h.max() as f64 / 1e3),
            wakeup_hist: (!h.is_empty()).then(|| hist::encode(h)),
            migrations: self.migrations,
            cpus: self.cpus.into_iter().collect(),
            tasks: self.tasks,
            states: Some(StateBar::encode(&self.slices, window.slice_ns())),
        }
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests;
