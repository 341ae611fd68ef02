//! The HTML report and the comparison formats on the mock pa3 run: no root, no time.

use crate::html::{render, CompareSection, ReportInput, RunMeta};
use crate::testdata::{lab1_records, pa3_records, run_meta};
use crate::{compare, plots};
use schedlab_analysis::{
    cell_outliers, cell_stats, compare_runs, Correction, Metric, RunComparison,
    MODIFIED_Z_THRESHOLD,
};
use schedlab_model::{CellRecord, CpuTheory};

fn html_of(files: &[(String, Vec<u8>)]) -> String {
    assert_eq!(files[0].0, "index.html");
    String::from_utf8(files[0].1.clone()).unwrap()
}

/// Run A: cpu at 10 processes under other, fifo and rr; run B: other 10% slower, fifo the same, no rr.
fn two_runs() -> (Vec<CellRecord>, Vec<CellRecord>) {
    let pick = |f: f64, policy: &str| -> Vec<CellRecord> {
        pa3_records(f)
            .into_iter()
            .filter(|r| {
                r.params.workload == "cpu" && r.params.processes == 10 && r.params.policy == policy
            })
            .collect()
    };
    let a = [pick(1.0, "other"), pick(1.0, "fifo"), pick(1.0, "rr")].concat();
    let b = [pick(1.1, "other"), pick(1.0, "fifo")].concat();
    (a, b)
}

fn small_comparison(metric: Metric) -> RunComparison {
    let (a, b) = two_runs();
    compare_runs(&a, &b, metric, 0.05, Correction::Holm).unwrap()
}

#[test]
fn report_is_self_contained_with_every_figure_inline_and_beside_it() {
    let records = pa3_records(1.0);
    let stats = cell_stats(&records);
    let outliers = cell_outliers(&records, MODIFIED_Z_THRESHOLD);
    let run = run_meta(7);
    let r = render(&ReportInput { outliers: &outliers, ..ReportInput::new(&run, &stats) }).unwrap();
    let html = html_of(&r.files);
    assert_eq!(r.charts.len(), 15);
    assert_eq!(r.files.len(), 1 + 2 * 15);
    for c in &r.charts {
        assert!(
            html.contains(&format!("<figure id=\"fig-{}\">", c.id)),
            "{} not in the page",
            c.id
        );
        for ext in ["svg", "png"] {
            let name = format!("figures/{}.{ext}", c.id);
            assert!(r.files.iter().any(|(n, b)| *n == name && !b.is_empty()), "{name} missing");
            assert!(html.contains(&format!("href=\"{name}\"")), "no link to {name}");
        }
    }
    assert_eq!(html.matches("<svg ").count(), 15, "every figure inline");
    // Nothing is fetched: no scripts, stylesheets, images or fonts from anywhere.
    for banned in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        "@import",
        "url(",
        "src=",
        "href=\"http",
        "href=\"//",
    ] {
        assert!(!html.contains(banned), "the page contains {banned}");
    }
    assert!(
        html.contains("name = &quot;pa3&quot;\n# &lt;not a tag&gt; &amp; more"),
        "the spec is shown, escaped"
    );
    assert!(html.contains("cell io/other/n500: 1 process exited 1"), "warnings are listed");
    assert!(html.contains("<th>CPU</th><td>Test CPU</td>"));
    assert!(html.contains("<td>fifo prio 98</td>"));
    assert!(html.contains("No process stands out"), "the mock's spread is even: no outliers");
    assert!(!html.contains("id=\"comparison\""));
}

#[test]
fn a_fairness_run_shows_its_fairness_figures() {
    let records = lab1_records();
    let stats = cell_stats(&records);
    let outliers = cell_outliers(&records, MODIFIED_Z_THRESHOLD);
    let run = run_meta(9);
    let r = render(&ReportInput { outliers: &outliers, ..ReportInput::new(&run, &stats) }).unwrap();
    let html = html_of(&r.files);
    // 5 per-workload figures and Jain's index, alone and with the background; completion
    // times at 4 and 8 processes, alone and with it; the group share with it.
    assert_eq!(r.charts.len(), 6 * 2 + 4 + 1);
    assert_eq!(html.matches("<svg ").count(), 17);
    for id in ["jain-hash-8_bg", "completion-hash-n8-8_bg", "share-hash-8_bg"] {
        assert!(html.contains(&format!("<figure id=\"fig-{id}\">")), "{id} not in the page");
    }
    assert!(
        html.contains("Jain&#39;s index (sum x)^2 / (n sum x^2)"),
        "the caption says how the index is computed"
    );
    assert!(html.contains("when the run studies fairness"), "and when fairness figures are drawn");
}

