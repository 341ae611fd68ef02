//! The maps the BPF programs filled, as read after a cell, and their conversion to the
//! model's [`CellTrace`]: a pure function, tested on hand-made map contents.

use crate::hist;
use schedlab_model::trace::{CellTrace, CpuTrace, PreemptedBy, WorkerTrace};
use std::collections::HashSet;

/// A tree of tasks' figures: a child of the engine with its threads and children (the
/// layout of `struct agg` in `bpf/sched.bpf.c`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agg {
    /// The pid of the engine's child at its top.
    pub root: u32,
    /// Tasks it had.
    pub tasks: u32,
    /// On-CPU time (the kernel's `se.sum_exec_runtime`), ns.
    pub run_ns: u64,
    /// Runnable but waiting (the kernel's `sched_info.run_delay`), ns.
    pub runnable_ns: u64,
    /// The lifetimes of its tasks that ended, ns.
    pub life_ns: u64,
    /// The creation times of its live tasks added up (wrapping), ns.
    pub open_start_sum: u64,
    /// Its live tasks.
    pub alive: i64,
    /// Involuntary switch-outs (nivcsw).
    pub involuntary: u64,
    /// Switch-outs to sleep (nvcsw less each task's last at exit).
    pub voluntary: u64,
    /// Involuntary switch-outs to another worker.
    pub by_worker: u64,
    /// ... to the engine.
    pub by_engine: u64,
    /// ... to a kernel thread or the idle task.
    pub by_kernel: u64,
    /// ... to any other task.
    pub by_other: u64,
    /// Wake-ups timed.
    pub wakeups: u64,
    /// The longest wake-up latency, ns.
    pub wake_max: u64,
    /// Migrations (the kernel's `se.nr_migrations`).
    pub migrations: u64,
    /// The CPUs it ran on, a bit each.
    pub cpus: [u64; 4],
}

/// One CPU's time (the first fields of `struct cpu_st`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuAcc {
    /// Its last switch timed, ns.
    pub last: u64,
    /// Time running a task other than the idle task, ns.
    pub busy: u64,
    /// Time idle, ns.
    pub idle: u64,
    /// 1 when the idle task has it since `last`.
    pub cur_idle: u32,
    /// 1 once a switch was seen on it.
    pub seen: u32,
}

/// A followed task's row (the layout of `struct task_st`): what the kernel does not count
/// for it, kept until its last switch.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskRow {
    /// Its tree's slot.
    pub slot: u32,
    /// Its tree's root.
    pub root: u32,
    /// Its tree's role, once known.
    pub role: u8,
    /// Its last switch-out (`STATE_*`).
    pub state: u8,
    /// Padding.
    pub pad: u16,
    /// Wake-ups timed.
    pub wakeups: u32,
    /// Unused (the pending wake-up is in the pid's entry).
    pub spare: u64,
    /// `nivcsw` at its last switch-out.
    pub nivcsw_seen: u64,
    /// Its longest wake-up latency, ns.
    pub wake_max: u64,
    /// CPUs 0-63 it ran on.
    pub cpus_lo: u64,
    /// Involuntary switch-outs to a worker.
    pub by_worker: u32,
    /// ... to the engine.
    pub by_engine: u32,
    /// ... to a kernel thread or the idle task.
    pub by_kernel: u32,
    /// ... to any other task.
    pub by_other: u32,
    /// When it was created, ns.
    pub start: u64,
    /// Its pid.
    pub pid: u32,
    /// 1 until its last switch (then its figures are in its slot).
    pub live: u32,
    /// CPUs 64-255 it ran on.
    pub cpus_hi: [u64; 3],
    /// Padding.
    pub pad2: [u64; 3],
}

/// What the kernel counted for a task still alive at the end (read from /proc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// `se.sum_exec_runtime`, ns.
    pub run_ns: u64,
    /// `sched_info.run_delay`, ns.
    pub runnable_ns: u64,
    /// Switch-outs to sleep.
    pub voluntary: u64,
    /// Involuntary switch-outs.
    pub involuntary: u64,
    /// `se.nr_migrations`.
    pub migrations: u64,
}

/// A task still alive when the cell ended: its row, and the kernel's counts if it could
/// still be read.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveTask {
    /// Its row.
    pub row: TaskRow,
    /// The kernel's counts for it.
    pub kernel: Option<KernelCounts>,
}

/// What the maps held after a cell.
#[derive(Debug, Clone, Default)]
pub struct Maps {
    /// Per slot.
    pub aggs: Vec<Agg>,
    /// Per slot, its wake-up latency buckets ([`hist`]).
    pub hists: Vec<Vec<u32>>,
    /// Involuntary switch-outs to a task whose role was not known then: (slot, the root
    /// of the tree of the task that took the CPU, count).
    pub unresolved: Vec<(u32, u32, u64)>,
    /// Per CPU (by number).
    pub cpus: Vec<(u32, CpuAcc)>,
    /// Wake-up latencies not yet counted into `hists`: (slot << 11 | bucket).
    pub staged: Vec<u32>,
    /// Followed tasks alive at the end: their figures are not in their slots yet.
    pub live: Vec<LiveTask>,
    /// Followed tasks the programs had no row for.
    pub lost_tasks: u64,
}

