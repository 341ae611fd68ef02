//! Helper processes for schedlab-dispatch's tests and benchmarks.
//!
//! `dispatch-helper worker REGION SLOT WORK_NS`: runs a worker ([`run_worker`]) and prints
//! its stats as JSON. `dispatch-helper dispatcher REGION CONFIG_JSON`: runs a dispatcher on
//! an existing region until its duration ends or SIGINT/SIGTERM, and prints its metrics as JSON.

use schedlab_dispatch::{run_worker, Config, Dispatcher, Region};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.get(1).map(String::as_str) {
        Some("worker") if args.len() == 5 => worker(&args[2], &args[3], &args[4]),
        Some("dispatcher") if args.len() == 4 => dispatcher(&args[2], &args[3]),
        _ => {
            Err("usage: dispatch-helper worker REGION SLOT WORK_NS | dispatcher REGION CONFIG_JSON"
                .into())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dispatch-helper: {e}");
            ExitCode::FAILURE
        }
    }
}

fn worker(region: &str, slot: &str, work: &str) -> Result<(), Box<dyn std::error::Error>> {
    // The test that spawned us may die: take us with it.
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) };
    let slot: usize = slot.parse().map_err(|e| format!("slot {slot}: {e}"))?;
    let work: u64 = work.parse().map_err(|e| format!("work {work}: {e}"))?;
    let stats = run_worker(Path::new(region), slot, work)?;
    println!("{}", serde_json::to_string(&stats)?);
    Ok(())
}

fn dispatcher(region: &str, config: &str) -> Result<(), Box<dyn std::error::Error>> {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let cfg: Config = serde_json::from_str(config).map_err(|e| format!("config: {e}"))?;
    let region = Region::open(Path::new(region))?;
    let metrics = Dispatcher::new(cfg, region).and_then(|d| d.run(&STOP))?;
    println!("{}", serde_json::to_string(&metrics)?);
    Ok(())
}
