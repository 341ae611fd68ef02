//! Scheduling policies as pure state machines.
//!
//! Every policy implements [`SchedPolicy`]: the driver tells it when tasks become
//! ready, asks it which task to run next, and reports when a running task
//! stops. Time always comes in as an argument (integer nanoseconds, see
//! [`Time`]); no policy reads a clock or makes a system call. That is what lets
//! the same code run under the simulator's virtual time and under a live
//! dispatcher's real clock (both sides read time through a [`Clock`]).
//!
//! Policies, one module each:
//!
//! | module | policy |
//! |---|---|
//! | [`fifo`] | fixed priority, first-in first-out within a priority (SCHED_FIFO) |
//! | [`rr`] | fixed priority with a quantum (SCHED_RR) |
//! | [`fair`] | a simplified EEVDF/CFS model with nice weights (SCHED_OTHER) |
//! | [`edf`] | earliest deadline first |
//! | [`rm`] | rate- and deadline-monotonic fixed priorities |
//!
//! [`edf`] and [`rm`] are one [`ranked::Ranked`] policy each, by their own [`ranked::Rank`].
//! | [`dwcs`] | dynamic window-constrained scheduling, plus its feasibility test |
//! | [`cbs`] | EDF with constant bandwidth servers (SCHED_DEADLINE) |
//!
//! [`windows`] judges outcomes against a window constraint (fixed and sliding windows, time
//! in violation): one counter for the worker loop, the live dispatcher and the simulator.
//!
//! [`cycle`] lets a driver skip cycles that repeat (the simulator's hyperperiods).
//!
//! [`jobs`] is the periodic job lifecycle (releases, deadlines, dropped and late jobs) that
//! the simulator and the live dispatcher both drive.
//!
//! [`PolicySpec`] is the plain, serialisable choice of a policy and its
//! parameters; [`PolicySpec::build`] turns it into a boxed [`SchedPolicy`].
//!
//! ```
//! use schedlab_policy::{Arrival, PolicySpec, Stop, SchedParams};
//!
//! let mut edf = PolicySpec::Edf.build();
//! edf.admit(0, &SchedParams { period: Some(5), ..Default::default() });
//! edf.admit(1, &SchedParams { period: Some(3), ..Default::default() });
//! edf.wake(0, 0, Arrival::Job { release: 0, deadline: Some(5) });
//! assert_eq!(edf.pick_next(0), Some(0));
//! // Task 1 arrives at 1 with an earlier deadline: it should preempt task 0.
//! edf.wake(1, 1, Arrival::Job { release: 1, deadline: Some(4) });
//! assert!(edf.should_preempt(0, 1));
//! edf.stop(0, 1, Stop::Preempted);
//! assert_eq!(edf.pick_next(1), Some(1));
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod api;
pub mod cbs;
pub mod cycle;
pub mod dwcs;
pub mod edf;
mod error;
pub mod fair;
pub mod fifo;
pub mod jobs;
pub mod ranked;
mod ready;
pub mod rm;
pub mod rr;
mod spec;
mod task;
mod time;
pub mod windows;

pub use api::SchedPolicy;
pub use error::PolicyError;
pub use ready::ReadySet;
pub use spec::{PolicySpec, DEFAULT_BASE_SLICE, DEFAULT_RR_QUANTUM};
pub use task::{Arrival, Reservation, SchedParams, Stop, TaskId, Window};
pub use time::{Clock, Duration, Time, VirtualClock, MICROSECOND, MILLISECOND, SECOND};
pub use windows::{WindowCounter, WindowCounts, WindowReport};
