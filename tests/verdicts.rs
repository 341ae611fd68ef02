//! `compare`'s verdicts (issue 45) on stored fixtures: identical runs are never called
//! changed, a run 5% slower is `regressed` on its time figures and `--fail-on regressed`
//! exits 1, the floor of a noise run is used and named.

use crate::report::{fixture_of, store_run};
use crate::util::Lab;

#[test]
fn two_identical_runs_pass_fail_on_regressed_and_every_verdict_is_same_or_undecided() {
    let lab = Lab::new();
    let a = store_run(&lab.db(), "a", &fixture_of(1.0, 10, 0.01)).to_string();
    let b = store_run(&lab.db(), "b", &fixture_of(1.0, 10, 0.01)).to_string();
    let out = lab.run(&[
        "compare",
        &a,
        &b,
        "--metric",
        "wall,makespan",
        "--fail-on",
        "regressed",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["verdicts"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 36, "18 cells x 2 figures");
    for r in rows {
        assert!(r["verdict"] == "same" || r["verdict"] == "undecided", "{r}");
    }
    assert_eq!(v["verdicts"]["counts"]["same"], 36, "identical values are the same within 5%");
}

#[test]
fn a_run_five_percent_slower_regresses_on_its_time_figures_and_fails_on_regressed() {
    let lab = Lab::new();
    let a = store_run(&lab.db(), "a", &fixture_of(1.0, 10, 0.01)).to_string();
    let slow = store_run(&lab.db(), "slow", &fixture_of(1.05, 10, 0.01)).to_string();
    let out =
        lab.run(&["compare", &a, &slow, "--metric", "wall,throughput", "--fail-on", "regressed"]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    // Wall time is higher, throughput lower: both are regressions (the registry's direction).
    assert!(text.contains("36 regressed, 0 improved, 0 same, 0 undecided of 36"), "{text}");
    assert!(text.contains("▲ regressed") && text.contains("▼ regressed"), "{text}");
    assert!(
        err.contains("36 of 36 rows are regressed (--fail-on)") && err.contains("exit status 1"),
        "{err}"
    );
    // The other way round, the same change is an improvement: not a failure.
    let out = lab.run(&["compare", &slow, &a, "--metric", "wall", "--fail-on", "regressed"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 regressed, 18 improved"));
}

#[test]
fn same_within_sets_the_margin_and_a_change_inside_it_is_same() {
    let lab = Lab::new();
    let a = store_run(&lab.db(), "a", &fixture_of(1.0, 10, 0.01)).to_string();
    let b = store_run(&lab.db(), "b", &fixture_of(1.005, 10, 0.01)).to_string();
    // 0.5% is below the 1% gate: never called changed; within ±2% it is the same.
    let text = lab.ok(&["compare", &a, &b, "--same-within", "2%"]);
    assert!(text.contains("0 regressed, 0 improved, 18 same"), "{text}");
    assert!(text.contains("within ±2.0% (--same-within)"), "{text}");
    // Within ±0.1% the interval does not fit: undecided, not same.
    let text = lab.ok(&["compare", &a, &b, "--same-within", "0.001"]);
    assert!(text.contains("0 same, 18 undecided"), "{text}");
    let out = lab.run(&["compare", &a, &b, "--same-within", "150%"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_names_the_noise_floor_it_used_and_no_floor_leaves_it_out() {
    let lab = Lab::new();
    // A noise run: 20 repetitions, arms by parity, 2% apart within each cell.
    let noise = store_run(&lab.db(), "noise", &fixture_of(1.0, 20, 0.02));
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let floors = schedlab_session::floor::store_floors(&store, &[noise], 1.7e9).unwrap();
    assert!(floors.contains_key(&("cpu/other/n4".to_string(), "wall".to_string())), "{floors:?}");
    drop(store);
    let a = store_run(&lab.db(), "a", &fixture_of(1.0, 10, 0.01)).to_string();
    let b = store_run(&lab.db(), "b", &fixture_of(1.0, 10, 0.01)).to_string();
    let text = lab.ok(&["compare", &a, &b]);
    assert!(text.contains(&format!("within the floor of run {noise}")), "{text}");
    assert!(text.contains("18 of 18 rows have one"), "{text}");
    let text = lab.ok(&["compare", &a, &b, "--no-floor"]);
    assert!(text.contains("no floor of this machine"), "{text}");
}

#[test]
fn compare_by_an_axis_judges_each_level_against_the_baseline_with_fail_on() {
    let lab = Lab::new();
    // fifo's and rr's wall times are 1.4 and 1.8 times other's in every group.
    let a = store_run(&lab.db(), "a", &fixture_of(1.0, 10, 0.01)).to_string();
    let out =
        lab.run(&["compare", &a, "--by", "policy", "--format", "json", "--fail-on", "regressed"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["verdicts"]["rows"].as_array().unwrap().len(),
        12,
        "3 workloads x 2 counts x 2 levels"
    );
    assert_eq!(v["verdicts"]["counts"]["regressed"], 12, "{}", v["verdicts"]["line"]);
    let text = lab.ok(&["compare", &a, "--by", "policy", "--baseline", "rr"]);
    assert!(
        text.contains("verdicts, each level against rr") && text.contains("each policy"),
        "{text}"
    );
    assert!(text.contains("0 regressed, 12 improved"), "{text}");
}

#[test]
fn env_and_show_name_the_newest_noise_floor_of_this_machine() {
    let lab = Lab::new();
    let env = lab.ok(&["env"]);
    assert!(env.contains("noise floor      none measured on this machine"), "{env}");
    assert!(!lab.db().exists(), "env creates no database");
    let spec = lab.spec(
        "tiny.toml",
        "name = \"tiny\"\n[matrix]\nworkload = [\"cpu\"]\n[workloads.cpu]\nkind = \"pi\"\niterations = 2_000_000\n",
    );
    lab.ok(&["noise", spec.to_str().unwrap(), "--per-arm", "3", "-q"]);
    let env = lab.ok(&["env"]);
    assert!(
        env.contains("noise floor      run 1's, measured") && env.contains("ago on this machine"),
        "{env}"
    );
    let json: serde_json::Value = serde_json::from_str(&lab.ok(&["env", "--json"])).unwrap();
    assert_eq!(json["noise_floor"]["run"], 1, "{json}");
    let show = lab.ok(&["show", "1"]);
    assert!(
        show.contains("noise floor: run 1's, measured") && show.contains("on the run's machine"),
        "{show}"
    );
}
