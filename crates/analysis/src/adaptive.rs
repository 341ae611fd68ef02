//! Adaptive repetitions: whether a cell needs another repetition, as one pure function of
//! its stored records, so a run, a resumed run and a shard of a run all decide alike.
//!
//! A cell is judged by its main figure, with the same summary and interval `show` prints:
//! the miss ratio for a periodic task set, MB/s for I/O workers, otherwise wall time per
//! process.

use crate::{cell_stats, io_stats, rt_stats, NoInterval, Summary};
use schedlab_model::{AdaptiveTarget, CellRecord, RepetitionOutcome};

/// The figure a cell's repetitions are judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainFigure {
    /// Mean wall seconds per process (CPU cells).
    WallPerProc,
    /// Deadline misses over jobs of the set, percent (periodic cells).
    MissPct,
    /// Bytes of the measured I/O workers over the makespan, MB/s (I/O cells).
    MbS,
}

impl MainFigure {
    /// The name stored and exported.
    pub fn name(self) -> &'static str {
        match self {
            MainFigure::WallPerProc => "wall_per_proc",
            MainFigure::MissPct => crate::rt::MISS_PCT.name,
            MainFigure::MbS => "mb_s",
        }
    }
}

/// What a cell's records say about its repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run another repetition.
    Repeat,
    /// The interval is within the target: stop.
    Reached,
    /// Stop without reaching it: `max` repetitions ran, or every one so far failed.
    Stopped,
}

/// A cell's decision with what it rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judgement {
    /// Repeat, or stop.
    pub decision: Decision,
    /// Measured repetitions stored, failed ones included.
    pub repetitions: u32,
    /// The figure judged.
    pub figure: MainFigure,
    /// The interval's half-width, percent of the mean (None: no interval shown yet).
    pub half_width_pct: Option<f64>,
}

impl Judgement {
    /// The outcome to store once the cell stops (None while it repeats).
    pub fn outcome(&self, target: &AdaptiveTarget) -> Option<RepetitionOutcome> {
        (self.decision != Decision::Repeat).then(|| RepetitionOutcome {
            repetitions: self.repetitions,
            reached: self.decision == Decision::Reached,
            figure: self.figure.name().to_string(),
            half_width_pct: self.half_width_pct,
            target: *target,
        })
    }
}

/// The main figure of one cell's records and its summary over the counted repetitions
/// (warm-ups and failed ones left out, as in the tables).
pub fn main_figure(records: &[CellRecord]) -> (MainFigure, Summary) {
    if let Some(s) = rt_stats(records).first() {
        return (MainFigure::MissPct, s.figures[&crate::rt::MISS_PCT]);
    }
    if let Some(s) = io_stats(records).first() {
        return (MainFigure::MbS, s.mb_s);
    }
    let wall = cell_stats(records).first().map_or(Summary::EMPTY, |s| s.wall_per_proc);
    (MainFigure::WallPerProc, wall)
}

/// The interval's half-width as a percentage of the mean, from as many values as tables
/// want for an interval (also when they show none because it is wider than the mean); 0 for
/// a figure that did not vary (a miss ratio of 0 in every repetition).
fn half_width_pct(s: &Summary) -> Option<f64> {
    if s.interval() == Err(NoInterval::FewValues) {
        return None;
    }
    let half = s.ci_half_width();
    if half == 0.0 {
        return Some(0.0);
    }
    (s.mean != 0.0).then(|| half / s.mean.abs() * 100.0)
}

