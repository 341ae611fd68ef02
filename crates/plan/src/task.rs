//! The periodic task model: request length C, period T, relative deadline D, window
//! constraint x/y and release phase, with validation and the DWCS utilisation arithmetic.

use schedlab_policy::dwcs::{self, WindowTask};
use schedlab_policy::Window;
use serde::{Deserialize, Serialize};

/// One periodic task, all times in nanoseconds.
///
/// Job k is released at `phase_ns + k * t_ns` (relative to the task set's common start)
/// and must finish by its release plus `d_ns` (default `t_ns`). At most `x` of any `y`
/// consecutive deadlines may be missed; `x = y = 0` means no loss is tolerated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskParams {
    /// Request length C: the CPU work (or I/O) one job needs.
    pub c_ns: u64,
    /// Request period T: the interval between consecutive releases and deadlines.
    pub t_ns: u64,
    /// Relative deadline D; `None` means D = T.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_ns: Option<u64>,
    /// Window numerator x: deadlines that may be missed per window.
    #[serde(default)]
    pub x: u32,
    /// Window denominator y: the window length in deadlines.
    #[serde(default)]
    pub y: u32,
    /// Offset of the first release from the task set's start.
    #[serde(default)]
    pub phase_ns: u64,
}

/// Why a [`TaskParams`] or a task set was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// C = 0: a job with no work has nothing to measure.
    #[error("request length C is 0: give each job some work (c_ns > 0)")]
    ZeroLength,
    /// T = 0.
    #[error("period T is 0: give a period in nanoseconds (t_ns > 0)")]
    ZeroPeriod,
    /// D = 0.
    #[error("relative deadline D is 0: leave d_ns out for D = T, or give a positive value")]
    ZeroDeadline,
    /// C > D: no job could meet its deadline even on an idle CPU.
    #[error("request length C = {c_ns} ns exceeds the deadline D = {d_ns} ns: no job could ever meet it")]
    LengthExceedsDeadline {
        /// C.
        c_ns: u64,
        /// D.
        d_ns: u64,
    },
    /// D > T: arbitrary deadlines are not supported (SCHED_DEADLINE and DWCS both need D <= T).
    #[error("deadline D = {d_ns} ns exceeds the period T = {t_ns} ns: only D <= T is supported (as in SCHED_DEADLINE and DWCS)")]
    DeadlineExceedsPeriod {
        /// D.
        d_ns: u64,
        /// T.
        t_ns: u64,
    },
    /// x > y.
    #[error("window constraint {x}/{y} allows more misses than the window holds: need x <= y")]
    WindowNumeratorTooLarge {
        /// x.
        x: u32,
        /// y.
        y: u32,
    },
    /// The task set is empty.
    #[error("the task set is empty: give at least one task")]
    EmptySet,
    /// A task of a set failed validation.
    #[error("task {index}: {error}")]
    InSet {
        /// Position of the task in the set.
        index: usize,
        /// What was wrong with it.
        error: Box<TaskError>,
    },
}

impl TaskParams {
    /// A task with D = T, window 0/0 (no loss tolerated) and phase 0.
    pub fn new(c_ns: u64, t_ns: u64) -> Self {
        TaskParams { c_ns, t_ns, d_ns: None, x: 0, y: 0, phase_ns: 0 }
    }

    /// The same task with window constraint x/y.
    pub fn with_window(self, x: u32, y: u32) -> Self {
        TaskParams { x, y, ..self }
    }

    /// The relative deadline D (T when not given).
    pub fn deadline_ns(&self) -> u64 {
        self.d_ns.unwrap_or(self.t_ns)
    }

    /// SCHED_DEADLINE running this task: runtime C, deadline D, period T.
    pub fn deadline_policy(&self) -> crate::Policy {
        let d = crate::DeadlineParams {
            runtime_ns: self.c_ns,
            deadline_ns: self.deadline_ns(),
            period_ns: self.t_ns,
        };
        crate::Policy { class: crate::Class::Deadline, deadline: Some(d), ..crate::Policy::OTHER }
    }

