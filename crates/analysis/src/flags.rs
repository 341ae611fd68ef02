//! Outlier flags per cell: processes whose value stands out from their siblings.
//!
//! The processes of one repetition ran side by side under the same conditions, so each
//! is compared with the others of that repetition by its modified z-score
//! ([`crate::modified_z_scores`]); a cell's flags are the union over its repetitions.

use crate::metric::counts;
use crate::{modified_z_scores, percentile};
use schedlab_model::{CellRecord, Sample};
use std::collections::BTreeMap;

/// A per-process value that outliers are looked for in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcessValue {
    /// Wall seconds (the worker's own clock).
    Wall,
    /// User CPU seconds.
    User,
    /// Involuntary context switches.
    Involuntary,
    /// Voluntary context switches.
    Voluntary,
}

impl ProcessValue {
    /// Every value checked by [`cell_outliers`].
    pub const ALL: [ProcessValue; 4] = [
        ProcessValue::Wall,
        ProcessValue::User,
        ProcessValue::Involuntary,
        ProcessValue::Voluntary,
    ];

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            ProcessValue::Wall => "wall",
            ProcessValue::User => "user",
            ProcessValue::Involuntary => "involuntary",
            ProcessValue::Voluntary => "voluntary",
        }
    }

    /// The value of one process.
    pub fn of(self, s: &Sample) -> f64 {
        match self {
            ProcessValue::Wall => s.wall_s,
            ProcessValue::User => s.user_s,
            ProcessValue::Involuntary => s.involuntary_csw as f64,
            ProcessValue::Voluntary => s.voluntary_csw as f64,
        }
    }
}

/// One flagged process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessOutlier {
    /// Repetition it ran in.
    pub rep: u32,
    /// Worker index within the cell.
    pub index: u32,
    /// Which value stood out.
    pub value_kind: ProcessValue,
    /// The process's value.
    pub value: f64,
    /// Median of that value over the repetition's processes.
    pub median: f64,
    /// Its modified z-score.
    pub z: f64,
}

/// The outlier flags of one cell over its measured repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutliers {
    /// Matrix cell index.
    pub cell_id: u32,
    /// Cell key.
    pub key: String,
    /// Processes examined (over all counted repetitions).
    pub processes: usize,
    /// Flagged processes, by repetition, value kind and worker index.
    pub flagged: Vec<ProcessOutlier>,
}

impl CellOutliers {
    /// How many flags of one value kind.
    pub fn count(&self, kind: ProcessValue) -> usize {
        self.flagged.iter().filter(|f| f.value_kind == kind).count()
    }

    /// The flag of that kind with the largest |z|, if any.
    pub fn worst(&self, kind: ProcessValue) -> Option<&ProcessOutlier> {
        self.flagged
            .iter()
            .filter(|f| f.value_kind == kind)
            .max_by(|a, b| a.z.abs().total_cmp(&b.z.abs()))
    }
}

/// Flags, per cell (in cell order), the processes whose |modified z-score| within their
/// repetition exceeds `threshold` ([`crate::MODIFIED_Z_THRESHOLD`] is the usual choice).
///
/// Warm-ups, failed starts and background workers are skipped. A repetition where more than half the
/// processes share one value has a MAD of 0 and flags nothing (there is no robust
/// spread to measure against). Every cell with a counted repetition is listed, flagged or not.
pub fn cell_outliers(records: &[CellRecord], threshold: f64) -> Vec<CellOutliers> {
    let mut by_cell: BTreeMap<u32, CellOutliers> = BTreeMap::new();
    for r in records.iter().filter(|r| counts(r)) {
        let cell = by_cell.entry(r.params.cell_id).or_insert_with(|| CellOutliers {
            cell_id: r.params.cell_id,
            key: r.params.key.clone(),
            processes: 0,
            flagged: Vec::new(),
        });
        // Background workers are not siblings of the measured ones: different work, different policy.
        let measured: Vec<&Sample> = r.samples.iter().filter(|s| !s.background).collect();
        cell.processes += measured.len();
        for kind in ProcessValue::ALL {
            let xs: Vec<f64> = measured.iter().map(|s| kind.of(s)).collect();
            let median = percentile(&xs, 50.0).unwrap_or(f64::NAN);
            for (s, z) in measured.iter().zip(modified_z_scores(&xs)) {
                if z.abs() > threshold {
                    cell.flagged.push(ProcessOutlier {
                        rep: r.rep,
                        index: s.index,
                        value_kind: kind,
                        value: kind.of(s),
                        median,
                        z,
                    });
                }
            }
        }
    }
    let mut out: Vec<CellOutliers> = by_cell.into_values().collect();
    for c in &mut out {
        c.flagged.sort_by_key(|f| {
            (f.rep, ProcessValue::ALL.iter().position(|k| *k == f.value_kind), f.index)
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{test_cell, test_samples};
    use crate::MODIFIED_Z_THRESHOLD;

    fn rec(cell_id: u32, rep: u32, warmup: bool, walls: &[f64]) -> CellRecord {
        let samples = test_samples(walls, |_, w| Sample {
            wall_s: w,
            user_s: 1.0,
            voluntary_csw: 2,
            involuntary_csw: 5,
            ..Default::default()
        });
        let key = format!("cpu/other/n{}", walls.len());
        CellRecord { warmup, ordinal: 0, ..test_cell(cell_id, key, rep, 1.0, samples) }
    }

    #[test]
    fn flags_the_straggler_of_its_own_repetition() {
        // Rep 0: walls 1,2,3,4,100 -> median 3, MAD 1, the 100 scores 0.6745 * 97 = 65.4.
        // Rep 1 is spread evenly; 10 scores 0.6745 * (10 - 8) / 2 = 0.67: not flagged,
        // although 10 would be far out among rep 0's values.
        let recs = [
            rec(0, 0, false, &[1.0, 2.0, 3.0, 4.0, 100.0]),
            rec(0, 1, false, &[6.0, 7.0, 8.0, 9.0, 10.0]),
        ];
        let cells = cell_outliers(&recs, MODIFIED_Z_THRESHOLD);
        assert_eq!(cells.len(), 1);
        let c = &cells[0];
        assert_eq!(c.processes, 10);
        assert_eq!(c.flagged.len(), 1, "{:?}", c.flagged);
        let f = &c.flagged[0];
        assert_eq!(
            (f.rep, f.index, f.value_kind, f.value, f.median),
            (0, 4, ProcessValue::Wall, 100.0, 3.0)
        );
        assert!((f.z - 0.6745 * 97.0).abs() < 1e-9);
        assert_eq!(c.count(ProcessValue::Wall), 1);
        assert_eq!(c.count(ProcessValue::User), 0, "identical values have MAD 0 and flag nothing");
        assert_eq!(c.worst(ProcessValue::Wall), Some(f));
    }

    #[test]
    fn warmups_are_skipped_and_quiet_cells_are_listed() {
        let recs =
            [rec(0, 0, true, &[1.0, 2.0, 3.0, 4.0, 100.0]), rec(1, 0, false, &[1.0, 1.1, 0.9])];
        let cells = cell_outliers(&recs, MODIFIED_Z_THRESHOLD);
        assert_eq!(cells.len(), 1, "cell 0 had only a warm-up");
        assert_eq!((cells[0].cell_id, cells[0].processes, cells[0].flagged.len()), (1, 3, 0));
    }
}
