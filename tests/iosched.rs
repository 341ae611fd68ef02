//! The I/O-scheduler testbed: a loop device per experiment, the iosched axis, par_write and
//! par_read, and that nothing of schedlab's stays behind on any exit path (normal end,
//! Ctrl-C in a cell, kill -9 followed by `schedlab restore`), and bad input refused before
//! any change, as are cells this machine cannot run (a read-only /sys, a scheduler it lacks),
//! which `--skip-unavailable` leaves out instead.

use crate::util::{bfq_or, io_schedulers, is_root, no_read_only_sys, with_read_only_sys, Lab};
use std::path::Path;
use std::time::{Duration, Instant};

/// Loop devices whose backing file lies under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let want = dir.canonicalize().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().filter_map(Result::ok) {
        if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            if b.trim().starts_with(&want) {
                out.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// Mount points under `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    let want = dir.canonicalize().unwrap().to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
        .filter(|m| m.starts_with(&want))
        .collect()
}

/// schedlab's experiment directories left in the lab (TMPDIR is the lab directory).
fn experiment_dirs(lab: &Lab) -> Vec<String> {
    std::fs::read_dir(lab.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("schedlab-"))
        .collect()
}

/// What `read` finds of each block device in /sys/block that has it, by device name.
fn each_block_device(read: impl Fn(&Path) -> Option<String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().to_string_lossy().into_owned(), read(&e.path())?)))
        .collect();
    out.sort();
    out
}

/// Every loop device's and vda's active scheduler.
fn schedulers() -> Vec<(String, String)> {
    each_block_device(|dev| {
        let text = std::fs::read_to_string(dev.join("queue/scheduler")).ok()?;
        let active = text.split_whitespace().find(|w| w.starts_with('['))?;
        Some(active.trim_matches(['[', ']']).to_string())
    })
}

/// The machine's I/O state is shared: these tests take turns, and not beside the real-time
/// tests either (cache drops and loop-device I/O keep kernel threads busy enough to make
/// real-time tasks miss deadlines).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    crate::util::measuring()
}

fn assert_clean(lab: &Lab, before: &[(String, String)], when: &str) {
    // A loop device detached while its filesystem is still being released goes away by itself
    // (autoclear) a moment later.
    let t0 = Instant::now();
    while !loops_under(lab.dir.path()).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        loops_under(lab.dir.path()).is_empty(),
        "{when}: loop devices left: {:?}",
        loops_under(lab.dir.path())
    );
    assert!(
        mounts_under(lab.dir.path()).is_empty(),
        "{when}: mounts left: {:?}",
        mounts_under(lab.dir.path())
    );
    assert!(experiment_dirs(lab).is_empty(), "{when}: files left: {:?}", experiment_dirs(lab));
    assert_eq!(schedulers(), before, "{when}: an I/O scheduler was not restored");
    let state = lab.path("state");
    let journals = std::fs::read_dir(&state).map(|d| d.count()).unwrap_or(0);
    assert_eq!(journals, 0, "{when}: a journal is left in {}", state.display());
}

const SMALL: &str = r#"
name = "io"
repetitions = 2

[workloads.w]
kind = "par_write"
files = 6
file_bytes = 1_000_000
threads = 3
buffer_bytes = 65536
mode = "fsync"

[workloads.r]
kind = "par_read"
files = 4
file_bytes = 500_000
threads = 2
buffer_bytes = 16384

[iosched.dl]
scheduler = "mq-deadline"
tunables = { read_expire = 250, nr_requests = 16 }

[matrix]
workload = ["w", "r"]
iosched = ["bfq", "dl"]
"#;

