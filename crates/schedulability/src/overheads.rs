//! The machine's overheads, and the overhead-aware twins of the uniprocessor tests: the
//! textbook tests assume a release that runs at once, free context switches and no
//! interrupts; the twins charge what a measured [`Overheads`] says, as SchedCAT's `overheads`
//! package does (B. Brandenburg, "Scheduling and Locking in Multiprocessor Real-Time
//! Operating Systems", PhD thesis, UNC Chapel Hill 2011, chapter 3; B. Brandenburg,
//! H. Leontyev and J. Anderson, "An Overview of Interrupt Accounting Techniques for
//! Multiprocessor Real-Time Systems", Journal of Systems Architecture 2011).

use num_bigint::BigUint;
use schedlab_policy::Duration;
use serde::{Deserialize, Serialize};

use crate::fixed::{analyse, Priority};
use crate::{exact, valid, Outcome, Task, Verdict};

/// What the machine costs a task set, each figure an upper bound (a high percentile of its
/// measured distribution) in the set's time unit (ns in practice). The zero value
/// ([`Default`]) charges nothing: every twin then gives its plain test's outcome.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Overheads {
    /// Release latency: from a job's arrival (its timer's expiry) until the scheduler has
    /// noticed it (SchedCAT's RELEASE-LATENCY).
    pub release_latency: Duration,
    /// One scheduling decision (SchedCAT's SCHEDULE).
    pub scheduling: Duration,
    /// One context switch (SchedCAT's CXS).
    pub context_switch: Duration,
    /// The cache-related delay a preempted job suffers when it resumes (CPMD).
    pub cache_delay: Duration,
    /// One release interrupt's handler (SchedCAT's RELEASE).
    pub release: Duration,
    /// One tick interrupt's handler (SchedCAT's TICK).
    pub tick: Duration,
    /// The tick period (SchedCAT's quantum length); 0: no tick is charged.
    pub tick_period: Duration,
    /// The percentile of each measured distribution the figures are, if they were measured.
    pub percentile: Option<f64>,
    /// Where the figures came from (a calibration, a file, the simulator's costs).
    pub source: String,
}

/// The suffix of each overhead-aware twin's name: `rta-rm` and `rta-rm+overheads`.
pub const TWIN_SUFFIX: &str = "+overheads";

impl Overheads {
    /// What each job is charged for being scheduled and switched to, and for resuming after a
    /// preemption (which the preempting job is charged for): 2 (scheduling + context switch)
    /// plus the cache-related delay.
    pub fn per_job(&self) -> Duration {
        2 * (self.scheduling + self.context_switch) + self.cache_delay
    }

    /// Whether it charges nothing.
    pub fn is_zero(&self) -> bool {
        self.release_latency == 0
            && self.per_job() == 0
            && self.release == 0
            && (self.tick == 0 || self.tick_period == 0)
    }

    /// The interrupt pseudo-tasks of SchedCAT's fixed-priority model: the tick (C = tick,
    /// T = tick period) and a release interrupt per task (C = release, T = the task's
    /// period), each with the release latency as jitter, above every task.
    fn interrupts(&self, tasks: &[Task]) -> Vec<Task> {
        let tick = (self.tick > 0 && self.tick_period > 0)
            .then(|| Task::new(self.tick, self.tick_period).jitter(self.release_latency));
        let releases = tasks
            .iter()
            .filter(|_| self.release > 0)
            .map(|t| Task::new(self.release, t.period).jitter(self.release_latency));
        tick.into_iter().chain(releases).collect()
    }
}

/// Response-time analysis with overheads for preemptive fixed priorities on one CPU
/// (SchedCAT's `overheads/fp.py`, after Brandenburg's thesis, section 3.4; the analysis is
/// [`crate::response_times`] with release jitter, Tindell, Burns and Wellings 1994): each
/// task's C grows by [`Overheads::per_job`], its jitter by the release latency plus its
/// release interrupt, and the tick and release interrupts interfere with every task as
/// tasks of the highest priority with the release latency as jitter. Response times count
/// from the arrival (the timer's expiry), so R_i = J_i + w_i <= D_i. With zero overheads it
/// is [`crate::response_times`].
pub fn response_times_with_overheads(tasks: &[Task], by: Priority, o: &Overheads) -> Outcome {
    let delay = o.release_latency + o.release;
    let charged: Vec<Task> = tasks
        .iter()
        .map(|t| Task { wcet: t.wcet + o.per_job(), jitter: t.jitter + delay, ..*t })
        .collect();
    analyse(&charged, by, &o.interrupts(tasks))
}

