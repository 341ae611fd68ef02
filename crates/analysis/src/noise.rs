//! Whether other work on the machine may have disturbed a run: the evidence each cell
//! repetition keeps about the rest of the machine (/proc/stat, /proc/loadavg,
//! /proc/pressure/cpu), judged against named thresholds, cells too short to judge alone
//! judged pooled, plus the share of processes the outlier flags single out; and a look at
//! the machine before the first cell ([`busy`]). The report crate words the warnings.

use crate::cells::STEAL_MIN_TICKS;
use crate::flags::cell_outliers;
use crate::metric::counts;
use crate::MODIFIED_Z_THRESHOLD;
use schedlab_model::{CellRecord, MachineLook};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

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

/// The share of the CPUs' time other processes may use during the look before the first
/// cell before the run warns at once: the same tenth as [`OTHER_SHARE`] during a cell, so a
/// busy machine is named before it spoils cells rather than after.
pub const BUSY_SHARE: f64 = OTHER_SHARE;

/// The least time the look before the first cell covers. The look begins with the
/// preflight and ends just before the first release, so a cell of 1,000 workers gives it a
/// second of spawning for nothing; a run whose first cell is small reaches its release after
/// some 30 ms, too short to judge: /proc counts in ticks of 10 ms (USER_HZ), so 30 ms on 2
/// CPUs is 6 ticks and one tick is a sixth of them. The look then waits until this much has
/// passed: 100 ms covers 10 ticks of each CPU, so the machine's time reads to 5% of 2 CPUs
/// (judged with that tick's margin, [`Busy::is_busy`]) and a busy loop's share of a CPU to
/// 10%. The look's first version waited a second, its second 250 ms (90% of a one-cell
/// run's fixed cost, issue 47).
pub const LOOK_LEAST: Duration = Duration::from_millis(100);

/// The least share of one CPU a process must use during the look to be named in the
/// warning: a twentieth leaves out the daemons and kernel threads of an idle machine.
pub const NAMED_SHARE: f64 = 0.05;

/// The most processes the busy-machine warning names (the rest are counted).
pub const NAMED_MAX: usize = 5;

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

/// Cells too short to judge alone (their repetitions cover fewer than [`STEAL_MIN_TICKS`]),
/// judged pooled over the run with the same thresholds: one tick of a short cell would read
/// as a large share, but a run of short cells covers enough of them together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShortCells {
    /// How many cells were too short to judge alone.
    pub cells: usize,
    /// Share of their pooled CPU time other processes used, 0..1; None while the pool
    /// itself covers too few ticks.
    pub other: Option<f64>,
    /// Share of their pooled CPU time the hypervisor stole, 0..1; None as for `other`.
    pub steal: Option<f64>,
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
    /// The cells too short to judge alone, pooled.
    pub short: ShortCells,
    /// Cells whose load average passed [`LOAD_EXCESS_PER_CPU`], and the highest load.
    pub load: (usize, f64),
    /// Share of the measured processes flagged as outliers (any value), 0..1.
    pub outliers: f64,
}

/// The counted repetitions that kept the machine's load, by cell in cell order: those
/// stored before it was kept (and simulated ones) are not judged, so a run shown again
/// reads as it did.
fn judged_cells(records: &[CellRecord]) -> Vec<Vec<&CellRecord>> {
    let mut by_cell: BTreeMap<u32, Vec<&CellRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| counts(r) && r.load.is_some()) {
        by_cell.entry(r.params.cell_id).or_default().push(r);
    }
    by_cell.into_values().collect()
}

/// The CPUs' time some repetitions cover and what others and the hypervisor took of it.
#[derive(Debug, Clone, Copy, Default)]
struct CpuTime {
    /// /proc/stat ticks, every state.
    ticks: u64,
    /// CPU seconds of other processes: busy time less the workers' and the engine's own.
    other_s: f64,
    /// CPU seconds the hypervisor stole.
    stolen_s: f64,
}