#[test]
fn outliers_are_tabulated_when_flagged() {
    let mut records = pa3_records(1.0);
    records[0].samples[3].wall_s = 100.0;
    let stats = cell_stats(&records);
    let outliers = cell_outliers(&records, MODIFIED_Z_THRESHOLD);
    let run = run_meta(7);
    let r = render(&ReportInput { outliers: &outliers, ..ReportInput::new(&run, &stats) }).unwrap();
    let html = html_of(&r.files);
    assert!(html.contains("<td>cpu/other/n10</td>"), "the flagged cell is listed");
    assert!(
        html.contains("rep 0 process 3: wall 100.0 vs median"),
        "{}",
        &html[html.find("id=\"outliers\"").unwrap()..][..2000]
    );
}

#[test]
fn comparison_section_shows_every_metric_with_the_chosen_one_open() {
    let (a, b) = two_runs();
    let by_metric: Vec<RunComparison> =
        [Metric::InvoluntaryPerProc, Metric::WallPerProc, Metric::Throughput]
            .iter()
            .map(|m| compare_runs(&a, &b, *m, 0.05, Correction::Holm).unwrap())
            .collect();
    let section = CompareSection { other: run_meta(8), by_metric, rt: Vec::new() };
    let stats = cell_stats(&a);
    let run = run_meta(7);
    let r =
        render(&ReportInput { compare: Some(&section), ..ReportInput::new(&run, &stats) }).unwrap();
    let html = html_of(&r.files);
    assert!(html.contains("Comparison: run 7 (A) against run 8 (B)"));
    assert!(html.contains("<details open>\n<summary>involuntary switches per process</summary>"));
    assert!(html.contains("<details>\n<summary>wall per process [s]</summary>"));
    assert!(
        html.contains("<tr class=\"higher\"><td>cpu/other/n10</td>"),
        "the slower cell is shaded"
    );
    assert!(html.contains("Only in run 7: cpu/rr:98/n10."));
}

#[test]
fn charts_follow_the_figure_list() {
    let stats = cell_stats(&pa3_records(1.0));
    let n: usize = plots::FIGURES
        .iter()
        .map(|f| {
            f(&plots::FigureInput {
                stats: &stats,
                cpus: 4,
                io: &[],
                rt: &[],
                traces: &[],
                sets: &[],
            })
            .len()
        })
        .sum();
    assert_eq!(
        n,
        plots::charts(&plots::FigureInput {
            stats: &stats,
            cpus: 4,
            io: &[],
            rt: &[],
            traces: &[],
            sets: &[]
        })
        .len()
    );
}

#[test]
fn compare_table() {
    insta::assert_snapshot!(
        compare::table(&small_comparison(Metric::WallPerProc), 1, 2).to_string()
    );
}

#[test]
fn compare_markdown() {
    insta::assert_snapshot!(compare::markdown(
        &small_comparison(Metric::InvoluntaryPerProc),
        1,
        2,
        &[]
    ));
}

