//! Fixed priorities on one CPU: the utilisation bounds for rate-monotonic and exact
//! response-time analysis.

use std::cmp::{Ordering, Reverse};

use num_bigint::BigUint;

use crate::exact;
use crate::{valid, Outcome, Response, Task, Verdict};

/// How fixed priorities are assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Rate-monotonic: the shorter period first, ties to the earlier task in the set.
    Rate,
    /// Deadline-monotonic: the shorter relative deadline first, ties to the earlier task.
    Deadline,
    /// Each task's [`Task::priority`], higher first (as SCHED_FIFO, e.g. an rt-app import).
    Explicit,
}

/// The verdict of a rate-monotonic utilisation bound: schedulable when `accepts`, not
/// schedulable when U > 1, else inconclusive; inconclusive when some D < T (the bounds assume
/// deadlines at the period, or later).
fn rm_bound(tasks: &[Task], accepts: impl FnOnce() -> bool) -> Outcome {
    if !valid(tasks) {
        return Outcome::of(Verdict::Inconclusive);
    }
    if exact::exceeds(tasks.iter().map(|t| (t.wcet, t.period)), 1) {
        return Outcome::of(Verdict::NotSchedulable);
    }
    let implicit = tasks.iter().all(|t| t.deadline >= t.period);
    Outcome::of(if implicit && accepts() { Verdict::Schedulable } else { Verdict::Inconclusive })
}

/// Liu & Layland's bound for rate-monotonic priorities (C. L. Liu and J. W. Layland,
/// "Scheduling Algorithms for Multiprogramming in a Hard-Real-Time Environment", JACM 1973):
/// n tasks with deadlines at their periods are schedulable if U <= n (2^(1/n) - 1).
///
/// Decided exactly: U = P/Q passes iff (P + nQ)^n <= 2 (nQ)^n; floats only skip that
/// computation when U is more than 1e-9 away from the bound.
pub fn liu_layland(tasks: &[Task]) -> Outcome {
    rm_bound(tasks, || within_liu_layland(tasks))
}

fn within_liu_layland(tasks: &[Task]) -> bool {
    let n = tasks.len();
    if n == 0 {
        return true;
    }
    let u: f64 = tasks.iter().map(|t| t.wcet as f64 / t.period as f64).sum();
    let bound = n as f64 * (2f64.powf(1.0 / n as f64) - 1.0);
    let margin = 1e-9 * u.max(1.0);
    if u < bound - margin {
        return true;
    }
    if u > bound + margin {
        return false;
    }
    let (p, q) = exact::sum(tasks.iter().map(|t| (t.wcet, t.period)));
    let nq = q * n;
    let exp = u32::try_from(n).expect("fewer than 2^32 tasks");
    (p + &nq).pow(exp) <= BigUint::from(2u32) * nq.pow(exp)
}

/// The hyperbolic bound for rate-monotonic priorities (E. Bini, G. C. Buttazzo and
/// G. M. Buttazzo, "Rate Monotonic Analysis: The Hyperbolic Bound", IEEE Transactions on
/// Computers 2003): tasks with deadlines at their periods are schedulable if
/// prod (U_i + 1) <= 2. It accepts every set [`liu_layland`] accepts, and more. Exact
/// (big integers): prod (C_i + T_i) <= 2 prod T_i.
pub fn hyperbolic(tasks: &[Task]) -> Outcome {
    rm_bound(tasks, || {
        let (p, q) = exact::product(tasks.iter().map(|t| (t.wcet + t.period, t.period)));
        p <= q * 2u32
    })
}

/// The tasks' indices from the highest priority to the lowest; `None` for
/// [`Priority::Explicit`] when a task has no priority.
pub fn priority_order(tasks: &[Task], by: Priority) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    match by {
        Priority::Rate => order.sort_by_key(|&i| (tasks[i].period, i)),
        Priority::Deadline => order.sort_by_key(|&i| (tasks[i].deadline, i)),
        Priority::Explicit => {
            if tasks.iter().any(|t| t.priority.is_none()) {
                return None;
            }
            order.sort_by_key(|&i| (Reverse(tasks[i].priority), i));
        }
    }
    Some(order)
}

