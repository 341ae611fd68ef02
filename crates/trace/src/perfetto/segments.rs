//! A simulated schedule as kernel events: each run segment's start and end become
//! sched_switch events on its CPU, so a simulation opens in Perfetto as a measured cell
//! does. The states a switch-out reports are the kernel's (4.14 and later: `TASK_REPORT`
//! with the preempted bit at 0x100), so the timeline reads them alike.

use crate::decode::{Comm, Event, EventKind, Switch};

/// `prev_state` of a task switched out still runnable (R+).
const PREEMPTED: i64 = 0x100;
/// Sleeping until woken (S): a periodic task between jobs.
const SLEEPING: i64 = 0x1;
/// Uninterruptible (D): waiting for its I/O.
const BLOCKED: i64 = 0x2;
/// Exited, not yet reaped (Z).
const ZOMBIE: i64 = 0x20;
/// The kernel priority of an ordinary task, written for every simulated one.
const PRIO: i32 = 120;

/// Why a segment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// The task was taken off its CPU still runnable (preempted, quantum or budget used).
    Preempted,
    /// It finished a job and sleeps until the next.
    Slept,
    /// It blocked on I/O.
    Blocked,
    /// It finished its work.
    Exited,
    /// The schedule ended with it on the CPU.
    Running,
}

/// One stretch a task ran on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The CPU.
    pub cpu: u32,
    /// The task.
    pub pid: i32,
    /// When it started, ns.
    pub start_ns: u64,
    /// When it stopped, ns.
    pub end_ns: u64,
    /// Why.
    pub left: Left,
}

/// The sched_switch (and sched_process_exit) events of `segments`, in time order. A CPU
/// idles between two segments more than `join_ns` apart; closer ones (the simulator's
/// switch and migration costs) switch directly at the first one's end, and the same task
/// again within `join_ns` is no switch at all. `comm` names a task (pid 0 is the idle task).
pub fn switches(segments: &[Segment], join_ns: u64, comm: impl Fn(i32) -> Comm) -> Vec<Event> {
    let mut by_cpu: Vec<&Segment> = segments.iter().collect();
    by_cpu.sort_by_key(|s| (s.cpu, s.start_ns));
    let mut out = Vec::with_capacity(segments.len() * 2);
    let switch = |ts: u64, cpu: u32, prev: i32, state: i64, next: i32| {
        Switch::new((prev, comm(prev)), state, (next, comm(next)), PRIO).at(ts, cpu)
    };
    // A task that exited leaves through sched_process_exit before its last switch.
    let exit = |out: &mut Vec<Event>, p: &Segment, cpu: u32| {
        if p.left == Left::Exited {
            let kind = EventKind::Exit { pid: p.pid };
            out.push(Event { ts: p.end_ns, cpu, current: p.pid, kind });
        }
    };
    let state = |l: Left| match l {
        Left::Preempted | Left::Running => PREEMPTED,
        Left::Slept => SLEEPING,
        Left::Blocked => BLOCKED,
        Left::Exited => ZOMBIE,
    };
    let mut i = 0;
    while i < by_cpu.len() {
        let cpu = by_cpu[i].cpu;
        let mut prev: Option<&Segment> = None;
        while i < by_cpu.len() && by_cpu[i].cpu == cpu {
            let s = by_cpu[i];
            i += 1;
            match prev {
                None => out.push(switch(s.start_ns, cpu, 0, 0, s.pid)),
                Some(p)
                    if p.pid == s.pid
                        && s.start_ns.saturating_sub(p.end_ns) <= join_ns
                        && p.left == Left::Preempted => {}
                Some(p) => {
                    exit(&mut out, p, cpu);
                    if s.start_ns.saturating_sub(p.end_ns) <= join_ns {
                        out.push(switch(p.end_ns, cpu, p.pid, state(p.left), s.pid));
                    } else {
                        out.push(switch(p.end_ns, cpu, p.pid, state(p.left), 0));
                        out.push(switch(s.start_ns, cpu, 0, 0, s.pid));
                    }
                }
            }
            prev = Some(s);
        }
        if let Some(p) = prev.filter(|p| p.left != Left::Running) {
            exit(&mut out, p, cpu);
            out.push(switch(p.end_ns, cpu, p.pid, state(p.left), 0));
        }
    }
    out.sort_by_key(|e| e.ts);
    out
}
