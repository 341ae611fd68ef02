//! The knees of a live run of generated sets (issue #40, item 4): each set the run measured
//! (`generate = { sets = N, live = k }`), judged four ways: measured (this run), simulated
//! (the newest simulated run of the same spec file, whose batches hold the same sets), the
//! scheduler's plain test and its overhead-aware twin under the newest calibration. The
//! knees and the conditions are `schedlab_analysis::knee`'s; this module gathers the verdicts.

use crate::calibrate::Calibration;
use crate::subject::Subject;
use crate::Error;
use schedlab_analysis::knee::{self, judge, Knee, KneeSet};
use schedlab_model::sets::TaskSetRow;
use schedlab_schedulability::{
    deadline_with_overheads, dispatcher_within_share, edf_dispatcher_with_overheads, within_share,
    Overheads, Quanta, Reservations, Task, Verdict,
};
use schedlab_spec::{Periodic, RtScheduler};
use schedlab_store::Store;

/// A live run's sets with their four verdicts, and where the verdicts came from: the
/// simulated run of the same spec (the newest run of `simulate` whose spec text hashes as
/// the live run's: its batches hold the same sets) and the calibration the twins charged
/// (the newest, as `check` takes it without `--overheads`).
#[derive(Debug, Clone, Default)]
pub struct Knees {
    /// Each set with its four verdicts.
    pub sets: Vec<KneeSet>,
    /// The live run.
    pub run: i64,
    /// The simulated run of the same spec, if any.
    pub sim_run: Option<i64>,
    /// The calibration the twins charged, if any.
    pub calibration: Option<i64>,
    /// How the calibration stands to the live run: how long before or after it, and the
    /// machine facts that differ between them.
    pub calibration_notes: Vec<String>,
}

/// The knees of `subject` when it is one live run (not a campaign) of generated sets on one
/// CPU under a scheduler of [`knee::JUDGES`], over its cells as loaded (`show --cell` keeps
/// some); None otherwise.
pub fn of_run(store: &Store, subject: &Subject) -> Result<Option<Knees>, Error> {
    let run = &subject.run;
    if run.mode != schedlab_model::Mode::Measured.as_str() || subject.campaign.is_some() {
        return Ok(None);
    }
    let Ok(plan) = serde_json::from_str::<schedlab_spec::Plan>(&run.plan_json) else {
        return Ok(None);
    };
    let live: Vec<(&str, &str, &Periodic)> = plan
        .cells
        .iter()
        .filter_map(|c| {
            let g = c.groups.iter().find(|g| !g.background)?;
            let p = g.workload.periodic()?;
            let judged = judge(p.scheduler.name()).is_some();
            (judged && p.set_index().is_some() && p.cpus.is_empty()).then_some((
                c.key.as_str(),
                g.workload_name.as_str(),
                p,
            ))
        })
        .collect();
    if live.is_empty() {
        return Ok(None);
    }
    let sim = store
        .runs()?
        .into_iter()
        .find(|r| r.mode == schedlab_model::Mode::Sim.as_str() && r.spec_hash == run.spec_hash);
    let (rows, sim_cells) = match &sim {
        Some(s) => (store.task_sets(s.id)?, store.cells(s.id)?),
        None => (Vec::new(), Vec::new()),
    };
    // Each simulated cell's workload: two families can hold the same sets (a `deadline`
    // family with jobs of C and one with jobs of 0.9 C).
    let workload_of: std::collections::HashMap<u32, &str> =
        sim_cells.iter().map(|c| (c.params.cell_id, c.params.workload.as_str())).collect();
    let calibration = crate::calibrate::stored_in(store, None)?;
    let stats = schedlab_analysis::rt_stats(&subject.cells);
    let mut sets = Vec::new();
    for (key, family, p) in live {
        let measured = stats.iter().find(|s| s.params.key == key).and_then(measured_clean);
        let simulated =
            sim.as_ref().and_then(|_| simulated_clean(in_family(&rows, &workload_of, family), p));
        let (plain, twin) = verdicts(&p.analysed(), p, calibration.as_ref().map(|c| &c.1));
        sets.push(KneeSet {
            scheduler: p.scheduler.name().to_string(),
            family: family.to_string(),
            utilisation: p.utilisation.unwrap_or(f64::NAN),
            set: p.set_index().unwrap_or(0),
            verdicts: [measured, simulated, plain, twin],
        });
    }
    let calibration_notes =
        calibration.as_ref().map(|(id, c)| beside_the_run(*id, c, run)).unwrap_or_default();
    Ok(Some(Knees {
        sets,
        run: run.id,
        sim_run: sim.map(|s| s.id),
        calibration: calibration.map(|c| c.0),
        calibration_notes,
    }))
}

