//! SQLite storage for runs: one row per run (with the spec text, its hash and the
//! environment), one per finished cell repetition (with /proc/stat deltas), one per
//! worker process. Each finished cell is written in its own transaction (WAL), so an
//! interrupted run keeps every cell it finished.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod campaign;
mod merge;
mod repetitions;
mod schema;
mod sets;
pub mod spool;
mod status;

pub use campaign::{Identity, Shard};
pub use merge::{MergeError, MergeReport, MergedRun, RUN_TABLES};
pub use status::RunStatus;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use schedlab_model::columns::{ColumnValue, Kind};
use schedlab_model::jobs::JobLog;
use schedlab_model::trace::RawTrace;
use schedlab_model::{
    CellParams, CellRecord, CellStatus, Environment, Extra, MachineLoad, Mode, Sample, StatDelta,
};
use std::collections::BTreeMap;
use std::path::Path;

pub use rusqlite::Error as DbError;

/// A stored run's header.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// Experiment name.
    pub name: String,
    /// measured or sim.
    pub mode: String,
    /// How it stands: running, complete, interrupted, ...
    pub status: RunStatus,
    /// Unix time the run started.
    pub started_unix: f64,
    /// Unix time the run ended, if it did.
    pub finished_unix: Option<f64>,
    /// Path of the spec file.
    pub spec_path: String,
    /// Exact spec text.
    pub spec_text: String,
    /// SHA-256 of the spec text.
    pub spec_hash: String,
    /// The resolved plan (after --scale and overrides), JSON.
    pub plan_json: String,
    /// Work multiplier.
    pub scale: f64,
    /// The machine.
    pub env: Environment,
    /// The command line that made it.
    pub command_line: String,
    /// Warnings raised during the run.
    pub warnings: Vec<String>,
    /// Finished cell repetitions stored.
    pub cells_done: i64,
    /// Every knob its spec names, as it was before the run began (empty: none named).
    pub knobs_before: BTreeMap<String, String>,
    /// The run's UUID, its campaign and shard.
    pub identity: Identity,
}

/// What a new run row records.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    /// Experiment name.
    pub name: &'a str,
    /// measured or sim.
    pub mode: Mode,
    /// Path of the spec file.
    pub spec_path: &'a str,
    /// Exact spec text.
    pub spec_text: &'a str,
    /// SHA-256 of the spec text.
    pub spec_hash: &'a str,
    /// The resolved plan, JSON.
    pub plan_json: &'a str,
    /// Work multiplier.
    pub scale: f64,
    /// The machine.
    pub env: &'a Environment,
    /// The command line.
    pub command_line: &'a str,
}

/// A kept kernel capture of a cell repetition, by size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptTrace {
    /// The cell.
    pub cell_id: u32,
    /// Its repetition (0-based).
    pub rep: u32,
    /// A warm-up repetition.
    pub warmup: bool,
    /// Bytes of the capture's file.
    pub raw_bytes: u64,
    /// Bytes stored (compressed).
    pub stored_bytes: u64,
}

/// An open database.
pub struct Store {
    conn: Connection,
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, DbError> {
        let conn = Connection::open(path)?;
        Store::init(conn)
    }