    /// Checks the parameters; see [`TaskError`] for the rules.
    ///
    /// `y = 0` with `x > 0` is refused as x > y. `x = y > 0` (every deadline may be missed)
    /// is accepted: such a task is best-effort, with minimum utilisation 0.
    pub fn validate(&self) -> Result<(), TaskError> {
        if self.c_ns == 0 {
            return Err(TaskError::ZeroLength);
        }
        if self.t_ns == 0 {
            return Err(TaskError::ZeroPeriod);
        }
        let d_ns = self.deadline_ns();
        if d_ns == 0 {
            return Err(TaskError::ZeroDeadline);
        }
        if d_ns > self.t_ns {
            return Err(TaskError::DeadlineExceedsPeriod { d_ns, t_ns: self.t_ns });
        }
        if self.c_ns > d_ns {
            return Err(TaskError::LengthExceedsDeadline { c_ns: self.c_ns, d_ns });
        }
        if self.x > self.y {
            return Err(TaskError::WindowNumeratorTooLarge { x: self.x, y: self.y });
        }
        Ok(())
    }

    /// Plain utilisation C/T.
    pub fn utilisation(&self) -> f64 {
        self.c_ns as f64 / self.t_ns as f64
    }

    /// The fraction of deadlines that may be missed, x/y (0 for a 0/0 window).
    pub fn loss_fraction(&self) -> f64 {
        if self.y == 0 {
            0.0
        } else {
            f64::from(self.x) / f64::from(self.y)
        }
    }

    /// DWCS minimum utilisation (1 - x/y) C/T: the CPU share needed to meet y - x of every y deadlines.
    pub fn min_utilisation(&self) -> f64 {
        (1.0 - self.loss_fraction()) * self.utilisation()
    }
}

/// Validates every task of a set, naming the first bad one.
pub fn validate_set(tasks: &[TaskParams]) -> Result<(), TaskError> {
    if tasks.is_empty() {
        return Err(TaskError::EmptySet);
    }
    for (index, t) in tasks.iter().enumerate() {
        t.validate().map_err(|e| TaskError::InSet { index, error: Box::new(e) })?;
    }
    Ok(())
}

/// Sum of plain utilisations C/T.
pub fn total_utilisation(tasks: &[TaskParams]) -> f64 {
    tasks.iter().map(TaskParams::utilisation).sum()
}

/// Sum of DWCS minimum utilisations (1 - x/y) C/T: the seed's x axis.
pub fn total_min_utilisation(tasks: &[TaskParams]) -> f64 {
    tasks.iter().map(TaskParams::min_utilisation).sum()
}

/// Why a task set is not canonical in the DWCS sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NonCanonical {
    /// The set is empty.
    #[error("the task set is empty")]
    Empty,
    /// Request lengths differ: canonical sets share one quantum K = C.
    #[error("task {index} has C = {c_ns} ns but task 0 has C = {k_ns} ns: canonical sets share one request length K")]
    UnequalLength {
        /// The first task whose C differs from task 0's.
        index: usize,
        /// Its C.
        c_ns: u64,
        /// Task 0's C (the quantum K).
        k_ns: u64,
    },
    /// A period is not a whole number of quanta.
    #[error("task {index} has T = {t_ns} ns, not an integer multiple of K = {k_ns} ns")]
    PeriodNotMultiple {
        /// The task.
        index: usize,
        /// Its T.
        t_ns: u64,
        /// The quantum K.
        k_ns: u64,
    },
    /// A deadline differs from the period (the DWCS model has D = T).
    #[error("task {index} has D = {d_ns} ns != T = {t_ns} ns: the DWCS guarantee assumes D = T")]
    DeadlineNotPeriod {
        /// The task.
        index: usize,
        /// Its D.
        d_ns: u64,
        /// Its T.
        t_ns: u64,
    },
}

