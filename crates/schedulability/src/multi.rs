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
/// `fit` where `test` still accepts the tasks placed there.
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
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order
        .sort_by(|&a, &b| exact::ratio_cmp(size.of(&tasks[b]), size.of(&tasks[a])).then(a.cmp(&b)));
    let mut placed: Vec<Vec<Task>> = vec![Vec::new(); cpus];
    let mut cpu_of_task = vec![0; tasks.len()];
    for i in order {
        let mut candidates: Vec<usize> = (0..cpus).collect();
        if fit == Fit::Worst {
            let loads: Vec<_> =
                placed.iter().map(|p| exact::sum(p.iter().map(|t| size.of(t)))).collect();
            candidates.sort_by(|&a, &b| {
                let ((pa, qa), (pb, qb)) = (&loads[a], &loads[b]);
                exact::cmp(pa, qa, pb, qb).then(a.cmp(&b))
            });
        }
        let chosen = candidates.into_iter().find(|&cpu| {
            let mut trial = placed[cpu].clone();
            trial.push(tasks[i]);
            test(&trial).schedulable()
        });
        match chosen {
            Some(cpu) => {
                placed[cpu].push(tasks[i]);
                cpu_of_task[i] = cpu;
            }
            None => return Outcome::of(Verdict::Inconclusive),
        }
    }
    Outcome { verdict: Verdict::Schedulable, response_times: Vec::new(), cpu_of_task }
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
