//! Monte-Carlo pi: the seed studies' CPU-bound load, and the mixed load that
//! interleaves it with synchronous writes.

use crate::Probe;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::{self, Write};
use std::ops::ControlFlow;

/// Iterations between probe ticks: ~0.2 ms of work, invisible next to the work itself.
const CHUNK: u64 = 1 << 16;

/// What a pi run found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiOutcome {
    /// Points drawn.
    pub iterations: u64,
    /// Points inside the quarter circle.
    pub inside: u64,
    /// 4 * inside / iterations.
    pub estimate: f64,
    /// Synchronous writes made (mixed only).
    pub writes: u64,
}

/// A per-worker RNG: reproducible from (seed, worker index), a different stream per worker.
/// seed_from_u64 runs the value through SplitMix64, so neighbouring indices give unrelated states.
fn rng(seed: u64, index: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Draws `n` points and counts those inside the unit quarter circle.
#[inline]
fn draw(r: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    const SCALE: f64 = 1.0 / (1u64 << 32) as f64;
    let mut inside = 0u64;
    for _ in 0..n {
        // One 64-bit draw gives both coordinates at 32-bit resolution.
        let v = r.next_u64();
        let x = (v >> 32) as f64 * SCALE;
        let y = (v & 0xffff_ffff) as f64 * SCALE;
        inside += (x * x + y * y <= 1.0) as u64;
    }
    inside
}

/// Pure-CPU Monte-Carlo pi over `iterations` points; stops early if the probe says so
/// (then `iterations` is the number actually drawn).
pub fn pi(iterations: u64, seed: u64, index: u64, probe: &mut dyn Probe) -> PiOutcome {
    let mut r = rng(seed, index);
    let (mut done, mut inside) = (0u64, 0u64);
    while done < iterations {
        let n = CHUNK.min(iterations - done);
        inside += draw(&mut r, n);
        done += n;
        if probe.tick() == ControlFlow::Break(()) {
            break;
        }
    }
    PiOutcome {
        iterations: done,
        inside,
        estimate: 4.0 * inside as f64 / done.max(1) as f64,
        writes: 0,
    }
}

/// Pi that writes its counters and estimate to `out` (opened O_SYNC by the caller)
/// every `write_every` iterations, so each write blocks until it reaches the device.
pub fn mixed(
    iterations: u64,
    write_every: u64,
    seed: u64,
    index: u64,
    out: &mut std::fs::File,
    probe: &mut dyn Probe,
) -> io::Result<PiOutcome> {
    let mut r = rng(seed, index);
    let every = write_every.max(1);
    let (mut done, mut inside, mut writes) = (0u64, 0u64, 0u64);
    let mut line = Vec::with_capacity(96);
    while done < iterations {
        let n = every.min(iterations - done);
        inside += draw(&mut r, n);
        done += n;
        if n == every {
            line.clear();
            writeln!(line, "{done} {inside} {:.9}", 4.0 * inside as f64 / done as f64)?;
            out.write_all(&line)?;
            writes += 1;
        }
        if probe.tick() == ControlFlow::Break(()) {
            break;
        }
    }
    Ok(PiOutcome {
        iterations: done,
        inside,
        estimate: 4.0 * inside as f64 / done.max(1) as f64,
        writes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_converges_to_pi() {
        let o = pi(2_000_000, 1, 0, &mut crate::NoProbe);
        assert!((o.estimate - std::f64::consts::PI).abs() < 0.01, "{}", o.estimate);
    }

    #[test]
    fn reproducible_per_worker_and_different_across_workers() {
        assert_eq!(pi(100_000, 7, 3, &mut crate::NoProbe), pi(100_000, 7, 3, &mut crate::NoProbe));
        assert_ne!(
            pi(100_000, 7, 3, &mut crate::NoProbe).inside,
            pi(100_000, 7, 4, &mut crate::NoProbe).inside
        );
    }

    #[test]
    fn mixed_writes_once_per_block_of_iterations() {
        let path = std::env::temp_dir().join(format!("schedlab-mixed-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).unwrap();
        let o = mixed(10_500, 1000, 1, 0, &mut f, &mut crate::NoProbe).unwrap();
        assert_eq!(o.writes, 10);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 10);
        // Same points as plain pi: the writes do not change the computation.
        assert_eq!(o.inside, pi(10_500, 1, 0, &mut crate::NoProbe).inside);
        std::fs::remove_file(path).unwrap();
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;
    use crate::{CpuSeen, Probe};

    struct StopAfter(u32, CpuSeen);
    impl Probe for StopAfter {
        fn tick(&mut self) -> ControlFlow<()> {
            self.1.note();
            self.0 -= 1;
            if self.0 == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }

    #[test]
    fn a_probe_can_stop_the_work_and_sees_a_cpu() {
        let mut p = StopAfter(3, CpuSeen::default());
        let o = pi(100 * CHUNK, 1, 0, &mut p);
        assert_eq!(o.iterations, 3 * CHUNK);
        assert!(!p.1.cpus().is_empty());
    }
}