/// Exact response-time analysis for preemptive fixed priorities on one CPU (M. Joseph and
/// P. Pandya, "Finding Response Times in a Real-Time System", The Computer Journal 1986;
/// N. Audsley, A. Burns, M. Richardson, K. Tindell and A. Wellings, "Applying New Scheduling
/// Theory to Static Priority Pre-emptive Scheduling", Software Engineering Journal 1993),
/// with release jitter (K. Tindell, A. Burns and A. Wellings, "An Extendible Approach for
/// Analysing Fixed Priority Hard Real-Time Tasks", Real-Time Systems 1994).
///
/// Each task's response time is R_i = J_i + w_i, w_i the least fixed point of
/// w = C_i + sum over higher-priority j of ceil((w + J_j) / T_j) C_j, iterated in integers
/// from C_i + sum C_j; the set is schedulable iff every R_i <= D_i. A task whose iterate
/// passes D_i gets that iterate (J_i + w) as its [`Response`], not met: the iteration stops there. Without jitter (the
/// textbook sets) R = C_i + sum ceil(R / T_j) C_j. Exact for D <= T (and for D > T while
/// every R_i <= T_i; past that the verdict is inconclusive, as a later job of the same task
/// could then be the worst). With [`Priority::Explicit`], tasks of equal priority count as
/// interfering with each other, so a rejection is then inconclusive.
pub fn response_times(tasks: &[Task], by: Priority) -> Outcome {
    analyse(tasks, by, &[])
}

/// [`response_times`] with `always` interfering with every task, above all priorities (the
/// interrupt pseudo-tasks of the overhead model).
pub(crate) fn analyse(tasks: &[Task], by: Priority, always: &[Task]) -> Outcome {
    let Some(order) = priority_order(tasks, by).filter(|_| valid(tasks) && valid(always)) else {
        return Outcome::of(Verdict::Inconclusive);
    };
    let tied = by == Priority::Explicit
        && order.windows(2).any(|w| tasks[w[0]].priority == tasks[w[1]].priority);
    let mut response = vec![Response::within(0); tasks.len()];
    let (mut missed, mut unsure) = (false, false);
    for (k, &i) in order.iter().enumerate() {
        let task = &tasks[i];
        let interfering: Vec<&Task> = order
            .iter()
            .enumerate()
            .filter(|&(l, &j)| l < k || (j != i && tied && tasks[j].priority == task.priority))
            .map(|(_, &j)| &tasks[j])
            .chain(always)
            .collect();
        let r = response_time(task, &interfering);
        unsure |= r.met && r.time > task.period && task.deadline > task.period;
        missed |= !r.met;
        response[i] = r;
    }
    // Ties only overestimate interference: an acceptance stands, a rejection does not.
    let verdict = if unsure || (missed && tied) {
        Verdict::Inconclusive
    } else if missed {
        Verdict::NotSchedulable
    } else {
        Verdict::Schedulable
    };
    Outcome { verdict, response_times: response, cpu_of_task: Vec::new() }
}

