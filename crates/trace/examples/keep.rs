//! What keeping a capture costs at each zstd level: size and time to compress, and time to
//! read it back (decompress and decode), for a capture file (SLTRACE1) or a kept one
//! (its zstd frame, as `SELECT data FROM trace_parts` gives it). Times are this thread's CPU
//! time.
//!
//!     cargo run --release -p schedlab-trace --example keep -- FILE [LEVEL...]

use schedlab_testkit::thread_cpu_s;
use schedlab_trace::Raw;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: keep FILE [LEVEL...]");
    let levels: Vec<i32> = args.map(|l| l.parse().expect("a zstd level")).collect();
    let levels = if levels.is_empty() { vec![1, 3, 6, 9] } else { levels };
    let bytes = std::fs::read(&path)?;
    let raw = if bytes.starts_with(b"SLTRACE1") {
        Raw::read_from(bytes.as_slice())?
    } else {
        Raw::read_from(zstd::stream::Decoder::new(bytes.as_slice())?)?
    };
    let mut file = Vec::new();
    raw.write_to(&mut file)?;
    let t = thread_cpu_s();
    let events = schedlab_trace::decode(&raw).map_err(std::io::Error::other)?.events.len();
    let decode_s = thread_cpu_s() - t;
    println!(
        "{path}: {events} events, {} bytes of capture file ({:.1} bytes per event), decode {decode_s:.3} s of CPU",
        file.len(),
        file.len() as f64 / events as f64
    );
    println!(
        "level | compressed bytes | ratio | compress, CPU s (MB/s) | decompress, CPU s (MB/s)"
    );
    for level in levels {
        let t = thread_cpu_s();
        let z = zstd::stream::encode_all(file.as_slice(), level)?;
        let c = thread_cpu_s() - t;
        let t = thread_cpu_s();
        let back = zstd::stream::decode_all(z.as_slice())?;
        let d = thread_cpu_s() - t;
        assert_eq!(back.len(), file.len());
        let mb = file.len() as f64 / 1e6;
        println!(
            "{level} | {} | {:.1} | {c:.3} ({:.0}) | {d:.3} ({:.0})",
            z.len(),
            file.len() as f64 / z.len() as f64,
            mb / c,
            mb / d
        );
    }
    Ok(())
}
