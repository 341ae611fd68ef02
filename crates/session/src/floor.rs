//! This machine's A/A noise floor (`schedlab noise`): a run of two identical arms, the
//! repetitions of each cell split between them (even repetitions arm A, odd arm B; the plan's
//! random order interleaves both with every other cell), measured per cell and figure as a
//! [`Floor`] and stored with the machine's facts. `compare` takes the newest floor measured
//! on the same hardware and kernel ([`newest_for`]).

use crate::Error;
use schedlab_analysis::Metric;
use schedlab_model::{CellRecord, Environment};
use schedlab_store::Store;
use schedlab_verdict::Floor;
use std::collections::BTreeMap;

/// The repetitions of a noise run per arm: `schedlab noise` runs twice as many.
pub const ARMS: u32 = 2;

/// The two arms' values of `metric` in the stored repetitions of one cell: even repetition
/// numbers are arm A, odd ones arm B.
pub fn arms(records: &[&CellRecord], metric: Metric) -> (Vec<f64>, Vec<f64>) {
    let mut reps: Vec<(u32, f64)> =
        records.iter().filter_map(|r| Some((r.rep, metric.value(r)?))).collect();
    reps.sort_by_key(|(rep, _)| *rep);
    let (a, b): (Vec<_>, Vec<_>) = reps.into_iter().partition(|(rep, _)| rep % ARMS == 0);
    (a.into_iter().map(|(_, v)| v).collect(), b.into_iter().map(|(_, v)| v).collect())
}

/// Every (cell key, figure) floor of a noise run's records, for every figure its cells have
/// on both arms.
pub fn measure(records: &[CellRecord]) -> BTreeMap<(String, String), Floor> {
    measure_runs(&[records])
}

/// The repetitions of each cell key, warm-ups left out.
fn by_key(records: &[CellRecord]) -> BTreeMap<&str, Vec<&CellRecord>> {
    let mut out: BTreeMap<&str, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.warmup) {
        out.entry(r.params.key.as_str()).or_default().push(r);
    }
    out
}

/// The floors of a noise made of several runs of one spec: each (cell, figure)'s arms from
/// the first run, and the drift between the runs ([`schedlab_verdict::run_drift`]) from
/// every run's repetitions of it.
pub fn measure_runs(runs: &[&[CellRecord]]) -> BTreeMap<(String, String), Floor> {
    let Some(first) = runs.first() else { return BTreeMap::new() };
    let others: Vec<BTreeMap<&str, Vec<&CellRecord>>> = runs.iter().map(|r| by_key(r)).collect();
    let mut out = BTreeMap::new();
    for (key, recs) in by_key(first) {
        for metric in Metric::every() {
            let (a, b) = arms(&recs, metric);
            let Some(mut f) = Floor::measure(&a, &b) else { continue };
            let per_run: Vec<Vec<f64>> = others
                .iter()
                .filter_map(|o| o.get(key))
                .map(|rs| rs.iter().filter_map(|r| metric.value(r)).collect())
                .collect();
            f.run_sd = schedlab_verdict::run_drift(&per_run).unwrap_or(0.0);
            out.insert((key.to_string(), metric.name().to_string()), f);
        }
    }
    out
}

/// Measures and stores the floors of the noise runs `run_ids` (one, or several runs of one
/// spec) under the first, and returns them.
pub fn store_floors(
    store: &Store,
    run_ids: &[i64],
    now_unix: f64,
) -> Result<BTreeMap<(String, String), Floor>, Error> {
    let subjects: Vec<crate::subject::Subject> = run_ids
        .iter()
        .map(|id| crate::subject::load(store, Some(&id.to_string())))
        .collect::<Result<_, _>>()?;
    let Some(first) = subjects.first() else { return Ok(BTreeMap::new()) };
    let cells: Vec<&[CellRecord]> = subjects.iter().map(|s| s.cells.as_slice()).collect();
    let floors = measure_runs(&cells);
    let machine = serde_json::to_string(&first.run.env).expect("an environment serialises");
    let rows: Vec<(String, String, String)> = floors
        .iter()
        .map(|((k, f), floor)| {
            (k.clone(), f.clone(), serde_json::to_string(floor).expect("a floor serialises"))
        })
        .collect();
    store.add_floors(first.run.id, now_unix, &machine, &rows)?;
    Ok(floors)
}

