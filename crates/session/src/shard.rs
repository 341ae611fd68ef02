//! `run --shard K/N`: which campaign a shard belongs to, and which part of the plan it runs.

use crate::Error;
use schedlab_spec::{Plan, ShardBy, ShardSpec, Step};
use schedlab_store::Shard;
use sha2::{Digest, Sha256};

/// The campaign id shards agree on without talking: from the spec text, the scale, the
/// repetitions and the number of shards (16 hex digits of their SHA-256).
pub fn campaign_id(spec_hash: &str, plan: &Plan, count: u32) -> String {
    let text = format!(
        "schedlab campaign 1\n{spec_hash}\n{}\n{}\n{count}\n",
        plan.scale, plan.repetitions
    );
    Sha256::digest(text.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A campaign id given with `--campaign`: letters, digits, `.`, `_` and `-`, at most 64.
pub fn check_campaign(id: &str) -> Result<(), Error> {
    if id.is_empty()
        || id.len() > 64
        || !id.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(Error::Refused(format!(
            "--campaign \"{id}\": use 1 to 64 letters, digits, '.', '_' or '-'"
        )));
    }
    if id.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::Refused(format!(
            "--campaign \"{id}\": all digits would read as a run id; add a letter"
        )));
    }
    Ok(())
}

/// The store's form of a shard.
pub fn stored(s: ShardSpec) -> Shard {
    Shard { index: s.index, count: s.count }
}

/// The part of a plan one run measures: its steps, and the cells whose adaptive
/// repetitions it decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The steps, in the plan's order.
    pub steps: Vec<Step>,
    /// The cells (by index) it owns.
    pub cells: Vec<u32>,
}

/// The steps and cells of `plan` that `shard` runs (all of them without a shard). Adaptive
/// repetitions are decided per cell, so a shard of an adaptive run owns whole cells.
pub fn part(plan: &Plan, shard: Option<ShardSpec>) -> Part {
    let by = if plan.adaptive.is_some() { ShardBy::Cell } else { ShardBy::Step };
    match shard {
        Some(shard) => {
            let map = plan.shard_map(shard.count, by);
            Part {
                steps: plan.shard_steps(shard, by),
                cells: plan
                    .cells
                    .iter()
                    .map(|c| c.index)
                    .filter(|&c| map.owns_cell(shard.index, c))
                    .collect(),
            }
        }
        None => Part { steps: plan.steps(), cells: plan.cells.iter().map(|c| c.index).collect() },
    }
}