#[test]
fn compare_json() {
    let v = compare::json(&small_comparison(Metric::WallPerProc), 1, 2, &[]);
    insta::assert_snapshot!(serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn compare_summary_counts_the_verdicts() {
    let c = small_comparison(Metric::WallPerProc);
    let line = compare::summary_line(&c, 1, 2);
    assert!(
        line.starts_with("wall per process [s]: 2 matched cells, 2 tested: 1 significantly higher in run 2, 0 lower, 1 unchanged"),
        "{line}"
    );
    assert!(line.ends_with("; 1 only in run 1"), "{line}");
}

#[test]
fn a_comparison_of_real_time_runs_draws_their_response_times_side_by_side() {
    let a = crate::testdata::rt_records_with_jobs(1);
    let b = crate::testdata::rt_records_with_jobs(2);
    let by_metric =
        vec![compare_runs(&a, &b, Metric::WallPerProc, 0.05, Correction::Holm).unwrap()];
    let other = RunMeta { mode: "sim".into(), ..run_meta(12) };
    let section = CompareSection { other, by_metric, rt: schedlab_analysis::rt_stats(&b) };
    let (stats, rt) = (cell_stats(&a), schedlab_analysis::rt_stats(&a));
    let run = run_meta(11);
    let r =
        render(&ReportInput { compare: Some(&section), rt: &rt, ..ReportInput::new(&run, &stats) })
            .unwrap();
    let html = html_of(&r.files);
    let section = &html[html.find("id=\"comparison\"").expect("a comparison section")..];
    assert!(section.contains("Response times, A against B"));
    // fifo-rm and dwcs have per-job records in both runs: one figure each, in the section.
    assert_eq!(section.matches("<strong>Figure C").count(), 2);
    assert!(
        section.contains("run 11 (measured): median 5.00 ms")
            && section.contains("run 12 (simulated): median 10.0 ms")
    );
    for id in [
        "compare-rt-response-set_fifo-rm_utilisation_0_5_n4",
        "compare-rt-response-set_dwcs_utilisation_0_5_n4",
    ] {
        assert!(r.files.iter().any(|(f, _)| f == &format!("figures/{id}.svg")), "{id}.svg");
        assert!(r.files.iter().any(|(f, _)| f == &format!("figures/{id}.png")), "{id}.png");
    }
    // Without a comparison, none of these.
    let alone = render(&ReportInput { rt: &rt, ..ReportInput::new(&run, &stats) }).unwrap();
    assert!(!alone.files.iter().any(|(f, _)| f.contains("compare-")));
}

#[test]
fn a_real_time_run_shows_its_figures_and_table() {
    let records = crate::testdata::rt_records(&["set"], &[Some(0.25), Some(0.5)]);
    let stats = cell_stats(&records);
    let rt = schedlab_analysis::rt_stats(&records);
    let run = run_meta(11);
    let r = render(&ReportInput { rt: &rt, ..ReportInput::new(&run, &stats) }).unwrap();
    let html = html_of(&r.files);
    let ids: Vec<&str> = r.charts.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["rt-violations", "rt-violation-time", "rt-misses", "rt-wakeup-u0_25", "rt-wakeup-u0_5"]
    );
    assert_eq!(r.files.len(), 1 + 2 * 5, "every figure as SVG and PNG");
    assert_eq!(html.matches("<svg ").count(), 5);
    assert!(html.contains("Real-time task sets per cell (as in the DWCS real-time study)"));
    assert!(html.contains("<th>sliding viol./proc</th>") && html.contains("<td>fifo-rm</td>"));
    assert!(
        html.contains("dispatcher&#39;s tally; no latencies recorded"),
        "edf cells say why they have no latencies"
    );
    assert!(
        html.contains("dispatcher&#39;s tally; latency = hand-off"),
        "dwcs cells say what their latency is"
    );
    assert!(html.contains("Sliding windows are drawn"), "the caption says which windows");
    let pa3 = render(&ReportInput::new(&run, &cell_stats(&pa3_records(1.0)))).unwrap();
    assert!(
        !html_of(&pa3.files).contains("Real-time task sets"),
        "no real-time table without periodic cells"
    );
    assert!(
        !html.contains("Partitioned sets, per CPU"),
        "no per-CPU table when every set ran on one CPU"
    );
}

#[test]
fn a_partitioned_set_gets_a_row_per_cpu() {
    let mut records = crate::testdata::rt_records(&["set"], &[Some(0.5)]);
    // dwcs's cell (the last): tasks 0 and 2 on CPU 0, 1 and 3 on CPU 1; on CPU 1, task 3 missed
    // 20 more jobs of its 100 in each repetition.
    let dwcs = records.iter().map(|r| r.params.cell_id).max().unwrap();
    for r in records.iter_mut().filter(|r| r.params.cell_id == dwcs) {
        let rt = r.rt.as_mut().unwrap();
        rt.task_cpus = vec![0, 1, 0, 1];
        // Two tasks of C/T 0.1, x/y = 1/2, on each CPU.
        rt.cpu_theory = (0..2)
            .map(|cpu| CpuTheory {
                cpu,
                plain_utilisation: 0.2,
                min_utilisation: 0.1,
                guaranteed: true,
            })
            .collect();
        let t = r.samples[3].extra.rt.as_mut().unwrap();
        (t.misses, t.met) = (t.misses + 20, t.met - 20);
    }
    let rt = schedlab_analysis::rt_stats(&records);
    let rows = crate::tables::rt_cpu_rows(&rt);
    assert_eq!(rows.len(), 2, "one row per CPU of the one partitioned cell: {rows:?}");
    // k = 4 for dwcs at the only utilisation: 20 + r misses per task of 100 jobs.
    let header = crate::cols::header(&crate::tables::rt_cpu_columns())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    let at =
        |cpu: usize, col: &str| rows[cpu][header.iter().position(|h| h == col).unwrap()].clone();
    assert_eq!(
        (at(0, "scheduler"), at(0, "cpu"), at(0, "tasks"), at(0, "C/T"), at(0, "min util.")),
        ("dwcs".into(), "0".into(), "2".into(), "0.200".into(), "0.100".into())
    );
    assert!(
        at(0, "missed [%]").starts_with("20.50"),
        "CPU 0: 20 and 21 of 100: {}",
        at(0, "missed [%]")
    );
    assert!(
        at(1, "missed [%]").starts_with("30.50"),
        "CPU 1: (20 + 40) / 200 and (21 + 41) / 200: {}",
        at(1, "missed [%]")
    );
    let table = crate::tables::rt_cpus(&rt).expect("a table").to_string();
    assert!(table.contains("sliding viol./proc") && table.contains("30.50"), "{table}");
    let r =
        render(&ReportInput { rt: &rt, ..ReportInput::new(&run_meta(11), &cell_stats(&records)) })
            .unwrap();
    let html = html_of(&r.files);
    assert!(
        html.contains("Partitioned sets, per CPU")
            && html.contains("<th>C/T</th>")
            && html.contains("30.50"),
        "per-CPU table in the report"
    );
    assert!(crate::tables::rt_cpus(&schedlab_analysis::rt_stats(&crate::testdata::rt_records(
        &["set"],
        &[Some(0.5)]
    )))
    .is_none());
}

#[test]
fn lab1_table_rows_are_told_apart_by_affinity_weight_and_background() {
    let stats = cell_stats(&lab1_records());
    for rows in [crate::tables::per_process_rows(&stats), crate::tables::totals_rows(&stats)] {
        let names: Vec<String> = rows.iter().map(|r| r[..3].join(" | ")).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), stats.len(), "two cells share a row name: {names:#?}");
        assert!(
            names.contains(&"hash vs 8 bg | other, spread, weight 200 | 8".to_string()),
            "{names:#?}"
        );
        assert!(names.contains(&"hash | other, unpinned, no cgroup | 4".to_string()), "{names:#?}");
    }
    let run = run_meta(9);
    let r = render(&ReportInput::new(&run, &stats)).unwrap();
    assert!(html_of(&r.files).contains("<td>hash vs 8 bg</td><td>other, spread, weight 200</td>"));
}

