//! EDF with constant bandwidth servers, as Linux's SCHED_DEADLINE.
//!
//! A task with a [`Reservation`] (runtime Q, deadline D, period P) has a
//! remaining budget `q` and a scheduling deadline `d`; ready servers run in
//! EDF order of `d`. Tasks without a reservation run in the background, in
//! first-come-first-served order, only when no server is ready.
//!
//! - **Wake-up** at `t`: if `d <= t` or the leftover budget would overrun the
//!   reserved bandwidth (`q / (d - t) > Q / D`), the server starts a new
//!   period: `d = t + D`, `q = Q`. For constrained deadlines (D < P) with `d`
//!   still ahead, the budget is trimmed instead: `q = (d - t) Q / D` (the
//!   kernel's revised wake-up rule).
//! - **Accounting**: running consumes `q`; the policy's run limit is `q`.
//! - **Exhaustion** (`q = 0`), hard reservation (the kernel's default): the
//!   task is throttled until its next period starts (`d - D + P`), then
//!   replenished: `q = Q`, `d += P` (deadline postponement). Soft
//!   reservation (the original CBS): replenished and postponed at once.
//!   If the replenishment instant has already passed, or the postponed
//!   deadline is still in the past, a new period starts at once.
//!   A throttled task that does not want to run (its job finished on the
//!   last of its budget, the usual end of a job that needed exactly its
//!   runtime) is replenished when it next wakes instead of at a timer: the
//!   outcome is the same, and nothing can observe the server before then.
//!
//! Left out: GRUB reclaiming, the global admission test (see
//! [`admission`]), and dl_server / RT throttling interactions.

use crate::cycle::{self, StateWriter};
use crate::{
    Arrival, Duration, ReadySet, Reservation, SchedParams, SchedPolicy, Stop, TaskId, Time,
};

#[derive(Debug, Clone, Copy, Default)]
struct Server {
    res: Option<Reservation>,
    q: Duration,
    d: Time,
    throttled: Option<Time>,
    wants: bool,
    since: Time,
}

/// The SCHED_DEADLINE policy.
#[derive(Debug, Clone)]
pub struct Cbs {
    hard: bool,
    tasks: Vec<Server>,
    ready: ReadySet<(u8, Time, u64)>,
    /// Throttled servers that want to run, by replenishment time (a task is throttled at
    /// most once at a time); the others wait in their `Server::throttled` for their wake-up.
    throttled: ReadySet<Time>,
    /// The latest replenishment instant ever set (see [`SchedPolicy::latest_timer`]).
    latest: Option<Time>,
    seq: u64,
}

/// The most bandwidth (sum of runtime/period) SCHED_DEADLINE admits on `cpus` CPUs:
/// `cpus` x `rt_share`, where `rt_share` is sched_rt_runtime_us / sched_rt_period_us (0.95
/// by default on Linux). The kernel's global admission rule, written once.
pub fn admission_limit(cpus: usize, rt_share: f64) -> f64 {
    cpus as f64 * rt_share
}

/// Whether reservations adding up to `bandwidth` (sum runtime/period) fit on `cpus` CPUs.
pub fn admits(bandwidth: f64, cpus: usize, rt_share: f64) -> bool {
    bandwidth <= admission_limit(cpus, rt_share) + 1e-12
}

/// Whether reservations fit on `cpus` CPUs: sum runtime/period <= cpus * `rt_share`.
pub fn admission(reservations: &[Reservation], cpus: usize, rt_share: f64) -> bool {
    let total: f64 = reservations.iter().map(|r| r.runtime as f64 / r.period as f64).sum();
    admits(total, cpus, rt_share)
}

impl Cbs {
    /// A policy with hard (throttling) or soft (postpone at once) reservations.
    pub fn new(hard: bool) -> Self {
        Self {
            hard,
            tasks: Vec::new(),
            ready: ReadySet::new(),
            throttled: ReadySet::new(),
            latest: None,
            seq: 0,
        }
    }

    /// A server's remaining budget and scheduling deadline (a replenishment left to the
    /// task's next wake-up shows only after it).
    pub fn server(&self, id: TaskId) -> Option<(Duration, Time)> {
        let s = self.tasks.get(id)?;
        s.res.map(|_| (s.q, s.d))
    }

    fn class_deadline(&self, id: TaskId) -> (u8, Time) {
        let s = &self.tasks[id];
        match s.res {
            Some(_) => (0, s.d),
            None => (1, 0),
        }
    }

    fn enqueue(&mut self, id: TaskId) {
        self.seq += 1;
        let (class, d) = self.class_deadline(id);
        self.ready.insert(id, (class, d, self.seq));
    }

    /// Replenishes the servers whose throttling ended by `now`; called on every policy call,
    /// so the common case (none due) stays inline.
    #[inline]
    fn advance(&mut self, now: Time) {
        if self.throttled.first().is_some_and(|(at, _)| at <= now) {
            self.replenish_due(now);
        }
    }

