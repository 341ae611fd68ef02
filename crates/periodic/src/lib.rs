//! Worker side of schedlab's periodic real-time tasks (issue #5): job bodies, the measured
//! job loop and its summary (windows judged by [`schedlab_policy::WindowCounter`], the
//! counter the dispatcher and the simulator use too). The task model it runs
//! ([`TaskParams`]) and the task-set generator are vocabulary and live in `schedlab-plan`.
//!
//! A worker process builds a [`Runner`] for its task with [`Runner::prepare`] (memory locked,
//! everything preallocated), calls [`Runner::run`] with the task set's common absolute start
//! time on CLOCK_MONOTONIC, and reports [`Runner::summary`] as JSON. Choosing the scheduling
//! policy (SCHED_FIFO, SCHED_DEADLINE, DWCS) is the engine's business, not this crate's.
#![deny(missing_docs)]

mod body;
mod clock;
mod hist;
mod run;
mod summary;

pub use body::{
    build_body, calibrate_fft, make_file, passes_for, BodyError, BodySpec, FftBody, JobBody,
    ReadFileBody, SpinBody, DEFAULT_FFT_ARRAY_LEN, DEFAULT_FFT_LEN,
};
pub use clock::{now_ns, sleep_until, thread_cpu_ns, ThreadUsage};
pub use hist::{
    new_latency_histogram, LatencyPercentiles, LATENCY_HIGH_NS, LATENCY_LOW_NS, LATENCY_SIGFIG,
};
pub use run::{lock_memory, JobRecord, LoopError, LoopStats, OverrunPolicy, RunOptions, Runner};
pub use summary::TaskSummary;
// The task model and its generator are vocabulary (the plan names them): they live in
// schedlab-plan and keep their old paths here.
pub use schedlab_plan::{
    canonical_set, check_canonical, feasibility, partition, total_min_utilisation,
    total_utilisation, uunifast, uunifast_discard, validate_set, Feasibility, GenError, GenSpec,
    NonCanonical, PeriodChoice, TaskError, TaskParams, TaskSetSpec, UtilisationMeasure,
    MAX_DISCARDS, SEED_LATENCY_SETS,
};
