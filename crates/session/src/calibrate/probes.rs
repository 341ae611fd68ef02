//! The in-process probes of `schedlab calibrate`: threads of this process, pinned to one CPU
//! at SCHED_FIFO, that time what the kernel costs a real-time task there. Each returns a
//! distribution ([`LatencyPercentiles`], ns), never one number.

use schedlab_periodic::LatencyPercentiles;
use schedlab_periodic::{new_latency_histogram, now_ns, sleep_until, thread_cpu_ns};
use schedlab_spec::{Class, Policy};
use std::io::{pipe, PipeReader, PipeWriter, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The FIFO priority of the probes' measured threads: below schedlab's dispatchers (98) and
/// engine (99), above any worker of a real-time cell (at most 90 by default).
pub const PROBE_PRIORITY: u32 = 95;
/// The priority of a probe's spinning thread where it must yield to the measured one.
const SPIN_PRIORITY: u32 = 94;
/// A gap in a spinning thread's clock reads longer than this is an interruption, ns.
const GAP_NS: u64 = 1_000;
/// The release probes' period, ns (cyclictest's default interval).
const PERIOD_NS: u64 = 1_000_000;
/// The longest a probe spins at once: inside RT throttling's 950 ms a second, so the
/// throttle itself never shows as a gap.
pub const SPIN_ROUND: Duration = Duration::from_millis(800);

/// Pins the calling thread to `cpu` at SCHED_FIFO `priority`: the policy first, so that a
/// probe already spinning on `cpu` at a lower priority cannot keep it from finishing.
fn become_rt(cpu: u32, priority: u32) -> std::io::Result<()> {
    let p = Policy { class: Class::Fifo, priority, nice: 0, deadline: None, slice_ns: None };
    schedlab_sys::sched::apply(0, &p, false)?;
    schedlab_sys::cpus::set_affinity(0, &[cpu])
}

/// What a probe thread returned; its panic as an error.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, std::io::Result<T>>) -> std::io::Result<T> {
    h.join().unwrap_or_else(|_| Err(std::io::Error::other("a probe thread panicked")))
}

/// Runs `f` in a thread pinned to `cpu` at FIFO `priority` and returns what it returns.
fn on_cpu<T: Send>(cpu: u32, priority: u32, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|s| joined(s.spawn(|| become_rt(cpu, priority).map(|()| f()))))
}

/// Release latency: a FIFO thread that sleeps until each 1 ms boundary (clock_nanosleep,
/// TIMER_ABSTIME, as cyclictest and the periodic job loop do) and notes how late it runs:
/// the timer's interrupt, the wake-up, the scheduler and the switch to it, together.
pub fn release_latency(cpu: u32, for_: Duration) -> std::io::Result<LatencyPercentiles> {
    on_cpu(cpu, PROBE_PRIORITY, || {
        let mut h = new_latency_histogram();
        let n = (for_.as_nanos() as u64 / PERIOD_NS).max(1);
        let mut next = now_ns() + PERIOD_NS;
        for _ in 0..n {
            sleep_until(next);
            h.saturating_record(now_ns().saturating_sub(next).max(1));
            next += PERIOD_NS;
        }
        LatencyPercentiles::of(&h, 0)
    })
}

/// Writes a byte to `w` and reads one from `r`.
fn hop(w: &PipeWriter, r: &PipeReader) -> std::io::Result<()> {
    let mut b = [0u8; 1];
    (&*w).write_all(&b)?;
    (&*r).read_exact(&mut b)
}

