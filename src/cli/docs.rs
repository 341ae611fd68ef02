//! `schedlab completions SHELL` and `schedlab man -o DIR`: shell completions and man pages,
//! generated from the same clap definitions as `--help`, so they cannot drift from it.

use super::common::bad_input;
use clap::CommandFactory;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `schedlab completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionArgs {
    /// The shell: `source <(schedlab completions bash)`, or save the output where the shell
    /// loads completions from (README, Install).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `schedlab man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Directory for the pages (created if missing): `schedlab.1` and one
    /// `schedlab-SUBCOMMAND.1` per subcommand; `man -l DIR/schedlab.1` reads one.
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Prints the completion script for a shell.
pub fn completions(a: CompletionArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = super::Cli::command();
    // generate panics when its writer fails: it writes into memory, and stdout gets the whole.
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "schedlab", &mut script);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)
        .map_err(super::out::stdout_error)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the man pages into a directory and lists them.
pub fn man(a: ManArgs) -> anyhow::Result<ExitCode> {
    if a.out.exists() && !a.out.is_dir() {
        return Err(bad_input(format!("{} exists and is not a directory", a.out.display())));
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| bad_input(format!("cannot create {}: {e}", a.out.display())))?;
    // generate_to builds the command itself with the help subcommand off: building it here
    // first would add a page per `help` subcommand.
    clap_mangen::generate_to(super::Cli::command(), &a.out)?;
    let mut pages: Vec<String> = std::fs::read_dir(&a.out)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("schedlab") && n.ends_with(".1"))
        .collect();
    pages.sort();
    outln!("{} man pages in {}: {}", pages.len(), a.out.display(), pages.join(", "));
    Ok(ExitCode::SUCCESS)
}
