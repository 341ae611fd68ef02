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

#[test]
fn without_sched_ext_check_and_run_of_the_example_exit_2_naming_the_kernel_feature_and_change_nothing() {
    require!(!Path::new(SYSFS).exists(), "this kernel has sched_ext (the refusal is for kernels without it)");
    let lab = Lab::new();
    for cmd in ["check", "run"] {
        let out = lab.run(&[cmd, &example(), "--scale", "0.01"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("has no sched_ext: /sys/kernel/sched_ext is absent"), "{cmd}: {stderr}");
        assert!(stderr.contains("scx.toml:22:27"), "{cmd} points at the first scx scheduler: {stderr}");
    }
    assert!(!lab.db().exists(), "no database was made");
    let journals = std::fs::read_dir(lab.path("state")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(journals, 0, "no restore journal was written");
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
    assert!(out.status.success() || out.status.code() == Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let conn = rusqlite::Connection::open(lab.db()).unwrap();
    let cells: Vec<(Option<String>, String)> = conn
        .prepare("SELECT cpu_scheduler, status FROM cells ORDER BY cell_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(cells, [(Some("eevdf".into()), "ok".into()), (Some("scx_bpfland".into()), "failed".into())]);
}
