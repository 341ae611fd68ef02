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
    let slice = p.slice_ns.filter(|_| p.class.is_fair());
    if let Some(ns) = slice {
        attr.sched_runtime = ns;
    }
    sched_setattr(pid, &attr)?;
    // A kernel before 6.12 takes the call and ignores the slice: read back what it keeps.
    if let Some(ns) = slice {
        let kept = slice_of(pid)?;
        if kept != ns {
            return Err(io::Error::other(format!(
                "asked for a {} us slice, the kernel keeps {} us",
                ns / 1000,
                kept / 1000
            )));
        }
    }
    if p.class.is_realtime() && p.nice != 0 {
        set_nice(pid, p.nice)?;
    }
    Ok(())
}

/// The slice EEVDF gives a fair-class task (`pid`, 0 = this thread), ns: what
/// sched_getattr reports as sched_runtime (Linux 6.12+; 0 on older kernels).
pub fn slice_of(pid: i32) -> io::Result<u64> {
    let mut attr = SchedAttr::default();
    // SAFETY: attr is a writable sched_attr of the size passed; flags must be 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            pid,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    if r == 0 {
        Ok(attr.sched_runtime)
    } else {
        Err(io::Error::last_os_error())
    }
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
    apply(0, &Policy::rt(Class::Fifo, ENGINE_PRIORITY), true)
}

/// Puts this process back to SCHED_OTHER nice 0.
pub fn lower_engine() -> io::Result<()> {
    apply(0, &Policy::OTHER, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_fair_thread_keeps_the_slice_it_was_given_and_loses_it_on_reset() {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        if let Some(why) = crate::env::custom_slice_refused(&release) {
            // Not eprintln!: libtest would hide it (see schedlab_testkit::skip).
            let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
            return;
        }
        // A thread of its own, so the test's other threads keep their settings.
        std::thread::spawn(|| {
            // SAFETY: plain syscall.
            let tid = unsafe { libc::gettid() };
            let base = slice_of(tid).unwrap();
            assert!(base > 0, "a 6.12+ kernel reports the base slice");
            let p = Policy { class: Class::Batch, slice_ns: Some(7_000_000), ..Policy::OTHER };
            apply(tid, &p, false).unwrap();
            assert_eq!(slice_of(tid).unwrap(), 7_000_000);
            assert_eq!(current().0 as u32, SCHED_BATCH);
            // Without a slice the kernel's base slice comes back.
            apply(tid, &Policy { class: Class::Other, slice_ns: None, ..p }, false).unwrap();
            assert_eq!(slice_of(tid).unwrap(), base);
        })
        .join()
        .unwrap();
    }
}
