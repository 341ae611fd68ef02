use super::*;
use crate::tests::{new_run, raw_trace, record};
use schedlab_model::CellRecord;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-merge-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A database at `path` with one run that has rows in every table a run owns.
fn shard_db(path: &Path, campaign: Option<(&str, Shard)>, scale: f64) -> Store {
    let mut s = Store::open(path).unwrap();
    let id = new_run(&s);
    s.conn.execute("UPDATE runs SET scale = ?2 WHERE id = ?1", params![id, scale]).unwrap();
    if let Some((c, shard)) = campaign {
        s.set_campaign(id, c, shard).unwrap();
    }
    let mut a = record(0, 0, 2);
    a.samples[1].jobs = Some(schedlab_model::jobs::JobLog {
        source: "worker".into(),
        d_ns: 5,
        jobs: vec![Default::default(); 3],
        unrecorded: 0,
    });
    s.insert_cell(id, &CellRecord { raw_trace: Some(raw_trace(2500)), ..a }).unwrap();
    s.insert_cell(id, &record(1, 0, 3)).unwrap();
    let outcome = schedlab_model::RepetitionOutcome {
        repetitions: 4,
        reached: false,
        figure: "wall_per_proc".into(),
        half_width_pct: Some(7.5),
        target: schedlab_model::AdaptiveTarget { min: 3, max: 4, ci_pct: 5.0 },
    };
    s.set_repetition_outcome(id, 1, &outcome).unwrap();
    let set = schedlab_model::sets::TaskSetRow {
        cell_id: 1,
        index: 0,
        seed: 9,
        scheduler: "edf".into(),
        utilisation: 0.5,
        plain_utilisation: 0.5,
        min_utilisation: 0.5,
        cpus: 1,
        tasks: vec![schedlab_model::sets::SetTask { c_ns: 1, t_ns: 2, d_ns: 2, x: 0, y: 0 }],
        jobs: 5,
        misses: 0,
        violations: 0,
        schedulable: true,
        tests: Vec::new(),
        message: None,
        jobs_log: None,
    };
    s.insert_task_sets(id, &[set]).unwrap();
    s.add_calibration(1.0, "{}", "{\"cpu\":1}", Some(id)).unwrap();
    s.add_floors(id, 1.0, "{}", &[("k".into(), "wall".into(), "{}".into())]).unwrap();
    s.finish_run(id, &RunStatus::Complete, &[]).unwrap();
    s
}

fn counts(s: &Store) -> Vec<(String, i64)> {
    RUN_TABLES
        .iter()
        .map(|t| {
            (
                t.to_string(),
                s.conn.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap(),
            )
        })
        .collect()
}

