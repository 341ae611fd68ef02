//! Several CPUs: partitioning heuristics over a uniprocessor test, and two tests for global EDF.

use crate::exact;
use crate::{valid, Outcome, Task, Verdict};

/// Where a partitioning heuristic places each task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// On the first CPU (in index order) whose test still accepts.
    First,
    /// On the least loaded CPU (by the same size the tasks are sorted by) whose test still
    /// accepts, trying CPUs from the least loaded up.
    Worst,
}

/// The size tasks are sorted by (largest first) and CPU loads are summed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Utilisation C/T.
    Utilisation,
    /// Density C/min(D, T).
    Density,
}

impl Size {
    fn of(self, t: &Task) -> (u64, u64) {
        match self {
            Size::Utilisation => (t.wcet, t.period),
            Size::Density => (t.wcet, t.min_deadline_period()),
        }
    }
}

/// Partitioned scheduling: first-fit or worst-fit decreasing (D. S. Johnson, A. Demers,
/// J. D. Ullman, M. R. Garey and R. L. Graham, "Worst-Case Performance Bounds for Simple
/// One-Dimensional Packing Algorithms", SIAM Journal on Computing 1974; for real-time tasks
/// S. K. Dhall and C. L. Liu, "On a Real-Time Scheduling Problem", Operations Research 1978).
/// Tasks are taken by decreasing `size` (ties in set order) and each goes to a CPU chosen by
/// `fit` where `test` still accepts the tasks placed there ([`place`]).
///
/// Schedulable, with [`Outcome::cpu_of_task`], when every task is placed; not schedulable
/// when the utilisation exceeds `cpus`; else inconclusive (a heuristic can fail on a
/// schedulable set).
pub fn partition(
    tasks: &[Task],
    cpus: usize,
    fit: Fit,
    size: Size,
    test: impl Fn(&[Task]) -> Outcome,
) -> Outcome {
    if !valid(tasks) {
        return Outcome::of(Verdict::Inconclusive);
    }
    if exact::exceeds(tasks.iter().map(|t| (t.wcet, t.period)), cpus) {
        return Outcome::of(Verdict::NotSchedulable);
    }
    match place(tasks, cpus, fit, size, test) {
        Placement { cpu_of_task, accepted: true } => {
            Outcome { verdict: Verdict::Schedulable, response_times: Vec::new(), cpu_of_task }
        }
        Placement { accepted: false, .. } => Outcome::of(Verdict::Inconclusive),
    }
}

/// Each task's CPU by a partitioning heuristic, and whether `test` accepted every CPU's share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The CPU of each task, in the set's order (0..cpus).
    pub cpu_of_task: Vec<usize>,
    /// Whether every task went where the test still accepted the CPU's tasks.
    pub accepted: bool,
}

/// The placement of [`partition`], made whole: a task no CPU's `test` accepts goes to the CPU
/// least loaded by `size` (ties to the lower index) and stays there for the tasks after it,
/// so a set that does not partition still gets a CPU for each task (what a run pins).
/// Where [`partition`] accepts, its [`Outcome::cpu_of_task`] is this placement.
pub fn place(
    tasks: &[Task],
    cpus: usize,
    fit: Fit,
    size: Size,
    test: impl Fn(&[Task]) -> Outcome,
) -> Placement {
    let cpus = cpus.max(1);
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order
        .sort_by(|&a, &b| exact::ratio_cmp(size.of(&tasks[b]), size.of(&tasks[a])).then(a.cmp(&b)));
    let mut placed: Vec<Vec<Task>> = vec![Vec::new(); cpus];
    let mut cpu_of_task = vec![0; tasks.len()];
    let mut accepted = true;
    for i in order {
        let loads: Vec<_> =
            placed.iter().map(|p| exact::sum(p.iter().map(|t| size.of(t)))).collect();
        let mut by_load: Vec<usize> = (0..cpus).collect();
        by_load.sort_by(|&a, &b| {
            let ((pa, qa), (pb, qb)) = (&loads[a], &loads[b]);
            exact::cmp(pa, qa, pb, qb).then(a.cmp(&b))
        });
        let candidates = match fit {
            Fit::First => (0..cpus).collect(),
            Fit::Worst => by_load.clone(),
        };
        let chosen = candidates.into_iter().find(|&cpu| {
            let mut trial = placed[cpu].clone();
            trial.push(tasks[i]);
            test(&trial).schedulable()
        });
        let cpu = chosen.unwrap_or_else(|| {
            accepted = false;
            by_load[0]
        });
        placed[cpu].push(tasks[i]);
        cpu_of_task[i] = cpu;
    }
    Placement { cpu_of_task, accepted }
}

