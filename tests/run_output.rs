//! What `run` prints when nobody watches a terminal (issue #21 item 5): one line per step with
//! elapsed time and ETA, and the run's one-line summary; with `--quiet`, only the summary.

use crate::util::Lab;

const SPEC: &str = "name = \"log\"\nrepetitions = 2\nwarmup = 1\n[matrix]\nworkload = [\"nap\"]\nprocesses = [1, 2]\n\
                    [workloads.nap]\nkind = \"command\"\nargv = [\"sleep\", \"0.05\"]\n";

/// `m:ss` or `h:mm:ss`.
fn is_clock(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    (2..=3).contains(&parts.len())
        && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && parts[1..].iter().all(|p| p.len() == 2)
}

#[test]
fn piped_progress_has_a_line_per_step_with_elapsed_and_eta_then_the_summary() {
    let lab = Lab::new();
    let spec = lab.spec("log.toml", SPEC);
    let out = lab.run(&["run", spec.to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let steps: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(steps.len(), 6, "a warm-up and two repetitions of two cells: {err}");
    for (i, line) in steps.iter().enumerate() {
        assert!(line.starts_with(&format!("[{}/6] nap/other/n", i + 1)), "{line}");
        let (before, eta) = line.rsplit_once("  ETA ").unwrap_or_else(|| panic!("no ETA: {line}"));
        let elapsed =
            before.rsplit_once("  elapsed ").unwrap_or_else(|| panic!("no elapsed: {line}")).1;
        assert!(is_clock(elapsed), "{line}");
        // Before the first step finished there is no pace to go by.
        assert!(if i == 0 { eta == "?" } else { is_clock(eta) }, "{line}");
    }
    assert!(
        steps[0].contains("rep 1 (warm-up)") && steps[1].contains("rep 1  elapsed"),
        "{steps:?}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with("run 1 complete: 2 cells, 4 measured cell repetitions in "), "{last}");
    assert!(last.ends_with("; tables: schedlab show 1"), "{last}");
    assert!(stdout.contains("Per cell, totals"), "the tables come before it: {stdout}");
}

#[test]
fn quiet_prints_only_the_summary() {
    let lab = Lab::new();
    let spec = lab.spec("log.toml", SPEC);
    let out = lab.run(&["run", spec.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "nothing on standard error");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("run 1 complete: 2 cells, 4 measured cell repetitions in "),
        "{stdout}"
    );
    // A failing cell: the summary says so (standard error says why, as an error does).
    let failing = lab.spec("f.toml", &SPEC.replace("[\"sleep\", \"0.05\"]", "[\"false\"]"));
    let out = lab.run(&["run", failing.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with(
            "run 2 complete with failures: 2 cells, 4 measured cell repetitions (4 FAILED) in "
        ),
        "{stdout}"
    );
}
