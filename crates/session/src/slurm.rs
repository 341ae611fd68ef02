//! A campaign as a Slurm job array (one exclusive node per shard, each into its own
//! database under a shared directory) and a merge job after it: the scripts, the manifest
//! kept beside them, and which shards finished.

use crate::Error;
use schedlab_store::RunStatus;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What `--status` needs to know of a campaign, kept beside its scripts.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// The campaign's id.
    pub campaign: String,
    /// Its number of shards.
    pub shards: u32,
    /// The spec text's hash.
    pub spec_hash: String,
}

/// The manifest's file name.
pub const MANIFEST: &str = "campaign.json";
/// The job array's script.
pub const ARRAY: &str = "shards.sbatch";
/// The merge job's script.
pub const MERGE: &str = "merge.sbatch";
/// The merged database.
pub const MERGED: &str = "campaign.db";

/// Shard `k`'s database in `dir`.
pub fn shard_db(dir: &Path, k: u32) -> PathBuf {
    dir.join(format!("shard-{k}.db"))
}

/// A path as one shell word: as it is when it has nothing a shell would split or expand,
/// else single-quoted.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The campaign's jobs: what every script names.
pub struct Jobs<'a> {
    /// This schedlab's path.
    pub exe: &'a Path,
    /// The experiment file (None: the built-in experiment).
    pub spec: Option<&'a Path>,
    /// The shared directory.
    pub dir: &'a Path,
    /// The campaign's id.
    pub campaign: &'a str,
    /// Its number of shards.
    pub shards: u32,
    /// sbatch --partition.
    pub partition: Option<&'a str>,
    /// sbatch --time.
    pub time: Option<&'a str>,
    /// The words each shard's `schedlab run` is given besides its place.
    pub run_words: Vec<String>,
}

fn quoted(p: &Path) -> String {
    shell_word(&p.display().to_string())
}

impl Jobs<'_> {
    /// The job array: task K runs shard K/N into DIR/shard-K.db; a rerun task resumes it.
    pub fn array_script(&self) -> String {
        let (campaign, shards) = (self.campaign, self.shards);
        let mut head = vec![
            format!("#SBATCH --job-name=schedlab-{campaign}"),
            format!("#SBATCH --array=0-{}", shards - 1),
            "#SBATCH --nodes=1".into(),
            "#SBATCH --ntasks=1".into(),
            "#SBATCH --exclusive".into(),
            format!("#SBATCH --output={}", self.dir.join("shard-%a.log").display()),
        ];
        if let Some(p) = self.partition {
            head.push(format!("#SBATCH --partition={p}"));
        }
        if let Some(t) = self.time {
            head.push(format!("#SBATCH --time={t}"));
        }
        let mut run = vec![quoted(self.exe), "--db".into(), "\"$db\"".into(), "run".into()];
        if let Some(s) = self.spec {
            run.push(quoted(s));
        }
        run.extend([
            "--shard".into(),
            format!("\"$SLURM_ARRAY_TASK_ID/{shards}\""),
            "--campaign".into(),
            campaign.to_string(),
        ]);
        run.extend(self.run_words.iter().cloned());
        format!(
            "#!/bin/bash\n{}\n# schedlab campaign {campaign}: shard $SLURM_ARRAY_TASK_ID of {shards} on this node, into its own database.\n\
             set -euo pipefail\n\
             db={}/shard-\"$SLURM_ARRAY_TASK_ID\".db\n\
             # A rerun finishes the shard's unfinished run in place.\n\
             resume=()\n\
             if [ -e \"$db\" ]; then resume=(--resume); fi\n\
             exec {} \"${{resume[@]}}\" --quiet\n",
            head.join("\n"),
            quoted(self.dir),
            run.join(" ")
        )
    }

    /// The merge job: every shard database into DIR/campaign.db.
    pub fn merge_script(&self) -> String {
        let dbs: Vec<String> = (0..self.shards).map(|k| quoted(&shard_db(self.dir, k))).collect();
        format!(
            "#!/bin/bash\n#SBATCH --job-name=schedlab-{}-merge\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --output={}\n\
             set -euo pipefail\nexec {} merge -o {} {}\n",
            self.campaign,
            self.dir.join("merge.log").display(),
            quoted(self.exe),
            quoted(&self.dir.join(MERGED)),
            dbs.join(" ")
        )
    }
}

/// Refuses a path with a control character: the scripts name each on a line of its own
/// (`#SBATCH --output=DIR/...`), where a newline would start a command bash runs.
pub fn refuse_control_characters(
    shared: &Path,
    paths: &[(&str, Option<&Path>)],
) -> Result<(), Error> {
    for (what, path) in std::iter::once(&("--shared", Some(shared))).chain(paths) {
        let Some(path) = path else { continue };
        if path.as_os_str().as_encoded_bytes().iter().any(|b| b.is_ascii_control()) {
            return Err(Error::Refused(format!(
                "{what} {:?} has a control character (a newline, a tab, ...), which the job scripts cannot hold safely: use another directory",
                path.display().to_string()
            )));
        }
    }
    Ok(())
}

/// Writes `m` into `dir`, refusing a directory that holds another campaign.
pub fn write_manifest(dir: &Path, m: &Manifest) -> Result<(), Error> {
    let mpath = dir.join(MANIFEST);
    if let Ok(old) = std::fs::read_to_string(&mpath) {
        let old: Manifest = serde_json::from_str(&old)
            .map_err(|e| Error::Refused(format!("{} is not schedlab's: {e}", mpath.display())))?;
        if old.campaign != m.campaign {
            return Err(Error::Refused(format!(
                "{} already holds campaign {}: give this one (campaign {}) its own --shared directory",
                dir.display(),
                old.campaign,
                m.campaign
            )));
        }
    }
    std::fs::write(&mpath, serde_json::to_string_pretty(m)? + "\n")?;
    Ok(())
}

/// One shard's state: in words, and its run's status when it has one.
pub struct ShardState {
    /// What `--status` says of it.
    pub state: String,
    /// Its run's status.
    pub status: Option<RunStatus>,
}

/// The campaign whose scripts are in `dir`, and each of its shards' state.
pub fn states(dir: &Path) -> Result<(Manifest, Vec<ShardState>), Error> {
    let mpath = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&mpath).map_err(|e| {
        Error::Refused(format!(
            "{} has no {MANIFEST} ({e}): is it a `schedlab slurm --shared` directory?",
            dir.display()
        ))
    })?;
    let m: Manifest = serde_json::from_str(&text)
        .map_err(|e| Error::Refused(format!("{}: {e}", mpath.display())))?;
    let mut out = Vec::new();
    for k in 0..m.shards {
        let db = shard_db(dir, k);
        if !db.exists() {
            out.push(ShardState { state: "not started".into(), status: None });
            continue;
        }
        let store = crate::db::open(&db)?;
        let run = store
            .campaign_runs(&m.campaign)?
            .into_iter()
            .find(|r| r.identity.shard.is_some_and(|s| s.index == k));
        out.push(match run {
            None => ShardState { state: "no run stored".into(), status: None },
            Some(r) => ShardState {
                state: format!(
                    "run {}: {}, {} cell repetitions stored on {}",
                    r.id,
                    r.status,
                    r.cells_done,
                    r.env.machine.label()
                ),
                status: Some(r.status),
            },
        });
    }
    Ok((m, out))
}
