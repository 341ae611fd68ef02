//! Reads a capture written by the `capture` example and prints its events one a line, as
//! `trace-cmd report` does (the bench compares the two), or with `--summary` counts by event
//! and the tasks that switched most.
//!
//!   report [--summary] FILE

use schedlab_trace::decode::{comm_str, EventKind};
use schedlab_trace::{decode, Raw};
use std::collections::HashMap;
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let summary = args.iter().any(|a| a == "--summary");
    let path =
        args.iter().find(|a| !a.starts_with("--")).ok_or("usage: report [--summary] FILE")?;
    let raw = Raw::read_from(std::io::BufReader::new(std::fs::File::open(path)?))?;
    let d = decode(&raw)?;
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out.lock());
    if summary {
        let mut kinds: HashMap<&str, u64> = HashMap::new();
        let mut switches: HashMap<String, u64> = HashMap::new();
        for e in &d.events {
            if let EventKind::Switch(s) = &e.kind {
                *switches.entry(comm_str(&s.next_comm).into_owned()).or_default() += 1;
            }
            let k = e.kind.name();
            *kinds.entry(k).or_default() += 1;
        }
        let mut kinds: Vec<_> = kinds.into_iter().collect();
        kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        writeln!(
            out,
            "{} events over {:.2} s; {:?}",
            d.events.len(),
            (raw.stop_ns - raw.start_ns) as f64 / 1e9,
            d.stats
        )?;
        for (k, n) in kinds {
            writeln!(out, "  {k:20} {n}")?;
        }
        let mut sw: Vec<_> = switches.into_iter().collect();
        sw.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        writeln!(out, "switched to most:")?;
        for (c, n) in sw.iter().take(15) {
            writeln!(out, "  {c:20} {n}")?;
        }
        return Ok(());
    }
    for e in &d.events {
        let (s, ns) = (e.ts / 1_000_000_000, e.ts % 1_000_000_000);
        write!(out, "[{:03}] {s}.{ns:09}: ", e.cpu)?;
        match &e.kind {
            EventKind::Switch(x) => writeln!(
                out,
                "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={:#x} ==> next_comm={} next_pid={} next_prio={}",
                comm_str(&x.prev_comm),
                x.prev_pid,
                x.prev_prio,
                x.prev_state,
                comm_str(&x.next_comm),
                x.next_pid,
                x.next_prio
            )?,
            EventKind::Waking(w) => writeln!(out, "sched_waking: pid={} target_cpu={:03}", w.pid, w.target_cpu)?,
            EventKind::Wakeup(w) => writeln!(out, "sched_wakeup: pid={} target_cpu={:03}", w.pid, w.target_cpu)?,
            EventKind::WakeupNew(w) => writeln!(out, "sched_wakeup_new: pid={} target_cpu={:03}", w.pid, w.target_cpu)?,
            EventKind::Migrate { pid, orig_cpu, dest_cpu } => {
                writeln!(out, "sched_migrate_task: pid={pid} orig_cpu={orig_cpu} dest_cpu={dest_cpu}")?
            }
            EventKind::Fork { parent, child } => writeln!(out, "sched_process_fork: pid={parent} child_pid={child}")?,
            EventKind::Exec { pid, filename } => writeln!(out, "sched_process_exec: filename={filename} pid={pid}")?,
            EventKind::Exit { pid } => writeln!(out, "sched_process_exit: pid={pid}")?,
            EventKind::BlockIssue(b) | EventKind::BlockComplete(b) => writeln!(
                out,
                "{}: {},{} {} {} + {}",
                e.kind.name(),
                b.dev >> 20,
                b.dev & ((1 << 20) - 1),
                String::from_utf8_lossy(&b.rwbs[..b.rwbs.iter().position(|c| *c == 0).unwrap_or(b.rwbs.len())]),
                b.sector,
                b.nr_sector
            )?,
            EventKind::Lost { count } => writeln!(out, "LOST {count:?} EVENTS")?,
        }
    }
    out.flush()?;
    Ok(())
}