/// The set an EDF-like (job-level fixed priority) scheduler on one CPU sees once overheads
/// are charged, as SchedCAT's `overheads/jlfp.py` inflates it (Brandenburg's thesis, section
/// 3.3, preemption-centric interrupt accounting; one CPU, interrupts not dedicated):
/// with u_tick = tick / Q, u_rel = sum release / T_i and s = 1 - u_tick - u_rel,
/// c_pre = (tick + L u_tick + n release + L u_rel) / s, and each task gets
/// C' = ceil((C + per-job) / s + 2 c_pre), T' = T - L and D' = D - L (L the release
/// latency). Exact rationals, rounded as SchedCAT's `quantize_params` does (C up).
///
/// `Err` with the verdict when the overheads alone settle it: not schedulable when the
/// interrupts take the whole CPU (s <= 0) or a deadline or period is no longer than the
/// release latency; inconclusive for an invalid set.
pub fn edf_with_overheads(tasks: &[Task], o: &Overheads) -> Result<Vec<Task>, Outcome> {
    if !valid(tasks) {
        return Err(Outcome::of(Verdict::Inconclusive));
    }
    let lost = Err(Outcome::of(Verdict::NotSchedulable));
    let latency = o.release_latency;
    if tasks.iter().any(|t| t.period <= latency || t.deadline <= latency) {
        return lost;
    }
    // Everything over one denominator Q * prod T_i (Q = 1 without a tick).
    let (tick, q) = if o.tick > 0 && o.tick_period > 0 { (o.tick, o.tick_period) } else { (0, 1) };
    let (rel_p, rel_q) = exact::sum(tasks.iter().map(|t| (o.release, t.period)));
    let den = &rel_q * q;
    let taken = &rel_q * tick + &rel_p * q;
    if taken >= den {
        return lost;
    }
    let scale = &den - taken;
    let n = tasks.len() as u64;
    let pre = &rel_q * (u128::from(tick) * u128::from(q))
        + &rel_q * (u128::from(latency) * u128::from(tick))
        + &rel_q * (u128::from(n) * u128::from(o.release) * u128::from(q))
        + &rel_p * (u128::from(latency) * u128::from(q));
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let work = BigUint::from(t.wcet + o.per_job()) * &den + &pre * 2u32;
        let wcet = (work + &scale - 1u32) / &scale;
        let Ok(wcet) = u64::try_from(wcet) else { return lost };
        out.push(Task { wcet, period: t.period - latency, deadline: t.deadline - latency, ..*t });
    }
    Ok(out)
}

