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
    // As clap_mangen::generate_to, with the help subcommand off (else a page per `help`
    // subcommand), and each page followed by its EXAMPLES.
    let mut cmd = super::Cli::command().disable_help_subcommand(true);
    cmd.build();
    write_pages(&cmd, &a.out)?;
    let mut pages: Vec<String> = std::fs::read_dir(&a.out)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("schedlab") && n.ends_with(".1"))
        .collect();
    pages.sort();
    outln!("{} man pages in {}: {}", pages.len(), a.out.display(), pages.join(", "));
    Ok(ExitCode::SUCCESS)
}

/// Writes the man page of `cmd` and of each of its subcommands, each with its EXAMPLES.
fn write_pages(cmd: &clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render(&mut page)?;
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    page.extend(examples_section(name).into_bytes());
    std::fs::write(dir.join(man.get_filename()), page)
}

/// The examples of each man page (by its name): (command line, what it does). One table, so
/// that a page without examples is a missing row (tested), and every line is parsed by the
/// command-line parser in the tests, so none drifts from the flags.
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "schedlab",
        &[
            (
                "schedlab run",
                "run the built-in quick experiment, store it in schedlab.db and print its tables",
            ),
            ("schedlab show", "show the newest stored run again"),
            ("schedlab --db lab.db runs", "list the runs of another database"),
        ],
    ),
    (
        "schedlab-run",
        &[
            ("schedlab run experiments/pa3.toml", "run an experiment file"),
            (
                "schedlab run experiments/pa3.toml --scale 0.1 --repetitions 3",
                "a tenth of the work, three repetitions per cell: a quick first look",
            ),
            (
                "schedlab run experiments/pa3.toml --resume",
                "finish an interrupted run of the same file",
            ),
            (
                "schedlab run experiments/quick.toml --trace",
                "also record the kernel's scheduler trace (root)",
            ),
            (
                "schedlab run ab.toml --until-decided workload --max-repetitions 20",
                "A/B in one run: the file's two workloads interleaved, repetitions added to both until decided",
            ),
            (
                "schedlab run experiments/iosched.toml --skip-unavailable",
                "run the cells this machine can (a kernel without bfq: the other schedulers'), saying which it skipped and why",
            ),
        ],
    ),
    (
        "schedlab-check",
        &[
            (
                "schedlab check experiments/pa3.toml",
                "validate a file and print its plan, without running anything",
            ),
            (
                "schedlab check experiments/pa3.toml --scale 10",
                "what the plan would take at ten times the work",
            ),
        ],
    ),
    (
        "schedlab-show",
        &[("schedlab show", "the newest run's tables"), ("schedlab show 3", "run 3's tables")],
    ),
    (
        "schedlab-export",
        &[
            ("schedlab export 3 > run3.csv", "run 3's per-process rows as CSV"),
            ("schedlab export 3 --format markdown", "the same as a Markdown table"),
            ("schedlab export 3 --format parquet -o run3.parquet", "as Parquet (a file is needed)"),
            (
                "schedlab export 3 --format hyperfine -o run3.json",
                "a result per cell, as hyperfine's --export-json",
            ),
        ],
    ),
    (
        "schedlab-report",
        &[
            (
                "schedlab report 3 -o report3",
                "an HTML report of run 3 in the new directory report3",
            ),
            (
                "schedlab report 3 -o report3 --compare 2",
                "with a section comparing run 3 against run 2",
            ),
        ],
    ),
    (
        "schedlab-noise",
        &[
            ("schedlab noise experiments/ci.toml", "4 runs of two interleaved arms of 5 repetitions: the floor and the drift between runs"),
            ("schedlab noise experiments/ci.toml --runs 1 --per-arm 10", "one run: the arms only"),
        ],
    ),
    (
        "schedlab-compare",
        &[
            ("schedlab compare 2 3", "run 3 against run 2, cell by cell (wall time per process): a verdict each"),
            (
                "schedlab compare 2 3 --metric wall,time_s --fail-on regressed",
                "two figures as one family; exit 1 when a row regressed (CI)",
            ),
            (
                "schedlab compare 2 3 --metric involuntary --format markdown",
                "involuntary switches, as Markdown",
            ),
            (
                "schedlab compare 2 3 --metric wakeup_p99",
                "wake-up latency, for runs made with --trace",
            ),
        ],
    ),
    (
        "schedlab-bisect",
        &[
            (
                "schedlab bisect bench.toml --repo ../app --good v1.2 --bad main --build 'make'",
                "the first commit of ../app after v1.2 that made bench.toml's wall time worse",
            ),
            (
                "schedlab bisect --repo ../app --resume",
                "continue a bisect a signal stopped (the same command line does too)",
            ),
        ],
    ),
    ("schedlab-runs", &[("schedlab runs", "every stored run: id, name, status, start, cells")]),
    (
        "schedlab-env",
        &[
            ("schedlab env", "what this machine allows: privileges, RT throttling, cgroups, CPUs"),
            ("schedlab env --json", "the same for scripts"),
        ],
    ),
    (
        "schedlab-restore",
        &[(
            "schedlab restore",
            "undo what a killed schedlab left behind (cgroups, settings, files)",
        )],
    ),
    (
        "schedlab-calibrate",
        &[
            (
                "schedlab calibrate",
                "measure this machine's overheads (about half a minute) and store them",
            ),
            (
                "schedlab calibrate --show --format schedcat",
                "the newest calibration as SchedCAT's overhead CSV",
            ),
        ],
    ),
    (
        "schedlab-simulate",
        &[
            (
                "schedlab simulate experiments/pa3.toml",
                "simulate an experiment and store it as a run with mode sim",
            ),
            ("schedlab simulate experiments/pa3.toml --cpus 4", "the same on four simulated CPUs"),
            (
                "schedlab simulate experiments/pa3.toml --demand-from 3",
                "each worker's CPU demand from measured run 3",
            ),
        ],
    ),
    ("schedlab-dwcs", &[("schedlab dwcs status", "the running DWCS/EDF dispatchers' tasks")]),
    (
        "schedlab-dwcs-status",
        &[
            (
                "schedlab dwcs status --watch 1",
                "refresh every second while a dwcs or edf run is active",
            ),
            ("schedlab dwcs status --json", "the same as JSON ([] when nothing is running)"),
        ],
    ),
    (
        "schedlab-trace",
        &[
            ("schedlab trace 3", "what the kernel's trace of run 3 says, per cell"),
            (
                "schedlab trace 3 --cell cpu/fifo/n8 --rep 1",
                "one cell repetition, worker by worker",
            ),
        ],
    ),
    (
        "schedlab-trace-export",
        &[(
            "schedlab trace export 3 --cell cpu/fifo/n8 -o cell.pftrace",
            "one cell repetition's trace for ui.perfetto.dev",
        )],
    ),
    (
        "schedlab-completions",
        &[(
            "source <(schedlab completions bash)",
            "complete schedlab's subcommands, flags and values in this bash",
        )],
    ),
    (
        "schedlab-man",
        &[(
            "schedlab man -o man && man -l man/schedlab.1",
            "write the man pages and read the first",
        )],
    ),
    (
        "schedlab-import",
        &[(
            "schedlab import rt-app tasks.json -o tasks.toml",
            "an rt-app task description as an experiment file",
        )],
    ),
    (
        "schedlab-import-rt-app",
        &[
            ("schedlab import rt-app tasks.json -o tasks.toml", "write the experiment file"),
            ("schedlab import rt-app tasks.json -o tasks.toml --force", "replace an existing one"),
        ],
    ),
    (
        "schedlab-merge",
        &[(
            "schedlab merge -o all.db shard0.db shard1.db",
            "copy the shards' runs into all.db, each run once",
        )],
    ),
    (
        "schedlab-slurm",
        &[
            (
                "schedlab slurm experiments/pa3.toml --shards 4 --shared /scratch/pa3",
                "print the job array's scripts",
            ),
            (
                "schedlab slurm experiments/pa3.toml --shards 4 --shared /scratch/pa3 --submit",
                "submit it and the merge job",
            ),
        ],
    ),
];