/// J + the least fixed point of the jitter-aware recurrence, or J + the first iterate
/// that passes D (where the iteration stops: the deadline is known missed).
fn response_time(task: &Task, interfering: &[&Task]) -> Response {
    let c = u128::from(task.wcet);
    let (deadline, jitter) = (u128::from(task.deadline), u128::from(task.jitter));
    let at = |w: u128| u64::try_from(w + jitter).unwrap_or(u64::MAX);
    let mut w = c + interfering.iter().map(|t| u128::from(t.wcet)).sum::<u128>();
    loop {
        if w + jitter > deadline {
            return Response::past(at(w));
        }
        let next = c + interfering
            .iter()
            .map(|t| (w + u128::from(t.jitter)).div_ceil(u128::from(t.period)) * u128::from(t.wcet))
            .sum::<u128>();
        match next.cmp(&w) {
            Ordering::Equal => return Response::within(at(w)),
            _ => w = next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(set: &[Task], by: Priority) -> Vec<Response> {
        response_times(set, by).response_times
    }

    #[test]
    fn buttazzo_deadline_monotonic_example_gives_the_books_response_times() {
        // Buttazzo, "Hard Real-Time Computing Systems" (3rd ed., 2011), the deadline-monotonic
        // response-time example of section 4.5 (quoted from memory, checked by hand):
        // (C, T, D) = (1, 4, 3), (1, 5, 4), (2, 6, 5), (1, 11, 10). For the last task:
        // R = 5, 1 + 2 + 1 + 2 = 6, 1 + 2 + 2 + 2 = 7, 1 + 2 + 2 + 4 = 9, 1 + 3 + 2 + 4 = 10,
        // 1 + 3 + 2 + 4 = 10: the fixed point meets D = 10 exactly.
        let set = [
            Task::new(1, 4).deadline(3),
            Task::new(1, 5).deadline(4),
            Task::new(2, 6).deadline(5),
            Task::new(1, 11).deadline(10),
        ];
        let out = response_times(&set, Priority::Deadline);
        assert_eq!(
            out.response_times,
            [Response::within(1), Response::within(2), Response::within(4), Response::within(10)]
        );
        assert_eq!(out.verdict, Verdict::Schedulable);
        // One more unit for the last task passes its deadline.
        let mut late = set;
        late[3].wcet = 2;
        assert_eq!(response_times(&late, Priority::Deadline).verdict, Verdict::NotSchedulable);
    }

    #[test]
    fn buttazzo_rate_monotonic_example_gives_the_books_response_times() {
        // Buttazzo, "Hard Real-Time Computing Systems" (3rd ed., 2011), the rate-monotonic
        // response-time example, as issue 40 quotes it: (C, T) = (1, 4), (2, 6), (3, 10).
        // For the last task: R = 6, 3 + 2 + 2 = 7, 3 + 2 + 4 = 9, 3 + 3 + 4 = 10, 10.
        let set = [Task::new(1, 4), Task::new(2, 6), Task::new(3, 10)];
        let out = response_times(&set, Priority::Rate);
        assert_eq!(
            out.response_times,
            [Response::within(1), Response::within(3), Response::within(10)]
        );
        assert_eq!(out.verdict, Verdict::Schedulable);
        assert_eq!(
            rt(&set, Priority::Deadline),
            [Response::within(1), Response::within(3), Response::within(10)]
        );
    }

    #[test]
    fn release_jitter_delays_the_task_and_adds_interference_below_it() {
        // (1, 4) with J = 2 above (3, 10): the high task's R = J + C = 3; for the low one
        // w = 4, 3 + ceil(6/4) 1 = 5, 3 + ceil(7/4) 1 = 5: R = 5, one more than without
        // jitter (w = 4, 3 + ceil(4/4) 1 = 4).
        let set = [Task::new(1, 4).jitter(2), Task::new(3, 10)];
        assert_eq!(rt(&set, Priority::Rate), [Response::within(3), Response::within(5)]);
        assert_eq!(
            rt(&[Task::new(1, 4), Task::new(3, 10)], Priority::Rate),
            [Response::within(1), Response::within(4)]
        );
        // A jitter that leaves no room before the deadline is a miss.
        let late = [Task::new(1, 4).jitter(3).deadline(3)];
        assert_eq!(response_times(&late, Priority::Rate).verdict, Verdict::NotSchedulable);
    }

    #[test]
    fn burns_wellings_example_gives_the_books_response_times() {
        // Burns & Wellings, "Real-Time Systems and Programming Languages" (4th ed., 2009), the
        // response-time example of chapter 11 (quoted from memory, checked by hand): a (T 7,
        // C 3, P 3), b (T 12, C 3, P 2), c (T 20, C 5, P 1). For c: w = 5, 11, 14, 17, 20, 20.
        let set = [
            Task::new(3, 7).priority(3),
            Task::new(3, 12).priority(2),
            Task::new(5, 20).priority(1),
        ];
        let out = response_times(&set, Priority::Explicit);
        assert_eq!(
            out.response_times,
            [Response::within(3), Response::within(6), Response::within(20)]
        );
        assert_eq!(out.verdict, Verdict::Schedulable);
        // Rate-monotonic gives the same order here.
        assert_eq!(
            rt(&set, Priority::Rate),
            [Response::within(3), Response::within(6), Response::within(20)]
        );
        // U = 0.929 is over both bounds: only the exact analysis accepts it.
        assert_eq!(liu_layland(&set).verdict, Verdict::Inconclusive);
        assert_eq!(hyperbolic(&set).verdict, Verdict::Inconclusive);
    }

    #[test]
    fn schedcats_uniprocessor_example_gives_its_response_times() {
        // SchedCAT's own test of its uniprocessor RTA (class UniprocessorRTA): C/T = 1/4, 1/5,
        // 3/9 and 3/18 under rate monotonic have response times 1, 2, 7 and 18, the last
        // exactly at its deadline, so one more unit of the last task's C makes it miss.
        let set = [Task::new(1, 4), Task::new(1, 5), Task::new(3, 9), Task::new(3, 18)];
        let out = response_times(&set, Priority::Rate);
        assert_eq!(
            out.response_times,
            [Response::within(1), Response::within(2), Response::within(7), Response::within(18)]
        );
        assert_eq!(out.verdict, Verdict::Schedulable);
        let mut longer = set;
        longer[3].wcet = 4;
        assert_eq!(response_times(&longer, Priority::Rate).verdict, Verdict::NotSchedulable);
    }

    #[test]
    fn rate_monotonic_misses_where_the_third_task_needs_nine() {
        // (1, 4), (2, 6), (3, 8), U = 23/24: the third task's recurrence gives 6, 7, 9 > 8.
        let set = [Task::new(1, 4), Task::new(2, 6), Task::new(3, 8)];
        let out = response_times(&set, Priority::Rate);
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        assert_eq!(
            out.response_times,
            [Response::within(1), Response::within(3), Response::past(9)]
        );
    }

    #[test]
    fn a_task_past_its_deadline_gets_the_first_iterate_past_it_not_the_fixed_point() {
        // The textbook's way of saying no: "R3 = 9 > D3 = 8". (1, 4), (2, 6), (3, 8) under
        // rate monotonic: the first two are R1 = 1 and R2 = 2 + ceil(3/4) 1 = 3; the third's
        // recurrence from 3 + 1 + 2 = 6 gives 3 + ceil(6/4) 1 + ceil(6/6) 2 = 7, then
        // 3 + ceil(7/4) 1 + ceil(7/6) 2 = 9 > D3 = 8: the analysis stops at 9. Iterating on
        // would reach the fixed point 3 + ceil(9/4) 1 + ceil(9/6) 2 = 10, then 10 again.
        let set = [Task::new(1, 4), Task::new(2, 6), Task::new(3, 8)];
        let out = response_times(&set, Priority::Rate);
        assert_eq!(
            out.response_times,
            [Response::within(1), Response::within(3), Response::past(9)]
        );
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        // Buttazzo's (2, 5), (4, 7), which EDF schedules and rate monotonic does not: the
        // second task's recurrence starts at 4 + 2 = 6, then 4 + ceil(6/5) 2 = 8 > D2 = 7.
        let pair = [Task::new(2, 5), Task::new(4, 7)];
        assert_eq!(rt(&pair, Priority::Rate), [Response::within(2), Response::past(8)]);
        // Already the first iterate (C + the others' C = 4 + 2) past D = 5: that is R.
        let tight = [Task::new(2, 5), Task::new(4, 7).deadline(5)];
        assert_eq!(rt(&tight, Priority::Rate)[1], Response::past(6));
        // With jitter, R counts from the arrival: J + w = 1 + 8 = 9 > 7 (w = 6, then 8).
        let late = [Task::new(2, 5), Task::new(4, 7).jitter(1)];
        assert_eq!(rt(&late, Priority::Rate)[1], Response::past(9));
    }

    #[test]
    fn explicit_priorities_override_the_periods_and_ties_make_a_rejection_inconclusive() {
        // The long task first: the short one waits for it and misses.
        let set = [Task::new(1, 2).priority(1), Task::new(2, 10).priority(2)];
        let out = response_times(&set, Priority::Explicit);
        assert_eq!(out.response_times, [Response::past(3), Response::within(2)]);
        assert_eq!(out.verdict, Verdict::NotSchedulable);
        let tied = [Task::new(1, 2).priority(5), Task::new(2, 10).priority(5)];
        assert_eq!(response_times(&tied, Priority::Explicit).verdict, Verdict::Inconclusive);
        // Ties that still fit stay schedulable.
        let light = [Task::new(1, 4).priority(5), Task::new(1, 4).priority(5)];
        let out = response_times(&light, Priority::Explicit);
        assert_eq!(
            (out.verdict, out.response_times),
            (Verdict::Schedulable, vec![Response::within(2), Response::within(2)])
        );
        // No priority at all: nothing to analyse.
        assert_eq!(
            response_times(&[Task::new(1, 4)], Priority::Explicit).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn a_deadline_past_the_period_is_inconclusive_once_the_response_passes_the_period() {
        let set = [Task::new(2, 4), Task::new(3, 6).deadline(9)];
        let out = response_times(&set, Priority::Rate);
        assert_eq!(out.response_times, [Response::within(2), Response::within(7)]);
        assert_eq!(out.verdict, Verdict::Inconclusive);
    }

    /// A task of utilisation c/10^12.
    fn tera(c: u64) -> Task {
        Task::new(c, 1_000_000_000_000)
    }

    #[test]
    fn liu_layland_bound_for_one_two_and_three_tasks_is_exact_at_the_twelfth_digit() {
        // n = 1: the bound is 1.
        assert_eq!(liu_layland(&[Task::new(5, 5)]).verdict, Verdict::Schedulable);
        // n = 2: 2 (sqrt 2 - 1) = 0.828427124746190...; each task just below or above half of it,
        // 1e-12 apart, too close for floats to decide.
        assert_eq!(liu_layland(&[tera(414_213_562_373); 2]).verdict, Verdict::Schedulable);
        assert_eq!(liu_layland(&[tera(414_213_562_374); 2]).verdict, Verdict::Inconclusive);
        // n = 3: 3 (2^(1/3) - 1) = 0.779763149684619...
        assert_eq!(liu_layland(&[tera(259_921_049_894); 3]).verdict, Verdict::Schedulable);
        assert_eq!(liu_layland(&[tera(259_921_049_895); 3]).verdict, Verdict::Inconclusive);
        assert!(within_liu_layland(&[tera(259_921_049_894); 3]));
    }

    #[test]
    fn liu_layland_bound_falls_towards_ln_2() {
        // U = 0.6931 < ln 2 = 0.693147...: accepted for every n.
        for n in [1, 2, 3, 10, 100, 1000] {
            let set = vec![Task::new(6931, 10_000 * n); n as usize];
            assert_eq!(liu_layland(&set).verdict, Verdict::Schedulable, "n = {n}");
        }
        // U = 0.6932: under the bound for 100 tasks (0.6956), over it for 10,000 (0.69317).
        let set = |n: u64| vec![Task::new(6932, 10_000 * n); n as usize];
        assert_eq!(liu_layland(&set(100)).verdict, Verdict::Schedulable);
        assert_eq!(liu_layland(&set(10_000)).verdict, Verdict::Inconclusive);
    }

    #[test]
    fn hyperbolic_bound_accepts_a_set_liu_layland_does_not() {
        // U = 0.95 > 0.828, but (1 + 0.9)(1 + 0.05) = 1.995 <= 2.
        let set = [Task::new(9, 10), Task::new(1, 20)];
        assert_eq!(liu_layland(&set).verdict, Verdict::Inconclusive);
        assert_eq!(hyperbolic(&set).verdict, Verdict::Schedulable);
        assert_eq!(response_times(&set, Priority::Rate).verdict, Verdict::Schedulable);
        // Exactly 2 passes: (1 + 1/2)(1 + 1/3) = 2.
        assert_eq!(hyperbolic(&[Task::new(1, 2), Task::new(1, 3)]).verdict, Verdict::Schedulable);
    }

    #[test]
    fn bounds_reject_an_overload_and_leave_constrained_deadlines_open() {
        assert_eq!(
            liu_layland(&[Task::new(2, 3), Task::new(2, 3)]).verdict,
            Verdict::NotSchedulable
        );
        assert_eq!(
            hyperbolic(&[Task::new(2, 3), Task::new(2, 3)]).verdict,
            Verdict::NotSchedulable
        );
        assert_eq!(liu_layland(&[Task::new(1, 10).deadline(5)]).verdict, Verdict::Inconclusive);
        assert_eq!(liu_layland(&[]).verdict, Verdict::Schedulable);
        assert_eq!(hyperbolic(&[Task::new(1, 0)]).verdict, Verdict::Inconclusive);
    }
}
