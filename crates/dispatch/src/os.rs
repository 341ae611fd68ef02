//! The system calls the dispatcher and its workers need, each wrapped once: clocks,
//! shared futexes, scheduling classes of other processes, affinity, memory locking,
//! per-thread page-fault counts and process liveness.

use schedlab_plan::{Class, Policy};
use schedlab_sys::sched;
use std::io;
use std::sync::atomic::AtomicU32;

pub(crate) use schedlab_sys::procfs::monotonic_ns;

/// CPU time consumed by the calling thread, in ns.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// How a futex wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FutexWake {
    /// Woken by a FUTEX_WAKE, or the word had already changed, or a signal.
    Woken,
    /// The timeout passed.
    TimedOut,
}

// The words live in a MAP_SHARED file mapping used by several processes, so the
// futex calls must not use FUTEX_PRIVATE_FLAG.
fn futex(
    word: &AtomicU32,
    op: libc::c_int,
    val: u32,
    ts: *const libc::timespec,
    val3: u32,
) -> libc::c_long {
    // SAFETY: word is a live, aligned u32 for the duration of the call; ts is null or valid.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, ts, std::ptr::null::<u32>(), val3)
    }
}

fn wait_result(r: libc::c_long) -> FutexWake {
    if r == 0 {
        return FutexWake::Woken;
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ETIMEDOUT) => FutexWake::TimedOut,
        _ => FutexWake::Woken,
    }
}

/// Sleeps while `word == expected`, at most `timeout_ns`.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout_ns: u64) -> FutexWake {
    let ts = timespec(timeout_ns);
    wait_result(futex(word, libc::FUTEX_WAIT, expected, &ts, 0))
}

/// Sleeps while `word == expected`, until the absolute CLOCK_MONOTONIC time `deadline_ns`.
///
/// FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout, so this is
/// clock_nanosleep(TIMER_ABSTIME) that a worker can also end early with a FUTEX_WAKE.
pub(crate) fn futex_wait_until(word: &AtomicU32, expected: u32, deadline_ns: u64) -> FutexWake {
    let ts = timespec(deadline_ns);
    wait_result(futex(
        word,
        libc::FUTEX_WAIT_BITSET,
        expected,
        &ts,
        libc::FUTEX_BITSET_MATCH_ANY as u32,
    ))
}

/// Wakes up to `n` waiters on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) {
    futex(word, libc::FUTEX_WAKE, n as u32, std::ptr::null(), 0);
}

/// Puts thread `pid` (0 = the calling thread) at SCHED_FIFO `priority`, with reset-on-fork
/// so anything it forks starts as an ordinary task.
pub(crate) fn set_fifo(pid: i32, priority: u32) -> io::Result<()> {
    sched::apply(
        pid,
        &Policy { class: Class::Fifo, priority, nice: 0, deadline: None, slice_ns: None },
        true,
    )
}

/// Puts thread `pid` (0 = the calling thread) at SCHED_OTHER, nice 0.
pub(crate) fn set_other(pid: i32) -> io::Result<()> {
    sched::apply(
        pid,
        &Policy { class: Class::Other, priority: 0, nice: 0, deadline: None, slice_ns: None },
        false,
    )
}

/// The scheduling policy number of thread `pid` (SCHED_FIFO = 1, ...).
pub fn scheduler_of(pid: i32) -> io::Result<i32> {
    // SAFETY: plain syscall.
    let r = unsafe { libc::sched_getscheduler(pid) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r & !(libc::SCHED_RESET_ON_FORK))
    }
}

/// Whether `policy` (from [`scheduler_of`]) is a real-time class.
pub fn is_rt_policy(policy: i32) -> bool {
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR || policy == 6
}

/// The calling thread's policy and RT priority, to restore later.
pub(crate) fn own_sched() -> (i32, i32) {
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscalls with a valid out-pointer.
    unsafe {
        let pol = libc::sched_getscheduler(0);
        libc::sched_getparam(0, &mut p);
        (pol & !libc::SCHED_RESET_ON_FORK, p.sched_priority)
    }
}

/// Restores what [`own_sched`] returned (best effort).
pub(crate) fn restore_own_sched((pol, prio): (i32, i32)) {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: plain syscall with a valid sched_param.
    unsafe { libc::sched_setscheduler(0, pol, &p) };
}

/// The calling thread's CPU affinity.
pub(crate) fn own_affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data and the size passed is its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }
}

/// Restores an affinity mask from [`own_affinity`] (best effort).
pub(crate) fn restore_affinity(set: &libc::cpu_set_t) {
    // SAFETY: set is a valid cpu_set_t of the size passed.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
}

