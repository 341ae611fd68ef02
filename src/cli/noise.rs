//! `schedlab noise SPEC`: this machine's A/A floor. The experiment runs as two identical
//! arms (twice the repetitions, interleaved in random order with every other cell: even
//! repetitions arm A, odd arm B), and the spread between the arms is stored per cell and
//! figure, with the machine's facts, for `compare`'s verdicts.

use super::run::{run_with, Args as RunArgs};
use schedlab_spec::{Order, Spec};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab noise`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Experiment file (TOML): the cells whose floor is measured.
    pub file: PathBuf,
    /// Repetitions per arm (each run makes twice as many).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(3..=500))]
    pub per_arm: u32,
    /// Separate runs, one after another: the floor's drift between runs (two runs of a spec
    /// differ by more than the repetitions of one suggest) needs at least 2.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub runs: u32,
    /// Multiply every work amount by this factor (as `run --scale`).
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Confirm that an I/O experiment may use this real disk, as `run --yes-device`.
    #[arg(long, value_name = "NAME")]
    pub yes_device: Option<String>,
    /// No progress, no tables: only the summaries.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `schedlab noise`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let flags = super::common::RunFlags {
        scale: a.scale,
        repetitions: Some(super::common::Repetitions::Count(2 * a.per_arm)),
        ..Default::default()
    };
    let (mut ids, mut status) = (Vec::new(), ExitCode::SUCCESS);
    for _ in 0..a.runs {
        let args = RunArgs {
            file: Some(a.file.clone()),
            resume: false,
            keep_files: false,
            yes_device: a.yes_device.clone(),
            shard: None,
            flags: flags.clone(),
            skip: Default::default(),
            decide: Default::default(),
            quiet: a.quiet,
        };
        let interleave = |spec: &mut Spec| spec.plan.order = Order::Random;
        // A run with failed repetitions still gives floors of its other cells; an
        // interrupted one ends the noise (its runs are stored, `run --resume` finishes them).
        match run_with(db, args, interleave)? {
            (code, Some(id)) => {
                ids.push(id);
                if code != ExitCode::SUCCESS {
                    status = code;
                }
            }
            (code, None) => return Ok(code),
        }
    }
    let store = schedlab_store::Store::open(db)?;
    let floors = schedlab_session::floor::store_floors(&store, &ids, schedlab_session::now_unix())?;
    let (n, run_id) = (floors.len(), ids[0]);
    if !a.quiet {
        outln!("{}", schedlab_report::verdicts::floor_table(&floors));
    }
    outln!(
        "floor: runs {} measured {n} cell-figure pairs at {} repetitions per arm, stored as run {run_id}'s; \
         `schedlab compare A B` uses the newest floor of this machine (`--no-floor` to leave it out)",
        ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
        a.per_arm
    );
    Ok(status)
}
