//! Snapshot tests on fixed records: the exact shape users see, no root and no time needed.

use crate::{export, flat, tables};
use schedlab_model::{CellParams, CellRecord, CellStatus, Sample, StatDelta};

fn fixture() -> Vec<CellRecord> {
    let mut out = Vec::new();
    for (cell_id, policy, invol) in [(0u32, "other", 700i64), (1, "fifo", 5)] {
        for rep in 0..2u32 {
            out.push(CellRecord {
                params: CellParams {
                    cell_id,
                    key: format!("cpu/{policy}/n2"),
                    workload: "cpu".into(),
                    workload_kind: "pi".into(),
                    policy: policy.into(),
                    class: policy.into(),
                    priority: if policy == "fifo" { 50 } else { 0 },
                    processes: 2,
                    // The fifo cell repeated adaptively and stopped at max unreached.
                    repetitions: (cell_id == 1).then(|| schedlab_model::RepetitionOutcome {
                        repetitions: 2,
                        reached: false,
                        figure: "wall_per_proc".into(),
                        half_width_pct: Some(12.5),
                        target: schedlab_model::AdaptiveTarget { min: 2, max: 2, ci_pct: 5.0 },
                    }),
                    ..Default::default()
                },
                rep,
                ordinal: cell_id * 2 + rep,
                makespan_s: 2.0 + rep as f64,
                stat: StatDelta {
                    user: 400,
                    system: 2,
                    idle: 10,
                    ctxt: 1500,
                    interrupts: 900,
                    ..Default::default()
                },
                samples: (0..2)
                    .map(|i| Sample {
                        index: i,
                        pid: 1000 + i as i32,
                        exit_code: Some(0),
                        wall_s: 1.5 + rep as f64 * 0.5,
                        engine_wall_s: 1.6,
                        user_s: 1.25,
                        sys_s: 0.01,
                        cpu_pct: 84.0,
                        voluntary_csw: 2,
                        involuntary_csw: invol + rep as i64 * 10,
                        work_units: 1e6,
                        extra: schedlab_model::Extra {
                            policy: Some(policy.to_string()),
                            ..Default::default()
                        },
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
        }
    }
    out
}

#[test]
fn totals_table() {
    let stats = schedlab_analysis::cell_stats(&fixture());
    insta::assert_snapshot!(tables::totals(&stats).to_string());
}

#[test]
fn a_cell_the_hypervisor_stole_from_says_so_in_its_notes() {
    let mut records = fixture();
    let quiet = tables::status(&schedlab_analysis::cell_stats(&records)[0]);
    assert!(!quiet.contains("stole"), "{quiet}");
    for r in records.iter_mut().filter(|r| r.params.cell_id == 0) {
        r.stat.steal = 41; // of 2 x (412 + 41) ticks: 9.1%
    }
    let noted = tables::status(&schedlab_analysis::cell_stats(&records)[0]);
    assert_eq!(noted, "hypervisor stole 9.1% of CPU time");
    let table = tables::totals(&schedlab_analysis::cell_stats(&records)).to_string();
    assert!(table.contains("hypervisor stole 9.1% of CPU time"), "{table}");
}

#[test]
fn per_process_table() {
    let stats = schedlab_analysis::cell_stats(&fixture());
    insta::assert_snapshot!(tables::per_process(&stats).to_string());
}

#[test]
fn csv_export() {
    let rows = flat::flatten(7, &fixture()[..1]);
    let mut out = Vec::new();
    export::by_name("csv").unwrap().write(&rows, &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

#[test]
fn markdown_export_escapes_pipes() {
    let mut cells = fixture();
    cells.truncate(1);
    cells[0].params.workload = "a|b".into();
    let rows = flat::flatten(7, &cells);
    let mut out = Vec::new();
    export::by_name("markdown").unwrap().write(&rows, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("a\\|b"), "{text}");
    assert_eq!(text.lines().count(), 4);
}

#[test]
fn json_export_has_one_object_per_process() {
    let rows = flat::flatten(7, &fixture());
    let mut out = Vec::new();
    export::by_name("json").unwrap().write(&rows, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 8);
    assert_eq!(v[0]["run_id"], 7);
    assert_eq!(v[0]["involuntary_csw"], 700);
}

/// The mock real-time run at two utilisations, and a cell whose start was refused.
fn rt_fixture() -> Vec<CellRecord> {
    let mut recs = crate::testdata::rt_records(&["set"], &[Some(0.25), Some(0.5)]);
    let mut refused = recs[0].clone();
    refused.params = CellParams {
        cell_id: 99,
        key: "set/deadline/utilisation=0.9/n4".into(),
        policy: "deadline".into(),
        class: "deadline".into(),
        groups: vec![schedlab_model::GroupParams { utilisation: Some(0.9), ..Default::default() }],
        ..refused.params
    };
    refused.status = CellStatus::Failed;
    refused.message = Some("SCHED_DEADLINE admission refused".into());
    refused.samples.clear();
    refused.rt = None;
    recs.push(refused);
    recs
}

#[test]
fn rt_table() {
    let stats = schedlab_analysis::rt_stats(&rt_fixture());
    insta::assert_snapshot!(tables::rt(&stats).to_string());
}

/// The CSV export's cell key, index and rt_* columns (the rest is the same as for any process).
fn rt_columns(csv: &str) -> String {
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let keep: Vec<usize> = rows[0]
        .iter()
        .enumerate()
        .filter(|(_, h)| h.starts_with("rt_") || ["cell_key", "index"].contains(h))
        .map(|(i, _)| i)
        .collect();
    rows.iter()
        .map(|r| keep.iter().map(|&i| r[i]).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn rt_csv_export() {
    let recs = rt_fixture();
    // fifo-rm (its tasks time their wake-ups) and dwcs (the dispatcher's tally) at 0.25, repetition 1.
    let cells: Vec<CellRecord> = recs
        .into_iter()
        .filter(|r| r.rep == 1 && (r.params.cell_id == 2 || r.params.cell_id == 6))
        .collect();
    let rows = flat::flatten(7, &cells);
    let mut out = Vec::new();
    export::by_name("csv").unwrap().write(&rows, &mut out).unwrap();
    insta::assert_snapshot!(rt_columns(&String::from_utf8(out).unwrap()));
}

#[test]
fn rt_columns_are_in_every_format() {
    let rows = flat::flatten(7, &rt_fixture()[4..5]);
    let mut out = Vec::new();
    export::by_name("json").unwrap().write(&rows, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        (v[0]["rt_scheduler"].as_str(), v[0]["rt_utilisation"].as_f64()),
        (Some("fifo-rm"), Some(0.25))
    );
    // k = 2: 10 misses of 100 jobs in repetition 0; wake-ups 2..40 us, median the 10th.
    assert_eq!(
        (v[0]["rt_jobs"].as_u64(), v[0]["rt_misses"].as_u64(), v[0]["rt_met"].as_u64()),
        (Some(100), Some(10), Some(90))
    );
    assert!((v[0]["rt_wakeup_p50_us"].as_f64().unwrap() - 20.0).abs() < 0.1, "{}", v[0]);
    let mut out = Vec::new();
    export::by_name("markdown").unwrap().write(&rows, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(
        md.lines().next().unwrap().contains(
            "| rt_jobs | rt_met | rt_misses | rt_fixed_violations | rt_sliding_violations |"
        ),
        "{md}"
    );
}

#[test]
fn every_matrix_axis_has_its_column_in_a_table() {
    use crate::cols::header;
    use crate::tables::{
        io_columns, per_process_columns, rt_columns, rt_cpu_columns, totals_columns,
    };
    let (totals, per_process, io, rt, rt_cpu) =
        (totals_columns(), per_process_columns(), io_columns(), rt_columns(), rt_cpu_columns());
    let headers: Vec<&str> =
        [header(&totals), header(&per_process), header(&io), header(&rt), header(&rt_cpu)].concat();
    for a in schedlab_plan::axis::AXES {
        assert!(
            headers.contains(&a.header),
            "the {} axis's column \"{}\" is in no table",
            a.name,
            a.header
        );
    }
}

#[test]
fn a_cell_that_stopped_short_of_its_adaptive_target_is_marked_footnoted_and_exported() {
    let cells = fixture();
    let note = crate::tables::repetitions_note(cells.iter().map(|c| &c.params)).unwrap();
    assert!(note.contains("0 of 1 cells reached it"), "{note}");
    assert!(
        note.contains("† marks the 1 that did not: cpu/fifo/n2 (2 repetitions, ±12.5%)"),
        "{note}"
    );
    let rows = export::values(&flat::flatten(7, &cells));
    let of = |key: &str| rows.iter().find(|r| r["cell_key"] == key).unwrap().clone();
    assert_eq!(
        (&of("cpu/fifo/n2")["cell_repetitions"], &of("cpu/fifo/n2")["cell_target_reached"]),
        (&2.into(), &false.into())
    );
    assert!(of("cpu/other/n2")["cell_repetitions"].is_null(), "a cell without an outcome: empty");
    let fixed = export::values(&flat::flatten(7, &cells[..2]));
    assert!(
        fixed[0].get("cell_repetitions").is_none(),
        "a run without outcomes has no such columns"
    );
    assert_eq!(crate::tables::repetitions_note(fixture()[..2].iter().map(|c| &c.params)), None);
}

#[test]
fn the_scheduler_columns_are_exported_only_for_runs_that_have_them() {
    let header = |cells: &[CellRecord]| {
        let mut out = Vec::new();
        export::by_name("csv").unwrap().write(&flat::flatten(7, cells), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().next().unwrap().to_string()
    };
    let mut cells = fixture();
    cells.truncate(1);
    assert!(header(&cells).ends_with(",block_in,block_out"), "a run stored before them");
    cells[0].samples[0].oncpu_s = Some(0.5);
    cells[0].samples[0].run_delay_s = Some(0.25);
    let with = header(&cells);
    assert!(
        with.ends_with(",block_out,oncpu_s,run_delay_s,timeslices,migrations,sched_voluntary,sched_involuntary"),
        "{with}"
    );
    let rows = export::values(&flat::flatten(7, &cells));
    assert_eq!(
        (rows[0]["run_delay_s"].as_f64(), rows[1]["run_delay_s"].is_null()),
        (Some(0.25), true)
    );
}

#[test]
fn the_per_process_table_shows_run_delay_and_migrations_when_the_run_has_them() {
    let mut cells = fixture();
    let without = tables::per_process(&schedlab_analysis::cell_stats(&cells)).to_string();
    assert!(!without.contains("run delay"), "{without}");
    for s in cells.iter_mut().flat_map(|c| &mut c.samples) {
        (s.run_delay_s, s.migrations) = (Some(0.125), Some(3));
    }
    let with = tables::per_process(&schedlab_analysis::cell_stats(&cells)).to_string();
    assert!(with.contains("run delay/proc [s]") && with.contains("migrations/proc"), "{with}");
    assert!(with.contains("0.125") && with.contains("3.0"), "{with}");
}

#[test]
fn every_real_time_figure_has_its_column_where_its_entry_says() {
    use crate::cols::{header, Narrow};
    use schedlab_analysis::rt::{InTable, FIGURES};
    let rt = tables::rt_columns();
    let cpu = header(&tables::rt_cpu_columns()).join("|");
    for f in FIGURES {
        let col = rt.iter().find(|c| c.header == f.header);
        match (f.in_table, col.map(|c| c.narrow)) {
            (InTable::Narrow, Some(Narrow::Keep)) | (InTable::Wide, Some(Narrow::Wide)) => {}
            (InTable::No, None) => {}
            (want, got) => panic!("{}: {want:?} in the entry, {got:?} in the table", f.name),
        }
        assert_eq!(cpu.split('|').any(|h| h == f.header), f.per_cpu, "{} per CPU", f.name);
    }
    let (live, sim) = (rt_fixture(), rt_fixture());
    let (live, sim) = (schedlab_analysis::rt_stats(&live), schedlab_analysis::rt_stats(&sim));
    let mut drivers = live.clone();
    for s in &mut drivers {
        // Make each dwcs cell also a dwcs-scx cell of the same set.
        if s.scheduler == "dwcs" {
            let mut scx = s.clone();
            scx.scheduler = "dwcs-scx".into();
            scx.params.key = s.params.key.replace("dwcs", "dwcs-scx");
            drivers.push(scx);
            break;
        }
    }
    let rows = crate::drivers::rows(&drivers, &sim);
    let shown: Vec<&str> = rows.iter().map(|r| r.figure).collect();
    let want: Vec<&str> = FIGURES.iter().filter(|f| f.drivers).map(|f| f.header).collect();
    assert!(!rows.is_empty(), "a set under both drivers");
    assert_eq!(&shown[..want.len()], want, "one row per figure marked drivers");
}

#[test]
fn the_spare_trace_figures_are_columns_of_the_per_worker_table() {
    use crate::cols::Narrow;
    let cols = tables::trace_columns();
    for (i, f) in tables::TRACE_SPARE.iter().enumerate() {
        let header = f.worker_header.expect("a spare figure has a per-worker column");
        let col = cols.iter().find(|c| c.header == header).expect("in the per-worker table");
        assert_eq!(col.narrow, Narrow::Spare(1 + i as u8), "{}", f.name);
    }
}

/// docs/ADDING-A-FIGURE.md quotes compiled code: each rust block after a `<!-- quoted from
/// PATH -->` line must be in that file of the workspace as written (the build compiles the
/// file), so the page cannot drift from the code; a diff, which nothing compiles, is refused.
#[test]
fn adding_a_figure_quotes_code_that_compiles() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/ADDING-A-FIGURE.md")).unwrap();
    let (mut quoted, mut from) = (0, None);
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(path) =
            line.strip_prefix("<!-- quoted from ").and_then(|l| l.strip_suffix(" -->"))
        {
            from = Some(path);
        } else if line == "```rust" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            let block = block.join("\n");
            let path =
                from.take().unwrap_or_else(|| panic!("a rust block names no file:\n{block}"));
            let source = std::fs::read_to_string(root.join(path)).unwrap();
            assert!(source.contains(&block), "{path} no longer has, as written:\n{block}");
            quoted += 1;
        } else {
            assert!(!line.starts_with("```diff"), "a diff is not compiled: quote the code");
        }
    }
    assert!(quoted >= 10, "{quoted} quoted blocks");
}

#[test]
fn the_trace_figures_shortened_for_the_terminal_have_per_cell_columns() {
    let long = crate::cols::header(&tables::trace_cell_columns()).join("|");
    let short = crate::cols::header(&crate::cells::trace_columns()).join("|");
    for (f, header) in crate::cells::TRACE_HEADERS {
        let cell = f.cell_header.expect("a per-cell column");
        assert!(long.split('|').any(|h| h == cell), "{} in the report's table", f.name);
        assert!(short.split('|').any(|h| h == header), "{} shortened", f.name);
    }
    assert!(short.contains("preempted by w/e/k/o [%]"), "{short}");
}
