//! `run --shard K/N`: which campaign a shard belongs to, and which stored run it resumes.

use super::common::bad_input;
use schedlab_spec::{Plan, ShardSpec};
use schedlab_store::{RunRow, Shard, Store};
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
pub fn check_campaign(id: &str) -> anyhow::Result<()> {
    if id.is_empty()
        || id.len() > 64
        || !id.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(bad_input(format!(
            "--campaign \"{id}\": use 1 to 64 letters, digits, '.', '_' or '-'"
        )));
    }
    if id.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad_input(format!(
            "--campaign \"{id}\": all digits would read as a run id; add a letter"
        )));
    }
    Ok(())
}

/// The store's form of a shard.
pub fn stored(s: ShardSpec) -> Shard {
    Shard { index: s.index, count: s.count }
}

/// The unfinished run of this shard that `--resume` continues.
pub fn resumable(
    store: &Store,
    spec_hash: &str,
    shard: ShardSpec,
    campaign: Option<&str>,
) -> anyhow::Result<RunRow> {
    store.resumable_shard(spec_hash, stored(shard), campaign)?.ok_or_else(|| {
        bad_input(format!(
            "nothing to resume: no unfinished run of shard {shard} of this experiment file{}",
            campaign.map(|c| format!(" in campaign {c}")).unwrap_or_default()
        ))
    })
}
