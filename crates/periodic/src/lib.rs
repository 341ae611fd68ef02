//! Worker-side core of schedlab's periodic real-time tasks (issue #5): the task model,
//! task-set generation, job bodies, the measured job loop and its summary (windows judged by
//! [`schedlab_policy::WindowCounter`], the counter the dispatcher and the simulator use too).
//!
//! A worker process builds a [`Runner`] for its task with [`Runner::prepare`] (memory locked,
//! everything preallocated), calls [`Runner::run`] with the task set's common absolute start
//! time on CLOCK_MONOTONIC, and reports [`Runner::summary`] as JSON. Choosing the scheduling
//! policy (SCHED_FIFO, SCHED_DEADLINE, DWCS) is the engine's business, not this crate's.
#![deny(missing_docs)]

mod body;
mod clock;
mod gen;
mod hist;
mod run;
mod summary;
mod task;

pub use body::{
    build_body, calibrate_fft, make_file, passes_for, BodyError, BodySpec, FftBody, JobBody, ReadFileBody, SpinBody, DEFAULT_FFT_ARRAY_LEN,
    DEFAULT_FFT_LEN,
};
pub use clock::{now_ns, sleep_until, thread_cpu_ns, ThreadUsage};
pub use gen::{
    canonical_set, uunifast, uunifast_discard, GenError, GenSpec, PeriodChoice, TaskSetSpec, UtilisationMeasure, MAX_DISCARDS,
    SEED_LATENCY_SETS,
};
pub use hist::{new_latency_histogram, LatencySummary, LATENCY_HIGH_NS, LATENCY_LOW_NS, LATENCY_SIGFIG};
pub use run::{lock_memory, JobRecord, LoopStats, OverrunPolicy, RunError, RunOptions, Runner};
pub use summary::TaskSummary;
pub use task::{
    check_canonical, feasibility, partition, total_min_utilisation, total_utilisation, validate_set, Feasibility, NonCanonical, TaskError,
    TaskParams,
};
