//! The live dispatcher: a user-space scheduler that drives real worker processes by the
//! `schedlab-policy` core (DWCS or EDF), with the real clock where the simulator uses
//! virtual time.
//!
//! ```text
//! engine (FIFO 99) ── creates Region ── spawns workers ── Dispatcher::run (FIFO 98, one per CPU)
//!                                            │                 │ every quantum: policy decides,
//!   schedlab dwcs status ── StatusReader ── region file ── ◄───┘ chosen worker FIFO 97, rest SCHED_OTHER
//! ```
//!
//! # Design
//!
//! ## Priorities
//! The engine supervises at SCHED_FIFO 99, so the dispatcher runs at
//! [`DISPATCHER_PRIORITY`] (FIFO 98). The one worker the policy chose runs at
//! [`RUN_PRIORITY`] (FIFO 97); every other controlled worker is *parked* at SCHED_OTHER,
//! nice 0, which is also what every worker is put back to when the run ends.
//!
//! ## How workers are controlled, and why
//! All workers of a dispatcher, and the dispatcher itself, are pinned to one CPU. Each
//! quantum boundary the dispatcher wakes (it preempts the running worker at once: higher
//! FIFO priority, same CPU), decides, and switches scheduling classes with `sched_setattr`,
//! but only when the choice changed (two system calls per switch, none otherwise).
//!
//! * **Why priorities, not SIGSTOP/SIGCONT.** Both cost about one system call per change,
//!   but stop signals are visible to the engine's `wait4` (job-control stops, SIGCHLD), act
//!   asynchronously, and a dispatcher that dies leaves workers stopped. A priority change is
//!   synchronous and, because the dispatcher holds the CPU while it decides, atomic from the
//!   workers' point of view.
//! * **Why park at SCHED_OTHER, not at a low FIFO priority.** A worker parked at FIFO would
//!   be left at a real-time priority if the dispatcher died; at SCHED_OTHER, at most one
//!   worker (the chosen one) is ever real-time. That one demotes itself: every worker checks
//!   that its dispatcher is alive whenever it has waited 100 ms or burned 2 ms while the
//!   dispatcher's heartbeat is older than 200 ms, and if the dispatcher is gone it returns to
//!   SCHED_OTHER and exits. The engine kills workers too (PR_SET_PDEATHSIG), but safety
//!   does not depend on it.
//! * **Strict, not work-conserving at the kernel level.** A parked SCHED_OTHER worker could
//!   still run whenever the chosen one blocks, and would then finish jobs the policy never
//!   gave it the CPU for (a policy like DWCS would count them as missed). So the control is
//!   also cooperative: a worker only works while the run bit of its job word is set, and
//!   sleeps on a futex otherwise. Priorities enforce preemption; the run bit enforces
//!   strictness. Work conservation is a policy decision instead ([`Config::fill`]: give
//!   the rest of a quantum to the next ready task when a job finishes early).
//!
//! ## Quanta, releases and completions
//! Decisions happen at the boundaries start + k·quantum (the sleep is
//! `FUTEX_WAIT_BITSET` with an absolute CLOCK_MONOTONIC timeout: `clock_nanosleep(TIMER_ABSTIME)`
//! that a worker can end early) and when a worker finishes a job. A late wake-up does not
//! drift: the next boundary stays on the grid.
//! * **Releases** are computed, not signalled: job k of task i is released at
//!   start + k·T_i and due D_i later; the dispatcher announces it by writing the job number
//!   into the worker's job word (and waking it if it is the chosen one).
//! * **Completions** are written by the worker into its slot (`done`, `done_ns`) followed
//!   by a bump of the header's completion futex word, which wakes the dispatcher; a job is
//!   on time if `done_ns` is not after its deadline.
//! * **Misses**: a job still unfinished at its deadline is dropped (firm deadlines, DWCS's
//!   lost packets): the worker abandons it, and the policy hears `Stop::Aborted` or `cancel`.
//!   With D ≤ T a task has at most one live job.
//! * The policy is driven exactly as the simulator drives it (`admit`, `wake` with
//!   `Arrival::Job`, `pick_next`, `run_limit`, `stop` with Done/Expired/Preempted/Aborted,
//!   `should_preempt`, `on_timer`); window adjustment, precedence and deadline catch-up are
//!   the policy crate's, never re-implemented here. A task runs for its run limit (DWCS: C,
//!   rounded up to whole quanta), until its job finishes, or until the policy preempts it
//!   at a boundary (EDF). A filler (picked inside a quantum) is preempted at the next
//!   boundary without being charged.
//!
//! ## Per CPU, not global
//! One dispatcher thread (or process) per CPU partition: the caller partitions tasks to
//! CPUs and runs one [`Dispatcher`] per CPU, each with its own region file. A global
//! dispatcher would have to move workers between CPUs and could not rely on holding the
//! CPU while it decides, which is what makes a switch atomic here.
//!
//! ## Real-time hygiene
//! Setup (privilege check first, affinity, parking, waiting for workers to attach,
//! `mlockall`, allocations, stack prefault) happens before the loop; the loop allocates
//! nothing new (the policy is warmed up on a copy first, and the allocator is told never to
//! trim its heap, process-wide), and counts its own page faults (getrusage RUSAGE_THREAD),
//! which must be 0. The region lives on tmpfs, where shared pages are never written back (no faults).
//! RT throttling stays on: the workers' real-time load must leave the CPU about 5 % idle, or
//! the kernel throttles the dispatcher with them (see [`Config::fill`]).
//!
//! ## Status
//! The region file ([`shm`]) is the seed's /proc/dwcs: [`StatusReader`] opens it
//! read-only and returns a [`Snapshot`] (serde, for `--json`) of every task's x'/y',
//! deadline, jobs, misses and violations, and whether the dispatcher is still alive.
//!
//! ## Actuators
//! How the choice is enforced is an [`Actuator`]: [`Priorities`] (the classes above) by
//! default; [`Dispatcher::run_with`] takes another, such as schedlab-scx's sched_ext
//! scheduler, which lets a controlled worker run only while the dispatcher has chosen it.
//! The decisions, the status region and the metrics are the same under every actuator.
//!
//! Limits: workers must run [`run_worker`] (cooperative; arbitrary programs cannot be
//! controlled) and be single-threaded; D ≤ T; releases and deadlines take effect at
//! quantum boundaries.
#![deny(missing_docs)]

