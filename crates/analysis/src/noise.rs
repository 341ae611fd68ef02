//! Whether other work on the machine may have disturbed a run: the evidence each cell
//! repetition keeps about the rest of the machine (/proc/stat, /proc/loadavg,
//! /proc/pressure/cpu), judged against named thresholds, plus the share of processes the
//! outlier flags single out (the report crate words the warning).

use crate::cells::STEAL_MIN_TICKS;
use crate::flags::cell_outliers;
use crate::metric::counts;
use crate::MODIFIED_Z_THRESHOLD;
use schedlab_model::CellRecord;
use std::collections::{BTreeMap, BTreeSet};

/// /proc/stat's ticks per second (USER_HZ, 100 on every Linux architecture schedlab runs on).
const TICKS_PER_S: f64 = 100.0;

/// The share of the CPUs' time that processes other than the cell's own workers and engine
/// may use before a cell counts as disturbed: an idle machine's kernel threads and daemons
/// use well under a twentieth, while one busy process on a machine of up to ten CPUs uses a
/// tenth or more.
pub const OTHER_SHARE: f64 = 0.10;

/// The share of the CPUs' time the hypervisor may steal before a cell counts as disturbed:
/// stolen time stretches wall times and trace intervals, and a twentieth of it is as much as
/// the differences many comparisons look for.
pub const STEAL_SHARE: f64 = 0.05;

/// The share of a cell's time during which some runnable task may wait for a CPU
/// (/proc/pressure/cpu "some") before a cell counts as disturbed; judged only where the
/// cell's processes are fewer than the CPUs, since otherwise its own workers wait for each
/// other. A fifth leaves room for the engine's and the kernel's short wake-ups.
pub const PRESSURE_SHARE: f64 = 0.20;

/// How far the 1-minute load average may exceed the run's largest cell's own processes,
/// per CPU, before the warning mentions it beside evidence from the cell itself (never
/// alone: it lags by a minute, so a run started after a large one inherits that one's load).
pub const LOAD_EXCESS_PER_CPU: f64 = 1.0;

/// The share of processes flagged as outliers that the warning mentions, beside evidence
/// from the machine (never alone: a scheduler can make its own processes differ): at the
/// usual |z| > 3.5, a tenth is many times what processes that ran alike produce.
pub const OUTLIER_SHARE: f64 = 0.10;

/// One cell's evidence, pooled over its counted repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CellNoise {
    /// Cell key.
    pub key: String,
    /// Share of the CPUs' time other processes used (busy time less the workers' and the
    /// engine's own CPU time), 0..1; None where the repetitions cover too few ticks.
    pub other_share: Option<f64>,
    /// Share of the CPUs' time the hypervisor stole, 0..1; None as for `other_share`.
    pub steal_share: Option<f64>,
    /// Share of the cell's time some runnable task waited for a CPU, 0..1; None without
    /// PSI, or where the cell's processes fill the CPUs.
    pub pressure_share: Option<f64>,
    /// The highest 1-minute load average at the end of a repetition; None when not kept.
    pub load1: Option<f64>,
}

/// What [`noise`] found over a run: how many cells each kind of evidence marks, and its
/// largest value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Noise {
    /// Online CPUs of the machine that ran it.
    pub cpus: usize,
    /// Cells with evidence kept.
    pub cells: usize,
    /// Cells where other processes used at least [`OTHER_SHARE`], and the largest share.
    pub other: (usize, f64),
    /// Cells the hypervisor stole at least [`STEAL_SHARE`] from, and the largest share.
    pub steal: (usize, f64),
    /// Cells under CPU pressure of at least [`PRESSURE_SHARE`], and the largest share.
    pub pressure: (usize, f64),
    /// Cells whose load average passed [`LOAD_EXCESS_PER_CPU`], and the highest load.
    pub load: (usize, f64),
    /// Share of the measured processes flagged as outliers (any value), 0..1.
    pub outliers: f64,
}

