//! A run made while other work loads the machine says so, naming its evidence (other
//! processes' share of the CPUs, CPU pressure, load average, steal, outliers) in `run`'s
//! end, `show` and the report; a run whose evidence is quiet says nothing (issue #33 item 3).

use crate::report::store_run;
use crate::util::{measuring, Lab};
use schedlab_model::{CellParams, CellRecord, MachineLoad, Sample, StatDelta};
use std::process::{Child, Command};

const WARNING: &str = "results may be inaccurate: ";

/// Busy loops, one per online CPU, killed and reaped on drop.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start() -> Hogs {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin = || Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        Hogs((0..cpus).map(|_| spin()).collect())
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The line of `out` that carries the noise warning.
fn warning_line(out: &str) -> Option<&str> {
    out.lines().find(|l| l.contains(WARNING))
}

#[test]
fn a_run_beside_a_busy_loop_on_every_cpu_ends_with_a_warning_naming_the_evidence() {
    let _turn = measuring();
    let lab = Lab::new();
    let spec = lab.spec(
        "busy.toml",
        "name = \"busy\"\nrepetitions = 2\nwarmup = 0\n[matrix]\nworkload = [\"cpu\"]\nprocesses = [1]\n[workloads.cpu]\nkind = \"pi\"\niterations = 300_000_000\n",
    );
    let hogs = Hogs::start();
    let out = lab.ok(&["run", "-q", spec.to_str().unwrap()]);
    drop(hogs);
    // The one-line summary names the evidence; show gives the warning a line of its own.
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("; results may be inaccurate: other processes used up to "), "{out}");
    assert!(
        out.trim_end().ends_with(" (rerun on a quiet machine); tables: schedlab show 1"),
        "{out}"
    );
    let show = lab.ok(&["show"]);
    let line = warning_line(&show).unwrap_or_else(|| panic!("{show}"));
    let evidence = line
        .strip_prefix(&format!("warning: {WARNING}"))
        .and_then(|l| l.strip_suffix(". Rerun on a quiet machine."))
        .unwrap_or_else(|| panic!("{line}"));
    for said in evidence.split("; ") {
        assert!(out.contains(said), "{said:?} in {out}");
    }
    let dir = lab.path("report");
    lab.ok(&["report", "-o", dir.to_str().unwrap()]);
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains(WARNING) && html.contains("Warnings (1)"), "the report lists it");
}

/// Three repetitions of each of two one-process cells on 2 CPUs over 2 s (400 ticks):
/// `busy` ticks of which the worker used one CPU-second, ending at `load`.
fn records(busy: u64, steal: u64, load: MachineLoad) -> Vec<CellRecord> {
    let mut out = Vec::new();
    for cell in 0..2u32 {
        for rep in 0..3u32 {
            let params = CellParams {
                cell_id: cell,
                key: format!("cpu/other/n1/{cell}"),
                workload: "cpu".into(),
                workload_kind: "pi".into(),
                policy: "other".into(),
                class: "other".into(),
                processes: 1,
                ..Default::default()
            };
            let sample = Sample {
                wall_s: 1.0 + rep as f64 * 0.01,
                user_s: 1.0,
                window_cpu_s: 1.0,
                ..Default::default()
            };
            out.push(CellRecord {
                params,
                rep,
                ordinal: cell * 3 + rep,
                makespan_s: 2.0,
                stat: StatDelta {
                    user: busy,
                    idle: 400 - busy - steal,
                    steal,
                    ..Default::default()
                },
                load: Some(load),
                samples: vec![sample],
                ..Default::default()
            });
        }
    }
    out
}

#[test]
fn a_run_with_quiet_evidence_shows_no_warning_and_one_with_noisy_evidence_does() {
    let lab = Lab::new();
    let quiet = MachineLoad { load1: 1.2, cpu_pressure_us: Some(20_000) };
    let id = store_run(&lab.db(), "quiet", &records(104, 0, quiet)).to_string();
    let show = lab.ok(&["show", &id]);
    assert_eq!(warning_line(&show), None, "{show}");
    let dir = lab.path("quiet-report");
    lab.ok(&["report", &id, "-o", dir.to_str().unwrap()]);
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(!html.contains(WARNING) && html.contains("Warnings (1)"), "only the fixture's own");

    let noisy = MachineLoad { load1: 6.5, cpu_pressure_us: Some(1_200_000) };
    let id = store_run(&lab.db(), "noisy", &records(300, 40, noisy)).to_string();
    let show = lab.ok(&["show", &id]);
    let line = warning_line(&show).unwrap_or_else(|| panic!("{show}"));
    for says in [
        "other processes used up to 50% of the CPUs during 2 of 2 cells",
        "the hypervisor stole up to 10% of the CPUs' time during 2 of 2 cells",
        "runnable tasks waited for a CPU up to 60% of the time (CPU pressure) during 2 of 2 cells",
        "the load average reached 6.5 on 2 CPUs during 2 of 2 cells",
    ] {
        assert!(line.contains(says), "{says:?} in {line}");
    }
}
