//! The real-time part of `show`, `export` and `report` (seed 003's figures): a fixture run of
//! periodic task sets written through the store (no root, no time), a small real run where
//! root allows, and the report opened in headless Chromium.

use crate::report::{
    assert_drawn, check_figures_in_chromium, chromium_for, decode, figure_ids, measuring, record,
    store_run,
};
use crate::util::{is_root, Lab};
use schedlab_model::{hist, CellParams, CellRecord, CellRt, RtTask, Sample};

const SCHEDULERS: [&str; 5] = ["other", "fifo-rm", "deadline", "edf", "dwcs"];
const UTILISATIONS: [f64; 3] = [0.3, 0.6, 0.9];

/// One task's results: with k = (scheduler + 1) x (utilisation + 1), `3k + rep` sliding
/// violations, half as many fixed ones, `4k + rep` of 200 jobs missed; tasks the engine's
/// first three schedulers run time their wake-ups, spread over 5..500 us times the scheduler.
fn task(scheduler: usize, utilisation: usize, rep: u64) -> schedlab_model::Extra {
    let k = ((scheduler + 1) * (utilisation + 1)) as u64;
    let timed = scheduler < 3;
    let h = timed.then(|| {
        let mut h = hist::Histogram::<u64>::new(3).unwrap();
        for i in 0..200u64 {
            // Geometric steps: an even spread on the log axis.
            h.record((5_000.0 * 100f64.powf(i as f64 / 199.0)) as u64 * (scheduler as u64 + 1))
                .unwrap();
        }
        h
    });
    let rt = RtTask {
        jobs: 200,
        met: 200 - (4 * k + rep),
        misses: 4 * k + rep,
        fixed_violations: (3 * k + rep) / 2,
        sliding_violations: 3 * k + rep,
        time_in_violation_pct: (5 * k + rep) as f64,
        x: 1,
        y: 2,
        wakeup: h.as_ref().map(hist::summary),
        wakeup_hist: h.as_ref().map(hist::encode),
        source: if timed { "worker" } else { "dispatcher" }.into(),
        ..Default::default()
    };
    schedlab_model::Extra { rt: Some(rt), ..Default::default() }
}

/// 5 schedulers x 3 utilisations of a 4-task set, 3 repetitions.
pub(crate) fn fixture() -> Vec<CellRecord> {
    let mut out = Vec::new();
    for (si, sched) in SCHEDULERS.iter().enumerate() {
        for (ui, u) in UTILISATIONS.iter().enumerate() {
            let cell_id = (si * UTILISATIONS.len() + ui) as u32;
            let params = CellParams {
                cell_id,
                key: format!("set/{sched}/utilisation={u}/n4"),
                workload: "set".into(),
                workload_kind: "periodic".into(),
                policy: sched.to_string(),
                class: "other".into(),
                processes: 4,
                ..Default::default()
            };
            for rep in 0..3u32 {
                let samples = (0..4)
                    .map(|i| Sample {
                        index: i,
                        exit_code: Some(0),
                        extra: task(si, ui, rep.into()),
                        ..Default::default()
                    })
                    .collect();
                let rt = CellRt {
                    scheduler: sched.to_string(),
                    utilisation: Some(*u),
                    min_utilisation: *u,
                    ..Default::default()
                };
                out.push(CellRecord {
                    rt: Some(rt),
                    ..record(params.clone(), rep, cell_id * 3 + rep, 1.0, samples)
                });
            }
        }
    }
    out
}

/// The series a figure has: a scheduler each, or those whose tasks time their wake-ups.
fn series(id: &str) -> usize {
    if id.contains("wakeup") {
        3
    } else {
        5
    }
}

