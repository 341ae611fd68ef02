//! A simplified EEVDF model of Linux's fair class (SCHED_OTHER).
//!
//! # Model
//! - **Weights.** A task's weight comes from its nice value through the
//!   kernel's `sched_prio_to_weight` table ([`SCHED_PRIO_TO_WEIGHT`]); nice 0
//!   weighs [`NICE_0_WEIGHT`] = 1024 and each nice step is about 1.25x.
//!   SCHED_IDLE tasks weigh [`SCHED_IDLE_WEIGHT`] = 3 (set [`SchedParams::weight`]).
//! - **Virtual runtime.** Running for `t` ns advances a task's vruntime `v` by
//!   `t * 1024 / weight`, so heavier tasks age more slowly.
//! - **Eligibility.** `V` is the weight-averaged vruntime of all runnable
//!   tasks (ready and running). A task is eligible when `v <= V`, i.e. it has
//!   not received more than its share (its lag `V - v` is not negative).
//! - **Virtual deadline.** Each task requests a slice of `base_slice` ns of
//!   real time (or its own, [`SchedParams::slice`], as the kernel's custom slice);
//!   its virtual deadline is `vd = v + slice * 1024 / weight`.
//!   The policy runs the eligible task with the earliest `vd` (EEVDF). When
//!   the running task reaches its `vd` it is stopped ([`Stop::Expired`]) and
//!   requests a new slice.
//! - **Wake-up placement.** A task keeps its lag across sleeps: it leaves with
//!   `lag = V - v` and comes back at `v = V - lag`, with `vd = v + slice`.
//!   A brand-new task starts at `v = V` with half a slice to its first
//!   deadline (as the kernel's PLACE_DEADLINE_INITIAL).
//! - **Wake-up preemption.** A ready task preempts the running one when it is
//!   eligible and its `vd` is earlier.
//!
//! # Simplifications (against the kernel)
//! - one queue per scheduling domain (no per-CPU runqueues or load balancing);
//! - lag is clamped to one slice and is not rescaled when a task joins
//!   (the kernel clamps to about two slices and scales lag by `(W + w) / W`);
//! - no tick: the slice is enforced exactly at its end; no RUN_TO_PARITY,
//!   no cgroup hierarchy, no autogroup, no sleeper or migration heuristics;
//! - the base slice does not scale with the CPU count (the kernel multiplies
//!   0.75 ms by 1 + log2(CPUs)); pick a value with [`Fair::new`].

use crate::{Arrival, Duration, ReadySet, SchedParams, SchedPolicy, Stop, TaskId, Time};

/// The weight of a nice-0 task.
pub const NICE_0_WEIGHT: u64 = 1024;

/// The weight of a SCHED_IDLE task (the kernel's `WEIGHT_IDLEPRIO`), below nice 19's 15.
pub const SCHED_IDLE_WEIGHT: u64 = 3;

/// Weights for nice -20..=19, as in the kernel's `sched_prio_to_weight`.
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20 .. -16
    29154, 23254, 18705, 14949, 11916, // -15 .. -11
    9548, 7620, 6100, 4904, 3906, // -10 .. -6
    3121, 2501, 1991, 1586, 1277, // -5 .. -1
    1024, 820, 655, 526, 423, // 0 .. 4
    335, 272, 215, 172, 137, // 5 .. 9
    110, 87, 70, 56, 45, // 10 .. 14
    36, 29, 23, 18, 15, // 15 .. 19
];

/// The weight of a nice value (clamped to -20..=19).
pub fn nice_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

#[derive(Debug, Clone, Copy, Default)]
struct FairTask {
    weight: u64,
    slice: Duration,
    v: i64,
    vd: i64,
    lag: i64,
    runnable: bool,
    fresh: bool,
    since: Time,
    v0: i64,
}

/// The fair (EEVDF) policy.
#[derive(Debug, Clone)]
pub struct Fair {
    base_slice: Duration,
    tasks: Vec<FairTask>,
    ready: ReadySet<(i64, u64)>,
    seq: u64,
    // Sums over runnable tasks keep V = sum_wv / sum_w exact without a scan.
    sum_w: u64,
    sum_wv: i128,
    idle_v: i64,
    running: Vec<TaskId>,
}