    /// How long a statement waits for another process's lock before it fails (10 s;
    /// `SCHEDLAB_BUSY_TIMEOUT_MS` overrides it).
    pub fn busy_timeout() -> std::time::Duration {
        let ms = std::env::var("SCHEDLAB_BUSY_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(10_000);
        std::time::Duration::from_millis(ms)
    }

    /// An in-memory database (tests).
    pub fn memory() -> Result<Store, DbError> {
        Store::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Store, DbError> {
        conn.busy_timeout(Store::busy_timeout())?;
        // Switching a new database to WAL upgrades a shared lock, which SQLite refuses at once
        // (no busy wait) when another opener holds one too: such refusals are retried.
        let start = std::time::Instant::now();
        loop {
            let set_up = conn
                .pragma_update(None, "journal_mode", "WAL")
                .and_then(|()| conn.pragma_update(None, "synchronous", "NORMAL"))
                .and_then(|()| conn.pragma_update(None, "foreign_keys", "ON"))
                .and_then(|()| schema::migrate(&conn));
            match set_up {
                Err(e) if is_busy(&e) && start.elapsed() < Store::busy_timeout() => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                done => break done?,
            }
        }
        Ok(Store { conn })
    }

    /// The database's file (None in memory).
    pub fn path(&self) -> Option<&str> {
        self.conn.path().filter(|p| !p.is_empty())
    }

    /// Creates a run row in state `running`; returns its id.
    pub fn create_run(&self, r: &NewRun) -> Result<i64, DbError> {
        self.conn.execute(
            "INSERT INTO runs (name, mode, status, started_unix, spec_path, spec_text, spec_hash, plan_json, scale, env_json, tool_version, command_line, warnings_json, uuid)
             VALUES (?1, ?2, ?13, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, '[]', ?12)",
            params![
                r.name,
                r.mode.as_str(),
                now(),
                r.spec_path,
                r.spec_text,
                r.spec_hash,
                r.plan_json,
                r.scale,
                serde_json::to_string(r.env).unwrap_or_default(),
                r.env.tool_version,
                r.command_line,
                uuid::Uuid::new_v4().to_string(),
                RunStatus::Running.as_str()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records every knob the run's spec names as it was before the run began.
    pub fn set_knobs_before(
        &self,
        id: i64,
        knobs: &BTreeMap<String, String>,
    ) -> Result<(), DbError> {
        self.conn.execute(
            "UPDATE runs SET knobs_before_json = ?2 WHERE id = ?1",
            params![id, knobs_json(knobs)],
        )?;
        Ok(())
    }

    /// Stores a calibration (its JSON and the machine's facts): its id.
    pub fn add_calibration(
        &self,
        created_unix: f64,
        machine_json: &str,
        calibration_json: &str,
        run_id: Option<i64>,
    ) -> Result<i64, DbError> {
        self.conn.execute(
            "INSERT INTO calibrations (created_unix, machine_json, calibration_json, run_id) VALUES (?1, ?2, ?3, ?4)",
            params![created_unix, machine_json, calibration_json, run_id],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The newest calibration (`id` None) or calibration `id`: (id, machine facts JSON,
    /// calibration JSON).
    pub fn calibration(&self, id: Option<i64>) -> Result<Option<(i64, String, String)>, DbError> {
        let row = |r: &rusqlite::Row| Ok((r.get(0)?, r.get(1)?, r.get(2)?));
        let sql = "SELECT rowid, machine_json, calibration_json FROM calibrations";
        let found = match id {
            Some(id) => self.conn.query_row(&format!("{sql} WHERE rowid = ?1"), [id], row),
            None => self.conn.query_row(&format!("{sql} ORDER BY rowid DESC LIMIT 1"), [], row),
        };
        match found {
            Ok(v) => Ok(Some(v)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Stores run `run_id`'s A/A floors, one row per (cell key, figure, floor JSON), with
    /// the machine's facts.
    pub fn add_floors(
        &self,
        run_id: i64,
        created_unix: f64,
        machine_json: &str,
        rows: &[(String, String, String)],
    ) -> Result<(), DbError> {
        let mut st = self.conn.prepare(
            "INSERT OR REPLACE INTO floors (run_id, created_unix, machine_json, cell_key, figure, floor_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for (key, figure, json) in rows {
            st.execute(params![run_id, created_unix, machine_json, key, figure, json])?;
        }
        Ok(())
    }

    /// The runs that measured floors, newest first: (run id, when, machine facts JSON).
    pub fn floor_runs(&self) -> Result<Vec<(i64, f64, String)>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT run_id, max(created_unix), min(machine_json) FROM floors GROUP BY run_id ORDER BY 2 DESC, 1 DESC",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    }

    /// Run `run_id`'s floors: (cell key, figure, floor JSON).
    pub fn floors(&self, run_id: i64) -> Result<Vec<(String, String, String)>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT cell_key, figure, floor_json FROM floors WHERE run_id = ?1 ORDER BY cell_key, figure",
        )?;
        let rows = st.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    }

    /// Sets a run's final status and warnings.
    pub fn finish_run(
        &self,
        id: i64,
        status: &RunStatus,
        warnings: &[String],
    ) -> Result<(), DbError> {
        // A resumed run keeps what its earlier sessions warned of (cells skipped, cells
        // spooled): the new warnings are added after those, each text once.
        let before: Option<String> = self
            .conn
            .query_row("SELECT warnings_json FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()?;
        let mut all: Vec<String> =
            before.and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default();
        for w in warnings {
            if !all.contains(w) {
                all.push(w.clone());
            }
        }
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_unix = ?3, warnings_json = ?4 WHERE id = ?1",
            params![id, status.as_str(), now(), serde_json::to_string(&all).unwrap_or_default()],
        )?;
        Ok(())
    }

    /// Marks a run as running again (resume).
    pub fn reopen_run(&self, id: i64) -> Result<(), DbError> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_unix = NULL WHERE id = ?1",
            params![id, RunStatus::Running.as_str()],
        )?;
        Ok(())
    }

    /// Stores one finished cell repetition and its samples in one transaction.
    pub fn insert_cell(&mut self, run_id: i64, c: &CellRecord) -> Result<i64, DbError> {
        let tx = self.conn.transaction()?;
        let p = &c.params;
        let s = &c.stat;
        tx.execute(
            "INSERT INTO cells (run_id, cell_id, key, workload, workload_kind, policy, class, priority, nice, processes,
               rep, warmup, ordinal, status, message, started_unix, makespan_s,
               stat_user, stat_nice, stat_system, stat_idle, stat_iowait, stat_irq, stat_softirq, stat_ctxt, stat_intr, stat_forks,
               engine_user_s, engine_sys_s, engine_max_rss_kb, groups_json, iosched, io_json, rt_json, cpu_dma_latency_us, trace_json,
               knobs_json, knobs_in_force_json, spawn_s, stat_steal, load1, cpu_pressure_us)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38,
               ?39,?40,?41,?42)",
            params![
                run_id,
                p.cell_id,
                p.key,
                p.workload,
                p.workload_kind,
                p.policy,
                p.class,
                p.priority,
                p.nice,
                p.processes,
                c.rep,
                c.warmup,
                c.ordinal,
                c.status.as_str(),
                c.message,
                c.started_unix,
                c.makespan_s,
                s.user as i64,
                s.nice as i64,
                s.system as i64,
                s.idle as i64,
                s.iowait as i64,
                s.irq as i64,
                s.softirq as i64,
                s.ctxt as i64,
                s.interrupts as i64,
                s.forks as i64,
                c.engine_user_s,
                c.engine_sys_s,
                c.engine_max_rss_kb,
                serde_json::to_string(&p.groups).unwrap_or_else(|_| "[]".into()),
                p.iosched,
                c.io.as_ref().map(|io| serde_json::to_string(io).unwrap_or_default()),
                c.rt.as_ref().map(|rt| serde_json::to_string(rt).unwrap_or_default()),
                c.cpu_dma_latency_us,
                c.trace.as_ref().map(|t| serde_json::to_string(t).unwrap_or_default()),
                knobs_json(&p.knobs),
                knobs_json(&c.knobs),
                c.spawn_s,
                s.steal as i64,
                c.load.map(|l| l.load1),
                c.load.and_then(|l| l.cpu_pressure_us).map(|us| us as i64)
            ],
        )?;
        let row = tx.last_insert_rowid();
        if !c.throttling.is_empty() {
            tx.execute(
                "UPDATE cells SET throttling_json = ?1 WHERE id = ?2",
                params![serde_json::to_string(&c.throttling).unwrap_or_default(), row],
            )?;
        }
        if c.params.cpu_scheduler.is_some() || c.sched_ext.is_some() {
            tx.execute(
                "UPDATE cells SET cpu_scheduler = ?1, sched_ext_json = ?2 WHERE id = ?3",
                params![
                    c.params.cpu_scheduler,
                    c.sched_ext.as_ref().map(|s| serde_json::to_string(s).unwrap_or_default()),
                    row
                ],
            )?;
        }
        {
            let mut st = tx.prepare(&sample_insert())?;
            for x in &c.samples {
                let mut values = vec![Value::Integer(row), Value::Text(x.extra.to_stored())];
                values.extend(Sample::COLUMNS.iter().map(|col| to_sql((col.get)(x))));
                st.execute(params_from_iter(values))?;
            }
            let mut jt =
                tx.prepare("INSERT INTO jobs (cell_row, idx, jobs, data) VALUES (?1, ?2, ?3, ?4)")?;
            for (x, data) in c.samples.iter().zip(encoded_logs(&c.samples)) {
                if let (Some(log), Some(data)) = (&x.jobs, data) {
                    jt.execute(params![row, x.index, log.jobs.len() as i64, data])?;
                }
            }
        }
        if let Some(raw) = &c.raw_trace {
            insert_raw_trace(&tx, row, raw)?;
        }
        tx.commit()?;
        Ok(row)
    }

    /// All runs, newest first.
    pub fn runs(&self) -> Result<Vec<RunRow>, DbError> {
        let mut st = self.conn.prepare(&format!("{RUN_SELECT} ORDER BY r.id DESC"))?;
        let rows = st.query_map([], run_row)?;
        rows.collect()
    }

    /// One run by id.
    pub fn run(&self, id: i64) -> Result<Option<RunRow>, DbError> {
        self.conn
            .query_row(&format!("{RUN_SELECT} WHERE r.id = ?1"), params![id], run_row)
            .optional()
    }

    /// The newest run, optionally only of one mode.
    pub fn latest(&self, mode: Option<Mode>) -> Result<Option<RunRow>, DbError> {
        let id: Option<i64> = match mode {
            Some(m) => self.conn.query_row(
                "SELECT max(id) FROM runs WHERE mode = ?1",
                params![m.as_str()],
                |r| r.get(0),
            )?,
            None => self.conn.query_row("SELECT max(id) FROM runs", [], |r| r.get(0))?,
        };
        match id {
            Some(id) => self.run(id),
            None => Ok(None),
        }
    }

    /// The newest unfinished measured run of this spec text that is no shard, whatever its
    /// options (scale, repetitions): `--resume` takes them from it.
    pub fn resumable_by_hash(&self, spec_hash: &str) -> Result<Option<RunRow>, DbError> {
        self.resumable_in_mode(spec_hash, Mode::Measured)
    }

    /// [`Self::resumable_by_hash`] among the runs of `mode` (`simulate --resume`: sim runs).
    pub fn resumable_in_mode(
        &self,
        spec_hash: &str,
        mode: Mode,
    ) -> Result<Option<RunRow>, DbError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE spec_hash = ?1 AND status NOT IN (?2, ?3) AND mode = ?4 AND shard_count IS NULL
                 ORDER BY id DESC LIMIT 1",
                params![spec_hash, RunStatus::COMPLETE[0].as_str(), RunStatus::COMPLETE[1].as_str(), mode.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        match id {
            Some(id) => self.run(id),
            None => Ok(None),
        }
    }

    /// (failed, all) measured (not warm-up) cell repetitions of a run: failed ones have a
    /// status other than ok.
    pub fn failed_count(&self, run_id: i64) -> Result<(usize, usize), DbError> {
        self.conn.query_row(
            "SELECT COALESCE(SUM(status != 'ok'), 0), COUNT(*) FROM cells WHERE run_id = ?1 AND warmup = 0",
            params![run_id],
            |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize)),
        )
    }

    /// Stores spooled records of a run, each in its own transaction, skipping those already
    /// stored (an import interrupted half-way is simply run again); returns how many were new.
    pub fn import(&mut self, run_id: i64, records: &[CellRecord]) -> Result<usize, DbError> {
        let done: std::collections::HashSet<(u32, u32, bool)> =
            self.done_steps(run_id)?.into_iter().collect();
        let mut n = 0;
        for r in records.iter().filter(|r| !done.contains(&(r.params.cell_id, r.rep, r.warmup))) {
            self.insert_cell(run_id, r)?;
            n += 1;
        }
        Ok(n)
    }

    /// (cell_id, rep, warmup) of every stored cell repetition of a run.
    pub fn done_steps(&self, run_id: i64) -> Result<Vec<(u32, u32, bool)>, DbError> {
        let mut st =
            self.conn.prepare("SELECT cell_id, rep, warmup FROM cells WHERE run_id = ?1")?;
        let rows = st.query_map(params![run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    }

    /// The per-job records of one stored cell repetition, by worker index (periodic tasks
    /// only; other workers have none).
    pub fn job_logs(
        &self,
        run_id: i64,
        cell_id: u32,
        rep: u32,
        warmup: bool,
    ) -> Result<Vec<(u32, JobLog)>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT j.idx, j.data FROM jobs j JOIN cells c ON c.id = j.cell_row
             WHERE c.run_id = ?1 AND c.cell_id = ?2 AND c.rep = ?3 AND c.warmup = ?4 ORDER BY j.idx",
        )?;
        let rows = st.query_map(params![run_id, cell_id, rep, warmup], |r| {
            Ok((r.get::<_, u32>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (idx, bytes) = row?;
            let log = JobLog::decode(&bytes).map_err(|e| {
                DbError::FromSqlConversionFailure(3, rusqlite::types::Type::Blob, Box::new(e))
            })?;
            out.push((idx, log));
        }
        Ok(out)
    }

    /// The kept kernel capture of one stored cell repetition (None: it was not traced, or
    /// was stored by a version that did not keep captures).
    pub fn raw_trace(
        &self,
        run_id: i64,
        cell_id: u32,
        rep: u32,
        warmup: bool,
    ) -> Result<Option<RawTrace>, DbError> {
        let head = self
            .conn
            .query_row(
                "SELECT t.cell_row, t.format, t.stored_bytes, t.meta_json FROM traces t JOIN cells c ON c.id = t.cell_row
                 WHERE c.run_id = ?1 AND c.cell_id = ?2 AND c.rep = ?3 AND c.warmup = ?4",
                params![run_id, cell_id, rep, warmup],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get::<_, String>(3)?)),
            )
            .optional()?;
        let Some((row, format, stored, meta)) = head else { return Ok(None) };
        let bad = |i: usize, t: rusqlite::types::Type, why: String| {
            DbError::FromSqlConversionFailure(i, t, why.into())
        };
        if format != TRACE_FORMAT {
            return Err(bad(
                1,
                rusqlite::types::Type::Text,
                format!("kept capture in format {format:?}; this schedlab reads {TRACE_FORMAT:?}"),
            ));
        }
        let meta = serde_json::from_str(&meta)
            .map_err(|e| bad(3, rusqlite::types::Type::Text, e.to_string()))?;
        let mut zstd = Vec::with_capacity(stored as usize);
        let mut st =
            self.conn.prepare("SELECT data FROM trace_parts WHERE cell_row = ?1 ORDER BY part")?;
        let mut rows = st.query(params![row])?;
        while let Some(r) = rows.next()? {
            zstd.extend_from_slice(r.get_ref(0)?.as_blob()?);
        }
        if zstd.len() as i64 != stored {
            return Err(bad(
                0,
                rusqlite::types::Type::Blob,
                format!("kept capture has {} of its {stored} bytes", zstd.len()),
            ));
        }
        Ok(Some(RawTrace { meta, zstd }))
    }

    /// Every kept capture of a run, in execution order.
    pub fn raw_traces(&self, run_id: i64) -> Result<Vec<KeptTrace>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT c.cell_id, c.rep, c.warmup, t.raw_bytes, t.stored_bytes FROM traces t JOIN cells c ON c.id = t.cell_row
             WHERE c.run_id = ?1 ORDER BY c.ordinal",
        )?;
        let rows = st.query_map(params![run_id], |r| {
            Ok(KeptTrace {
                cell_id: r.get(0)?,
                rep: r.get(1)?,
                warmup: r.get(2)?,
                raw_bytes: r.get::<_, i64>(3)? as u64,
                stored_bytes: r.get::<_, i64>(4)? as u64,
            })
        })?;
        rows.collect()
    }

    /// Fills the `jobs` of the samples of `records` (a run's cells, as [`Store::cells`]
    /// returns them) from the `jobs` table; samples without records keep None.
    pub fn attach_job_logs(&self, run_id: i64, records: &mut [CellRecord]) -> Result<(), DbError> {
        for r in records.iter_mut() {
            for (idx, log) in self.job_logs(run_id, r.params.cell_id, r.rep, r.warmup)? {
                if let Some(s) = r.samples.iter_mut().find(|s| s.index == idx) {
                    s.jobs = Some(log);
                }
            }
        }
        Ok(())
    }

    /// Every stored cell repetition of a run with its samples, in execution order.
    pub fn cells(&self, run_id: i64) -> Result<Vec<CellRecord>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT id, cell_id, key, workload, workload_kind, policy, class, priority, nice, processes, rep, warmup, ordinal, status, message,
                    started_unix, makespan_s, stat_user, stat_nice, stat_system, stat_idle, stat_iowait, stat_irq, stat_softirq, stat_ctxt,
                    stat_intr, stat_forks, engine_user_s, engine_sys_s, engine_max_rss_kb, groups_json, iosched, io_json, rt_json,
                    cpu_dma_latency_us, trace_json, knobs_json, knobs_in_force_json, spawn_s, stat_steal,
                    load1, cpu_pressure_us
             FROM cells WHERE run_id = ?1 ORDER BY ordinal, id",
        )?;
        let mut sst = self.conn.prepare(&sample_select())?;
        let heads: Vec<(i64, CellRecord)> = st
            .query_map(params![run_id], |r| {
                let g = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)? as u64) };
                Ok((
                    r.get(0)?,
                    CellRecord {
                        params: CellParams {
                            cell_id: r.get(1)?,
                            key: r.get(2)?,
                            workload: r.get(3)?,
                            workload_kind: r.get(4)?,
                            policy: r.get(5)?,
                            class: r.get(6)?,
                            priority: r.get(7)?,
                            nice: r.get(8)?,
                            processes: r.get(9)?,
                            groups: serde_json::from_str(&r.get::<_, String>(30)?)
                                .unwrap_or_default(),
                            iosched: r.get(31)?,
                            knobs: knobs_of(r.get(36)?),
                            repetitions: None,
                            cpu_scheduler: None,
                        },
                        rep: r.get(10)?,
                        warmup: r.get(11)?,
                        ordinal: r.get(12)?,
                        status: CellStatus::parse(&r.get::<_, String>(13)?)
                            .unwrap_or(CellStatus::Failed),
                        message: r.get(14)?,
                        started_unix: r.get(15)?,
                        makespan_s: r.get(16)?,
                        stat: StatDelta {
                            user: g(17)?,
                            nice: g(18)?,
                            system: g(19)?,
                            idle: g(20)?,
                            iowait: g(21)?,
                            irq: g(22)?,
                            softirq: g(23)?,
                            ctxt: g(24)?,
                            interrupts: g(25)?,
                            forks: g(26)?,
                            steal: g(39)?,
                        },
                        load: match (r.get::<_, Option<f64>>(40)?, r.get::<_, Option<i64>>(41)?) {
                            (Some(load1), us) => {
                                Some(MachineLoad { load1, cpu_pressure_us: us.map(|us| us as u64) })
                            }
                            (None, _) => None,
                        },
                        engine_user_s: r.get(27)?,
                        engine_sys_s: r.get(28)?,
                        engine_max_rss_kb: r.get(29)?,
                        samples: Vec::new(),
                        io: r
                            .get::<_, Option<String>>(32)?
                            .and_then(|j| serde_json::from_str(&j).ok()),
                        rt: r
                            .get::<_, Option<String>>(33)?
                            .and_then(|j| serde_json::from_str(&j).ok()),
                        cpu_dma_latency_us: r.get(34)?,
                        trace: r
                            .get::<_, Option<String>>(35)?
                            .and_then(|j| serde_json::from_str(&j).ok()),
                        knobs: knobs_of(r.get(37)?),
                        raw_trace: None,
                        sched_ext: None,
                        throttling: Vec::new(),
                        spawn_s: r.get(38)?,
                    },
                ))
            })?
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(heads.len());
        let mut scx = self.conn.prepare(
            "SELECT cpu_scheduler, sched_ext_json, throttling_json FROM cells WHERE id = ?1",
        )?;
        for (row, mut rec) in heads {
            (rec.params.cpu_scheduler, rec.sched_ext, rec.throttling) =
                scx.query_row(params![row], |r| {
                    let json = |i| r.get::<_, Option<String>>(i);
                    Ok((
                        json(0)?,
                        json(1)?.and_then(|j| serde_json::from_str(&j).ok()),
                        json(2)?.and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default(),
                    ))
                })?;
            rec.samples = sst
                .query_map(params![row], |r| {
                    let extra: String = r.get(0)?;
                    let mut x = Sample { extra: Extra::from_stored(&extra), ..Default::default() };
                    for (i, col) in Sample::COLUMNS.iter().enumerate() {
                        let v = from_sql(col.kind, r.get_ref(i + 1)?)
                            .ok_or_else(|| wrong_value(i + 1, col.db, r))?;
                        if !(col.set)(&mut x, v) {
                            return Err(wrong_value(i + 1, col.db, r));
                        }
                    }
                    Ok(x)
                })?
                .collect::<Result<_, _>>()?;
            out.push(rec);
        }
        self.attach_repetition_outcomes(run_id, &mut out)?;
        Ok(out)
    }
}

