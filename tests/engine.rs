//! The engine on this machine: what it stores, and what the kernel does to the workers.

use crate::util::{is_root, mean_of, measuring, Lab};
use serde_json::Value;
use std::os::unix::process::CommandExt;

const REQUIRED: &[&str] = &[
    "run_id",
    "cell_id",
    "rep",
    "workload",
    "policy",
    "priority",
    "nice",
    "processes",
    "pid",
    "exit_code",
    "signal",
    "timed_out",
    "wall_s",
    "user_s",
    "sys_s",
    "cpu_pct",
    "voluntary_csw",
    "involuntary_csw",
    "max_rss_kb",
    "minor_faults",
    "major_faults",
    "work_units",
    "start_offset_s",
    "cell_user_jiffies",
    "cell_system_jiffies",
    "cell_idle_jiffies",
    "cell_iowait_jiffies",
    "cell_ctxt",
    "cell_interrupts",
];

#[test]
fn every_process_is_stored_with_the_documented_fields() {
    let lab = Lab::new();
    let spec = lab.spec(
        "s.toml",
        "name = \"s\"\nrepetitions = 2\nwarmup = 1\n[matrix]\nworkload = [\"cpu\", \"copy\"]\nprocesses = [3]\n[workloads.cpu]\nkind = \"pi\"\niterations = 200000\n",
    );
    lab.ok(&["run", spec.to_str().unwrap(), "--scale", "0.1", "-q"]);
    let rows = lab.samples();
    assert_eq!(
        rows.len(),
        2 * 2 * 3,
        "2 cells x 2 measured reps x 3 processes (warm-ups not exported)"
    );
    for r in &rows {
        for f in REQUIRED {
            assert!(r.get(*f).is_some(), "field {f} missing in {r}");
        }
        assert_eq!(r["exit_code"], 0, "{r}");
        assert!(r["start_offset_s"].as_f64().unwrap() >= 0.0);
        assert!(r["work_units"].as_f64().unwrap() > 0.0, "{r}");
    }
    let cpu: Vec<&Value> = rows.iter().filter(|r| r["workload"] == "cpu").collect();
    assert!(cpu.iter().all(|r| r["work_units"] == 20000.0), "scale applied to iterations");
    let with_warmup: Vec<Value> =
        serde_json::from_str(&lab.ok(&["export", "--format", "json", "--include-warmup"])).unwrap();
    assert_eq!(with_warmup.len(), 18, "warm-ups are stored too");
    let csv = lab.ok(&["export", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 13);
    assert!(csv.lines().next().unwrap().starts_with("run_id,cell_id,"));
    let md = lab.ok(&["export", "--format", "markdown"]);
    assert!(md.lines().nth(1).unwrap().starts_with("|---|"));
    let runs = lab.ok(&["runs"]);
    assert!(runs.contains("complete"), "{runs}");
}

/// CPU hogs, more than there are cores: FIFO/RR workers run to completion (or a 100 ms
/// RR slice) while SCHED_OTHER time-slices them every few milliseconds.
#[test]
fn rt_workers_are_preempted_far_less_than_other_workers() {
    require!(is_root(), "needs root for SCHED_FIFO/SCHED_RR");
    let _one_at_a_time = measuring();
    // The ratios are timing: RR slices and the engine's wake-ups follow wall time, which a host
    // that stops the vCPUs stretches, while SCHED_OTHER's preemptions follow CPU time.
    schedlab_testkit::in_some_attempt("rt preemptions", 3, |_| {
        let lab = Lab::new();
        let spec = lab.spec(
            "rt.toml",
            "name = \"rt\"\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\", \"fifo\", \"rr\"]\nprocesses = [6]\n[workloads.cpu]\nkind = \"pi\"\niterations = 40_000_000\n",
        );
        lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
        let rows = lab.samples();
        for r in &rows {
            let seen = r["extra"].as_str().unwrap();
            assert!(
                seen.contains(&format!("\"policy\":\"{}\"", r["class"].as_str().unwrap())),
                "worker saw another policy: {seen}"
            );
        }
        let invol = |p: &str| mean_of(&rows, "involuntary_csw", |r| r["policy"] == p);
        let (other, fifo, rr) = (invol("other"), invol("fifo"), invol("rr"));
        eprintln!("involuntary switches per process: other {other:.1}, fifo {fifo:.1}, rr {rr:.1}");
        if other <= 5.0 * fifo.max(1.0) {
            Err(format!("other {other} vs fifo {fifo}"))
        } else if other <= 2.0 * rr.max(1.0) {
            Err(format!("other {other} vs rr {rr}"))
        } else {
            Ok(())
        }
    });
}

#[test]
fn io_workers_block_at_least_once_per_synchronous_write() {
    let lab = Lab::new();
    let spec = lab.spec(
        "io.toml",
        "name = \"io\"\n[matrix]\nworkload = [\"io\", \"mixed\"]\nprocesses = [4]\n[workloads.io]\nkind = \"copy\"\ntransfer_bytes = 40960\nblock_bytes = 1024\n[workloads.mixed]\nkind = \"mixed\"\niterations = 400000\nwrite_every = 10000\n",
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    for r in lab.samples() {
        let extra: Value = serde_json::from_str(r["extra"].as_str().unwrap()).unwrap();
        let writes = extra["detail"]["sync_writes"].as_f64().unwrap();
        assert_eq!(writes, 40.0, "{r}");
        // Voluntary switches of the work alone: the setup (exec, release wait) is subtracted.
        let work_vol =
            r["voluntary_csw"].as_f64().unwrap() - r["setup_voluntary_csw"].as_f64().unwrap();
        assert!(
            work_vol >= writes,
            "{} blocked {work_vol} times for {writes} O_SYNC writes",
            r["workload"]
        );
    }
}

#[test]
fn a_crashing_worker_is_recorded_with_its_signal_and_the_run_goes_on() {
    let lab = Lab::new();
    let spec = lab.spec(
        "crash.toml",
        "name = \"crash\"\nrepetitions = 2\n[matrix]\nworkload = [\"crash\", \"ok\"]\nprocesses = [2]\n[workloads.crash]\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"kill -SEGV $$\"]\n[workloads.ok]\nkind = \"command\"\nargv = [\"true\"]\n",
    );
    let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed cell makes the run exit 1: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = lab.samples();
    assert_eq!(rows.len(), 8);
    for r in &rows {
        match r["workload"].as_str().unwrap() {
            "crash" => {
                assert_eq!((r["signal"].as_i64(), r["exit_code"].as_i64()), (Some(11), None), "{r}")
            }
            _ => assert_eq!(r["exit_code"], 0, "{r}"),
        }
    }
    let show = lab.ok(&["show"]);
    assert!(show.contains("4 killed by signal"), "{show}");
    assert!(show.contains("FAILED 2 of 2 reps"), "{show}");
    assert!(lab.ok(&["runs"]).contains("complete with failures"));
}

#[test]
fn the_watchdog_kills_stragglers_and_marks_them() {
    let lab = Lab::new();
    let spec = lab.spec(
        "slow.toml",
        "name = \"slow\"\ntimeout_s = 6\n[matrix]\nworkload = [\"w\"]\nprocesses = [2]\n[workloads.w]\nkind = \"command\"\nargv = [\"sleep\", \"{index}0\"]\n",
    );
    assert_eq!(
        lab.run(&["run", spec.to_str().unwrap(), "-q"]).status.code(),
        Some(1),
        "a timed-out cell is a failed one"
    );
    let rows = lab.samples();
    // worker 0 sleeps 0 s ("00") and exits; worker 1 sleeps 10 s and is killed at 6 s (the
    // margin lets worker 0 exec and exit on a host that stalls the VM, or beside the whole
    // suite: at 3 s it once had not exited)
    assert_eq!(
        (rows[0]["timed_out"].as_bool(), rows[0]["exit_code"].as_i64()),
        (Some(false), Some(0))
    );
    assert_eq!((rows[1]["timed_out"].as_bool(), rows[1]["signal"].as_i64()), (Some(true), Some(9)));
    assert_eq!(rows[1]["cell_status"], "timed_out");
    assert!(rows[1]["cell_message"].as_str().unwrap().starts_with("timed out"), "{}", rows[1]);
}

/// A cell whose command fails is stored failed, left out of the means, and the run exits 1
/// ends `complete with failures`; the other cells' figures are unchanged.
#[test]
fn a_failing_command_is_reported_failed_not_ok() {
    let lab = Lab::new();
    let spec = lab.spec(
        "false.toml",
        "name = \"f\"\nrepetitions = 2\n[matrix]\nworkload = [\"bad\", \"good\"]\nprocesses = [2]\n\
         [workloads.bad]\nkind = \"command\"\nargv = [\"/bin/false\"]\n[workloads.good]\nkind = \"command\"\nargv = [\"/bin/true\"]\n",
    );
    let out = lab.run(&["run", spec.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("2 of 4 measured cell repetitions FAILED"), "{stderr}");
    let show = lab.ok(&["show"]);
    assert!(show.contains("complete with failures"), "{show}");
    assert!(show.contains("FAILED 2 of 2 reps (left out) [1]"), "{show}");
    assert!(show.contains("\n[1] 2 workers of 2 exited with status != 0"), "{show}");
    assert!(show.contains("bad/other/n2 reps 1, 2: failed:"), "{show}");
    // The failed cell has no figures (n = 0); the good one has both repetitions.
    let row = |w: &str| show.lines().find(|l| l.contains(&format!("│ {w}/"))).unwrap().to_string();
    let cols = |l: String| l.split('┆').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    assert_eq!((cols(row("bad"))[1].as_str(), cols(row("good"))[1].as_str()), ("0", "2"), "{show}");
    let rows = lab.samples();
    for r in &rows {
        let failed = r["workload"] == "bad";
        assert_eq!(r["cell_status"], if failed { "failed" } else { "ok" }, "{r}");
        assert_eq!(r["cell_message"].as_str().unwrap().is_empty(), !failed, "{r}");
    }
    let report = lab.path("report");
    let out = lab.run(&["report", "-o", report.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.contains("FAILED 2 of 2 reps"), "the report marks the failed cell");
}

/// No worker is released before every worker of the cell is prepared: worker 0 prepares
/// 1.5 s longer than the others (a test hook), and still all three start together.
#[test]
fn no_worker_starts_before_every_worker_is_prepared() {
    let lab = Lab::new();
    let spec = lab.spec(
        "prep.toml",
        "name = \"prep\"\n[matrix]\nworkload = [\"cpu\"]\nprocesses = [3]\n[workloads.cpu]\nkind = \"pi\"\niterations = 1000\n",
    );
    let child = lab
        .cmd(&["run", spec.to_str().unwrap(), "-q"])
        .env(schedlab_runner::worker::PREPARE_DELAY_ENV, "1500")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While worker 0 prepares, the engine (at SCHED_FIFO 99) sleeps until the last ready line
    // wakes it: polling would preempt whatever else runs on the machine.
    let switches = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    std::thread::sleep(std::time::Duration::from_millis(600));
    let before = switches(child.id());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let woke = switches(child.id()).saturating_sub(before);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        woke < 25,
        "the engine woke {woke} times in 0.5 s while a worker prepared: it must sleep, not poll"
    );
    let starts: Vec<f64> =
        lab.samples().iter().map(|r| r["start_offset_s"].as_f64().unwrap()).collect();
    assert_eq!(starts.len(), 3);
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    // Released before worker 0 was prepared, the others would start 1.5 s before it.
    assert!(
        spread < 1.0,
        "start offsets {starts:?}: a worker started while another still prepared"
    );
}

#[test]
fn two_thousand_processes_in_one_cell() {
    // 2,000 runnable processes load both CPUs (load average > 150): timing and accounting
    // tests must not run beside it.
    let _one_at_a_time = measuring();
    let lab = Lab::new();
    let spec = lab.spec(
        "many.toml",
        "name = \"many\"\n[matrix]\nworkload = [\"cpu\"]\nprocesses = [2000]\n[workloads.cpu]\nkind = \"pi\"\niterations = 10000\n",
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let rows = lab.samples();
    assert_eq!(rows.len(), 2000);
    assert!(rows.iter().all(|r| r["exit_code"] == 0 && r["work_units"] == 10000.0));
    let mut idx: Vec<i64> = rows.iter().map(|r| r["index"].as_i64().unwrap()).collect();
    idx.dedup();
    assert_eq!(idx.len(), 2000, "every worker reported exactly once");
}

/// A cell larger than the soft file limit: the engine raises its own limit for the pidfds it
/// watches the cell's processes with, and what its workers exec still sees the user's.
#[test]
fn commands_see_the_users_file_limit_when_the_engine_raises_its_own() {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: rl is a valid rlimit.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    require!(rl.rlim_max >= 1000, "the hard file limit is below 1,000");
    let _one_at_a_time = measuring();
    let lab = Lab::new();
    // Each command checks its own soft limit and its parent's (the engine: a worker execs it).
    let spec = lab.spec(
        "nofile.toml",
        r#"name = "nofile"
[matrix]
workload = ["limits"]
processes = [300]
[workloads.limits]
kind = "command"
argv = ["/bin/sh", "-c", "test \"$(ulimit -Sn)\" = 200 && awk '/^Max open files/ { exit !($4 > 300) }' /proc/$PPID/limits"]
"#,
    );
    let mut c = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]);
    // SAFETY: getrlimit and setrlimit are async-signal-safe; nothing else runs before the exec.
    unsafe {
        c.pre_exec(|| {
            let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl);
            rl.rlim_cur = 200;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = lab.samples();
    assert_eq!(rows.len(), 300);
    assert!(
        rows.iter().all(|r| r["exit_code"] == 0),
        "a command saw another limit, or the engine did not raise its own"
    );
}

#[test]
fn deadline_workers_run_under_sched_deadline_and_a_refusal_is_explained() {
    require!(is_root(), "needs root for SCHED_DEADLINE");
    // SCHED_DEADLINE workers preempt every FIFO task on both CPUs: not beside other RT tests.
    let _one_at_a_time = measuring();
    let lab = Lab::new();
    let spec = lab.spec(
        "dl.toml",
        "name = \"dl\"\n[matrix]\nworkload = [\"cpu\"]\npolicy = [\"dl\"]\nprocesses = [2, 40]\n[workloads.cpu]\nkind = \"pi\"\niterations = 2_000_000\n[policies.dl]\nclass = \"deadline\"\nruntime_us = 10000\nperiod_us = 100000\n",
    );
    assert_eq!(
        lab.run(&["run", spec.to_str().unwrap(), "-q"]).status.code(),
        Some(1),
        "the refused cell failed"
    );
    let rows = lab.samples();
    assert_eq!(rows.len(), 2, "the 40-worker cell (40 x 0.1 > 1.9 CPUs) was refused");
    assert!(rows.iter().all(|r| r["extra"].as_str().unwrap().contains("\"policy\":\"deadline\"")));
    let show = lab.ok(&["show"]);
    assert!(show.contains("admission refused"), "{show}");
}

/// schedlab's wait4 accounting of a command agrees with GNU time's of the same execution:
/// schedlab runs `/usr/bin/time ... dd ...`, so both measure one and the same dd (wait4's
/// rusage of `time` includes the child it reaped) and machine noise cancels out.
#[test]
fn command_accounting_matches_gnu_time() {
    require!(
        std::path::Path::new("/usr/bin/time").exists(),
        "GNU time is not installed (apt-get install time)"
    );
    // `time`'s own involuntary switches grow with the run queue: beside the 2,000-process
    // cell they reached +79 (CI, stop 11). Not beside other load-making tests.
    let _one_at_a_time = measuring();
    let lab = Lab::new();
    let log = lab.path("gnu-time.txt");
    let argv = [
        "/usr/bin/time",
        "-a",
        "-o",
        log.to_str().unwrap(),
        "-f",
        "%U %S %w %c",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=4k",
        "count=300000",
    ];
    let spec = lab.spec(
        "cmd.toml",
        &format!("name = \"cmd\"\nrepetitions = 3\n[matrix]\nworkload = [\"dd\"]\n[workloads.dd]\nkind = \"command\"\nargv = {argv:?}\n"),
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let rows = lab.samples();
    let theirs: Vec<Vec<f64>> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(theirs.len(), 3);
    for (r, t) in rows.iter().zip(&theirs) {
        let user = r["user_s"].as_f64().unwrap() - r["setup_user_s"].as_f64().unwrap();
        let sys = r["sys_s"].as_f64().unwrap() - r["setup_sys_s"].as_f64().unwrap();
        // CPU and switches before the exec (the shim starting, the release wait) are measured
        // separately as setup; what remains is `time` and the dd it ran.
        let vol = r["voluntary_csw"].as_f64().unwrap() - r["setup_voluntary_csw"].as_f64().unwrap();
        let invol =
            r["involuntary_csw"].as_f64().unwrap() - r["setup_involuntary_csw"].as_f64().unwrap();
        eprintln!("schedlab user {user:.3} sys {sys:.3} vol {vol} invol {invol} (after exec); GNU time {t:?}");
        // GNU time prints 10 ms resolution; `time` itself adds a few ms of its own.
        assert!((user - t[0]).abs() <= 0.02 + 0.05 * t[0], "user {user} vs {}", t[0]);
        assert!((sys - t[1]).abs() <= 0.02 + 0.05 * t[1], "sys {sys} vs {}", t[1]);
        // `time` blocks once waiting for dd, and its own fork/exec/print add a few.
        assert!(vol >= t[2] && vol <= t[2] + 4.0, "voluntary {vol} vs {}", t[2]);
        // Involuntary switches include dd's exactly (lower bound). What `time` and the shim
        // add on top depends on how loaded the machine is (+19 with the parallel test suite
        // beside it, +79 beside the 2,000-process cell before both took the lock), so only a
        // sanity bound here.
        assert!(
            invol >= t[3] - 1.0 && invol <= 2.0 * t[3] + 30.0,
            "involuntary {invol} vs {}",
            t[3]
        );
    }
}

#[test]
fn a_fifo_cell_holds_cpu_dma_latency_at_0_while_it_runs_and_lets_it_go() {
    require!(is_root(), "needs root for SCHED_FIFO and /dev/cpu_dma_latency");
    let dev = std::path::Path::new("/dev/cpu_dma_latency");
    require!(dev.exists(), "no /dev/cpu_dma_latency (kernel without PM QoS)");
    let read =
        || -> i32 { i32::from_ne_bytes(std::fs::read(dev).unwrap()[..4].try_into().unwrap()) };
    let before = read();
    let lab = Lab::new();
    // Each worker writes the latency in force while it runs; `od` prints the s32.
    let seen = lab.path("seen");
    let cmd = format!("od -An -td4 /dev/cpu_dma_latency > {}-$$", seen.display());
    let spec = lab.spec(
        "dma.toml",
        &format!("name = \"dma\"\n[matrix]\nworkload = [\"w\"]\npolicy = [\"fifo\", \"other\"]\n[workloads.w]\nkind = \"command\"\nargv = [\"sh\", \"-c\", {cmd:?}]\n"),
    );
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    let mut values = Vec::new();
    for e in std::fs::read_dir(lab.path("")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("seen-") {
            values.push(std::fs::read_to_string(&p).unwrap().trim().parse::<i64>().unwrap());
        }
    }
    values.sort_unstable();
    // The fifo worker saw 0; the other one whatever the machine had (unless another
    // holder asked for less meanwhile).
    assert_eq!(values.len(), 2, "{values:?}");
    assert_eq!(values[0], 0, "the fifo cell held 0: {values:?}");
    assert_eq!(read(), before, "the request is withdrawn after the run");
    let show = lab.ok(&["show"]);
    assert!(show.contains("cpu_dma_latency held at 0 us in 1 of 2 cells"), "{show}");
    let store = schedlab_store::Store::open(&lab.db()).unwrap();
    let held: Vec<(String, Option<u32>)> = store
        .cells(1)
        .unwrap()
        .into_iter()
        .map(|c| (c.params.policy, c.cpu_dma_latency_us))
        .collect();
    assert!(
        held.contains(&("fifo".into(), Some(0))) && held.contains(&("other".into(), None)),
        "{held:?}"
    );
}