#[test]
fn report_headings_name_the_study_not_a_file_of_ours() {
    let run = run_meta(7);
    let stats = cell_stats(&pa3_records(1.0));
    let r = render(&ReportInput::new(&run, &stats)).unwrap();
    let html = html_of(&r.files);
    assert!(html.contains("Per process (as in the PA3 scheduler study, Figure 12)"));
    let visible = html.split("<h2 id=\"spec\">").next().unwrap();
    for file_name in ["seed 0", "Seed 0", ".txt"] {
        assert!(!visible.contains(file_name), "the page names {file_name}");
    }
}

#[test]
fn compare_warns_when_runs_differ_in_scale_mode_machine_or_spec() {
    let a = run_meta(1);
    assert!(
        compare::run_differences(&a, &run_meta(2)).is_empty(),
        "two runs of one spec on one machine"
    );
    let mut b = run_meta(2);
    b.scale = 0.1;
    b.mode = "sim".into();
    b.env.cpu_model = "Other CPU".into();
    b.env.cpus = 8;
    b.spec_hash = "cd34".into();
    let w = compare::run_differences(&a, &b);
    assert_eq!(w.len(), 4, "{w:#?}");
    assert!(w[0].contains("scale (run 1: 0.02, run 2: 0.1)"), "{}", w[0]);
    assert!(w[1].contains("run 1 was measured and run 2 simulated"), "{}", w[1]);
    assert!(w[2].contains("CPU Test CPU vs Other CPU; 4 vs 8 online CPUs"), "{}", w[2]);
    assert!(w[3].contains("different spec texts (sha256 ab12 vs cd34)"), "{}", w[3]);
    let c = small_comparison(Metric::WallPerProc);
    let md = compare::markdown(&c, 1, 2, &w);
    assert!(md.starts_with("> **Warning:** the runs differ in scale"), "{md}");
    assert!(
        md.contains(">\n> **Warning:** run 1 was measured") && md.contains("\n| cell |"),
        "{md}"
    );
    let json = compare::json(&c, 1, 2, &w);
    assert_eq!(json["warnings"].as_array().unwrap().len(), 4);
    let section = CompareSection { other: b, by_metric: vec![c], rt: Vec::new() };
    let r = render(&ReportInput { compare: Some(&section), ..ReportInput::new(&a, &[]) }).unwrap();
    assert!(html_of(&r.files).contains("Warning: run 1 was measured and run 2 simulated"));
}

