//! EDF on one CPU: the utilisation test and the processor-demand test, with QPA.

use crate::exact;
use crate::{valid, Outcome, Task, Verdict};

/// EDF's utilisation test (C. L. Liu and J. W. Layland, "Scheduling Algorithms for
/// Multiprogramming in a Hard-Real-Time Environment", JACM 1973): with deadlines at the
/// periods (or later), the set is schedulable iff U <= 1, summed exactly. With some D < T a
/// U <= 1 is inconclusive (use [`processor_demand`]).
pub fn edf_utilisation(tasks: &[Task]) -> Outcome {
    if !valid(tasks) {
        return Outcome::of(Verdict::Inconclusive);
    }
    Outcome::of(if exact::exceeds(tasks.iter().map(|t| (t.wcet, t.period)), 1) {
        Verdict::NotSchedulable
    } else if tasks.iter().all(|t| t.deadline >= t.period) {
        Verdict::Schedulable
    } else {
        Verdict::Inconclusive
    })
}

/// The demand bound function h(t): the work of the jobs released at or after 0 (all tasks
/// released together at 0) whose deadlines are at most t, sum over D_i <= t of
/// (floor((t - D_i) / T_i) + 1) C_i.
pub fn demand_bound(tasks: &[Task], t: u128) -> u128 {
    tasks
        .iter()
        .filter(|k| u128::from(k.deadline) <= t)
        .map(|k| ((t - u128::from(k.deadline)) / u128::from(k.period) + 1) * u128::from(k.wcet))
        .sum()
}

/// The length of the synchronous busy period: the least fixed point of
/// L = sum ceil(L / T_i) C_i from L = sum C_i. `None` when U > 1 (it never ends) or some
/// period is zero.
pub fn busy_period(tasks: &[Task]) -> Option<u128> {
    if !valid(tasks) || exact::exceeds(tasks.iter().map(|t| (t.wcet, t.period)), 1) {
        return None;
    }
    let work = |l: u128| -> u128 {
        tasks.iter().map(|t| l.div_ceil(u128::from(t.period)) * u128::from(t.wcet)).sum()
    };
    let mut l: u128 = tasks.iter().map(|t| u128::from(t.wcet)).sum();
    loop {
        let next = work(l);
        if next == l {
            return Some(l);
        }
        l = next;
    }
}

/// The checks both demand tests share: `Err` with the verdict when U > 1 settles it or the set
/// is invalid, else the busy period L (no deadline after L needs checking).
fn demand_setup(tasks: &[Task]) -> Result<u128, Outcome> {
    if !valid(tasks) {
        return Err(Outcome::of(Verdict::Inconclusive));
    }
    busy_period(tasks).ok_or(Outcome::of(Verdict::NotSchedulable))
}

/// The processor-demand test for EDF (S. K. Baruah, A. K. Mok and L. E. Rosier, "Preemptively
/// Scheduling Hard-Real-Time Sporadic Tasks on One Processor", RTSS 1990): the set is
/// schedulable iff U <= 1 and h(d) <= d at every absolute deadline d up to the synchronous
/// busy period. Exact for any deadlines, in integers; it visits every deadline, so for long
/// busy periods prefer [`qpa`], which gives the same verdict.
pub fn processor_demand(tasks: &[Task]) -> Outcome {
    let l = match demand_setup(tasks) {
        Ok(l) => l,
        Err(outcome) => return outcome,
    };
    // Every absolute deadline up to L, task by task (the order does not change the verdict).
    let ok = tasks.iter().all(|t| {
        let (d, p) = (u128::from(t.deadline), u128::from(t.period));
        (0..).map(|k| d + k * p).take_while(|&x| x <= l).all(|x| demand_bound(tasks, x) <= x)
    });
    Outcome::of(if ok { Verdict::Schedulable } else { Verdict::NotSchedulable })
}

