//! Each worker's own CPU demand, taken from a measured run (`schedlab simulate --demand-from`).
//!
//! Without it the model gives every worker of a group the same demand (its iterations x
//! ns per iteration), while measured workers' demands spread around it, and under RR only
//! those above the quantum rotate. Here each simulated worker (a plan cell, a repetition,
//! a group and a place in that group) takes the work CPU (`user + sys - setup`, see
//! [`Sample::work_cpu_s`]) of the same worker in the same repetition of the measured run,
//! so the simulated demands are the measured distribution, repetition by repetition.
//! Only CPU work (`pi`, `hash`: one burst each) takes a demand; a worker that also blocks
//! (copy, mixed) spends part of its CPU in the writes, which a single figure cannot split.

use std::collections::{BTreeMap, HashMap};

use schedlab_model::{CellRecord, CellStatus, Sample};
use schedlab_plan::{Cell, Plan, Workload};
use schedlab_policy::Duration;

/// A measured run, as read from the store.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// Its id.
    pub id: i64,
    /// Whether it was itself simulated (mode `sim`).
    pub simulated: bool,
    /// Every stored cell repetition of it, warm-ups included.
    pub records: &'a [CellRecord],
}

/// Every simulated worker's CPU demand, per plan cell and repetition, in task order.
#[derive(Debug, Clone, PartialEq)]
pub struct Demands {
    run: i64,
    // Ordered, so that sums over it come out the same every time.
    by_step: BTreeMap<(u32, u32, bool), Vec<Duration>>,
}

impl Demands {
    /// The measured run they came from.
    pub fn run(&self) -> i64 {
        self.run
    }

    /// The demands of cell `cell`'s repetition `rep` (a warm-up if `warmup`), one per worker
    /// in the order the model makes tasks (groups in order, then place in the group).
    pub fn get(&self, cell: u32, rep: u32, warmup: bool) -> Option<&[Duration]> {
        self.by_step.get(&(cell, rep, warmup)).map(Vec::as_slice)
    }

    /// The pi workers' CPU per iteration over all their demands (the single rate the model
    /// would otherwise use), if `plan` has pi workers.
    pub fn mean_ns_per_iteration(&self, plan: &Plan) -> Option<f64> {
        let (mut ns, mut iterations) = (0.0, 0.0);
        for (&(cell, _, _), demands) in &self.by_step {
            let mut at = 0;
            for g in plan.cells.iter().filter(|c| c.index == cell).flat_map(|c| &c.groups) {
                let n = g.processes as usize;
                if let (Workload::Pi { iterations: each }, Some(mine)) =
                    (&g.workload, demands.get(at..at + n))
                {
                    ns += mine.iter().sum::<Duration>() as f64;
                    iterations += *each as f64 * n as f64;
                }
                at += n;
            }
        }
        (iterations > 0.0).then(|| ns / iterations)
    }
}

