//! Thin, allocation-free wrappers over the clocks and counters the job loop reads.

use std::io;

const NS_PER_S: u64 = 1_000_000_000;

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; both clocks used here always exist on Linux.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * NS_PER_S + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds: the time base of releases, starts and finishes.
#[inline]
pub fn now_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Sleeps until CLOCK_MONOTONIC reaches `abs_ns` (clock_nanosleep with TIMER_ABSTIME, as
/// cyclictest does), sleeping again on EINTR. Returns immediately if the time has passed.
#[inline]
pub fn sleep_until(abs_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (abs_ns / NS_PER_S) as libc::time_t,
        tv_nsec: (abs_ns % NS_PER_S) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            debug_assert_eq!(rc, 0);
            return;
        }
    }
}

/// The counters of getrusage(RUSAGE_THREAD) the loop reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches (preemptions).
    pub involuntary_switches: u64,
}

impl ThreadUsage {
    /// The calling thread's counters now.
    pub fn now() -> io::Result<ThreadUsage> {
        // SAFETY: rusage is plain old data; getrusage fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: ru is a valid, writable rusage.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ThreadUsage {
            minor_faults: ru.ru_minflt as u64,
            major_faults: ru.ru_majflt as u64,
            voluntary_switches: ru.ru_nvcsw as u64,
            involuntary_switches: ru.ru_nivcsw as u64,
        })
    }

    /// Counts from `earlier` to `self`.
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            voluntary_switches: self.voluntary_switches.saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_until_reaches_the_target() {
        let target = now_ns() + 2_000_000;
        sleep_until(target);
        assert!(now_ns() >= target);
        let before = now_ns();
        sleep_until(before - 1_000_000); // in the past: no sleep, no hang
        assert!(now_ns() >= before);
    }

    #[test]
    fn thread_cpu_time_advances_with_work_not_sleep() {
        let c0 = thread_cpu_ns();
        let mut x = 1u64;
        let t0 = now_ns();
        while now_ns() - t0 < 5_000_000 {
            x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(1));
        }
        let c1 = thread_cpu_ns();
        assert!(c1 > c0);
        sleep_until(now_ns() + 20_000_000);
        // Sleeping 20 ms costs far less than 20 ms of CPU.
        assert!(thread_cpu_ns() - c1 < 20_000_000);
    }

    #[test]
    fn thread_usage_counts_voluntary_switches() {
        let before = ThreadUsage::now().unwrap();
        for _ in 0..3 {
            sleep_until(now_ns() + 20_000_000);
        }
        let d = ThreadUsage::now().unwrap().since(&before);
        // Each 20 ms sleep blocks unless the thread was held up for over 20 ms before it.
        assert!(d.voluntary_switches >= 1, "{d:?}");
    }
}