/// `test` on the set [`edf_with_overheads`] inflates, or the verdict the overheads settle.
pub fn with_edf_overheads(
    tasks: &[Task],
    o: &Overheads,
    test: impl FnOnce(&[Task]) -> Outcome,
) -> Outcome {
    match edf_with_overheads(tasks, o) {
        Ok(set) => test(&set),
        Err(outcome) => outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{qpa, response_times, Response};

    fn costs(context_switch: Duration) -> Overheads {
        Overheads { context_switch, ..Overheads::default() }
    }

    #[test]
    fn the_zero_model_charges_nothing() {
        let set = [Task::new(1, 4), Task::new(2, 6), Task::new(3, 10)];
        let zero = Overheads::default();
        assert!(zero.is_zero());
        assert_eq!(
            response_times_with_overheads(&set, Priority::Rate, &zero),
            response_times(&set, Priority::Rate)
        );
        assert_eq!(edf_with_overheads(&set, &zero), Ok(set.to_vec()));
        // A tick without a period is not charged.
        assert!(Overheads { tick: 5, ..zero }.is_zero());
    }

    #[test]
    fn fixed_priorities_pay_two_switches_per_job_and_the_release_delay_as_jitter() {
        // Buttazzo's RM example with a switch cost of 0.1 in tenths: C = 12, 22, 32 (each
        // job charged 2 x 1) and T = 40, 60, 100. For the last: w = 66, 32 + 24 + 44 = 100,
        // 32 + 36 + 44 = 112 > 100: a miss that the plain analysis does not see, at 112.
        let set = [Task::new(10, 40), Task::new(20, 60), Task::new(30, 100)];
        let out = response_times_with_overheads(&set, Priority::Rate, &costs(1));
        assert_eq!(
            out.response_times,
            [Response::within(12), Response::within(34), Response::past(112)]
        );
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        assert_eq!(response_times(&set, Priority::Rate).verdict, Verdict::Schedulable);
        // A release latency of 2 delays every task and its interference: the first task's
        // R = 2 + 10 = 12, the second's w = 30, 20 + ceil(32/40) 10 = 30: R = 32.
        let late = Overheads { release_latency: 2, ..Overheads::default() };
        let out = response_times_with_overheads(&set[..2], Priority::Rate, &late);
        assert_eq!(out.response_times, [Response::within(12), Response::within(32)]);
    }

    #[test]
    fn interrupts_interfere_with_every_task() {
        // One task (10, 100), a tick of 1 every 10, a release interrupt of 2 per job:
        // J = 2, w = 10 + 1 + 2 = 13, 10 + 2 + 2 = 14, 10 + 2 + 2: R = 16.
        let o = Overheads { release: 2, tick: 1, tick_period: 10, ..Overheads::default() };
        let out = response_times_with_overheads(&[Task::new(10, 100)], Priority::Rate, &o);
        assert_eq!(out.response_times, [Response::within(16)]);
    }

    #[test]
    fn edf_inflation_follows_schedcats_jlfp_formulas() {
        // Switch 1, scheduling 1: 4 per job; latency 5 shortens T and D.
        let o = Overheads {
            context_switch: 1,
            scheduling: 1,
            release_latency: 5,
            ..Default::default()
        };
        let set = [Task::new(10, 100), Task::new(20, 50).deadline(40)];
        let inflated = edf_with_overheads(&set, &o).unwrap();
        assert_eq!(inflated, [Task::new(14, 95), Task::new(24, 45).deadline(35)]);
        // A tick of 1 every 10 (u_tick = 0.1, s = 0.9), no release cost, latency 0:
        // c_pre = 1 / 0.9, C' = ceil(10 / 0.9 + 2 / 0.9) = ceil(13.33) = 14.
        let o = Overheads { tick: 1, tick_period: 10, ..Default::default() };
        assert_eq!(edf_with_overheads(&[Task::new(10, 100)], &o).unwrap()[0].wcet, 14);
        // Release interrupts of 1 per job at T = 10 and 20: u_rel = 0.15, s = 0.85,
        // c_pre = 2 / 0.85, C' of (4, 10) = ceil((4 + 4) / 0.85) = ceil(9.41) = 10.
        let o = Overheads { release: 1, ..Default::default() };
        let set = [Task::new(4, 10), Task::new(2, 20)];
        let inflated = edf_with_overheads(&set, &o).unwrap();
        assert_eq!((inflated[0].wcet, inflated[1].wcet), (10, 8));
        assert_eq!(with_edf_overheads(&set, &o, qpa).verdict, Verdict::NotSchedulable);
    }

    #[test]
    fn overheads_that_take_the_cpu_or_the_deadline_settle_the_verdict() {
        let set = [Task::new(1, 10)];
        let tick = Overheads { tick: 10, tick_period: 10, ..Default::default() };
        assert_eq!(with_edf_overheads(&set, &tick, qpa).verdict, Verdict::NotSchedulable);
        let slow = Overheads { release_latency: 10, ..Default::default() };
        assert_eq!(with_edf_overheads(&set, &slow, qpa).verdict, Verdict::NotSchedulable);
        let out = response_times_with_overheads(&set, Priority::Rate, &slow);
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        assert_eq!(
            with_edf_overheads(&[Task::new(1, 0)], &slow, qpa).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn the_model_reads_back_from_json() {
        let o = Overheads {
            release_latency: 40_000,
            context_switch: 1_700,
            percentile: Some(99.0),
            source: "calibrate".into(),
            ..Default::default()
        };
        let text = serde_json::to_string(&o).unwrap();
        assert_eq!(serde_json::from_str::<Overheads>(&text).unwrap(), o);
        let partial: Overheads = serde_json::from_str(r#"{"context_switch": 5}"#).unwrap();
        assert_eq!(partial, costs(5));
        assert!(serde_json::from_str::<Overheads>(r#"{"cxs": 5}"#).is_err());
    }
}