impl CpuTime {
    fn of(reps: &[&CellRecord]) -> CpuTime {
        let busy: u64 = reps.iter().map(|r| r.stat.busy_ticks()).sum();
        let own: f64 = reps
            .iter()
            .map(|r| {
                r.engine_user_s
                    + r.engine_sys_s
                    + r.samples.iter().map(|s| s.window_cpu_s).sum::<f64>()
            })
            .sum();
        CpuTime {
            ticks: reps.iter().map(|r| r.stat.cpu_ticks()).sum(),
            other_s: busy as f64 / TICKS_PER_S - own,
            stolen_s: reps.iter().map(|r| r.stat.steal).sum::<u64>() as f64 / TICKS_PER_S,
        }
    }

    fn judged(&self) -> bool {
        self.ticks >= STEAL_MIN_TICKS
    }

    /// `seconds` as a share of the CPUs' time, 0..1; None where it covers too few ticks.
    fn share(&self, seconds: f64) -> Option<f64> {
        self.judged().then(|| (seconds / (self.ticks as f64 / TICKS_PER_S)).max(0.0))
    }
}

/// Each cell's evidence, in cell order, from the counted repetitions that kept the machine's
/// load (see [`noise`]).
pub fn cell_noise(records: &[CellRecord], cpus: usize) -> Vec<CellNoise> {
    judged_cells(records)
        .into_iter()
        .map(|reps| {
            let time = CpuTime::of(&reps);
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
                other_share: time.share(time.other_s),
                steal_share: time.share(time.stolen_s),
                pressure_share: waited.filter(|_| wall > 0.0).map(|w| (w / wall).min(1.0)),
                load1: reps.iter().filter_map(|r| r.load.map(|l| l.load1)).reduce(f64::max),
            }
        })
        .collect()
}

/// The cells too short to judge alone, their CPU time pooled and judged as one.
fn short_cells(records: &[CellRecord]) -> ShortCells {
    let short: Vec<CpuTime> = judged_cells(records)
        .iter()
        .map(|reps| CpuTime::of(reps))
        .filter(|t| !t.judged())
        .collect();
    let pool = short.iter().fold(CpuTime::default(), |p, t| CpuTime {
        ticks: p.ticks + t.ticks,
        other_s: p.other_s + t.other_s,
        stolen_s: p.stolen_s + t.stolen_s,
    });
    ShortCells {
        cells: short.len(),
        other: pool.share(pool.other_s),
        steal: pool.share(pool.stolen_s),
    }
}

/// Judges a run's evidence: per kind, the cells past its threshold and the largest value,
/// the short cells pooled, and the outliers' share of its measured processes. Repetitions
/// stored before the machine's load was kept (and simulated ones) are not judged, so a run
/// shown again reads as it did.
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
        short: short_cells(records),
        load: tally(&|c| c.load1, own_max + LOAD_EXCESS_PER_CPU * cpus as f64),
        outliers: if processes == 0 { 0.0 } else { singled_out as f64 / processes as f64 },
    }
}

impl Noise {
    /// Whether the cells' own counters show evidence past its threshold: other processes'
    /// share, steal or pressure, in a cell or in the short cells pooled. The load average
    /// and the outliers only add to it (the load lags; a scheduler can make its own
    /// processes differ).
    pub fn is_noisy(&self) -> bool {
        self.other.0 + self.steal.0 + self.pressure.0 > 0 || self.short.is_noisy()
    }
}

impl ShortCells {
    /// Whether the pool shows other processes' share or steal past its threshold.
    pub fn is_noisy(&self) -> bool {
        self.other.is_some_and(|s| s >= OTHER_SHARE) || self.steal.is_some_and(|s| s >= STEAL_SHARE)
    }
}

/// What the look before the first cell saw, judged: the others' and the hypervisor's
/// shares of the CPUs and the processes worth naming.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Busy {
    /// Online CPUs.
    pub cpus: usize,
    /// Share of the CPUs' time other processes used (busy time less the looking process's
    /// own), 0..1.
    pub other: f64,
    /// Share of the CPUs' time the hypervisor stole, 0..1.
    pub steal: f64,
    /// One tick's share of the CPUs' time the look covered, 0..1: how finely it reads the
    /// shares above, and the margin by which they must pass their thresholds.
    pub resolution: f64,
    /// Tasks running or runnable at the look's end besides the one looking.
    pub running: Option<u32>,
    /// The processes that used at least [`NAMED_SHARE`] of one CPU, the most first: command
    /// name, pid and share of one CPU (1.0 for a whole one).
    pub named: Vec<(String, i32, f64)>,
}

