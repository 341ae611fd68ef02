//! Classic schedulability tests over one periodic task set, in exact arithmetic.
//!
//! A set is a slice of [`Task`]s (integer C, T, D in any one time unit, an optional fixed
//! priority and a DWCS window). Every test returns an [`Outcome`]: a [`Verdict`] (a sufficient
//! test says [`Verdict::Inconclusive`] where an exact one would say not schedulable), plus the
//! response times of response-time analysis or the CPU of each task of a partitioning.
//! [`TESTS`] lists them all by name with one signature, `fn(&[Task], cpus, &Overheads) ->
//! Outcome`: the plain tests ignore the [`Overheads`], their twins `<test>+overheads` charge
//! them (SchedCAT's overhead accounting), and under the zero model give the plain outcome.
//!
//! Jobs are released synchronously (the critical instant) and sporadic or periodic; the
//! exact tests compute in integers (`u128`) or big rationals, never in floats.
//!
//! ```
//! use schedlab_schedulability::{response_times, Priority, Response, Task, Verdict};
//!
//! let set = [Task::new(1, 4), Task::new(2, 6), Task::new(3, 8)];
//! let rta = response_times(&set, Priority::Rate);
//! assert_eq!(rta.verdict, Verdict::NotSchedulable);
//! // The third task's recurrence: 6, 7, 9 > 8 = D3.
//! let r = [Response::within(1), Response::within(3), Response::past(9)];
//! assert_eq!(rta.response_times, r);
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod edf;
mod exact;
mod fixed;
mod multi;
mod overheads;
mod reservation;

pub use edf::{busy_period, demand_bound, edf_utilisation, processor_demand, qpa};
pub use fixed::{hyperbolic, liu_layland, priority_order, response_times, Priority};
pub use multi::{density, gfb, partition, place, Fit, Placement, Size};
pub use overheads::{
    edf_with_overheads, response_times_with_overheads, with_edf_overheads, Overheads, TWIN_SUFFIX,
};
pub use reservation::{
    deadline_with_overheads, dispatcher_quanta, dispatcher_within_share,
    edf_dispatcher_with_overheads, within_share, Quanta, Reservations,
};

use schedlab_policy::dwcs::{self, WindowTask};
use schedlab_policy::{Duration, SchedParams, Window};

/// One periodic (or sporadic) task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Worst-case execution time C.
    pub wcet: Duration,
    /// Period (or minimum inter-arrival time) T, positive.
    pub period: Duration,
    /// Relative deadline D, positive.
    pub deadline: Duration,
    /// Fixed priority for [`Priority::Explicit`]; higher runs first, as SCHED_FIFO's.
    pub priority: Option<u32>,
    /// Window constraint x/y for DWCS.
    pub window: Window,
    /// Release jitter J: how long after its arrival a job may become ready (0 for the textbook
    /// model; the overhead-aware fixed-priority tests set it to the release delay).
    pub jitter: Duration,
}

impl Task {
    /// A task with C = `wcet` and T = D = `period`.
    pub const fn new(wcet: Duration, period: Duration) -> Self {
        Self { wcet, period, deadline: period, priority: None, window: Window::HARD, jitter: 0 }
    }

    /// The same task due `deadline` after each release.
    pub const fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The same task at fixed priority `priority`.
    pub const fn priority(mut self, priority: u32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The same task with release jitter `jitter`.
    pub const fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// The same task with window constraint x/y.
    pub const fn window(mut self, x: u32, y: u32) -> Self {
        self.window = Window::new(x, y);
        self
    }

    /// The task a policy's parameters describe, if they give C and T (D defaults to T).
    pub fn from_params(params: &SchedParams) -> Option<Self> {
        let (wcet, period) = (params.wcet?, params.period?);
        Some(Self {
            wcet,
            period,
            deadline: params.relative_deadline().unwrap_or(period),
            priority: Some(params.priority),
            window: params.window,
            jitter: 0,
        })
    }

    /// The smaller of D and T, the denominator of the task's density.
    pub fn min_deadline_period(&self) -> Duration {
        self.deadline.min(self.period)
    }
}

/// What a test concludes about a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Every deadline is met.
    Schedulable,
    /// Some deadline is missed (for a sufficient test: a necessary condition failed).
    NotSchedulable,
    /// A sufficient test could not show the set schedulable, or the test does not apply.
    Inconclusive,
}

/// The result of one test on one set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// Response-time analysis only: each task's [`Response`], in the set's order.
    pub response_times: Vec<Response>,
    /// Partitioning only, when every task was placed: the CPU of each task, in the set's order.
    pub cpu_of_task: Vec<usize>,
}