/// How calibration `id` stands to the live `run` whose sets its twins judge: when it was
/// taken, relative to the run, and the machine facts that differ (the host's costs move
/// within a day; another CPU or kernel has other costs).
fn beside_the_run(id: i64, c: &Calibration, run: &schedlab_store::RunRow) -> Vec<String> {
    let hours = (run.started_unix - c.created_unix) / 3600.0;
    let when = if hours >= 0.0 {
        format!("{:.1} h before", hours)
    } else {
        format!("{:.1} h after", -hours)
    };
    let mut out = vec![format!("calibration {id} was taken {when} run {} began", run.id)];
    out.extend(c.measured_elsewhere(id, &run.env, &format!("run {}", run.id)));
    out
}

/// What `export --per set` (`per_set`) or `--per acceptance` writes of `subject`: a
/// simulated batch's rows ([`schedlab_report::sets`]), else a live run's sets judged four
/// ways and their knee curves ([`schedlab_report::knee`]); None when it has neither.
pub fn export_rows(
    store: &Store,
    subject: &Subject,
    per_set: bool,
) -> Result<Option<Vec<serde_json::Value>>, Error> {
    let id = subject.run.id;
    if !subject.sets.is_empty() {
        return Ok(Some(if per_set {
            schedlab_report::sets::set_rows(id, &subject.sets)
        } else {
            schedlab_report::sets::acceptance_rows(
                id,
                &schedlab_analysis::acceptance(&subject.sets),
            )
        }));
    }
    let Some(k) = of_run(store, subject)? else { return Ok(None) };
    Ok(Some(if per_set {
        schedlab_report::knee::set_rows(id, &k.sets)
    } else {
        schedlab_report::knee::curve_rows(id, &k.knees())
    }))
}

/// A measured cell's verdict: no deadline miss in any repetition; a cell none of whose
/// repetitions ran (a refused reservation, a dead dispatcher) counts as a miss; None while
/// it has not run.
fn measured_clean(s: &schedlab_analysis::RtStats) -> Option<bool> {
    let misses = &s.figures[&schedlab_analysis::rt::MISSES];
    if s.reps > 0 && misses.n > 0 {
        Some(misses.mean == 0.0 && s.failed == 0)
    } else {
        (s.failed > 0).then_some(false)
    }
}

/// The rows of `rows` whose simulated cell runs workload `family` (`workload_of`: each
/// simulated cell's workload by its id).
fn in_family<'a>(
    rows: &'a [TaskSetRow],
    workload_of: &'a std::collections::HashMap<u32, &str>,
    family: &'a str,
) -> impl Iterator<Item = &'a TaskSetRow> {
    rows.iter().filter(move |r| workload_of.get(&r.cell_id) == Some(&family))
}

/// The simulated verdict of the set `p` in the batch rows of its family in a simulated run:
/// the row of the same scheduler, utilisation and index with the same tasks (a set the simulated
/// scheduler refused is not accepted, as in `schedlab_analysis::acceptance`).
fn simulated_clean<'a>(
    rows: impl IntoIterator<Item = &'a TaskSetRow>,
    p: &Periodic,
) -> Option<bool> {
    let same_tasks = |r: &TaskSetRow| {
        r.tasks.len() == p.tasks.len()
            && r.tasks
                .iter()
                .zip(&p.tasks)
                .all(|(a, b)| (a.c_ns, a.t_ns, a.d_ns) == (b.c_ns, b.t_ns, b.deadline_ns()))
    };
    rows.into_iter()
        .find(|r| {
            r.scheduler == p.scheduler.name()
                && Some(r.index) == p.set_index()
                && p.utilisation.is_some_and(|u| (u - r.utilisation).abs() < 1e-9)
                && same_tasks(r)
        })
        .map(|r| r.schedulable)
}

/// The plain test's and the twin's verdict on `tasks` under `p`'s scheduler (accepted:
/// schedulable; a sufficient test's unknown counts as rejected); the twin's None without a
/// calibration.
fn verdicts(tasks: &[Task], p: &Periodic, c: Option<&Calibration>) -> (Option<bool>, Option<bool>) {
    let Some((plain, _)) = judge(p.scheduler.name()) else { return (None, None) };
    let run = |name: &str| {
        schedlab_schedulability::test(name)
            .map(|t| (t.run)(tasks, 1, &Overheads::default()).verdict == Verdict::Schedulable)
    };
    let twin = c.and_then(|c| twin_accepts(tasks, p, c));
    (run(plain), twin)
}

