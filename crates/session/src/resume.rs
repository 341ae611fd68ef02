//! `--resume`: the unfinished run of the same spec text a run or simulation continues, its
//! stored plan, the records its spool kept, and the steps it has left.

use crate::{Error, Observer, Repetitions};
use schedlab_model::Mode;
use schedlab_spec::{Plan, ShardSpec, Step};
use schedlab_store::{RunRow, Store};
use std::collections::HashSet;
use std::path::Path;

/// (cell, repetition, warm-up) of the cell repetitions a run has stored.
pub type DoneSteps = HashSet<(u32, u32, bool)>;

/// Which unfinished run to look for.
#[derive(Debug, Clone, Copy)]
pub enum Which<'a> {
    /// A measured run that is no shard.
    Measured,
    /// A measured shard, of this campaign when given.
    Shard(ShardSpec, Option<&'a str>),
    /// A simulated run.
    Simulated,
}

/// The newest unfinished run of this spec text (by `spec_hash`) of the kind `which`, in
/// `store` (the database `db`), with the plan it was made with.
pub fn find(
    store: &Store,
    db: &Path,
    spec_hash: &str,
    which: Which,
) -> Result<(RunRow, Plan), Error> {
    let row = match which {
        Which::Measured => store.resumable_by_hash(spec_hash)?,
        Which::Simulated => store.resumable_in_mode(spec_hash, Mode::Sim)?,
        Which::Shard(shard, campaign) => {
            store.resumable_shard(spec_hash, crate::shard::stored(shard), campaign)?
        }
    };
    let row = row.ok_or_else(|| {
        Error::Refused(match which {
            Which::Measured => format!(
                "nothing to resume: no unfinished run of this experiment file in {}",
                db.display()
            ),
            Which::Simulated => format!(
                "nothing to resume: no unfinished simulated run of this experiment file in {}",
                db.display()
            ),
            Which::Shard(shard, campaign) => format!(
                "nothing to resume: no unfinished run of shard {shard} of this experiment file{}",
                campaign.map(|c| format!(" in campaign {c}")).unwrap_or_default()
            ),
        })
    })?;
    let plan = serde_json::from_str(&row.plan_json).map_err(|e| {
        Error::Failed(format!(
            "run {} was stored by another version of schedlab and cannot be resumed: {e}",
            row.id
        ))
    })?;
    Ok((row, plan))
}

/// Refuses options given again with `--resume` that disagree with the stored run `id`'s
/// `plan`: its scale and repetitions are the stored ones.
pub fn check_same(
    id: i64,
    plan: &Plan,
    scale: Option<f64>,
    repetitions: Option<Repetitions>,
) -> Result<(), Error> {
    if let Some(f) = scale.filter(|f| *f != plan.scale) {
        return Err(Error::Refused(format!(
            "run {id} was made at scale {}, not {f}: --resume takes the scale from the stored run (drop --scale)",
            plan.scale
        )));
    }
    if let Some(r) = repetitions {
        let mut asked = plan.clone();
        r.apply(&mut asked);
        if (asked.repetitions, asked.adaptive) != (plan.repetitions, plan.adaptive) {
            return Err(Error::Refused(format!(
                "run {id} was made with {}, not {}: --resume takes them from the stored run (drop --repetitions)",
                crate::repetitions_label(plan),
                crate::repetitions_label(&asked)
            )));
        }
    }
    Ok(())
}

/// Imports into run `id` the records its spool beside `db` kept (those a failing database
/// could not take), then removes the spool; returns how many there were.
pub fn import_spool(
    store: &mut Store,
    db: &Path,
    id: i64,
    observer: &mut dyn Observer,
) -> Result<usize, Error> {
    let spooled = schedlab_store::spool::path(db, id);
    if !spooled.exists() {
        return Ok(0);
    }
    let recs = schedlab_store::spool::read(&spooled, id)
        .map_err(|e| Error::Failed(format!("cannot read the spool {}: {e}", spooled.display())))?;
    let n = store.import(id, &recs).map_err(|e| {
        Error::Failed(format!(
            "cannot import the spool {} into {} ({e}); it is kept, try again",
            spooled.display(),
            db.display()
        ))
    })?;
    schedlab_store::spool::remove(&spooled)?;
    observer.note(&format!("imported {n} cell repetitions of run {id} from {}", spooled.display()));
    Ok(n)
}

/// The steps of `all` that run `id` has not stored yet, and what it stored.
pub fn left(store: &Store, id: i64, all: &[Step]) -> Result<(Vec<Step>, DoneSteps), Error> {
    let done: DoneSteps = store.done_steps(id)?.into_iter().collect();
    let left = all.iter().copied().filter(|s| !done.contains(&(s.cell, s.rep, s.warmup))).collect();
    Ok((left, done))
}
