//! A hook the work loops call between chunks: it records the CPUs the worker ran on (so
//! pinning is verified, not assumed) and can ask the loop to stop early (a background
//! worker told to stop).

use std::ops::ControlFlow;

/// Called by work loops every few microseconds of work.
pub trait Probe {
    /// Notes the current state; `Break` stops the work early.
    fn tick(&mut self) -> ControlFlow<()>;
}

/// A probe that never stops anything and records nothing.
pub struct NoProbe;

impl Probe for NoProbe {
    fn tick(&mut self) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// The set of CPUs seen, as a bitmask (CPU numbers up to 1023).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSeen([u64; 16]);

impl CpuSeen {
    /// Records the CPU the calling thread is on now (sched_getcpu is a vDSO call: cheap).
    pub fn note(&mut self) {
        // SAFETY: no arguments; returns -1 on failure.
        let c = unsafe { libc::sched_getcpu() };
        if (0..1024).contains(&c) {
            self.0[c as usize / 64] |= 1 << (c % 64);
        }
    }

    /// The CPUs seen, ascending.
    pub fn cpus(&self) -> Vec<u32> {
        (0..1024u32).filter(|&c| self.0[c as usize / 64] & (1 << (c % 64)) != 0).collect()
    }
}
