//! The one trait every policy implements.

use crate::{Arrival, Duration, SchedParams, Stop, TaskId, Time};

/// A scheduling policy driven from outside.
///
/// Protocol, for one scheduling domain (one ready queue, one or more CPUs):
/// 1. `admit` every task once;
/// 2. `wake` a task when it becomes ready, `cancel` it if it stops being ready before it ran;
/// 3. on a free CPU, `pick_next` and run the task for at most `run_limit`;
/// 4. when it stops, `stop` with the reason;
/// 5. after events, ask `should_preempt` about the running task with the lowest
///    precedence (found with `precedes`), and call `on_timer` at `next_timer`.
///
/// Every call carries the current time, which never decreases between calls;
/// the policy keeps no clock of its own.
pub trait SchedPolicy {
    /// Short lower-case name, e.g. `"edf"`.
    fn name(&self) -> &'static str;

    /// Registers a task before it first wakes.
    fn admit(&mut self, id: TaskId, params: &SchedParams);

    /// Makes a task ready: a job was released or the task woke from blocking.
    ///
    /// Waking a task that is already ready replaces its job (e.g. after the
    /// driver dropped a late one) and keeps its first-come-first-served place.
    fn wake(&mut self, id: TaskId, now: Time, arrival: Arrival);

    /// Withdraws a ready (not running) task, e.g. when its job is dropped.
    fn cancel(&mut self, id: TaskId, now: Time);

    /// Tells the policy that a task that is not running will never wake again.
    fn retire(&mut self, id: TaskId, now: Time) {
        self.cancel(id, now);
    }

    /// Removes the ready task that should run next and marks it running.
    fn pick_next(&mut self, now: Time) -> Option<TaskId>;

    /// How long the just-picked task may run from `now` before the policy wants the CPU back;
    /// `None` (the default, as in FIFO and EDF): until it stops or is preempted.
    fn run_limit(&self, _id: TaskId, _now: Time) -> Option<Duration> {
        None
    }

    /// The running task `id` stopped at `now` for the reason `why`.
    fn stop(&mut self, id: TaskId, now: Time, why: Stop);

    /// Whether the best ready task should displace the running task `running`.
    fn should_preempt(&mut self, running: TaskId, now: Time) -> bool;

    /// Whether running task `a` has strictly higher precedence than running task `b`.
    fn precedes(&self, a: TaskId, b: TaskId, now: Time) -> bool;

    /// Whether any task is queued as ready.
    fn has_ready(&self) -> bool;

    /// The next time the policy's state changes without any event (replenishment, eligibility).
    fn next_timer(&self) -> Option<Time> {
        None
    }

    /// Applies the state changes due at `now` (the driver calls it at `next_timer`).
    fn on_timer(&mut self, _now: Time) {}

    /// The latest time a timer of this policy was due, counting changes it defers to a
    /// task's next wake-up instead of asking for a timer (a run without a horizon ends no
    /// earlier); `None` when every change is asked for with `next_timer`.
    fn latest_timer(&self) -> Option<Time> {
        None
    }

    /// With no task ready or running, writes everything that decides the policy's future
    /// (see [`cycle`](crate::cycle)), times relative to `origin`, and returns true; returns
    /// false when it cannot, and then the driver never skips a cycle.
    fn cycle_state(&self, _origin: Time, _out: &mut Vec<u64>) -> bool {
        false
    }

    /// Moves every instant the policy holds `by` later: the driver skipped whole cycles
    /// after [`cycle_state`](Self::cycle_state) returned true.
    fn shift(&mut self, _by: Duration) {}
}

/// `policy` with tasks `0..n` of default parameters admitted and woken at 0, for tests.
#[cfg(test)]
pub(crate) fn with_ready<P: SchedPolicy>(mut policy: P, n: TaskId) -> P {
    for id in 0..n {
        policy.admit(id, &SchedParams::default());
        policy.wake(id, 0, Arrival::Resume);
    }
    policy
}