#[test]
fn compare_shows_no_interval_for_two_repetitions_and_says_why_in_json() {
    // pa3 at n = 2 with a large spread: the delta method's ratio interval reached below zero.
    let (a, b) = two_runs();
    let two = |rs: Vec<CellRecord>| rs.into_iter().filter(|r| r.rep < 2).collect::<Vec<_>>();
    let c = compare_runs(&two(a), &two(b), Metric::WallPerProc, 0.05, Correction::Holm).unwrap();
    let rows = compare::rows(&c);
    assert!(rows[0][2].ends_with('*') && rows[0][5].ends_with('*'), "{:?}", rows[0]);
    assert_eq!(compare::notes(&c), "* fewer than 3 repetitions: no interval\n", "once per table");
    let json = compare::json(&c, 1, 2, &[]);
    let cell = &json["cells"][0];
    assert_eq!(cell["a"]["no_interval"], "fewer than 3 values: too few for a useful interval");
    assert_eq!(cell["ratio"]["no_interval"], "fewer than 3 values: too few for a useful interval");
    assert!(
        cell["ratio"]["ci_low"].as_f64().unwrap() > 0.0,
        "the numbers stay, in the domain: {cell}"
    );
}

/// The mock pa3 run with every cpu/other/n10 repetition traced: worker k ran the first k+1
/// of 4 slices, waited one, then blocked.
fn traced_records() -> Vec<CellRecord> {
    use schedlab_model::trace::{CellTrace, PreemptedBy, StateBar, WorkerTrace};
    let mut records = pa3_records(1.0);
    for r in records.iter_mut().filter(|r| r.params.key == "cpu/other/n10") {
        let workers = r
            .samples
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let slices: Vec<[u64; 3]> = (0..4)
                    .map(|j| {
                        if j <= k % 3 {
                            [10, 0, 0]
                        } else if j == k % 3 + 1 {
                            [0, 10, 0]
                        } else {
                            [0, 0, 10]
                        }
                    })
                    .collect();
                WorkerTrace {
                    pid: s.pid,
                    run_s: s.user_s,
                    runnable_s: 0.25,
                    involuntary: 3,
                    preempted_by: PreemptedBy { worker: 2, engine: 0, kernel: 1, other: 0 },
                    states: Some(StateBar::encode(&slices, 10)),
                    ..Default::default()
                }
            })
            .collect();
        r.trace = Some(CellTrace { workers, slice_s: 0.5, ..Default::default() });
    }
    records
}

