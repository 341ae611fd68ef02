//! `schedlab dwcs status`: the live dispatchers' state (the seed's /proc/dwcs), read from
//! their status regions while a run is active.

use super::common::bad_input;
use schedlab_dispatch::{shm, Snapshot, StatusReader};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `schedlab dwcs`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Show every running dispatcher's tasks: x'/y', deadline, jobs, misses, violations.
    Status(StatusArgs),
}

#[derive(clap::Args, Debug)]
struct StatusArgs {
    /// JSON (one array of snapshots) instead of tables.
    #[arg(long)]
    json: bool,
    /// Refresh every SECONDS until no dispatcher is left (tables only).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    watch: Option<f64>,
    /// Where the dispatchers' region files are (default: /run/schedlab when /run is tmpfs, else /dev/shm/schedlab).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Include finished dispatchers whose region files are still there.
    #[arg(long)]
    all: bool,
}

fn snapshots(dir: &std::path::Path, all: bool) -> anyhow::Result<Vec<Snapshot>> {
    let mut out = Vec::new();
    for path in StatusReader::discover(dir)? {
        // A region can vanish between listing and opening: its run just ended.
        let Ok(r) = StatusReader::open(&path) else { continue };
        let s = r.snapshot();
        if all || s.dispatcher_alive {
            out.push(s);
        }
    }
    Ok(out)
}

/// Runs `schedlab dwcs`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let Sub::Status(s) = a.cmd;
    let dir = s.dir.clone().unwrap_or_else(shm::default_dir);
    if let Some(w) = s.watch {
        if !(w > 0.0 && w.is_finite()) || s.json {
            return Err(bad_input(
                "--watch needs a positive number of seconds, and prints tables (not --json)",
            ));
        }
    }
    loop {
        let snaps = snapshots(&dir, s.all)?;
        if s.json {
            println!("{}", serde_json::to_string_pretty(&snaps)?);
            return Ok(ExitCode::SUCCESS);
        }
        if snaps.is_empty() {
            // Nothing running is an answer, not an error (as `systemctl status` of a stopped unit
            // is for scripts that only read it): exit 0.
            println!(
                "nothing is running: no dispatcher (regions are looked for in {})",
                dir.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        for snap in &snaps {
            println!("{snap}");
        }
        match s.watch {
            Some(w) => std::thread::sleep(Duration::from_secs_f64(w)),
            None => return Ok(ExitCode::SUCCESS),
        }
    }
}
