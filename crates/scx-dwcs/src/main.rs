//! schedlab-scx: schedlab's live DWCS/EDF dispatcher with its choice carried out by a
//! sched_ext scheduler of its own instead of SCHED_FIFO priorities (`scheduler = "dwcs-scx"`
//! or `"edf-scx"`).
//!
//! ```text
//! schedlab-scx REGION CONFIG_JSON OUT [REGION CONFIG_JSON OUT ...]
//! ```
//!
//! One triple per CPU partition, as the engine gives `schedlab __dispatch` one each: the
//! region the engine created, the dispatcher's configuration, and where its metrics go (JSON).
//! The BPF scheduler (src/bpf/main.bpf.c) is loaded once for all of them; each dispatcher
//! runs in a thread of its own ([`Dispatcher::run_with`]) with an [`Scx`] actuator, which
//! writes the chosen pid into the BPF side's `chosen[cpu]` (memory shared with the kernel).
//! The decisions, the status region (`schedlab dwcs status`) and the metrics are the
//! dispatcher's, exactly as under the priority actuator.
//!
//! The dispatchers run until their duration ends, or SIGINT/SIGTERM, or the kernel ejects
//! the BPF scheduler (then they stop and the exit reason is printed). Each writes its metrics
//! when it ends; the scheduler then stays loaded until SIGINT/SIGTERM (the engine stops it
//! after the cell's last worker is reaped, as it stops any sched_ext scheduler), and exits
//! at once with status 1 if a dispatcher failed. The scheduler unloads when the process
//! exits, however it exits.
//!
//! With `SCHEDLAB_SCX_LOG=DIR` in its environment it also writes, for a test to read,
//! `DIR/cpu<N>.json`, each dispatcher's policy calls ([`CallLog`]: the releases, completions
//! and drops it told the policy and every decision it got back), and `DIR/bpf.json`, the BPF
//! side's counters with each worker's dispatches as the chosen task and as a parked one.

mod bpf_skel {
    #![allow(clippy::all, missing_docs, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}
#[allow(dead_code, non_camel_case_types, non_upper_case_globals)]
mod bpf_intf {
    include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
}

use anyhow::{bail, Context, Result};
use bpf_skel::*;
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use schedlab_dispatch::{Actuator, CallLog, Config, Dispatcher, Metrics, Region};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// The environment variable naming the directory of the logs (see the crate's documentation).
const LOG_DIR: &str = "SCHEDLAB_SCX_LOG";

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// The actuator of one CPU: its slot of the BPF side's `chosen` array.
struct Scx<'a> {
    chosen: &'a AtomicU32,
}

impl Actuator for Scx<'_> {
    fn park(&self, pid: i32) -> std::io::Result<()> {
        // Only the chosen one is running: parking another changes nothing.
        let _ = self.chosen.compare_exchange(pid as u32, 0, Ordering::Release, Ordering::Relaxed);
        Ok(())
    }

    fn grant(&self, pid: i32) -> std::io::Result<()> {
        // The dispatcher holds this CPU (SCHED_FIFO 98) while it decides; when it sleeps,
        // the CPU's dispatch reads the new choice. A worker that wakes chosen kicks the CPU.
        self.chosen.store(pid as u32, Ordering::Release);
        Ok(())
    }
}

/// One CPU partition: its dispatcher and where its metrics go.
struct Partition {
    cpu: u32,
    pids: Vec<i32>,
    dispatcher: Dispatcher,
    out: String,
}

fn partitions(args: &[String]) -> Result<Vec<Partition>> {
    if args.is_empty() || !args.len().is_multiple_of(3) {
        bail!("usage: schedlab-scx REGION CONFIG_JSON OUT [REGION CONFIG_JSON OUT ...]");
    }
    args.chunks(3)
        .map(|a| {
            let cfg: Config = serde_json::from_str(&a[1]).context("dispatcher configuration")?;
            let region = Region::open(Path::new(&a[0])).with_context(|| a[0].clone())?;
            let (cpu, pids) = (cfg.cpu, cfg.tasks.iter().map(|t| t.pid).collect());
            let dispatcher = Dispatcher::new(cfg, region)?;
            Ok(Partition { cpu, pids, dispatcher, out: a[2].clone() })
        })
        .collect()
}

/// Writes one dispatcher's policy calls to `dir/cpu<N>.json`.
fn write_log(dir: &Path, log: &CallLog) -> Result<()> {
    let path = dir.join(format!("cpu{}.json", log.cpu));
    std::fs::write(&path, serde_json::to_vec(log)?).with_context(|| path.display().to_string())
}