#[test]
fn a_normal_run_measures_every_file_and_leaves_nothing_behind() {
    require!(is_root(), "loop devices, mount and I/O scheduler changes need CAP_SYS_ADMIN");
    let _one = serial();
    let lab = Lab::new();
    let before = schedulers();
    // bfq where this kernel has it (kyber otherwise): the run switches between two schedulers.
    let other = bfq_or("kyber");
    let spec = lab.spec("io.toml", &SMALL.replace("\"bfq\"", &format!("\"{other}\"")));
    lab.ok(&["run", spec.to_str().unwrap(), "-q"]);
    assert_clean(&lab, &before, "after a normal run");
    let rows = lab.samples();
    assert_eq!(
        rows.len(),
        2 * 2 * 2,
        "2 workloads x 2 schedulers x 2 repetitions, one process each"
    );
    for r in &rows {
        let extra: serde_json::Value = serde_json::from_str(r["extra"].as_str().unwrap()).unwrap();
        let d = &extra["detail"];
        let (files, size) = if r["workload"] == "w" { (6, 1_000_000) } else { (4, 500_000) };
        assert_eq!(d["files"], files, "{d}");
        assert_eq!(r["io_bytes"], files * size);
        assert_eq!(d["file_times"].as_array().unwrap().len(), files as usize);
        assert!(d["ops"].as_u64().unwrap() >= (files * size / 65536) as u64);
        assert_eq!(d["lat_ns"]["count"], d["ops"], "one latency per call");
        assert!(r["io_lat_p50_us"].as_f64().unwrap() <= r["io_lat_p99_us"].as_f64().unwrap());
        // The scheduler the cell asked for was really active on the device.
        let want = if r["iosched"] == "dl" { "mq-deadline" } else { other.as_str() };
        assert_eq!(r["io_scheduler"], want);
        if r["workload"] == "w" {
            // wait4's ru_oublock counts 512-byte units sent to the device: all the fsync'd bytes.
            assert!(r["block_out"].as_i64().unwrap() * 512 >= (files * size) as i64, "{r}");
        }
    }
    let show = lab.ok(&["show"]);
    assert!(
        show.contains("I/O (mean")
            && show.contains("dl = mq-deadline (loop")
            && show.contains("write fsync"),
        "{show}"
    );
    // The device saw the writes: at least the fsync'd bytes in requests.
    let text = lab.ok(&["export", "--format", "json"]);
    assert!(text.contains("io_scheduler"));
}

/// Starts a run whose cells take long, waits until the device is mounted and a worker
/// writes, and returns the child.
fn start_long_run(lab: &Lab) -> std::process::Child {
    let spec = lab.spec(
        "long.toml",
        r#"
name = "long"
[workloads.slow]
kind = "par_write"
files = 4
file_bytes = 400_000_000
threads = 4
buffer_bytes = 4096
mode = "sync"
[device]
size_mib = 2048
[matrix]
workload = ["slow"]
iosched = ["bfq", "kyber"]
"#
        .replace("\"bfq\"", &format!("\"{}\"", bfq_or("mq-deadline")))
        .as_str(),
    );
    let child = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    let t0 = Instant::now();
    loop {
        let mounted = mounts_under(lab.dir.path());
        let writing = mounted.iter().any(|m| {
            std::fs::read_dir(Path::new(m).join("work"))
                .map(|d| {
                    d.filter_map(Result::ok)
                        .any(|c| std::fs::read_dir(c.path()).is_ok_and(|mut f| f.next().is_some()))
                })
                .unwrap_or(false)
        });
        if writing {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the long cell never started writing");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// Undoes a long run's changes when its test fails midway (an assertion between the start
/// and the test's own stop or restore would otherwise leave the loop device mounted and its
/// scheduler changed): kills the run and calls `schedlab restore` on the lab's journal.
struct UndoOnPanic<'a> {
    lab: &'a Lab,
    pid: i32,
}

impl Drop for UndoOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        // SAFETY: signalling our own child, which may have exited already.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        std::thread::sleep(Duration::from_millis(500));
        let _ = self.lab.run(&["restore"]);
    }
}

fn wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "schedlab did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_in_the_middle_of_a_cell_restores_everything() {
    require!(is_root(), "loop devices, mount and I/O scheduler changes need CAP_SYS_ADMIN");
    let _one = serial();
    let lab = Lab::new();
    let before = schedulers();
    let mut child = start_long_run(&lab);
    let _undo = UndoOnPanic { lab: &lab, pid: child.id() as i32 };
    assert_ne!(schedulers(), before, "the cell's scheduler is in force while it runs");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(wait(&mut child).code(), Some(130));
    assert_clean(&lab, &before, "after SIGINT");
}

#[test]
fn kill_9_then_restore_removes_loop_device_mount_files_and_scheduler_change() {
    require!(is_root(), "loop devices, mount and I/O scheduler changes need CAP_SYS_ADMIN");
    let _one = serial();
    let lab = Lab::new();
    let before = schedulers();
    let mut child = start_long_run(&lab);
    let _undo = UndoOnPanic { lab: &lab, pid: child.id() as i32 };
    child.kill().unwrap(); // SIGKILL: nothing of schedlab's runs any more
    let _ = wait(&mut child);
    // The workers die with the engine (PDEATHSIG); what it changed is still there.
    assert!(
        !mounts_under(lab.dir.path()).is_empty() && !loops_under(lab.dir.path()).is_empty(),
        "the kill left nothing to restore"
    );
    assert_ne!(schedulers(), before);
    let t0 = Instant::now();
    let out = loop {
        // The workers' exit may take a moment to release the filesystem.
        let out = lab.run(&["restore"]);
        if out.status.success() || t0.elapsed() > Duration::from_secs(10) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("Unmount") && text.contains("DetachLoop") && text.contains("scheduler"),
        "{text}"
    );
    assert_clean(&lab, &before, "after kill -9 and schedlab restore");
}

