//! The overhead-aware twins of schedlab's own two ways of giving a set its CPU time: the
//! live EDF dispatcher, which decides at every quantum boundary, and SCHED_DEADLINE with a
//! runtime of exactly C. SchedCAT's models ([`crate::edf_with_overheads`]) charge a kernel
//! scheduler's overheads; these charge what these two add, so that the knee they predict
//! is the knee a live run measures (issue #40, item 4).

use schedlab_policy::Duration;

use crate::{edf_utilisation, edf_with_overheads, exact, processor_demand, valid};
use crate::{Outcome, Overheads, Task, Verdict};

/// The live dispatcher's quantum and what one decision costs it (calibrate's
/// `decision_cost_edf`), in the set's time unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quanta {
    /// The quantum: the dispatcher decides at every multiple of it.
    pub quantum: Duration,
    /// One decision, wake-up to sleep, as the dispatcher measures it.
    pub decision: Duration,
}

impl Quanta {
    /// What each quantum the dispatcher gives a worker loses of its work: the dispatcher's
    /// decision at the boundary, two context switches (the worker to the dispatcher and
    /// back) and the ticks `o` charges that can fall in the quantum, ceil(quantum / their
    /// period) of them (none where interrupts count in a job's own CPU time: the session's
    /// `Calibration::overheads_for` leaves them out). The timer interrupt that
    /// wakes the dispatcher lands in the running worker, and how late the dispatcher runs
    /// after it is time the worker keeps: a late boundary moves time between quanta and
    /// loses none, except after an idle CPU ([`Quanta::per_job`]).
    pub fn per_quantum(&self, o: &Overheads) -> Duration {
        let ticks = if o.tick > 0 && o.tick_period > 0 {
            self.quantum.div_ceil(o.tick_period) * o.tick
        } else {
            0
        };
        self.decision + 2 * o.context_switch + ticks
    }

    /// What each job loses once: the release latency. A job's quanta start late by it only
    /// when the CPU idled before the boundary (the dispatcher wakes from idle); a job that
    /// preempts another starts on a busy CPU, and the preempted one may resume after an
    /// idle quantum: one release latency per release either way, charged to the releasing
    /// job as SchedCAT's JLFP model charges a preemption.
    pub fn per_job(&self, o: &Overheads) -> Duration {
        o.release_latency
    }

    /// The share of the CPU the dispatcher itself takes at real-time priority: a decision
    /// and two switches every quantum.
    pub fn own_share(&self, o: &Overheads) -> (u64, u64) {
        (self.decision + 2 * o.context_switch, self.quantum)
    }
}

/// The set as the EDF dispatcher serves it: a job gets the CPU in whole quanta, each quantum
/// gives it quantum - [`Quanta::per_quantum`] of work, and it needs C + [`Quanta::per_job`],
/// so C' = ceil((C + per job) / (quantum - per quantum)) quanta; T and D unchanged.
///
/// `Err` with the verdict when it cannot apply: not schedulable when the per-quantum cost
/// eats the quantum; inconclusive when a period or deadline is not a multiple of the
/// quantum (releases are computed on the grid start + k T, so a release off the grid waits
/// for the next boundary, which this model does not charge), or the set is invalid.
pub fn dispatcher_quanta(tasks: &[Task], q: Quanta, o: &Overheads) -> Result<Vec<Task>, Outcome> {
    let off_grid = |d: Duration| q.quantum == 0 || !d.is_multiple_of(q.quantum);
    if !valid(tasks) || tasks.iter().any(|t| off_grid(t.period) || off_grid(t.deadline)) {
        return Err(Outcome::of(Verdict::Inconclusive));
    }
    let cost = q.per_quantum(o);
    if cost >= q.quantum {
        return Err(Outcome::of(Verdict::NotSchedulable));
    }
    let useful = q.quantum - cost;
    let job = q.per_job(o);
    Ok(tasks
        .iter()
        .map(|t| Task { wcet: (t.wcet + job).div_ceil(useful) * q.quantum, ..*t })
        .collect())
}

