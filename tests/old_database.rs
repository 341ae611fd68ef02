//! Issue #16: a database written before the typed-records change opens and shows the same
//! tables after it. `tests/fixtures/before-typed-core` holds a database written by the binary
//! of the commit before the change (its README says which, and how) and what that binary
//! printed for it (`golden/`); these tests give a copy to the current binary, run the same
//! commands and compare. The outputs depend only on the database (stored UTC times, no
//! paths), so they are compared byte for byte, with nothing normalised.
//!
//! Reading needs no privilege: as root the commands run as an unprivileged user of their own
//! (see `unprivileged`), so a read that began to need one would fail here.

use crate::unprivileged::{cannot_drop, Dropped};
use crate::util::{is_root, Lab};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The fixture's directory.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/before-typed-core")
}

/// A copy of the fixture database and who reads it: an unprivileged user when we are root.
enum Reader {
    /// This process's own user (not root, or root that cannot drop privileges here).
    Me(Lab),
    /// A user of this test's own without capabilities.
    Other(Dropped),
}

impl Reader {
    fn new() -> Reader {
        let reader = match (is_root(), cannot_drop()) {
            (true, None) => Reader::Other(Dropped::new()),
            (true, Some(why)) => {
                eprintln!("note: {}: reading as root ({why})", module_path!());
                Reader::Me(Lab::new())
            }
            (false, _) => Reader::Me(Lab::new()),
        };
        std::fs::copy(fixture().join("before-typed-core.db"), reader.db())
            .expect("copy the fixture database");
        if let Reader::Other(u) = &reader {
            std::os::unix::fs::chown(reader.db(), Some(u.uid), Some(u.uid)).unwrap();
        }
        reader
    }

    fn db(&self) -> PathBuf {
        match self {
            Reader::Me(lab) => lab.db(),
            Reader::Other(u) => u.db(),
        }
    }

    /// A directory the reader may write into.
    fn dir(&self) -> PathBuf {
        match self {
            Reader::Me(lab) => lab.dir.path().to_path_buf(),
            Reader::Other(u) => u.work(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        match self {
            Reader::Me(lab) => lab.run(args),
            Reader::Other(u) => u.run(args),
        }
    }
}

/// `golden/commands`: (golden file name, arguments after `--db DB`).
fn commands() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(fixture().join("golden/commands")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.split_whitespace().map(String::from);
            (words.next().unwrap(), words.collect())
        })
        .collect()
}

/// Where `got` first differs from `want`, for a failure message.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let (want, got) = (String::from_utf8_lossy(want), String::from_utf8_lossy(got));
    let (mut w, mut g) = (want.lines(), got.lines());
    for n in 1.. {
        match (w.next(), g.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => return "only in line endings".into(),
            (a, b) => return format!("line {n}:\n    want {a:?}\n    got  {b:?}"),
        }
    }
    unreachable!()
}

/// Integer rows of a query on the database at `db`.
fn ints(db: &Path, sql: &str) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn.prepare(sql).unwrap();
    st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// Every table's columns (name, type, not null, default, primary key) and every index.