#[test]
fn a_traced_run_gets_the_trace_table_and_a_state_chart_per_traced_cell() {
    let mut records = traced_records();
    for (i, r) in records.iter_mut().enumerate() {
        for (k, s) in r.samples.iter_mut().enumerate() {
            s.pid = (1000 * i + k) as i32 + 1;
        }
        if let Some(t) = &mut r.trace {
            for (k, w) in t.workers.iter_mut().enumerate() {
                w.pid = (1000 * i + k) as i32 + 1;
            }
        }
    }
    let stats = cell_stats(&records);
    let traces = schedlab_analysis::trace_stats(&records);
    assert_eq!(traces.len(), 1, "one traced cell");
    let run = run_meta(9);
    let r = render(&ReportInput { traces: &traces, ..ReportInput::new(&run, &stats) }).unwrap();
    let html = html_of(&r.files);
    assert!(html.contains("Kernel traces per cell"), "the trace table's heading");
    assert!(html.contains("<td>cpu/other/n10</td>"), "the traced cell's row");
    let reps = traces[0].reps as u64;
    let who = format!("{} (67%) / 0 (0%) / {} (33%) / 0 (0%)", 20 * reps, 10 * reps);
    assert!(html.contains(&who), "who preempted, with shares: {who}");
    let states = r
        .charts
        .iter()
        .find(|c| c.id == "states-cpu_other_n10")
        .expect("a state chart for the traced cell");
    assert_eq!(states.states.rows.len(), 10);
    let svg = plots::svg(states).unwrap();
    // Running (green), runnable (orange) and blocked (blue) are all drawn.
    for colour in ["#009E73", "#E69F00", "#56B4E9"] {
        assert!(svg.to_uppercase().contains(colour), "{colour} in the state chart");
    }
    assert_eq!(
        r.charts.iter().filter(|c| c.id.starts_with("states-")).count(),
        1,
        "untraced cells get none"
    );
    let plain = render(&ReportInput::new(&run, &stats)).unwrap();
    assert!(
        !html_of(&plain.files).contains("Kernel traces per cell"),
        "an untraced run has no trace section"
    );
}

#[test]
fn only_dwcs_rows_are_called_dwcs_guaranteed() {
    // Every set of the mock run is guaranteed at utilisation 0.25; only DWCS scheduled one.
    let stats = schedlab_analysis::rt_stats(&crate::testdata::rt_records(&["set"], &[Some(0.25)]));
    let rows = crate::tables::rt_rows(&stats);
    assert_eq!(rows.len(), crate::testdata::RT_SCHEDULERS.len());
    for row in &rows {
        let (scheduler, notes) = (&row[1], row.last().unwrap());
        assert_eq!(notes.contains("DWCS-guaranteed"), scheduler == "dwcs", "{row:?}");
    }
}

#[test]
fn a_global_deadline_set_beside_one_cpu_sets_names_each_scheduler_s_cpus() {
    let mut recs = crate::testdata::rt_records(&["set"], &[Some(0.5)]);
    let one_cpu = schedlab_analysis::rt_stats(&recs);
    assert_eq!(crate::tables::rt_placement_note(&one_cpu, 2), None, "all had one CPU");
    // fifo-rm's cells become SCHED_DEADLINE's: global EDF, no CPU of its own.
    for r in recs.iter_mut().filter(|r| r.params.policy == "fifo-rm") {
        let rt = r.rt.as_mut().unwrap();
        (rt.scheduler, rt.cpu) = ("deadline".into(), u32::MAX);
    }
    let stats = schedlab_analysis::rt_stats(&recs);
    let note = crate::tables::rt_placement_note(&stats, 2).expect("the CPUs differ");
    assert!(note.contains("other, edf, dwcs on one CPU"), "{note}");
    assert!(note.contains("deadline on all 2 CPUs (the kernel's global EDF)"), "{note}");
    let rows = crate::tables::rt_rows(&stats);
    let deadline = rows.iter().find(|r| r[1] == "deadline").expect("a deadline row");
    assert!(deadline.last().unwrap().contains("global EDF, every CPU"), "{deadline:?}");
    let r =
        render(&ReportInput { rt: &stats, ..ReportInput::new(&run_meta(1), &cell_stats(&recs)) })
            .unwrap();
    assert!(html_of(&r.files).contains("deadline on all"), "the report says it too");
}