/// Whether the real-time time a dispatcher's set takes fits `share` (RT throttling): the
/// jobs' C (idle rests of quanta are not real-time time) and the dispatcher's own decisions
/// and switches, at every boundary and at every job's completion (the worker wakes it).
pub fn dispatcher_within_share(
    tasks: &[Task],
    q: Quanta,
    o: &Overheads,
    share: Option<(u64, u64)>,
) -> bool {
    let (own, per) = q.own_share(o);
    let mut charged: Vec<Task> = tasks.iter().map(|t| Task { wcet: t.wcet + own, ..*t }).collect();
    if per > 0 {
        charged.push(Task::new(own, per));
    }
    within_share(&charged, share)
}

/// The twin of `edf-demand` for schedlab's live EDF dispatcher (`edf`): the processor-demand
/// test ([`processor_demand`], Baruah, Rosier and Howell 1990) on the set
/// [`dispatcher_quanta`] rounds to whole quanta. The model is the dispatcher's own design
/// (crates/dispatch/src/lib.rs, "Quanta, releases and completions": one decision per
/// boundary, the chosen worker at FIFO 97 until the next one), its costs calibrate's
/// release latency, context switch, tick and `decision_cost_edf`. With parameters on the
/// quantum grid, EDF at boundaries is EDF in discrete time, so the demand test is exact for
/// the rounded set; the overheads are 99th percentiles, so the twin is sufficient.
pub fn edf_dispatcher_with_overheads(tasks: &[Task], q: Quanta, o: &Overheads) -> Outcome {
    match dispatcher_quanta(tasks, q, o) {
        Ok(set) => processor_demand(&set),
        Err(outcome) => outcome,
    }
}

/// How a SCHED_DEADLINE set is configured: each task's runtime is its C, each job does
/// `work_ppm` parts per million of it (`work_fraction`), and the kernel admits reservations
/// up to `share` (RT throttling: runtime per period, e.g. 950000 of 1000000 µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservations {
    /// A job's work as parts per million of its runtime C.
    pub work_ppm: u32,
    /// The bandwidth the kernel admits, (runtime, period); None: the whole CPU.
    pub share: Option<(u64, u64)>,
}

/// Whether the sum of C/T of `tasks` is at most `share`, the real-time bandwidth the kernel
/// gives (RT throttling's runtime per period; SCHED_DEADLINE's admission checks the same),
/// exactly; None, or a period of 0: the whole CPU.
pub fn within_share(tasks: &[Task], share: Option<(u64, u64)>) -> bool {
    let Some((runtime, period)) = share.filter(|s| s.1 > 0) else { return true };
    let (p, q) = exact::sum(tasks.iter().map(|t| (t.wcet, t.period)));
    !exact::cmp(&p, &q, &runtime.into(), &period.into()).is_gt()
}