/// Judges a look at a machine of `cpus` CPUs; None where it covers no time.
pub fn busy(look: &MachineLook, cpus: usize) -> Option<Busy> {
    let ticks = look.stat.cpu_ticks();
    if ticks == 0 || cpus == 0 {
        return None;
    }
    let of_cpus = |t: u64| t as f64 / ticks as f64;
    Some(Busy {
        cpus,
        other: of_cpus(look.stat.busy_ticks().saturating_sub(look.own_ticks)),
        steal: of_cpus(look.stat.steal),
        resolution: of_cpus(1),
        running: look.running,
        named: look
            .consumers
            .iter()
            .map(|c| (c.comm.clone(), c.pid, of_cpus(c.ticks) * cpus as f64))
            .filter(|(_, _, share)| *share >= NAMED_SHARE)
            .collect(),
    })
}

impl Busy {
    /// Whether others used at least [`BUSY_SHARE`] of the CPUs by more than the look's
    /// resolution: /proc/stat's fields and each process's time are cut to whole ticks, so a
    /// short look of a quiet machine may read a tick more than it saw.
    pub fn others_busy(&self) -> bool {
        self.other - self.resolution >= BUSY_SHARE
    }

    /// Whether the hypervisor stole at least [`STEAL_SHARE`] by more than the resolution.
    pub fn stolen(&self) -> bool {
        self.steal - self.resolution >= STEAL_SHARE
    }

