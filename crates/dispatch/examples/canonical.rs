//! Runs the live DWCS dispatcher on a feasible canonical set and prints its metrics as JSON.
//!
//! `cargo run -p schedlab-dispatch --example canonical -- [SECONDS] [CPU] [WORK_MS]` (root).
//! Workers are the `dispatch-helper` binary next to this example's directory
//! (build it first: `cargo build -p schedlab-dispatch --bins`).
//! The set: C = 10 ms quantum; (T, x/y) = (20 ms, 1/2) x2, (40 ms, 1/3), (50 ms, 0/0):
//! minimum utilisation 0.867, raw demand 1.45 quanta per quantum.

use schedlab_dispatch::{Config, DispatchPolicy, Dispatcher, Region, TaskCfg};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;

const MS: u64 = 1_000_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let cpu: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let work: u64 = args.get(3).and_then(|s| s.parse::<u64>().ok()).unwrap_or(7) * MS;
    let exe = std::env::current_exe().unwrap();
    let helper = exe.parent().unwrap().parent().unwrap().join("dispatch-helper");
    let set = [(20 * MS, 1, 2), (20 * MS, 1, 2), (40 * MS, 1, 3), (50 * MS, 0, 0)];
    let dir =
        std::path::PathBuf::from(format!("/dev/shm/schedlab-canonical-{}", std::process::id()));
    let region = Region::create(&dir, cpu, set.len()).expect("region");
    let mut children = Vec::new();
    let mut tasks = Vec::new();
    for (slot, &(t, x, y)) in set.iter().enumerate() {
        let child = Command::new(&helper)
            .args(["worker", region.path().to_str().unwrap(), &slot.to_string(), &work.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", helper.display()));
        tasks.push(TaskCfg { pid: child.id() as i32, c_ns: 10 * MS, t_ns: t, d_ns: 0, x, y });
        children.push(child);
    }
    let mut cfg = Config::new(cpu, DispatchPolicy::Dwcs { work_conserving: true }, tasks);
    cfg.duration_ns = Some((secs * 1e9) as u64);
    let result = Dispatcher::new(cfg, region).and_then(|d| d.run(&AtomicBool::new(false)));
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(m) => println!("{}", serde_json::to_string_pretty(&m).unwrap()),
        Err(e) => {
            eprintln!("canonical: {e}");
            std::process::exit(1);
        }
    }
}
