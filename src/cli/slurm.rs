//! `schedlab slurm SPEC --shards N`: a campaign as a Slurm job array (one exclusive node per
//! shard, each into its own database under a shared directory) and a merge job after it;
//! `schedlab slurm --status DIR`: which shards finished, and the command that reruns the rest.

use super::common::{bad_input, load_spec};
use schedlab_session::slurm::{self, shell_word, Jobs, Manifest, ARRAY, MERGE, MERGED};
use schedlab_store::RunStatus;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Arguments of `schedlab slurm`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Experiment file (TOML); without it, the built-in quick experiment.
    pub file: Option<PathBuf>,
    /// Shards: tasks of the job array, one node each.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000), required_unless_present = "status")]
    pub shards: Option<u32>,
    /// Slurm partition (sbatch --partition).
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit of each shard's task (sbatch --time, e.g. 2:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// Directory every node sees: the scripts, each shard's database and log, and the
    /// merged campaign.db (default: ./schedlab-CAMPAIGN).
    #[arg(long, value_name = "DIR")]
    pub shared: Option<PathBuf>,
    /// Submit the array and the merge job and print their job ids (default: print the
    /// scripts and the commands that submit them).
    #[arg(long)]
    pub submit: bool,
    /// Which shards of the campaign in DIR finished, and the command that reruns the others.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["shards", "submit"])]
    pub status: Option<PathBuf>,
    #[command(flatten, next_help_heading = "Passed on to each shard's run")]
    pub run: super::common::RunFlags,
}

/// Runs `schedlab slurm`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &a.status {
        return status(dir);
    }
    let shards = a.shards.expect("clap requires --shards without --status");
    let spec = load_spec(a.file.as_deref(), a.run.scale, a.run.repetitions)?;
    if let Some(c) = &a.run.campaign {
        schedlab_session::shard::check_campaign(c)?;
    }
    if let Some(t) = a.run.timeout {
        schedlab_spec::bounds::watchdog(t, "--timeout").map_err(bad_input)?;
    }
    for (what, v) in [("--partition", &a.partition), ("--time", &a.time)] {
        if let Some(v) = v.as_deref().filter(|v| {
            v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || ",:-_.".contains(c))
        }) {
            return Err(bad_input(format!(
                "{what} \"{v}\": use letters, digits and , : - _ . only"
            )));
        }
    }
    let campaign =
        a.run.campaign.clone().unwrap_or_else(|| {
            schedlab_session::shard::campaign_id(&spec.hash, &spec.plan, shards)
        });
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this schedlab's own path: {e}"))?;
    let dir = a.shared.clone().unwrap_or_else(|| PathBuf::from(format!("schedlab-{campaign}")));
    let spec_file = a.file.as_deref().map(std::fs::canonicalize).transpose()?;
    let in_scripts = [
        ("this schedlab's path", Some(exe.as_path())),
        ("FILE", spec_file.as_deref()),
        ("--dir", a.run.dir.as_deref()),
    ];
    slurm::refuse_control_characters(&std::path::absolute(&dir)?, &in_scripts)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| bad_input(format!("cannot create {}: {e}", dir.display())))?;
    let dir = std::fs::canonicalize(&dir)?;
    slurm::refuse_control_characters(&dir, &in_scripts)?;
    let manifest = Manifest { campaign: campaign.clone(), shards, spec_hash: spec.hash.clone() };
    slurm::write_manifest(&dir, &manifest)?;
    let jobs = Jobs {
        exe: &exe,
        spec: spec_file.as_deref(),
        dir: &dir,
        campaign: &campaign,
        shards,
        partition: a.partition.as_deref(),
        time: a.time.as_deref(),
        run_words: a.run.to_words(|p| shell_word(&p.display().to_string())),
    };
    let (array, merge) = (jobs.array_script(), jobs.merge_script());
    std::fs::write(dir.join(ARRAY), &array)?;
    std::fs::write(dir.join(MERGE), &merge)?;
    let (array_path, merge_path) = (
        shell_word(&dir.join(ARRAY).display().to_string()),
        shell_word(&dir.join(MERGE).display().to_string()),
    );
    if !a.submit {
        outln!("# {}\n{array}", dir.join(ARRAY).display());
        outln!("# {}\n{merge}", dir.join(MERGE).display());
        outln!("# submit both (the merge runs once every shard succeeded):");
        outln!("array=$(sbatch --parsable {array_path}) && sbatch --dependency=afterok:${{array%%;*}} {merge_path}");
        return Ok(ExitCode::SUCCESS);
    }
    let array_id = sbatch(&[dir.join(ARRAY).as_os_str()])?;
    let dep = format!("--dependency=afterok:{array_id}");
    let merge_id = sbatch(&[std::ffi::OsStr::new(&dep), dir.join(MERGE).as_os_str()])?;
    outln!("campaign {campaign}: job array {array_id} ({shards} shards), merge job {merge_id} (after the array succeeds)");
    outln!(
        "shard databases and logs in {}; the merged campaign will be {}",
        dir.display(),
        dir.join(MERGED).display()
    );
    outln!(
        "progress: `{} slurm --status {}`",
        shell_word(&exe.display().to_string()),
        shell_word(&dir.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// `sbatch --parsable ARGS`: the job id it prints.
fn sbatch(args: &[&std::ffi::OsStr]) -> anyhow::Result<String> {
    let out =
        Command::new("sbatch").arg("--parsable").args(args).output().map_err(|e| {
            bad_input(format!("cannot run sbatch ({e}): submit from a machine with Slurm's client commands, or drop --submit"))
        })?;
    if !out.status.success() {
        return Err(anyhow::anyhow!(
            "sbatch failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // "ID" or "ID;CLUSTER".
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(anyhow::anyhow!("sbatch printed no job id: {text:?}"));
    }
    Ok(id)
}

/// `--status DIR`: each shard's state, and the commands that rerun the unfinished ones and merge.
fn status(dir: &Path) -> anyhow::Result<ExitCode> {
    let (m, states) = slurm::states(dir)?;
    let mut rerun = Vec::new();
    let mut with_failures = Vec::new();
    for (k, shard) in (0..).zip(states) {
        match shard.status {
            Some(RunStatus::CompleteWithFailures) => with_failures.push(k),
            Some(RunStatus::Complete) => {}
            _ => rerun.push(k),
        }
        outln!("shard {k}/{}: {}", m.shards, shard.state);
    }
    let list = |v: &[u32]| v.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(",");
    let merge = shell_word(&dir.join(MERGE).display().to_string());
    if rerun.is_empty() {
        outln!("campaign {}: every shard finished", m.campaign);
        if !with_failures.is_empty() {
            outln!(
                "shards {} finished with failed cell repetitions (their tasks exited 1, so the merge job did not run): merge with `sbatch {merge}`",
                list(&with_failures)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "campaign {}: {} of {} shards unfinished ({}; a running shard shows as running too: check squeue first)",
        m.campaign,
        rerun.len(),
        m.shards,
        list(&rerun)
    );
    outln!("rerun only them (each resumes its database), then merge:");
    outln!(
        "array=$(sbatch --parsable --array={} {}) && sbatch --dependency=afterok:${{array%%;*}} {merge}",
        list(&rerun),
        shell_word(&dir.join(ARRAY).display().to_string())
    );
    Ok(ExitCode::from(1))
}
