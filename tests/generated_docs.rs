//! The lists in `--help`, the man pages and the completions come from the code's own lists
//! (issue 33, item 10): every metric and format is shown, completed and accepted, and every
//! man page has EXAMPLES.

use crate::util::Lab;
use schedlab_analysis::Metric;

/// The names under "Possible values:" of one option in a `--help` text.
fn possible_values(help: &str, option: &str) -> Vec<String> {
    let at = help.find(option).unwrap_or_else(|| panic!("no {option} in {help}"));
    let rest = &help[at..];
    let list = rest.split("Possible values:").nth(1).expect("a list of values");
    list.lines()
        .skip(1)
        .map_while(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect()
}

#[test]
fn compare_and_report_help_and_man_page_list_every_metric_with_the_trace_ones() {
    let lab = Lab::new();
    let every: Vec<&str> = Metric::every().map(|m| m.name()).collect();
    for cmd in ["compare", "report"] {
        let help = lab.ok(&[cmd, "--help"]);
        assert_eq!(possible_values(&help, "--metric"), every, "{cmd} --help: {help}");
    }
    let dir = lab.path("man");
    lab.ok(&["man", "-o", dir.to_str().unwrap()]);
    let page = std::fs::read_to_string(dir.join("schedlab-compare.1")).unwrap();
    for m in Metric::TRACE {
        assert!(page.contains(m.name()), "{} in the man page: {page}", m.name());
    }
    // An unknown one is refused with the closest name (the real-time latencies now) and the
    // whole list, as before.
    let out = lab.run(&["compare", "1", "2", "--metric", "latency"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown metric \"latency\" (did you mean \"latency_"), "{err}");
    assert!(err.contains(&format!("; use one of {}", every.join(", "))), "{err}");
}

/// export --help lists five formats, and each one it lists is one export writes.
#[test]
fn export_help_lists_every_format_export_writes() {
    let lab = Lab::new();
    crate::edges::simulate_one_cell(&lab);
    let listed = possible_values(&lab.ok(&["export", "--help"]), "--format");
    let mut also: Vec<String> =
        schedlab_report::export::FORMATS.iter().map(|(f, _, _)| f.to_string()).collect();
    also.extend(["parquet".into(), "hyperfine".into()]);
    assert_eq!(listed, also);
    for f in &listed {
        let file = lab.path(&format!("out.{f}"));
        let out = lab.run(&["export", "--format", f, "-o", file.to_str().unwrap()]);
        assert!(out.status.success(), "{f}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(std::fs::metadata(&file).unwrap().len() > 0, "{f} wrote nothing");
    }
    let out = lab.run(&["export", "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format \"xml\"; use one of"));
}

/// bash completes the values of --format and --metric, not only the flags.
#[test]
fn bash_completion_offers_formats_and_metrics() {
    let lab = Lab::new();
    let script = lab.ok(&["completions", "bash"]);
    let formats: Vec<&str> = schedlab_report::export::FORMATS.iter().map(|(f, _, _)| *f).collect();
    let formats = format!("{} parquet hyperfine", formats.join(" "));
    assert!(script.contains(&formats), "export --format completes {formats}");
    let every: Vec<&str> = Metric::every().map(|m| m.name()).collect();
    assert!(script.contains(&every.join(" ")), "compare --metric completes every metric");
}

/// Each man page ends with examples.
#[test]
fn every_man_page_has_examples() {
    let lab = Lab::new();
    let dir = lab.path("man");
    lab.ok(&["man", "-o", dir.to_str().unwrap()]);
    let mut pages = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        let examples = page.split("\n.SH EXAMPLES\n").nth(1);
        assert!(
            examples.is_some_and(|e| e.starts_with(".TP\n\\fB") && e.contains("schedlab")),
            "{} has no EXAMPLES with a schedlab command",
            path.display()
        );
        pages += 1;
    }
    assert!(pages >= 20, "{pages} pages");
}