/// One task's response time from response-time analysis: a number and whether it meets the
/// deadline, as the textbooks write "R2 = 8 > D2 = 7".
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Response {
    /// With `met`, the worst-case response time R <= D; without, the first iterate of the
    /// recurrence that passed D, where the analysis stops (a lower bound of the worst case,
    /// `u64::MAX` if it does not fit).
    pub time: Duration,
    /// Whether R <= D.
    pub met: bool,
}

impl Response {
    /// A response time within the deadline.
    pub const fn within(time: Duration) -> Self {
        Self { time, met: true }
    }

    /// The first iterate past the deadline.
    pub const fn past(time: Duration) -> Self {
        Self { time, met: false }
    }
}

impl Outcome {
    /// An outcome with nothing but its verdict.
    pub const fn of(verdict: Verdict) -> Self {
        Self { verdict, response_times: Vec::new(), cpu_of_task: Vec::new() }
    }

    /// Whether the verdict is [`Verdict::Schedulable`].
    pub fn schedulable(&self) -> bool {
        self.verdict == Verdict::Schedulable
    }
}

/// Whether a test decides every set it applies to, or only shows some schedulable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestKind {
    /// Necessary and sufficient (on one CPU, for the sets it applies to).
    Exact,
    /// Sufficient only: a set it does not accept may still be schedulable.
    Sufficient,
}

/// One entry of [`TESTS`].
#[derive(Debug, Clone, Copy)]
pub struct Test {
    /// Its name, as figures and tables show it.
    pub name: &'static str,
    /// Exact or sufficient.
    pub kind: TestKind,
    /// Whether it speaks of one CPU only (inconclusive for any other count).
    pub uniprocessor: bool,
    /// Whether it charges the machine's [`Overheads`] (a twin, named `<test>+overheads`);
    /// the plain tests ignore them.
    pub overheads: bool,
    /// Runs it on a set for a number of CPUs under the given overheads; uniprocessor tests
    /// say [`Verdict::Inconclusive`] for any other count than 1.
    pub run: fn(&[Task], usize, &Overheads) -> Outcome,
}

impl Test {
    /// The plain test's name: its own, or the name its twin's suffix leaves.
    pub fn plain_name(&self) -> &'static str {
        self.name.strip_suffix(TWIN_SUFFIX).unwrap_or(self.name)
    }
}

/// The uniprocessor test `outcome` when `cpus` is 1, else inconclusive.
fn one_cpu(cpus: usize, outcome: impl FnOnce() -> Outcome) -> Outcome {
    if cpus == 1 {
        outcome()
    } else {
        Outcome::of(Verdict::Inconclusive)
    }
}

/// A plain test of one CPU.
const fn uni(
    name: &'static str,
    kind: TestKind,
    run: fn(&[Task], usize, &Overheads) -> Outcome,
) -> Test {
    Test { name, kind, uniprocessor: true, overheads: false, run }
}

/// A test of several CPUs (plain or a twin, as `overheads` says).
const fn multi(
    name: &'static str,
    overheads: bool,
    run: fn(&[Task], usize, &Overheads) -> Outcome,
) -> Test {
    Test { name, kind: TestKind::Sufficient, uniprocessor: false, overheads, run }
}

/// An overhead-aware twin of a test of one CPU.
const fn twin(name: &'static str, run: fn(&[Task], usize, &Overheads) -> Outcome) -> Test {
    Test { name, kind: TestKind::Sufficient, uniprocessor: true, overheads: true, run }
}

