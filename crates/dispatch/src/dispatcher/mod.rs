//! The dispatcher: setup, the quantum loop, and the restore on every exit path.
//!
//! Each decision, in this order (the simulator's order: all events of an instant, then one
//! decision):
//! 1. completions: a worker whose `done` reached its live job finished it (on time if its
//!    `done_ns` is by the deadline); the policy hears `Stop::Done` if it was running;
//! 2. at a boundary only: unfinished jobs whose deadline passed are dropped (the worker
//!    abandons them; the policy hears `Stop::Aborted` or `cancel`), then jobs whose release
//!    time came are released (`wake` with `Arrival::Job`), then policy timers fire, then the
//!    running task is stopped if it ran a filler, used up its run limit (`Stop::Expired`),
//!    or the policy wants it preempted;
//! 3. if nobody runs, `pick_next` (at a completion wake-up only with `fill`);
//! 4. priorities change only when the choice changed; status is published.
//!
//! The steps live in their own modules: [`decide`] (the pure decision core), [`tick`] (the
//! loop: waking on the grid, carrying decisions out), [`report`] (status and the final metrics).

mod decide;
mod report;
mod tick;

use crate::actuator::{Actuator, Priorities};
use crate::calls::CallLog;
use crate::config::{Config, DispatchPolicy};
use crate::error::DispatchError;
use crate::metrics::Metrics;
use crate::os;
use crate::shm::{self, Region};
use crate::status::RunState;
use crate::DISPATCHER_PRIORITY;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::*};
use tick::Loop;

/// A dispatcher for one CPU partition, ready to run.
#[derive(Debug)]
pub struct Dispatcher {
    cfg: Config,
    region: Region,
}

impl Dispatcher {
    /// Validates `cfg` against `region` (one slot per task) and writes the task parameters
    /// into the region, so status readers see them before the run starts.
    pub fn new(cfg: Config, region: Region) -> Result<Dispatcher, DispatchError> {
        cfg.validate()?;
        if region.capacity() != cfg.tasks.len() {
            return Err(DispatchError::Config(format!(
                "{} tasks for a region with {} slots",
                cfg.tasks.len(),
                region.capacity()
            )));
        }
        let online = schedlab_sys::cpus::online(&schedlab_sys::Root::default());
        if !online.contains(&cfg.cpu) {
            return Err(DispatchError::Config(format!(
                "CPU {} is not online (online: {online:?})",
                cfg.cpu
            )));
        }
        let info = &region.header().info;
        info.cpu.store(cfg.cpu, Relaxed);
        info.quantum_ns.store(cfg.quantum_ns, Relaxed);
        info.policy.store(policy_code(cfg.policy), Relaxed);
        for (i, t) in cfg.tasks.iter().enumerate() {
            let p = &region.slot(i).params;
            p.pid.store(t.pid as u32, Relaxed);
            p.c_ns.store(t.c_ns, Relaxed);
            p.t_ns.store(t.t_ns, Relaxed);
            p.d_ns.store(t.deadline(), Relaxed);
            p.x.store(t.x, Relaxed);
            p.y.store(t.y, Relaxed);
        }
        Ok(Dispatcher { cfg, region })
    }

    /// The region file workers attach to and status readers open.
    pub fn region_path(&self) -> &Path {
        self.region.path()
    }

    /// Runs in the calling thread until the duration ends or `stop` is set, then puts every
    /// worker back to SCHED_OTHER, tells the workers to exit, and removes the region file.
    ///
    /// Needs CAP_SYS_NICE (FIFO priorities, other processes' classes) and CAP_IPC_LOCK
    /// (mlockall); raising this thread is tried first, so a missing privilege changes nothing.
    pub fn run(self, stop: &AtomicBool) -> Result<Metrics, DispatchError> {
        self.run_with(stop, &Priorities)
    }

    /// [`run`](Self::run), with the choice enforced by `actuator` instead of priorities.
    pub fn run_with(
        self,
        stop: &AtomicBool,
        actuator: &dyn Actuator,
    ) -> Result<Metrics, DispatchError> {
        self.run_inner(stop, actuator, false).map(|(m, _)| m)
    }

    /// [`run_with`](Self::run_with), logging every call into the policy as well: the
    /// releases, completions and drops it was told and every decision it gave back.
    pub fn run_logged(
        self,
        stop: &AtomicBool,
        actuator: &dyn Actuator,
    ) -> Result<(Metrics, CallLog), DispatchError> {
        let (metrics, log) = self.run_inner(stop, actuator, true)?;
        Ok((metrics, log.expect("logged")))
    }

