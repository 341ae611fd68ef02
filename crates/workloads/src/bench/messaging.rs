//! hackbench (`perf bench sched messaging`): `groups` groups of `fds` receivers and `fds`
//! senders. Each receiver has its own socket pair (or pipe); each sender sends `loops`
//! rounds of one `message_bytes` message to every receiver of its group, and each receiver
//! reads `fds x loops` messages. Every task says it is ready on one pipe and waits for a
//! byte on another; the time runs from that byte to the last task's end, as hackbench's.

use super::{join_all, read_exact, write_all, Task};
use schedlab_plan::{Ipc, Messaging};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

/// What one messaging run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessagingOutcome {
    /// From the start signal to the end of the last task, s.
    pub time_s: f64,
    /// Messages received.
    pub messages: u64,
}

/// The shared start line: tasks write a byte to `ready` and wait until `go` is readable.
struct StartLine {
    ready: Arc<OwnedFd>,
    go: Arc<OwnedFd>,
}

impl StartLine {
    /// Says ready and waits for the start; a start line closed without a byte (the run was
    /// abandoned while tasks were being made) is an error.
    fn wait(&self) -> io::Result<()> {
        write_all(&self.ready, b"r")?;
        let mut p = libc::pollfd { fd: self.go.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        loop {
            // SAFETY: polling one valid pollfd.
            let n = unsafe { libc::poll(&mut p, 1, -1) };
            if n == 1 && p.revents & libc::POLLIN != 0 {
                return Ok(());
            }
            if n == 1 {
                return Err(io::Error::other("the run was abandoned before its start"));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    fn clone(&self) -> StartLine {
        StartLine { ready: self.ready.clone(), go: self.go.clone() }
    }
}

/// Runs the benchmark once.
pub fn messaging(m: &Messaging) -> io::Result<MessagingOutcome> {
    let tasks_n = 2 * m.groups as u64 * m.fds as u64;
    if m.threads {
        // Every group's channels stay open in the worker while its threads run.
        super::want_files(2 * tasks_n + 64)?;
    }
    let (ready_r, ready_w) = super::pipe()?;
    let (go_r, go_w) = super::pipe()?;
    let line = StartLine { ready: Arc::new(ready_w), go: Arc::new(go_r) };
    let mut tasks = Vec::with_capacity(tasks_n as usize);
    let made = (0..m.groups).try_for_each(|g| group(m, g, &line, &mut tasks));
    drop(line);
    if let Err(e) = made {
        drop(go_w); // the threads made so far see the start line closed and leave
        super::abandon(tasks);
        return Err(e);
    }
    let mut seen = 0u64;
    let mut buf = [0u8; 512];
    while seen < tasks_n {
        // SAFETY: reading into a stack buffer.
        let n = unsafe { libc::read(ready_r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            let e = io::Error::last_os_error();
            if n < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            drop(go_w);
            super::abandon(tasks);
            return Err(io::Error::other(format!("only {seen} of {tasks_n} tasks became ready")));
        }
        seen += n as u64;
    }
    let t0 = Instant::now();
    write_all(&go_w, b"g")?;
    join_all(tasks)?;
    let time_s = t0.elapsed().as_secs_f64();
    Ok(MessagingOutcome { time_s, messages: m.messages() })
}

/// Makes group `g`'s receivers, then its senders.
fn group(m: &Messaging, g: u32, line: &StartLine, tasks: &mut Vec<Task>) -> io::Result<()> {
    let mut outs = Vec::with_capacity(m.fds as usize);
    for r in 0..m.fds {
        let (rx, tx) = match m.ipc {
            Ipc::Socket => super::socketpair()?,
            Ipc::Pipe => super::pipe()?,
        };
        outs.push(tx);
        // Buffers are made before a fork: the child only makes system calls.
        let (line, mut buf, count) =
            (line.clone(), vec![0u8; m.message_bytes as usize], m.loops * m.fds as u64);
        tasks.push(Task::start(m.threads, &format!("recv-{g}-{r}"), move || {
            line.wait()?;
            for _ in 0..count {
                read_exact(&rx, &mut buf)?;
            }
            Ok(())
        })?);
    }
    // Forked senders take their copies; the worker's are closed when `outs` goes.
    let outs = Arc::new(outs);
    for s in 0..m.fds {
        let (line, outs, loops) = (line.clone(), outs.clone(), m.loops);
        let msg = vec![b'-'; m.message_bytes as usize];
        tasks.push(Task::start(m.threads, &format!("send-{g}-{s}"), move || {
            line.wait()?;
            for _ in 0..loops {
                for out in outs.iter() {
                    write_all(out, &msg)?;
                }
            }
            Ok(())
        })?);
    }
    Ok(())
}
