//! Campaigns across machines: shards, merge, campaign views, and a real one-node Slurm.

use crate::util::{is_root, measuring, Lab};
use std::collections::BTreeSet;
use std::process::Output;

/// `schedlab --db DB args...` in the lab (its own `cmd` names the lab's one database).
fn at(lab: &Lab, db: &str, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .arg("--db")
        .arg(lab.path(db))
        .args(args)
        .env("TMPDIR", lab.dir.path())
        .env("SCHEDLAB_STATE_DIR", lab.path("state"))
        .current_dir(lab.dir.path())
        .output()
        .unwrap()
}

fn ok_at(lab: &Lab, db: &str, args: &[&str]) -> String {
    let out = at(lab, db, args);
    assert!(
        out.status.success(),
        "schedlab --db {db} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// (cell key, repetition) of every measured row a `export --format json` of `what` gives.
fn steps(lab: &Lab, db: &str, what: &str) -> BTreeSet<(String, u64)> {
    let text = ok_at(lab, db, &["export", "--format", "json", what]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    rows.iter()
        .map(|r| (r["cell_key"].as_str().unwrap().to_string(), r["rep"].as_u64().unwrap()))
        .collect()
}

fn runs(lab: &Lab, db: &str) -> i64 {
    let c = rusqlite::Connection::open(lab.path(db)).unwrap();
    c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).unwrap()
}

fn shards(lab: &Lab) {
    ok_at(lab, "a.db", &["run", "--scale", "0.01", "--shard", "0/2", "-q"]);
    ok_at(lab, "b.db", &["run", "--scale", "0.01", "--shard", "1/2", "-q"]);
}

fn campaign_of(lab: &Lab, db: &str) -> String {
    let c = rusqlite::Connection::open(lab.path(db)).unwrap();
    c.query_row("SELECT campaign FROM runs", [], |r| r.get(0)).unwrap()
}

#[test]
fn two_shards_merged_hold_the_cells_and_repetitions_of_an_unsharded_run() {
    require!(is_root(), "the quick experiment's fifo and rr cells need root");
    let _m = measuring();
    let lab = Lab::new();
    shards(&lab);
    ok_at(&lab, "u.db", &["run", "--scale", "0.01", "-q"]);
    let c = campaign_of(&lab, "a.db");
    assert_eq!(c, campaign_of(&lab, "b.db"), "shards started apart agree on their campaign");
    let (a, b) = (steps(&lab, "a.db", "1"), steps(&lab, "b.db", "1"));
    assert!(
        !a.is_empty() && !b.is_empty() && a.is_disjoint(&b),
        "each shard runs a part: {} and {} steps",
        a.len(),
        b.len()
    );
    let out = lab.ok(&["merge", "-o", "all.db", "a.db", "b.db"]);
    assert!(out.contains(&format!("campaign {c}: all 2 shards present")), "{out}");
    let merged = steps(&lab, "all.db", &format!("campaign:{c}"));
    let whole = steps(&lab, "u.db", "1");
    assert_eq!(whole.len(), 36, "18 cells x 2 repetitions");
    assert_eq!(
        merged, whole,
        "the merged campaign has exactly the unsharded run's cells and repetitions"
    );
    let count =
        |db: &str| ok_at(&lab, db, &["export", "--format", "json", &c]).matches("\"pid\"").count();
    let before = (runs(&lab, "all.db"), count("all.db"));
    let again = lab.ok(&["merge", "-o", "all.db", "a.db", "b.db"]);
    assert!(again.contains("0 runs merged") && again.contains("2 already present"), "{again}");
    assert_eq!((runs(&lab, "all.db"), count("all.db")), before, "merging again changes nothing");
}

#[test]
fn a_campaign_from_two_machines_names_each_cells_machine_and_compare_warns() {
    require!(is_root(), "the quick experiment's fifo and rr cells need root");
    let _m = measuring();
    let lab = Lab::new();
    shards(&lab);
    // The second shard "ran" on another machine: another host with another CPU.
    let b = rusqlite::Connection::open(lab.path("b.db")).unwrap();
    b.execute(
        "UPDATE runs SET env_json = json_set(env_json, '$.machine.hostname', 'node2', '$.machine.machine_id_sha256', 'feedbeef00',
           '$.cpu_model', 'Other CPU 9000', '$.machine.microcode', '0xbad')",
        [],
    )
    .unwrap();
    drop(b);
    lab.ok(&["merge", "-o", "all.db", "a.db", "b.db"]);
    let c = campaign_of(&lab, "a.db");
    let show = ok_at(&lab, "all.db", &["show", &c]);
    assert!(show.contains("on node2#feedbeef"), "{show}");
    assert!(
        show.contains("machines ") && show.contains("CPU: ") && show.contains("Other CPU 9000"),
        "{show}"
    );
    // A campaign's cells filtered by key keep the machines that measured them.
    let io = ok_at(&lab, "all.db", &["show", &c, "--cell", "io/*"]);
    assert!(io.contains("│ io/other/n2 ") && !io.contains("│ cpu/other/n2 "), "{io}");
    let text = ok_at(&lab, "all.db", &["export", "--format", "json", &c]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let on_b: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["machine"] == "node2#feedbeef")
        .map(|r| r["cell_key"].as_str().unwrap())
        .collect();
    let on_a: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["machine"] != "node2#feedbeef")
        .map(|r| r["cell_key"].as_str().unwrap())
        .collect();
    assert!(!on_b.is_empty() && !on_a.is_empty(), "each row names the machine that measured it");
    assert!(rows.iter().all(|r| r["campaign"] == c.as_str()));
    // Shard 1 against shard 0: measured on machines whose facts differ.
    let out = at(&lab, "all.db", &["compare", "1", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(" vs Other CPU 9000"), "the CPUs are named: {err}");
    assert!(err.contains("warning: the machines differ") && err.contains("microcode: "), "{err}");
    // A campaign against one of its own shards: the campaign pools two unlike machines.
    let out = at(&lab, "all.db", &["compare", &format!("campaign:{c}"), "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the machines differ"), "{err}");
}

#[test]
fn the_quick_experiment_as_a_two_task_slurm_array_merges_into_one_campaign() {
    if let Some(why) = crate::slurm_util::missing() {
        require!(false, why);
    }
    let _m = measuring();
    let lab = Lab::new();
    let sdir = lab.path("slurm");
    let slurm = crate::slurm_util::Slurm::start(&sdir);
    let shared = lab.path("shared");
    let out = lab
        .cmd(&[
            "slurm",
            "--shards",
            "2",
            "--scale",
            "0.01",
            "--shared",
            shared.to_str().unwrap(),
            "--submit",
        ])
        .env("SLURM_CONF", &slurm.conf)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // "campaign ID: job array A (2 shards), merge job M (...)"
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |w: &str| {
        words
            .iter()
            .position(|x| *x == w)
            .map(|i| words[i + 1].trim_end_matches(['(', ',']).to_string())
            .unwrap()
    };
    let (array, merge) =
        (after("array"), words[words.iter().position(|x| *x == "merge").unwrap() + 2].to_string());
    let campaign = words[1].trim_end_matches(':').to_string();
    assert!(
        slurm.wait(&[array, merge], std::time::Duration::from_secs(300)),
        "the jobs did not finish: {}",
        slurm.logs(&sdir)
    );
    let merged = shared.join("campaign.db");
    assert!(
        merged.exists(),
        "no merged database; merge.log: {}",
        std::fs::read_to_string(shared.join("merge.log")).unwrap_or_default()
    );
    let cells = steps(&lab, "shared/campaign.db", &campaign);
    assert_eq!(cells.len(), 36, "18 cells x 2 repetitions, from two shards");
    let status = lab.cmd(&["slurm", "--status", shared.to_str().unwrap()]).output().unwrap();
    let s = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success() && s.contains("every shard finished"), "{s}");
    // A shard that never ran is listed with the command that reruns only it.
    std::fs::rename(shared.join("shard-1.db"), lab.path("away.db")).unwrap();
    let status = lab.cmd(&["slurm", "--status", shared.to_str().unwrap()]).output().unwrap();
    let s = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{s}");
    assert!(
        s.contains("shard 1/2: not started") && s.contains("sbatch --parsable --array=1 "),
        "{s}"
    );
}

