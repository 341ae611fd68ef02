//! Copying runs from other databases (a campaign's shards) into this one, once each by UUID.

use crate::{DbError, RunRow, RunStatus, Shard, Store};
use rusqlite::params;
use schedlab_model::AdaptiveTarget;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every table whose rows belong to a run, parents first: `merge` copies each of them. A
/// table added to the schema must be listed here (a test checks the schema against it).
pub const RUN_TABLES: &[&str] = &[
    "runs",
    "cells",
    "samples",
    "jobs",
    "traces",
    "trace_parts",
    "cell_repetitions",
    "task_sets",
    "calibrations",
    "floors",
];

/// One run copied by a merge.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedRun {
    /// The database it came from.
    pub source: PathBuf,
    /// Its id there.
    pub source_id: i64,
    /// Its id here.
    pub id: i64,
    /// Its UUID.
    pub uuid: String,
    /// Its campaign and shard, if any.
    pub campaign: Option<(String, Shard)>,
    /// Cell repetitions copied.
    pub cells: i64,
}

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergeReport {
    /// Runs copied.
    pub merged: Vec<MergedRun>,
    /// Runs already here (same UUID): (source, id there, id here).
    pub present: Vec<(PathBuf, i64, i64)>,
    /// Runs here brought up to date from a source that has since gone further (a run merged
    /// while interrupted, resumed since): copied again whole, under the same id here.
    pub completed: Vec<MergedRun>,
    /// Runs not merged, with why: (source, id there, why). A run still `running` is being
    /// written (or its writer was killed); a run here and there with cells the other lacks.
    pub skipped: Vec<(PathBuf, i64, String)>,
    /// Rows of a source that belong to no cell of it, so no run: (source, table, rows).
    pub orphans: Vec<(PathBuf, String, i64)>,
}

/// Why a merge did nothing.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The inputs disagree (checked before anything was written).
    #[error("{0}")]
    Refused(String),
    /// A database failed.
    #[error("{path}: {err}")]
    Db {
        /// The database.
        path: PathBuf,
        /// Its error.
        err: DbError,
    },
}

fn db(path: &Path) -> impl Fn(DbError) -> MergeError + '_ {
    move |err| MergeError::Db { path: path.to_path_buf(), err }
}

/// What must agree between two shards of one campaign.
#[derive(Debug, Clone, PartialEq)]
struct Terms {
    spec_hash: String,
    scale: f64,
    repetitions: Option<u64>,
    adaptive: Option<AdaptiveTarget>,
    count: u32,
}

/// What a stored plan says about repetitions (the plan itself is `schedlab-plan`'s, above
/// the store).
#[derive(Debug, Default, serde::Deserialize)]
struct PlanRepetitions {
    #[serde(default)]
    repetitions: Option<u64>,
    #[serde(default)]
    adaptive: Option<AdaptiveTarget>,
}

fn terms(r: &RunRow) -> Terms {
    let p: PlanRepetitions = serde_json::from_str(&r.plan_json).unwrap_or_default();
    Terms {
        spec_hash: r.spec_hash.clone(),
        scale: r.scale,
        repetitions: p.repetitions,
        adaptive: p.adaptive,
        count: r.identity.shard.map(|s| s.count).unwrap_or(0),
    }
}

impl Store {
    /// Copies every run of each `sources` database that is not here yet (by UUID) with all
    /// its rows, one transaction per source. Refuses, before writing anything, shards of one
    /// campaign whose spec, scale, repetitions or shard count differ, and a shard present
    /// twice under different UUIDs. Sources are brought to this schema version first.
    pub fn merge(&mut self, sources: &[PathBuf]) -> Result<MergeReport, MergeError> {
        let here = Path::new("<output>");
        // Shards per campaign: (terms, shard index, uuid, where).
        let mut seen: BTreeMap<String, Vec<(Terms, u32, String, String)>> = BTreeMap::new();
        for r in self.runs().map_err(db(here))? {
            if let (Some(c), Some(s)) = (&r.identity.campaign, r.identity.shard) {
                seen.entry(c.clone()).or_default().push((
                    terms(&r),
                    s.index,
                    r.identity.uuid.clone(),
                    format!("run {} here", r.id),
                ));
            }
        }
        for src in sources {
            let runs = Store::open(src).and_then(|s| s.runs()).map_err(db(src))?;
            for r in runs {
                let (Some(c), Some(s)) = (&r.identity.campaign, r.identity.shard) else { continue };
                let list = seen.entry(c.clone()).or_default();
                let t = terms(&r);
                let at = format!("run {} of {}", r.id, src.display());
                for (t0, i0, u0, at0) in list.iter() {
                    if *u0 == r.identity.uuid {
                        continue;
                    }
                    if *t0 != t {
                        return Err(MergeError::Refused(format!(
                            "campaign {c}: {at} and {at0} differ in {}; shards of one campaign must run the same spec at the same scale, repetitions and shard count",
                            differing(t0, &t)
                        )));
                    }
                    if *i0 == s.index {
                        return Err(MergeError::Refused(format!(
                            "campaign {c}: shard {s} is both {at} and {at0} (different runs); merge one of them, or give the other run its own campaign with `run --campaign ID`"
                        )));
                    }
                }
                list.push((t, s.index, r.identity.uuid.clone(), at));
            }
        }
        let mut report = MergeReport::default();
        for src in sources {
            self.merge_one(src, &mut report).map_err(db(src))?;
        }
        Ok(report)
    }

