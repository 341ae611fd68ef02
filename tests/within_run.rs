//! `schedlab compare RUN --by AXIS` (issue 33, item 5): one run's policies compared within
//! it, group by group, with p-values adjusted for the number of tests; the two-run compare
//! adjusts its cells' p-values too; the report opens with "What this run shows".

use crate::util::Lab;

/// other and batch (no privilege needed) × 1 and 2 processes, 3 repetitions: run 1.
fn two_policies() -> Lab {
    let lab = Lab::new();
    let spec = lab.spec(
        "within.toml",
        "name = \"within\"\nrepetitions = 3\nwarmup = 0\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"batch\"]\nprocesses = [1, 2]\n[workloads.cpu]\nkind = \"pi\"\niterations = 200000\n",
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    lab
}

fn fails(lab: &Lab, args: &[&str]) -> String {
    let out = lab.run(args);
    assert_eq!(out.status.code(), Some(2), "schedlab {args:?} is bad input");
    assert!(out.stdout.is_empty(), "nothing on stdout for {args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn compare_by_policy_compares_the_policies_of_one_run_per_process_count() {
    let lab = two_policies();
    let table = lab.ok(&["compare", "1", "--by", "policy"]);
    for want in [
        "group",
        "ratio /other [95% CI]",
        "p (Welch)",
        "p adj. (Holm)",
        "processes=1",
        "processes=2",
        "2 pairs in 2 groups",
        "adjusted for 2 tests by Holm",
    ] {
        assert!(table.contains(want), "{want:?} in\n{table}");
    }

    let csv = lab.ok(&["compare", "1", "--by", "policy", "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "group,policy,key,baseline,baseline_key,metric,n,mean,n_baseline,mean_baseline,ratio,ratio_ci_low,ratio_ci_high,p_welch,p_adjusted,correction,change"
    );
    assert_eq!(lines.len(), 3, "one row per process count: {csv}");
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(
        &row[..6],
        ["processes=1", "batch", "cpu/batch/n1", "other", "cpu/other/n1", "wall"]
    );
    assert_eq!((row[6], row[8]), ("3", "3"), "three repetitions a side");
    let (p, adj): (f64, f64) = (row[13].parse().unwrap(), row[14].parse().unwrap());
    assert!(adj >= p && adj <= 1.0, "an adjusted p-value is never below the raw one: {p} {adj}");

    let json: serde_json::Value = serde_json::from_str(&lab.ok(&[
        "compare",
        "1",
        "--by",
        "policy",
        "--baseline",
        "batch",
        "--metric",
        "involuntary",
        "--correction",
        "bh",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["baseline"], "batch");
    assert_eq!(json["correction"], "bh");
    assert_eq!(json["metric"], "involuntary");
    assert_eq!(json["group_axes"], serde_json::json!(["processes"]));
    assert_eq!(json["groups"][1]["pairs"][0]["level"], "other");

    let md = lab.ok(&["compare", "1", "--by", "procs", "--format", "markdown"]);
    assert!(md.starts_with("| group | processes |"), "procs names the process count:\n{md}");
    assert!(md.contains("| policy=batch |"), "{md}");
}

#[test]
fn compare_by_refuses_what_the_run_does_not_sweep_and_names_what_it_does() {
    let lab = two_policies();
    let e = fails(&lab, &["compare", "1", "--by", "polcy"]);
    assert!(e.contains("no axis \"polcy\"; the axes it sweeps: policy, processes"), "{e}");
    let e = fails(&lab, &["compare", "1", "--by", "nice"]);
    assert!(e.contains("one nice only (0): nothing to compare it with"), "{e}");
    let e = fails(&lab, &["compare", "1", "--by", "policy", "--baseline", "fifo"]);
    assert!(e.contains("\"fifo\" is not a policy of the run; its levels: other, batch"), "{e}");
    let e = fails(&lab, &["compare", "1"]);
    assert!(e.contains("compare needs a second run or an axis"), "{e}");
    let e = fails(&lab, &["compare", "1", "1", "--by", "policy"]);
    assert!(e.contains("cannot be used with"), "{e}");
    let e = fails(&lab, &["compare", "1", "--by", "policy", "--correction", "bonferroni"]);
    assert!(e.contains("use one of holm, bh, none"), "{e}");
    let e = fails(&lab, &["compare", "1", "1", "--format", "csv"]);
    assert!(e.contains("csv with --by"), "{e}");
}

#[test]
fn compare_of_two_runs_says_which_correction_it_applied() {
    let lab = two_policies();
    let holm = lab.ok(&["compare", "1", "1"]);
    assert!(holm.contains("p adj. (Holm)"), "{holm}");
    assert!(holm.contains("p adjusted by Holm over all 4"), "{holm}");
    let none = lab.ok(&["compare", "1", "1", "--correction", "none", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&none).unwrap();
    assert_eq!(json["correction"], "none");
    let cell = &json["cells"][0];
    assert_eq!(cell["p_adjusted"], cell["welch"]["p_value"], "no correction leaves p as it is");
}

#[test]
fn the_report_opens_with_what_this_run_shows() {
    let lab = two_policies();
    let out = lab.path("report");
    lab.ok(&["report", "1", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let at = html.find("What this run shows</h2>").expect("the section");
    assert!(at < html.find("<h2 id=\"figures\">").unwrap(), "near the top");
    assert!(html.contains("<th>lowest wall time per process</th>"), "its table");
    assert!(html.contains("<th>fewest preemptions per process</th>"));
    assert!(html.contains("Each policy of the run against other"), "what it compares");
}