/// The INSERT of one sample row: cell_row, extra_json, then [`Sample::COLUMNS`].
/// How a kept capture is stored: the trace crate's SLTRACE1 file in one zstd frame.
pub const TRACE_FORMAT: &str = "sltrace1+zstd";

/// The largest part a kept capture is split into, bytes (small in tests, to have parts).
const TRACE_PART: usize = if cfg!(test) { 1000 } else { 64 << 20 };

fn insert_raw_trace(tx: &rusqlite::Transaction, row: i64, raw: &RawTrace) -> Result<(), DbError> {
    let meta =
        serde_json::to_string(&raw.meta).map_err(|e| DbError::ToSqlConversionFailure(e.into()))?;
    tx.execute(
        "INSERT INTO traces (cell_row, format, raw_bytes, stored_bytes, meta_json) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![row, TRACE_FORMAT, raw.meta.raw_bytes as i64, raw.zstd.len() as i64, meta],
    )?;
    let mut st =
        tx.prepare("INSERT INTO trace_parts (cell_row, part, data) VALUES (?1, ?2, ?3)")?;
    for (i, part) in raw.zstd.chunks(TRACE_PART).enumerate() {
        st.execute(params![row, i as i64, part])?;
    }
    Ok(())
}

fn sample_insert() -> String {
    let cols: Vec<&str> = Sample::COLUMNS.iter().map(|c| c.db).collect();
    let marks: Vec<String> = (1..=cols.len() + 2).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO samples (cell_row, extra_json, {}) VALUES ({})",
        cols.join(", "),
        marks.join(",")
    )
}