fn schema(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let sql = "SELECT m.type || ' ' || m.name || coalesce(' ' || p.name || ' ' || p.type || ' ' || p.\"notnull\" || ' ' || \
               coalesce(p.dflt_value, '-') || ' ' || p.pk, '') \
               FROM sqlite_master m LEFT JOIN pragma_table_info(m.name) p ON m.type = 'table' \
               WHERE m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid";
    let mut st = conn.prepare(sql).unwrap();
    st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_database_from_before_typed_records_shows_the_same_tables() {
    let reader = Reader::new();
    let version_before = ints(&reader.db(), "PRAGMA user_version")[0];
    let commands = commands();

    // The goldens cover every run: show and both exports, and the per-job export where there are jobs.
    let lines: Vec<String> = commands.iter().map(|(_, a)| a.join(" ")).collect();
    let runs = ints(&reader.db(), "SELECT id FROM runs ORDER BY id");
    let with_jobs = ints(
        &reader.db(),
        "SELECT DISTINCT c.run_id FROM jobs j JOIN cells c ON c.id = j.cell_row ORDER BY 1",
    );
    assert!(runs.len() >= 7 && !with_jobs.is_empty(), "runs {runs:?}, with jobs {with_jobs:?}");
    for id in &runs {
        for want in [
            format!("show {id}"),
            format!("export {id} --format json"),
            format!("export {id} --format csv"),
        ] {
            assert!(lines.contains(&want), "golden/commands lacks `{want}`");
        }
    }
    for id in &with_jobs {
        assert!(
            lines.contains(&format!("export {id} --jobs --format csv")),
            "golden/commands lacks the jobs of run {id}"
        );
    }
    assert!(
        lines.iter().any(|l| l == "runs") && lines.iter().any(|l| l.starts_with("compare ")),
        "{lines:?}"
    );

    let mut failures = Vec::new();
    let actual = tempfile::Builder::new().prefix("old-database-actual-").tempdir().unwrap();
    for (name, args) in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = reader.run(&args);
        if !out.status.success() {
            failures.push(format!(
                "`{}` exited {:?}: {}",
                args.join(" "),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
            continue;
        }
        let golden = fixture().join("golden").join(name);
        let stderr_golden = fixture().join("golden").join(format!("{name}.stderr"));
        let want_err = std::fs::read(&stderr_golden).unwrap_or_default();
        for (what, want, got, file) in [
            ("standard output", std::fs::read(&golden).unwrap(), &out.stdout, name.clone()),
            ("standard error", want_err, &out.stderr, format!("{name}.stderr")),
        ] {
            if want != *got {
                std::fs::write(actual.path().join(&file), got).unwrap();
                failures.push(format!(
                    "`{}`: {what} differs from golden/{file} at {}",
                    args.join(" "),
                    first_difference(&want, got)
                ));
            }
        }
    }
    if !failures.is_empty() {
        let kept = actual.keep();
        panic!(
            "{} failures over {} commands (the differing outputs are in {}):\n{}",
            failures.len(),
            commands.len(),
            kept.display(),
            failures.join("\n")
        );
    }

    // Opening migrated the copy to exactly the schema a new database gets.
    let fresh = tempfile::tempdir().unwrap();
    let fresh_db = fresh.path().join("fresh.db");
    drop(schedlab_store::Store::open(&fresh_db).unwrap());
    let version_after = ints(&reader.db(), "PRAGMA user_version")[0];
    assert_eq!(
        version_after,
        ints(&fresh_db, "PRAGMA user_version")[0],
        "the copy is at the current schema version"
    );
    assert!(
        version_before <= version_after,
        "schema {version_before} went back to {version_after}"
    );
    assert_eq!(
        schema(&reader.db()),
        schema(&fresh_db),
        "the migrated copy has a new database's tables and columns"
    );
    let conn = rusqlite::Connection::open(reader.db()).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn reports_of_an_old_io_run_and_an_old_periodic_run_draw_the_same_figures() {
    let reader = Reader::new();
    for (run, golden) in [("4", "report-4-io.figures"), ("5", "report-5-rt.figures")] {
        let dir = reader.dir().join(format!("report-{run}"));
        let out = reader.run(&["report", run, "-o", dir.to_str().unwrap()]);
        assert!(out.status.success(), "report {run}: {}", String::from_utf8_lossy(&out.stderr));
        let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
        assert!(html.contains("</html>"), "report {run}: index.html is whole");
        let mut figures: Vec<String> = std::fs::read_dir(dir.join("figures"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        figures.sort();
        let want: Vec<String> = std::fs::read_to_string(fixture().join("golden").join(golden))
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(figures, want, "report {run}: the figures the old binary drew");
    }
}

/// Where `new` lost or changed something of `old` (keys `new` adds are fine; a number
/// compares by value, so 3 and 3.0 are equal).
fn lost(old: &Value, new: &Value, path: &str, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (k, v) in o {
                match n.get(k) {
                    Some(nv) => lost(v, nv, &format!("{path}.{k}"), out),
                    None if v.is_null() => {}
                    None => out.push(format!("{path}.{k}: stored {v}, not read back")),
                }
            }
        }
        (Value::Array(o), Value::Array(n)) if o.len() == n.len() => {
            for (i, (a, b)) in o.iter().zip(n).enumerate() {
                lost(a, b, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        _ if old == new => {}
        _ => out.push(format!("{path}: stored {old}, read back {new}")),
    }
}

/// The JSON text of a column (None: SQL NULL) as a value.
fn parsed(text: Option<String>) -> Value {
    text.map(|t| serde_json::from_str(&t).unwrap()).unwrap_or(Value::Null)
}

#[test]
fn old_records_read_back_without_losing_a_field() {
    // The CLI shows only part of what a record holds (a dispatcher's metrics appear in no
    // table): every field of each stored JSON column must come back in the records the store
    // reads, which the store's readers would otherwise drop in silence.
    let lab = Lab::new();
    std::fs::copy(fixture().join("before-typed-core.db"), lab.db()).unwrap();
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let mut stored: BTreeMap<String, Value> = BTreeMap::new();
    let mut st = conn
        .prepare(
            "SELECT c.run_id, c.cell_id, c.rep, c.warmup, c.groups_json, c.io_json, c.rt_json,
                    (SELECT json_group_object(s.idx, json(s.extra_json)) FROM samples s WHERE s.cell_row = c.id)
             FROM cells c",
        )
        .unwrap();
    let rows = st.query_map([], |r| {
        let key =
            format!("run {} cell {} rep {} warmup {}", r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, bool>(3)?);
        let cell = serde_json::json!({
            "groups": parsed(r.get(4)?),
            "io": parsed(r.get(5)?),
            "rt": parsed(r.get(6)?),
            "extra": r.get::<_, Option<String>>(7)?.map_or(Value::Object(Default::default()), |t| parsed(Some(t))),
        });
        Ok((key, cell))
    });
    for row in rows.unwrap() {
        let (k, v) = row.unwrap();
        stored.insert(k, v);
    }
    let mut st = conn.prepare("SELECT id, env_json FROM runs").unwrap();
    let envs: Vec<(i64, String)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    assert!(stored.len() > 50 && envs.len() >= 7, "{} cells, {} runs", stored.len(), envs.len());

    let mut problems = Vec::new();
    let mut seen = 0;
    for (id, env) in &envs {
        let run = store.run(*id).unwrap().unwrap();
        lost(
            &parsed(Some(env.clone())),
            &serde_json::to_value(&run.env).unwrap(),
            &format!("run {id} env"),
            &mut problems,
        );
        for c in store.cells(*id).unwrap() {
            let key =
                format!("run {id} cell {} rep {} warmup {}", c.params.cell_id, c.rep, c.warmup);
            let old = stored.get(&key).unwrap_or_else(|| panic!("{key} is not in the database"));
            let extra: serde_json::Map<String, Value> = c
                .samples
                .iter()
                .map(|s| (s.index.to_string(), serde_json::to_value(&s.extra).unwrap()))
                .collect();
            let new = serde_json::json!({
                "groups": serde_json::to_value(&c.params.groups).unwrap(),
                "io": serde_json::to_value(&c.io).unwrap(),
                "rt": serde_json::to_value(&c.rt).unwrap(),
                "extra": Value::Object(extra),
            });
            lost(old, &new, &key, &mut problems);
            seen += 1;
        }
    }
    assert_eq!(seen, stored.len(), "the store read every cell repetition back");
    assert!(
        problems.is_empty(),
        "{} stored values not read back:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