/// A stored noise run's floors.
#[derive(Debug, Clone)]
pub struct Floors {
    /// The noise run.
    pub run_id: i64,
    /// When its floors were measured (Unix seconds).
    pub created_unix: f64,
    /// The machine it ran on.
    pub environment: Environment,
    /// Per (cell key, figure name).
    pub floors: BTreeMap<(String, String), Floor>,
}

impl Floors {
    /// The floor of one cell and figure, if the noise run measured it.
    pub fn get(&self, key: &str, figure: &str) -> Option<&Floor> {
        self.floors.get(&(key.to_string(), figure.to_string()))
    }

    /// How long before `now_unix` the floor was measured, in words (`3 h`, `2 days`).
    pub fn age(&self, now_unix: f64) -> String {
        let s = (now_unix - self.created_unix).max(0.0);
        match s {
            s if s < 120.0 => format!("{s:.0} s"),
            s if s < 7_200.0 => format!("{:.0} min", s / 60.0),
            s if s < 172_800.0 => format!("{:.0} h", s / 3_600.0),
            s => format!("{:.0} days", s / 86_400.0),
        }
    }
}

/// The newest floors of `env`'s machine in the database at `db`, which is never created
/// (`env` and `show` mention them); None without a database or a floor.
pub fn newest_in(db: &std::path::Path, env: &Environment) -> Option<Floors> {
    let store = crate::db::open_existing(db).ok()?;
    newest_for(&store, env).ok().flatten()
}

/// The newest floors measured on a machine with `env`'s hardware and kernel; None when
/// there is none.
pub fn newest_for(store: &Store, env: &Environment) -> Result<Option<Floors>, Error> {
    for (run_id, created_unix, machine) in store.floor_runs()? {
        let Ok(environment) = serde_json::from_str::<Environment>(&machine) else { continue };
        if !environment.hardware_differences(env).is_empty() {
            continue;
        }
        let mut floors = BTreeMap::new();
        for (key, figure, json) in store.floors(run_id)? {
            if let Ok(f) = serde_json::from_str::<Floor>(&json) {
                floors.insert((key, figure), f);
            }
        }
        return Ok(Some(Floors { run_id, created_unix, environment, floors }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::{CellParams, Sample};

    fn rec(key: &str, rep: u32, wall: f64) -> CellRecord {
        CellRecord {
            params: CellParams { key: key.into(), ..Default::default() },
            rep,
            makespan_s: wall,
            samples: vec![Sample { wall_s: wall, pid: 1, ..Default::default() }],
            ..Default::default()
        }
    }

    #[test]
    fn even_repetitions_are_arm_a_and_odd_ones_arm_b() {
        let recs: Vec<CellRecord> = (0..6).map(|i| rec("k", i, 1.0 + i as f64)).collect();
        let refs: Vec<&CellRecord> = recs.iter().collect();
        let (a, b) = arms(&refs, Metric::WallPerProc);
        assert_eq!(a, [1.0, 3.0, 5.0]);
        assert_eq!(b, [2.0, 4.0, 6.0]);
    }

    #[test]
    fn a_floor_per_cell_and_figure_with_values_on_both_arms() {
        let mut recs: Vec<CellRecord> =
            (0..10).map(|i| rec("a", i, 1.0 + 0.01 * (i % 3) as f64)).collect();
        recs.extend((0..10).map(|i| rec("b", i, 2.0 + 0.02 * (i % 4) as f64)));
        let floors = measure(&recs);
        assert_eq!(floors[&("a".to_string(), "wall".to_string())].run_sd, 0.0, "one run");
        assert!(floors.contains_key(&("a".to_string(), "wall".to_string())), "{floors:?}");
        assert!(floors.contains_key(&("b".to_string(), "makespan".to_string())), "{floors:?}");
        // No benchmark figure was stated by these workers.
        assert!(!floors.keys().any(|(_, f)| f == "time_s"), "{floors:?}");
    }
}