#[test]
fn merge_copies_every_table_a_run_owns() {
    let mut tables: Vec<String> = {
        let s = Store::memory().unwrap();
        let mut st = s
            .conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .unwrap();
        let rows = st.query_map([], |r| r.get(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    tables.sort();
    let mut listed: Vec<String> = RUN_TABLES.iter().map(|t| t.to_string()).collect();
    listed.sort();
    assert_eq!(
        tables, listed,
        "a table in the schema that RUN_TABLES does not list would be left behind by merge"
    );
}

#[test]
fn a_merged_run_has_every_row_and_merging_again_adds_nothing() {
    let d = dir("rows");
    let src = shard_db(&d.join("a.db"), Some(("c1", Shard { index: 0, count: 2 })), 1.0);
    let src_run = src.runs().unwrap().remove(0);
    let mut out = Store::open(&d.join("all.db")).unwrap();
    let r = out.merge(&[d.join("a.db")]).unwrap();
    assert_eq!(r.merged.len(), 1);
    assert_eq!(r.merged[0].cells, 2);
    assert_eq!(r.merged[0].campaign, Some(("c1".to_string(), Shard { index: 0, count: 2 })));
    assert_eq!(counts(&out), counts(&src), "every table, row for row");
    assert!(
        counts(&out).iter().all(|(_, n)| *n > 0),
        "the fixture fills every table: {:?}",
        counts(&out)
    );
    let id = r.merged[0].id;
    let mut back = out.run(id).unwrap().unwrap();
    back.id = src_run.id;
    assert_eq!(back, src_run, "the run row, uuid and campaign included");
    assert_eq!(out.cells(id).unwrap(), src.cells(src_run.id).unwrap());
    assert_eq!(
        out.job_logs(id, 0, 0, false).unwrap(),
        src.job_logs(src_run.id, 0, 0, false).unwrap()
    );
    assert_eq!(
        out.raw_trace(id, 0, 0, false).unwrap(),
        src.raw_trace(src_run.id, 0, 0, false).unwrap()
    );
    let again = out.merge(&[d.join("a.db")]).unwrap();
    assert!(again.merged.is_empty());
    assert_eq!(again.present, vec![(d.join("a.db"), src_run.id, id)]);
    assert_eq!(counts(&out), counts(&src), "merging twice adds nothing");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn shards_of_one_campaign_at_different_scales_are_refused_before_any_write() {
    let d = dir("refuse");
    shard_db(&d.join("a.db"), Some(("c1", Shard { index: 0, count: 2 })), 1.0);
    shard_db(&d.join("b.db"), Some(("c1", Shard { index: 1, count: 2 })), 0.5);
    let mut out = Store::open(&d.join("all.db")).unwrap();
    let e = out.merge(&[d.join("a.db"), d.join("b.db")]).unwrap_err().to_string();
    assert!(e.contains("campaign c1") && e.contains("scale (1 vs 0.5)"), "{e}");
    assert!(out.runs().unwrap().is_empty(), "nothing was merged");
    // The same shard twice under two UUIDs.
    shard_db(&d.join("c.db"), Some(("c1", Shard { index: 0, count: 2 })), 1.0);
    let e = out.merge(&[d.join("a.db"), d.join("c.db")]).unwrap_err().to_string();
    assert!(e.contains("shard 0/2 is both"), "{e}");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn older_runs_get_distinct_uuids_when_the_schema_is_upgraded() {
    // The schema just before runs got their UUIDs.
    let v = crate::schema::MIGRATIONS.iter().position(|m| m.contains("ADD COLUMN uuid")).unwrap();
    let (d, path) = crate::tests::old_database("uuids", v);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO runs (name, mode, status, started_unix, spec_path, spec_text, spec_hash, plan_json, scale, env_json, tool_version, command_line, warnings_json)
         SELECT name, mode, status, started_unix, spec_path, spec_text, spec_hash, plan_json, scale, env_json, tool_version, command_line, warnings_json FROM runs",
        [],
    )
    .unwrap();
    drop(conn);
    let s = Store::open(&path).unwrap();
    let uuids: Vec<String> = s.runs().unwrap().into_iter().map(|r| r.identity.uuid).collect();
    assert_eq!(uuids.len(), 2);
    assert_ne!(uuids[0], uuids[1]);
    assert!(
        uuids.iter().all(|u| uuid::Uuid::parse_str(u).is_ok_and(|u| u.get_version_num() == 4)),
        "{uuids:?}"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_run_still_being_written_is_skipped_and_a_later_merge_brings_it_whole() {
    let d = dir("running");
    let mut src = Store::open(&d.join("a.db")).unwrap();
    let id = new_run(&src);
    src.insert_cell(id, &record(0, 0, 2)).unwrap();
    let mut out = Store::open(&d.join("all.db")).unwrap();
    let r = out.merge(&[d.join("a.db")]).unwrap();
    assert!(r.merged.is_empty() && r.present.is_empty(), "{r:?}");
    assert_eq!(r.skipped.len(), 1);
    assert!(r.skipped[0].2.contains("still running"), "{:?}", r.skipped);
    assert!(out.runs().unwrap().is_empty(), "nothing of it copied");
    // It ends; the next merge brings all of it.
    src.insert_cell(id, &record(1, 0, 3)).unwrap();
    src.finish_run(id, &RunStatus::Complete, &[]).unwrap();
    let r = out.merge(&[d.join("a.db")]).unwrap();
    assert_eq!(r.merged.len(), 1);
    assert_eq!(r.merged[0].cells, 2);
    assert_eq!(out.run(r.merged[0].id).unwrap().unwrap().status, RunStatus::Complete);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_shard_merged_while_interrupted_is_completed_by_a_later_merge_under_its_id() {
    let d = dir("resumed");
    let mut src = Store::open(&d.join("a.db")).unwrap();
    let id = new_run(&src);
    src.insert_cell(id, &record(0, 0, 2)).unwrap();
    src.finish_run(id, &RunStatus::Interrupted, &[]).unwrap();
    let mut out = Store::open(&d.join("all.db")).unwrap();
    let first = out.merge(&[d.join("a.db")]).unwrap();
    assert_eq!(first.merged.len(), 1);
    let here = first.merged[0].id;
    // Resumed and finished since.
    src.reopen_run(id).unwrap();
    let mut b = record(1, 0, 3);
    b.samples[0].jobs = Some(schedlab_model::jobs::JobLog {
        source: "worker".into(),
        d_ns: 5,
        jobs: vec![Default::default(); 2],
        unrecorded: 0,
    });
    src.insert_cell(id, &b).unwrap();
    src.finish_run(id, &RunStatus::Complete, &[]).unwrap();
    let r = out.merge(&[d.join("a.db")]).unwrap();
    assert!(r.merged.is_empty() && r.present.is_empty(), "{r:?}");
    assert_eq!(r.completed.len(), 1);
    assert_eq!((r.completed[0].id, r.completed[0].cells), (here, 2));
    assert_eq!(out.run(here).unwrap().unwrap().status, RunStatus::Complete);
    assert_eq!(out.cells(here).unwrap(), src.cells(id).unwrap());
    assert_eq!(out.job_logs(here, 1, 0, false).unwrap(), src.job_logs(id, 1, 0, false).unwrap());
    assert_eq!(out.runs().unwrap().len(), 1);
    // Nothing further there: present, as before.
    let again = out.merge(&[d.join("a.db")]).unwrap();
    assert_eq!(again.present, vec![(d.join("a.db"), id, here)]);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn rows_of_a_source_that_belong_to_no_cell_are_reported_not_dropped_silently() {
    let d = dir("orphans");
    shard_db(&d.join("a.db"), None, 1.0);
    let conn = rusqlite::Connection::open(d.join("a.db")).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn.execute_batch(
        "CREATE TEMP TABLE t AS SELECT * FROM samples LIMIT 1; UPDATE t SET cell_row = 999; INSERT INTO samples SELECT * FROM t;",
    )
    .unwrap();
    drop(conn);
    let mut out = Store::open(&d.join("all.db")).unwrap();
    let r = out.merge(&[d.join("a.db")]).unwrap();
    assert_eq!(r.merged.len(), 1);
    assert_eq!(r.orphans, vec![(d.join("a.db"), "samples".to_string(), 1)]);
    std::fs::remove_dir_all(d).unwrap();
}
