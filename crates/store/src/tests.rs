use super::*;
use std::io::Write;

pub(crate) fn record(cell_id: u32, rep: u32, n: u32) -> CellRecord {
    CellRecord {
        params: CellParams {
            cell_id,
            key: format!("cpu/other/n{n}"),
            workload: "cpu".into(),
            workload_kind: "pi".into(),
            policy: "other".into(),
            class: "other".into(),
            priority: 0,
            nice: 0,
            processes: n,
            groups: vec![schedlab_model::GroupParams {
                name: "main".into(),
                cpu_weight: Some(200),
                ..Default::default()
            }],
            iosched: None,
            knobs: knobs(cell_id, "5"),
            repetitions: None,
            cpu_scheduler: (cell_id == 1).then(|| "scx_bpfland".into()),
        },
        rep,
        warmup: false,
        ordinal: rep,
        status: CellStatus::Ok,
        message: None,
        started_unix: 1.5,
        makespan_s: 2.0,
        spawn_s: (cell_id % 2 == 1).then_some(0.75),
        stat: StatDelta { user: 10, ctxt: 99, steal: 7, ..Default::default() },
        load: match cell_id {
            0 => Some(schedlab_model::MachineLoad { load1: 3.9, cpu_pressure_us: Some(1234) }),
            1 => Some(schedlab_model::MachineLoad { load1: 0.5, cpu_pressure_us: None }),
            _ => None,
        },
        engine_user_s: 0.01,
        engine_sys_s: 0.02,
        engine_max_rss_kb: 1000,
        samples: (0..n)
            .map(|i| Sample {
                index: i,
                group: if i == 0 { "main".into() } else { "bg".into() },
                background: i > 0,
                allowed_cpus: vec![i % 2],
                cpus_seen: vec![i % 2],
                window_cpu_s: 0.25 * i as f64,
                pid: 100 + i as i32,
                exit_code: Some(0),
                wall_s: 1.0 + i as f64,
                involuntary_csw: 7,
                extra: schedlab_model::Extra { cpu: Some(1), ..Default::default() },
                ..Default::default()
            })
            .collect(),
        io: None,
        rt: None,
        // Held by real-time cells (0 µs by default), absent from the others.
        cpu_dma_latency_us: cell_id.is_multiple_of(2).then_some(cell_id * 10),
        // A swept knob's value as read back may differ from the one asked (jiffies).
        knobs: knobs(cell_id, "8"),
        trace: None,
        sched_ext: (cell_id == 1).then(|| schedlab_model::sched_ext::SchedExtCell {
            loaded: Some(schedlab_model::sched_ext::ScxLoaded {
                program: "/usr/bin/scx_bpfland".into(),
                ops: "bpfland_1.1.4_g0".into(),
                name: "bpfland".into(),
                version: "1.1.4_g0".into(),
                enable_seq: Some(3),
                ..Default::default()
            }),
            workers: vec![schedlab_model::sched_ext::WorkerExt {
                group: "main".into(),
                pid: 9,
                ext_enabled: Some(true),
            }],
        }),
        raw_trace: None,
        // Cell 1 ran under a CPU quota that throttled it.
        throttling: (0..cell_id.min(1))
            .map(|_| schedlab_model::Throttled {
                cgroup: "/sys/fs/cgroup/cpu/limited".into(),
                own: false,
                periods: 60,
                throttled_periods: 51,
                throttled_s: 2.45,
            })
            .collect(),
    }
}

/// Odd cells sweep the RR time slice; even ones set no knob.
fn knobs(cell_id: u32, v: &str) -> BTreeMap<String, String> {
    (cell_id % 2 == 1)
        .then(|| ("kernel.sched_rr_timeslice_ms".to_string(), v.to_string()))
        .into_iter()
        .collect()
}