#[test]
fn long_notes_move_to_one_numbered_footnote_per_reason() {
    let why = "cannot be simulated: group `bg` is a background group, which the simulator does not model yet";
    let row = |note: &str| vec!["a/n4".to_string(), "1.0".into(), note.to_string()];
    let mut rows = vec![
        row(&format!("FAILED 3 of 3 reps (left out): {why}")),
        row(""),
        row(&format!("FAILED 1 of 3 reps (left out): {why}; 1 killed by signal")),
        row(&"x".repeat(50)),
    ];
    let notes = crate::tables::long_notes(&mut rows, Some(2));
    assert_eq!(notes, vec![format!("[1] {why}"), format!("[2] {}", "x".repeat(50))]);
    assert_eq!(rows[0][2], "FAILED 3 of 3 reps (left out) [1]");
    assert_eq!(rows[1][2], "", "an empty note stays empty");
    assert_eq!(rows[2][2], "FAILED 1 of 3 reps (left out) [1]; 1 killed by signal");
    assert_eq!(rows[3][2], "[2]", "a long note without a head is all footnote");
    assert_eq!(rows[0][1], "1.0", "other columns are untouched");
    assert!(crate::tables::long_notes(&mut rows, None).is_empty(), "a table without notes");
}

#[test]
fn a_benchmark_run_shows_its_figures_in_show_export_and_the_report() {
    let mut records = pa3_records(1.0);
    let first_cell = records[0].params.cell_id;
    // The first cell's workers state schbench's figures (as a native kind or a parsed original).
    for r in records.iter_mut().filter(|r| r.params.cell_id == first_cell) {
        for s in &mut r.samples {
            s.extra.bench = Some(schedlab_model::BenchFigures {
                source: "schbench".into(),
                wakeup_us: Some(schedlab_model::LatencyPercentiles {
                    p50: 7.0,
                    p90: 20.0,
                    p99: 272.0,
                    p999: 1266.0,
                    samples: 9,
                }),
                ..Default::default()
            });
        }
    }
    let stats = cell_stats(&records);
    let bench = schedlab_analysis::bench_stats(&records);
    assert_eq!(bench.len(), 1);
    let run = run_meta(11);
    let html = html_of(
        &render(&ReportInput { bench: &bench, ..ReportInput::new(&run, &stats) }).unwrap().files,
    );
    assert!(html.contains("Benchmarks per cell") && html.contains("wakeup p99 [us]"), "{html}");
    assert!(html.contains("272"), "the p99's value");
    let without = html_of(&render(&ReportInput::new(&run, &stats)).unwrap().files);
    assert!(!without.contains("Benchmarks per cell"));
    let rows = crate::cells::values(&stats, &[], &bench, &crate::cells::Chosen::all());
    let first = rows.iter().find(|r| r["key"] == bench[0].params.key).unwrap();
    assert_eq!(first["wakeup_p99_us"], 272.0);
    let other = rows.iter().find(|r| r["key"] != bench[0].params.key).unwrap();
    assert!(other["wakeup_p99_us"].is_null() && other["time_s"].is_null());
    let md = crate::cells::markdown(&stats, &[], &bench, &crate::cells::Chosen::all(), false);
    assert!(md.contains("Benchmarks") && md.contains("wakeup p99 [us]"), "{md}");
    // `show --metric wakeup_p99_us` knows the name; the others are left out.
    let c = crate::cells::chosen(&["wakeup_p99_us".to_string()]).unwrap();
    assert_eq!((c.cell.len(), c.rt.len(), c.bench.len()), (0, 0, 1));
}