#[test]
fn a_shard_resumes_its_own_run_and_runs_only_its_missing_steps() {
    require!(is_root(), "the quick experiment's fifo and rr cells need root");
    let _m = measuring();
    let lab = Lab::new();
    shards(&lab);
    let all = steps(&lab, "a.db", "1");
    // As a kill would leave it: half its steps stored, the run not finished.
    let c = rusqlite::Connection::open(lab.path("a.db")).unwrap();
    c.execute("UPDATE runs SET status = 'interrupted'", []).unwrap();
    c.execute("DELETE FROM cells WHERE id % 2 = 0", []).unwrap();
    drop(c);
    assert!(steps(&lab, "a.db", "1").len() < all.len());
    // Shard 1's database holds no unfinished run of shard 0.
    let out = at(&lab, "b.db", &["run", "--scale", "0.01", "--shard", "0/2", "--resume", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    ok_at(&lab, "a.db", &["run", "--shard", "0/2", "--resume", "-q"]);
    assert_eq!(runs(&lab, "a.db"), 1, "the shard's own run was resumed");
    assert_eq!(steps(&lab, "a.db", "1"), all, "exactly the shard's steps, none twice");
}

/// `slurm` takes `run`'s flags from the one struct `run` declares them in: each shard's
/// command line carries every one of them, and `run` parses that line.
#[test]
fn slurm_passes_every_run_flag_on_in_a_line_run_parses() {
    let lab = Lab::new();
    let shared = lab.path("shared");
    let flags = [
        "--scale",
        "0.5",
        "--repetitions",
        "auto",
        "--timeout",
        "9",
        "--trace",
        "--trace-buffer-kb",
        "128",
        "--allow-unthrottled",
        "--no-engine-rt",
        "--dir",
        "/tmp/exp",
    ];
    let mut args =
        vec!["slurm", "--shards", "2", "--campaign", "c1", "--shared", shared.to_str().unwrap()];
    args.extend(flags);
    let script = lab.ok(&args);
    let line = script
        .lines()
        .find(|l| l.starts_with("exec ") && l.contains(" run "))
        .unwrap_or_else(|| panic!("{script}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    for w in flags.iter().chain(&["--campaign", "c1"]) {
        assert!(words.contains(w), "{w} is not passed on: {line}");
    }
    // The words after `run`, with the array's own shard index and options filled in.
    let after: Vec<String> = words
        .iter()
        .skip_while(|w| **w != "run")
        .skip(1)
        .filter(|w| !w.starts_with("\"${resume"))
        .map(|w| w.replace("\"$SLURM_ARRAY_TASK_ID/2\"", "0/2"))
        .collect();
    let mut run: Vec<&str> = vec!["run"];
    run.extend(after.iter().map(String::as_str));
    run.push("--help");
    lab.ok(&run);
}