fn main() {
    // SAFETY: die with the engine; clear an inherited signal mask; handlers that only store
    // to an atomic.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("schedlab-scx: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<()> {
    if args == ["--load-only"] {
        // Loads the BPF side (the verifier's whole log on a refusal) and attaches nothing:
        // whether this kernel takes the scheduler.
        let mut object = MaybeUninit::<OpenObject>::uninit();
        let open_opts = None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>;
        let mut skel =
            scx_ops_open!(BpfSkelBuilder::default(), &mut object, schedlab_ops, open_opts)?;
        let _skel = scx_ops_load!(skel, schedlab_ops, uei)?;
        eprintln!("schedlab-scx: the kernel loaded the BPF side");
        return Ok(());
    }
    let parts = partitions(args)?;
    let log_dir = std::env::var_os(LOG_DIR).map(std::path::PathBuf::from);
    let mut object = MaybeUninit::<OpenObject>::uninit();
    let open_opts = None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>;
    let mut skel = scx_ops_open!(BpfSkelBuilder::default(), &mut object, schedlab_ops, open_opts)?;
    let mut skel = scx_ops_load!(skel, schedlab_ops, uei)?;
    for p in &parts {
        for &pid in &p.pids {
            skel.maps
                .controlled
                .update(&(pid as u32).to_ne_bytes(), &p.cpu.to_ne_bytes(), MapFlags::ANY)
                .with_context(|| format!("registering worker {pid} of CPU {}", p.cpu))?;
            skel.maps
                .dispatched
                .update(&(pid as u32).to_ne_bytes(), &[0u8; 16], MapFlags::ANY)
                .with_context(|| format!("counting worker {pid}'s dispatches"))?;
        }
    }
    let link = scx_ops_attach!(skel, schedlab_ops)?;
    eprintln!("schedlab-scx: loaded, {} dispatcher(s)", parts.len());
    let workers: Vec<(u32, i32)> =
        parts.iter().flat_map(|p| p.pids.iter().map(move |&pid| (p.cpu, pid))).collect();
    let chosen = skel.maps.bss_data.as_mut().context("no .bss")?.chosen.as_mut_ptr();
    let results: Vec<(String, Result<Metrics>)> = std::thread::scope(|s| {
        let threads: Vec<_> = parts
            .into_iter()
            .map(|p| {
                // SAFETY: chosen[] lives as long as the skeleton, which outlives this scope;
                // the kernel and this thread only ever access its u32s atomically; cpu is
                // below MAX_CPUS (checked).
                let slot = (p.cpu < bpf_intf::consts_MAX_CPUS)
                    .then(|| unsafe { AtomicU32::from_ptr(chosen.add(p.cpu as usize)) });
                let out = p.out.clone();
                let log_dir = log_dir.as_deref();
                let handle = s.spawn(move || -> Result<Metrics> {
                    let chosen = slot.context("CPU number beyond the BPF side's MAX_CPUS")?;
                    let actuator = Scx { chosen };
                    let run = match log_dir {
                        Some(dir) => p
                            .dispatcher
                            .run_logged(&STOP, &actuator)
                            .map(|(m, log)| (m, Some((dir, log)))),
                        None => p.dispatcher.run_with(&STOP, &actuator).map(|m| (m, None)),
                    };
                    // One dispatcher failing stops the others: the cell has failed.
                    if run.is_err() {
                        STOP.store(true, Ordering::Relaxed);
                    }
                    let (metrics, log) = run?;
                    if let Some((dir, log)) = log {
                        write_log(dir, &log)?;
                    }
                    Ok(metrics)
                });
                (out, handle)
            })
            .collect();
        while !threads.iter().all(|(_, h)| h.is_finished()) {
            if uei_exited!(&skel, uei) {
                STOP.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        threads
            .into_iter()
            .map(|(out, h)| (out, h.join().unwrap_or_else(|_| bail!("a dispatcher panicked"))))
            .collect()
    });
    let mut failed = Vec::new();
    for (out, r) in results {
        match r {
            Ok(m) => std::fs::write(&out, serde_json::to_vec(&m)?).with_context(|| out.clone())?,
            Err(e) => failed.push(format!("{e:#}")),
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    while !STOP.load(Ordering::Relaxed) && !uei_exited!(&skel, uei) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let ejected = uei_exited!(&skel, uei);
    let bss = skel.maps.bss_data.as_ref().context("no .bss")?;
    eprintln!(
        "schedlab-scx: dispatches: {} chosen, {} fair, {} parked; {} kicks, {} wrong runs, {} unchosen runs",
        bss.nr_chosen_dispatches,
        bss.nr_fair_dispatches,
        bss.nr_parked_dispatches,
        bss.nr_kicks,
        bss.nr_wrong_runs,
        bss.nr_unchosen_runs
    );
    if let Some(dir) = &log_dir {
        let tasks: Vec<serde_json::Value> = workers
            .iter()
            .map(|&(cpu, pid)| {
                let count = skel
                    .maps
                    .dispatched
                    .lookup(&(pid as u32).to_ne_bytes(), MapFlags::ANY)
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                let word = |i: usize| {
                    count.get(i * 8..i * 8 + 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                };
                serde_json::json!({ "cpu": cpu, "pid": pid, "chosen": word(0), "parked": word(1) })
            })
            .collect();
        let counters = serde_json::json!({
            "chosen_dispatches": bss.nr_chosen_dispatches,
            "fair_dispatches": bss.nr_fair_dispatches,
            "parked_dispatches": bss.nr_parked_dispatches,
            "kicks": bss.nr_kicks,
            "wrong_runs": bss.nr_wrong_runs,
            "unchosen_runs": bss.nr_unchosen_runs,
            "tasks": tasks,
        });
        let path = dir.join("bpf.json");
        std::fs::write(&path, serde_json::to_vec(&counters)?)
            .with_context(|| path.display().to_string())?;
    }
    drop(link);
    let exit = uei_report!(&skel, uei);
    if ejected {
        bail!("the kernel stopped the sched_ext scheduler during the run: {exit:?}");
    }
    Ok(())
}
