//! A cell's batch of generated task sets (`task_sets`): written a chunk at a time as
//! `simulate` finishes them, so an interrupted run keeps what it did and `--resume` skips it.

use crate::{DbError, Store};
use rusqlite::params;
use schedlab_model::sets::{SetTask, SetVerdict, TaskSetRow};
use std::collections::BTreeSet;

fn json_error(e: serde_json::Error) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(e))
}

/// Column `i`'s JSON text as a `T`.
fn parse<T: serde::de::DeserializeOwned>(i: usize, text: String) -> rusqlite::Result<T> {
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

impl Store {
    /// Stores sets of run `run_id` in one transaction (a set stored already is replaced).
    pub fn insert_task_sets(&mut self, run_id: i64, rows: &[TaskSetRow]) -> Result<(), DbError> {
        let tx = self.conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT OR REPLACE INTO task_sets (run_id, cell_id, set_index, seed, scheduler, utilisation, plain_utilisation, min_utilisation, cpus, tasks_json, jobs, misses, violations, schedulable, tests_json, message, jobs_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            )?;
            for r in rows {
                let tasks: Vec<(u64, u64, u64, u32, u32)> =
                    r.tasks.iter().map(|t| (t.c_ns, t.t_ns, t.d_ns, t.x, t.y)).collect();
                let jobs_json = r
                    .jobs_log
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(json_error)?;
                st.execute(params![
                    run_id,
                    r.cell_id,
                    r.index,
                    r.seed as i64,
                    r.scheduler,
                    r.utilisation,
                    r.plain_utilisation,
                    r.min_utilisation,
                    r.cpus,
                    serde_json::to_string(&tasks).map_err(json_error)?,
                    r.jobs as i64,
                    r.misses as i64,
                    r.violations as i64,
                    r.schedulable,
                    serde_json::to_string(&r.tests).map_err(json_error)?,
                    r.message,
                    jobs_json,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Every stored set of a run, by cell and index.
    pub fn task_sets(&self, run_id: i64) -> Result<Vec<TaskSetRow>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT cell_id, set_index, seed, scheduler, utilisation, plain_utilisation, min_utilisation, cpus, tasks_json, jobs, misses, violations, schedulable, tests_json, message, jobs_json
             FROM task_sets WHERE run_id = ?1 ORDER BY cell_id, set_index",
        )?;
        let rows = st.query_map(params![run_id], |r| {
            let tasks: Vec<(u64, u64, u64, u32, u32)> = parse(8, r.get(8)?)?;
            let tests: Vec<(String, SetVerdict)> = parse(13, r.get(13)?)?;
            let jobs_log = r.get::<_, Option<String>>(15)?.map(|j| parse(15, j)).transpose()?;
            Ok(TaskSetRow {
                cell_id: r.get(0)?,
                index: r.get(1)?,
                seed: r.get::<_, i64>(2)? as u64,
                scheduler: r.get(3)?,
                utilisation: r.get(4)?,
                plain_utilisation: r.get(5)?,
                min_utilisation: r.get(6)?,
                cpus: r.get(7)?,
                tasks: tasks
                    .into_iter()
                    .map(|(c_ns, t_ns, d_ns, x, y)| SetTask { c_ns, t_ns, d_ns, x, y })
                    .collect(),
                jobs: r.get::<_, i64>(9)? as u64,
                misses: r.get::<_, i64>(10)? as u64,
                violations: r.get::<_, i64>(11)? as u64,
                schedulable: r.get(12)?,
                tests,
                message: r.get(14)?,
                jobs_log,
            })
        })?;
        rows.collect()
    }

    /// (cell, index) of every set of a run stored so far: what `--resume` need not redo.
    pub fn done_task_sets(&self, run_id: i64) -> Result<BTreeSet<(u32, u32)>, DbError> {
        let mut st =
            self.conn.prepare("SELECT cell_id, set_index FROM task_sets WHERE run_id = ?1")?;
        let rows = st.query_map(params![run_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }
}