#[test]
fn a_real_time_fixture_run_is_shown_exported_and_reported() {
    let lab = Lab::new();
    let id = store_run(&lab.db(), "rt-fixture", &fixture()).to_string();
    let show = lab.ok(&["show", &id]);
    assert!(show.contains("Real-time task sets"), "{show}");
    // fifo-rm at 0.6: k = 4, sliding violations 12, 13, 14 per task: mean 13, on the log scale
    // h = t(0.975, 2) x (1 / 13) / sqrt(3) = 0.1911, so 13 e^h = 15.74 and 13 e^-h = 10.74.
    let rt = &show[show.find("Real-time task sets").unwrap()..];
    let row = rt.lines().find(|l| l.contains("/fifo-rm/") && l.contains("=0.6/")).unwrap();
    assert!(row.contains("13.0 +2.7/-2.3"), "{row}");
    assert!(show.contains("dispatcher's tally; no latencies recorded"), "{show}");

    let csv = lab.ok(&["export", &id, "--format", "csv"]);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for col in [
        "rt_scheduler",
        "rt_jobs",
        "rt_misses",
        "rt_sliding_violations",
        "rt_time_in_violation_pct",
        "rt_wakeup_p99_us",
        "rt_handoff_p99_us",
    ] {
        assert!(header.contains(&col), "no {col} column: {header:?}");
    }

    let out = lab.ok(&["report", &id, "-o", "rep"]);
    assert!(out.contains("6 figures"), "{out}");
    let html = std::fs::read_to_string(lab.path("rep/index.html")).unwrap();
    let ids = figure_ids(&html);
    assert_eq!(
        ids,
        [
            "rt-violations",
            "rt-violation-time",
            "rt-misses",
            "rt-wakeup-u0_3",
            "rt-wakeup-u0_6",
            "rt-wakeup-u0_9"
        ]
        .map(|i| format!("fig-{i}"))
    );
    assert!(html.contains("Real-time task sets per cell (as in the DWCS real-time study)"));
    for id in &ids {
        let stem = id.strip_prefix("fig-").unwrap();
        let svg = std::fs::read_to_string(lab.path(&format!("rep/figures/{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{stem}.svg");
        let (w, h, rgb) = decode(&lab.path(&format!("rep/figures/{stem}.png")));
        assert_eq!((w, h), (760, 420));
        assert_drawn(&format!("{stem}.png"), w, &rgb, series(stem));
    }
}

/// A small seed-003 sweep: four schedulers at two utilisations, two repetitions of half a
/// second (about 12 s with process start-up and the dispatcher). Light and pinned to CPU 0,
/// because the other real-time tests of this binary run beside it: tests/rt.rs pins its sets
/// to the last CPU and counts their misses. No SCHED_DEADLINE set: its tasks are global and
/// would preempt those sets' dispatcher there.
const SMALL_RUN: &str = concat!(
    "name = \"rt-small\"\nrepetitions = 2\n",
    "[matrix]\nworkload = [\"set\"]\nscheduler = [\"other\", \"fifo-rm\", \"edf\", \"dwcs\"]\nutilisation = [0.2, 0.4]\n",
    "[workloads.set]\nkind = \"periodic\"\nduration_s = 0.5\ncpu = 0\ngenerate = { tasks = 4, x = 1, y = 2, seed = 3 }\n",
);

#[test]
fn rt_report_renders_every_figure_in_chromium() {
    let Some(chromium) = chromium_for("rtreport::rt_report_renders_every_figure_in_chromium")
    else {
        return;
    };
    let lab = Lab::new();
    let _one_at_a_time = measuring();
    let (id, measured) = if is_root() {
        let spec = lab.spec("rt.toml", SMALL_RUN);
        let started = std::time::Instant::now();
        lab.ok(&["run", spec.to_str().unwrap()]);
        eprintln!("rt-small ran in {:.1} s", started.elapsed().as_secs_f64());
        ("1".to_string(), true)
    } else {
        eprintln!("not root: fifo-rm and deadline tasks need CAP_SYS_NICE, so the report is of the fixture run");
        (store_run(&lab.db(), "rt-fixture", &fixture()).to_string(), false)
    };
    let show = lab.ok(&["show", &id]);
    assert!(show.contains("Real-time task sets"), "{show}");
    lab.ok(&["report", &id, "-o", "rep"]);
    let html = std::fs::read_to_string(lab.path("rep/index.html")).unwrap();
    let ids = figure_ids(&html);
    for fig in ["rt-violations", "rt-violation-time", "rt-misses"] {
        assert!(ids.contains(&format!("fig-{fig}")), "no {fig}: {ids:?}");
    }
    assert!(ids.iter().any(|i| i.starts_with("fig-rt-wakeup")), "no wake-up distribution: {ids:?}");
    // A measured run stored every job: the report loads them for the response time figure.
    assert_eq!(ids.iter().any(|i| i.starts_with("fig-rt-response")), measured, "{ids:?}");
    // Measured lines may coincide (no violations at all at a low utilisation, say) and hide
    // each other: each figure must show at least one drawn across the plot. The fixture's
    // lines all differ: every one must be.
    let want = |id: &str| (series(id), if measured { 1 } else { series(id) });
    let checked = check_figures_in_chromium(&chromium, &lab.path("rep"), &want);
    assert_eq!(checked, ids.len());
}

#[test]
fn real_time_figures_are_named_in_json_chosen_by_metric_and_compared() {
    let lab = Lab::new();
    let id = store_run(&lab.db(), "rt-fixture", &fixture()).to_string();
    let json: Vec<serde_json::Value> =
        serde_json::from_str(&lab.ok(&["show", &id, "--format", "json"])).unwrap();
    let row = json.iter().find(|r| r["key"] == "set/fifo-rm/utilisation=0.6/n4").unwrap();
    // k = 4: sliding violations 12, 13, 14 per task over the repetitions (as in the table).
    assert_eq!(row["sliding_violations_per_proc"].as_f64(), Some(13.0), "{row}");
    assert!(row["sliding_violations_per_proc_ci_low"].as_f64().unwrap() < 13.0, "{row}");
    assert!(row["response_p99_us"].is_null(), "the fixture keeps no per-job records: {row}");
    let exported: Vec<serde_json::Value> =
        serde_json::from_str(&lab.ok(&["export", &id, "--per", "cell", "--format", "json"]))
            .unwrap();
    assert_eq!(exported, json, "export --per cell is show's per-cell summary");

    // --metric chooses real-time figures as it chooses the others.
    let shown = lab.ok(&["show", &id, "--metric", "miss_pct"]);
    assert!(shown.contains("missed [%]") && !shown.contains("sliding viol."), "{shown}");
    assert!(!shown.contains("Per cell, totals"), "{shown}");

    // compare takes each real-time figure by the same name; preempted is show's cell total.
    let same = lab.ok(&["compare", &id, &id, "--metric", "miss_pct", "--format", "json"]);
    assert!(same.contains("\"metric\"") && same.contains("miss_pct"), "{same}");
    let out = lab.run(&["compare", &id, &id, "--metric", "preempted"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean \"preempted_per_proc\"?"), "{err}");
}
