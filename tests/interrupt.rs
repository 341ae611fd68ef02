//! SIGINT/SIGTERM: workers killed at once, finished cells kept, --resume finishes the run.

use crate::util::Lab;
use std::time::{Duration, Instant};

fn count_processes_with_arg(arg: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        .count()
}

fn interrupt_then_resume(signal: i32, marker: &str) {
    let lab = Lab::new();
    let spec = lab.spec(
        "int.toml",
        &format!(
            "name = \"int\"\nrepetitions = 1\n[matrix]\nworkload = [\"short\", \"long\"]\nprocesses = [2]\n\
             [workloads.short]\nkind = \"command\"\nargv = [\"sleep\", \"0.1\"]\n\
             [workloads.long]\nkind = \"command\"\nargv = [\"sleep\", \"{marker}\"]\n"
        ),
    );
    // Options on the command line: resuming must take them from the stored run.
    let mut child = lab
        .cmd(&["run", spec.to_str().unwrap(), "-q", "--repetitions", "3"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the long cell's workers are running.
    let t0 = Instant::now();
    while count_processes_with_arg(marker) < 2 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the long cell never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(sent.elapsed() < Duration::from_secs(20), "schedlab did not stop");
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    assert_eq!(
        status.code(),
        Some(128 + signal),
        "stopped by signal {signal}: exit 128 + {signal}"
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    // The long cell's workers sleep 8 s: an engine that waited for them instead of killing
    // them would take that long (the bound leaves room for a host that stalls the VM).
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert_eq!(count_processes_with_arg(marker), 0, "workers left running");
    let runs = lab.ok(&["runs"]);
    assert!(runs.contains("interrupted"), "{runs}");
    assert_eq!(lab.samples().len(), 3 * 2, "the three finished short cells are kept");
    // Resume runs only what is missing, with the command the interruption printed, pasted
    // as it is (no --repetitions: it comes from the stored run).
    let hint = stderr.split('`').nth(1).unwrap_or_else(|| panic!("no command in: {stderr}"));
    assert!(!hint.contains("--repetitions"), "{hint}");
    let out = lab.paste(hint, &["-q"]);
    assert!(out.status.success(), "{hint}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 of 6 cell repetitions already stored"));
    // Its summary counts what this resume ran, beside the run's whole count.
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("ran 3 measured cell repetitions (6 in the run, 3 from before)"),
        "{summary}"
    );
    assert_eq!(lab.samples().len(), 6 * 2);
    assert!(lab.ok(&["runs"]).contains("complete"));
    // A finished run is not resumable.
    assert_eq!(lab.run(&["run", spec.to_str().unwrap(), "--resume", "-q"]).status.code(), Some(2));
}

#[test]
fn sigint_stops_at_once_keeps_finished_cells_and_resume_completes() {
    interrupt_then_resume(libc::SIGINT, "8.2345");
}

#[test]
fn sigterm_exits_143_and_keeps_every_finished_cell() {
    interrupt_then_resume(libc::SIGTERM, "8.2346");
}

/// kill -9 of the engine: its workers die with it (PR_SET_PDEATHSIG), none keeps running.
#[test]
fn workers_do_not_outlive_a_killed_engine() {
    let lab = Lab::new();
    // The workers sleep 30 s: ones that outlived the engine would still be there after 10.
    let marker = "30.2347";
    let spec = lab.spec(
        "k.toml",
        &format!("name = \"k\"\n[matrix]\nworkload = [\"w\"]\nprocesses = [3]\n[workloads.w]\nkind = \"command\"\nargv = [\"sleep\", \"{marker}\"]\n"),
    );
    let mut child = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    let t0 = Instant::now();
    while count_processes_with_arg(marker) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(30), "workers never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let t1 = Instant::now();
    while count_processes_with_arg(marker) > 0 {
        assert!(t1.elapsed() < Duration::from_secs(10), "workers outlived the engine");
        std::thread::sleep(Duration::from_millis(10));
    }
}
