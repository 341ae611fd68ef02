//! Dynamic window-constrained scheduling (DWCS), as `docs dwcs.md` describes it.
//!
//! Each task has a period T, a request length C (its quantum), and a window
//! constraint x/y. The policy keeps, per task, the current constraint x'/y',
//! a violation tag, and a deadline that starts one period after the task's
//! first release and then moves by T:
//!
//! 1. pick the ready task with the highest precedence ([`Precedence`]);
//! 2. it runs for its quantum C, or until it blocks or its job ends
//!    (quanta are not preempted, except a task without a period, which
//!    yields to any periodic task);
//! 3. when it stops, its constraint is adjusted as *serviced* if it stopped
//!    by its deadline and *missed* otherwise, and its deadline += T;
//! 4. before every decision, every other task whose deadline has passed is
//!    adjusted as *missed* and its deadline += T, as often as needed.
//!
//! The adjustment rules live in [`adjust_window_reconstructed`]. A 0/0
//! window tolerates no loss and makes DWCS pure EDF. With the
//! work-conserving flag off, a task is not served twice in one request
//! period: it becomes eligible again only when the period whose deadline it
//! now holds begins (deadline - T).
//!
//! Deadlines belong to the policy, as in the seed's process scheduler: they
//! match a periodic task's job deadlines while jobs are on time (and always
//! when late jobs are dropped at their deadline); a late job that keeps
//! running counts as service for the following period.
//!
//! Left out: the seed's "constraints are updated at most once per scheduler
//! tick" (there is no tick here: every stop is one update).

mod feasibility;
mod window;

use serde::{Deserialize, Serialize};

pub use feasibility::{feasibility, WindowFeasibility, WindowTask};
pub use window::{
    adjust_window_reconstructed, Constraint, DeadlineOutcome, Precedence, WindowState,
};

use crate::{Arrival, Duration, ReadySet, SchedParams, SchedPolicy, Stop, TaskId, Time, Window};

/// A DWCS task's state as an info interface (the seed's /proc/dwcs) would show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DwcsTaskView {
    /// Current deadline, once the task has arrived.
    pub deadline: Option<Time>,
    /// The task's window constraint x/y.
    pub window: Window,
    /// Current constraint x'/y' and violation tag.
    pub current: WindowState,
    /// Deadlines met so far.
    pub serviced: u64,
    /// Deadlines missed so far.
    pub missed: u64,
    /// Misses that found no loss left to tolerate (x' = 0).
    pub violations: u64,
}

#[derive(Debug, Clone, Copy)]
struct DTask {
    period: Option<Duration>,
    quantum: Option<Duration>,
    window: Window,
    state: WindowState,
    deadline: Option<Time>,
    running: bool,
    exited: bool,
    serviced: u64,
    missed: u64,
    violations: u64,
}

/// The DWCS policy.
#[derive(Debug, Clone)]
pub struct Dwcs {
    work_conserving: bool,
    tasks: Vec<DTask>,
    ready: ReadySet<(Precedence, u64)>,
    seq: u64,
    last_now: Time,
}

impl Dwcs {
    /// A DWCS policy; with `work_conserving` off a task is served at most once per request period.
    pub fn new(work_conserving: bool) -> Self {
        Self { work_conserving, tasks: Vec::new(), ready: ReadySet::new(), seq: 0, last_now: 0 }
    }

    /// The state of task `id`, if admitted.
    pub fn view(&self, id: TaskId) -> Option<DwcsTaskView> {
        self.tasks.get(id).map(|t| DwcsTaskView {
            deadline: t.deadline,
            window: t.window,
            current: t.state,
            serviced: t.serviced,
            missed: t.missed,
            violations: t.violations,
        })
    }

    fn precedence(&self, id: TaskId) -> Precedence {
        let t = &self.tasks[id];
        Precedence::of(t.deadline.unwrap_or(Time::MAX), &t.state)
    }

    fn enqueue(&mut self, id: TaskId) {
        self.seq += 1;
        self.ready.insert(id, (self.precedence(id), self.seq));
    }

    fn record(&mut self, id: TaskId, outcome: DeadlineOutcome) {
        let t = &mut self.tasks[id];
        let (Some(d), Some(period)) = (t.deadline, t.period) else {
            return;
        };
        if adjust_window_reconstructed(&mut t.state, t.window, outcome) {
            t.violations += 1;
        }
        match outcome {
            DeadlineOutcome::Serviced => t.serviced += 1,
            DeadlineOutcome::Missed => t.missed += 1,
        }
        t.deadline = Some(d.saturating_add(period));
    }

    // Step 4 of the algorithm: every waiting task whose deadline has passed misses it.
    fn catch_up(&mut self, now: Time) {
        self.last_now = now;
        for id in 0..self.tasks.len() {
            let t = &self.tasks[id];
            if t.running || t.exited || t.period.is_none() {
                continue;
            }
            let mut changed = false;
            while self.tasks[id].deadline.is_some_and(|d| d <= now) {
                self.record(id, DeadlineOutcome::Missed);
                changed = true;
            }
            if changed {
                // Keep its first-come-first-served position; only the precedence changed.
                if let Some((_, seq)) = self.ready.key(id) {
                    self.ready.insert(id, (self.precedence(id), seq));
                }
            }
        }
    }

    fn eligible_at(&self, id: TaskId) -> Time {
        let t = &self.tasks[id];
        match (self.work_conserving, t.deadline, t.period) {
            (false, Some(d), Some(p)) => d.saturating_sub(p),
            _ => 0,
        }
    }
}

