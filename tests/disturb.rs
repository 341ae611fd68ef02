//! Disturbance workloads as background load: a loopback UDP flood and O_DIRECT reads
//! (device interrupts) running while a measured pi group works.

use crate::util::{measuring, Lab};
use serde_json::Value;

fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

/// The workload detail of a stored process (`extra.detail`, exported as JSON text).
fn detail(r: &Value) -> Value {
    let extra: Value =
        serde_json::from_str(r["extra"].as_str().unwrap_or_else(|| panic!("extra in {r}")))
            .unwrap();
    extra["detail"].clone()
}

fn u(d: &Value, k: &str) -> u64 {
    d[k].as_u64().unwrap_or_else(|| panic!("{k} in {d}"))
}

/// Runs a cell of a measured pi group and a background group `group` doing `workload` (the
/// body of its `[workloads.bg]` table), in a lab of its own, and asserts what holds every time.
/// `timing` judges the background sample, its detail and the measured samples for what needs
/// the CPU in time (the background starting within its 200 ms lead, rates): it returns why
/// not, and the run is repeated under testkit's retry rule.
fn run_with_background<E: std::fmt::Display>(
    group: &str,
    workload: &str,
    mut timing: impl FnMut(&Value, &Value, &[Value]) -> Result<(), E>,
) {
    schedlab_testkit::in_some_attempt(&format!("background {group}"), 3, |_| {
        let lab = Lab::new();
        let path = lab.spec(
            "d.toml",
            &format!(
                "name = \"d\"\n[matrix]\nworkload = [\"cpu\"]\n[groups.{group}]\nworkload = \"bg\"\nbackground = true\n\
                 [workloads.cpu]\nkind = \"pi\"\niterations = 100_000_000\n[workloads.bg]\n{workload}"
            ),
        );
        lab.ok(&["run", path.to_str().unwrap(), "-q"]);
        let rows = lab.samples();
        let (bg, fg): (Vec<Value>, Vec<Value>) =
            rows.into_iter().partition(|r| r["background"] == true);
        assert_eq!(bg.len(), 1, "{bg:?}");
        assert!(!fg.is_empty());
        let b = bg.into_iter().next().unwrap();
        assert_eq!(b["group"], group, "{b}");
        assert_eq!(b["exit_code"], 0, "stopped with SIGTERM, it reports and exits cleanly: {b}");
        let last_fg = fg.iter().map(|r| f(r, "end_offset_s")).fold(0.0, f64::max);
        assert!(
            f(&b, "end_offset_s") >= last_fg,
            "background stops after the measured workers: {b}"
        );
        for r in &fg {
            assert_eq!(r["exit_code"], 0, "{r}");
            assert_eq!(f(r, "work_units"), 100_000_000.0, "{r}");
        }
        if f(&b, "start_offset_s") >= 0.0 {
            return Err(format!(
                "the background started after the release, its 200 ms lead lost: {b}"
            ));
        }
        timing(&b, &detail(&b), &fg).map_err(|e| e.to_string())
    });
}

#[test]
fn a_background_udp_flood_floods_until_the_measured_group_is_done() {
    // A flood's softirq load would disturb the real-time tests' measurements: take turns.
    let _one_at_a_time = measuring();
    run_with_background(
        "net",
        "kind = \"udp_flood\"\npackets = 5_000\npacket_bytes = 256\n",
        |b, d, _| {
            let (sent, received) = (u(d, "sent"), u(d, "received"));
            eprintln!("background flood: {d} in {:.3} s", f(b, "wall_s"));
            assert!(received > 0, "nothing arrived: {d}");
            assert!(sent >= received, "{d}");
            assert_eq!(u(d, "dropped"), sent - received, "{d}");
            assert_eq!(u(d, "bytes"), received * 256, "{d}");
            assert_eq!(f(b, "work_units"), sent as f64, "work units are datagrams sent: {b}");
            if sent > 5_000 {
                Ok(())
            } else {
                Err(format!("a background flood repeats its rounds until stopped, but sent only {sent}: {d}"))
            }
        },
    );
}

#[test]
fn background_io_interrupts_read_directly_and_raise_interrupts_in_the_cell() {
    let _one_at_a_time = measuring();
    run_with_background(
        "disk",
        "kind = \"io_interrupts\"\nreads = 2_000\nread_bytes = 4096\nfile_bytes = 16_777_216\n",
        |b, d, fg| {
            let reads = u(d, "reads");
            eprintln!(
                "background reads: {d} in {:.3} s; cell: {} interrupts in {:.3} s",
                f(b, "wall_s"),
                fg[0]["cell_interrupts"],
                f(&fg[0], "cell_makespan_s")
            );
            assert!(reads > 0, "{d}");
            assert_eq!(u(d, "bytes"), reads * 4096, "{d}");
            assert_eq!(f(b, "work_units"), reads as f64, "work units are reads: {b}");
            // The lab directory is on a disk here unless TMPDIR is a tmpfs: then buffered reads.
            if d["direct"] != true {
                assert!(d["fallback"].as_str().unwrap_or("").contains("O_DIRECT"), "{d}");
                return Ok(());
            }
            // Each direct read completes with the disk's interrupt: the cell's /proc/stat delta
            // holds at least (half) the reads the background did inside the measured window,
            // if the reader read at an even rate (timing: a starved reader catches up outside it).
            let in_window = reads as f64 * f(&fg[0], "cell_makespan_s") / f(b, "wall_s");
            let irqs = fg[0]["cell_interrupts"].as_u64().unwrap() as f64;
            if irqs >= 0.5 * in_window {
                Ok(())
            } else {
                Err(format!(
                    "{irqs} interrupts for about {in_window:.0} direct reads in the window"
                ))
            }
        },
    );
}

#[test]
fn simulate_refuses_disturbance_workloads_with_the_reason() {
    let lab = Lab::new();
    let spec = lab.spec(
        "s.toml",
        "name = \"s\"\n[matrix]\nworkload = [\"net\", \"disk\"]\n\
         [workloads.net]\nkind = \"udp_flood\"\n[workloads.disk]\nkind = \"io_interrupts\"\n",
    );
    let out = lab.run(&["simulate", spec.to_str().unwrap(), "--ns-per-iteration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("udp_flood is a disturbance workload") && err.contains("--skip-unsupported"),
        "{err}"
    );
    assert!(!lab.db().exists(), "nothing may be stored for refused input");
}
