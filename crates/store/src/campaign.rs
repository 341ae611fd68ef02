//! Runs as parts of a campaign: a UUID per run, and for a shard its campaign and place.

use crate::{DbError, RunRow, RunStatus, Store, RUN_SELECT};
use rusqlite::{params, OptionalExtension};

/// Which of how many parts of a campaign's plan a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u32,
    /// Shards in the campaign.
    pub count: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A run's identity: its UUID (unique across machines), and its campaign and shard if it
/// is part of one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The run's UUID; merging copies a run once by it.
    pub uuid: String,
    /// The campaign's id, when the run is one of its shards.
    pub campaign: Option<String>,
    /// Which shard.
    pub shard: Option<Shard>,
}

impl Store {
    /// Makes run `id` shard `shard` of `campaign`.
    pub fn set_campaign(&self, id: i64, campaign: &str, shard: Shard) -> Result<(), DbError> {
        self.conn.execute(
            "UPDATE runs SET campaign = ?2, shard_index = ?3, shard_count = ?4 WHERE id = ?1",
            params![id, campaign, shard.index, shard.count],
        )?;
        Ok(())
    }

    /// The run with this UUID.
    pub fn run_by_uuid(&self, uuid: &str) -> Result<Option<RunRow>, DbError> {
        self.conn
            .query_row(&format!("{RUN_SELECT} WHERE r.uuid = ?1"), params![uuid], crate::run_row)
            .optional()
    }

    /// Every run of a campaign, by shard then id.
    pub fn campaign_runs(&self, campaign: &str) -> Result<Vec<RunRow>, DbError> {
        let mut st = self
            .conn
            .prepare(&format!("{RUN_SELECT} WHERE r.campaign = ?1 ORDER BY r.shard_index, r.id"))?;
        let rows = st.query_map(params![campaign], crate::run_row)?;
        rows.collect()
    }

    /// The campaign ids that start with `prefix`, sorted.
    pub fn campaigns_like(&self, prefix: &str) -> Result<Vec<String>, DbError> {
        let mut st = self.conn.prepare(
            "SELECT DISTINCT campaign FROM runs WHERE campaign IS NOT NULL AND substr(campaign, 1, length(?1)) = ?1 ORDER BY campaign",
        )?;
        let rows = st.query_map(params![prefix], |r| r.get(0))?;
        rows.collect()
    }

    /// The newest unfinished measured run of this spec text that is shard `shard` (of its
    /// campaign `campaign`, when given): what `run --shard K/N --resume` continues.
    pub fn resumable_shard(
        &self,
        spec_hash: &str,
        shard: Shard,
        campaign: Option<&str>,
    ) -> Result<Option<RunRow>, DbError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE spec_hash = ?1 AND shard_index = ?2 AND shard_count = ?3 AND (?4 IS NULL OR campaign = ?4)
                   AND status NOT IN (?5, ?6) AND mode = 'measured' ORDER BY id DESC LIMIT 1",
                params![spec_hash, shard.index, shard.count, campaign, RunStatus::COMPLETE[0].as_str(), RunStatus::COMPLETE[1].as_str()],
                |r| r.get(0),
            )
            .optional()?;
        match id {
            Some(id) => self.run(id),
            None => Ok(None),
        }
    }
}
