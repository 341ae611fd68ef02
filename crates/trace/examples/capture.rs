//! Captures the scheduler's events while a command runs, the way a traced cell is captured,
//! and prints what was read and lost; `-o FILE` keeps the capture (the bench's fixture).
//!
//!   capture [--buffer-kb N] [--block] [--reader-nice N | --reader-fifo P] [-o FILE] -- COMMAND [ARGS...]

use schedlab_sys::journal::{state_dir, Journal};
use schedlab_trace::capture::ReaderPolicy;
use schedlab_trace::{cell_trace, decode, Capture, CaptureOptions, Tracefs};
use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut opts = CaptureOptions::default();
    let mut out = None;
    let mut cmd = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--buffer-kb" => {
                opts.settings.buffer_kb = args.next().ok_or("--buffer-kb N")?.parse()?
            }
            "--block" => opts.settings.block = true,
            "--reader-nice" => {
                opts.reader =
                    ReaderPolicy::Other { nice: args.next().ok_or("--reader-nice N")?.parse()? }
            }
            "--reader-fifo" => {
                opts.reader =
                    ReaderPolicy::Fifo { priority: args.next().ok_or("--reader-fifo P")?.parse()? }
            }
            "-o" => out = Some(args.next().ok_or("-o FILE")?),
            "--" => {
                cmd = args.by_ref().collect();
                break;
            }
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    if cmd.is_empty() {
        return Err(
            "usage: capture [--buffer-kb N] [--block] [-o FILE] -- COMMAND [ARGS...]".into()
        );
    }
    let mut journal = Journal::create(&state_dir())?;
    let tfs = Tracefs::find_or_mount(&Default::default(), &mut journal)?;
    let cap = Capture::start(&tfs, &mut journal, &opts)?;
    let child = Command::new(&cmd[0]).args(&cmd[1..]).spawn();
    let usage = child.as_ref().ok().map(|c| {
        let (mut status, pid) = (0, c.id() as i32);
        // SAFETY: rusage is plain data that wait4 fills.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
        (pid, secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_nivcsw)
    });
    let raw = cap.stop(&mut journal)?;
    let errors = journal.close();
    let t = std::time::Instant::now();
    let d = decode(&raw)?;
    let took = t.elapsed();
    println!(
        "{} events, {:.1} MB of pages over {} CPUs in {:.2} s; lost {} (counters), {} pages flagged; decoded in {:.3} s",
        d.events.len(),
        raw.bytes() as f64 / 1e6,
        raw.cpus.len(),
        (raw.stop_ns - raw.start_ns) as f64 / 1e9,
        raw.lost(),
        d.stats.missed_pages,
        took.as_secs_f64()
    );
    if let Some((pid, cpu_s, nivcsw)) = usage {
        let cell = cell_trace(&raw, &d, &[pid], &[std::process::id() as i32], None);
        let w = &cell.workers[0];
        println!(
            "  command (pid {pid}, its threads and children): wait4 user+sys {cpu_s:.4} s, trace run {:.4} s; ru_nivcsw {nivcsw}, trace involuntary {} {:?}; runnable {:.4} s, blocked {:.4} s; {} switches not in the trace",
            w.run_s, w.involuntary, w.preempted_by, w.runnable_s, w.blocked_s, cell.untraced_switches
        );
    }
    for c in &raw.cpus {
        println!("  cpu{}: {} pages, {:?}", c.cpu, c.pages.len() / raw.page_size, c.stats);
    }
    if let Some(path) = out {
        raw.write_to(std::io::BufWriter::new(std::fs::File::create(&path)?))?;
        println!("wrote {path}");
    }
    for e in errors {
        eprintln!("could not undo {e}");
    }
    child?;
    Ok(())
}
