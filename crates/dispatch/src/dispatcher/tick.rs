//! The loop: wakes at each quantum boundary or completion, lets the [`Decider`] decide, and
//! carries the decision out (job words, scheduling classes).

use super::decide::Decider;
use crate::actuator::Actuator;
use crate::config::Config;
use crate::error::DispatchError;
use crate::metrics::Metrics;
use crate::os::{self, FutexWake};
use crate::shm::{job_word, Region};
use crate::status::RunState;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering::*};

pub(super) struct Loop<'a> {
    pub(super) cfg: &'a Config,
    pub(super) region: &'a Region,
    actuator: &'a dyn Actuator,
    pub(super) decider: Decider,
    /// Each worker's job word as last published: (job number, run bit).
    words: Vec<(u32, bool)>,
    pub(super) q: u64,
    pub(super) start: u64,
    end: Option<u64>,
    pub(super) on_cpu: Option<usize>,
    pub(super) latency: Histogram<u64>,
    pub(super) cost: Histogram<u64>,
    pub(super) lat_cache: [u64; 3],
    publish_every: u64,
    pub(super) ticks: u64,
    pub(super) decisions: u64,
    pub(super) completion_wakeups: u64,
    pub(super) switches: u64,
    pub(super) overruns: u64,
    pub(super) skipped: u64,
    pub(super) control_errors: u64,
}

const HIST_MAX_NS: u64 = 60_000_000_000;

impl<'a> Loop<'a> {
    /// Everything the loop touches is allocated here.
    pub(super) fn new(
        cfg: &'a Config,
        region: &'a Region,
        actuator: &'a dyn Actuator,
    ) -> Result<Self, DispatchError> {
        let hist =
            || Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds");
        let now = os::monotonic_ns();
        let start = match cfg.start_ns {
            Some(s) if s <= now => {
                return Err(DispatchError::Config(format!(
                    "start time passed {} us ago",
                    (now - s) / 1000
                )))
            }
            Some(s) => s,
            None => now + (2 * cfg.quantum_ns).max(20_000_000),
        };
        Ok(Loop {
            cfg,
            region,
            actuator,
            decider: Decider::new(cfg, start),
            words: vec![(0, false); cfg.tasks.len()],
            q: cfg.quantum_ns,
            start,
            end: cfg.duration_ns.map(|d| start + d),
            on_cpu: None,
            latency: hist(),
            cost: hist(),
            lat_cache: [0; 3],
            publish_every: (100_000_000 / cfg.quantum_ns).max(1),
            ticks: 0,
            decisions: 0,
            completion_wakeups: 0,
            switches: 0,
            overruns: 0,
            skipped: 0,
            control_errors: 0,
        })
    }

    pub(super) fn run(&mut self, stop: &AtomicBool) -> Result<Metrics, DispatchError> {
        let info = &self.region.header().info;
        let pid = os::getpid();
        info.dispatcher_pid.store(pid as u32, Relaxed);
        info.dispatcher_start.store(os::process_start(pid).map_or(0, |s| s.0), Relaxed);
        info.start_ns.store(self.start, Relaxed);
        info.end_ns.store(self.end.unwrap_or(0), Relaxed);
        info.state.store(RunState::Running.as_u32(), Release);
        let completions = &self.region.header().wake.completions;
        os::prefault_stack();
        self.publish(os::monotonic_ns());
        let faults0 = os::thread_faults();
        let mut next_tick = self.start;
        let mut seen = completions.load(Acquire);
        let mut now;
        loop {
            let woke = os::futex_wait_until(completions, seen, next_tick);
            now = os::monotonic_ns();
            let tick = now >= next_tick;
            let current = completions.load(Acquire);
            if !tick && current == seen {
                continue; // a signal or a spurious wake-up: nothing to decide
            }
            seen = current;
            let mut boundary = 0;
            if tick {
                let late = now - next_tick;
                if woke == FutexWake::TimedOut {
                    self.latency.saturating_record(late);
                }
                if late > self.q {
                    self.overruns += 1;
                }
                let skipped = late / self.q;
                self.skipped += skipped;
                boundary = next_tick + skipped * self.q;
                next_tick = boundary + self.q;
                self.ticks += 1;
            } else {
                self.completion_wakeups += 1;
            }
            self.decide(now, tick, boundary);
            self.decisions += 1;
            self.publish(now);
            self.cost.saturating_record(os::monotonic_ns() - now);
            // Percentiles walk the histogram (a few us): every 100 ms, after the measured decision.
            if tick && self.ticks.is_multiple_of(self.publish_every) {
                self.lat_cache = [
                    self.latency.value_at_quantile(0.5),
                    self.latency.value_at_quantile(0.99),
                    self.latency.max(),
                ];
            }
            if stop.load(Relaxed) || self.end.is_some_and(|e| now >= e) {
                break;
            }
        }
        let faults1 = os::thread_faults();
        Ok(self.finish(now, (faults1.0 - faults0.0, faults1.1 - faults0.1)))
    }

    fn decide(&mut self, now: u64, tick: bool, boundary: u64) {
        let region = self.region;
        self.decider.decide(now, tick, boundary, |i| {
            let w = &region.slot(i).worker;
            (w.done.load(Acquire), w.done_ns.load(Relaxed))
        });
        for i in 0..self.decider.tasks.len() {
            if let Some(job) = self.decider.tasks[i].new_word.take() {
                self.set_word(i, job, self.words[i].1);
            }
        }
        self.apply(now);
    }

    /// Publishes task `i`'s job word, waking the worker when it may now work.
    fn set_word(&mut self, i: usize, job: u32, run: bool) {
        self.words[i] = (job, run);
        let control = &self.region.slot(i).control;
        if run && job != 0 {
            control.granted_ns.store(os::monotonic_ns(), Relaxed);
        }
        control.word.store(job_word(job, run), Release);
        if run && job != 0 {
            os::futex_wake(&control.word, 1);
        }
    }

    /// Makes the actuator match the decision: only on a change of the chosen task.
    pub(super) fn apply(&mut self, now: u64) {
        let want = self.decider.running.map(|r| r.id);
        if want == self.on_cpu {
            return;
        }
        if let Some(old) = self.on_cpu.take() {
            self.set_word(old, self.words[old].0, false);
            if let Err(e) = self.actuator.park(self.cfg.tasks[old].pid) {
                self.control_failed(old, &e, now);
            }
        }
        if let Some(new) = want {
            match self.actuator.grant(self.cfg.tasks[new].pid) {
                Ok(()) => {
                    self.set_word(new, self.words[new].0, true);
                    self.on_cpu = Some(new);
                }
                Err(e) => self.control_failed(new, &e, now),
            }
        }
        self.switches += 1;
    }

    fn control_failed(&mut self, i: usize, e: &std::io::Error, now: u64) {
        self.control_errors += 1;
        if os::is_gone(e) {
            self.decider.gone(i, now);
        }
    }
}