impl Fair {
    /// A policy whose tasks request `base_slice` ns of CPU per turn (must be > 0).
    pub fn new(base_slice: Duration) -> Self {
        Self {
            base_slice: base_slice.max(1),
            tasks: Vec::new(),
            ready: ReadySet::new(),
            seq: 0,
            sum_w: 0,
            sum_wv: 0,
            idle_v: 0,
            running: Vec::new(),
        }
    }

    /// A task's current virtual runtime (as of the last call that carried a time).
    pub fn vruntime(&self, id: TaskId) -> i64 {
        self.tasks[id].v
    }

    /// A task's weight.
    pub fn weight(&self, id: TaskId) -> u64 {
        self.tasks[id].weight
    }

    /// The weighted average vruntime V of the runnable tasks.
    pub fn avg_vruntime(&self) -> i64 {
        if self.sum_w == 0 {
            self.idle_v
        } else {
            self.sum_wv.div_euclid(i128::from(self.sum_w)) as i64
        }
    }

    fn vslice(&self, id: TaskId) -> i64 {
        let t = &self.tasks[id];
        (u128::from(t.slice) * u128::from(NICE_0_WEIGHT) / u128::from(t.weight)) as i64
    }

    fn eligible(&self, id: TaskId) -> bool {
        self.sum_w == 0 || i128::from(self.tasks[id].v) * i128::from(self.sum_w) <= self.sum_wv
    }

    fn update_curr(&mut self, now: Time) {
        for &id in &self.running {
            let t = &mut self.tasks[id];
            let ran = u128::from(now.saturating_sub(t.since));
            let new_v = t.v0 + (ran * u128::from(NICE_0_WEIGHT) / u128::from(t.weight)) as i64;
            self.sum_wv += i128::from(t.weight) * i128::from(new_v - t.v);
            t.v = new_v;
        }
    }

    fn enqueue(&mut self, id: TaskId) {
        self.seq += 1;
        self.ready.insert(id, (self.tasks[id].vd, self.seq));
    }

    fn candidate(&self) -> Option<TaskId> {
        self.ready.iter().map(|(_, id)| id).find(|&id| self.eligible(id))
    }

    fn join(&mut self, id: TaskId) {
        let avg = self.avg_vruntime();
        let slice = self.vslice(id);
        let t = &mut self.tasks[id];
        if t.fresh {
            t.fresh = false;
            t.v = avg;
            t.vd = avg + slice / 2;
        } else {
            t.v = avg - t.lag;
            t.vd = t.v + slice;
        }
        t.runnable = true;
        self.sum_w += t.weight;
        self.sum_wv += i128::from(t.weight) * i128::from(t.v);
    }

    fn leave(&mut self, id: TaskId) {
        let avg = self.avg_vruntime();
        let limit = self.vslice(id);
        let t = &mut self.tasks[id];
        t.lag = (avg - t.v).clamp(-limit, limit);
        t.runnable = false;
        self.sum_w -= t.weight;
        self.sum_wv -= i128::from(t.weight) * i128::from(t.v);
        if self.sum_w == 0 {
            self.idle_v = avg;
        }
    }
}