/// Pins thread `pid` (0 = the calling thread) to one CPU.
pub(crate) fn pin(pid: i32, cpu: u32) -> io::Result<()> {
    schedlab_sys::cpus::set_affinity(pid, &[cpu])
}

/// The calling thread's timer slack, and a setter (RT threads want none).
pub(crate) fn timer_slack() -> libc::c_int {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) }
}

/// Sets the calling thread's timer slack in ns (1 is the smallest the kernel takes).
pub(crate) fn set_timer_slack(ns: libc::c_ulong) {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
}

/// Locks all current and future memory of this process; `Ok(false)` if it was already locked
/// (then the caller must not unlock it at the end).
pub(crate) fn lock_memory() -> io::Result<bool> {
    let locked_before = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmLck:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    if locked_before > 0 {
        return Ok(false);
    }
    // SAFETY: plain syscall.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    keep_heap();
    Ok(true)
}

/// Tells the allocator never to give freed heap back to the kernel, so a later allocation
/// never has to grow (and fault in) the heap again: the usual real-time recipe.
#[cfg(target_env = "gnu")]
fn keep_heap() {
    // SAFETY: mallopt only changes allocator tuning.
    unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) };
}

#[cfg(not(target_env = "gnu"))]
fn keep_heap() {}

/// Undoes [`lock_memory`].
pub(crate) fn unlock_memory() {
    // SAFETY: plain syscall.
    unsafe { libc::munlockall() };
}

/// Touches `bytes` of stack so the loop never faults one in.
#[inline(never)]
pub(crate) fn prefault_stack() {
    const BYTES: usize = 256 * 1024;
    let mut buf = [0u8; BYTES];
    for i in (0..BYTES).step_by(4096) {
        // SAFETY: i is in bounds; volatile keeps the writes.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 1) };
    }
    std::hint::black_box(&buf);
}

/// Minor and major page faults of the calling thread so far.
pub(crate) fn thread_faults() -> (u64, u64) {
    // SAFETY: rusage is plain data; RUSAGE_THREAD fills it for the calling thread.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        (ru.ru_minflt as u64, ru.ru_majflt as u64)
    }
}

/// This process's id.
pub(crate) fn getpid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::getpid() }
}

/// A process's start time (field 22 of /proc/PID/stat, in clock ticks since boot) and
/// whether it is still running (not a zombie); None if it does not exist.
pub(crate) fn process_start(pid: i32) -> Option<(u64, bool)> {
    schedlab_sys::procfs::process_start(pid)
}

/// Whether process `pid` that started at `start` (0 = unknown) is alive: it exists, is not
/// a zombie, and is not a later process that reused the pid.
pub(crate) fn process_alive(pid: i32, start: u64) -> bool {
    match process_start(pid) {
        Some((s, running)) => running && (start == 0 || s == start),
        None => false,
    }
}

/// Whether `err` means the process is gone.
pub(crate) fn is_gone(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::ESRCH)
}

/// Whether `dir` is on a memory file system (tmpfs or ramfs), where a MAP_SHARED mapping
/// is never written back, so writing it never faults.
pub(crate) fn is_memory_fs(dir: &std::path::Path) -> io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: c is a valid C string; st is plain data.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        const TMPFS_MAGIC: i64 = 0x0102_1994;
        const RAMFS_MAGIC: i64 = 0x8584_58f6;
        let t = st.f_type as i64;
        Ok(t == TMPFS_MAGIC || t == RAMFS_MAGIC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_pid_reuse_is_caught() {
        let (start, running) = process_start(getpid()).expect("own stat");
        assert!(running);
        assert!(process_alive(getpid(), start));
        assert!(process_alive(getpid(), 0));
        assert!(!process_alive(getpid(), start + 1));
        assert!(!process_alive(-1, 0));
    }

    #[test]
    fn futex_wait_times_out_and_returns_at_once_on_a_changed_word() {
        let w = AtomicU32::new(5);
        assert_eq!(futex_wait(&w, 5, 1_000_000), FutexWake::TimedOut);
        assert_eq!(futex_wait(&w, 4, 1_000_000_000), FutexWake::Woken);
        let t0 = monotonic_ns();
        assert_eq!(futex_wait_until(&w, 5, t0 + 2_000_000), FutexWake::TimedOut);
        assert!(monotonic_ns() >= t0 + 2_000_000);
    }

    #[test]
    fn dev_shm_is_a_memory_fs() {
        assert!(is_memory_fs(std::path::Path::new("/dev/shm")).unwrap());
    }
}