    fn replenish_due(&mut self, now: Time) {
        while let Some((at, id)) = self.throttled.first() {
            if at > now {
                break;
            }
            self.throttled.pop_first();
            self.replenish(id, now);
            if self.tasks[id].wants {
                self.enqueue(id);
            }
        }
    }

    fn replenish(&mut self, id: TaskId, now: Time) {
        let s = &mut self.tasks[id];
        let Some(r) = s.res else { return };
        s.throttled = None;
        s.q = r.runtime;
        s.d = s.d.saturating_add(r.period);
        if s.d < now {
            s.d = now + r.deadline;
        }
    }

    /// The budget ran out at `now`; `wants` says whether the task is still ready.
    fn exhaust(&mut self, id: TaskId, now: Time, wants: bool) {
        let s = &mut self.tasks[id];
        let Some(r) = s.res else { return };
        let next_period = (s.d + r.period).saturating_sub(r.deadline);
        if self.hard && next_period > now {
            s.throttled = Some(next_period);
            self.latest = self.latest.max(Some(next_period));
            if wants {
                self.throttled.insert(id, next_period);
            }
        } else {
            self.replenish(id, now);
        }
    }

    fn wakeup_rule(&mut self, id: TaskId, now: Time) {
        let s = &mut self.tasks[id];
        let Some(r) = s.res else { return };
        let overflow = s.d <= now
            || u128::from(s.q) * u128::from(r.deadline)
                > u128::from(s.d - now) * u128::from(r.runtime);
        if !overflow {
            return;
        }
        if r.deadline < r.period && s.d > now {
            let trimmed = (u128::from(s.d - now) * u128::from(r.runtime) / u128::from(r.deadline))
                as Duration;
            if trimmed > 0 {
                s.q = trimmed;
                return;
            }
        }
        s.d = now + r.deadline;
        s.q = r.runtime;
    }
}

