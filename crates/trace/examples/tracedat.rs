//! Writes a capture (the `capture` example's file) as trace-cmd's trace.dat, for
//! `trace-cmd report` or KernelShark.
//!
//!   tracedat IN.sltrace OUT.dat

use schedlab_trace::{decode, tracedat, Raw};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = &args[..] else {
        return Err("usage: tracedat IN.sltrace OUT.dat".into());
    };
    let raw = Raw::read_from(std::io::BufReader::new(std::fs::File::open(input)?))?;
    let names = tracedat::names(&decode(&raw)?);
    tracedat::write(&raw, &names, std::io::BufWriter::new(std::fs::File::create(output)?))?;
    Ok(())
}
