//! Trust under contention (issue 31): two runs on one machine holding one knob, two runs
//! opening one new database, a merge of a run still being written, a stopped engine, and
//! `restore --all` beside a live run.

use crate::util::{is_root, wait_exit, wait_for, Lab};
use std::process::{Child, Command, Output};
use std::time::Duration;

/// How long a run of these tests may take.
const LONG: Duration = Duration::from_secs(120);

/// A knob no other test sweeps.
const SLICE: &str = "kernel.sched_cfs_bandwidth_slice_us";
const SLICE_FILE: &str = "/proc/sys/kernel/sched_cfs_bandwidth_slice_us";

fn slice() -> String {
    std::fs::read_to_string(SLICE_FILE).unwrap().trim().to_string()
}

/// The slice as it was, put back when dropped (a failed assertion included).
struct SavedSlice(String);

impl Drop for SavedSlice {
    fn drop(&mut self) {
        let _ = std::fs::write(SLICE_FILE, &self.0);
    }
}

/// `schedlab --db DB args...` in the lab, sharing its state directory (as two runs on one
/// machine share /run/schedlab).
fn at(lab: &Lab, db: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    c.arg("--db")
        .arg(lab.path(db))
        .args(args)
        .env("TMPDIR", lab.dir.path())
        .env("SCHEDLAB_STATE_DIR", lab.path("state"));
    c.current_dir(lab.dir.path());
    c
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A run holding the slice at `value` for `cells` cells of `secs` seconds each.
fn slice_spec(lab: &Lab, name: &str, value: u32, cells: u32, secs: f64) -> String {
    let sleeps: Vec<String> = (0..cells).map(|i| format!("\"s{i}\"")).collect();
    let mut s = format!(
        "name = \"{name}\"\nrepetitions = 1\n[knobs]\n\"{SLICE}\" = {value}\n[matrix]\nworkload = [{}]\nprocesses = [1]\n",
        sleeps.join(", ")
    );
    for i in 0..cells {
        s.push_str(&format!(
            "[workloads.s{i}]\nkind = \"command\"\nargv = [\"sleep\", \"{secs}\"]\n"
        ));
    }
    lab.spec(&format!("{name}.toml"), &s).to_str().unwrap().to_string()
}

/// Every cell of the newest run of `db`: the slice in force as stored, and the run's value
/// from before it.
fn stored_slice(lab: &Lab, db: &str) -> (Vec<Option<String>>, Option<String>) {
    let store = schedlab_store::Store::open(&lab.path(db)).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    let cells = store.cells(run.id).unwrap();
    (
        cells.iter().map(|c| c.knobs.get(SLICE).cloned()).collect(),
        run.knobs_before.get(SLICE).cloned(),
    )
}

#[test]
fn a_knob_a_live_run_holds_is_refused_to_a_second_run_and_the_machine_keeps_its_value_from_before()
{
    require!(is_root(), "writing sysctls needs root");
    require!(std::path::Path::new(SLICE_FILE).exists(), "this kernel has no CFS bandwidth slice");
    let lab = Lab::new();
    let _saved = SavedSlice(slice());
    std::fs::write(SLICE_FILE, "5000").unwrap();
    let (a, b) = (slice_spec(&lab, "a", 4000, 2, 1.5), slice_spec(&lab, "b", 3000, 1, 0.2));

    // B starts while A holds the slice: refused before it changes anything, naming A.
    let mut run_a = at(&lab, "a.db", &["run", &a, "-q"]).spawn().unwrap();
    wait_for("A's slice", Duration::from_secs(60), || slice() == "4000");
    let out = at(&lab, "b.db", &["run", &b, "-q"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(SLICE) && said.contains(&format!("process {}", run_a.id())),
        "B names the knob and A: {said}"
    );
    assert_eq!(slice(), "4000", "A's value stays in force under A");
    assert!(wait_exit(&mut run_a, LONG).success());
    assert_eq!(slice(), "5000", "the value from before either");
    assert_eq!(stored_slice(&lab, "a.db"), (vec![Some("4000".into()); 2], Some("5000".into())));
    assert!(
        schedlab_store::Store::open(&lab.path("b.db")).unwrap().runs().unwrap().is_empty(),
        "B stored no run"
    );

    // A killed by SIGKILL mid-cell: B, started at once, finds the value from before A (A's
    // journal replayed under B's hold), and a `restore` while B runs leaves B's value alone.
    let mut run_a = at(&lab, "a.db", &["run", &a, "-q"]).spawn().unwrap();
    wait_for("A's slice", Duration::from_secs(60), || slice() == "4000");
    run_a.kill().unwrap();
    run_a.wait().unwrap();
    let mut run_b =
        at(&lab, "b.db", &["run", &slice_spec(&lab, "b2", 3000, 2, 1.0), "-q"]).spawn().unwrap();
    wait_for("B's slice", Duration::from_secs(60), || slice() == "3000");
    let out = at(&lab, "b.db", &["restore"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(slice(), "3000", "restore changes nothing under B's live cell");
    assert!(wait_exit(&mut run_b, LONG).success());
    assert_eq!(slice(), "5000", "B puts back the value from before A");
    assert_eq!(stored_slice(&lab, "b.db"), (vec![Some("3000".into()); 2], Some("5000".into())));
}

#[test]
fn two_runs_on_one_new_database_both_store_their_run() {
    let lab = Lab::new();
    let spec = lab.spec("tiny.toml", "name = \"tiny\"\nrepetitions = 1\n[matrix]\nworkload = [\"w\"]\nprocesses = [1]\n[workloads.w]\nkind = \"command\"\nargv = [\"true\"]\n");
    for attempt in 0..3 {
        let db = format!("new-{attempt}.db");
        let mut runs: Vec<Child> = (0..2)
            .map(|_| at(&lab, &db, &["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap())
            .collect();
        for r in &mut runs {
            assert!(
                wait_exit(r, LONG).success(),
                "attempt {attempt}: a run on the new database failed"
            );
        }
        let store = schedlab_store::Store::open(&lab.path(&db)).unwrap();
        let stored = store.runs().unwrap();
        assert_eq!(stored.len(), 2, "attempt {attempt}");
        assert!(
            stored
                .iter()
                .all(|r| r.status == schedlab_store::RunStatus::Complete && r.cells_done == 1),
            "{stored:?}"
        );
    }
}

#[test]
fn a_run_merged_while_it_runs_is_left_for_a_later_merge_which_brings_it_whole() {
    let lab = Lab::new();
    let spec = lab.spec(
        "slow.toml",
        "name = \"slow\"\nrepetitions = 1\n[matrix]\nworkload = [\"a\", \"b\", \"c\"]\nprocesses = [1]\n\
         [workloads.a]\nkind = \"command\"\nargv = [\"true\"]\n[workloads.b]\nkind = \"command\"\nargv = [\"sleep\", \"1.5\"]\n\
         [workloads.c]\nkind = \"command\"\nargv = [\"sleep\", \"1.5\"]\n",
    );
    let mut run = at(&lab, "src.db", &["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    let cells_done = || {
        schedlab_store::Store::open(&lab.path("src.db"))
            .ok()
            .and_then(|s| s.runs().ok())
            .and_then(|r| r.first().map(|r| r.cells_done))
            .unwrap_or(0)
    };
    wait_for("a first stored cell", Duration::from_secs(60), || cells_done() >= 1);
    let out = at(&lab, "src.db", &["merge", "-o", "m.db", "src.db"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("not merged") && text(&out).contains("still running"),
        "{}",
        text(&out)
    );
    assert!(
        schedlab_store::Store::open(&lab.path("m.db")).unwrap().runs().unwrap().is_empty(),
        "nothing of it merged yet"
    );
    assert!(wait_exit(&mut run, LONG).success());
    let out = at(&lab, "src.db", &["merge", "-o", "m.db", "src.db"]).output().unwrap();
    assert!(
        out.status.success() && text(&out).contains("1 runs merged (3 cell repetitions)"),
        "{}",
        text(&out)
    );
    let merged = schedlab_store::Store::open(&lab.path("m.db")).unwrap().runs().unwrap();
    assert_eq!((merged.len(), merged[0].status.as_str(), merged[0].cells_done), (1, "complete", 3));
}

#[test]
fn a_failed_merge_leaves_no_output_database_behind() {
    let lab = Lab::new();
    std::fs::write(
        lab.path("garbage.db"),
        "this is not a database, and it is long enough to have a header\n".repeat(20),
    )
    .unwrap();
    let out = at(&lab, "unused.db", &["merge", "-o", "m.db", "garbage.db"]).output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!lab.path("m.db").exists(), "no empty m.db left to pass for a merged one");
}

#[test]
fn a_stopped_engine_stores_its_cell_timed_out_saying_how_late_the_watchdog_was() {
    let lab = Lab::new();
    let spec = lab.spec(
        "stopped.toml",
        "name = \"stopped\"\ntimeout_s = 2\nrepetitions = 1\n[matrix]\nworkload = [\"w\"]\nprocesses = [2]\n\
         [workloads.w]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n",
    );
    let mut run = at(&lab, "r.db", &["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    let engine = run.id() as i32;
    // Released: the workers have exec'd their command.
    let released = || {
        std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            ppid == Some(engine) && stat.contains("(sleep)")
        })
    };
    wait_for("the release", Duration::from_secs(60), released);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(engine, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: as above.
    unsafe { libc::kill(engine, libc::SIGCONT) };
    let status = wait_exit(&mut run, LONG);
    assert_eq!(status.code(), Some(1), "a timed-out cell is a failed one");
    let store = schedlab_store::Store::open(&lab.path("r.db")).unwrap();
    let run = store.latest(None).unwrap().unwrap();
    let cells = store.cells(run.id).unwrap();
    assert_eq!(
        cells[0].status,
        schedlab_model::CellStatus::TimedOut,
        "never silently ok: {:?}",
        cells[0].message
    );
    let why = cells[0].message.clone().unwrap_or_default();
    assert!(why.contains("(2 s) fired") && why.contains("s late"), "{why}");
}

#[test]
fn restore_all_leaves_a_live_run_alone_unless_told_yes() {
    let lab = Lab::new();
    let spec = lab.spec(
        "live.toml",
        "name = \"live\"\nrepetitions = 2\n[matrix]\nworkload = [\"w\"]\nprocesses = [1]\n[workloads.w]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n",
    );
    let mut run = at(&lab, "r.db", &["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    let journal = || std::fs::read_dir(lab.path("state")).map(|d| d.count() > 0).unwrap_or(false);
    wait_for("the run's journal", Duration::from_secs(60), journal);
    let out = at(&lab, "r.db", &["restore", "--all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("process {}", run.id())) && text(&out).contains("--yes"),
        "{}",
        text(&out)
    );
    assert!(wait_exit(&mut run, LONG).success(), "the live run was left alone and ended well");
    let store = schedlab_store::Store::open(&lab.path("r.db")).unwrap();
    let r = store.latest(None).unwrap().unwrap();
    assert_eq!((r.status.as_str(), r.cells_done), ("complete", 2));
}
