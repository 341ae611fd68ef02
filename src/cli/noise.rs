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
    /// Repetitions per arm (the run makes twice as many).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(3..=500))]
    pub per_arm: u32,
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
    let args = RunArgs {
        file: Some(a.file.clone()),
        resume: false,
        keep_files: false,
        yes_device: a.yes_device.clone(),
        shard: None,
        flags,
        quiet: a.quiet,
    };
    let interleave = |spec: &mut Spec| spec.plan.order = Order::Random;
    let (code, run_id) = run_with(db, args, interleave)?;
    let Some(run_id) = run_id else { return Ok(code) };
    let store = schedlab_store::Store::open(db)?;
    let floors = schedlab_session::floor::store_floors(&store, run_id, super::common::now_unix())?;
    let n = floors.len();
    if !a.quiet {
        outln!("{}", schedlab_report::verdicts::floor_table(&floors));
    }
    outln!(
        "floor: run {run_id} measured {n} cell-figure pairs at {} repetitions per arm on this machine; \
         `schedlab compare A B` uses the newest floor of this machine (`--no-floor` to leave it out)",
        a.per_arm
    );
    Ok(code)
}