/// Each cell's evidence, in cell order, from the counted repetitions that kept the machine's
/// load: those stored before it was kept (and simulated ones) are not judged, so a run
/// shown again reads as it did.
pub fn cell_noise(records: &[CellRecord], cpus: usize) -> Vec<CellNoise> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| counts(r) && r.load.is_some()) {
        by_cell.entry(r.params.cell_id).or_default().push(r);
    }
    by_cell
        .into_values()
        .map(|reps| {
            let ticks: u64 = reps.iter().map(|r| r.stat.cpu_ticks()).sum();
            let judged = ticks >= STEAL_MIN_TICKS;
            let of_cpus = |x: f64| judged.then(|| (x / (ticks as f64 / TICKS_PER_S)).max(0.0));
            let busy: u64 = reps
                .iter()
                .map(|r| r.stat.user + r.stat.nice + r.stat.system + r.stat.irq + r.stat.softirq)
                .sum();
            let own: f64 = reps
                .iter()
                .map(|r| {
                    r.engine_user_s
                        + r.engine_sys_s
                        + r.samples.iter().map(|s| s.window_cpu_s).sum::<f64>()
                })
                .sum();
            let stolen: u64 = reps.iter().map(|r| r.stat.steal).sum();
            let fits = (reps[0].params.groups.iter().map(|g| g.processes).sum::<u32>() as usize)
                .max(reps[0].params.processes as usize)
                < cpus;
            let waited: Option<f64> = fits
                .then(|| {
                    reps.iter()
                        .map(|r| Some(r.load?.cpu_pressure_us? as f64 * 1e-6))
                        .sum::<Option<f64>>()
                })
                .flatten();
            let wall: f64 = reps.iter().map(|r| r.makespan_s).sum();
            CellNoise {
                key: reps[0].params.key.clone(),
                other_share: of_cpus(busy as f64 / TICKS_PER_S - own),
                steal_share: of_cpus(stolen as f64 / TICKS_PER_S),
                pressure_share: waited.filter(|_| wall > 0.0).map(|w| (w / wall).min(1.0)),
                load1: reps.iter().filter_map(|r| r.load.map(|l| l.load1)).reduce(f64::max),
            }
        })
        .collect()
}

/// Judges a run's evidence: per kind, the cells past its threshold and the largest value,
/// and the outliers' share of its measured processes.
pub fn noise(records: &[CellRecord], cpus: usize) -> Noise {
    let cells = cell_noise(records, cpus);
    let own_max = records.iter().map(|r| r.params.processes as f64).fold(0.0, f64::max);
    let tally = |value: &dyn Fn(&CellNoise) -> Option<f64>, at: f64| {
        let values: Vec<f64> = cells.iter().filter_map(value).collect();
        (values.iter().filter(|v| **v >= at).count(), values.iter().copied().fold(0.0, f64::max))
    };
    let flagged = cell_outliers(records, MODIFIED_Z_THRESHOLD);
    let processes: usize = flagged.iter().map(|c| c.processes).sum();
    let singled_out: usize = flagged
        .iter()
        .map(|c| c.flagged.iter().map(|f| (f.rep, f.index)).collect::<BTreeSet<_>>().len())
        .sum();
    Noise {
        cpus,
        cells: cells.len(),
        other: tally(&|c| c.other_share, OTHER_SHARE),
        steal: tally(&|c| c.steal_share, STEAL_SHARE),
        pressure: tally(&|c| c.pressure_share, PRESSURE_SHARE),
        load: tally(&|c| c.load1, own_max + LOAD_EXCESS_PER_CPU * cpus as f64),
        outliers: if processes == 0 { 0.0 } else { singled_out as f64 / processes as f64 },
    }
}