/// The twin of `p`'s scheduler on `tasks` under calibration `c`. Beside each twin's own
/// model, real-time work beyond RT throttling's share (`kernel.sched_rt_runtime_us` of
/// `sched_rt_period_us`, 95% by default) is throttled, so under SCHED_FIFO (fifo-rm,
/// fifo-dm, and the dispatcher's FIFO workers) a set whose charged utilisation (each C
/// with its per-job costs; under the dispatcher with its own decisions) exceeds the share is
/// rejected: the kernel stops it for the rest of each throttling period (the
/// dispatcher's design notes, "Real-time hygiene"). SCHED_DEADLINE's admission checks the
/// same share ([`Reservations::share`]). None (not judged) for a scheduler without a twin,
/// and for the dispatcher when the calibration did not measure its decision cost
/// (`calibrate --no-dispatchers`). The costs are [`Calibration::overheads_for`] the set's
/// body: no interrupts for jobs of CPU time where the kernel counts them in it.
fn twin_accepts(tasks: &[Task], p: &Periodic, c: &Calibration) -> Option<bool> {
    let o = c.overheads_for(0, p.body.in_cpu_time());
    let share = c.rt_share.map(|s| (s.runtime_us, s.period_us));
    let verdict = match p.scheduler {
        RtScheduler::FifoRm | RtScheduler::FifoDm => {
            let charged: Vec<Task> =
                tasks.iter().map(|t| Task { wcet: t.wcet + o.per_job(), ..*t }).collect();
            if !within_share(&charged, share) {
                return Some(false);
            }
            let by = p.rta_priority();
            schedlab_schedulability::response_times_with_overheads(tasks, by, &o).verdict
        }
        RtScheduler::Edf => {
            let q =
                Quanta { quantum: p.quantum_ns, decision: c.get("decision_cost_edf")?.used_ns() };
            if !dispatcher_within_share(tasks, q, &o, share) {
                return Some(false);
            }
            edf_dispatcher_with_overheads(tasks, q, &o).verdict
        }
        RtScheduler::Deadline => {
            let r = Reservations { work_ppm: p.work_ppm, share };
            deadline_with_overheads(tasks, r, &o).verdict
        }
        _ => return None,
    };
    Some(verdict == Verdict::Schedulable)
}

impl Knees {
    /// The knees, per (scheduler, family).
    pub fn knees(&self) -> Vec<Knee> {
        knee::knees(&self.sets)
    }