impl SchedPolicy for Cbs {
    fn name(&self) -> &'static str {
        "cbs"
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        if id >= self.tasks.len() {
            self.tasks.resize(id + 1, Server::default());
        }
        self.tasks[id] = Server { res: params.reservation, ..Server::default() };
    }

    fn wake(&mut self, id: TaskId, now: Time, _arrival: Arrival) {
        self.advance(now);
        let s = &mut self.tasks[id];
        let wanted = std::mem::replace(&mut s.wants, true);
        match s.throttled {
            // Throttled while it did not want to run: its replenishment was left to now.
            Some(at) if !wanted && at <= now => self.replenish(id, now),
            Some(at) if !wanted => {
                self.throttled.insert(id, at);
                return;
            }
            Some(_) => return,
            None => {}
        }
        if self.ready.contains(id) {
            return;
        }
        self.wakeup_rule(id, now);
        self.enqueue(id);
    }

    fn cancel(&mut self, id: TaskId, _now: Time) {
        self.tasks[id].wants = false;
        self.ready.remove(id);
    }

    fn pick_next(&mut self, now: Time) -> Option<TaskId> {
        self.advance(now);
        let (_, id) = self.ready.pop_first()?;
        self.tasks[id].since = now;
        Some(id)
    }

    fn run_limit(&self, id: TaskId, _now: Time) -> Option<Duration> {
        let s = &self.tasks[id];
        s.res.map(|_| s.q.max(1))
    }

    fn stop(&mut self, id: TaskId, now: Time, why: Stop) {
        self.advance(now);
        let s = &mut self.tasks[id];
        let ran = now.saturating_sub(s.since);
        let wants = why.stays_ready();
        if s.res.is_some() {
            s.q = s.q.saturating_sub(ran);
            if s.q == 0 {
                self.exhaust(id, now, wants);
            }
        }
        let s = &mut self.tasks[id];
        s.wants = wants;
        if s.wants && s.throttled.is_none() {
            self.enqueue(id);
        }
    }

    fn should_preempt(&mut self, running: TaskId, now: Time) -> bool {
        self.advance(now);
        self.ready
            .first()
            .is_some_and(|((class, d, _), _)| (class, d) < self.class_deadline(running))
    }

    fn precedes(&self, a: TaskId, b: TaskId, _now: Time) -> bool {
        (self.class_deadline(a), a) < (self.class_deadline(b), b)
    }

    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    fn next_timer(&self) -> Option<Time> {
        self.throttled.first().map(|(t, _)| t)
    }

    fn on_timer(&mut self, now: Time) {
        self.advance(now);
    }

    fn latest_timer(&self) -> Option<Time> {
        self.latest
    }

    fn cycle_state(&self, origin: Time, out: &mut Vec<u64>) -> bool {
        if !self.ready.is_empty() || !self.throttled.is_empty() {
            return false;
        }
        let mut w = StateWriter::new(out, origin);
        for s in &self.tasks {
            // A task without a reservation runs in the background: its server is unused.
            if s.res.is_none() {
                w.word(u64::from(s.wants));
                continue;
            }
            w.word(s.q);
            w.time(s.d);
            w.opt_time(s.throttled);
            w.word(u64::from(s.wants));
            w.time(s.since);
        }
        w.opt_time(self.latest);
        true
    }

    fn shift(&mut self, by: Duration) {
        for s in &mut self.tasks {
            cycle::shift(&mut s.d, by);
            cycle::shift_opt(&mut s.throttled, by);
            cycle::shift(&mut s.since, by);
        }
        cycle::shift_opt(&mut self.latest, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserved(runtime: u64, deadline: u64, period: u64) -> SchedParams {
        SchedParams {
            reservation: Some(Reservation { runtime, deadline, period }),
            ..Default::default()
        }
    }

    #[test]
    fn hard_reservation_throttles_then_postpones() {
        let mut c = Cbs::new(true);
        c.admit(0, &reserved(2, 5, 5));
        c.wake(0, 0, Arrival::Resume);
        assert_eq!(c.server(0), Some((2, 5)));
        assert_eq!(c.pick_next(0), Some(0));
        assert_eq!(c.run_limit(0, 0), Some(2));
        c.stop(0, 2, Stop::Expired);
        assert!(!c.has_ready());
        assert_eq!(c.next_timer(), Some(5));
        c.on_timer(5);
        assert_eq!(c.server(0), Some((2, 10)));
        assert_eq!(c.pick_next(5), Some(0));
    }

    /// A server of 2 every 5 whose job ran 2 and finished.
    fn done_on_its_last_budget() -> Cbs {
        let mut c = Cbs::new(true);
        c.admit(0, &reserved(2, 5, 5));
        c.wake(0, 0, Arrival::Resume);
        c.pick_next(0);
        c.stop(0, 2, Stop::Done);
        c
    }

    #[test]
    fn a_job_ending_on_its_last_budget_is_replenished_at_its_wake_up_without_a_timer() {
        let mut c = done_on_its_last_budget();
        assert_eq!(c.next_timer(), None);
        assert_eq!(c.latest_timer(), Some(5));
        c.wake(0, 5, Arrival::Resume);
        assert_eq!(c.server(0), Some((2, 10)));
        assert_eq!(c.pick_next(5), Some(0));
    }

    #[test]
    fn a_throttled_task_woken_before_its_replenishment_waits_for_its_timer() {
        let mut c = done_on_its_last_budget();
        c.wake(0, 3, Arrival::Resume);
        assert!(!c.has_ready());
        assert_eq!(c.next_timer(), Some(5));
        c.on_timer(5);
        assert_eq!(c.server(0), Some((2, 10)));
        assert_eq!(c.pick_next(5), Some(0));
    }

    #[test]
    fn soft_reservation_postpones_at_once() {
        let mut c = Cbs::new(false);
        c.admit(0, &reserved(2, 5, 5));
        c.wake(0, 0, Arrival::Resume);
        c.pick_next(0);
        c.stop(0, 2, Stop::Expired);
        assert_eq!(c.server(0), Some((2, 10)));
        assert_eq!(c.pick_next(2), Some(0));
    }

    #[test]
    fn wakeup_keeps_budget_unless_it_would_overrun() {
        let mut c = Cbs::new(true);
        c.admit(0, &reserved(4, 10, 10));
        c.wake(0, 0, Arrival::Resume);
        c.pick_next(0);
        c.stop(0, 1, Stop::Blocked);
        // q = 3 over 8 remaining <= 4/10: keep (3, 10).
        c.wake(0, 2, Arrival::Resume);
        assert_eq!(c.server(0), Some((3, 10)));
        c.pick_next(2);
        c.stop(0, 3, Stop::Blocked);
        // q = 2 over 1 remaining > 4/10: new period.
        c.wake(0, 9, Arrival::Resume);
        assert_eq!(c.server(0), Some((4, 19)));
    }

    #[test]
    fn servers_run_before_background_tasks() {
        let mut c = Cbs::new(true);
        c.admit(0, &SchedParams::default());
        c.admit(1, &reserved(1, 4, 4));
        c.wake(0, 0, Arrival::Resume);
        assert_eq!(c.pick_next(0), Some(0));
        c.wake(1, 1, Arrival::Resume);
        assert!(c.should_preempt(0, 1));
        assert!(admission(&[reserved(1, 4, 4).reservation.unwrap()], 1, 0.95));
    }

    #[test]
    fn admission_takes_up_to_the_cpus_rt_share_and_no_more() {
        assert!((admission_limit(2, 0.95) - 1.9).abs() < 1e-12);
        assert!(admits(1.9, 2, 0.95), "the limit itself is admitted");
        assert!(!admits(1.9001, 2, 0.95));
        let quarter = Reservation { runtime: 1, deadline: 4, period: 4 };
        assert!(admission(&[quarter; 3], 1, 0.95));
        assert!(!admission(&[quarter; 4], 1, 0.95), "a whole CPU is over 95%");
    }
}