    /// Whether the look found the machine busy: others or the hypervisor ([`Busy::others_busy`],
    /// [`Busy::stolen`]). The run queue alone never says so: it is one instant.
    pub fn is_busy(&self) -> bool {
        self.others_busy() || self.stolen()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{test_cell, test_samples};
    use schedlab_model::{CellParams, Consumer, MachineLoad, Sample, StatDelta};

    /// A repetition of cell `id` on 2 CPUs over 1 s (200 ticks): `busy` ticks busy, its two
    /// workers' CPU seconds, the load average and the pressure at its end.
    fn rep(id: u32, busy: u64, own: [f64; 2], steal: u64, load: MachineLoad) -> CellRecord {
        let samples = test_samples(&own, |_, cpu| Sample {
            wall_s: 1.0,
            user_s: cpu,
            window_cpu_s: cpu,
            ..Default::default()
        });
        CellRecord {
            stat: StatDelta { user: busy, idle: 200 - busy - steal, steal, ..Default::default() },
            load: Some(load),
            ..test_cell(id, format!("cpu/other/n2/{id}"), 0, 1.0, samples)
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

    /// A repetition of cell `id` covering 40 ticks (0.2 s of 2 CPUs): too short alone.
    fn short(id: u32, busy: u64, own: [f64; 2], steal: u64) -> CellRecord {
        let mut r = rep(id, busy, own, steal, MachineLoad { load1: 2.0, cpu_pressure_us: None });
        r.stat.idle = 40 - busy - steal;
        r.makespan_s = 0.2;
        r
    }

    #[test]
    fn short_cells_are_judged_pooled_with_the_same_thresholds() {
        // Six cells of 40 ticks: the workers used 0.2 s of each, a busy loop 0.16 s more.
        let busy: Vec<CellRecord> = (0..6).map(|id| short(id, 36, [0.1, 0.1], 0)).collect();
        let n = noise(&busy, 2);
        assert_eq!((n.cells, n.other.0, n.steal.0), (6, 0, 0), "none is judged alone: {n:?}");
        assert_eq!(n.short.cells, 6);
        assert!((n.short.other.unwrap() - 0.4).abs() < 1e-9, "0.96 s of 2.4 s: {n:?}");
        assert_eq!(n.short.steal, Some(0.0));
        assert!(n.is_noisy());
        // The same cells with the machine to themselves, and a hypervisor stealing a tenth.
        let quiet: Vec<CellRecord> = (0..6).map(|id| short(id, 21, [0.1, 0.1], 0)).collect();
        let n = noise(&quiet, 2);
        assert!(n.short.other.unwrap() < OTHER_SHARE && !n.is_noisy(), "{n:?}");
        let stolen: Vec<CellRecord> = (0..6).map(|id| short(id, 21, [0.1, 0.1], 4)).collect();
        let n = noise(&stolen, 2);
        assert!((n.short.steal.unwrap() - 0.1).abs() < 1e-9 && n.is_noisy(), "{n:?}");
    }

    #[test]
    fn long_cells_stay_out_of_the_pool_and_a_small_pool_is_not_judged() {
        let mut recs = vec![quiet(0), short(1, 36, [0.1, 0.1], 0), short(2, 36, [0.1, 0.1], 0)];
        let n = noise(&recs, 2);
        assert_eq!(n.short, ShortCells { cells: 2, other: None, steal: None }, "80 ticks");
        assert!(!n.is_noisy());
        recs.push(short(3, 36, [0.1, 0.1], 0));
        let n = noise(&recs, 2);
        assert_eq!(n.short.cells, 3, "the long cell is judged alone: {n:?}");
        assert!((n.short.other.unwrap() - 0.4).abs() < 1e-9 && n.is_noisy(), "{n:?}");
        assert_eq!(n.other.0, 0, "the long cell was quiet");
    }

    /// A look of 200 ticks (1 s of 2 CPUs) with `busy` of them busy, the looker's own
    /// `own`, and the consumers as (comm, pid, ticks).
    fn look(busy: u64, own: u64, consumers: &[(&str, i32, u64)]) -> MachineLook {
        MachineLook {
            stat: StatDelta { user: busy, idle: 200 - busy, ..Default::default() },
            running: Some(consumers.len() as u32),
            own_ticks: own,
            consumers: consumers
                .iter()
                .map(|&(comm, pid, ticks)| Consumer { pid, comm: comm.into(), ticks })
                .collect(),
        }
    }

    #[test]
    fn a_busy_look_names_the_processes_that_use_a_share_of_a_cpu() {
        let b =
            busy(&look(197, 1, &[("sh", 4711, 99), ("sh", 4712, 97), ("kworker/0:1", 9, 2)]), 2)
                .unwrap();
        assert!(b.is_busy());
        assert!((b.other - 0.98).abs() < 1e-9, "196 of 200 ticks: {b:?}");
        assert_eq!(b.running, Some(3));
        assert_eq!(
            b.named,
            vec![("sh".to_string(), 4711, 0.99), ("sh".to_string(), 4712, 0.97)],
            "2 ticks of 100 is under a twentieth of a CPU"
        );
    }

    #[test]
    fn a_quiet_look_is_not_busy_and_schedlab_s_own_time_is_not_the_others() {
        let b = busy(&look(8, 0, &[("systemd", 1, 3), ("kworker/1:0", 20, 4)]), 2).unwrap();
        assert!(!b.is_busy() && b.named.is_empty(), "{b:?}");
        // schedlab itself calibrating or opening its database during the look.
        let b = busy(&look(120, 110, &[("rcu_sched", 12, 10)]), 2).unwrap();
        assert!((b.other - 0.05).abs() < 1e-9 && !b.is_busy(), "{b:?}");
        let stolen = MachineLook {
            stat: StatDelta { user: 2, idle: 178, steal: 20, ..Default::default() },
            ..Default::default()
        };
        assert!(busy(&stolen, 2).unwrap().is_busy(), "a tenth stolen");
        assert_eq!(busy(&MachineLook::default(), 2), None, "no time covered");
    }

    #[test]
    fn a_short_look_says_busy_only_past_its_threshold_by_more_than_a_tick() {
        // 100 ms of 2 CPUs: 20 ticks, one tick a twentieth. Two ticks of others (10%) may be
        // one seen and one cut from a quiet machine's counters; four (20%) are not.
        let short = |busy: u64, steal: u64| MachineLook {
            stat: StatDelta { user: busy, idle: 20 - busy - steal, steal, ..Default::default() },
            ..Default::default()
        };
        let b = busy(&short(2, 0), 2).unwrap();
        assert!((b.resolution - 0.05).abs() < 1e-9 && !b.is_busy(), "{b:?}");
        assert!(busy(&short(4, 0), 2).unwrap().others_busy());
        assert!(!busy(&short(0, 1), 2).unwrap().stolen(), "one stolen tick of 20");
        assert!(busy(&short(0, 3), 2).unwrap().stolen());
        // A second of spawning a large cell: 200 ticks, one tick half a percent.
        assert!(busy(&look(22, 0, &[]), 2).unwrap().others_busy(), "11% of 200 ticks");
    }
}