/// Context switch: two FIFO threads on one CPU pass a byte back and forth over two pipes,
/// as `perf bench sched pipe` does. A round trip is two wake-ups, two calls of the
/// scheduler and two switches plus four pipe calls; the calls alone (one thread writing and
/// reading its own pipe, median of `rounds`) are taken off, and half the rest of each round
/// trip is one switch's cost: wake-up, scheduling and the switch itself.
pub fn context_switch(cpu: u32, rounds: u32) -> std::io::Result<LatencyPercentiles> {
    let (a_r, a_w) = pipe()?;
    let (b_r, b_w) = pipe()?;
    let calls = on_cpu(cpu, PROBE_PRIORITY, || {
        let mut h = new_latency_histogram();
        for _ in 0..rounds.min(10_000) {
            let t0 = now_ns();
            hop(&a_w, &a_r)?;
            h.saturating_record((now_ns() - t0).max(1));
        }
        Ok::<_, std::io::Error>(h.value_at_quantile(0.5))
    })??;
    let partner = AtomicBool::new(false);
    std::thread::scope(|s| {
        let echo = s.spawn(|| {
            become_rt(cpu, PROBE_PRIORITY)?;
            partner.store(true, Ordering::Release);
            let mut b = [0u8; 1];
            for _ in 0..rounds {
                (&a_r).read_exact(&mut b)?;
                (&b_w).write_all(&b)?;
            }
            Ok(())
        });
        let timed = s.spawn(|| {
            become_rt(cpu, PROBE_PRIORITY)?;
            while !partner.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            let mut h = new_latency_histogram();
            for _ in 0..rounds {
                let t0 = now_ns();
                hop(&a_w, &b_r)?;
                let trip = now_ns() - t0;
                h.saturating_record((trip.saturating_sub(2 * calls) / 2).max(1));
            }
            Ok::<_, std::io::Error>(LatencyPercentiles::of(&h, 0))
        });
        let out = joined(timed);
        if out.is_err() {
            // The partner waits for rounds that will not come: a byte per round it still
            // expects ends them (it reads one and writes one back to a pipe none reads).
            for _ in 0..rounds {
                if (&a_w).write_all(&[0]).is_err() {
                    break;
                }
            }
        }
        joined(echo)?;
        out
    })
}

/// The interruptions a FIFO thread spinning on `cpu` sees.
#[derive(Debug, Clone, Default)]
pub struct Gaps {
    /// Each gap: (start, length), ns.
    pub gaps: Vec<(u64, u64)>,
    /// How long it spun, ns.
    pub spun_ns: u64,
}

fn spin(until: u64, stop: &AtomicBool) -> Gaps {
    let mut gaps = Vec::with_capacity(((until - now_ns()) / 100_000) as usize + 16);
    let t0 = now_ns();
    let mut prev = t0;
    while prev < until && !stop.load(Ordering::Relaxed) {
        let t = now_ns();
        if t - prev > GAP_NS && gaps.len() < gaps.capacity() {
            gaps.push((prev, t - prev));
        }
        prev = t;
    }
    Gaps { gaps, spun_ns: prev - t0 }
}