    /// The knees as `show` prints them: a line saying where the verdicts came from, the
    /// table, and the two conditions.
    pub fn lines(&self) -> Vec<String> {
        let Knees { run, sim_run, calibration, .. } = *self;
        let from = |what: &str, id: Option<i64>, none: &str| {
            id.map_or(none.to_string(), |id| format!("{what} {id}"))
        };
        let mut out = vec![format!(
            "\nKnees (the lowest utilisation at which some set the run measured misses or is rejected; over the same sets: measured in run {}, simulated in {}, the plain test, its twin with {}; none: no miss or rejection up to the highest utilisation):",
            run,
            from("run", sim_run, "no simulated run of this spec (`schedlab simulate` it)"),
            from("calibration", calibration, "no calibration (`schedlab calibrate`)"),
        )];
        let knees = self.knees();
        out.push(schedlab_report::knee::table(&knees).to_string());
        out.extend(schedlab_report::knee::condition_lines(&knee::conditions(&self.sets, &knees)));
        out.extend(self.calibration_notes.iter().map(|n| format!("note: {n}")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{Overhead, Share};
    use schedlab_periodic::LatencyPercentiles;

    fn calibration() -> Calibration {
        let o = |name: &str, p99_ns| Overhead {
            name: name.into(),
            what: String::new(),
            ns: LatencyPercentiles { p99_ns, ..Default::default() },
        };
        Calibration {
            created_unix: 0.0,
            cpu: 0,
            overheads: vec![
                o("release_latency", 30_000),
                o("context_switch", 5_000),
                o("decision_cost_edf", 20_000),
            ],
            tick_period_ns: None,
            interrupts: None,
            rt_share: Some(Share { runtime_us: 950_000, period_us: 1_000_000 }),
            fair_server: None,
            run_id: None,
            percentile: 99.0,
            notes: Vec::new(),
            environment: None,
        }
    }

    fn periodic(scheduler: RtScheduler, work_ppm: u32) -> Periodic {
        let text = format!(
            "name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"periodic\"\nscheduler = \"{}\"\nduration_s = 1\nquantum_ms = 1\nwork_fraction = {}\ntasks = [{{ c_ms = 1, t_ms = 10 }}]\n",
            scheduler.name(),
            f64::from(work_ppm) / 1e6
        );
        let spec = schedlab_spec::parse_at("t.toml", &text, std::path::Path::new(".")).unwrap();
        spec.plan.cells[0].groups[0].workload.periodic().unwrap().clone()
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn each_scheduler_is_judged_by_its_twin_with_the_calibrated_costs() {
        let c = calibration();
        // (4, 10), (5, 10) ms, U = 0.9: every plain test accepts it.
        let set = [Task::new(4 * MS, 10 * MS), Task::new(5 * MS, 10 * MS)];
        // fifo-rm: C + 10 µs each, R2 = 4.01 + 5.01 + 30 µs of latency = 9.05 ms <= 10:
        // accepted; charged U = 0.902 <= 0.95.
        let rm = periodic(RtScheduler::FifoRm, 1_000_000);
        assert_eq!(verdicts(&set, &rm, Some(&c)), (Some(true), Some(true)));
        // edf: each quantum loses 30 + 20 + 10 = 60 µs, 5 + 6 quanta > 10 ms: rejected.
        let edf = periodic(RtScheduler::Edf, 1_000_000);
        assert_eq!(verdicts(&set, &edf, Some(&c)), (Some(true), Some(false)));
        // deadline, work = C: 4.01 ms of charge does not fit a runtime of 4 ms.
        let dl = periodic(RtScheduler::Deadline, 1_000_000);
        assert_eq!(verdicts(&set, &dl, Some(&c)), (Some(true), Some(false)));
        // Work 0.9 C leaves room; U = 0.9 <= 0.95 is admitted.
        let dl90 = periodic(RtScheduler::Deadline, 900_000);
        assert_eq!(verdicts(&set, &dl90, Some(&c)), (Some(true), Some(true)));
        // Without a calibration the twin says nothing; nor the dispatcher's without its cost.
        assert_eq!(verdicts(&set, &rm, None), (Some(true), None));
        let mut blind = calibration();
        blind.overheads.retain(|o| o.name != "decision_cost_edf");
        assert_eq!(verdicts(&set, &edf, Some(&blind)), (Some(true), None));
        // (4, 10), (5.8, 10): U = 0.98, charged 0.982 > 0.95: throttled, rejected, while
        // the response time 4.01 + 5.81 + 0.03 = 9.85 ms would pass.
        let full = [Task::new(4 * MS, 10 * MS), Task::new(5_800_000, 10 * MS)];
        assert_eq!(verdicts(&full, &rm, Some(&c)), (Some(true), Some(false)));
    }

    #[test]
    fn a_simulated_row_matches_by_scheduler_utilisation_index_and_tasks() {
        let mut p = periodic(RtScheduler::Edf, 1_000_000);
        p.utilisation = Some(0.7);
        p.live_set = Some(2);
        let t = &p.tasks[0];
        let row = |index: u32, c_ns: u64, ok: bool| TaskSetRow {
            cell_id: 0,
            index,
            seed: 1,
            scheduler: "edf".into(),
            utilisation: 0.7,
            plain_utilisation: 0.1,
            min_utilisation: 0.1,
            cpus: 1,
            tasks: vec![schedlab_model::sets::SetTask {
                c_ns,
                t_ns: t.t_ns,
                d_ns: t.deadline_ns(),
                x: 0,
                y: 1,
            }],
            jobs: 1,
            misses: 0,
            violations: 0,
            schedulable: ok,
            tests: Vec::new(),
            message: None,
            jobs_log: None,
        };
        let rows = [row(1, t.c_ns, true), row(2, t.c_ns + 1, true), row(2, t.c_ns, false)];
        assert_eq!(simulated_clean(&rows, &p), Some(false), "index 2 with the same tasks");
        assert_eq!(simulated_clean(&rows[..2], &p), None);
        // Two families with the same sets (jobs of C, and of 0.9 C): each its own row.
        let mut dl90 = row(2, t.c_ns, true);
        dl90.cell_id = 1;
        let both = [row(2, t.c_ns, false), dl90];
        let workloads = std::collections::HashMap::from([(0, "dl"), (1, "dl90")]);
        assert_eq!(simulated_clean(in_family(&both, &workloads, "dl90"), &p), Some(true));
        assert_eq!(simulated_clean(in_family(&both, &workloads, "dl"), &p), Some(false));
        assert_eq!(simulated_clean(in_family(&both, &workloads, "other"), &p), None);
    }
}