/// The verdict of a global-EDF condition sum(u) <= m - (m - 1) u_max on `pairs`.
fn global(tasks: &[Task], cpus: usize, pairs: Vec<(u64, u64)>, applies: bool) -> Outcome {
    if !valid(tasks) || cpus == 0 {
        return Outcome::of(Verdict::Inconclusive);
    }
    let verdict = if exact::exceeds(tasks.iter().map(|t| (t.wcet, t.period)), cpus) {
        Verdict::NotSchedulable
    } else if applies && exact::within_gfb(&pairs, cpus) {
        Verdict::Schedulable
    } else {
        Verdict::Inconclusive
    };
    Outcome::of(verdict)
}

/// The GFB test for global EDF on `cpus` identical CPUs (J. Goossens, S. Funk and
/// S. Baruah, "Priority-Driven Scheduling of Periodic Task Systems on Multiprocessors",
/// Real-Time Systems 2003): tasks with deadlines at their periods are schedulable if
/// U <= m - (m - 1) u_max. Exact arithmetic; inconclusive when some D differs from T.
pub fn gfb(tasks: &[Task], cpus: usize) -> Outcome {
    let implicit = tasks.iter().all(|t| t.deadline == t.period);
    global(tasks, cpus, tasks.iter().map(|t| (t.wcet, t.period)).collect(), implicit)
}

