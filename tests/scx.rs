//! sched_ext schedulers on the `cpu_scheduler` axis (issue #22). On a kernel without
//! sched_ext (this machine) a plan that names one is refused before anything changes; on
//! one with it (the TCG guest of `.ci/scx-guest.sh`, which sets SCHEDLAB_SCX_GUEST=1 and
//! puts scx_bpfland on PATH) runs load, check and unload a real scheduler.

use crate::util::Lab;
use std::path::Path;

const SYSFS: &str = "/sys/kernel/sched_ext";

fn example() -> String {
    format!("{}/experiments/scx.toml", env!("CARGO_MANIFEST_DIR"))
}

/// `check` and `run` of `spec` exit 2 with a message saying all of `says`, and leave neither
/// a database nor a restore journal behind.
fn refused_before_anything_changes(spec: &str, says: &[&str]) {
    let lab = Lab::new();
    for cmd in ["check", "run"] {
        let out = lab.run(&[cmd, spec, "--scale", "0.01"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        for s in says {
            assert!(stderr.contains(s), "{cmd} says {s:?}: {stderr}");
        }
    }
    assert!(!lab.db().exists(), "no database was made");
    let journals = std::fs::read_dir(lab.path("state")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(journals, 0, "no restore journal was written");
}

#[test]
fn without_sched_ext_check_and_run_of_the_example_exit_2_naming_the_kernel_feature_and_change_nothing(
) {
    require!(
        !Path::new(SYSFS).exists(),
        "this kernel has sched_ext (the refusal is for kernels without it)"
    );
    // Pointing at the first scx scheduler.
    refused_before_anything_changes(
        &example(),
        &["has no sched_ext: /sys/kernel/sched_ext is absent", "scx.toml:23:27"],
    );
}

#[test]
fn simulate_says_it_models_no_bpf_scheduler() {
    let lab = Lab::new();
    let spec = lab.spec(
        "s.toml",
        "name = \"s\"\nrepetitions = 1\n[matrix]\ncpu_scheduler = [\"eevdf\", \"scx:scx_bpfland\"]\nworkload = [\"w\"]\n\
         [workloads.w]\nkind = \"pi\"\niterations = 1000\n",
    );
    let out = lab.run(&["simulate", spec.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "cpu_scheduler=scx_bpfland: it runs under the sched_ext scheduler scx_bpfland, and the simulator models no BPF scheduler"
        ),
        "{stderr}"
    );
    // With --skip-unsupported the eevdf cell is simulated and the scx one stored as failed.
    let out = lab.run(&["simulate", spec.to_str().unwrap(), "--skip-unsupported", "-q"]);
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let cells: Vec<(Option<String>, String)> = conn
        .prepare("SELECT cpu_scheduler, status FROM cells ORDER BY cell_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        cells,
        [(Some("eevdf".into()), "ok".into()), (Some("scx_bpfland".into()), "failed".into())]
    );
}

fn dwcs_scx_example() -> String {
    format!("{}/experiments/dwcs-scx.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn without_sched_ext_check_and_run_of_a_dwcs_scx_set_exit_2_naming_the_kernel_feature_and_change_nothing(
) {
    require!(
        !Path::new(SYSFS).exists(),
        "this kernel has sched_ext (the refusal is for kernels without it)"
    );
    refused_before_anything_changes(
        &dwcs_scx_example(),
        &[
            "workload \"canonical\" runs under schedlab's own sched_ext scheduler",
            "has no sched_ext: /sys/kernel/sched_ext is absent",
            "dwcs-scx.toml:14:13",
        ],
    );
}

#[test]
fn simulate_runs_dwcs_scx_and_edf_scx_sets_by_the_same_policy_job_for_job() {
    let lab = Lab::new();
    let text = std::fs::read_to_string(dwcs_scx_example())
        .unwrap()
        .replace("[\"dwcs\", \"dwcs-scx\"]", "[\"dwcs\", \"dwcs-scx\", \"edf\", \"edf-scx\"]");
    let spec = lab.spec("s.toml", &text);
    let out = lab.run(&["simulate", spec.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let jobs = |scheduler: &str| -> Vec<(i64, i64, Vec<u8>)> {
        conn.prepare(
            "SELECT j.idx, j.jobs, j.data FROM jobs j JOIN cells c ON c.id = j.cell_row \
             WHERE c.key = ?1 ORDER BY j.idx",
        )
        .unwrap()
        .query_map([format!("canonical/{scheduler}/n4")], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let (dwcs, edf) = (jobs("dwcs"), jobs("edf"));
    assert_eq!(dwcs.len(), 4, "one job log per task");
    assert_ne!(dwcs, edf, "DWCS and EDF decide differently on this set");
    assert_eq!(jobs("dwcs-scx"), dwcs, "dwcs-scx simulates DWCS");
    assert_eq!(jobs("edf-scx"), edf, "edf-scx simulates EDF");
}

/// Why this is no machine to load real schedulers with `program` on, if it is not: sched_ext
/// present, the harness's variable set (so a plain `cargo test` never loads one) and
/// `program` (scx_bpfland, or schedlab-scx for `dwcs-scx` sets) on PATH.
fn guest(program: &str) -> Option<String> {
    if !Path::new(SYSFS).exists() {
        return Some(format!(
            "{SYSFS} is absent (run .ci/scx-guest.sh for a kernel with sched_ext)"
        ));
    }
    if std::env::var_os("SCHEDLAB_SCX_GUEST").is_none() {
        return Some(
            "SCHEDLAB_SCX_GUEST is not set (these tests load real sched_ext schedulers)".into(),
        );
    }
    let on_path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(program).is_file());
    (!on_path).then(|| format!("{program} is not on PATH (.ci/scx-guest.sh puts it there)"))
}

/// A guest test's lab on a machine that may load `program` ([`guest`]); elsewhere the test
/// is skipped, saying why.
macro_rules! guest_lab {
    ($program:expr) => {
        match guest($program) {
            Some(why) => {
                schedlab_testkit::skip(why);
                return;
            }
            None => Lab::new(),
        }
    };
}

/// Spawns `schedlab run -q` of `spec` and waits (at most `secs`) until `running` says what it
/// loads runs; the run may not end before.
fn started(
    lab: &Lab,
    spec: &Path,
    what: &str,
    secs: u64,
    mut running: impl FnMut() -> bool,
) -> std::process::Child {
    let mut child = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    wait_until(what, secs, || {
        if child.try_wait().unwrap().is_some() {
            panic!("the run ended before {what}: {:#?}", stored(lab));
        }
        running()
    });
    child
}

/// Interrupts a run a second into its cell as Ctrl-C does: it exits 130 and leaves sched_ext
/// disabled, with no scheduler process.
fn interrupted(mut child: std::process::Child) {
    std::thread::sleep(std::time::Duration::from_secs(1));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_clean();
}

/// `schedlab restore` in `lab`, which must succeed.
fn restored(lab: &Lab) {
    let out = lab.run(&["restore"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The real-time record (`rt_json`) of the run's one cell.
fn stored_rt(lab: &Lab) -> serde_json::Value {
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let rt: String = conn.query_row("SELECT rt_json FROM cells", [], |r| r.get(0)).unwrap();
    serde_json::from_str(&rt).unwrap()
}

fn state() -> String {
    std::fs::read_to_string(format!("{SYSFS}/state")).unwrap_or_default().trim().to_string()
}

/// Pids of running scx_bpfland processes.
fn schedulers() -> Vec<i32> {
    processes("scx_bpfland")
}

/// Pids of running processes named `comm`.
fn processes(comm: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.contains(&format!("({comm})")) && !stat.contains(") Z ")
        })
        .collect()
}

fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(t0.elapsed() < std::time::Duration::from_secs(secs), "{what} not within {secs} s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// (cpu_scheduler, status, message, sched_ext record) of every stored cell, in run order.
fn stored(lab: &Lab) -> Vec<(String, String, String, serde_json::Value)> {
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let mut st = conn
        .prepare("SELECT coalesce(cpu_scheduler, ''), status, coalesce(message, ''), coalesce(sched_ext_json, 'null') FROM cells ORDER BY ordinal")
        .unwrap();
    st.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            serde_json::from_str(&r.get::<_, String>(3)?).unwrap(),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn assert_clean() {
    wait_until("sched_ext disabled", 60, || state() == "disabled");
    assert_eq!(schedulers(), Vec::<i32>::new(), "no scheduler process left");
    wait_until("no schedlab-scx left", 10, || processes("schedlab-scx").is_empty());
}

/// A spec of `cells` (cpu_scheduler values) whose workers sleep `secs` with a marker.
fn sleepers(lab: &Lab, schedulers: &str, secs: &str) -> std::path::PathBuf {
    lab.spec(
        "sleep.toml",
        &format!(
            "name = \"sleep\"\nrepetitions = 1\n[matrix]\ncpu_scheduler = [{schedulers}]\nworkload = [\"nap\"]\nprocesses = [2]\n\
             [workloads.nap]\nkind = \"command\"\nargv = [\"sleep\", \"{secs}\"]\n"
        ),
    )
}

#[test]
fn in_a_sched_ext_guest_the_example_stores_eevdf_and_scx_cells_with_every_worker_where_it_belongs()
{
    let lab = guest_lab!("scx_bpfland");
    let text = std::fs::read_to_string(example())
        .unwrap()
        .replace(", \"scx:scx_lavd\"", "")
        .replace("processes = [10, 50]", "processes = [3]");
    let spec = lab.spec("scx.toml", &text);
    let out =
        lab.run(&["run", spec.to_str().unwrap(), "--scale", "0.005", "--repetitions", "1", "-q"]);
    let cells = stored(&lab);
    assert!(out.status.success(), "{}\n{cells:#?}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(cells.len(), 8, "2 schedulers x 2 workloads x with and without the periodic set");
    for (sched, status, message, seen) in &cells {
        assert_eq!(status, "ok", "{sched}: {message}");
        let workers = seen["workers"].as_array().unwrap();
        assert!(workers.len() == 3 || workers.len() == 7, "{seen}");
        let on: Vec<bool> = workers.iter().map(|w| w["ext_enabled"] == true).collect();
        match sched.as_str() {
            "eevdf" => {
                assert!(on.iter().all(|o| !o), "no worker on sched_ext under eevdf: {seen}");
                assert!(seen["loaded"].is_null());
            }
            "scx_bpfland" => {
                assert!(on.iter().all(|o| *o), "every worker on sched_ext: {seen}");
                let l = &seen["loaded"];
                assert!(l["ops"].as_str().unwrap().starts_with("bpfland_"), "{l}");
                // Stopped, by SIGINT or (TCG is slow to wind down) SIGKILL after the grace.
                assert!(
                    l["enable_seq"].as_u64().unwrap() >= 1 && l["stop_s"].as_f64().is_some(),
                    "{l}"
                );
                // Its own statistics (scx_stats) over the cell: it dispatched the workers.
                let stats = &l["stats"];
                assert!(stats["error"].is_null(), "{stats}");
                let cell =
                    stats["cell"].as_object().unwrap_or_else(|| panic!("no statistics: {l}"));
                assert!(cell.iter().any(|(k, v)| k.contains("dispatch") && v.as_f64().is_some_and(|x| x > 0.0)), "{stats}");
            }
            other => panic!("unexpected cpu_scheduler {other}"),
        }
    }
    assert_clean();
}

#[test]
fn in_a_sched_ext_guest_ctrl_c_during_an_scx_cell_unloads_the_scheduler() {
    let lab = guest_lab!("scx_bpfland");
    let spec = sleepers(&lab, "\"scx:scx_bpfland\"", "60");
    interrupted(started(&lab, &spec, "the scheduler loaded", 120, || state() == "enabled"));
}

#[test]
fn in_a_sched_ext_guest_restore_unloads_the_scheduler_a_killed_run_left() {
    let lab = guest_lab!("scx_bpfland");
    let spec = sleepers(&lab, "\"scx:scx_bpfland\"", "7.5");
    let mut child = started(&lab, &spec, "the scheduler loaded", 120, || state() == "enabled");
    std::thread::sleep(std::time::Duration::from_secs(1));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(state(), "enabled", "a killed run leaves its scheduler loaded");
    restored(&lab);
    assert_clean();
    // The killed run's sleepers end by themselves (7.5 s).
}

#[test]
fn in_a_sched_ext_guest_a_scheduler_killed_mid_cell_fails_that_cell_and_the_run_goes_on() {
    let lab = guest_lab!("scx_bpfland");
    let spec = sleepers(&lab, "\"scx:scx_bpfland\", \"eevdf\"", "4");
    let mut child = started(&lab, &spec, "the scheduler loaded", 120, || {
        state() == "enabled" && !schedulers().is_empty()
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    for pid in schedulers() {
        // SAFETY: killing the scheduler the run under test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "some cells failed");
    let cells = stored(&lab);
    assert_eq!(cells.len(), 2, "{cells:?}");
    let (sched, status, message, _) = &cells[0];
    assert_eq!((sched.as_str(), status.as_str()), ("scx_bpfland", "failed"));
    assert!(
        message.contains("the sched_ext scheduler bpfland exited during the cell (signal: 9"),
        "{message}"
    );
    assert!(message.contains("kernel: sched_ext:"), "the kernel's reason: {message}");
    assert_eq!((cells[1].0.as_str(), cells[1].1.as_str()), ("eevdf", "ok"), "{}", cells[1].2);
    assert_clean();
}

/// The set `dwcs status --json` shows running with `tasks` tasks, once one has a released job.
fn running_set(lab: &Lab, tasks: usize) -> Option<serde_json::Value> {
    let out = lab.run(&["dwcs", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v.as_array()?
        .iter()
        .find(|s| {
            s["state"] == "running"
                && s["tasks"].as_array().is_some_and(|t| {
                    t.len() == tasks && t.iter().any(|t| t["released"].as_u64() > Some(0))
                })
        })
        .cloned()
}

/// The example's canonical set under dwcs-scx only, for `secs` seconds, with `tasks` instead
/// of its own when given.
fn dwcs_scx_set(lab: &Lab, secs: u32, tasks: Option<&str>) -> std::path::PathBuf {
    let mut text = std::fs::read_to_string(dwcs_scx_example())
        .unwrap()
        .replace("scheduler = [\"dwcs\", \"dwcs-scx\"]", "scheduler = [\"dwcs-scx\"]")
        .replace("duration_s = 10", &format!("duration_s = {secs}"));
    if let Some(tasks) = tasks {
        let at = text.find("tasks = [").unwrap();
        text.truncate(at);
        text.push_str(tasks);
    }
    lab.spec("dwcs-scx.toml", &text)
}

#[test]
fn in_a_sched_ext_guest_dwcs_scx_runs_the_canonical_set_on_sched_ext_and_stores_it_like_dwcs() {
    let lab = guest_lab!("schedlab-scx");
    // The feasible canonical set at 100 ms quanta, 8 s, under schedlab's own scheduler only.
    let spec = dwcs_scx_set(&lab, 8, None);
    let mut child = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    // `dwcs status` during the cell lists every task with its window state and deadline.
    let (mut listed, mut loaded) = (serde_json::Value::Null, String::new());
    wait_until("dwcs status lists the running set", 600, || {
        if let Some(s) = running_set(&lab, 4) {
            listed = s;
            loaded = state();
        }
        !listed.is_null() || child.try_wait().unwrap().is_some()
    });
    let status = child.wait().unwrap();
    let cells = stored(&lab);
    assert!(status.success(), "{cells:#?}");
    assert!(!listed.is_null(), "dwcs status never listed the set");
    assert_eq!(loaded, "enabled", "schedlab's scheduler is loaded during the cell");
    assert_eq!(listed["policy"], "dwcs", "{listed}");
    let tasks = listed["tasks"].as_array().unwrap();
    assert!(tasks.iter().all(|t| t["x_cur"].is_u64() && t["y_cur"].is_u64()), "{listed}");
    assert!(tasks.iter().any(|t| t["deadline_ns"].as_u64().is_some()), "{listed}");
    let [(_, status, message, seen)] = &cells[..] else { panic!("one cell: {cells:#?}") };
    assert_eq!(status, "ok", "{message}");
    let workers = seen["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 4, "{seen}");
    assert!(workers.iter().all(|w| w["ext_enabled"] == true), "every task on sched_ext: {seen}");
    let l = &seen["loaded"];
    assert!(l["program"].as_str().unwrap().ends_with("schedlab-scx"), "{l}");
    assert!(l["ops"].as_str().unwrap().starts_with("schedlab"), "{l}");
    // Jobs, misses and violations per task, as the dispatcher by priorities stores them.
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let (rt, logs): (String, i64) = conn
        .query_row(
            "SELECT c.rt_json, (SELECT count(*) FROM jobs j WHERE j.cell_row = c.id) FROM cells c",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(logs, 4, "one job log per task");
    let rt: serde_json::Value = serde_json::from_str(&rt).unwrap();
    let d = &rt["dispatcher"];
    assert_eq!(d["policy"], "dwcs", "{d}");
    let tasks = d["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4, "{d}");
    for t in tasks {
        let released = t["released"].as_u64().unwrap();
        assert!(released >= 10, "8 s of periods of at most 500 ms: {t}");
        // A job released but not yet due at the end is neither met nor missed.
        let judged = t["completed"].as_u64().unwrap() + t["missed"].as_u64().unwrap();
        assert!(judged <= released && judged + 1 >= released, "{t}");
        assert!(t["completed"].as_u64().unwrap() > 0 && t["windows"].as_u64().unwrap() > 0, "{t}");
        assert!(t["window_violations"].is_u64(), "{t}");
    }
    // Raw demand is 1.45 CPUs: DWCS drops jobs, within the windows.
    assert!(tasks.iter().any(|t| t["missed"].as_u64().unwrap() > 0), "{d}");
    assert_clean();
}

/// Spawns `schedlab run` of `spec` and waits until schedlab-scx runs its set.
fn started_dwcs_scx(lab: &Lab, spec: &Path) -> std::process::Child {
    started(lab, spec, "schedlab-scx runs the set", 600, || {
        state() == "enabled"
            && processes("schedlab-scx").len() == 1
            && running_set(lab, 4).is_some()
    })
}

#[test]
fn in_a_sched_ext_guest_dwcs_scx_ctrl_c_mid_cell_stops_schedlab_scx_and_disables_sched_ext() {
    let lab = guest_lab!("schedlab-scx");
    let spec = dwcs_scx_set(&lab, 60, None);
    interrupted(started_dwcs_scx(&lab, &spec));
    restored(&lab);
}

/// The `stop_scheduler` entries of the restore journals under `lab`'s state directory: pids.
fn journaled_schedulers(lab: &Lab) -> Vec<i64> {
    let mut pids = Vec::new();
    let mut dirs = vec![lab.path("state")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                if v["undo"] == "stop_scheduler" {
                    pids.extend(v["pid"].as_i64());
                }
            }
        }
    }
    pids
}

#[test]
fn in_a_sched_ext_guest_dwcs_scx_kill_9_mid_cell_then_restore_leaves_sched_ext_disabled() {
    let lab = guest_lab!("schedlab-scx");
    let spec = dwcs_scx_set(&lab, 60, None);
    let mut child = started_dwcs_scx(&lab, &spec);
    let scx = processes("schedlab-scx");
    assert!(
        journaled_schedulers(&lab).contains(&(scx[0] as i64)),
        "schedlab-scx (pid {}) is in the restore journal: {:?}",
        scx[0],
        journaled_schedulers(&lab)
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    child.kill().unwrap();
    child.wait().unwrap();
    restored(&lab);
    assert_clean();
}

#[test]
fn in_a_sched_ext_guest_dwcs_scx_decides_as_schedlab_policy_and_bpf_runs_only_the_chosen() {
    let lab = guest_lab!("schedlab-scx");
    let spec = dwcs_scx_set(&lab, 8, None);
    let logs = lab.path("scx-log");
    std::fs::create_dir(&logs).unwrap();
    let out = lab
        .cmd(&["run", spec.to_str().unwrap(), "-q"])
        .env("SCHEDLAB_SCX_LOG", &logs)
        .output()
        .unwrap();
    let cells = stored(&lab);
    assert!(out.status.success(), "{}\n{cells:#?}", String::from_utf8_lossy(&out.stderr));
    // One partition: the whole set on one CPU, its dispatcher's calls in cpu<N>.json.
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("cpu"))
        .collect();
    let [file] = &files[..] else { panic!("one dispatcher's log: {files:?}") };
    let log: schedlab_dispatch::CallLog =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(file.file_name().unwrap().to_string_lossy(), format!("cpu{}.json", log.cpu));
    assert_eq!(log.lost, 0, "the whole cell is logged");
    assert_eq!(log.tasks.len(), 4);
    let schedlab_dispatch::DispatchPolicy::Dwcs { work_conserving } = log.policy else {
        panic!("{:?}", log.policy)
    };
    use schedlab_dispatch::Call;
    let count = |f: &dyn Fn(&Call) -> bool| log.calls.iter().filter(|c| f(c)).count();
    let releases = count(&|c| matches!(c, Call::Release { .. }));
    let done = count(&|c| matches!(c, Call::Stop { why: schedlab_policy::Stop::Done, .. }));
    let picks = count(&|c| matches!(c, Call::Pick { task: Some(_), .. }));
    assert!(releases >= 40 && done >= 10 && picks >= 10, "{releases} {done} {picks}");
    // The same releases and completions through schedlab-policy's DWCS: the same task picked
    // at every decision.
    let mut dwcs = schedlab_policy::dwcs::Dwcs::new(work_conserving);
    let decisions = log.replay(&mut dwcs).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(decisions >= picks);
    // Per task, the stored jobs finished on time or late are those the log saw finish while
    // the task was chosen: no job was done without the CPU.
    let rt = stored_rt(&lab);
    for t in rt["dispatcher"]["tasks"].as_array().unwrap() {
        let i = t["slot"].as_u64().unwrap() as usize;
        let finished = count(
            &|c| matches!(c, Call::Stop { task, why: schedlab_policy::Stop::Done, .. } if *task == i),
        );
        let stored = t["completed"].as_u64().unwrap() + t["late_completions"].as_u64().unwrap();
        assert_eq!(finished as u64, stored, "task {i}: {t}");
    }
    // The BPF side dispatched, as the chosen one, exactly the tasks the dispatcher picked.
    let bpf: serde_json::Value =
        serde_json::from_slice(&std::fs::read(logs.join("bpf.json")).unwrap()).unwrap();
    assert_eq!(bpf["unchosen_runs"], 0, "{bpf}");
    let tasks = bpf["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4, "{bpf}");
    let mut chosen_total = 0;
    for (i, t) in log.tasks.iter().enumerate() {
        let counted = tasks.iter().find(|c| c["pid"] == t.pid).unwrap_or_else(|| panic!("{bpf}"));
        let chosen = counted["chosen"].as_u64().unwrap();
        chosen_total += chosen;
        let picked = count(&|c| matches!(c, Call::Pick { task: Some(p), .. } if *p == i));
        assert_eq!(chosen > 0, picked > 0, "task {i}: picked {picked} times, {counted}");
    }
    assert_eq!(bpf["chosen_dispatches"], chosen_total, "only the workers were chosen: {bpf}");
    eprintln!(
        "dwcs-scx decisions: {} calls, {releases} releases, {done} completions, {picks} picks, \
         {decisions} decisions replayed alike; BPF: {bpf}",
        log.calls.len()
    );
    assert_clean();
}

#[test]
fn in_a_sched_ext_guest_dwcs_scx_overloaded_counts_violations_as_dwcs_status_showed_them() {
    let lab = guest_lab!("schedlab-scx");
    // U = 1.5, and even the windows' minimum demand is 3 x 0.5 x 3/4 = 1.125 of one CPU.
    // 20 s: each `dwcs status` the test polls with starts the debug binary, which takes
    // seconds in the guest (one TCG thread for both vCPUs).
    let spec = dwcs_scx_set(
        &lab,
        20,
        Some(
            "tasks = [\n  { c_ms = 100, t_ms = 200, x = 1, y = 4 },\n  { c_ms = 100, t_ms = 200, x = 1, y = 4 },\n  { c_ms = 100, t_ms = 200, x = 1, y = 4 },\n]\n",
        ),
    );
    let mut child = lab.cmd(&["run", spec.to_str().unwrap(), "-q"]).spawn().unwrap();
    let mut last = serde_json::Value::Null;
    wait_until("the run ends", 300, || {
        if let Some(s) = running_set(&lab, 3) {
            last = s;
        }
        child.try_wait().unwrap().is_some()
    });
    let status = child.wait().unwrap();
    let cells = stored(&lab);
    assert!(status.success(), "{cells:#?}");
    assert!(!last.is_null(), "dwcs status never showed the set running");
    let rt = stored_rt(&lab);
    let stored_tasks = rt["dispatcher"]["tasks"].as_array().unwrap();
    assert_eq!(stored_tasks.len(), 3, "{rt}");
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
    let total = |k: &str| stored_tasks.iter().map(|t| n(t, k)).sum::<u64>();
    assert!(total("missed") > 0, "jobs were dropped: {rt}");
    assert!(total("window_violations") > 0, "windows were violated: {rt}");
    eprintln!("dwcs-scx overload: last shown {last}\nstored {}", rt["dispatcher"]["tasks"]);
    for shown in last["tasks"].as_array().unwrap() {
        let slot = n(shown, "slot");
        let t = stored_tasks.iter().find(|t| n(t, "slot") == slot).unwrap();
        // Each job judged (met or missed) after the last sample closes at most one window and
        // adds at most one DWCS violation; the job live at the end is judged when it ends.
        let judged = |v: &serde_json::Value| n(v, "completed") + n(v, "missed");
        let after = judged(t) - judged(shown);
        assert!(2 * n(shown, "released") >= n(t, "released"), "a late sample: {shown} {t}");
        for (stored_v, shown_v) in [
            (n(t, "window_violations"), n(shown, "window_violations")),
            (n(&t["policy"], "violations"), n(shown, "violations")),
        ] {
            assert!(
                stored_v >= shown_v && stored_v - shown_v <= after,
                "task {slot}: stored {stored_v}, shown {shown_v}, {after} jobs judged after: {shown} {t}"
            );
        }
    }
    assert_clean();
}

#[test]
fn report_against_the_simulation_puts_the_dispatcher_sched_ext_and_simulation_side_by_side() {
    let lab = Lab::new();
    let text = std::fs::read_to_string(dwcs_scx_example())
        .unwrap()
        .replace("[\"dwcs\", \"dwcs-scx\"]", "[\"dwcs\", \"dwcs-scx\", \"edf\", \"edf-scx\"]")
        .replace("duration_s = 10", "duration_s = 4");
    let spec = lab.spec("s.toml", &text);
    for _ in 0..2 {
        lab.ok(&["simulate", spec.to_str().unwrap(), "-q"]);
    }
    let out = lab.path("rep");
    lab.ok(&["report", "1", "--compare", "2", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let at = html.find("id=\"drivers\"").expect("a three-driver table");
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    let cells = |row: &str| -> Vec<String> {
        row.split("<td")
            .skip(1)
            .map(|c| c[c.find('>').unwrap() + 1..c.find("</td>").unwrap()].to_string())
            .collect()
    };
    let header: Vec<&str> =
        table.split("<th>").skip(1).map(|h| &h[..h.find("</th>").unwrap()]).collect();
    assert_eq!(
        header,
        [
            "set",
            "policy",
            "figure",
            "user-space dispatcher (run 1)",
            "sched_ext scheduler (run 1)",
            "simulation (run 2)"
        ]
    );
    let rows: Vec<Vec<String>> = table.split("<tr").skip(2).map(cells).collect();
    assert_eq!(rows.len(), 10, "five figures of one set under two policies: {rows:?}");
    for policy in ["dwcs", "edf"] {
        let of = |figure: &str| {
            rows.iter()
                .find(|r| r[0] == "canonical/n4" && r[1] == policy && r[2] == figure)
                .unwrap_or_else(|| panic!("{policy} {figure}: {rows:?}"))
        };
        // Three simulations of one policy: the same figures in every column.
        for figure in ["jobs", "missed [%]", "sliding viol./proc"] {
            let r = of(figure);
            assert!(r[3] != "-" && r[3] == r[4] && r[4] == r[5], "{r:?}");
        }
    }
    // DWCS drops jobs on this set (raw demand 1.45), within its windows.
    assert_ne!(rows.iter().find(|r| r[1] == "dwcs" && r[2] == "missed [%]").unwrap()[3], "0.00");
}
