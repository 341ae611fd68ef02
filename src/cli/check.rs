//! `schedlab check`: validate a spec and print the plan without running anything.

use super::common::{bad_input, load_spec};
use comfy_table::{presets, Table};
use schedlab_spec::Workload;
use schedlab_sys::{env, Root};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `schedlab check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Experiment file (TOML).
    pub file: PathBuf,
    /// Multiply every work amount by this factor.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Override the number of measured repetitions.
    #[arg(long)]
    pub repetitions: Option<u32>,
}

/// Nanoseconds per pi iteration on this machine, from a short calibration run.
fn pi_ns_per_iteration() -> f64 {
    let n = 5_000_000;
    let t = std::time::Instant::now();
    std::hint::black_box(schedlab_workloads::pi(n, 1, 0));
    t.elapsed().as_nanos() as f64 / n as f64
}

fn amount(w: &Workload) -> String {
    match w {
        Workload::Pi { iterations } => format!("{iterations} iterations"),
        Workload::Mixed { iterations, write_every } => format!("{iterations} iterations, O_SYNC write every {write_every}"),
        Workload::Copy { transfer_bytes, block_bytes, .. } => format!("{transfer_bytes} B in {block_bytes} B O_SYNC writes"),
        Workload::Command { argv } => format!("exec {}", argv.join(" ")),
    }
}

/// Runs `schedlab check`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let spec = load_spec(Some(&a.file), a.scale, a.repetitions)?;
    let plan = &spec.plan;
    let caps = env::capabilities(&Root::default());
    let allowed = spec.check_allowed(&caps);
    let ns = pi_ns_per_iteration();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    let per_rep = (plan.repetitions + plan.warmup) as u64;
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED).set_header(vec![
        "cell",
        "key",
        "workload",
        "policy",
        "procs",
        "work per process",
        "est. CPU-s / rep",
        "sync writes / rep",
    ]);
    let (mut cpu_total, mut writes_total, mut procs_total) = (0.0, 0u64, 0u64);
    for c in &plan.cells {
        let iters = match c.workload {
            Workload::Pi { iterations } | Workload::Mixed { iterations, .. } => iterations as f64,
            _ => 0.0,
        };
        let cpu_s = iters * ns * 1e-9 * c.processes as f64;
        let writes = c.workload.sync_writes() * c.processes as u64;
        cpu_total += cpu_s * per_rep as f64;
        writes_total += writes * per_rep;
        procs_total += c.processes as u64 * per_rep;
        let pol = match c.policy.class {
            cl if cl.is_rt() => format!("{} ({} prio {})", c.policy_name, cl.name(), c.policy.priority),
            cl => format!(
                "{} ({}{})",
                c.policy_name,
                cl.name(),
                if c.policy.nice != 0 { format!(" nice {}", c.policy.nice) } else { String::new() }
            ),
        };
        t.add_row(vec![
            c.index.to_string(),
            c.key.clone(),
            format!("{} ({})", c.workload_name, c.workload.kind()),
            pol,
            c.processes.to_string(),
            amount(&c.workload),
            format!("{cpu_s:.2}"),
            writes.to_string(),
        ]);
    }
    println!(
        "{}: {} — {} cells x ({} repetitions + {} warm-up), order {:?}, seed {}, scale {}, watchdog {:.0} s per cell",
        plan.source_path,
        plan.name,
        plan.cells.len(),
        plan.repetitions,
        plan.warmup,
        plan.order,
        plan.seed,
        plan.scale,
        plan.timeout.as_secs_f64()
    );
    println!("{t}");
    println!(
        "total: {} worker processes, {:.1} CPU-seconds of pi work (>= {:.1} s wall on {} CPUs, at {:.2} ns/iteration measured now), {} synchronous writes",
        procs_total, cpu_total, cpu_total / cpus, cpus, ns, writes_total
    );
    if plan.cells.iter().any(|c| matches!(c.workload, Workload::Command { .. })) && plan.scale != 1.0 {
        println!("note: --scale does not change command workloads (schedlab cannot know their work amount)");
    }
    match allowed {
        Ok(()) => {
            println!("ok: the spec is valid and this process may apply every policy in it");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(bad_input(e.to_string())),
    }
}
