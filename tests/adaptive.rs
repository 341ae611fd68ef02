//! Adaptive repetitions (issue #21 item 2): a cell whose figure is stable stops at `min`, one
//! made noisy goes on to `max`; both are stored and shown, and `--resume` continues each cell
//! from what the database holds.

use crate::util::Lab;
use serde_json::Value;
use std::time::{Duration, Instant};

/// `stable` sleeps 1 s: even a loaded machine's delays stay well inside ±50% at 3
/// repetitions. `noisy` sleeps 0.02 s in even repetitions and 0.4 s in odd ones (its cell
/// directory, `{dir}`, ends in the repetition; a test's own workload: schedlab execs `sh` as an
/// argument vector), so its interval stays near ±90% of the mean up to 8 repetitions.
const SPEC: &str = r#"name = "adaptive"
repetitions = { min = 3, max = 8, ci_pct = 50 }
[matrix]
workload = ["stable", "noisy"]
[workloads.stable]
kind = "command"
argv = ["sleep", "1"]
[workloads.noisy]
kind = "command"
argv = ["sh", "-c", "case {dir} in *[02468]) sleep 0.02 ;; *) sleep 0.4 ;; esac"]
"#;

/// Measured repetitions stored per cell of run 1, by cell id, and their repetition numbers
/// (none while the database is not there yet: it is only read, never made here).
fn stored(lab: &Lab) -> Vec<(u32, Vec<u32>)> {
    let read = || -> rusqlite::Result<Vec<(u32, u32)>> {
        let conn = rusqlite::Connection::open_with_flags(
            lab.db(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        let mut st = conn.prepare(
            "SELECT cell_id, rep FROM cells WHERE run_id = 1 AND warmup = 0 ORDER BY cell_id, rep",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    };
    let rows = read().unwrap_or_default();
    let mut out: Vec<(u32, Vec<u32>)> = Vec::new();
    for (cell, rep) in rows {
        match out.last_mut() {
            Some((c, reps)) if *c == cell => reps.push(rep),
            _ => out.push((cell, vec![rep])),
        }
    }
    out
}

/// (repetitions, reached) of each cell as `export` gives them.
fn outcomes(lab: &Lab) -> Vec<(String, Value, Value)> {
    let mut out: Vec<(String, Value, Value)> = Vec::new();
    for r in lab.samples() {
        let o = (
            r["cell_key"].as_str().unwrap().to_string(),
            r["cell_repetitions"].clone(),
            r["cell_target_reached"].clone(),
        );
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0));
    out
}

/// Checks the finished run: the stable cell stopped at min with the target reached, the
/// noisy one at max without; `show` marks the noisy one and says why.
fn check_finished(lab: &Lab) {
    assert_eq!(
        stored(lab),
        vec![(0, vec![0, 1, 2]), (1, (0..8).collect())],
        "stable at min, noisy at max, each repetition once"
    );
    assert_eq!(
        outcomes(lab),
        vec![
            ("stable/other/n1".into(), 3.into(), true.into()),
            ("noisy/other/n1".into(), 8.into(), false.into())
        ]
    );
    let show = lab.ok(&["show"]);
    let row = |key: &str| {
        show.lines()
            .find(|l| l.contains(key) && l.contains('┆'))
            .unwrap_or_else(|| panic!("{key} in {show}"))
            .to_string()
    };
    assert!(row("noisy").contains("8†"), "{show}");
    assert!(row("stable").contains(" 3 ") && !row("stable").contains('†'), "{show}");
    assert!(
        show.contains(
            "1 of 2 cells reached it; † marks the 1 that did not: noisy/other/n1 (8 repetitions, ±"
        ),
        "{show}"
    );
}

#[test]
fn a_stable_cell_stops_at_min_and_a_noisy_one_goes_on_to_max() {
    let lab = Lab::new();
    let spec = lab.spec("a.toml", SPEC);
    let out = lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    assert!(out.contains("adaptive: 1 of 2 cells within ±50% of the mean, 1 not"), "{out}");
    check_finished(&lab);
}

#[test]
fn a_resumed_adaptive_run_continues_each_cell_from_its_stored_repetitions() {
    let lab = Lab::new();
    let spec = lab.spec("a.toml", SPEC);
    let mut child = lab
        .cmd(&["run", spec.to_str().unwrap(), "-q"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the noisy cell repeats beyond min, in a round of its own.
    let t0 = Instant::now();
    while stored(&lab).get(1).is_none_or(|(_, reps)| reps.len() < 4) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the noisy cell never repeated beyond min: {:?}",
            stored(&lab)
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the noisy cell's fourth repetition"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Its last four repetitions take 0.8 s: the signal comes well before their end.
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let before = stored(&lab);
    assert_eq!(before[0].1, [0, 1, 2], "the stable cell had stopped");
    assert!((4..8).contains(&before[1].1.len()), "{before:?}");
    let out = lab.run(&["run", spec.to_str().unwrap(), "--resume", "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("0 of the 6 that every cell runs first to go, then each cell's decision"),
        "{err}"
    );
    check_finished(&lab);
}

#[test]
fn shards_of_an_adaptive_run_each_own_whole_cells_and_adapt_them() {
    let lab = Lab::new();
    let spec = lab.spec("a.toml", SPEC);
    for k in ["0/2", "1/2"] {
        lab.ok(&["run", spec.to_str().unwrap(), "--shard", k, "-q"]);
    }
    let conn =
        rusqlite::Connection::open_with_flags(lab.db(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut st =
        conn.prepare("SELECT run_id, cell_id, count(*) FROM cells WHERE warmup = 0 GROUP BY run_id, cell_id ORDER BY cell_id").unwrap();
    let rows: Vec<(i64, u32, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Each cell in one shard only, with all its repetitions: stable at min, noisy at max.
    assert_eq!(
        rows.iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
        vec![(0, 3), (1, 8)],
        "{rows:?}"
    );
    assert_ne!(rows[0].0, rows[1].0, "the two cells went to different shards: {rows:?}");
    let reached: Vec<(u32, i64, bool)> = conn
        .prepare("SELECT cell_id, repetitions, reached FROM cell_repetitions ORDER BY cell_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(reached, vec![(0, 3, true), (1, 8, false)]);
}