    fn merge_one(&mut self, src: &Path, report: &mut MergeReport) -> Result<(), DbError> {
        self.conn.execute("ATTACH DATABASE ?1 AS src", params![src.display().to_string()])?;
        let result = self.copy_attached(src, report);
        let detached = self.conn.execute("DETACH DATABASE src", []);
        result?;
        detached?;
        Ok(())
    }

    fn copy_attached(&mut self, src: &Path, report: &mut MergeReport) -> Result<(), DbError> {
        let cols: Vec<(&str, Vec<String>)> = RUN_TABLES
            .iter()
            .map(|t| Ok((*t, columns(&self.conn, t)?)))
            .collect::<Result<_, DbError>>()?;
        let tx = self.conn.transaction()?;
        tx.execute("CREATE TEMP TABLE IF NOT EXISTS merge_rows (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)", [])?;
        for (table, cs) in &cols {
            if cs.iter().any(|c| c == "cell_row") {
                let n: i64 =
                    tx.query_row(&format!("SELECT count(*) FROM src.{table} WHERE cell_row NOT IN (SELECT id FROM src.cells)"), [], |r| {
                        r.get(0)
                    })?;
                if n > 0 {
                    report.orphans.push((src.to_path_buf(), table.to_string(), n));
                }
            }
        }
        let incoming: Vec<(i64, String, String)> = {
            let mut st = tx.prepare("SELECT id, uuid, status FROM src.runs ORDER BY id")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        for (old, uuid, status) in incoming {
            if RunStatus::parse(&status) == RunStatus::Running {
                let why = "it is still running (being written, or its writer was killed: `schedlab run --resume` finishes it); \
                           merge again once it has ended";
                report.skipped.push((src.to_path_buf(), old, why.into()));
                continue;
            }
            let have: Option<i64> = rusqlite::OptionalExtension::optional(tx.query_row(
                "SELECT id FROM main.runs WHERE uuid = ?1",
                params![uuid],
                |r| r.get(0),
            ))?;
            if let Some(id) = have {
                match newer_there(&tx, old, id, &status)? {
                    Newer::No => report.present.push((src.to_path_buf(), old, id)),
                    Newer::Diverged(why) => report.skipped.push((src.to_path_buf(), old, why)),
                    Newer::Yes => {
                        // Copied again whole under its id here: its rows there are a superset.
                        tx.execute("DELETE FROM main.runs WHERE id = ?1", params![id])?;
                        let run = copy_run(&tx, &cols, src, old, Some(id), uuid)?;
                        report.completed.push(run);
                    }
                }
                continue;
            }
            let run = copy_run(&tx, &cols, src, old, None, uuid)?;
            report.merged.push(run);
        }
        tx.commit()
    }
}

/// Whether a source's copy of a run that is here has gone further since.
enum Newer {
    /// Nothing there that is not here.
    No,
    /// There has cells not here, here none not there, or another status.
    Yes,
    /// Each has cells the other lacks: two different continuations.
    Diverged(String),
}

fn newer_there(
    tx: &rusqlite::Transaction,
    old: i64,
    id: i64,
    status: &str,
) -> Result<Newer, DbError> {
    let missing = |from: &str, to: &str, a: i64, b: i64| -> Result<i64, DbError> {
        tx.query_row(
            &format!(
                "SELECT count(*) FROM {from}.cells s WHERE s.run_id = ?1 AND NOT EXISTS
                   (SELECT 1 FROM {to}.cells m WHERE m.run_id = ?2 AND m.cell_id = s.cell_id AND m.rep = s.rep AND m.warmup = s.warmup)"
            ),
            params![a, b],
            |r| r.get(0),
        )
    };
    let (not_here, not_there) =
        (missing("src", "main", old, id)?, missing("main", "src", id, old)?);
    let status_here: String =
        tx.query_row("SELECT status FROM main.runs WHERE id = ?1", params![id], |r| r.get(0))?;
    Ok(match (not_here, not_there) {
        (0, _) if status_here == status => Newer::No,
        (_, 0) => Newer::Yes,
        (0, _) => Newer::No,
        (a, b) => Newer::Diverged(format!(
            "it is here as run {id} ({b} cell repetitions not there) and has {a} not here: two continuations of one run; nothing merged of it"
        )),
    })
}

/// Copies run `old` of the attached source with every row it owns, as run `id` here (or
/// a new id); returns what was copied.
fn copy_run(
    tx: &rusqlite::Transaction,
    cols: &[(&str, Vec<String>)],
    src: &Path,
    old: i64,
    id: Option<i64>,
    uuid: String,
) -> Result<MergedRun, DbError> {
    let mut new = 0;
    for (table, cs) in cols {
        let keep = |skip: &[&str]| {
            cs.iter()
                .filter(|c| !skip.contains(&c.as_str()))
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        };
        if *table == "runs" {
            let c = keep(&["id"]);
            tx.execute(
                &format!(
                    "INSERT INTO main.runs (id, {c}) SELECT ?2, {c} FROM src.runs WHERE id = ?1"
                ),
                params![old, id],
            )?;
            new = tx.last_insert_rowid();
        } else if *table == "cells" {
            let c = keep(&["id", "run_id"]);
            tx.execute(
                &format!("INSERT INTO main.cells (run_id, {c}) SELECT ?2, {c} FROM src.cells WHERE run_id = ?1 ORDER BY id"),
                params![old, new],
            )?;
            tx.execute("DELETE FROM temp.merge_rows", [])?;
            tx.execute(
                "INSERT INTO temp.merge_rows (old, new) SELECT s.id, m.id FROM src.cells s JOIN main.cells m
                   ON m.run_id = ?2 AND m.cell_id = s.cell_id AND m.rep = s.rep AND m.warmup = s.warmup
                 WHERE s.run_id = ?1",
                params![old, new],
            )?;
        } else if *table != "cells" && cs.iter().any(|c| c == "run_id") {
            let c = keep(&["run_id"]);
            tx.execute(
                &format!("INSERT INTO main.{table} (run_id, {c}) SELECT ?2, {c} FROM src.{table} WHERE run_id = ?1 ORDER BY rowid"),
                params![old, new],
            )?;
        } else if cs.iter().any(|c| c == "cell_row") {
            let c = keep(&["cell_row"]);
            tx.execute(
                &format!(
                    "INSERT INTO main.{table} (cell_row, {c}) SELECT m.new, {c} FROM src.{table} t JOIN temp.merge_rows m ON m.old = t.cell_row ORDER BY t.rowid"
                ),
                [],
            )?;
        } else {
            return Err(DbError::InvalidParameterName(format!(
                "table {table} belongs to a run but has neither run_id nor cell_row: merge cannot copy it"
            )));
        }
    }
    let cells: i64 =
        tx.query_row("SELECT count(*) FROM main.cells WHERE run_id = ?1", params![new], |r| {
            r.get(0)
        })?;
    let row = tx.query_row(
        &format!("{} WHERE r.id = ?1", crate::RUN_SELECT),
        params![new],
        crate::run_row,
    )?;
    Ok(MergedRun {
        source: src.to_path_buf(),
        source_id: old,
        id: new,
        uuid,
        campaign: row.identity.campaign.clone().zip(row.identity.shard),
        cells,
    })
}

fn differing(a: &Terms, b: &Terms) -> String {
    let mut out = Vec::new();
    if a.spec_hash != b.spec_hash {
        out.push("spec text (its SHA-256)".to_string());
    }
    if a.scale != b.scale {
        out.push(format!("scale ({} vs {})", a.scale, b.scale));
    }
    if a.repetitions != b.repetitions {
        out.push(format!("repetitions ({:?} vs {:?})", a.repetitions, b.repetitions));
    }
    if a.adaptive != b.adaptive {
        out.push(format!("adaptive repetitions ({:?} vs {:?})", a.adaptive, b.adaptive));
    }
    if a.count != b.count {
        out.push(format!("shard count ({} vs {})", a.count, b.count));
    }
    out.join(", ")
}

/// The columns of one of this database's tables, in order.
fn columns(conn: &rusqlite::Connection, table: &str) -> Result<Vec<String>, DbError> {
    let mut st = conn.prepare(&format!("PRAGMA main.table_info({table})"))?;
    let rows = st.query_map([], |r| r.get::<_, String>(1))?;
    rows.collect()
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