/// The density test for global EDF (GFB applied to densities, as in S. Baruah, "Techniques
/// for Multiprocessor Global Schedulability Analysis", RTSS 2007, and Buttazzo's and
/// Baker's surveys): any deadlines, schedulable if sum δ_i <= m - (m - 1) δ_max with
/// δ_i = C_i / min(D_i, T_i). On one CPU it is the density test for EDF (sum δ_i <= 1).
pub fn density(tasks: &[Task], cpus: usize) -> Outcome {
    global(tasks, cpus, tasks.iter().map(|t| (t.wcet, t.min_deadline_period())).collect(), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{processor_demand, qpa, response_times, Priority};

    #[test]
    fn first_fit_decreasing_pairs_large_with_small() {
        // Utilisations 0.4, 0.6, 0.6, 0.4: sorted 0.6 (1), 0.6 (2), 0.4 (0), 0.4 (3).
        let set = [Task::new(2, 5), Task::new(3, 5), Task::new(6, 10), Task::new(4, 10)];
        let out = partition(&set, 2, Fit::First, Size::Utilisation, qpa);
        assert_eq!(out.verdict, Verdict::Schedulable);
        assert_eq!(out.cpu_of_task, [0, 0, 1, 1]);
        // Worst fit spreads: 0.6 on 0, 0.6 on 1, then 0.4 on 0 (tie, lower index), 0.4 on 1.
        let out = partition(&set, 2, Fit::Worst, Size::Utilisation, qpa);
        assert_eq!(out.cpu_of_task, [0, 0, 1, 1]);
        // One CPU cannot take 2.0; three CPUs cannot take four tasks of 0.6 by first fit
        // when none pair up, but the set is not overloaded: inconclusive.
        assert_eq!(
            partition(&set, 1, Fit::First, Size::Utilisation, qpa).verdict,
            Verdict::NotSchedulable
        );
        let heavy = [Task::new(3, 5); 4];
        assert_eq!(
            partition(&heavy, 3, Fit::First, Size::Utilisation, qpa).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn worst_fit_balances_where_first_fit_packs() {
        // Four tasks of 0.25 on two CPUs: first fit puts all on CPU 0, worst fit alternates.
        let set = [Task::new(1, 4); 4];
        let ff = partition(&set, 2, Fit::First, Size::Utilisation, qpa);
        assert_eq!(ff.cpu_of_task, [0, 0, 0, 0]);
        let wf = partition(&set, 2, Fit::Worst, Size::Utilisation, qpa);
        assert_eq!(wf.cpu_of_task, [0, 1, 0, 1]);
    }

    #[test]
    fn density_order_puts_tight_deadlines_first_and_the_test_decides_the_fit() {
        // Densities 1/4 and 2/3 (utilisation 1/6): by density the second task goes first.
        let set = [Task::new(1, 4), Task::new(2, 12).deadline(3)];
        let dm = |s: &[Task]| response_times(s, Priority::Deadline);
        let out = partition(&set, 2, Fit::First, Size::Density, dm);
        assert_eq!((out.verdict, out.cpu_of_task), (Verdict::Schedulable, vec![0, 0]));
        // Two tasks each due 2 after release with C = 2 cannot share a CPU under any test.
        let tight = [Task::new(2, 10).deadline(2), Task::new(2, 10).deadline(2)];
        let out = partition(&tight, 2, Fit::First, Size::Density, processor_demand);
        assert_eq!(out.cpu_of_task, [0, 1]);
    }

    #[test]
    fn a_task_no_cpu_accepts_goes_to_the_least_loaded_and_the_rest_still_fit() {
        // (9, 10) -> 0, (4, 7) -> 1; (4, 9) fits nowhere (beside (4, 7) its R = 12 > 9) and
        // goes to CPU 1, the less loaded (0.57 < 0.9); (1, 100) still fits CPU 0 (R = 10).
        let set = [Task::new(4, 7), Task::new(9, 10), Task::new(4, 9), Task::new(1, 100)];
        let rm = |s: &[Task]| response_times(s, Priority::Rate);
        let p = place(&set, 2, Fit::First, Size::Utilisation, rm);
        assert_eq!(p, Placement { cpu_of_task: vec![1, 0, 1, 0], accepted: false });
        assert_eq!(
            partition(&set, 2, Fit::First, Size::Utilisation, rm).verdict,
            Verdict::Inconclusive
        );
        // Where the partition succeeds, the placement is the partition's.
        let fits = [Task::new(2, 5), Task::new(3, 5), Task::new(6, 10), Task::new(4, 10)];
        let p = place(&fits, 2, Fit::First, Size::Utilisation, rm);
        assert!(p.accepted);
        assert_eq!(
            p.cpu_of_task,
            partition(&fits, 2, Fit::First, Size::Utilisation, rm).cpu_of_task
        );
        assert_eq!(place(&fits, 0, Fit::First, Size::Utilisation, rm).cpu_of_task, [0; 4]);
    }

    #[test]
    fn gfb_on_two_cpus() {
        // U = 1.25 <= 2 - 0.5: accepted; U = 1.75 > 2 - 0.75: not shown.
        let ok = [Task::new(1, 2), Task::new(1, 2), Task::new(1, 4)];
        assert_eq!(gfb(&ok, 2).verdict, Verdict::Schedulable);
        let no = [Task::new(3, 4), Task::new(3, 4), Task::new(1, 4)];
        assert_eq!(gfb(&no, 2).verdict, Verdict::Inconclusive);
        assert_eq!(gfb(&no, 1).verdict, Verdict::NotSchedulable);
        // Dhall's effect: m light tasks and one of utilisation 1 fit two CPUs' capacity but
        // not the bound.
        let dhall = [Task::new(1, 10), Task::new(1, 10), Task::new(10, 10)];
        assert_eq!(gfb(&dhall, 2).verdict, Verdict::Inconclusive);
        // GFB needs implicit deadlines; density takes any.
        let constrained = [Task::new(1, 4).deadline(2), Task::new(1, 4)];
        assert_eq!(gfb(&constrained, 2).verdict, Verdict::Inconclusive);
        assert_eq!(density(&constrained, 2).verdict, Verdict::Schedulable);
        assert_eq!(density(&constrained, 0).verdict, Verdict::Inconclusive);
    }

    #[test]
    fn density_test_on_one_cpu_sums_c_over_d() {
        // 1/2 + 1/2 = 1: accepted; 1/2 + 1/2 + 1/100: not shown, though EDF meets every deadline.
        let set = [Task::new(1, 4).deadline(2), Task::new(1, 4).deadline(2)];
        assert_eq!(density(&set, 1).verdict, Verdict::Schedulable);
        let more = [set[0], set[1], Task::new(1, 100)];
        assert_eq!(density(&more, 1).verdict, Verdict::Inconclusive);
        assert_eq!(qpa(&more).verdict, Verdict::Schedulable);
    }
}
