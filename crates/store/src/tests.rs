use super::*;
use std::io::Write;

fn record(cell_id: u32, rep: u32, n: u32) -> CellRecord {
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
            groups: vec![schedlab_model::GroupParams { name: "main".into(), cpu_weight: Some(200), ..Default::default() }],
            iosched: None,
        },
        rep,
        warmup: false,
        ordinal: rep,
        status: CellStatus::Ok,
        message: None,
        started_unix: 1.5,
        makespan_s: 2.0,
        stat: StatDelta { user: 10, ctxt: 99, ..Default::default() },
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
                extra: serde_json::json!({"cpu": 1}),
                ..Default::default()
            })
            .collect(),
        io: None,
        rt: None,
    }
}

fn new_run(store: &Store) -> i64 {
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
    let b = record(0, 1, 2);
    s.insert_cell(id, &a).unwrap();
    s.insert_cell(id, &b).unwrap();
    let back = s.cells(id).unwrap();
    assert_eq!(back, vec![a, b]);
    assert_eq!(s.done_steps(id).unwrap(), vec![(0, 0, false), (0, 1, false)]);
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
    s.finish_run(id, "complete with failures", &[]).unwrap();
    assert_eq!(s.resumable_by_hash("abc").unwrap(), None, "a run with failures is complete");
    let id2 = new_run(&s);
    s.finish_run(id2, "spooled", &[]).unwrap();
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
    std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"run_id\":7,\"rec").unwrap();
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

#[test]
fn run_rows_keep_spec_env_and_warnings() {
    let s = Store::memory().unwrap();
    let id = new_run(&s);
    s.finish_run(id, "interrupted", &["w1".to_string()]).unwrap();
    let r = s.run(id).unwrap().unwrap();
    assert_eq!((r.status.as_str(), r.spec_text.as_str(), r.env.kernel.as_str()), ("interrupted", "name='t'", "6.1"));
    assert_eq!(r.warnings, vec!["w1".to_string()]);
    assert_eq!(s.latest(Some(Mode::Sim)).unwrap(), None);
    assert_eq!(s.latest(None).unwrap().unwrap().id, id);
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
        jobs: (0..n).map(|k| JobTrace { release_ns: k * 10_000_000, start_ns: Some(20_000), met: true, ..Default::default() }).collect(),
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