/// Quick Processor-demand Analysis (F. Zhang and A. Burns, "Schedulability Analysis for
/// Real-Time Systems with EDF Scheduling", IEEE Transactions on Computers 2009): the verdict of
/// [`processor_demand`], walking down from the last deadline before L and jumping to h(t)
/// whenever h(t) < t, so it visits few of the deadlines.
pub fn qpa(tasks: &[Task]) -> Outcome {
    let l = match demand_setup(tasks) {
        Ok(l) => l,
        Err(outcome) => return outcome,
    };
    let Some(d_min) = tasks.iter().map(|t| u128::from(t.deadline)).min() else {
        return Outcome::of(Verdict::Schedulable);
    };
    // With h(L) <= L, the deadlines to check are those below L; with none, nothing can miss.
    let Some(mut t) = last_deadline_before(tasks, l + 1) else {
        return Outcome::of(Verdict::Schedulable);
    };
    let mut h = demand_bound(tasks, t);
    while h <= t && h > d_min {
        t = if h < t {
            h
        } else {
            match last_deadline_before(tasks, t) {
                Some(d) => d,
                None => break,
            }
        };
        h = demand_bound(tasks, t);
    }
    Outcome::of(if h <= t { Verdict::Schedulable } else { Verdict::NotSchedulable })
}

/// The largest absolute deadline strictly before `t`.
fn last_deadline_before(tasks: &[Task], t: u128) -> Option<u128> {
    tasks
        .iter()
        .filter(|k| u128::from(k.deadline) < t)
        .map(|k| {
            let (d, p) = (u128::from(k.deadline), u128::from(k.period));
            d + (t - 1 - d) / p * p
        })
        .max()
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;

    #[test]
    fn demand_bound_counts_jobs_due_by_t() {
        let set = [Task::new(2, 4).deadline(3), Task::new(1, 5)];
        assert_eq!(demand_bound(&set, 2), 0);
        assert_eq!(demand_bound(&set, 3), 2);
        assert_eq!(demand_bound(&set, 7), 5);
        assert_eq!(demand_bound(&set, 10), 6);
        assert_eq!(busy_period(&set), Some(3));
    }

    #[test]
    fn constrained_deadlines_can_fail_at_low_utilisation() {
        // U = 0.7, but 3 units are due by t = 2.
        let set = [Task::new(2, 4).deadline(2), Task::new(1, 5).deadline(2)];
        assert_eq!(processor_demand(&set).verdict, Verdict::NotSchedulable);
        assert_eq!(qpa(&set).verdict, Verdict::NotSchedulable);
        assert_eq!(edf_utilisation(&set).verdict, Verdict::Inconclusive);
        let relaxed = [Task::new(2, 4).deadline(2), Task::new(1, 5).deadline(3)];
        assert_eq!(qpa(&relaxed).verdict, Verdict::Schedulable);
    }

    #[test]
    fn edf_accepts_exactly_full_utilisation() {
        let set = [Task::new(1, 3), Task::new(1, 3), Task::new(1, 3)];
        assert_eq!(edf_utilisation(&set).verdict, Verdict::Schedulable);
        assert_eq!(processor_demand(&set).verdict, Verdict::Schedulable);
        assert_eq!(qpa(&set).verdict, Verdict::Schedulable);
        let over = [Task::new(1, 3), Task::new(1, 3), Task::new(1, 3), Task::new(1, 1000)];
        assert_eq!(edf_utilisation(&over).verdict, Verdict::NotSchedulable);
        assert_eq!(qpa(&over).verdict, Verdict::NotSchedulable);
        assert_eq!(busy_period(&over), None);
    }

    #[test]
    fn qpa_gives_the_full_demand_tests_verdict_on_random_sets() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(32);
        let (mut yes, mut no) = (0, 0);
        for _ in 0..5000 {
            let n: u64 = rng.random_range(1..=6);
            let set: Vec<Task> = (0..n)
                .map(|_| {
                    let period: u64 = rng.random_range(2..=60);
                    let wcet = rng.random_range(1..=period.div_ceil(n));
                    Task::new(wcet, period).deadline(rng.random_range(wcet..=period))
                })
                .collect();
            let full = processor_demand(&set).verdict;
            assert_eq!(qpa(&set).verdict, full, "{set:?}");
            match full {
                Verdict::Schedulable => yes += 1,
                _ => no += 1,
            }
        }
        assert!(yes > 1000 && no > 1000, "{yes} accepted, {no} rejected");
    }
}