/// Why a measured run cannot give the demands a plan needs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DemandError {
    /// Some of a simulated record's workers kept their own CPU demand and some did not.
    #[error("{own} of its {workers} simulated workers kept their own CPU demand, the others none")]
    Mixed {
        /// Workers with their own demand.
        own: usize,
        /// Workers in all.
        workers: usize,
    },
    /// The run is a simulation.
    #[error("run {run} is simulated; --demand-from takes a measured run")]
    Simulated {
        /// The run.
        run: i64,
    },
    /// A group whose work is not one CPU burst.
    #[error("cell {key}: {}", not_cpu_work(group, kind))]
    NotCpuWork {
        /// The cell's key.
        key: String,
        /// The group.
        group: String,
        /// Its workload kind.
        kind: String,
    },
    /// The run has no record of the cell at all.
    #[error("run {run} has no cell {key} (matched by key: measure the same spec)")]
    MissingCell {
        /// The run.
        run: i64,
        /// The cell's key.
        key: String,
    },
    /// The run has the cell but not this repetition.
    #[error("run {run} has no {what} {rep} of cell {key} (give --repetitions to simulate fewer)", what = what(*warmup), rep = rep + 1)]
    MissingRep {
        /// The run.
        run: i64,
        /// The cell's key.
        key: String,
        /// The repetition (0-based).
        rep: u32,
        /// A warm-up repetition.
        warmup: bool,
    },
    /// The repetition did not run to its end as planned.
    #[error("run {run}'s {what} {rep} of cell {key} {status}: only repetitions that ran to their end give demands", what = what(*warmup), rep = rep + 1)]
    FailedRep {
        /// The run.
        run: i64,
        /// The cell's key.
        key: String,
        /// The repetition (0-based).
        rep: u32,
        /// A warm-up repetition.
        warmup: bool,
        /// What went wrong (its status and message).
        status: String,
    },
    /// A worker of the plan's cell has no sample in the repetition.
    #[error("run {run}'s {what} {rep} of cell {key} has no worker {place} of group `{group}`", what = what(*warmup), rep = rep + 1)]
    MissingWorker {
        /// The run.
        run: i64,
        /// The cell's key.
        key: String,
        /// The repetition (0-based).
        rep: u32,
        /// A warm-up repetition.
        warmup: bool,
        /// The group.
        group: String,
        /// The worker's place in its group (0-based).
        place: u32,
    },
    /// The measured worker did a different amount of work than the plan's.
    #[error(
        "cell {key}: run {run}'s workers of group `{group}` did {measured} work units each, this plan {planned} (a different --scale?)"
    )]
    DifferentWork {
        /// The run.
        run: i64,
        /// The cell's key.
        key: String,
        /// The group.
        group: String,
        /// Work units of the measured worker.
        measured: f64,
        /// Work units the plan gives the worker.
        planned: u64,
    },
}

fn what(warmup: bool) -> &'static str {
    if warmup {
        "warm-up"
    } else {
        "repetition"
    }
}

/// Why a group's workers cannot take a measured demand.
pub(crate) fn not_cpu_work(group: &str, kind: &str) -> String {
    format!("group `{group}` runs a {kind} workload; a per-worker CPU demand applies only to CPU work (pi, hash)")
}

/// Whether a workload is one CPU burst, so one measured figure is its whole demand.
pub fn is_cpu_work(w: &Workload) -> bool {
    matches!(w, Workload::Pi { .. } | Workload::Hash { .. })
}

/// A worker's measured work CPU as a demand: nanoseconds, at least 1.
fn demand_ns(s: &Sample) -> Duration {
    ((s.work_cpu_s() * 1e9).round() as Duration).max(1)
}

/// The demand of every worker of every repetition (warm-ups included) of `plan`, from
/// `run`; the first cell, repetition or worker the run cannot give is the error.
pub fn from_measured(plan: &Plan, run: Measured) -> Result<Demands, DemandError> {
    if run.simulated {
        return Err(DemandError::Simulated { run: run.id });
    }
    // The store keeps one record per cell repetition.
    let by_key: HashMap<(&str, u32, bool), &CellRecord> =
        run.records.iter().map(|r| ((r.params.key.as_str(), r.rep, r.warmup), r)).collect();
    let mut by_step = BTreeMap::new();
    for cell in &plan.cells {
        if let Some(g) = cell.groups.iter().find(|g| !is_cpu_work(&g.workload)) {
            return Err(DemandError::NotCpuWork {
                key: cell.key.clone(),
                group: g.name.clone(),
                kind: g.workload.kind().to_string(),
            });
        }
        if !run.records.iter().any(|r| r.params.key == cell.key) {
            return Err(DemandError::MissingCell { run: run.id, key: cell.key.clone() });
        }
        let reps =
            (0..plan.warmup).map(|r| (r, true)).chain((0..plan.repetitions).map(|r| (r, false)));
        for (rep, warmup) in reps {
            let Some(rec) = by_key.get(&(cell.key.as_str(), rep, warmup)) else {
                return Err(DemandError::MissingRep {
                    run: run.id,
                    key: cell.key.clone(),
                    rep,
                    warmup,
                });
            };
            by_step.insert((cell.index, rep, warmup), worker_demands(cell, rec, run.id)?);
        }
    }
    Ok(Demands { run: run.id, by_step })
}

