//! `schedlab calibrate`: measure this machine's overheads and store them (issue #40).

use schedlab_session::calibrate::{Calibration, Lengths};
use schedlab_session::Session;
use std::path::Path;
use std::process::ExitCode;

/// How `calibrate` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One line per overhead: its percentiles, the one the tests use marked.
    Text,
    /// The stored record.
    Json,
    /// SchedCAT's overhead CSV (µs; `Overheads.from_file`).
    Schedcat,
    /// What the `+overheads` tests charge (`check --overheads FILE` reads it).
    Overheads,
}

/// Arguments of `schedlab calibrate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Print the stored calibration ID (the newest with `--show` alone) instead of measuring.
    #[arg(long, num_args = 0..=1, default_missing_value = "0", value_name = "ID")]
    pub show: Option<i64>,
    /// Shorter probes (about a fifth of the samples): a quick look, not a calibration to use.
    #[arg(long)]
    pub quick: bool,
    /// Leave out the live dispatchers' decision cost (no engine run).
    #[arg(long)]
    pub no_dispatchers: bool,
    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
}

fn print(c: &Calibration, id: i64, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(c)?),
        Format::Schedcat => outln!("{}", c.schedcat_csv().trim_end()),
        Format::Overheads => outln!("{}", serde_json::to_string_pretty(&c.overheads(id))?),
        Format::Text => {
            for line in c.lines(id) {
                outln!("{line}");
            }
        }
    }
    Ok(())
}

/// Runs `schedlab calibrate`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    if let Some(id) = a.show {
        let Some((id, c)) = schedlab_session::calibrate::stored(db, (id > 0).then_some(id))? else {
            return Err(super::common::bad_input(format!(
                "{} holds no calibration{}: run `schedlab calibrate` first",
                db.display(),
                if id > 0 { format!(" {id}") } else { String::new() }
            )));
        };
        print(&c, id, a.format)?;
        return Ok(ExitCode::SUCCESS);
    }
    schedlab_session::db::check_dir(db)?;
    let mut lengths = Lengths::default();
    if a.quick {
        lengths.release_latency /= 5;
        lengths.switch_rounds /= 5;
        lengths.spin_rounds = 1;
        lengths.dispatcher_s = 1;
    }
    if a.no_dispatchers {
        lengths.dispatcher_s = 0;
    }
    let session = Session::new(db, "schedlab calibrate".into());
    let mut terminal = super::run::Terminal::new(a.quiet || a.format != Format::Text);
    let (c, id) = session.calibrate(lengths, &mut terminal)?;
    print(&c, id, a.format)?;
    Ok(ExitCode::SUCCESS)
}
