//! The work each worker does, as plain functions that report the work units done.
//!
//! Setup (opening and creating files) is separate from the work itself so the engine
//! can do it before the release and measure only the work. Nothing here chooses a
//! scheduling policy.
#![deny(missing_docs)]

mod bench;
pub mod calibrate;
mod flood;
mod hash;
mod io;
mod irq;
mod parallel;
mod pi;
mod probe;

pub use bench::{matrix_size, messaging, pipe_pingpong, schbench, MessagingOutcome, PipeOutcome};
pub use flood::{udp_flood, FloodOutcome, UdpFlood};
pub use hash::{hash, HashOutcome, HASH_BUFFER};
pub use io::{copy, make_input, CopyFiles};
pub use irq::{io_interrupts, IrqOutcome, IrqReader};
pub use parallel::{
    make_read_inputs, par_read, par_write, read_inputs_ready, AlignedBuf, ParPrepared,
};
pub use pi::{mixed, pi, PiOutcome};
pub use probe::{CpuSeen, NoProbe, Probe};

/// A fresh directory for one unit test under the temp dir (`schedlab-<tag>-<pid>`).
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
