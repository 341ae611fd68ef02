//! Shell completions and man pages (issue #21 item 1): each shell loads its script, and a
//! man page renders for every subcommand `--help` lists.

use crate::util::Lab;
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `shell -c script`, with the schedlab binary in $SCHEDLAB.
fn shell(shell: &str, script: &str) -> (bool, String) {
    let out = Command::new(shell)
        .args(["-c", script])
        .env("SCHEDLAB", env!("CARGO_BIN_EXE_schedlab"))
        .output()
        .unwrap();
    (
        out.status.success(),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn bash_zsh_and_fish_load_the_completions() {
    let (ok, out) =
        shell("bash", r#"source <("$SCHEDLAB" completions bash) && complete -p schedlab"#);
    assert!(ok && out.contains("-F _schedlab schedlab"), "{out}");
    if have("zsh") {
        let (ok, out) = shell(
            "zsh",
            r#"autoload -U compinit; compinit -u; source <("$SCHEDLAB" completions zsh); print -r -- ${_comps[schedlab]}"#,
        );
        assert!(ok && out.trim() == "_schedlab", "{out}");
    } else {
        eprintln!("note: zsh is not installed; its completions were not loaded");
    }
    if have("fish") {
        let (ok, out) =
            shell("fish", r#""$SCHEDLAB" completions fish | source; complete -C "schedlab tr""#);
        assert!(ok && out.starts_with("trace\t"), "{out}");
    } else {
        eprintln!("note: fish is not installed; its completions were not loaded");
    }
}

#[test]
fn every_subcommand_has_a_man_page_that_renders() {
    require!(have("man"), "man is not installed (man-db)");
    let lab = Lab::new();
    let dir = lab.path("man");
    lab.ok(&["man", "-o", dir.to_str().unwrap()]);
    // The subcommands as --help lists them ("  NAME  about"), help itself aside.
    let help = lab.ok(&["--help"]);
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 12 && commands.contains(&"man"), "{commands:?}");
    let pages = std::iter::once("schedlab.1".to_string())
        .chain(commands.iter().map(|c| format!("schedlab-{c}.1")));
    for page in pages.chain(["schedlab-trace-export.1".to_string()]) {
        let path = dir.join(&page);
        assert!(path.is_file(), "no {page}");
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("NAME") && text.contains("SYNOPSIS"),
            "{page}: {text}"
        );
        assert!(
            out.stderr.is_empty(),
            "{page} renders with warnings: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A file where the directory should be is refused.
    let file = lab.path("file");
    std::fs::write(&file, "").unwrap();
    let out = lab.run(&["man", "-o", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The backticked names of a list in docs/SPEC.md: from the end of `lead` to the first
/// period that ends a sentence.
fn spec_list(spec: &str, lead: &str) -> Vec<String> {
    let from =
        spec.find(lead).unwrap_or_else(|| panic!("docs/SPEC.md has no {lead:?}")) + lead.len();
    let rest = &spec[from..];
    let end =
        rest.find(".\n").into_iter().chain(rest.find(". ")).min().expect("a period ends the list");
    rest[..end].split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn show_metric_help_and_specs_figure_lists_name_exactly_the_registries_figures() {
    let rt: Vec<&str> = schedlab_analysis::rt::FIGURES.iter().map(|f| f.name).collect();
    let bench: Vec<&str> = schedlab_analysis::bench::FIGURES.iter().map(|f| f.name).collect();
    let cell =
        schedlab_report::tables::TOTALS.iter().chain(schedlab_report::tables::PER_PROCESS.iter());
    let help = crate::util::Lab::new().ok(&["show", "--help"]);
    for name in cell.map(|f| f.name).chain(rt.iter().copied()).chain(bench.iter().copied()) {
        assert!(help.contains(name), "show --help does not name {name}:\n{help}");
    }
    let spec =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SPEC.md")).unwrap();
    assert_eq!(
        spec_list(&spec, "`show --metric` and\n`compare --metric`:"),
        rt,
        "SPEC's real-time figures"
    );
    assert_eq!(
        spec_list(&spec, "`show --format json|csv` and `export --per cell`:"),
        bench,
        "SPEC's benchmark figures"
    );
}