impl Noise {
    /// Whether the cells' own counters show evidence past its threshold: other processes'
    /// share, steal or pressure. The load average and the outliers only add to it (the
    /// load lags; a scheduler can make its own processes differ).
    pub fn is_noisy(&self) -> bool {
        self.other.0 + self.steal.0 + self.pressure.0 > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::test_record;
    use schedlab_model::{CellParams, MachineLoad, Sample, StatDelta};

    /// A repetition of cell `id` on 2 CPUs over 1 s (200 ticks): `busy` ticks busy, its two
    /// workers' CPU seconds, the load average and the pressure at its end.
    fn rep(id: u32, busy: u64, own: [f64; 2], steal: u64, load: MachineLoad) -> CellRecord {
        let params = CellParams {
            cell_id: id,
            key: format!("cpu/other/n2/{id}"),
            processes: 2,
            ..Default::default()
        };
        let samples = own
            .iter()
            .enumerate()
            .map(|(i, &cpu)| Sample {
                index: i as u32,
                wall_s: 1.0,
                user_s: cpu,
                window_cpu_s: cpu,
                ..Default::default()
            })
            .collect();
        CellRecord {
            stat: StatDelta { user: busy, idle: 200 - busy - steal, steal, ..Default::default() },
            load: Some(load),
            ..test_record(params, 0, 1.0, samples)
        }
    }

    fn quiet(id: u32) -> CellRecord {
        rep(id, 101, [0.5, 0.5], 0, MachineLoad { load1: 2.1, cpu_pressure_us: Some(10_000) })
    }

    #[test]
    fn a_quiet_run_shows_no_evidence() {
        let recs: Vec<CellRecord> = (0..4).map(quiet).collect();
        let n = noise(&recs, 2);
        assert_eq!((n.cells, n.other.0, n.steal.0, n.pressure.0, n.load.0), (4, 0, 0, 0, 0));
        assert!(!n.is_noisy(), "{n:?}");
        assert!(!noise(&recs, 4).is_noisy(), "pressure judged where the cell fits");
    }

    #[test]
    fn a_noisy_run_is_judged_on_each_kind_of_evidence_with_its_largest_value() {
        let busy = MachineLoad { load1: 30.0, cpu_pressure_us: Some(600_000) };
        let mut recs: Vec<CellRecord> = (0..4).map(quiet).collect();
        // Other processes took 96 of 200 ticks; 20 more were stolen; workers are outliers.
        recs.push(rep(4, 196, [0.5, 0.5], 0, busy));
        recs.push(rep(5, 150, [0.5, 0.5], 20, busy));
        for r in &mut recs[4..] {
            let params = CellParams { processes: 8, ..r.params.clone() };
            r.params = params;
            r.samples = (0..8)
                .map(|i| Sample {
                    index: i,
                    wall_s: if i < 2 { 9.0 } else { 1.0 + i as f64 * 0.01 },
                    window_cpu_s: 0.125,
                    ..Default::default()
                })
                .collect();
        }
        let n = noise(&recs, 16);
        assert!(n.is_noisy());
        assert_eq!((n.cells, n.other.0, n.steal.0, n.pressure.0, n.load.0), (6, 2, 1, 2, 2));
        assert!((n.other.1 - 0.48).abs() < 1e-9, "96 of 200 ticks: {n:?}");
        assert!((n.steal.1 - 0.10).abs() < 1e-9, "20 of 200 ticks: {n:?}");
        assert!((n.pressure.1 - 0.6).abs() < 1e-9, "0.6 s of 1 s: {n:?}");
        assert_eq!(n.load.1, 30.0);
        assert!((n.outliers - 4.0 / 24.0).abs() < 1e-9, "2 of 8 in each noisy cell: {n:?}");
        // On 8 CPUs, 8-process cells fill them: their pressure is their own.
        assert_eq!(noise(&recs, 8).pressure.0, 0);
    }

    #[test]
    fn a_lagging_load_average_alone_is_not_evidence() {
        let after_a_large_run = MachineLoad { load1: 120.0, cpu_pressure_us: Some(0) };
        let n = noise(&[rep(0, 101, [0.5, 0.5], 0, after_a_large_run)], 2);
        assert_eq!(n.load, (1, 120.0));
        assert!(!n.is_noisy(), "{n:?}");
    }

    #[test]
    fn repetitions_stored_before_the_load_was_kept_are_not_judged() {
        let mut old = rep(0, 170, [0.5, 0.5], 20, MachineLoad::default());
        assert!(noise(&[old.clone()], 2).is_noisy(), "judged with its load kept");
        old.load = None;
        assert_eq!(noise(&[old.clone()], 2).cells, 0);
        assert!(!noise(&[old], 2).is_noisy());
    }

    #[test]
    fn outliers_alone_and_too_few_ticks_say_nothing() {
        let mut short = rep(0, 20, [0.0, 0.0], 5, MachineLoad::default());
        short.stat.idle = 0; // 25 ticks: too few to judge
        let n = noise(&[short], 2);
        assert_eq!((n.cells, n.other, n.steal), (1, (0, 0.0), (0, 0.0)));
        assert!(!n.is_noisy());
        let outliers = Noise { cpus: 2, cells: 1, outliers: 0.5, ..Default::default() };
        assert!(!outliers.is_noisy());
    }
}