/// The SELECT of a cell's sample rows: extra_json, then [`Sample::COLUMNS`].
fn sample_select() -> String {
    let cols: Vec<&str> = Sample::COLUMNS.iter().map(|c| c.db).collect();
    format!("SELECT extra_json, {} FROM samples WHERE cell_row = ?1 ORDER BY idx", cols.join(", "))
}

fn to_sql(v: ColumnValue) -> Value {
    match v {
        ColumnValue::Int(Some(i)) => Value::Integer(i),
        ColumnValue::Int(None) => Value::Null,
        ColumnValue::Real(Some(x)) => Value::Real(x),
        ColumnValue::Real(None) => Value::Null,
        ColumnValue::Bool(b) => Value::Integer(b.into()),
        ColumnValue::Text(s) => Value::Text(s),
        ColumnValue::Cpus(c) => {
            Value::Text(serde_json::to_string(&c).unwrap_or_else(|_| "[]".into()))
        }
    }
}

/// A stored value as a column of `kind`; None if it cannot be one.
fn from_sql(kind: Kind, v: ValueRef) -> Option<ColumnValue> {
    Some(match (kind, v) {
        (Kind::Int, ValueRef::Integer(i)) => ColumnValue::Int(Some(i)),
        (Kind::Int, ValueRef::Null) => ColumnValue::Int(None),
        (Kind::Real, ValueRef::Real(x)) => ColumnValue::Real(Some(x)),
        (Kind::Real, ValueRef::Integer(i)) => ColumnValue::Real(Some(i as f64)),
        (Kind::Real, ValueRef::Null) => ColumnValue::Real(None),
        (Kind::Bool, ValueRef::Integer(i)) => ColumnValue::Bool(i != 0),
        (Kind::Text, ValueRef::Text(t)) => {
            ColumnValue::Text(String::from_utf8_lossy(t).into_owned())
        }
        (Kind::Cpus, ValueRef::Text(t)) => {
            ColumnValue::Cpus(serde_json::from_slice(t).unwrap_or_default())
        }
        _ => return None,
    })
}

