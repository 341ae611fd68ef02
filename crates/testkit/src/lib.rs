//! Test support shared by schedlab's crates.
//!
//! Timing properties (a real-time task met its deadlines, a FIFO job slept until its release)
//! hold on a quiet machine and can be spoiled by one that is not: this project's VM has seen its
//! vCPUs held off for tens of milliseconds, and CI machines share their hosts. [`in_some_attempt`]
//! is the one rule every such test follows: repeat a failed attempt after a pause, saying why;
//! pass when one attempt holds; skip, saying so, when the hypervisor stole a real share of the CPU
//! in every failed attempt; fail otherwise (a bug fails every attempt on a quiet machine).

use schedlab_sys::procfs::{settle_writeback, Stat};
use schedlab_sys::Root;
use std::time::Duration;

/// Says that the running test is skipped, and why, where `cargo test` shows it.
///
/// libtest captures what `print!` and `eprint!` write (and shows it only for a failed test or
/// under `--nocapture`), so a skip printed with them passes as "ok" without a word. Writes to
/// the standard error handle itself are not captured: the line appears in the test run's
/// output, after the test's name, as `SKIPPED <test>: <why>`.
pub fn skip(why: impl std::fmt::Display) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// How a timing judgement ended when it did not fail.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// The property held in the attempt numbered here (1-based).
    Held(usize),
    /// Every attempt failed while the hypervisor stole at least this share (0 to 1) of the
    /// CPU time: nothing can be judged on this machine at this time.
    Spoiled(f64),
}

/// Runs `attempt` (given its 1-based number) up to `attempts` times until it returns `Ok`.
///
/// Between failed attempts it waits 2 s and for the page cache's writeback to settle, so a
/// passing disturbance can pass. Each failure is printed with the share of CPU time the
/// hypervisor stole during it. If every attempt failed and at least
/// [`STEAL_SPOILS_TIMING`] was stolen in each, the judgement is [`Judged::Spoiled`] (printed as
/// a skip); otherwise it panics with every attempt's reason. An attempt that panics (a property
/// that must hold every time) ends the judgement at once: its panic goes on, after a line
/// with the share stolen during it.
#[track_caller]
pub fn in_some_attempt<E: std::fmt::Display>(
    test: &str,
    attempts: usize,
    attempt: impl FnMut(usize) -> Result<(), E>,
) -> Judged {
    judge(test, attempts, Duration::from_secs(2), StealMeter::start, attempt)
}

/// [`in_some_attempt`] with the pause and the steal meter as parameters (for its own tests).
#[track_caller]
fn judge<M: Meter, E: std::fmt::Display>(
    test: &str,
    attempts: usize,
    pause: Duration,
    meter: impl Fn() -> M,
    mut attempt: impl FnMut(usize) -> Result<(), E>,
) -> Judged {
    assert!(attempts > 0, "{test}: at least one attempt");
    let mut failures = Vec::new();
    let mut least_stolen = f64::INFINITY;
    for n in 1..=attempts {
        let m = meter();
        let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| attempt(n)));
        let stolen = m.share();
        let verdict = verdict.unwrap_or_else(|payload| {
            // A property that must hold in every attempt failed: no retry, but say what the host
            // did meanwhile, so a structural failure on a starved machine can be told apart.
            eprintln!(
                "{test}: attempt {n} of {attempts} panicked ({:.1}% of the CPU time stolen)",
                stolen * 100.0
            );
            std::panic::resume_unwind(payload)
        });
        match verdict {
            Ok(()) => return Judged::Held(n),
            Err(why) => {
                eprintln!("{test}: attempt {n} of {attempts} failed ({:.1}% of the CPU time stolen): {why}", stolen * 100.0);
                failures.push(why.to_string());
                least_stolen = least_stolen.min(stolen);
                if n < attempts {
                    std::thread::sleep(pause);
                    settle_writeback(Duration::from_secs(20));
                }
            }
        }
    }
    if least_stolen > STEAL_SPOILS_TIMING {
        skip(format!(
            "{test}: the hypervisor stole at least {:.1}% of the CPU time in every attempt: {failures:?}",
            least_stolen * 100.0
        ));
        return Judged::Spoiled(least_stolen);
    }
    panic!("{test}: failed in all {attempts} attempts: {failures:?}");
}