    fn run_inner(
        self,
        stop: &AtomicBool,
        actuator: &dyn Actuator,
        log: bool,
    ) -> Result<(Metrics, Option<CallLog>), DispatchError> {
        let Dispatcher { cfg, region } = self;
        let saved = Saved {
            sched: os::own_sched(),
            affinity: os::own_affinity(),
            slack: os::timer_slack(),
        };
        os::set_fifo(0, DISPATCHER_PRIORITY)
            .map_err(|e| privilege("raising the dispatcher to SCHED_FIFO", "CAP_SYS_NICE", e))?;
        let mut guard = Guard { cfg: &cfg, region: &region, actuator, saved, unlock: false };
        os::set_timer_slack(1);
        os::pin(0, cfg.cpu).map_err(|e| {
            DispatchError::io(format!("pinning the dispatcher to CPU {}", cfg.cpu), e)
        })?;
        for t in &cfg.tasks {
            os::pin(t.pid, cfg.cpu).map_err(|e| {
                DispatchError::io(format!("pinning worker {} to CPU {}", t.pid, cfg.cpu), e)
            })?;
            actuator
                .park(t.pid)
                .map_err(|e| DispatchError::io(format!("parking worker {}", t.pid), e))?;
        }
        wait_attached(&cfg, &region, stop)?;
        guard.unlock = os::lock_memory().map_err(|e| {
            privilege("locking the dispatcher's memory (mlockall)", "CAP_IPC_LOCK", e)
        })?;
        let mut lp = Loop::new(&cfg, &region, actuator)?;
        if log {
            lp.decider.log_calls(&cfg);
        }
        let metrics = lp.run(stop)?;
        let log = lp.decider.calls.take().map(|calls| CallLog {
            cpu: cfg.cpu,
            policy: cfg.policy,
            tasks: cfg.tasks.clone(),
            calls,
            lost: lp.decider.calls_lost,
        });
        Ok((metrics, log))
    }
}

fn privilege(what: &str, capability: &'static str, e: std::io::Error) -> DispatchError {
    if e.raw_os_error() == Some(libc::EPERM) {
        DispatchError::Privilege { what: what.into(), capability, source: e }
    } else {
        DispatchError::io(what, e)
    }
}

fn policy_code(p: DispatchPolicy) -> u32 {
    match p {
        DispatchPolicy::Edf => shm::POLICY_EDF,
        DispatchPolicy::Dwcs { work_conserving: true } => shm::POLICY_DWCS,
        DispatchPolicy::Dwcs { work_conserving: false } => shm::POLICY_DWCS_NWC,
    }
}

fn wait_attached(cfg: &Config, region: &Region, stop: &AtomicBool) -> Result<(), DispatchError> {
    let t0 = os::monotonic_ns();
    for (i, t) in cfg.tasks.iter().enumerate() {
        while region.slot(i).worker.pid.load(Acquire) as i32 != t.pid {
            let waited = os::monotonic_ns() - t0;
            if waited > cfg.attach_timeout_ns
                || stop.load(Relaxed)
                || os::process_start(t.pid).is_none()
            {
                return Err(DispatchError::AttachTimeout {
                    slot: i,
                    pid: t.pid,
                    waited_ms: waited / 1_000_000,
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    Ok(())
}

struct Saved {
    sched: (i32, i32),
    affinity: Option<libc::cpu_set_t>,
    slack: libc::c_int,
}

/// Restores everything on every way out of `run` (return, error, panic).
struct Guard<'a> {
    cfg: &'a Config,
    region: &'a Region,
    actuator: &'a dyn Actuator,
    saved: Saved,
    unlock: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let h = self.region.header();
        h.info.shutdown.store(1, Release);
        for (i, t) in self.cfg.tasks.iter().enumerate() {
            let _ = self.actuator.park(t.pid);
            let word = &self.region.slot(i).control.word;
            word.store(0, Release);
            os::futex_wake(word, i32::MAX);
        }
        h.info.state.store(RunState::Finished.as_u32(), Release);
        os::restore_own_sched(self.saved.sched);
        if let Some(set) = &self.saved.affinity {
            os::restore_affinity(set);
        }
        os::set_timer_slack(self.saved.slack.max(1) as libc::c_ulong);
        if self.unlock {
            os::unlock_memory();
        }
    }
}
