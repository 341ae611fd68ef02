//! `schedlab import rt-app FILE.json -o SPEC.toml`: an rt-app task description as a schedlab
//! experiment of periodic task sets, with what could not be mapped listed.

use super::common::{bad_input, Exit};
use schedlab_import::{json, rtapp};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `schedlab import`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to import.
    #[command(subcommand)]
    pub from: From,
}

/// The formats `schedlab import` reads.
#[derive(clap::Subcommand, Debug)]
pub enum From {
    /// An rt-app JSON task description: its periodic threads (run, then timer or sleep) become
    /// periodic task sets, one per scheduling class; what does not map is listed.
    #[command(name = "rt-app")]
    RtApp(RtAppArgs),
}

/// Arguments of `schedlab import rt-app`.
#[derive(clap::Args, Debug)]
pub struct RtAppArgs {
    /// The rt-app file (JSON; comments, trailing commas and repeated event keys accepted).
    pub file: PathBuf,
    /// The experiment file to write.
    #[arg(short, long, value_name = "SPEC.toml")]
    pub out: PathBuf,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Runs `schedlab import`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    match a.from {
        From::RtApp(a) => rt_app(a),
    }
}

fn rt_app(a: RtAppArgs) -> anyhow::Result<ExitCode> {
    if !a.force && a.out.symlink_metadata().is_ok() {
        return Err(bad_input(format!("{} exists; give --force to replace it", a.out.display())));
    }
    let shown = a.file.display().to_string();
    let bytes =
        std::fs::read(&a.file).map_err(|e| bad_input(format!("cannot read {shown}: {e}")))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let (line, col) = schedlab_spec::line_col(
            &String::from_utf8_lossy(&bytes[..e.valid_up_to()]),
            e.valid_up_to(),
        );
        bad_input(format!("{shown}:{line}:{col}: not UTF-8"))
    })?;
    let parsed = json::parse(text)
        .map_err(|e| bad_input(format!("{shown}:{}:{}: {}", e.line, e.col, e.message)))?;
    let imported = rtapp::import(&parsed).map_err(|e| bad_input(format!("{shown}: {e}")))?;

    let out_shown = a.out.display().to_string();
    let name = a
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rt-app".into());
    let body = imported.body(&name, &shown);
    // The written spec must be one `check` accepts: validate it here.
    let dir = schedlab_spec::spec_dir(&out_shown);
    let invalid = schedlab_spec::parse_at(&out_shown, &body, &dir).err().map(|e| e.to_string());
    let text = format!("{}{body}", imported.header(&shown));
    write_out(&a.out, &text)?;

    let tasks: usize = imported.sets.iter().map(|s| s.tasks.len()).sum();
    let sets: Vec<String> = imported
        .sets
        .iter()
        .map(|s| format!("{} ({}, {} tasks)", s.name, s.scheduler, s.tasks.len()))
        .collect();
    outln!("wrote {out_shown}: {tasks} periodic tasks in {}", sets.join(", "));
    if !imported.unmapped.is_empty() {
        eprintln!(
            "not mapped exactly ({}; also listed at the top of {out_shown}):",
            imported.unmapped.len()
        );
        for u in &imported.unmapped {
            eprintln!("  - {u}");
        }
    }
    if let Some(e) = invalid {
        return Err(anyhow::Error::new(Exit {
            code: 1,
            message: format!(
                "{out_shown} is written but `schedlab check` will refuse it on this machine:\n{e}"
            ),
        }));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to `out` through a new file beside it, renamed over `out`, so an existing
/// symlink is replaced, never followed.
fn write_out(out: &Path, text: &str) -> anyhow::Result<()> {
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name =
        out.file_name().ok_or_else(|| bad_input(format!("{} names no file", out.display())))?;
    let tmp = dir.join(format!(".{}.{}.tmp", file_name.to_string_lossy(), std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| bad_input(format!("cannot create {}: {e}", tmp.display())))?;
    let written = f
        .write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .and_then(|_| std::fs::rename(&tmp, out));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("cannot write {}: {e}", out.display());
    }
    Ok(())
}