#[test]
fn bad_device_input_is_refused_before_any_change() {
    require!(is_root(), "the device checks read /sys as root");
    let _one = serial();
    let lab = Lab::new();
    let before = schedulers();
    let base =
        "name = \"bad\"\n[workloads.w]\nkind = \"par_write\"\nfiles = 2\nfile_bytes = 50_000_000\n";
    let cases: [(&str, String, &[&str]); 6] = [
        (
            "unknown scheduler",
            format!("{base}[matrix]\nworkload = [\"w\"]\niosched = [\"none\", \"cfq\"]\n"),
            &["bad.toml:8:", "does not offer the I/O scheduler \"cfq\"", &format!("it offers: {}", io_schedulers().join(", "))],
        ),
        ("missing device", format!("{base}[device]\npath = \"/dev/schedlab-nonexistent\"\n[matrix]\nworkload = [\"w\"]\n"), &["bad.toml:7:", "No such file"]),
        (
            "real disk unconfirmed",
            format!("{base}[device]\npath = \"{}\"\n[matrix]\nworkload = [\"w\"]\n", lab.dir.path().display()),
            &["bad.toml:7:", "the files would go to the real disk", "confirm_device = \"", "--yes-device"],
        ),
        (
            "device too small",
            format!("{base}[device]\nsize_mib = 64\n[matrix]\nworkload = [\"w\"]\n"),
            &["bad.toml:7:", "a 64 MiB device leaves about", "the largest cell needs 96 MiB"],
        ),
        (
            "no room for the image",
            format!("{base}[device]\nsize_mib = 16000000\n[matrix]\nworkload = [\"w\"]\n"),
            &["bad.toml:7:", "not enough space for the 16000000 MiB loop device image"],
        ),
        (
            "unknown tunable",
            format!("{base}[iosched.b]\nscheduler = \"mq-deadline\"\ntunables = {{ read_expir = 0 }}\n[matrix]\nworkload = [\"w\"]\niosched = [\"b\"]\n"),
            &["bad.toml:8:", "mq-deadline has no tunable \"read_expir\"", "read_expire"],
        ),
    ];
    for (what, text, expect) in cases {
        let spec = lab.spec("bad.toml", &text);
        let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        for e in expect {
            assert!(err.contains(e), "{what}: expected {e:?} in: {err}");
        }
        assert_clean(&lab, &before, what);
        assert!(
            !lab.db().exists() || !lab.ok(&["runs"]).contains("bad"),
            "{what}: a run was created"
        );
    }
}