/// Whether the cell whose stored records are `records` (warm-ups are ignored) needs another
/// measured repetition under `target`. Below `min` it always does; from `min` on it stops
/// when the main figure's 95% interval is within `ci_pct` percent of the mean, when `max`
/// repetitions ran, or when every repetition so far failed (more would fail alike).
pub fn judge(records: &[CellRecord], target: &AdaptiveTarget) -> Judgement {
    // The figures leave warm-ups out themselves.
    let measured = || records.iter().filter(|r| !r.warmup);
    let repetitions = measured().count() as u32;
    let (figure, summary) = main_figure(records);
    let half_width_pct = half_width_pct(&summary);
    let decision = if repetitions < target.min {
        Decision::Repeat
    } else if half_width_pct.is_some_and(|h| h <= target.ci_pct) {
        Decision::Reached
    } else if repetitions >= target.max || !measured().any(|r| r.status.is_ok()) {
        Decision::Stopped
    } else {
        Decision::Repeat
    };
    Judgement { decision, repetitions, figure, half_width_pct }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::test_record;
    use schedlab_model::{CellParams, CellStatus, Sample};

    const TARGET: AdaptiveTarget = AdaptiveTarget { min: 3, max: 6, ci_pct: 5.0 };

    fn rec(rep: u32, wall: f64) -> CellRecord {
        let params = CellParams { cell_id: 0, key: "k".into(), processes: 1, ..Default::default() };
        test_record(params, rep, wall, vec![Sample { wall_s: wall, ..Default::default() }])
    }

    fn recs(walls: &[f64]) -> Vec<CellRecord> {
        walls.iter().enumerate().map(|(i, w)| rec(i as u32, *w)).collect()
    }

    #[test]
    fn a_cell_below_min_repeats_whatever_its_figure() {
        for n in 0..3 {
            let j = judge(&recs(&vec![1.0; n]), &TARGET);
            assert_eq!((j.decision, j.repetitions), (Decision::Repeat, n as u32));
        }
    }

    #[test]
    fn a_stable_figure_stops_at_min_with_the_target_reached() {
        let j = judge(&recs(&[1.00, 1.01, 0.99]), &TARGET);
        assert_eq!(
            (j.decision, j.repetitions, j.figure),
            (Decision::Reached, 3, MainFigure::WallPerProc)
        );
        let h = j.half_width_pct.unwrap();
        // The interval show prints: its half-width over the mean.
        let s = cell_stats(&recs(&[1.00, 1.01, 0.99]))[0].wall_per_proc;
        let (lo, hi) = s.interval().unwrap();
        assert!((h - (hi - lo) / 2.0 / s.mean * 100.0).abs() < 1e-9 && h < 5.0, "{h}");
        let o = j.outcome(&TARGET).unwrap();
        assert!(o.reached && o.repetitions == 3 && o.figure == "wall_per_proc");
    }

    #[test]
    fn a_noisy_figure_repeats_until_max_and_stops_unreached() {
        let noisy = [1.0, 2.0, 0.5, 1.7, 0.8, 1.4, 0.6];
        for n in 3..6 {
            assert_eq!(judge(&recs(&noisy[..n]), &TARGET).decision, Decision::Repeat, "n = {n}");
        }
        let j = judge(&recs(&noisy[..6]), &TARGET);
        assert_eq!((j.decision, j.repetitions), (Decision::Stopped, 6));
        assert!(j.half_width_pct.unwrap() > 5.0);
        let wide = judge(&recs(&[0.01, 1.0, 0.02, 0.01, 0.9, 0.01]), &TARGET);
        assert_eq!(
            cell_stats(&recs(&[0.01, 1.0, 0.02, 0.01, 0.9, 0.01]))[0].wall_per_proc.interval(),
            Err(NoInterval::WiderThanEstimate)
        );
        assert!(
            wide.decision == Decision::Stopped && wide.half_width_pct.unwrap() > 100.0,
            "{wide:?}: wider than the mean, still said"
        );
        let o = j.outcome(&TARGET).unwrap();
        assert!(!o.reached && o.repetitions == 6);
        assert_eq!(
            judge(&recs(&noisy[..5]), &TARGET).outcome(&TARGET),
            None,
            "no outcome while it repeats"
        );
    }

    #[test]
    fn warmups_do_not_count_and_failures_count_toward_max_but_not_the_figure() {
        let mut r = recs(&[1.0, 1.0]);
        r.push(CellRecord { warmup: true, ..rec(0, 50.0) });
        assert_eq!(
            judge(&r, &TARGET).decision,
            Decision::Repeat,
            "2 measured repetitions and a warm-up"
        );
        let mut r = recs(&[1.0, 1.01, 0.99, 1.0]);
        r[0].status = CellStatus::Failed;
        r[0].samples[0].wall_s = 99.0;
        let j = judge(&r, &TARGET);
        assert_eq!(
            (j.decision, j.repetitions),
            (Decision::Reached, 4),
            "the failed one is left out of the figure"
        );
    }

    #[test]
    fn a_cell_whose_every_repetition_failed_stops_at_min() {
        let mut r = recs(&[1.0, 1.0, 1.0]);
        for x in &mut r {
            x.status = CellStatus::Failed;
            x.samples.clear();
        }
        let j = judge(&r, &TARGET);
        assert_eq!((j.decision, j.half_width_pct), (Decision::Stopped, None));
    }

    #[test]
    fn a_figure_that_never_varies_has_a_zero_interval_even_at_zero() {
        // A periodic set that never missed: a miss ratio of 0 every time.
        let j = judge(&recs(&[0.0, 0.0, 0.0]), &TARGET);
        assert_eq!((j.decision, j.half_width_pct), (Decision::Reached, Some(0.0)));
    }

    #[test]
    fn the_order_of_the_records_does_not_matter() {
        let mut r = recs(&[1.0, 2.0, 0.5, 1.7]);
        let a = judge(&r, &TARGET);
        r.reverse();
        assert_eq!(judge(&r, &TARGET), a);
    }
}
