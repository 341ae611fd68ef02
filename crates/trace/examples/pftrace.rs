//! What `schedlab trace export` costs on a capture: decode it and write it as a Perfetto
//! trace (no names or marks: those are a few hundred packets), timed in this thread's CPU
//! time, and the file's size.
//!
//!     cargo run --release -p schedlab-trace --example pftrace -- CAPTURE.sltrace OUT.pftrace

use schedlab_testkit::thread_cpu_s;
use schedlab_trace::perfetto::{self, Export, TraceMachine};
use schedlab_trace::Raw;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (input, output) = (
        args.next().expect("usage: pftrace CAPTURE OUT"),
        args.next().expect("usage: pftrace CAPTURE OUT"),
    );
    let t = thread_cpu_s();
    let raw = Raw::read_from(std::io::BufReader::new(std::fs::File::open(&input)?))?;
    let read = thread_cpu_s() - t;
    let t = thread_cpu_s();
    let decoded = schedlab_trace::decode(&raw).map_err(std::io::Error::other)?;
    let decode = thread_cpu_s() - t;
    let cpus: Vec<u32> = raw.cpus.iter().map(|c| c.cpu).collect();
    let x = Export {
        events: &decoded.events,
        cpus: &cpus,
        boot_offset_ns: 0,
        clock_at_ns: raw.start_ns,
        realtime_at_ns: None,
        machine: TraceMachine::default(),
        processes: &[],
        tracks: &[],
    };
    let t = thread_cpu_s();
    let mut bytes = Vec::new();
    let sum = perfetto::write(&x, &mut bytes)?;
    let write = thread_cpu_s() - t;
    std::fs::write(&output, &bytes)?;
    println!(
        "{input}: {} events ({} sched_switch); CPU s: read {read:.3}, decode {decode:.3}, write {write:.3}; {output}: {} bytes ({:.1} per event)",
        decoded.events.len(),
        sum.switches.values().sum::<u64>(),
        bytes.len(),
        bytes.len() as f64 / decoded.events.len() as f64
    );
    Ok(())
}
