//! The work each worker does, as plain functions that report the work units done.
//!
//! Setup (opening and creating files) is separate from the work itself so the engine
//! can do it before the release and measure only the work. Nothing here chooses a
//! scheduling policy.
#![deny(missing_docs)]

mod hash;
mod io;
mod parallel;
mod pi;
mod probe;

pub use hash::{hash, HashOutcome, HASH_BUFFER};
pub use io::{copy, make_input, CopyFiles};
pub use parallel::{make_read_inputs, par_read, par_write, read_inputs_ready, AlignedBuf, ParPrepared};
pub use pi::{mixed, pi, PiOutcome};
pub use probe::{CpuSeen, NoProbe, Probe};