#[test]
fn a_directory_on_a_real_disk_needs_confirmation_and_gets_its_scheduler_back() {
    require!(is_root(), "I/O scheduler changes need CAP_SYS_ADMIN");
    let _one = serial();
    let lab = Lab::new();
    let disk = {
        let out = std::process::Command::new("findmnt")
            .args(["-no", "SOURCE", "-T"])
            .arg(lab.dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => {
                String::from_utf8_lossy(&o.stdout).trim().trim_start_matches("/dev/").to_string()
            }
            _ => String::new(),
        }
    };
    require!(
        !disk.is_empty() && Path::new(&format!("/sys/block/{disk}/queue/scheduler")).exists(),
        "the test directory is not on a whole disk"
    );
    let before = schedulers();
    let active = before.iter().find(|(d, _)| *d == disk).map(|(_, s)| s.clone()).unwrap();
    let other = if active == "none" { "mq-deadline" } else { "none" };
    let data = lab.path("data");
    std::fs::create_dir(&data).unwrap();
    let spec = lab.spec(
        "dir.toml",
        &format!(
            "name = \"dir\"\n[workloads.w]\nkind = \"par_write\"\nfiles = 3\nfile_bytes = 200_000\nthreads = 3\nmode = \"fsync\"\n\
             [device]\npath = \"{}\"\n[matrix]\nworkload = [\"w\"]\niosched = [\"{other}\"]\n",
            data.display()
        ),
    );
    let out = lab.run(&["run", spec.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    {
        // While another process holds the disk's queue (as a concurrent run would), the run
        // refuses before changing anything.
        use std::os::fd::AsRawFd;
        let held = std::fs::File::open(format!("/sys/block/{disk}/queue/scheduler")).unwrap();
        // SAFETY: plain syscall on our own descriptor.
        assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        let out = lab.run(&["run", spec.to_str().unwrap(), "-q", "--yes-device", &disk]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("cannot overlap") && err.contains(&disk),
            "{err}"
        );
        assert_eq!(schedulers(), before, "nothing switched");
        assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0, "nothing created");
    }
    lab.ok(&["run", spec.to_str().unwrap(), "-q", "--yes-device", &disk]);
    assert_eq!(schedulers(), before, "{disk}'s scheduler is back");
    assert_eq!(
        std::fs::read_dir(&data).unwrap().count(),
        0,
        "only schedlab's own directory was used, and it is gone"
    );
    let rows = lab.samples();
    assert_eq!(rows[0]["io_scheduler"], other);
    assert_eq!(rows[0]["io_bytes"], 600_000);
}

#[test]
fn iosched_report_renders_every_io_figure_in_chromium() {
    require!(is_root(), "the iosched example makes a loop device (CAP_SYS_ADMIN)");
    let Some(chromium) = crate::report::chromium() else {
        schedlab_testkit::skip("chromium is not installed (apt-get install chromium)");
        return;
    };
    let _one = serial();
    let lab = Lab::new();
    // The seed experiment with the schedulers this kernel offers (bfq may be missing).
    let seed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/iosched.toml"))
            .unwrap();
    let offered: Vec<String> = io_schedulers().iter().take(4).map(|s| format!("{s:?}")).collect();
    let text = seed.replace(
        r#"iosched = ["none", "mq-deadline", "kyber", "bfq"]"#,
        &format!("iosched = [{}]", offered.join(", ")),
    );
    assert!(
        text != seed || offered.len() == 4,
        "the seed's iosched line is where the test expects it"
    );
    let spec = lab.spec("iosched.toml", &text);
    let spec = spec.to_str().unwrap();
    lab.ok(&["run", spec, "--scale", "0.002", "--repetitions", "2", "-q"]);
    lab.ok(&["report", "-o", "rep"]);
    let html = std::fs::read_to_string(lab.path("rep/index.html")).unwrap();
    assert!(
        html.contains("I/O per cell (as in the I/O-scheduler study)"),
        "the I/O table is in the report"
    );
    let ids = crate::report::figure_ids(&html);
    assert_eq!(ids.len(), 5, "time, MB/s, p50, p99, p99.9 and nothing per process count: {ids:?}");
    // Every chart has the three cases as series, each across the four schedulers.
    assert_eq!(crate::report::check_in_chromium(&chromium, &lab.path("rep"), 3), 5);
}

/// Every attached loop device with its backing file, as `losetup -a` lists them (it reads
/// the same sysfs files).
fn attached_loops() -> Vec<(String, String)> {
    each_block_device(|dev| {
        std::fs::read_to_string(dev.join("loop/backing_file")).ok().map(|b| b.trim().to_string())
    })
}

/// Work this small that a run of it takes seconds.
const QUICK: [&str; 4] = ["--scale", "0.001", "--repetitions", "1"];

/// The seed I/O study, as shipped.
const IO_STUDY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/iosched.toml");

/// A command's exit status and everything it said.
fn said(out: &std::process::Output) -> (Option<i32>, String) {
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn on_a_read_only_sys_the_io_study_is_refused_before_any_change_naming_the_path() {
    require!(no_read_only_sys().is_none(), &no_read_only_sys().unwrap_or_default());
    let _one = serial();
    let lab = Lab::new();
    let (before, loops) = (schedulers(), attached_loops());
    // Issue 47: every cell used to FAIL at "setting loop0's scheduler to none: Read-only file
    // system", after the loop device was made; now the preflight names the path and why.
    for sub in ["check", "run"] {
        let cmd = lab.cmd(&[&[sub, IO_STUDY][..], &QUICK].concat());
        let (code, text) = said(&with_read_only_sys(cmd).output().unwrap());
        assert_eq!(code, Some(2), "{sub}: {text}");
        for says in
            ["/sys/block is read-only", "/sys is mounted read-only", "remount /sys read-write"]
        {
            assert!(text.contains(says), "{sub} says {says:?}: {text}");
        }
        assert!(!text.contains("FAILED"), "{sub}: {text}");
        assert_clean(&lab, &before, &format!("{sub} on a read-only /sys"));
        assert_eq!(attached_loops(), loops, "{sub}: no loop device attached or detached");
    }
    assert!(!lab.db().exists(), "refused before a run was recorded");
}

#[test]
fn on_a_read_only_sys_skip_unavailable_runs_only_the_cells_that_set_no_scheduler() {
    require!(no_read_only_sys().is_none(), &no_read_only_sys().unwrap_or_default());
    let _one = serial();
    let lab = Lab::new();
    let (before, loops) = (schedulers(), attached_loops());
    // Every cell of the study sets a scheduler: with the flag none can run, and it says so
    // with every reason.
    let cmd = lab.cmd(&[&["run", IO_STUDY, "-q", "--skip-unavailable"][..], &QUICK].concat());
    let (code, text) = said(&with_read_only_sys(cmd).output().unwrap());
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("can run no cell of")
            && text.contains("(12 left out by --skip-unavailable)")
            && text.contains("read-only"),
        "{text}"
    );
    if !io_schedulers().iter().any(|s| s == "bfq") {
        assert!(text.contains("does not offer the I/O scheduler \"bfq\""), "{text}");
    }
    assert_clean(&lab, &before, "the flag on a read-only /sys");
    // Cells that need no scheduler run there, on their loop device; those of a cgroup setting
    // (the hierarchy is not in the read-only /sys) are skipped by name.
    let mix = lab.spec(
        "mix.toml",
        "name = \"mix\"\n[workloads.w]\nkind = \"par_write\"\nfiles = 2\nfile_bytes = 1_000_000\n[matrix]\nworkload = [\"w\", \"pi\"]\ncpu_weight = [0, 200]\n",
    );
    let mix = mix.to_str().unwrap();
    let (code, text) = said(&with_read_only_sys(lab.cmd(&["run", mix, "-q"])).output().unwrap());
    assert_eq!(code, Some(2), "refused whole without the flag: {text}");
    assert!(
        text.contains("run with --skip-unavailable to leave them out and run the other 2"),
        "{text}"
    );
    let cmd = lab.cmd(&[&["run", mix, "-q", "--skip-unavailable"][..], &QUICK].concat());
    let (code, text) = said(&with_read_only_sys(cmd).output().unwrap());
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("skipped 2 cells (not run, not failed)") && !text.contains("FAILED"),
        "{text}"
    );
    let rows = lab.samples();
    assert_eq!(rows.len(), 2, "the two cells without a cgroup setting ran: {rows:?}");
    assert_clean(&lab, &before, "after the run of the other cells");
    assert_eq!(attached_loops(), loops, "the run's loop device is gone");
}