/// The EXAMPLES section of the man page `name` (roff), empty when the table has none.
fn examples_section(name: &str) -> String {
    let Some((_, examples)) = EXAMPLES.iter().find(|(n, _)| *n == name) else {
        return String::new();
    };
    let mut out = String::from(".SH EXAMPLES\n");
    for (line, what) in examples.iter() {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(line), roff(what)));
    }
    out
}

/// Text as roff prints it: backslashes and hyphens escaped, no line read as a request.
fn roff(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example parses as a command line of its own page's command (or a subcommand).
    #[test]
    fn every_example_is_a_command_line_of_its_page_s_command() {
        for (page, examples) in EXAMPLES {
            for (line, _) in examples.iter() {
                // The shell around a command (`source <(..)`, `> file`, `&& man ..`) is not schedlab's.
                let start = line.find("schedlab ").expect("an example runs schedlab");
                let command = line[start..].split(['>', ')', '&']).next().unwrap();
                let words: Vec<&str> = command.split_whitespace().collect();
                let matches = super::super::Cli::command()
                    .try_get_matches_from(&words)
                    .unwrap_or_else(|e| panic!("{page}: {line}: {e}"));
                let mut chain = vec!["schedlab".to_string()];
                let mut m = &matches;
                while let Some((name, sub)) = m.subcommand() {
                    chain.push(name.to_string());
                    m = sub;
                }
                let of = chain.join("-");
                // A page's examples may use its subcommands (`dwcs` shows `dwcs status`).
                let mine = of == *page || of.starts_with(&format!("{page}-"));
                assert!(mine, "{page}: {line} is an example of {of}");
            }
        }
    }
}
