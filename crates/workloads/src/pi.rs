//! Monte-Carlo pi: the seed studies' CPU-bound load, and the mixed load that
//! interleaves it with synchronous writes.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::io::{self, Write};

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

/// Pure-CPU Monte-Carlo pi over `iterations` points.
pub fn pi(iterations: u64, seed: u64, index: u64) -> PiOutcome {
    let mut r = rng(seed, index);
    let inside = draw(&mut r, iterations);
    PiOutcome { iterations, inside, estimate: 4.0 * inside as f64 / iterations.max(1) as f64, writes: 0 }
}

/// Pi that writes its counters and estimate to `out` (opened O_SYNC by the caller)
/// every `write_every` iterations, so each write blocks until it reaches the device.
pub fn mixed(iterations: u64, write_every: u64, seed: u64, index: u64, out: &mut std::fs::File) -> io::Result<PiOutcome> {
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
    }
    Ok(PiOutcome { iterations, inside, estimate: 4.0 * inside as f64 / iterations.max(1) as f64, writes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_converges_to_pi() {
        let o = pi(2_000_000, 1, 0);
        assert!((o.estimate - std::f64::consts::PI).abs() < 0.01, "{}", o.estimate);
    }

    #[test]
    fn reproducible_per_worker_and_different_across_workers() {
        assert_eq!(pi(100_000, 7, 3), pi(100_000, 7, 3));
        assert_ne!(pi(100_000, 7, 3).inside, pi(100_000, 7, 4).inside);
    }

    #[test]
    fn mixed_writes_once_per_block_of_iterations() {
        let path = std::env::temp_dir().join(format!("schedlab-mixed-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).unwrap();
        let o = mixed(10_500, 1000, 1, 0, &mut f).unwrap();
        assert_eq!(o.writes, 10);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 10);
        // Same points as plain pi: the writes do not change the computation.
        assert_eq!(o.inside, pi(10_500, 1, 0).inside);
        std::fs::remove_file(path).unwrap();
    }
}