#[test]
fn a_scheduler_this_kernel_lacks_refuses_the_file_whole_unless_the_flag_skips_its_cells() {
    require!(is_root(), "loop devices and I/O scheduler changes need CAP_SYS_ADMIN");
    // cfq left the kernel in 5.0: no kernel this runs on offers it.
    require!(!io_schedulers().iter().any(|s| s == "cfq"), "this kernel offers cfq");
    let _one = serial();
    let lab = Lab::new();
    let before = schedulers();
    let spec = lab.spec("io.toml", &SMALL.replace("\"bfq\"", "\"cfq\""));
    let spec = spec.to_str().unwrap();
    for sub in ["check", "run"] {
        let (code, text) = said(&lab.run(&[sub, spec]));
        assert_eq!(code, Some(2), "{sub}: {text}");
        assert!(
            text.contains("io.toml:26:12:")
                && text.contains("does not offer the I/O scheduler \"cfq\""),
            "{sub}: {text}"
        );
        assert!(
            text.contains("run with --skip-unavailable to leave them out and run the other 2"),
            "{sub}: {text}"
        );
    }
    assert!(!lab.db().exists(), "refused before a run was recorded");
    let (code, text) = said(&lab.run(&["check", spec, "--skip-unavailable"]));
    assert_eq!(code, Some(0), "{text}");
    let skipped = "skipped 2 cells (not run, not failed), the device does not offer the I/O scheduler \"cfq\"";
    assert!(text.contains(skipped) && text.contains("w/other/n1/iosched=cfq"), "{text}");
    let (code, text) = said(&lab.run(&["run", spec, "--skip-unavailable"]));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(skipped) && !text.contains("FAILED"), "{text}");
    let rows = lab.samples();
    assert_eq!(rows.len(), 2 * 2, "2 workloads x mq-deadline x 2 repetitions");
    assert!(rows.iter().all(|r| r["io_scheduler"] == "mq-deadline"), "{rows:?}");
    assert_clean(&lab, &before, "after the run without the cfq cells");
}