fn wrong_value(i: usize, db: &str, r: &rusqlite::Row) -> DbError {
    let ty = r.get_ref(i).map(|v| v.data_type()).unwrap_or(rusqlite::types::Type::Null);
    DbError::InvalidColumnType(i, format!("samples.{db}"), ty)
}

pub(crate) const RUN_SELECT: &str =
    "SELECT r.id, r.name, r.mode, r.status, r.started_unix, r.finished_unix, r.spec_path, r.spec_text, r.spec_hash, r.plan_json,
    r.scale, r.env_json, r.command_line, r.warnings_json, (SELECT count(*) FROM cells c WHERE c.run_id = r.id), r.knobs_before_json,
    r.uuid, r.campaign, r.shard_index, r.shard_count
    FROM runs r";

pub(crate) fn run_row(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
    let env: String = r.get(11)?;
    let warnings: String = r.get(13)?;
    let id: i64 = r.get(0)?;
    // Every schedlab since the column was added writes it; NULL is another program's doing.
    let uuid = r.get::<_, Option<String>>(16)?.ok_or_else(|| {
        schema::plain_error(format!(
            "run {id} has no uuid (NULL), which schedlab always writes: the database was changed by another program"
        ))
    })?;
    Ok(RunRow {
        id,
        name: r.get(1)?,
        mode: r.get(2)?,
        status: RunStatus::parse(&r.get::<_, String>(3)?),
        started_unix: r.get(4)?,
        finished_unix: r.get(5)?,
        spec_path: r.get(6)?,
        spec_text: r.get(7)?,
        spec_hash: r.get(8)?,
        plan_json: r.get(9)?,
        scale: r.get(10)?,
        env: serde_json::from_str(&env).unwrap_or_default(),
        command_line: r.get(12)?,
        warnings: serde_json::from_str(&warnings).unwrap_or_default(),
        cells_done: r.get(14)?,
        knobs_before: knobs_of(r.get(15)?),
        identity: Identity {
            uuid,
            campaign: r.get(17)?,
            shard: match (r.get::<_, Option<u32>>(18)?, r.get::<_, Option<u32>>(19)?) {
                (Some(index), Some(count)) => Some(Shard { index, count }),
                _ => None,
            },
        },
    })
}