/// Tick: a FIFO thread spins on `cpu` reading the clock, `rounds` times
/// [`SPIN_ROUND`]; a read that comes more than 1 µs after the one before was interrupted.
/// The lengths are the interrupts' costs (the tick's, and whatever else interrupts a CPU
/// with nothing else to run: IPIs, a hypervisor's preemption), and the mean distance between
/// them is how often they come, ns (None without any).
pub fn ticks(cpu: u32, rounds: u32) -> std::io::Result<(LatencyPercentiles, Option<u64>)> {
    let stop = AtomicBool::new(false);
    let mut h = new_latency_histogram();
    let (mut spun, mut n) = (0u64, 0u64);
    for _ in 0..rounds {
        let g =
            on_cpu(cpu, SPIN_PRIORITY, || spin(now_ns() + SPIN_ROUND.as_nanos() as u64, &stop))?;
        for &(_, len) in &g.gaps {
            h.saturating_record(len);
        }
        spun += g.spun_ns;
        n += g.gaps.len() as u64;
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok((LatencyPercentiles::of(&h, 0), (n > 0).then(|| spun / n)))
}

/// A gap at least this long is an interruption when the accounting probe compares clocks,
/// ns: a spin round there holds a system call (CLOCK_THREAD_CPUTIME_ID has no vDSO path).
const ACCOUNTING_GAP_NS: u64 = 4_000;

/// Whether the kernel counts an interrupt's time in the CPU time of the task it interrupts
/// (a kernel without IRQ time accounting does): a FIFO thread spins on `cpu` for `for_`
/// reading CLOCK_MONOTONIC, then its own CLOCK_THREAD_CPUTIME_ID. At each gap of 4 µs or
/// more between two monotonic reads (an interruption), its CPU time from the read before
/// the gap's start to the read after its end either holds the gap (counted) or not (the
/// kernel kept the interrupt's time apart, or a hypervisor took the CPU and steal time is
/// accounted). (gaps counted, gaps).
pub fn interrupt_accounting(cpu: u32, for_: Duration) -> std::io::Result<(u64, u64)> {
    on_cpu(cpu, SPIN_PRIORITY, || {
        let until = now_ns() + for_.as_nanos() as u64;
        let (mut counted, mut gaps) = (0u64, 0u64);
        // (monotonic, thread CPU time) of the last two rounds.
        let mut before = (now_ns(), thread_cpu_ns());
        let mut last = (now_ns(), thread_cpu_ns());
        while last.0 < until {
            let now = (now_ns(), thread_cpu_ns());
            let gap = now.0 - last.0;
            if gap >= ACCOUNTING_GAP_NS {
                gaps += 1;
                // before.1 was read before last.0, now.1 after now.0: the CPU time between
                // them spans the whole gap.
                if 2 * (now.1 - before.1) >= gap {
                    counted += 1;
                }
            }
            (before, last) = (last, now);
        }
        (counted, gaps)
    })
}

/// Release: a thread spinning on `cpu` at FIFO 94 while a FIFO 95 thread there is released
/// every 1 ms (and does nothing but note when it ran, and sleep again). The gap each
/// release makes in the spinning is the release's interrupt, the switch to the released
/// thread and back, and its few instructions; less `switch` (one switch's cost, twice), it is
/// the cost of the release itself.
pub fn release(cpu: u32, rounds: u32, switch: u64) -> std::io::Result<LatencyPercentiles> {
    let mut h = new_latency_histogram();
    for _ in 0..rounds {
        for v in release_round(cpu, switch)? {
            h.saturating_record(v);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(LatencyPercentiles::of(&h, 0))
}

/// One round of [`release`]: each release's cost, ns.
fn release_round(cpu: u32, switch: u64) -> std::io::Result<Vec<u64>> {
    let stop = AtomicBool::new(false);
    let n = (SPIN_ROUND.as_nanos() as u64 / PERIOD_NS - 30) as usize;
    let start = now_ns() + 20_000_000;
    let until = start + n as u64 * PERIOD_NS + 2 * PERIOD_NS;
    let (spun, woke) = std::thread::scope(|s| {
        let released = s.spawn(|| {
            become_rt(cpu, PROBE_PRIORITY)?;
            let mut woke = Vec::with_capacity(n);
            for k in 0..n as u64 {
                sleep_until(start + k * PERIOD_NS);
                woke.push(now_ns());
            }
            Ok::<_, std::io::Error>(woke)
        });
        let spinner = s.spawn(|| become_rt(cpu, SPIN_PRIORITY).map(|()| spin(until, &stop)));
        let woke = joined(released);
        if woke.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let spun = joined(spinner);
        (spun, woke)
    });
    let (spun, woke) = (spun?, woke?);
    Ok(release_costs(&spun.gaps, &woke, switch))
}

/// Each gap that holds exactly one of the wake-ups `woke` (both in time order): its length
/// less two switches. A gap holding several wake-ups was something else taking the CPU
/// (the fair server, throttling, a hypervisor) while releases came due.
fn release_costs(gaps: &[(u64, u64)], woke: &[u64], switch: u64) -> Vec<u64> {
    let mut held = vec![0u32; gaps.len()];
    let mut i = 0;
    for &w in woke {
        while i < gaps.len() && gaps[i].0 + gaps[i].1 < w {
            i += 1;
        }
        if gaps.get(i).is_some_and(|&(at, _)| at <= w) {
            held[i] += 1;
        }
    }
    gaps.iter()
        .zip(held)
        .filter(|&(_, n)| n == 1)
        .map(|(&(_, len), _)| len.saturating_sub(2 * switch).max(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_a_gap_with_one_wake_up() {
        let gaps = [(100, 10), (200, 50), (400, 5)];
        // 205 alone in the second gap; 101 and 105 both in the first; 300 in none.
        let costs = release_costs(&gaps, &[101, 105, 205, 300], 20);
        assert_eq!(costs, [10]);
        assert_eq!(release_costs(&gaps, &[402], 20), [1]);
    }

    #[test]
    fn a_spin_notes_each_gap_once_with_its_start() {
        let stop = AtomicBool::new(false);
        let until = now_ns() + 20_000_000;
        let g = spin(until, &stop);
        // It spun until `until`, from a moment after it was set.
        assert!(
            now_ns() >= until && (15_000_000..5_000_000_000).contains(&g.spun_ns),
            "{}",
            g.spun_ns
        );
        assert!(g.gaps.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "{:?}", g.gaps);
        assert!(g.gaps.iter().all(|&(_, len)| len > GAP_NS));
    }
}