mod actuator;
mod calls;
mod config;
mod dispatcher;
mod error;
mod metrics;
mod os;
pub mod shm;
mod status;
mod worker;

pub use actuator::{Actuator, Priorities};
pub use calls::{Call, CallLog, Divergence};
pub use config::{Config, DispatchPolicy, TaskCfg};
pub use dispatcher::Dispatcher;
pub use error::DispatchError;
pub use metrics::{Latency, Metrics, PolicyView, TaskMetrics, METRICS_SCHEMA};
pub use os::{is_rt_policy, scheduler_of};
pub use shm::Region;
pub use status::{remove_stale, RunState, Snapshot, StatusReader, TaskState, TaskStatus};
pub use worker::{
    run_worker, run_worker_with, CpuBurn, JobSteps, WorkerExit, WorkerStats, STALE_HEARTBEAT_NS,
    WORKER_POLL_NS,
};

/// SCHED_FIFO priority of the dispatcher (the plan's, which specs are checked against).
pub use schedlab_plan::DISPATCHER_PRIORITY;
/// SCHED_FIFO priority of the chosen worker.
pub use schedlab_plan::DISPATCH_RUN_PRIORITY as RUN_PRIORITY;
/// Default quantum: 10 ms.
pub const DEFAULT_QUANTUM_NS: u64 = 10_000_000;
/// Smallest quantum accepted: 100 µs.
pub const MIN_QUANTUM_NS: u64 = 100_000;
