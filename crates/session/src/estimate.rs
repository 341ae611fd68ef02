//! What `schedlab check` estimates of a plan before it runs: each group's row of the plan's
//! table, the work a run measures, and the cells the watchdog would stop.

use schedlab_spec::{Plan, Spec, Workload};

/// A plan's estimated cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// One row per group of each cell, in the plan table's columns.
    pub rows: Vec<Vec<String>>,
    /// CPU-seconds of measured work, every repetition and warm-up.
    pub cpu_total: f64,
    /// Synchronous writes of the measured work.
    pub writes_total: u64,
    /// Worker processes started.
    pub procs_total: u64,
    /// Cells whose estimated wall time per repetition reaches the watchdog: (cell, key, s).
    pub too_long: Vec<(u32, String, f64)>,
}

/// Estimates `plan` at `ns` per pi iteration and `hash_ns` per hash round on `cpus` CPUs.
pub fn estimate(plan: &Plan, ns: f64, hash_ns: f64, cpus: f64) -> Estimate {
    let per_rep = (plan.repetitions + plan.warmup) as u64;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let (mut cpu_total, mut writes_total, mut procs_total) = (0.0, 0u64, 0u64);
    // Cells whose estimated wall time per repetition reaches the watchdog: (cell, key, s).
    let mut too_long: Vec<(u32, String, f64)> = Vec::new();
    for c in &plan.cells {
        let (mut cell_cpu_s, mut longest_process_s) = (0.0f64, 0.0f64);
        for (gi, g) in c.groups.iter().enumerate() {
            let per_process_ns = match g.workload {
                Workload::Pi { iterations } | Workload::Mixed { iterations, .. } => {
                    iterations as f64 * ns
                }
                Workload::Hash { hashes } => hashes as f64 * hash_ns,
                Workload::Periodic(ref p) => {
                    p.tasks.iter().map(|t| p.jobs(t) as f64 * p.work_ns(t) as f64).sum::<f64>()
                        / p.tasks.len() as f64
                }
                _ => 0.0,
            };
            let cpu_s = per_process_ns * 1e-9 * g.processes as f64;
            let writes = g.workload.sync_writes() * g.processes as u64;
            if !g.background {
                cpu_total += cpu_s * per_rep as f64;
                writes_total += writes * per_rep;
                // A periodic set runs for its duration_s, which check_watchdog compares.
                if g.workload.periodic().is_none() {
                    cell_cpu_s += cpu_s;
                    longest_process_s = longest_process_s.max(per_process_ns * 1e-9);
                }
                // schbench runs for its runtime, whatever its CPU time.
                if let Workload::Schbench(b) = &g.workload {
                    longest_process_s = longest_process_s.max(b.runtime_ms as f64 / 1e3);
                }
            }
            procs_total += g.processes as u64 * per_rep;
            let pol = match g.policy.class {
                cl if cl.is_rt() => {
                    format!("{} ({} prio {})", g.policy_name, cl.name(), g.policy.priority)
                }
                cl => format!(
                    "{} ({}{})",
                    g.policy_name,
                    cl.name(),
                    if g.policy.nice != 0 {
                        format!(" nice {}", g.policy.nice)
                    } else {
                        String::new()
                    } + &g
                        .policy
                        .slice_ns
                        .map(|ns| format!(" slice {} us", ns / 1000))
                        .unwrap_or_default()
                ),
            };
            let mut place = vec![format!("affinity {}", g.affinity.label())];
            if let Some(w) = g.cgroup.cpu_weight {
                place.push(format!("weight {w}"));
            }
            if let Some((q, p)) = g.cgroup.cpu_max {
                place.push(format!("max {q}/{p} us"));
            }
            if let Some(cs) = &g.cgroup.cpuset {
                place.push(format!("cpuset {}", schedlab_spec::cpulist::format(cs)));
            }
            rows.push(vec![
                if gi == 0 { c.index.to_string() } else { String::new() },
                if gi == 0 { c.key.clone() } else { String::new() },
                format!("{}{}", g.name, if g.background { " (background)" } else { "" }),
                format!("{} ({})", g.workload_name, g.workload.kind()),
                pol,
                g.processes.to_string(),
                place.join(", "),
                amount(&g.workload),
                if g.background { "until stopped".into() } else { format!("{cpu_s:.2}") },
                writes.to_string(),
            ]);
        }
        // No repetition ends before its longest process, nor before the cell's CPUs did its work.
        let wall_s = longest_process_s.max(cell_cpu_s / cpus);
        if wall_s >= plan.timeout.as_secs_f64() {
            too_long.push((c.index, c.key.clone(), wall_s));
        }
    }
    Estimate { rows, cpu_total, writes_total, procs_total, too_long }
}