/// One repetition's demands in task order, matching each of the cell's workers by group and
/// place in the group (samples of a group in index order).
fn worker_demands(cell: &Cell, rec: &CellRecord, run: i64) -> Result<Vec<Duration>, DemandError> {
    let (key, rep, warmup) = (cell.key.clone(), rec.rep, rec.warmup);
    let failed =
        |status: String| DemandError::FailedRep { run, key: key.clone(), rep, warmup, status };
    if rec.status != CellStatus::Ok {
        let why = rec.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
        return Err(failed(format!("{}{why}", rec.status.as_str())));
    }
    let mut out = Vec::with_capacity(cell.processes() as usize);
    for g in &cell.groups {
        let mut mine: Vec<&Sample> = rec.samples.iter().filter(|s| s.group == g.name).collect();
        mine.sort_by_key(|s| s.index);
        for place in 0..g.processes {
            let Some(s) = mine.get(place as usize) else {
                return Err(DemandError::MissingWorker {
                    run,
                    key: key.clone(),
                    rep,
                    warmup,
                    group: g.name.clone(),
                    place,
                });
            };
            if s.timed_out || s.exit_code != Some(0) {
                return Err(failed(format!(
                    "has worker {} of group `{}` ending {}",
                    place,
                    g.name,
                    ending(s)
                )));
            }
            let planned = g.workload.work_units();
            if s.work_units != planned as f64 {
                return Err(DemandError::DifferentWork {
                    run,
                    key: key.clone(),
                    group: g.name.clone(),
                    measured: s.work_units,
                    planned,
                });
            }
            out.push(demand_ns(s));
        }
    }
    Ok(out)
}

