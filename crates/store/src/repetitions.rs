//! How each cell's adaptive repetitions ended (`cell_repetitions`): written once a cell
//! stops repeating, read back onto every record of the cell.

use crate::{DbError, Store};
use rusqlite::params;
use schedlab_model::{AdaptiveTarget, CellRecord, RepetitionOutcome};
use std::collections::BTreeMap;

impl Store {
    /// Stores (or replaces: a resumed run decides again from the same records) how cell
    /// `cell_id` of run `run_id` ended its adaptive repetitions.
    pub fn set_repetition_outcome(
        &self,
        run_id: i64,
        cell_id: u32,
        o: &RepetitionOutcome,
    ) -> Result<(), DbError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO cell_repetitions (run_id, cell_id, repetitions, reached, figure, half_width_pct, min_reps, max_reps, ci_pct)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![run_id, cell_id, o.repetitions, o.reached, o.figure, o.half_width_pct, o.target.min, o.target.max, o.target.ci_pct],
        )?;
        Ok(())
    }

    /// The stored outcomes of a run's cells, by cell id (empty under fixed repetitions).
    pub fn repetition_outcomes(
        &self,
        run_id: i64,
    ) -> Result<BTreeMap<u32, RepetitionOutcome>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT cell_id, repetitions, reached, figure, half_width_pct, min_reps, max_reps, ci_pct FROM cell_repetitions WHERE run_id = ?1",
        )?;
        let rows = st.query_map(params![run_id], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                RepetitionOutcome {
                    repetitions: r.get(1)?,
                    reached: r.get(2)?,
                    figure: r.get(3)?,
                    half_width_pct: r.get(4)?,
                    target: AdaptiveTarget { min: r.get(5)?, max: r.get(6)?, ci_pct: r.get(7)? },
                },
            ))
        })?;
        rows.collect()
    }

    /// Sets each record's `params.repetitions` to its cell's stored outcome.
    pub(crate) fn attach_repetition_outcomes(
        &self,
        run_id: i64,
        records: &mut [CellRecord],
    ) -> Result<(), DbError> {
        let outcomes = self.repetition_outcomes(run_id)?;
        if outcomes.is_empty() {
            return Ok(());
        }
        for r in records {
            r.params.repetitions = outcomes.get(&r.params.cell_id).cloned();
        }
        Ok(())
    }
}