impl SchedPolicy for Fair {
    fn name(&self) -> &'static str {
        "fair"
    }

    fn admit(&mut self, id: TaskId, params: &SchedParams) {
        if id >= self.tasks.len() {
            self.tasks.resize(id + 1, FairTask::default());
        }
        let weight = params.weight.unwrap_or_else(|| nice_to_weight(params.nice)).max(1);
        let slice = params.slice.unwrap_or(self.base_slice).max(1);
        self.tasks[id] = FairTask { weight, slice, fresh: true, ..FairTask::default() };
    }

    fn wake(&mut self, id: TaskId, now: Time, _arrival: Arrival) {
        self.update_curr(now);
        if !self.tasks[id].runnable {
            self.join(id);
        }
        if !self.ready.contains(id) {
            self.enqueue(id);
        }
    }

    fn cancel(&mut self, id: TaskId, now: Time) {
        self.update_curr(now);
        if self.ready.remove(id).is_some() && self.tasks[id].runnable {
            self.leave(id);
        }
    }

    fn pick_next(&mut self, now: Time) -> Option<TaskId> {
        self.update_curr(now);
        // If nothing queued is eligible (tasks running elsewhere are behind), stay work-conserving.
        let id = self.candidate().or_else(|| self.ready.first().map(|(_, id)| id))?;
        self.ready.remove(id);
        let t = &mut self.tasks[id];
        t.since = now;
        t.v0 = t.v;
        self.running.push(id);
        Some(id)
    }

    fn run_limit(&self, id: TaskId, _now: Time) -> Option<Duration> {
        let t = &self.tasks[id];
        let left = (t.vd - t.v).max(1) as u128;
        let w = u128::from(t.weight);
        let nice0 = u128::from(NICE_0_WEIGHT);
        // Round up so that the slice has really been used when the limit fires.
        Some(((left * w).div_ceil(nice0)).max(1) as Duration)
    }

    fn stop(&mut self, id: TaskId, now: Time, why: Stop) {
        self.update_curr(now);
        if let Some(pos) = self.running.iter().position(|&r| r == id) {
            self.running.swap_remove(pos);
        }
        match why {
            Stop::Preempted => self.enqueue(id),
            Stop::Expired => {
                let slice = self.vslice(id);
                let t = &mut self.tasks[id];
                if t.v >= t.vd {
                    t.vd = t.v + slice;
                }
                self.enqueue(id);
            }
            _ => {
                if self.tasks[id].runnable {
                    self.leave(id);
                }
            }
        }
    }

    fn should_preempt(&mut self, running: TaskId, now: Time) -> bool {
        self.update_curr(now);
        self.candidate().is_some_and(|c| self.tasks[c].vd < self.tasks[running].vd)
    }

    fn precedes(&self, a: TaskId, b: TaskId, _now: Time) -> bool {
        (self.tasks[a].vd, a) < (self.tasks[b].vd, b)
    }

    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::with_ready;

    #[test]
    fn weight_table_matches_kernel_anchors() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        assert_eq!(nice_to_weight(5), 335);
        assert_eq!(nice_to_weight(99), 15);
    }

    #[test]
    fn explicit_weight_overrides_nice() {
        let mut f = Fair::new(4);
        f.admit(
            0,
            &SchedParams { nice: -5, weight: Some(SCHED_IDLE_WEIGHT), ..Default::default() },
        );
        f.admit(1, &SchedParams { nice: 5, ..Default::default() });
        assert_eq!((f.weight(0), f.weight(1)), (3, 335));
        assert_eq!(
            SchedParams { weight: Some(0), ..Default::default() }.validate(),
            Err(crate::PolicyError::ZeroWeight)
        );
    }

    #[test]
    fn equal_tasks_alternate_by_slice() {
        let mut f = with_ready(Fair::new(4), 2);
        // Both start at V = 0 with half a slice: the tie goes to the first queued.
        assert_eq!(f.pick_next(0), Some(0));
        assert_eq!(f.run_limit(0, 0), Some(2));
        f.stop(0, 2, Stop::Expired);
        assert_eq!(f.pick_next(2), Some(1));
        assert_eq!(f.run_limit(1, 2), Some(2));
        f.stop(1, 4, Stop::Expired);
        assert_eq!(f.pick_next(4), Some(0));
        assert_eq!(f.run_limit(0, 4), Some(4));
    }

    #[test]
    fn a_task_with_its_own_slice_runs_that_long_per_turn() {
        let mut f = Fair::new(4);
        f.admit(0, &SchedParams { slice: Some(12), ..Default::default() });
        f.admit(1, &SchedParams::default());
        for id in 0..2 {
            f.wake(id, 0, Arrival::Resume);
        }
        // A fresh task gets half its slice to its first deadline, then whole slices.
        assert_eq!(f.pick_next(0), Some(1));
        assert_eq!(f.run_limit(1, 0), Some(2));
        f.stop(1, 2, Stop::Expired);
        assert_eq!(f.pick_next(2), Some(0));
        assert_eq!(f.run_limit(0, 2), Some(6));
        f.stop(0, 8, Stop::Expired);
        assert_eq!(f.run_limit(0, 8), Some(12), "after its first turn, a whole 12");
    }

    #[test]
    fn lag_survives_a_sleep() {
        let mut f = with_ready(Fair::new(4), 2);
        assert_eq!(f.pick_next(0), Some(0));
        f.stop(0, 2, Stop::Blocked);
        // Task 0 left at v = 2 while V was 1, so its lag is -1; V is now task 1's 0.
        assert_eq!(f.avg_vruntime(), 0);
        f.wake(0, 2, Arrival::Resume);
        assert_eq!(f.vruntime(0), 1);
        assert_eq!(f.pick_next(2), Some(1));
    }
}