/// A stolen share of the machine's CPU time above which a timing result says more about the
/// host than about the scheduler under test (at 1% of two CPUs, 200 ms of a 10 s run).
pub const STEAL_SPOILS_TIMING: f64 = 0.01;

/// This thread's CPU time, seconds: what a cost measured on a shared machine should be timed
/// in, since wall time would count the others' work too.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Measures how much of the machine's CPU time a hypervisor stole over an interval (the
/// "steal" of /proc/stat): it tells a scheduling result from a virtual machine whose vCPUs
/// were not running at all.
#[derive(Debug, Clone, Copy)]
pub struct StealMeter {
    steal: u64,
    at: std::time::Instant,
}

impl StealMeter {
    /// Starts measuring now.
    pub fn start() -> StealMeter {
        StealMeter {
            steal: Stat::read(&Root::default()).map_or(0, |s| s.steal),
            at: std::time::Instant::now(),
        }
    }

    /// The stolen share (0 to 1) of all online CPUs' time since [`StealMeter::start`].
    pub fn share(&self) -> f64 {
        let now = Stat::read(&Root::default()).map_or(self.steal, |s| s.steal);
        // SAFETY: sysconf has no failure mode that matters here (-1 is handled).
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let cpus = schedlab_sys::cpus::online(&Root::default()).len().max(1) as f64;
        let wall = self.at.elapsed().as_secs_f64() * cpus;
        if wall <= 0.0 {
            return 0.0;
        }
        (now.saturating_sub(self.steal) as f64 / hz / wall).min(1.0)
    }
}

/// Something that tells the stolen share since it was made.
trait Meter {
    fn share(&self) -> f64;
}

impl Meter for StealMeter {
    fn share(&self) -> f64 {
        StealMeter::share(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Fixed(f64);

    impl Meter for Fixed {
        fn share(&self) -> f64 {
            self.0
        }
    }

    #[test]
    fn the_first_attempt_that_holds_ends_the_judgement() {
        let calls = Cell::new(0);
        let judged = judge(
            "t",
            4,
            Duration::ZERO,
            || Fixed(0.0),
            |n| {
                calls.set(calls.get() + 1);
                if n < 3 {
                    Err(format!("attempt {n}"))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!((judged, calls.get()), (Judged::Held(3), 3));
    }

    #[test]
    #[should_panic(expected = "failed in all 2 attempts: [\"a\", \"b\"]")]
    fn a_property_that_never_holds_on_a_quiet_machine_fails() {
        let why = ["a", "b"];
        judge("t", 2, Duration::ZERO, || Fixed(0.0), |n| Err(why[n - 1].to_string()));
    }

    #[test]
    fn steal_in_every_failed_attempt_spoils_the_judgement() {
        let judged = judge("t", 3, Duration::ZERO, || Fixed(0.05), |_| Err("late"));
        assert_eq!(judged, Judged::Spoiled(0.05));
    }

    #[test]
    #[should_panic(expected = "failed in all 3 attempts")]
    fn one_quiet_failed_attempt_is_enough_to_fail() {
        let stolen = [0.2, 0.0, 0.3];
        let next = Cell::new(0);
        judge(
            "t",
            3,
            Duration::ZERO,
            || {
                let s = stolen[next.get()];
                next.set(next.get() + 1);
                Fixed(s)
            },
            |_| Err("late"),
        );
    }

    #[test]
    fn a_panicking_attempt_is_not_retried_and_its_panic_goes_on() {
        let calls = Cell::new(0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            judge(
                "t",
                3,
                Duration::ZERO,
                || Fixed(0.5),
                |_| -> Result<(), String> {
                    calls.set(calls.get() + 1);
                    panic!("structure broke")
                },
            )
        }));
        let payload = caught.expect_err("the panic reaches the test");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"structure broke"));
        assert_eq!(calls.get(), 1, "not retried, not skipped for the steal");
    }

    #[test]
    fn the_real_meter_reads_this_machine() {
        let judged = in_some_attempt("t", 1, |_| Ok::<(), String>(()));
        assert_eq!(judged, Judged::Held(1));
        let share = StealMeter::start().share();
        assert!((0.0..=1.0).contains(&share), "{share}");
    }
}