/// Checks the DWCS canonical form: C_i = K for all i, T_i = q_i K with q_i a positive
/// integer, and D_i = T_i. Returns K. Only canonical sets with
/// [`total_min_utilisation`] <= 1 carry the seed's feasibility guarantee.
pub fn check_canonical(tasks: &[TaskParams]) -> Result<u64, NonCanonical> {
    let k_ns = tasks.first().ok_or(NonCanonical::Empty)?.c_ns;
    for (index, t) in tasks.iter().enumerate() {
        if t.c_ns != k_ns {
            return Err(NonCanonical::UnequalLength { index, c_ns: t.c_ns, k_ns });
        }
        if k_ns == 0 || t.t_ns == 0 || t.t_ns % k_ns != 0 {
            return Err(NonCanonical::PeriodNotMultiple { index, t_ns: t.t_ns, k_ns });
        }
        if t.deadline_ns() != t.t_ns {
            return Err(NonCanonical::DeadlineNotPeriod {
                index,
                d_ns: t.deadline_ns(),
                t_ns: t.t_ns,
            });
        }
    }
    Ok(k_ns)
}

/// What the DWCS theory says about a task set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Feasibility {
    /// Sum of (1 - x/y) C/T.
    pub min_utilisation: f64,
    /// Sum of C/T.
    pub utilisation: f64,
    /// The quantum K when the set is canonical.
    pub canonical_k_ns: Option<u64>,
    /// Why the set is not canonical, if it is not.
    pub not_canonical_because: Option<String>,
    /// True when the seed's test guarantees a feasible schedule: canonical and min utilisation <= 1.
    pub guaranteed: bool,
}

/// Applies the seed's scheduling test (canonical and sum of minimum utilisations <= 1):
/// the bound is [`schedlab_policy::dwcs::feasibility`]'s, summed in exact rationals.
pub fn feasibility(tasks: &[TaskParams]) -> Feasibility {
    let min_utilisation = total_min_utilisation(tasks);
    let canonical = check_canonical(tasks);
    let window_tasks: Vec<WindowTask> = tasks
        .iter()
        .map(|t| WindowTask { wcet: t.c_ns, period: t.t_ns, window: Window::new(t.x, t.y) })
        .collect();
    let guaranteed = canonical.is_ok() && dwcs::feasibility(&window_tasks).feasible;
    Feasibility {
        min_utilisation,
        utilisation: total_utilisation(tasks),
        canonical_k_ns: canonical.as_ref().ok().copied(),
        not_canonical_because: canonical.err().map(|e| e.to_string()),
        guaranteed,
    }
}