/// Every test, by name: the plain tests, then the overhead-aware twins of the uniprocessor
/// and partitioned ones (`<test>+overheads`; [`response_times_with_overheads`] and
/// [`edf_with_overheads`] give their sources). The bounds (`liu-layland`, `hyperbolic`) have
/// no twin: they assume D = T and no jitter, and a release latency makes every deadline
/// shorter than its period, so `rta-rm+overheads` is their twin. `dwcs` has none: its
/// guarantee needs every C one quantum, and the live dispatcher pays its overheads inside the
/// quantum (simrun charges none), so charging them would change nothing but the
/// canonical form. The global tests have none either: SchedCAT's global model also charges
/// IPIs and migrations, which schedlab does not measure yet.
pub const TESTS: &[Test] = &[
    uni("liu-layland", TestKind::Sufficient, |t, m, _| one_cpu(m, || liu_layland(t))),
    uni("hyperbolic", TestKind::Sufficient, |t, m, _| one_cpu(m, || hyperbolic(t))),
    uni("rta-rm", TestKind::Exact, |t, m, _| one_cpu(m, || response_times(t, Priority::Rate))),
    uni("rta-dm", TestKind::Exact, |t, m, _| one_cpu(m, || response_times(t, Priority::Deadline))),
    uni("rta-priority", TestKind::Exact, |t, m, _| {
        one_cpu(m, || response_times(t, Priority::Explicit))
    }),
    uni("edf-utilisation", TestKind::Exact, |t, m, _| one_cpu(m, || edf_utilisation(t))),
    uni("edf-demand", TestKind::Exact, |t, m, _| one_cpu(m, || processor_demand(t))),
    uni("edf-qpa", TestKind::Exact, |t, m, _| one_cpu(m, || qpa(t))),
    uni("dwcs", TestKind::Sufficient, |t, m, _| one_cpu(m, || dwcs_feasibility(t))),
    multi("ffd-edf", false, |t, m, _| partition(t, m, Fit::First, Size::Density, qpa)),
    multi("wfd-edf", false, |t, m, _| partition(t, m, Fit::Worst, Size::Density, qpa)),
    multi("ffd-dm", false, |t, m, _| {
        partition(t, m, Fit::First, Size::Density, |s| response_times(s, Priority::Deadline))
    }),
    multi("wfd-dm", false, |t, m, _| {
        partition(t, m, Fit::Worst, Size::Density, |s| response_times(s, Priority::Deadline))
    }),
    Test {
        name: "gfb",
        uniprocessor: false,
        overheads: false,
        kind: TestKind::Sufficient,
        run: |t, m, _| gfb(t, m),
    },
    Test {
        name: "density",
        uniprocessor: false,
        overheads: false,
        kind: TestKind::Sufficient,
        run: |t, m, _| density(t, m),
    },
    twin("rta-rm+overheads", |t, m, o| {
        one_cpu(m, || response_times_with_overheads(t, Priority::Rate, o))
    }),
    twin("rta-dm+overheads", |t, m, o| {
        one_cpu(m, || response_times_with_overheads(t, Priority::Deadline, o))
    }),
    twin("rta-priority+overheads", |t, m, o| {
        one_cpu(m, || response_times_with_overheads(t, Priority::Explicit, o))
    }),
    twin("edf-utilisation+overheads", |t, m, o| {
        one_cpu(m, || with_edf_overheads(t, o, edf_utilisation))
    }),
    twin("edf-demand+overheads", |t, m, o| {
        one_cpu(m, || with_edf_overheads(t, o, processor_demand))
    }),
    twin("edf-qpa+overheads", |t, m, o| one_cpu(m, || with_edf_overheads(t, o, qpa))),
    multi("ffd-edf+overheads", true, |t, m, o| {
        partition(t, m, Fit::First, Size::Density, |s| with_edf_overheads(s, o, qpa))
    }),
    multi("wfd-edf+overheads", true, |t, m, o| {
        partition(t, m, Fit::Worst, Size::Density, |s| with_edf_overheads(s, o, qpa))
    }),
    multi("ffd-dm+overheads", true, |t, m, o| {
        partition(t, m, Fit::First, Size::Density, |s| {
            response_times_with_overheads(s, Priority::Deadline, o)
        })
    }),
    multi("wfd-dm+overheads", true, |t, m, o| {
        partition(t, m, Fit::Worst, Size::Density, |s| {
            response_times_with_overheads(s, Priority::Deadline, o)
        })
    }),
];

/// The test of [`TESTS`] called `name`.
pub fn test(name: &str) -> Option<&'static Test> {
    TESTS.iter().find(|t| t.name == name)
}

/// The DWCS feasibility test of the seed (West & Poellabauer, "Analysis of a window-constrained
/// scheduler for real-time and best-effort packet streams", RTSS 2000), called in
/// [`schedlab_policy::dwcs::feasibility`], its one implementation: the minimum utilisation
/// sum (1 - x/y) C/T at most 1 guarantees every window when the set is canonical (every C one
/// quantum, every T a multiple of it). Deadlines are the periods; D is not read.
///
/// Schedulable when feasible and canonical; not schedulable when the minimum utilisation
/// exceeds 1 (no scheduler can then meet the windows); inconclusive otherwise (Mok & Wang,
/// RTSS 2001: DWCS can fail non-canonical sets at any utilisation).
pub fn dwcs_feasibility(tasks: &[Task]) -> Outcome {
    let set: Vec<WindowTask> = tasks
        .iter()
        .map(|t| WindowTask { wcet: t.wcet, period: t.period, window: t.window })
        .collect();
    let v = dwcs::feasibility(&set);
    Outcome::of(match (v.feasible, v.canonical) {
        (false, _) => Verdict::NotSchedulable,
        (true, true) => Verdict::Schedulable,
        (true, false) => Verdict::Inconclusive,
    })
}

