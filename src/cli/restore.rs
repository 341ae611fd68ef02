//! `schedlab restore`: replay the journals of schedlab processes that are gone.

use super::common::bad_input;
use std::process::ExitCode;

/// Arguments of `schedlab restore`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also undo the changes of schedlab runs that are still running, under them: kills
    /// their workers, removes their cgroups and experiment directories, puts their settings
    /// back. Only for a run you know is stuck; needs --yes while one runs.
    #[arg(long)]
    pub all: bool,
    /// With --all: yes, undo the changes of the runs still running.
    #[arg(long, requires = "all")]
    pub yes: bool,
}

/// Runs `schedlab restore`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let dir = schedlab_sys::journal::state_dir();
    let live = if a.all { schedlab_sys::journal::live_owners(&dir) } else { Vec::new() };
    if !live.is_empty() && !a.yes {
        let who: Vec<String> = live
            .iter()
            .map(|pid| format!("process {pid} ({})", schedlab_sys::lock::command_line(*pid)))
            .collect();
        return Err(bad_input(format!(
            "restore --all would stop what is still running: {}. It kills their workers, removes their cgroups and \
             experiment directories and puts their settings back under them. Stop them first and run `schedlab restore`, \
             or, if they are stuck, `schedlab restore --all --yes`; nothing was changed",
            who.join(", ")
        )));
    }
    let lines = schedlab_sys::journal::recover(&dir, a.all);
    if lines.is_empty() {
        outln!("nothing to restore (no journal of a finished schedlab in {})", dir.display());
    }
    let failed = lines.iter().any(|l| l.contains("FAILED"));
    for l in lines {
        outln!("{l}");
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