/// Partitions a task set over `bins` CPUs: first-fit decreasing by utilisation C/T (ties
/// by task index), each task on the first CPU whose sum of C/T stays at most 1; a task that
/// fits nowhere goes to the CPU with the smallest sum. Returns each task's bin (0..bins).
/// The rule for every scheduler but `fifo-rm` and `fifo-dm`, which are placed by their own
/// test (`Periodic::rta_placement`); deterministic, so the engine and the simulator agree.
pub fn partition(tasks: &[TaskParams], bins: usize) -> Vec<usize> {
    let bins = bins.max(1);
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    // Stable sort: equal utilisations keep task order.
    order.sort_by(|&a, &b| tasks[b].utilisation().total_cmp(&tasks[a].utilisation()));
    let mut load = vec![0.0f64; bins];
    let mut out = vec![0; tasks.len()];
    for i in order {
        let u = tasks[i].utilisation();
        let bin = (0..bins).find(|&b| load[b] + u <= 1.0 + 1e-9).unwrap_or_else(|| {
            (0..bins).min_by(|&a, &b| load[a].total_cmp(&load[b])).expect("at least one bin")
        });
        load[bin] += u;
        out[i] = bin;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rules() {
        assert_eq!(TaskParams::new(0, 10).validate(), Err(TaskError::ZeroLength));
        assert_eq!(TaskParams::new(1, 0).validate(), Err(TaskError::ZeroPeriod));
        let zero_d = TaskParams { d_ns: Some(0), ..TaskParams::new(1, 10) };
        assert_eq!(zero_d.validate(), Err(TaskError::ZeroDeadline));
        let long_d = TaskParams { d_ns: Some(11), ..TaskParams::new(1, 10) };
        assert_eq!(long_d.validate(), Err(TaskError::DeadlineExceedsPeriod { d_ns: 11, t_ns: 10 }));
        let short_d = TaskParams { d_ns: Some(4), ..TaskParams::new(5, 10) };
        assert_eq!(short_d.validate(), Err(TaskError::LengthExceedsDeadline { c_ns: 5, d_ns: 4 }));
        assert_eq!(
            TaskParams::new(11, 10).validate(),
            Err(TaskError::LengthExceedsDeadline { c_ns: 11, d_ns: 10 })
        );
        assert_eq!(
            TaskParams::new(1, 10).with_window(2, 1).validate(),
            Err(TaskError::WindowNumeratorTooLarge { x: 2, y: 1 })
        );
        assert_eq!(
            TaskParams::new(1, 10).with_window(1, 0).validate(),
            Err(TaskError::WindowNumeratorTooLarge { x: 1, y: 0 })
        );
        // Accepted edge cases: C = D = T, 0/0, x = y, a constrained deadline.
        assert_eq!(TaskParams::new(10, 10).validate(), Ok(()));
        assert_eq!(TaskParams::new(1, 10).with_window(3, 3).validate(), Ok(()));
        assert_eq!(TaskParams { d_ns: Some(5), ..TaskParams::new(5, 10) }.validate(), Ok(()));
    }

    #[test]
    fn set_validation_names_the_bad_task() {
        assert_eq!(validate_set(&[]), Err(TaskError::EmptySet));
        let err = validate_set(&[TaskParams::new(1, 10), TaskParams::new(0, 10)]).unwrap_err();
        assert_eq!(err, TaskError::InSet { index: 1, error: Box::new(TaskError::ZeroLength) });
        assert!(err.to_string().starts_with("task 1: request length C is 0"), "{err}");
    }

    #[test]
    fn utilisations() {
        let t = TaskParams::new(1, 2).with_window(1, 2);
        assert_eq!(t.utilisation(), 0.5);
        assert_eq!(t.min_utilisation(), 0.25);
        assert_eq!(TaskParams::new(1, 4).min_utilisation(), 0.25, "0/0 tolerates no loss");
        assert_eq!(TaskParams::new(1, 4).with_window(2, 2).min_utilisation(), 0.0);
        let set =
            [TaskParams::new(1, 2).with_window(1, 3), TaskParams::new(1, 4).with_window(0, 3)];
        assert!((total_min_utilisation(&set) - (1.0 / 3.0 + 0.25)).abs() < 1e-12);
        assert!((total_utilisation(&set) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn canonical_check() {
        let k = 1_000;
        let set = [TaskParams::new(k, 2 * k), TaskParams::new(k, 3 * k), TaskParams::new(k, k)];
        assert_eq!(check_canonical(&set), Ok(k));
        assert_eq!(check_canonical(&[]), Err(NonCanonical::Empty));
        let unequal = [TaskParams::new(k, 2 * k), TaskParams::new(2 * k, 4 * k)];
        assert_eq!(
            check_canonical(&unequal),
            Err(NonCanonical::UnequalLength { index: 1, c_ns: 2 * k, k_ns: k })
        );
        let fractional = [TaskParams::new(k, 2 * k), TaskParams::new(k, 2 * k + 1)];
        assert_eq!(
            check_canonical(&fractional),
            Err(NonCanonical::PeriodNotMultiple { index: 1, t_ns: 2 * k + 1, k_ns: k })
        );
        let short_d = [TaskParams { d_ns: Some(k), ..TaskParams::new(k, 2 * k) }];
        assert_eq!(
            check_canonical(&short_d),
            Err(NonCanonical::DeadlineNotPeriod { index: 0, d_ns: k, t_ns: 2 * k })
        );
    }

    #[test]
    fn feasibility_needs_canonical_and_unit_bound() {
        let k = 1_000;
        let ok = [
            TaskParams::new(k, 2 * k).with_window(1, 2),
            TaskParams::new(k, 2 * k).with_window(1, 2),
        ];
        let f = feasibility(&ok);
        assert!(f.guaranteed && f.canonical_k_ns == Some(k) && f.not_canonical_because.is_none());
        assert_eq!(f.min_utilisation, 0.5);
        let over = [TaskParams::new(k, k), TaskParams::new(k, k).with_window(1, 2)];
        assert!(!feasibility(&over).guaranteed, "1.5 > 1");
        let low_but_general = [TaskParams::new(k, 10 * k), TaskParams::new(2 * k, 10 * k)];
        let f = feasibility(&low_but_general);
        assert!(
            !f.guaranteed && f.not_canonical_because.is_some(),
            "low utilisation is no guarantee for a general set"
        );
    }

    /// Floats with a tolerance said yes to a set just over 1; the exact sum says no.
    #[test]
    fn feasibility_is_exact_at_the_unit_bound() {
        let k = 1_000;
        // 1/2 + 1/2 + (1/10^6)/10^5: over 1 by 10^-11, within any float tolerance of 1.
        let over = [
            TaskParams::new(k, 2 * k),
            TaskParams::new(k, 2 * k),
            TaskParams::new(k, 100_000 * k).with_window(999_999, 1_000_000),
        ];
        let f = feasibility(&over);
        assert!(f.canonical_k_ns == Some(k) && f.min_utilisation <= 1.0 + 1e-9, "{f:?}");
        assert!(!f.guaranteed, "1 + 10^-11 > 1");
        // 1/3 + 1/3 + 1/3: exactly 1, though its float sum need not be.
        let one = [TaskParams::new(k, 3 * k); 3];
        assert!(feasibility(&one).guaranteed);
    }

    #[test]
    fn serde_defaults_and_unknown_fields() {
        let t: TaskParams = serde_json::from_str(r#"{"c_ns": 5, "t_ns": 10}"#).unwrap();
        assert_eq!(t, TaskParams::new(5, 10));
        assert_eq!(t.deadline_ns(), 10);
        assert!(
            serde_json::from_str::<TaskParams>(r#"{"c_ns": 5, "t_ns": 10, "period": 3}"#).is_err()
        );
        let back: TaskParams =
            serde_json::from_str(&serde_json::to_string(&t.with_window(1, 3)).unwrap()).unwrap();
        assert_eq!(back, t.with_window(1, 3));
    }

    #[test]
    fn partition_is_first_fit_decreasing_by_utilisation() {
        // C/T: 0.5, 0.5, 0.25, 0.2 (the canonical set, 1.45 in all): 0.5 and 0.5 fill CPU 0,
        // 0.25 and 0.2 go to CPU 1.
        let set = [
            TaskParams::new(10, 20),
            TaskParams::new(10, 20),
            TaskParams::new(10, 40),
            TaskParams::new(10, 50),
        ];
        assert_eq!(partition(&set, 2), [0, 0, 1, 1]);
        // Largest first, whatever the listed order: 0.2 is listed first but placed last.
        let set = [
            TaskParams::new(2, 10),
            TaskParams::new(6, 10),
            TaskParams::new(5, 10),
            TaskParams::new(3, 10),
        ];
        // 0.6 -> 0; 0.5 -> 1; 0.3 -> 0 (0.9); 0.2 -> 1 (0.7).
        assert_eq!(partition(&set, 2), [1, 0, 1, 0]);
        // One CPU, or none: everything on bin 0.
        assert_eq!(partition(&set, 1), [0; 4]);
        assert_eq!(partition(&set, 0), [0; 4]);
    }

    #[test]
    fn partition_puts_what_fits_nowhere_on_the_least_loaded_cpu() {
        // 0.9, 0.8, 0.7 on two CPUs: 0.9 -> 0, 0.8 -> 1, 0.7 fits nowhere -> 1 (0.8 < 0.9).
        let set = [TaskParams::new(7, 10), TaskParams::new(9, 10), TaskParams::new(8, 10)];
        assert_eq!(partition(&set, 2), [1, 0, 1]);
        // Equal utilisations keep their order, so the result is deterministic.
        let same = [TaskParams::new(1, 4); 5];
        assert_eq!(partition(&same, 2), [0, 0, 0, 0, 1]);
        assert_eq!(partition(&[], 2), Vec::<usize>::new());
    }
}
