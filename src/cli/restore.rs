//! `schedlab restore`: replay the journals of schedlab processes that are gone.

use std::process::ExitCode;

/// Arguments of `schedlab restore`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Also replay journals of schedlab processes that are still running (stops nothing;
    /// use only when you know they are stuck).
    #[arg(long)]
    pub all: bool,
}

/// Runs `schedlab restore`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let dir = schedlab_sys::journal::state_dir();
    let lines = schedlab_sys::journal::recover(&dir, a.all);
    if lines.is_empty() {
        println!("nothing to restore (no journal of a finished schedlab in {})", dir.display());
    }
    let failed = lines.iter().any(|l| l.contains("FAILED"));
    for l in lines {
        println!("{l}");
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