/// The twin of `edf-utilisation` for SCHED_DEADLINE with runtime = C (`deadline`): a job
/// meets its deadline only if it fits its reservation. The kernel charges a task's runtime
/// with whatever runs in its context: its own work, the scheduling and switch costs of its
/// job, and the interrupts (tick, releases) that land while it runs. So each job's charged
/// demand is its work (C x work_ppm / 10^6) inflated as SchedCAT's JLFP model does
/// ([`edf_with_overheads`], Brandenburg's thesis, section 3.3), and:
///
/// - not schedulable when some charged demand exceeds the runtime C: that job is throttled
///   until its next period and misses. A job of exactly C work never fits a runtime of C
///   once any overhead is charged, so with `work_fraction = 1` this twin rejects every set;
///   with a work fraction that leaves room for the charged overheads it accepts;
/// - not schedulable when the runtimes exceed the bandwidth the kernel admits (`share`:
///   sched_setattr refuses the last task);
/// - else `edf-utilisation` ([`edf_utilisation`], Liu and Layland 1973) on the
///   reservations themselves (runtime C, period and deadline shortened by the release
///   latency, since a job's deadline counts from its arrival and the kernel's from its
///   wake-up, as in SchedCAT's model).
pub fn deadline_with_overheads(tasks: &[Task], r: Reservations, o: &Overheads) -> Outcome {
    if !valid(tasks) {
        return Outcome::of(Verdict::Inconclusive);
    }
    let work: Vec<Task> = tasks
        .iter()
        .map(|t| Task {
            wcet: (u128::from(t.wcet) * u128::from(r.work_ppm)).div_ceil(1_000_000) as Duration,
            ..*t
        })
        .collect();
    let charged = match edf_with_overheads(&work, o) {
        Ok(set) => set,
        Err(outcome) => return outcome,
    };
    if charged.iter().zip(tasks).any(|(c, t)| c.wcet > t.wcet) {
        return Outcome::of(Verdict::NotSchedulable);
    }
    if !within_share(tasks, r.share) {
        return Outcome::of(Verdict::NotSchedulable);
    }
    let reserved: Vec<Task> = tasks
        .iter()
        .zip(&charged)
        .map(|(t, c)| Task { period: c.period, deadline: c.deadline, ..*t })
        .collect();
    edf_utilisation(&reserved)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = 1_000_000;
    const US: Duration = 1_000;

    fn calibrated() -> Overheads {
        // Figures of the order calibrate measures: 30 µs release latency, 5 µs switch.
        Overheads { release_latency: 30 * US, context_switch: 5 * US, ..Default::default() }
    }

    fn quanta(decision: Duration) -> Quanta {
        Quanta { quantum: MS, decision }
    }

    #[test]
    fn a_job_needs_whole_quanta_of_what_each_quantum_leaves() {
        // Quantum 1 ms, decision 20 µs: each quantum loses 20 + 2 x 5 = 30 µs, leaving
        // 970 µs; each job needs its C and one release latency, 30 µs more.
        // C = 1.9 ms: ceil(1930 / 970) = 2 quanta; C = 0.95 ms: ceil(980 / 970) = 2.
        let q = quanta(20 * US);
        assert_eq!((q.per_quantum(&calibrated()), q.per_job(&calibrated())), (30 * US, 30 * US));
        let set = [Task::new(1_900 * US, 10 * MS), Task::new(950 * US, 5 * MS)];
        let rounded = dispatcher_quanta(&set, q, &calibrated()).unwrap();
        assert_eq!(rounded, [Task::new(2 * MS, 10 * MS), Task::new(2 * MS, 5 * MS)]);
        // A tick of 10 µs every 4 ms lengthens a job only where the kernel does not count
        // it in the job's CPU time (where it does, the overheads charge no tick): then
        // ceil(1 / 4) = 1 tick per quantum, 40 µs.
        let ticking = Overheads { tick: 10 * US, tick_period: 4 * MS, ..calibrated() };
        let counted = Overheads { tick: 0, ..ticking.clone() };
        assert_eq!(q.per_quantum(&counted), 30 * US);
        assert_eq!(q.per_quantum(&ticking), 40 * US);
    }

    #[test]
    fn the_dispatcher_twin_rejects_a_set_the_plain_demand_test_accepts() {
        // (4, 10), (5, 10) ms: U = 0.9, edf-demand accepts. Each quantum leaves 970 µs:
        // 4.03 ms needs 5 quanta, 5.03 ms needs 6: 11 ms of demand by 10 ms.
        let q = quanta(20 * US);
        let set = [Task::new(4 * MS, 10 * MS), Task::new(5 * MS, 10 * MS)];
        assert_eq!(processor_demand(&set).verdict, Verdict::Schedulable);
        let out = edf_dispatcher_with_overheads(&set, q, &calibrated());
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        // (3.5, 10), (4.5, 10): 4 + 5 quanta = 9 ms by 10 ms: accepted.
        let light = [Task::new(3_500 * US, 10 * MS), Task::new(4_500 * US, 10 * MS)];
        let out = edf_dispatcher_with_overheads(&light, q, &calibrated());
        assert_eq!(out.verdict, Verdict::Schedulable);
        // Without overheads a set on the grid is its plain verdict.
        let free = quanta(0);
        let out = edf_dispatcher_with_overheads(&set, free, &Overheads::default());
        assert_eq!(out.verdict, Verdict::Schedulable);
        // A cost of a whole quantum leaves nothing; a period off the grid is not modelled.
        assert_eq!(
            edf_dispatcher_with_overheads(&light, quanta(MS), &calibrated()).verdict,
            Verdict::NotSchedulable
        );
        let off = [Task::new(MS, 10 * MS + 1)];
        assert_eq!(
            edf_dispatcher_with_overheads(&off, q, &calibrated()).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn the_dispatcher_takes_its_own_share_of_rt_throttling() {
        // U = 0.93: within 95%. The dispatcher adds 30 µs a quantum (3%) and 30 µs a job
        // (0.3% each at 10 ms): 0.966 > 0.95, throttled. Whole quanta do not count: the
        // rest of a job's last quantum idles.
        let set = [Task::new(4_650 * US, 10 * MS), Task::new(4_650 * US, 10 * MS)];
        let share = Some((950_000, 1_000_000));
        assert!(within_share(&set, share));
        assert!(!dispatcher_within_share(&set, quanta(20 * US), &calibrated(), share));
        let light = [Task::new(4 * MS, 10 * MS), Task::new(4 * MS, 10 * MS)];
        assert!(dispatcher_within_share(&light, quanta(20 * US), &calibrated(), share));
        assert!(dispatcher_within_share(&set, quanta(20 * US), &calibrated(), None));
    }

    #[test]
    fn a_job_of_exactly_its_runtime_does_not_fit_once_overheads_are_charged() {
        // (2, 10), (3, 20) ms, runtime = C. Work fraction 1: the first job's charge is
        // 2 ms + 2 x 5 µs = 2.01 ms > 2 ms: rejected, though edf-utilisation (U = 0.35)
        // accepts the plain set.
        let set = [Task::new(2 * MS, 10 * MS), Task::new(3 * MS, 20 * MS)];
        assert_eq!(edf_utilisation(&set).verdict, Verdict::Schedulable);
        let whole = Reservations { work_ppm: 1_000_000, share: None };
        let out = deadline_with_overheads(&set, whole, &calibrated());
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        // Work fraction 0.9: 1.8 ms + 10 µs = 1.81 ms <= 2 ms and 2.7 + 0.01 <= 3 ms; the
        // reservations at T - 30 µs: 2/9.97 + 3/19.97 = 0.351 <= 1: accepted.
        let room = Reservations { work_ppm: 900_000, share: None };
        let out = deadline_with_overheads(&set, room, &calibrated());
        assert_eq!(out.verdict, Verdict::Schedulable);
        // With no overheads, a job of C fits a runtime of C.
        let out = deadline_with_overheads(&set, whole, &Overheads::default());
        assert_eq!(out.verdict, Verdict::Schedulable);
    }

    #[test]
    fn the_deadline_twin_respects_the_admitted_bandwidth() {
        // U = 0.5 + 0.48 = 0.98 > 0.95 of RT throttling's 950000 / 1000000: the kernel
        // refuses the last reservation. Without the share it is admitted (0.98 / (1 - 30 µs
        // / 10 ms) < 1).
        let set = [Task::new(5 * MS, 10 * MS), Task::new(24 * MS, 50 * MS)];
        let share = Reservations { work_ppm: 500_000, share: Some((950_000, 1_000_000)) };
        let out = deadline_with_overheads(&set, share, &calibrated());
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        let all = Reservations { share: None, ..share };
        assert_eq!(deadline_with_overheads(&set, all, &calibrated()).verdict, Verdict::Schedulable);
    }
}
