//! `schedlab trace export`: one traced cell repetition as a Perfetto trace (or trace-cmd's
//! trace.dat), from its kept kernel capture; a simulated run's cell by simulating it again
//! from the stored plan, model parameters and any per-worker demands, named and marked alike, so a measured cell
//! and its simulation open side by side.

use super::common::{bad_input, open_existing, pick_run};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Output formats of `schedlab trace export`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Perfetto's protobuf trace (ui.perfetto.dev opens it).
    Pftrace,
    /// trace-cmd's trace.dat: the kernel's pages as captured (measured runs only).
    Dat,
}

/// Arguments of `schedlab trace export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run id (the newest run without it).
    pub run: Option<i64>,
    /// The cell, by key (as `show` prints it).
    #[arg(long, value_name = "KEY")]
    pub cell: String,
    /// The repetition (1-based, as `show` counts them).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub rep: u32,
    /// The file to write (must not exist unless --force).
    #[arg(long, short, value_name = "FILE.pftrace")]
    pub output: PathBuf,
    /// The format (default: dat for a file named *.dat, else pftrace).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Replace an existing file (never written through: a link is replaced, not followed).
    #[arg(long)]
    pub force: bool,
}

/// Runs `schedlab trace export`.
pub fn run(db: &Path, a: Args) -> anyhow::Result<ExitCode> {
    let format = a.format.unwrap_or(if a.output.extension().is_some_and(|e| e == "dat") {
        Format::Dat
    } else {
        Format::Pftrace
    });
    let store = open_existing(db)?;
    let run = pick_run(&store, a.run)?;
    let rec = schedlab_session::trace_export::pick_cell(&store, &run, &a.cell, a.rep)?;
    check_output(&a.output, a.force)?;
    let what = format!("{} rep {} of run {}", rec.params.key, a.rep, run.id);
    let (bytes, summary) = if run.mode == "sim" {
        if format == Format::Dat {
            return Err(bad_input(format!("run {} is simulated: it has no kernel pages for a trace.dat; export it as .pftrace", run.id)));
        }
        schedlab_session::trace_export::simulated(&store, &run, &rec, &what)?
    } else {
        schedlab_session::trace_export::measured(&store, &run, &rec, &what, format == Format::Dat)?
    };
    write_new(&a.output, &bytes, a.force)?;
    println!(
        "wrote {} ({:.1} MB): {what}; {summary}",
        a.output.display(),
        bytes.len() as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses an output path that exists, unless `force` and it is a file or a link.
fn check_output(path: &Path, force: bool) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(bad_input(format!("cannot use {}: {e}", path.display()))),
        Ok(m) if m.is_dir() => {
            Err(bad_input(format!("{} is a directory; name a file to write", path.display())))
        }
        Ok(_) if !force => Err(bad_input(format!(
            "{} already exists; choose a new file, or pass --force to replace it",
            path.display()
        ))),
        Ok(_) => Ok(()),
    }
}

/// Creates `path` exclusively (after unlinking what is there, with `force`) and writes `bytes`.
fn write_new(path: &Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    if force && std::fs::symlink_metadata(path).is_ok() {
        std::fs::remove_file(path)
            .map_err(|e| anyhow::anyhow!("cannot replace {}: {e}", path.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| bad_input(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| {
        let _ = std::fs::remove_file(path);
        anyhow::anyhow!("cannot write {}: {e}", path.display())
    })
}