impl Maps {
    /// The slots with everything added in: the staged wake-ups and the live tasks.
    fn folded(&self) -> (Vec<Agg>, Vec<Vec<u32>>) {
        let (mut aggs, mut hists) = (self.aggs.clone(), self.hists.clone());
        for &e in &self.staged {
            let (slot, b) = ((e >> 11) as usize, (e & 2047) as usize);
            if let Some(n) = hists.get_mut(slot).and_then(|h| h.get_mut(b)) {
                *n += 1;
            }
        }
        for t in &self.live {
            let (r, Some(a)) = (&t.row, aggs.get_mut(t.row.slot as usize)) else { continue };
            a.by_worker += r.by_worker as u64;
            a.by_engine += r.by_engine as u64;
            a.by_kernel += r.by_kernel as u64;
            a.by_other += r.by_other as u64;
            a.wakeups += r.wakeups as u64;
            a.wake_max = a.wake_max.max(r.wake_max);
            a.cpus[0] |= r.cpus_lo;
            for i in 0..3 {
                a.cpus[i + 1] |= r.cpus_hi[i];
            }
            if let Some(k) = t.kernel {
                a.run_ns += k.run_ns;
                a.runnable_ns += k.runnable_ns;
                a.voluntary += k.voluntary;
                a.involuntary += k.involuntary;
                a.migrations += k.migrations;
            }
        }
        (aggs, hists)
    }
}

/// The figures of the workers `workers` (pids, in the order wanted) over the window
/// `start_ns..end_ns` (CLOCK_MONOTONIC); trees that are not workers are the engine's.
pub fn cell_trace(maps: &Maps, workers: &[i32], start_ns: u64, end_ns: u64) -> CellTrace {
    let (aggs, hists) = maps.folded();
    let folded = Maps { aggs, hists, ..maps.clone() };
    let maps = &folded;
    let worker_set: HashSet<u32> = workers.iter().map(|&p| p as u32).collect();
    let workers = workers
        .iter()
        .map(|&pid| match maps.aggs.iter().position(|a| a.root == pid as u32) {
            Some(slot) => worker(maps, slot, pid, &worker_set, end_ns),
            None => WorkerTrace { pid, ..Default::default() },
        })
        .collect();
    let cpus = maps
        .cpus
        .iter()
        .filter(|(_, c)| c.seen != 0)
        .map(|&(cpu, c)| {
            let open = end_ns.saturating_sub(c.last);
            let (busy, idle) =
                if c.cur_idle != 0 { (c.busy, c.idle + open) } else { (c.busy + open, c.idle) };
            CpuTrace { cpu, busy_s: secs(busy), idle_s: secs(idle) }
        })
        .collect();
    CellTrace {
        workers,
        cpus,
        span_s: secs(end_ns.saturating_sub(start_ns)),
        lost_events: maps.lost_tasks,
        ..Default::default()
    }
}

/// One worker's figures from its slot.
fn worker(maps: &Maps, slot: usize, pid: i32, workers: &HashSet<u32>, end_ns: u64) -> WorkerTrace {
    let a = &maps.aggs[slot];
    let mut by = PreemptedBy {
        worker: a.by_worker,
        engine: a.by_engine,
        kernel: a.by_kernel,
        other: a.by_other,
    };
    for &(s, root, n) in maps.unresolved.iter().filter(|(s, _, _)| *s as usize == slot) {
        debug_assert_eq!(s as usize, slot);
        if workers.contains(&root) {
            by.worker += n;
        } else {
            by.engine += n;
        }
    }
    // Lifetimes: those ended, and those still going counted to the window's end.
    let life = a
        .life_ns
        .wrapping_add((a.alive.max(0) as u64).wrapping_mul(end_ns))
        .wrapping_sub(if a.alive > 0 { a.open_start_sum } else { 0 });
    let life = if life > 1 << 62 { 0 } else { life };
    let blocked = life.saturating_sub(a.run_ns + a.runnable_ns);
    let h = maps.hists.get(slot).and_then(|c| hist::to_hdr(c));
    // A bucket's middle may lie past the largest value in it, kept exactly.
    let us = |q: f64| h.as_ref().map(|h| h.value_at_quantile(q).min(a.wake_max) as f64 / 1e3);
    let cpus = (0..256u32).filter(|&c| a.cpus[(c / 64) as usize] & (1 << (c % 64)) != 0).collect();
    WorkerTrace {
        pid,
        run_s: secs(a.run_ns),
        runnable_s: secs(a.runnable_ns),
        blocked_s: secs(blocked),
        untraced_s: 0.0,
        involuntary: a.involuntary,
        voluntary: a.voluntary,
        preempted_by: by,
        wakeups: a.wakeups,
        wakeup_p50_us: us(0.5),
        wakeup_p99_us: us(0.99),
        wakeup_max_us: h.as_ref().map(|_| a.wake_max as f64 / 1e3),
        wakeup_hist: h.as_ref().map(schedlab_model::hist::encode),
        migrations: a.migrations,
        cpus,
        tasks: a.tasks,
        states: None,
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests;
