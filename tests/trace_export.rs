//! `schedlab trace export`: a traced cell, and the same cell simulated, as Perfetto traces
//! that Perfetto's own protobuf definitions decode (tests/perfetto_check.py), holding every
//! sched_switch schedlab's decoder found and trace-cmd reads from the same pages.

use crate::util::{is_root, measuring, Lab};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python with the `perfetto` and `protobuf` packages: $SCHEDLAB_TEST_PYTHON, the venv
/// .ci/run makes, or python3.
pub(crate) fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SCHEDLAB_TEST_PYTHON") {
        return p.into();
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/perfetto-venv/bin/python3");
    if venv.exists() {
        return venv;
    }
    "python3".into()
}

/// What Perfetto's protos read in `file`, or why they could not (the packages are missing).
fn perfetto_read(file: &Path) -> Result<Value, Box<dyn std::error::Error>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
    let out = Command::new(python())
        .arg(script)
        .arg(file)
        .output()
        .map_err(|e| format!("no python ({e})"))?;
    if out.status.code() == Some(3) {
        return Err(format!(
            "{} (pip install perfetto protobuf)",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    assert!(
        out.status.success(),
        "perfetto_check.py {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout).expect("the script prints JSON"))
}

/// `cpuN=M` and `name=M` pairs of the export's summary line.
fn summary(line: &str) -> BTreeMap<String, u64> {
    line.split([' ', ';', '(', ')'])
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

/// sched_switch per CPU as `trace-cmd report` reads a trace.dat (None without trace-cmd).
fn trace_cmd_switches(dat: &Path) -> Option<BTreeMap<String, u64>> {
    let out = Command::new("trace-cmd").arg("report").arg(dat).output().ok()?;
    assert!(out.status.success(), "trace-cmd report: {}", String::from_utf8_lossy(&out.stderr));
    let mut per = BTreeMap::new();
    for line in
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(" sched_switch: "))
    {
        let cpu: u64 = line
            .split('[')
            .nth(1)
            .and_then(|r| r.split(']').next())
            .and_then(|c| c.trim().parse().ok())
            .expect("a CPU");
        *per.entry(format!("cpu{cpu}")).or_default() += 1;
    }
    Some(per)
}

/// The file's sched_switch per CPU, keyed as the summary line keys them.
fn switches(t: &Value) -> BTreeMap<String, u64> {
    t["switches"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(c, n)| (format!("cpu{c}"), n.as_u64().unwrap()))
        .collect()
}

fn marks<'a>(t: &'a Value, name: &str) -> Vec<&'a Value> {
    t["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["name"].as_str().is_some_and(|n| n == name || n.starts_with(&format!("{name} #")))
        })
        .collect()
}

/// The track of process `pid`.
fn track_of(t: &Value, pid: i64) -> String {
    t["tracks"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, d)| d["pid"].as_i64() == Some(pid))
        .map(|(u, _)| u.clone())
        .expect("a track")
}

/// A CPU-bound cell and a periodic set (separate runs: a set is scheduled by `scheduler`),
/// so switches, workers' ends and job marks are all there.
const PI: &str = "name = \"pi\"\n[matrix]\nworkload = [\"pi\"]\npolicy = [\"POLICY\"]\nprocesses = [3]\n[workloads.pi]\nkind = \"pi\"\niterations = 3000000\n";
const SET: &str = "name = \"set\"\n[matrix]\nworkload = [\"set\"]\nscheduler = [\"fifo-rm\"]\n[workloads.set]\nkind = \"periodic\"\nduration_s = 0.4\ntasks = [{ c_ms = 2, t_ms = 20 }, { c_ms = 3, t_ms = 40 }]\n";

/// The newest run's id, its one cell's key, its samples and its per-job records.
fn newest(lab: &Lab) -> (String, String, Vec<Value>, Vec<Value>) {
    let rows = lab.samples();
    let key = rows[0]["cell_key"].as_str().unwrap().to_string();
    let run = rows[0]["run_id"].to_string();
    let jobs = match lab.run(&["export", &run, "--jobs", "--format", "json"]) {
        o if o.status.success() => serde_json::from_slice(&o.stdout).unwrap(),
        _ => Vec::new(),
    };
    (run, key, rows, jobs)
}