impl SchedPolicy for Dwcs {
    fn name(&self) -> &'static str {
        "dwcs"
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        let t = DTask {
            period: params.period,
            quantum: params.wcet,
            window: params.window,
            state: WindowState::new(params.window),
            deadline: None,
            running: false,
            exited: false,
            serviced: 0,
            missed: 0,
            violations: 0,
        };
        if id >= self.tasks.len() {
            self.tasks.resize(id + 1, t);
        }
        self.tasks[id] = t;
    }

    fn wake(&mut self, id: TaskId, now: Time, arrival: Arrival) {
        let t = &mut self.tasks[id];
        if let (None, Some(period)) = (t.deadline, t.period) {
            let start = match arrival {
                Arrival::Job { release, .. } => release,
                Arrival::Resume => now,
            };
            t.deadline = Some(start.saturating_add(period));
        }
        self.catch_up(now);
        if !self.ready.contains(id) {
            self.enqueue(id);
        }
    }

    fn cancel(&mut self, id: TaskId, _now: Time) {
        self.ready.remove(id);
    }

    fn retire(&mut self, id: TaskId, _now: Time) {
        self.ready.remove(id);
        self.tasks[id].exited = true;
    }

    fn pick_next(&mut self, now: Time) -> Option<TaskId> {
        self.catch_up(now);
        let id = self.ready.iter().map(|(_, id)| id).find(|&id| self.eligible_at(id) <= now)?;
        self.ready.remove(id);
        self.tasks[id].running = true;
        Some(id)
    }

    fn run_limit(&self, id: TaskId, _now: Time) -> Option<Duration> {
        self.tasks[id].quantum
    }

    fn stop(&mut self, id: TaskId, now: Time, why: Stop) {
        self.tasks[id].running = false;
        if why != Stop::Preempted {
            let on_time = why != Stop::Aborted && self.tasks[id].deadline.is_some_and(|d| now <= d);
            let outcome = if on_time { DeadlineOutcome::Serviced } else { DeadlineOutcome::Missed };
            self.record(id, outcome);
        }
        match why {
            Stop::Preempted | Stop::Expired => self.enqueue(id),
            Stop::Exited => self.tasks[id].exited = true,
            _ => {}
        }
        self.catch_up(now);
    }

    fn should_preempt(&mut self, running: TaskId, now: Time) -> bool {
        if self.tasks[running].period.is_some() {
            return false;
        }
        self.catch_up(now);
        self.ready
            .iter()
            .map(|(_, id)| id)
            .find(|&id| self.eligible_at(id) <= now)
            .is_some_and(|id| self.tasks[id].period.is_some())
    }

    fn precedes(&self, a: TaskId, b: TaskId, _now: Time) -> bool {
        (self.precedence(a), a) < (self.precedence(b), b)
    }

    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    fn next_timer(&self) -> Option<Time> {
        if self.work_conserving {
            return None;
        }
        self.ready.iter().map(|(_, id)| self.eligible_at(id)).filter(|&t| t > self.last_now).min()
    }

    fn on_timer(&mut self, now: Time) {
        self.catch_up(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn periodic(c: u64, t: u64, x: u32, y: u32) -> SchedParams {
        SchedParams {
            period: Some(t),
            wcet: Some(c),
            window: Window::new(x, y),
            ..Default::default()
        }
    }

    fn job(release: Time) -> Arrival {
        Arrival::Job { release, deadline: None }
    }

    #[test]
    fn lower_constraint_wins_at_equal_deadlines_after_a_miss() {
        let mut d = Dwcs::new(true);
        d.admit(0, &periodic(1, 1, 1, 2));
        d.admit(1, &periodic(1, 1, 1, 2));
        d.wake(0, 0, job(0));
        d.wake(1, 0, job(0));
        assert_eq!(d.pick_next(0), Some(0));
        assert_eq!(d.run_limit(0, 0), Some(1));
        d.stop(0, 1, Stop::Done);
        // Task 0 was serviced (1/2 -> 1/1); task 1 missed (1/2 -> 0/1).
        let v0 = d.view(0).unwrap();
        let v1 = d.view(1).unwrap();
        assert_eq!((v0.current.x, v0.current.y, v0.deadline), (1, 1, Some(2)));
        assert_eq!((v1.current.x, v1.current.y, v1.deadline), (0, 1, Some(2)));
        d.wake(0, 1, job(1));
        assert_eq!(d.pick_next(1), Some(1));
    }

    #[test]
    fn non_work_conserving_waits_for_the_next_request_period() {
        let mut d = Dwcs::new(false);
        d.admit(0, &periodic(1, 2, 1, 2));
        d.wake(0, 0, Arrival::Resume);
        assert_eq!(d.pick_next(0), Some(0));
        d.stop(0, 1, Stop::Expired);
        assert_eq!(d.view(0).unwrap().deadline, Some(4));
        assert_eq!(d.pick_next(1), None);
        assert_eq!(d.next_timer(), Some(2));
        assert_eq!(d.pick_next(2), Some(0));
    }

    #[test]
    fn a_miss_with_no_tolerance_left_is_a_violation() {
        let mut d = Dwcs::new(true);
        d.admit(0, &periodic(1, 2, 0, 1));
        d.wake(0, 0, job(0));
        assert_eq!(d.pick_next(0), Some(0));
        d.stop(0, 3, Stop::Done);
        let v = d.view(0).unwrap();
        assert_eq!((v.missed, v.violations, v.current.tagged), (1, 1, true));
    }
}