fn ending(s: &Sample) -> String {
    match (s.timed_out, s.exit_code, s.signal) {
        (true, _, _) => "timed out".into(),
        (_, Some(c), _) => format!("with exit status {c}"),
        (_, None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "without an exit status".into(),
    }
}

/// The demands a simulated record was made with (each sample's, in task order), so the cell
/// can be simulated again exactly; None when it used the model's rates.
pub fn stored(rec: &CellRecord) -> Result<Option<Vec<Duration>>, DemandError> {
    let own: Vec<Option<Duration>> =
        rec.samples.iter().map(|s| s.extra.sim.as_ref().and_then(|o| o.demand_ns)).collect();
    match own.iter().filter(|d| d.is_some()).count() {
        0 => Ok(None),
        n if n == own.len() => Ok(Some(own.into_iter().flatten().collect())),
        n => Err(DemandError::Mixed { own: n, workers: own.len() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use schedlab_plan::{Class, Group, Order, Policy};

    fn group(name: &str, iterations: u64, processes: u32) -> Group {
        Group {
            policy_name: "rr".into(),
            policy: Policy::rt(Class::Rr, 10),
            ..Group::new(name, "cpu", Workload::Pi { iterations }, processes)
        }
    }

    fn plan(cells: Vec<Cell>, repetitions: u32) -> Plan {
        Plan {
            name: "d".into(),
            description: None,
            source_path: "d.toml".into(),
            repetitions,
            adaptive: None,
            warmup: 0,
            order: Order::Sequential,
            seed: 1,
            timeout: std::time::Duration::from_secs(60),
            dir: None,
            scale: 1.0,
            device: None,
            cpu_dma_latency: Default::default(),
            cells,
            trace: Default::default(),
            knobs: Default::default(),
            allow_rt_unthrottled: false,
        }
    }

    /// Two cells: `a` with one group of 2 workers, `b` with groups `x` (1) and `y` (2).
    fn two_cells(repetitions: u32) -> Plan {
        let a = Cell {
            index: 0,
            key: "a".into(),
            groups: vec![group("main", 100, 2)],
            io: None,
            knobs: Default::default(),
            cpu_scheduler: None,
        };
        let b = Cell {
            index: 1,
            key: "b".into(),
            groups: vec![group("x", 100, 1), group("y", 200, 2)],
            io: None,
            knobs: Default::default(),
            cpu_scheduler: None,
        };
        plan(vec![a, b], repetitions)
    }

    fn sample(index: u32, group: &str, units: f64, work_ms: f64) -> Sample {
        Sample {
            index,
            group: group.into(),
            exit_code: Some(0),
            // 2 ms of setup, of which 0.5 ms system time, is not the work's.
            user_s: work_ms / 1e3 + 0.0015,
            sys_s: 0.0005,
            setup_user_s: 0.0015,
            setup_sys_s: 0.0005,
            work_units: units,
            ..Default::default()
        }
    }

    fn record(plan: &Plan, cell: usize, rep: u32, samples: Vec<Sample>) -> CellRecord {
        let mut r = crate::record::failed(&plan.cells[cell], String::new());
        r.status = CellStatus::Ok;
        r.message = None;
        r.rep = rep;
        r.samples = samples;
        r
    }

    /// The measured records of [`two_cells`]: demand (ms) = 10 x rep + a per-worker figure.
    /// Cell b's samples are stored out of order and interleave their groups.
    fn measured(plan: &Plan) -> Vec<CellRecord> {
        (0..plan.repetitions)
            .flat_map(|rep| {
                let ms = |x: f64| 10.0 * rep as f64 + x;
                [
                    record(
                        plan,
                        0,
                        rep,
                        vec![sample(0, "main", 100.0, ms(1.0)), sample(1, "main", 100.0, ms(2.0))],
                    ),
                    record(
                        plan,
                        1,
                        rep,
                        vec![
                            sample(2, "y", 200.0, ms(5.0)),
                            sample(0, "y", 200.0, ms(4.0)),
                            sample(1, "x", 100.0, ms(3.0)),
                        ],
                    ),
                ]
            })
            .collect()
    }

    fn run(records: &[CellRecord]) -> Measured<'_> {
        Measured { id: 4, simulated: false, records }
    }

    #[test]
    fn each_worker_takes_its_group_and_places_work_cpu_of_the_same_repetition() {
        let p = two_cells(2);
        let recs = measured(&p);
        let d = from_measured(&p, run(&recs)).unwrap();
        assert_eq!(d.run(), 4);
        assert_eq!(d.get(0, 0, false), Some(&[1_000_000, 2_000_000][..]));
        // Groups in the cell's order (x before y), each group's workers by index.
        assert_eq!(d.get(1, 0, false), Some(&[3_000_000, 4_000_000, 5_000_000][..]));
        assert_eq!(d.get(1, 1, false), Some(&[13_000_000, 14_000_000, 15_000_000][..]));
        assert_eq!(d.get(1, 2, false), None);
        assert_eq!(d.get(0, 0, true), None);
        // (1 + 2 + 11 + 12 + 3 + 13) ms over 6 x 100 and (4 + 5 + 14 + 15) ms over 4 x 200 iterations.
        assert_eq!(d.mean_ns_per_iteration(&p), Some(80e6 / 1400.0));
    }

    #[test]
    fn each_simulated_worker_runs_its_own_demand_and_keeps_it() {
        let p = two_cells(2);
        let recs = measured(&p);
        let d = from_measured(&p, run(&recs)).unwrap();
        // A rate that would make every pi worker 1 s long if the demands were ignored.
        let params = Params { demand_from_run: Some(4), ..Params::new(1, 1e7, 0, 0) };
        let mut out = Vec::new();
        crate::simulate_plan_with(&p, &params, Some(&d), None, |r| -> Result<(), ()> {
            out.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(out.len(), 4);
        for r in &out {
            let want = d.get(r.params.cell_id, r.rep, false).unwrap();
            let cpu: Vec<Duration> =
                r.samples.iter().map(|s| (s.window_cpu_s * 1e9).round() as Duration).collect();
            assert_eq!(cpu, want, "{} rep {}", r.params.key, r.rep);
            assert_eq!(stored(r), Ok(Some(want.to_vec())));
            // One CPU, no other work: the makespan is the demands and the costs between them.
            let sum: Duration = want.iter().sum();
            assert!(
                r.makespan_s >= sum as f64 / 1e9 && r.makespan_s < sum as f64 / 1e9 + 1e-3,
                "{}",
                r.makespan_s
            );
        }
        // Without demands the records keep none.
        let plain = crate::simulate_cell(&p.cells[0], &params, 1 << 40, false).record;
        assert_eq!(stored(&plain), Ok(None));
    }

    #[test]
    fn a_run_without_a_cell_of_the_plan_is_refused_naming_the_cell() {
        let p = two_cells(1);
        let recs: Vec<CellRecord> =
            measured(&p).into_iter().filter(|r| r.params.key != "b").collect();
        assert_eq!(
            from_measured(&p, run(&recs)),
            Err(DemandError::MissingCell { run: 4, key: "b".into() })
        );
    }

    #[test]
    fn more_repetitions_than_measured_are_refused_naming_the_first_missing_one() {
        let recs = measured(&two_cells(2));
        let e = from_measured(&two_cells(3), run(&recs)).unwrap_err();
        assert_eq!(e, DemandError::MissingRep { run: 4, key: "a".into(), rep: 2, warmup: false });
        assert!(e.to_string().contains("no repetition 3 of cell a"), "{e}");
        let mut warm = two_cells(2);
        warm.warmup = 1;
        let e = from_measured(&warm, run(&recs)).unwrap_err();
        assert_eq!(e, DemandError::MissingRep { run: 4, key: "a".into(), rep: 0, warmup: true });
    }

    #[test]
    fn a_simulated_run_is_refused() {
        let p = two_cells(1);
        let recs = measured(&p);
        let sim = Measured { simulated: true, ..run(&recs) };
        assert_eq!(from_measured(&p, sim), Err(DemandError::Simulated { run: 4 }));
    }

    #[test]
    fn a_failed_repetition_or_worker_is_refused() {
        let p = two_cells(2);
        let mut recs = measured(&p);
        recs[2].status = CellStatus::TimedOut;
        recs[2].message = Some("watchdog".into());
        let e = from_measured(&p, run(&recs)).unwrap_err();
        assert!(matches!(&e, DemandError::FailedRep { key, rep: 1, .. } if key == "a"), "{e:?}");
        assert!(e.to_string().contains("repetition 2 of cell a timed_out (watchdog)"), "{e}");
        // A worker that did not end well fails its repetition even when the cell says ok.
        let mut recs = measured(&p);
        recs[1].samples[2].exit_code = Some(3);
        let e = from_measured(&p, run(&recs)).unwrap_err();
        assert!(e.to_string().contains("worker 0 of group `x` ending with exit status 3"), "{e}");
    }

    #[test]
    fn a_missing_worker_or_different_work_is_refused_naming_it() {
        let p = two_cells(1);
        let mut recs = measured(&p);
        recs[1].samples.retain(|s| s.index != 2);
        let e = from_measured(&p, run(&recs)).unwrap_err();
        assert_eq!(
            e,
            DemandError::MissingWorker {
                run: 4,
                key: "b".into(),
                rep: 0,
                warmup: false,
                group: "y".into(),
                place: 1
            }
        );
        let mut recs = measured(&p);
        recs[0].samples[1].work_units = 25.0;
        let e = from_measured(&p, run(&recs)).unwrap_err();
        assert!(
            matches!(e, DemandError::DifferentWork { measured: 25.0, planned: 100, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn only_cpu_work_takes_a_demand() {
        let mut p = two_cells(1);
        p.cells[1].groups[1].workload = Workload::Mixed { iterations: 200, write_every: 100 };
        let recs = measured(&p);
        let e = from_measured(&p, run(&recs)).unwrap_err();
        assert_eq!(
            e,
            DemandError::NotCpuWork { key: "b".into(), group: "y".into(), kind: "mixed".into() }
        );
    }

    #[test]
    fn a_zero_work_cpu_is_still_a_demand_of_one_nanosecond() {
        let mut s = sample(0, "main", 1.0, 0.0);
        s.user_s = 0.0;
        assert_eq!(demand_ns(&s), 1);
    }
}