#[test]
fn a_traced_cell_exports_every_captured_sched_switch_with_names_and_marks() {
    require!(is_root(), "tracing needs root");
    require!(crate::util::tracing_possible(), "this kernel has no tracefs");
    let probe = Lab::new();
    let empty = probe.path("empty");
    std::fs::write(&empty, b"").unwrap();
    if let Err(why) = perfetto_read(&empty) {
        require!(false, why);
    }
    let _m = measuring();
    let lab = Lab::new();
    for (name, text) in [("pi.toml", PI.replace("POLICY", "fifo")), ("set.toml", SET.to_string())] {
        let spec = lab.spec(name, &text);
        lab.ok(&["run", spec.to_str().unwrap(), "--trace=timeline", "-q"]);
        let (run, key, rows, jobs) = newest(&lab);
        let file = lab.path(&format!("{name}.pftrace"));
        let line = lab.ok(&["trace", "export", &run, "--cell", &key, "-o", file.to_str().unwrap()]);
        let t = perfetto_read(&file).unwrap();
        let said = summary(&line);
        let per_cpu = switches(&t);
        assert!(per_cpu.values().sum::<u64>() > 0, "{line}");
        for (cpu, n) in &per_cpu {
            assert_eq!(
                said.get(cpu),
                Some(n),
                "{key} {cpu}: the file against schedlab's decode of the kept capture: {line}"
            );
        }
        assert_eq!(per_cpu.len(), said.keys().filter(|k| k.starts_with("cpu")).count(), "{line}");
        // The same pages as trace-cmd reads them.
        let dat = lab.path(&format!("{name}.dat"));
        lab.ok(&["trace", "export", &run, "--cell", &key, "-o", dat.to_str().unwrap()]);
        match trace_cmd_switches(&dat) {
            Some(tc) => assert_eq!(tc, per_cpu, "{key}: trace-cmd's sched_switch per CPU"),
            None => {
                eprintln!("note: trace-cmd is not installed; the trace.dat cross-check was skipped")
            }
        }
        assert_eq!(t["bundles_with_clock"], 0, "bundles in boot time, Perfetto's default");
        assert_eq!(t["lost_bundles"], 0);
        // Names: every worker by its group and place, and the engine.
        let procs = t["processes"].as_object().unwrap();
        for (i, r) in rows.iter().enumerate() {
            let pid = r["pid"].as_i64().unwrap();
            assert_eq!(procs[&pid.to_string()], format!("schedlab worker main#{i}"), "{key}");
            assert!(
                !t["switch_ins"][pid.to_string()].as_array().unwrap().is_empty(),
                "worker {pid} ran in the trace"
            );
        }
        assert!(procs.values().any(|n| n == "schedlab engine"), "{procs:?}");
        // Marks: one release, one end per worker, all inside the captured events' time span.
        assert_eq!(marks(&t, "release").iter().filter(|m| m["track"] == "1").count(), 1);
        assert_eq!(marks(&t, "end").len(), rows.len());
        let (lo, hi) =
            (t["ftrace_range"][0].as_u64().unwrap(), t["ftrace_range"][1].as_u64().unwrap());
        for m in marks(&t, "release").iter().chain(&marks(&t, "end")) {
            let ts = m["ts"].as_u64().unwrap();
            assert!(
                lo <= ts && ts <= hi,
                "{key}: mark {m} outside the capture [{lo}, {hi}]: clocks disagree"
            );
        }
        for r in &rows {
            let pid = r["pid"].as_i64().unwrap();
            let track = track_of(&t, pid);
            let end = t["marks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["track"] == track.as_str() && m["name"] == "end")
                .unwrap();
            // The worker ran at its own end and left its CPU for good after it (preempted
            // at its end, it may come back to write its report and exit).
            let last_out = t["switch_outs"][pid.to_string()]
                .as_array()
                .unwrap()
                .last()
                .map(|v| v.as_u64().unwrap());
            assert!(
                last_out.is_some_and(|o| o >= end["ts"].as_u64().unwrap()),
                "worker {pid} left its CPU for good before its own end: {end}, last switch-out {last_out:?}"
            );
            // Periodic tasks: a release and a deadline mark per job, and after a release the
            // task is switched in (it slept until it): the marks sit on the kernel's clock.
            let its_jobs: Vec<&Value> = jobs.iter().filter(|j| j["index"] == r["index"]).collect();
            let rel: Vec<u64> = t["marks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| {
                    m["track"] == track.as_str()
                        && m["name"].as_str().unwrap().starts_with("release #")
                })
                .map(|m| m["ts"].as_u64().unwrap())
                .collect();
            let deadlines =
                marks(&t, "deadline").iter().filter(|m| m["track"] == track.as_str()).count();
            assert_eq!(
                (rel.len(), deadlines),
                (its_jobs.len(), its_jobs.len()),
                "{key} worker {pid}"
            );
            if !rel.is_empty() {
                // The task's first sign after a release: its waking or its switch-in (a guest
                // may drop switches away from the idle task, never both).
                let mut signs: Vec<u64> = ["switch_ins", "wakings"]
                    .iter()
                    .flat_map(|k| {
                        t[*k][pid.to_string()]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_u64().unwrap())
                    })
                    .collect();
                signs.sort_unstable();
                let mut delays: Vec<u64> = rel
                    .iter()
                    .filter_map(|r| signs.iter().find(|i| *i >= r).map(|i| i - r))
                    .collect();
                delays.sort_unstable();
                assert!(!delays.is_empty(), "{key} worker {pid}: no waking or switch-in after any release mark {rel:?}: {signs:?}");
                let median = delays[delays.len() / 2];
                assert!(median < 10_000_000, "{key} worker {pid}: woken or switched in {median} ns after the median release mark");
            }
        }
    }
}

