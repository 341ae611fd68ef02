//! sched_setattr for all six policies, nice, and the engine's own RT priority.

use schedlab_plan::{Class, Policy};
use std::io;

/// SCHED_* constants from <linux/sched.h>.
pub mod consts {
    /// SCHED_OTHER / SCHED_NORMAL.
    pub const SCHED_OTHER: u32 = 0;
    /// SCHED_FIFO.
    pub const SCHED_FIFO: u32 = 1;
    /// SCHED_RR.
    pub const SCHED_RR: u32 = 2;
    /// SCHED_BATCH.
    pub const SCHED_BATCH: u32 = 3;
    /// SCHED_IDLE.
    pub const SCHED_IDLE: u32 = 5;
    /// SCHED_DEADLINE.
    pub const SCHED_DEADLINE: u32 = 6;
    /// Children of this task start as SCHED_OTHER, nice 0.
    pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
}
use consts::*;

/// struct sched_attr, the VER0 layout (48 bytes) every 3.14+ kernel accepts.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// The kernel's policy number for a class.
pub fn policy_number(class: Class) -> u32 {
    match class {
        Class::Other => SCHED_OTHER,
        Class::Batch => SCHED_BATCH,
        Class::Idle => SCHED_IDLE,
        Class::Fifo => SCHED_FIFO,
        Class::Rr => SCHED_RR,
        Class::Deadline => SCHED_DEADLINE,
    }
}

/// The class name for a kernel policy number (as a worker reports what it runs under).
pub fn policy_name(num: i32) -> &'static str {
    match num as u32 {
        SCHED_OTHER => "other",
        SCHED_BATCH => "batch",
        SCHED_IDLE => "idle",
        SCHED_FIFO => "fifo",
        SCHED_RR => "rr",
        SCHED_DEADLINE => "deadline",
        _ => "unknown",
    }
}

fn sched_setattr(pid: i32, attr: &SchedAttr) -> io::Result<()> {
    // SAFETY: attr points to a valid, fully initialised sched_attr of the size it declares.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, pid, attr as *const SchedAttr, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Applies `p` to process `pid` (0 = this process). Nice is applied to every class so
/// it is recorded even where it has no effect (fifo, rr, deadline).
pub fn apply(pid: i32, p: &Policy, reset_on_fork: bool) -> io::Result<()> {
    let mut attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: policy_number(p.class),
        sched_flags: if reset_on_fork { SCHED_FLAG_RESET_ON_FORK } else { 0 },
        sched_nice: p.nice,
        sched_priority: if p.class.is_rt() { p.priority } else { 0 },
        ..Default::default()
    };
    if let Some(d) = p.deadline {
        attr.sched_runtime = d.runtime_ns;
        attr.sched_deadline = d.deadline_ns;
        attr.sched_period = d.period_ns;
    }
    sched_setattr(pid, &attr)?;
    if p.class.is_realtime() && p.nice != 0 {
        set_nice(pid, p.nice)?;
    }
    Ok(())
}

/// setpriority(PRIO_PROCESS, pid, nice).
pub fn set_nice(pid: i32, nice: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's policy number and nice value.
pub fn current() -> (i32, i32) {
    // SAFETY: plain syscalls; errno is cleared because getpriority may legitimately return -1.
    unsafe {
        let pol = libc::sched_getscheduler(0);
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        (pol, nice)
    }
}

/// The CPU the calling thread is running on.
pub fn current_cpu() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::sched_getcpu() }
}

/// The priority the engine supervises at: above every worker (workers stop at 98).
pub const ENGINE_PRIORITY: u32 = 99;

/// Raises this process to SCHED_FIFO at [`ENGINE_PRIORITY`] with reset-on-fork, so the
/// engine always preempts its workers while children it spawns start as SCHED_OTHER.
pub fn raise_engine() -> io::Result<()> {
    let p = Policy { class: Class::Fifo, priority: ENGINE_PRIORITY, nice: 0, deadline: None };
    apply(0, &p, true)
}

/// Puts this process back to SCHED_OTHER nice 0.
pub fn lower_engine() -> io::Result<()> {
    let p = Policy { class: Class::Other, priority: 0, nice: 0, deadline: None };
    apply(0, &p, false)
}