/// Whether every period and deadline is positive (what every test assumes).
pub fn valid(tasks: &[Task]) -> bool {
    tasks.iter().all(|t| t.period > 0 && t.deadline > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_have_unique_names_and_are_found_by_name() {
        for (i, t) in TESTS.iter().enumerate() {
            assert!(TESTS[..i].iter().all(|u| u.name != t.name), "{} twice", t.name);
            assert_eq!(test(t.name).map(|u| u.name), Some(t.name));
        }
        assert!(test("no-such-test").is_none());
    }

    #[test]
    fn every_test_accepts_a_light_set_and_none_accepts_an_overload() {
        let light = [Task::new(1, 10).priority(1), Task::new(1, 20).priority(1)];
        let over = [Task::new(3, 4).priority(1), Task::new(3, 4).priority(2)];
        for t in TESTS {
            // Explicit priorities tie in `light` (both 1), which a light set survives.
            assert_eq!(
                (t.run)(&light, 1, &Overheads::default()).verdict,
                Verdict::Schedulable,
                "{}",
                t.name
            );
            assert_ne!(
                (t.run)(&over, 1, &Overheads::default()).verdict,
                Verdict::Schedulable,
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn every_uniprocessor_and_partitioned_test_has_its_twin_but_the_bounds_and_dwcs() {
        for t in TESTS.iter().filter(|t| !t.overheads) {
            let name = format!("{}{TWIN_SUFFIX}", t.name);
            let twin = test(&name);
            let none = ["liu-layland", "hyperbolic", "dwcs", "gfb", "density"];
            assert_eq!(twin.is_some(), !none.contains(&t.name), "{name}");
            if let Some(twin) = twin {
                assert!(twin.overheads && twin.uniprocessor == t.uniprocessor, "{name}");
                assert_eq!(twin.plain_name(), t.name);
            }
        }
        assert_eq!(TESTS.iter().filter(|t| t.overheads).count(), 10);
    }

    #[test]
    fn uniprocessor_tests_say_nothing_about_two_cpus() {
        let set = [Task::new(1, 10)];
        for t in TESTS {
            let v = (t.run)(&set, 2, &Overheads::default()).verdict;
            let multi = ["ffd-edf", "wfd-edf", "ffd-dm", "wfd-dm", "gfb", "density"];
            let expected = if multi.contains(&t.plain_name()) {
                Verdict::Schedulable
            } else {
                Verdict::Inconclusive
            };
            assert_eq!(v, expected, "{}", t.name);
        }
    }

    #[test]
    fn dwcs_wrapper_maps_the_seed_verdict() {
        // The seed's example: C = 1, T = 2, x/y = 1/2.
        assert_eq!(dwcs_feasibility(&[Task::new(1, 2).window(1, 2)]).verdict, Verdict::Schedulable);
        // Minimum utilisation 2 * 1/2 * 1 = 1 with T = C: feasible, canonical.
        let full = [Task::new(1, 1).window(1, 2), Task::new(1, 1).window(1, 2)];
        assert_eq!(dwcs_feasibility(&full).verdict, Verdict::Schedulable);
        let over = [full[0], full[1], Task::new(1, 100)];
        assert_eq!(dwcs_feasibility(&over).verdict, Verdict::NotSchedulable);
        // Feasible but not canonical (C differs): no guarantee.
        let mixed = [Task::new(1, 4), Task::new(2, 8)];
        assert_eq!(dwcs_feasibility(&mixed).verdict, Verdict::Inconclusive);
    }

    #[test]
    fn a_task_from_policy_parameters_defaults_its_deadline_to_the_period() {
        let params =
            SchedParams { wcet: Some(2), period: Some(10), priority: 7, ..SchedParams::default() };
        assert_eq!(Task::from_params(&params), Some(Task::new(2, 10).priority(7)));
        let params = SchedParams { deadline: Some(5), ..params };
        assert_eq!(Task::from_params(&params).map(|t| t.deadline), Some(5));
        assert_eq!(Task::from_params(&SchedParams::default()), None);
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;

    #[test]
    fn a_uniprocessor_test_says_so_and_is_inconclusive_on_two_cpus() {
        let set = [Task::new(1, 4), Task::new(1, 5)];
        for t in TESTS {
            let two = (t.run)(&set, 2, &Overheads::default()).verdict;
            assert_eq!(t.uniprocessor, two == Verdict::Inconclusive, "{}", t.name);
        }
    }
}