#[test]
fn a_simulated_cell_exports_alike() {
    let lab = Lab::new();
    let spec = lab.spec("pi.toml", &PI.replace("POLICY", "rr"));
    lab.ok(&["simulate", spec.to_str().unwrap(), "--cpus", "2", "--ns-per-iteration", "10", "-q"]);
    let file = lab.path("pi.pftrace");
    let line = lab.ok(&["trace", "export", "--cell", "pi/rr/n3", "-o", file.to_str().unwrap()]);
    let t = match perfetto_read(&file) {
        Ok(t) => t,
        Err(why) => {
            require!(false, why);
            unreachable!()
        }
    };
    let per_cpu = switches(&t);
    assert_eq!(per_cpu.len(), 2, "both simulated CPUs ran: {line}");
    let said = summary(&line);
    for (cpu, n) in &per_cpu {
        assert_eq!(said.get(cpu), Some(n), "{line}");
    }
    let procs = t["processes"].as_object().unwrap();
    assert_eq!(procs.len(), 3);
    for i in 0..3 {
        let pid = (1000 + i).to_string();
        assert_eq!(procs[&pid], format!("schedlab worker main#{i}"));
        assert!(!t["switch_ins"][&pid].as_array().unwrap().is_empty());
    }
    assert_eq!(t["events"]["sched_process_exit"], 3);
    assert_eq!(marks(&t, "end").len(), 3);
    let (lo, hi) = (t["ftrace_range"][0].as_u64().unwrap(), t["ftrace_range"][1].as_u64().unwrap());
    assert!(
        marks(&t, "end").iter().all(|m| (lo..=hi).contains(&m["ts"].as_u64().unwrap())),
        "marks on the events' axis"
    );
    // A periodic set: a release and a deadline mark per simulated job.
    let spec = lab.spec("set.toml", SET);
    lab.ok(&["simulate", spec.to_str().unwrap(), "--cpus", "2", "-q"]);
    let (run, key, _, jobs) = newest(&lab);
    let file = lab.path("set.pftrace");
    lab.ok(&["trace", "export", &run, "--cell", &key, "-o", file.to_str().unwrap()]);
    let t = perfetto_read(&file).unwrap();
    assert!(jobs.len() >= 30, "20 + 10 jobs in 0.4 s: {}", jobs.len());
    assert_eq!(
        (marks(&t, "release").len() - 1, marks(&t, "deadline").len()),
        (jobs.len(), jobs.len()),
        "one cell release besides"
    );
    let out = lab.run(&[
        "trace",
        "export",
        &run,
        "--cell",
        &key,
        "-o",
        lab.path("x.dat").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is simulated: it has no kernel pages"),
        "{out:?}"
    );
}

#[test]
fn export_refuses_by_name_what_it_cannot_write() {
    let lab = Lab::new();
    let spec = lab.spec("q.toml", "name = \"q\"\n[matrix]\nworkload = [\"pi\"]\n[workloads.pi]\nkind = \"pi\"\niterations = 1000\n");
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let out = lab.path("out.pftrace");
    let o = out.to_str().unwrap();
    let refused = |args: &[&str], says: &str| {
        let r = lab.run(args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {r:?}");
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!out.exists() || says.contains("already exists"), "nothing written on refusal");
    };
    refused(&["trace", "export", "9", "--cell", "pi/other/n1", "-o", o], "there is no run 9");
    refused(
        &["trace", "export", "--cell", "nope", "-o", o],
        "has no cell \"nope\"; its cells: pi/",
    );
    let key = lab.samples()[0]["cell_key"].as_str().unwrap().to_string();
    let key = key.as_str();
    refused(
        &["trace", "export", "--cell", key, "--rep", "4", "-o", o],
        "has no repetition 4 of cell",
    );
    refused(&["trace", "export", "--cell", key, "-o", o], "was not traced; run it with --trace");
    // An existing output: refused without --force. A simulated cell makes a file to replace.
    std::fs::write(&out, b"keep me").unwrap();
    lab.ok(&["simulate", spec.to_str().unwrap(), "--cpus", "1", "--ns-per-iteration", "10", "-q"]);
    refused(
        &["trace", "export", "--cell", key, "-o", o],
        "already exists; choose a new file, or pass --force",
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    lab.ok(&["trace", "export", "--cell", key, "-o", o, "--force"]);
    assert_ne!(std::fs::read(&out).unwrap(), b"keep me", "replaced with --force");
}

/// A traced run whose database is locked after its first cell: the refused cells' captures
/// go to the spool's side files, `--resume` imports them with their cells, and every cell
/// exports; nothing is left beside the database.
#[test]
fn kept_captures_survive_the_spool_and_resume() {
    require!(is_root(), "tracing needs root");
    require!(crate::util::tracing_possible(), "this kernel has no tracefs");
    let lab = Lab::new();
    let spec = lab.spec(
        "three.toml",
        "name = \"three\"\ntrace = \"timeline\"\n[matrix]\nworkload = [\"a\", \"b\", \"c\"]\n[workloads.a]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n\
         [workloads.b]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n[workloads.c]\nkind = \"command\"\nargv = [\"sleep\", \"1\"]\n",
    );
    let stored = |table: &str| crate::util::rows_in(&lab.db(), table);
    let child = lab
        .cmd(&["run", spec.to_str().unwrap(), "-q"])
        .env("SCHEDLAB_BUSY_TIMEOUT_MS", "100")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_first_cell(&lab.db());
    let db = rusqlite::Connection::open(lab.db()).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = child.wait_with_output().unwrap();
    db.execute_batch("COMMIT").unwrap();
    drop(db);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let beside = || -> Vec<String> {
        std::fs::read_dir(lab.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".spool-run"))
            .collect()
    };
    let spooled = stored("cells");
    assert!(
        spooled < 3
            && beside().iter().filter(|n| n.contains(".trace-")).count() as i64 == 3 - spooled,
        "{:?}",
        beside()
    );
    lab.ok(&["run", spec.to_str().unwrap(), "--resume", "-q"]);
    assert_eq!((stored("cells"), stored("traces")), (3, 3), "every cell with its capture");
    assert!(beside().is_empty(), "spool and capture files removed: {:?}", beside());
    for w in ["a", "b", "c"] {
        let key = format!("{w}/other/n1");
        let line = lab.ok(&[
            "trace",
            "export",
            "--cell",
            &key,
            "-o",
            lab.path(&format!("{w}.pftrace")).to_str().unwrap(),
        ]);
        assert!(summary(&line).keys().any(|k| k.starts_with("cpu")), "{key}: {line}");
    }
}