/// Knob values as stored (NULL when there are none).
fn knobs_json(k: &BTreeMap<String, String>) -> Option<String> {
    (!k.is_empty()).then(|| serde_json::to_string(k).unwrap_or_default())
}

fn knobs_of(stored: Option<String>) -> BTreeMap<String, String> {
    stored.and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default()
}

/// Each sample's per-job records encoded, in sample order. A simulated cell can hold
/// hundreds of thousands of jobs; their encoding is split between two threads when the
/// machine has two CPUs.
fn encoded_logs(samples: &[Sample]) -> Vec<Option<Vec<u8>>> {
    const WORTH_A_THREAD: usize = 20_000;
    let jobs = |x: &Sample| x.jobs.as_ref().map_or(0, |l| l.jobs.len());
    let total: usize = samples.iter().map(jobs).sum();
    let encode =
        |xs: &[Sample]| xs.iter().map(|x| x.jobs.as_ref().map(|l| l.encode())).collect::<Vec<_>>();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if total < WORTH_A_THREAD || cpus < 2 {
        return encode(samples);
    }
    // The first part up to about half of the jobs, the rest beside it.
    let mut sum = 0;
    let split = samples.iter().position(|x| {
        sum += jobs(x);
        2 * sum >= total
    });
    let split = split.map_or(samples.len(), |i| i + 1).min(samples.len());
    let (first, rest) = samples.split_at(split);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| encode(rest));
        let mut out = encode(first);
        out.extend(other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        out
    })
}

#[cfg(test)]
mod tests;

/// Whether SQLite refused for a lock another connection holds.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