#[test]
fn a_runs_knobs_before_it_began_are_stored_with_it() {
    let store = Store::memory().unwrap();
    let id = new_run(&store);
    assert!(store.run(id).unwrap().unwrap().knobs_before.is_empty());
    let before: BTreeMap<String, String> =
        [("kernel.sched_rr_timeslice_ms", "37"), ("kernel.sched_autogroup_enabled", "1")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
    store.set_knobs_before(id, &before).unwrap();
    assert_eq!(store.run(id).unwrap().unwrap().knobs_before, before);
}

pub(crate) fn new_run(store: &Store) -> i64 {
    let env = Environment { kernel: "6.1".into(), ..Default::default() };
    store
        .create_run(&NewRun {
            name: "t",
            mode: Mode::Measured,
            spec_path: "t.toml",
            spec_text: "name='t'",
            spec_hash: "abc",
            plan_json: "{}",
            scale: 1.0,
            env: &env,
            command_line: "schedlab run t.toml",
        })
        .unwrap()
}

#[test]
fn round_trips_cells_and_samples_exactly() {
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    let a = record(0, 0, 3);
    let b = record(1, 1, 2);
    s.insert_cell(id, &a).unwrap();
    s.insert_cell(id, &b).unwrap();
    let back = s.cells(id).unwrap();
    assert_eq!(back, vec![a, b], "cell 1 carries knobs");
    assert_eq!(s.done_steps(id).unwrap(), vec![(0, 0, false), (1, 1, false)]);
}

#[test]
fn the_same_step_cannot_be_stored_twice() {
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    s.insert_cell(id, &record(1, 0, 1)).unwrap();
    assert!(s.insert_cell(id, &record(1, 0, 1)).is_err());
    // The failed insert left nothing half-written.
    assert_eq!(s.cells(id).unwrap().len(), 1);
}

#[test]
fn resume_finds_the_newest_unfinished_run_of_the_spec_whatever_its_options() {
    let s = Store::memory().unwrap();
    let id = new_run(&s);
    assert_eq!(s.resumable_by_hash("abc").unwrap().map(|r| r.id), Some(id));
    assert_eq!(s.resumable_by_hash("other").unwrap(), None);
    s.finish_run(id, &RunStatus::CompleteWithFailures, &[]).unwrap();
    assert_eq!(s.resumable_by_hash("abc").unwrap(), None, "a run with failures is complete");
    let id2 = new_run(&s);
    s.finish_run(id2, &RunStatus::Spooled, &[]).unwrap();
    assert_eq!(s.resumable_by_hash("abc").unwrap().map(|r| r.id), Some(id2));
}

#[test]
fn failed_repetitions_are_counted_per_run_without_warmups() {
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    s.insert_cell(id, &record(0, 0, 1)).unwrap();
    let mut bad = record(0, 1, 1);
    bad.status = CellStatus::Failed;
    s.insert_cell(id, &bad).unwrap();
    let mut warm = record(0, 0, 1);
    warm.warmup = true;
    warm.status = CellStatus::TimedOut;
    s.insert_cell(id, &warm).unwrap();
    assert_eq!(s.failed_count(id).unwrap(), (1, 2));
}

#[test]
fn a_spooled_record_is_imported_once_with_its_jobs() {
    let dir = std::env::temp_dir().join(format!("schedlab-spool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("r.db");
    let file = crate::spool::path(&db, 7);
    assert_eq!(file, dir.join("r.db.spool-run7.jsonl"));
    let _ = std::fs::remove_file(&file);
    let mut a = record(0, 0, 2);
    a.samples[1].jobs = Some(schedlab_model::jobs::JobLog::default());
    let b = record(1, 0, 1);
    crate::spool::append(&file, 7, &a).unwrap();
    crate::spool::append(&file, 7, &b).unwrap();
    crate::spool::append(&file, 8, &b).unwrap();
    // A torn last line, as a kill while appending leaves it.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(b"{\"run_id\":7,\"rec")
        .unwrap();
    let recs = crate::spool::read(&file, 7).unwrap();
    assert_eq!(recs.len(), 2, "run 8's record and the torn line are not run 7's");
    assert!(recs[0].samples[1].jobs.is_some());
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    s.insert_cell(id, &b).unwrap();
    assert_eq!(s.import(id, &recs).unwrap(), 1, "the record already stored is skipped");
    assert_eq!(s.import(id, &recs).unwrap(), 0, "importing twice adds nothing");
    assert_eq!(s.cells(id).unwrap().len(), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

pub(crate) fn raw_trace(len: usize) -> schedlab_model::trace::RawTrace {
    schedlab_model::trace::RawTrace {
        meta: schedlab_model::trace::RawTraceMeta {
            raw_bytes: 3 * len as u64,
            release_ns: 123_456_789,
            boot_offset_ns: 42,
            engine_pid: 7,
            engine_tids: vec![7, 8],
            dispatchers: vec![9],
        },
        zstd: (0..len).map(|i| (i * 31 % 251) as u8).collect(),
    }
}

#[test]
fn a_kept_capture_comes_back_whole_and_goes_with_its_run() {
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    let raw = raw_trace(2500);
    s.insert_cell(id, &CellRecord { raw_trace: Some(raw.clone()), ..record(0, 0, 2) }).unwrap();
    s.insert_cell(id, &record(1, 0, 1)).unwrap();
    let parts: i64 =
        s.conn.query_row("SELECT count(*) FROM trace_parts", [], |r| r.get(0)).unwrap();
    assert_eq!(parts, 3, "2500 bytes in parts of 1000");
    assert_eq!(s.raw_trace(id, 0, 0, false).unwrap(), Some(raw));
    assert_eq!(s.raw_trace(id, 1, 0, false).unwrap(), None, "an untraced cell has none");
    assert_eq!(
        s.raw_traces(id).unwrap(),
        vec![KeptTrace { cell_id: 0, rep: 0, warmup: false, raw_bytes: 7500, stored_bytes: 2500 }]
    );
    assert!(
        s.cells(id).unwrap().iter().all(|c| c.raw_trace.is_none()),
        "cells() leaves captures out"
    );
    s.conn.execute("DELETE FROM runs WHERE id = ?1", [id]).unwrap();
    let left: i64 = s
        .conn
        .query_row(
            "SELECT (SELECT count(*) FROM traces) + (SELECT count(*) FROM trace_parts)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "a run's captures are deleted with it");
}

#[test]
fn a_spooled_capture_travels_beside_the_line_and_is_removed_with_the_spool() {
    let dir = std::env::temp_dir().join(format!("schedlab-spool-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = crate::spool::path(&dir.join("r.db"), 3);
    let raw = raw_trace(5000);
    crate::spool::append(&file, 3, &CellRecord { raw_trace: Some(raw.clone()), ..record(0, 1, 1) })
        .unwrap();
    crate::spool::append(&file, 3, &record(1, 0, 1)).unwrap();
    let line = std::fs::read_to_string(&file).unwrap();
    assert!(
        line.len() < 5000,
        "the capture's bytes are not in the JSON line: {} bytes",
        line.len()
    );
    let recs = crate::spool::read(&file, 3).unwrap();
    assert_eq!((recs[0].raw_trace.as_ref(), recs[1].raw_trace.as_ref()), (Some(&raw), None));
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    s.import(id, &recs).unwrap();
    assert_eq!(s.raw_trace(id, 0, 1, false).unwrap(), Some(raw));
    crate::spool::remove(&file).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "spool and capture file removed");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn run_rows_keep_spec_env_and_warnings() {
    let s = Store::memory().unwrap();
    let id = new_run(&s);
    s.finish_run(id, &RunStatus::Interrupted, &["w1".to_string()]).unwrap();
    let r = s.run(id).unwrap().unwrap();
    assert_eq!(
        (r.status.as_str(), r.spec_text.as_str(), r.env.kernel.as_str()),
        ("interrupted", "name='t'", "6.1")
    );
    assert_eq!(r.warnings, vec!["w1".to_string()]);
    assert_eq!(s.latest(Some(Mode::Sim)).unwrap(), None);
    assert_eq!(s.latest(None).unwrap().unwrap().id, id);
}

#[test]
fn a_resumed_run_keeps_the_warnings_of_its_earlier_sessions() {
    let s = Store::memory().unwrap();
    let id = new_run(&s);
    let w = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    s.finish_run(id, &RunStatus::Interrupted, &w(&["skipped fifo cells", "w1"])).unwrap();
    s.reopen_run(id).unwrap();
    s.finish_run(id, &RunStatus::Complete, &w(&["w1", "w2"])).unwrap();
    let r = s.run(id).unwrap().unwrap();
    assert_eq!(r.warnings, w(&["skipped fifo cells", "w1", "w2"]), "each text once, in order");
}

#[test]
fn reopening_a_file_keeps_data_and_schema_version() {
    let dir = std::env::temp_dir().join(format!("schedlab-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.db");
    {
        let mut s = Store::open(&path).unwrap();
        let id = new_run(&s);
        s.insert_cell(id, &record(0, 0, 1)).unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.runs().unwrap()[0].cells_done, 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn per_job_records_go_to_their_own_table_and_come_back() {
    use schedlab_model::jobs::{JobLog, JobTrace};
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    let mut rec = record(4, 1, 3);
    let log = |n: u64| JobLog {
        source: "worker".into(),
        d_ns: 10_000_000,
        jobs: (0..n)
            .map(|k| JobTrace {
                release_ns: k * 10_000_000,
                start_ns: Some(20_000),
                met: true,
                ..Default::default()
            })
            .collect(),
        unrecorded: 0,
    };
    rec.samples[0].jobs = Some(log(500));
    rec.samples[2].jobs = Some(log(3));
    s.insert_cell(id, &rec).unwrap();
    s.insert_cell(id, &record(5, 0, 1)).unwrap();
    let logs = s.job_logs(id, 4, 1, false).unwrap();
    assert_eq!(logs, vec![(0, log(500)), (2, log(3))]);
    assert!(s.job_logs(id, 5, 0, false).unwrap().is_empty());
    // Samples read back leave the records out (they are heavy); their table keeps them.
    let mut cells = s.cells(id).unwrap();
    assert!(cells.iter().all(|c| c.samples.iter().all(|x| x.jobs.is_none())));
    s.attach_job_logs(id, &mut cells).unwrap();
    let lens = |cell_id: u32| -> Vec<Option<usize>> {
        let c = cells.iter().find(|c| c.params.cell_id == cell_id).unwrap();
        c.samples.iter().map(|x| x.jobs.as_ref().map(|l| l.jobs.len())).collect()
    };
    assert_eq!(lens(4), [Some(500), None, Some(3)]);
    assert_eq!(lens(5), [None]);
}

#[test]
fn every_sample_column_has_a_migration() {
    let store = Store::memory().unwrap();
    let mut st = store.conn.prepare("SELECT name, type FROM pragma_table_info('samples')").unwrap();
    let have: Vec<(String, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for c in Sample::COLUMNS {
        let found = have.iter().find(|(name, _)| name == c.db);
        assert!(
            found.is_some(),
            "Sample::{} has no column `{}` in the latest schema: append `ALTER TABLE samples ADD COLUMN {} {} NOT NULL DEFAULT ...;` to MIGRATIONS in crates/store/src/schema.rs",
            c.name,
            c.db,
            c.db,
            c.kind.sql()
        );
        assert_eq!(
            found.unwrap().1,
            c.kind.sql(),
            "samples.{} is stored with another SQL type than Sample::{} holds",
            c.db,
            c.name
        );
    }
}

/// The sample INSERT as written by hand before the column table (schema version 6).
const INSERT_V6: &str = "INSERT INTO samples (cell_row, idx, pid, exit_code, signal, timed_out, wall_s, engine_wall_s, user_s, sys_s, cpu_pct,
    voluntary_csw, involuntary_csw, max_rss_kb, minor_faults, major_faults, setup_user_s, setup_sys_s, setup_voluntary_csw,
    setup_involuntary_csw, work_units, start_offset_s, end_offset_s, extra_json, group_name, background, allowed_cpus, cpus_seen, window_cpu_s)
    VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29)";

/// A database at schema `version` in a directory of its own, with one run (id 1).
pub(crate) fn old_database(tag: &str, version: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("schedlab-store-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    let _ = std::fs::remove_file(&path);
    let conn = Connection::open(&path).unwrap();
    for m in &schema::MIGRATIONS[..version] {
        conn.execute_batch(m).unwrap();
    }
    conn.execute_batch(&format!("PRAGMA user_version = {version}")).unwrap();
    conn.execute(
        "INSERT INTO runs (name, mode, status, started_unix, spec_path, spec_text, spec_hash, plan_json, scale, env_json, tool_version, command_line, warnings_json)
         VALUES ('t', 'measured', 'complete', 1, 't.toml', '', 'abc', '{}', 1, '{}', '0', 'schedlab', '[]')",
        [],
    )
    .unwrap();
    (dir, path)
}

#[test]
fn a_database_written_before_the_column_table_reads_back_the_same_samples() {
    let (dir, path) = old_database("v6", 6);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO cells (run_id, cell_id, key, workload, workload_kind, policy, class, priority, nice, processes, rep, warmup, ordinal,
               status, started_unix, makespan_s, stat_user, stat_nice, stat_system, stat_idle, stat_iowait, stat_irq, stat_softirq,
               stat_ctxt, stat_intr, stat_forks, engine_user_s, engine_sys_s, engine_max_rss_kb)
             VALUES (1, 0, 'cpu/other/n2', 'cpu', 'pi', 'other', 'other', 0, 0, 2, 0, 0, 0, 'ok', 1.5, 2.0, 0,0,0,0,0,0,0,0,0,0, 0,0,0)",
            [],
        )
        .unwrap();
        conn.execute(
            INSERT_V6,
            params![
                1,
                1,
                4242,
                None::<i32>,
                9,
                true,
                1.25,
                1.5,
                0.75,
                0.125,
                50.0,
                3,
                4,
                2048,
                10,
                1,
                0.01,
                0.02,
                5,
                6,
                1e6,
                0.001,
                1.25,
                r#"{"cpu":1}"#,
                "bg",
                true,
                "[0,1]",
                "[1]",
                0.5
            ],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let cells = store.cells(1).unwrap();
    let want = Sample {
        index: 1,
        group: "bg".into(),
        background: true,
        allowed_cpus: vec![0, 1],
        cpus_seen: vec![1],
        pid: 4242,
        exit_code: None,
        signal: Some(9),
        timed_out: true,
        wall_s: 1.25,
        engine_wall_s: 1.5,
        user_s: 0.75,
        sys_s: 0.125,
        cpu_pct: 50.0,
        voluntary_csw: 3,
        involuntary_csw: 4,
        max_rss_kb: 2048,
        minor_faults: 10,
        major_faults: 1,
        setup_user_s: 0.01,
        setup_sys_s: 0.02,
        setup_voluntary_csw: 5,
        setup_involuntary_csw: 6,
        window_cpu_s: 0.5,
        work_units: 1e6,
        start_offset_s: 0.001,
        end_offset_s: 1.25,
        extra: schedlab_model::Extra { cpu: Some(1), ..Default::default() },
        ..Default::default()
    };
    assert_eq!(cells[0].samples, vec![want]);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_periodic_cell_stored_before_groups_kept_utilisation_gets_it_from_its_key() {
    let (dir, path) = old_database("v7", 7);
    {
        let conn = Connection::open(&path).unwrap();
        let group = r#"[{"name":"main","workload":"set","workload_kind":"periodic","policy":"dwcs","class":"other","priority":0,"nice":0,"processes":4,"affinity":"all","cpu_weight":null,"cpu_max":null,"cpuset":null,"background":false}]"#;
        for (cell, key) in [
            (0, "set/dwcs/utilisation=0.25/n4"),
            (1, "set/edf/utilisation=0.5"),
            (2, "set/dwcs/n4"),
        ] {
            conn.execute(
                "INSERT INTO cells (run_id, cell_id, key, workload, workload_kind, policy, class, priority, nice, processes, rep, warmup, ordinal,
                   status, started_unix, makespan_s, stat_user, stat_nice, stat_system, stat_idle, stat_iowait, stat_irq, stat_softirq,
                   stat_ctxt, stat_intr, stat_forks, engine_user_s, engine_sys_s, engine_max_rss_kb, groups_json)
                 VALUES (1, ?1, ?2, 'set', 'periodic', 'dwcs', 'other', 0, 0, 4, 0, 0, ?1, 'failed', 1.5, 0, 0,0,0,0,0,0,0,0,0,0, 0,0,0, ?3)",
                params![cell, key, group],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    let cells = store.cells(1).unwrap();
    let got: Vec<Option<f64>> = cells.iter().map(|c| c.params.groups[0].utilisation).collect();
    assert_eq!(got, vec![Some(0.25), Some(0.5), None]);
    assert_eq!(cells[0].params.groups[0].processes, 4, "the rest of the group is as it was");
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn many_jobs_are_stored_in_sample_order_whichever_thread_encoded_them() {
    use schedlab_model::jobs::{JobLog, JobTrace};
    let mut rec = record(0, 0, 5);
    // Above the threshold for two threads, with a sample without jobs among them.
    for (i, s) in rec.samples.iter_mut().enumerate().filter(|(i, _)| *i != 2) {
        let jobs = (0..(4_000 + 3_000 * i as u64))
            .map(|k| JobTrace {
                release_ns: k * 1_000 + i as u64,
                start_ns: Some(k % 13),
                met: k % 3 > 0,
                ..Default::default()
            })
            .collect();
        s.jobs = Some(JobLog { source: format!("sim{i}"), d_ns: 900, jobs, unrecorded: 0 });
    }
    assert!(
        rec.samples.iter().filter_map(|s| s.jobs.as_ref()).map(|l| l.jobs.len()).sum::<usize>()
            > 20_000
    );
    let encoded = encoded_logs(&rec.samples);
    assert_eq!(encoded.len(), rec.samples.len());
    for (s, e) in rec.samples.iter().zip(&encoded) {
        assert_eq!(s.jobs.as_ref().map(|l| l.encode()), *e, "sample {}", s.index);
    }
    let mut store = Store::memory().unwrap();
    let id = new_run(&store);
    store.insert_cell(id, &rec).unwrap();
    let back = store.job_logs(id, rec.params.cell_id, rec.rep, rec.warmup).unwrap();
    let kept: Vec<(u32, JobLog)> =
        rec.samples.iter().filter_map(|s| Some((s.index, s.jobs.clone()?))).collect();
    assert_eq!(back, kept);
}

#[test]
fn each_cells_repetition_outcome_is_stored_once_and_read_back_onto_its_records() {
    use schedlab_model::{AdaptiveTarget, RepetitionOutcome};
    let mut store = Store::memory().unwrap();
    let id = new_run(&store);
    for (cell, rep) in [(0, 0), (0, 1), (1, 0)] {
        store.insert_cell(id, &record(cell, rep, 1)).unwrap();
    }
    assert!(
        store.cells(id).unwrap().iter().all(|c| c.params.repetitions.is_none()),
        "fixed repetitions: none"
    );
    let target = AdaptiveTarget { min: 2, max: 9, ci_pct: 2.5 };
    let o = |repetitions, reached| RepetitionOutcome {
        repetitions,
        reached,
        figure: "wall_per_proc".into(),
        half_width_pct: Some(7.25),
        target,
    };
    store.set_repetition_outcome(id, 0, &o(1, false)).unwrap();
    // A resumed run decides again: the newer outcome replaces the older.
    store.set_repetition_outcome(id, 0, &o(2, true)).unwrap();
    let cells = store.cells(id).unwrap();
    let of = |cell: u32| {
        cells
            .iter()
            .filter(|c| c.params.cell_id == cell)
            .map(|c| c.params.repetitions.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(of(0), vec![Some(o(2, true)); 2]);
    assert_eq!(of(1), vec![None], "a cell still repeating has no outcome");
    assert_eq!(store.repetition_outcomes(id).unwrap().len(), 1);
}

#[test]
fn runs_opening_one_new_database_at_once_all_get_its_schema() {
    let dir = std::env::temp_dir().join(format!("schedlab-store-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for attempt in 0..10 {
        let path = dir.join(format!("new-{attempt}.db"));
        let _ = std::fs::remove_file(&path);
        let start = std::sync::Arc::new(std::sync::Barrier::new(4));
        let opened: Vec<_> = (0..4)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let s = Store::open(&path)?;
                    new_run(&s);
                    Ok::<(), DbError>(())
                })
            })
            .collect();
        for t in opened {
            t.join().unwrap().unwrap_or_else(|e| panic!("attempt {attempt}: {e}"));
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.runs().unwrap().len(), 4);
        let version: i64 = s.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, schema::MIGRATIONS.len() as i64);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_schema_version_newer_or_below_zero_is_refused_in_plain_words() {
    for (tag, version, want) in [
        ("newer", 999, "schema version 999, newer than this schedlab"),
        ("negative", -1, "schema version -1, which no schedlab writes"),
    ] {
        let (dir, path) = old_database(tag, schema::MIGRATIONS.len());
        Connection::open(&path)
            .unwrap()
            .execute_batch(&format!("PRAGMA user_version = {version}"))
            .unwrap();
        let e = crate::Store::open(&path)
            .err()
            .unwrap_or_else(|| panic!("user_version {version} was accepted"))
            .to_string();
        assert!(e.starts_with("this database has ") && e.contains(want), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_run_without_a_uuid_is_reported_in_plain_words() {
    let (dir, path) = old_database("null-uuid", schema::MIGRATIONS.len());
    Connection::open(&path).unwrap().execute_batch("UPDATE runs SET uuid = NULL").unwrap();
    let store = crate::Store::open(&path).unwrap();
    let e = store.run(1).err().unwrap_or_else(|| panic!("a NULL uuid was read")).to_string();
    assert_eq!(e, "run 1 has no uuid (NULL), which schedlab always writes: the database was changed by another program");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn task_sets_round_trip_and_say_which_are_done() {
    use schedlab_model::jobs::{JobLog, JobTrace};
    use schedlab_model::sets::{SetTask, SetVerdict, TaskSetRow};
    let mut s = Store::memory().unwrap();
    let id = new_run(&s);
    let row = |cell_id: u32, index: u32| TaskSetRow {
        cell_id,
        index,
        seed: (1 << 62) + u64::from(index),
        scheduler: "dwcs".into(),
        utilisation: 0.75,
        plain_utilisation: 0.7512,
        min_utilisation: 0.3756,
        cpus: 2,
        tasks: vec![SetTask { c_ns: 3_000_000, t_ns: 40_000_000, d_ns: 30_000_000, x: 1, y: 2 }],
        jobs: 250,
        misses: u64::from(index),
        violations: 1,
        schedulable: index == 0,
        tests: vec![("gfb".into(), SetVerdict::Yes), ("density".into(), SetVerdict::Unknown)],
        message: (index == 2).then(|| "could not be generated".into()),
        jobs_log: (index == 1).then(|| {
            vec![JobLog {
                source: "sim".into(),
                d_ns: 30_000_000,
                jobs: vec![JobTrace {
                    release_ns: 0,
                    finish_ns: Some(5),
                    met: true,
                    ..Default::default()
                }],
                unrecorded: 0,
            }]
        }),
    };
    let rows: Vec<TaskSetRow> = (0..3).map(|i| row(1, i)).collect();
    s.insert_task_sets(id, &rows[..2]).unwrap();
    s.insert_task_sets(id, &rows[2..]).unwrap();
    s.insert_task_sets(id, &[row(0, 0)]).unwrap();
    let back = s.task_sets(id).unwrap();
    assert_eq!(back[0], row(0, 0), "ordered by cell, then index");
    assert_eq!(&back[1..], &rows[..]);
    assert_eq!(
        s.done_task_sets(id).unwrap().into_iter().collect::<Vec<_>>(),
        vec![(0, 0), (1, 0), (1, 1), (1, 2)]
    );
    assert!(s.task_sets(id + 1).unwrap().is_empty());
}
