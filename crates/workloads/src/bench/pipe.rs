//! `perf bench sched pipe`: two tasks pass a 4-byte word back and forth over two pipes,
//! `loops` round trips. In process mode the worker is one end of the first pair and forks
//! the other, as perf does; `pairs` pairs run at once. The time runs from before the tasks
//! are made to the last one's end, as perf's does.

use super::{join_all, read_exact, write_all, Task};
use schedlab_plan::PipeBench;
use std::io;
use std::os::fd::OwnedFd;
use std::time::Instant;

/// What one pipe run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PipeOutcome {
    /// The whole run, s.
    pub time_s: f64,
    /// Round trips over all pairs.
    pub round_trips: u64,
}

impl PipeOutcome {
    /// µs per round trip as one pair sees it (perf's `usecs/op`).
    pub fn us_per_op(&self, loops: u64) -> f64 {
        self.time_s * 1e6 / loops as f64
    }

    /// Round trips per second over all pairs (perf's `ops/sec` for one pair).
    pub fn ops_per_s(&self) -> f64 {
        self.round_trips as f64 / self.time_s
    }
}

/// The side that starts each round trip: writes, then waits for the answer.
fn ping(to: &OwnedFd, from: &OwnedFd, loops: u64) -> io::Result<()> {
    let mut w = [0u8; 4];
    for _ in 0..loops {
        write_all(to, &w)?;
        read_exact(from, &mut w)?;
    }
    Ok(())
}

/// The side that answers.
fn pong(from: &OwnedFd, to: &OwnedFd, loops: u64) -> io::Result<()> {
    let mut w = [0u8; 4];
    for _ in 0..loops {
        read_exact(from, &mut w)?;
        write_all(to, &w)?;
    }
    Ok(())
}

/// Runs the benchmark once.
pub fn pipe_pingpong(p: &PipeBench) -> io::Result<PipeOutcome> {
    let mut ends = Vec::with_capacity(p.pairs as usize);
    for _ in 0..p.pairs {
        let (a_r, a_w) = super::pipe()?;
        let (b_r, b_w) = super::pipe()?;
        ends.push(((a_w, b_r), (a_r, b_w)));
    }
    let loops = p.loops;
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(2 * p.pairs as usize);
    let mut mine = None;
    let mut made = Ok(());
    for (i, ((a_w, b_r), (a_r, b_w))) in ends.into_iter().enumerate() {
        let pong_task =
            Task::start(p.threads, &format!("pong-{i}"), move || pong(&a_r, &b_w, loops));
        match pong_task {
            Ok(t) => tasks.push(t),
            Err(e) => {
                made = Err(e);
                break;
            }
        }
        if i == 0 && !p.threads {
            mine = Some((a_w, b_r));
            continue;
        }
        match Task::start(p.threads, &format!("ping-{i}"), move || ping(&a_w, &b_r, loops)) {
            Ok(t) => tasks.push(t),
            Err(e) => {
                made = Err(e);
                break;
            }
        }
    }
    if let Err(e) = made {
        super::abandon(tasks);
        return Err(e);
    }
    let own = match mine {
        Some((a_w, b_r)) => ping(&a_w, &b_r, loops),
        None => Ok(()),
    };
    let joined = join_all(tasks);
    let time_s = t0.elapsed().as_secs_f64();
    own.and(joined)?;
    Ok(PipeOutcome { time_s, round_trips: loops * p.pairs as u64 })
}