/// One process's work in words.
fn amount(w: &Workload) -> String {
    match w {
        Workload::Pi { iterations } => format!("{iterations} iterations"),
        Workload::Mixed { iterations, write_every } => {
            format!("{iterations} iterations, O_SYNC write every {write_every}")
        }
        Workload::Copy { transfer_bytes, block_bytes, .. } => {
            format!("{transfer_bytes} B in {block_bytes} B O_SYNC writes")
        }
        Workload::Hash { hashes } => format!("{hashes} CityHash128 of 4 KiB"),
        Workload::Command { argv, .. } => format!("exec {}", argv.join(" ")),
        Workload::ParWrite(p) | Workload::ParRead(p) => {
            format!(
                "{} x {} B in {} thread(s), {} B per call, {}",
                p.files,
                p.file_bytes,
                p.threads,
                p.buffer_bytes,
                p.mode.name()
            )
        }
        Workload::Periodic(p) => format!(
            "one task each, {} body, {:.1} s, sum C/T {:.3}{}",
            p.body.name(),
            p.duration_ns as f64 / 1e9,
            p.deadline_bandwidth(),
            if p.scheduler.dispatched() {
                format!(", quantum {} ms", p.quantum_ns as f64 / 1e6)
            } else {
                String::new()
            }
        ),
        Workload::UdpFlood { packets, packet_bytes } => {
            format!("{packets} UDP datagrams of {packet_bytes} B over 127.0.0.1")
        }
        Workload::IoInterrupts { reads, read_bytes, file_bytes } => {
            format!("{reads} O_DIRECT reads of {read_bytes} B at random in a {file_bytes} B file")
        }
        Workload::Messaging(m) => format!(
            "{} groups of {} senders and {} receivers ({}), {} messages of {} B each over {}s",
            m.groups,
            m.fds,
            m.fds,
            if m.threads { "threads" } else { "processes" },
            m.loops,
            m.message_bytes,
            m.ipc.name()
        ),
        Workload::Pipe(p) => format!(
            "{} pair(s) of {} passing {} round trips over pipes",
            p.pairs,
            if p.threads { "threads" } else { "processes" },
            p.loops
        ),
        Workload::Schbench(b) => format!(
            "schbench for {:.1} s: {} message thread(s) x {} workers, {} operations over {} KiB, {} us sleep, {}",
            b.runtime_ms as f64 / 1e3,
            b.message_threads,
            if b.workers == 0 { "one per CPU".to_string() } else { b.workers.to_string() },
            b.operations,
            b.footprint_kb,
            b.sleep_us,
            if b.rps == 0 { "no rate limit".to_string() } else { format!("{} requests/s", b.rps) }
        ),
    }
}

/// The refusal of a spec whose cells `too_long` ([`Estimate::too_long`]) the watchdog would
/// stop in every repetition, located at the longest cell's first workload, as every
/// refusal of the spec is.
pub fn watchdog_refusal(spec: &Spec, too_long: &[(u32, String, f64)]) -> Option<crate::Error> {
    let plan = &spec.plan;
    let (cell, _, longest) = too_long.iter().max_by(|a, b| a.2.total_cmp(&b.2))?;
    let workload = plan.cells.iter().find(|c| c.index == *cell).and_then(|c| c.groups.first());
    let span = workload
        .and_then(|g| spec.locations.workloads.iter().find(|(w, _)| *w == g.workload_name))
        .map_or(spec.locations.matrix.clone(), |(_, s)| s.clone());
    let message = format!(
        "{} of {} cells would be stopped by the watchdog in every repetition (the longest needs about {:.0} s, the watchdog allows {:.0} s): lower --scale, or raise timeout_s (run --timeout)",
        too_long.len(),
        plan.cells.len(),
        longest,
        plan.timeout.as_secs_f64()
    );
    let e = schedlab_spec::SpecError::at(&plan.source_path, &spec.text, span, message);
    Some(crate::Error::refused(e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_schbench_cell_lasts_its_runtime_for_the_watchdog() {
        let text = "name = \"w\"\ntimeout_s = 10\n[matrix]\nworkload = [\"s\", \"t\"]\n\
                    [workloads.s]\nkind = \"schbench\"\nruntime_s = 30\n\
                    [workloads.t]\nkind = \"schbench\"\nruntime_s = 5\n";
        let spec = schedlab_spec::parse("w.toml", text).unwrap();
        let e = super::estimate(&spec.plan, 1.0, 1.0, 2.0);
        assert_eq!(e.too_long, [(0, "s/other/n1".to_string(), 30.0)]);
    }
}
