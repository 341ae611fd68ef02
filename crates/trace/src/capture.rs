//! Capturing a cell: an instance of schedlab's own, its per-CPU binary pipes
//! (`per_cpu/cpuN/trace_pipe_raw`) read whole pages at a time by one reader thread, which
//! is never RT above the workers ([`ReaderPolicy`]) and, when the workers leave a CPU free,
//! is pinned there. The pipes are non-blocking: the thread polls them with a timeout (and is
//! woken early when a buffer is `buffer_percent` full), reads every page available, and
//! after `stop` switches tracing off, drains what is left.

use crate::raw::{CpuRaw, Raw};
use crate::tracefs::{Instance, InstanceSettings, Layouts, Tracefs};
use crate::TraceError;
use schedlab_sys::journal::Journal;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How the reader thread is scheduled. It never runs RT above the workers: the caller gives
/// `Fifo` only below every worker's RT priority (the engine's rule, not checked here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderPolicy {
    /// SCHED_OTHER at this nice value.
    Other {
        /// -20..=19.
        nice: i32,
    },
    /// SCHED_FIFO at this priority.
    Fifo {
        /// 1..=99.
        priority: u32,
    },
}

impl ReaderPolicy {
    /// The reader for a cell whose lowest worker RT priority is `lowest_rt` (None: no RT
    /// worker). Among SCHED_OTHER workers it is SCHED_OTHER at nice -20: its CPU time is
    /// what the events take to read whatever its weight; the weight only lets it run soon
    /// after it wakes. At nice 0 beside 500 mixed workers and two busy loops it was
    /// preempted for up to 0.6 s in the middle of a read, longer than a 4 MiB buffer lasts
    /// at that cell's rate, and a cell on the loaded machine lost a million events
    /// (docs/BENCHMARKS.md). Among RT workers it is SCHED_FIFO 1: below every worker, so it
    /// never takes a CPU from one, yet above the machine's other tasks, so it runs whenever
    /// the workers leave a CPU. At SCHED_OTHER there (even at nice -20) it waited behind 500
    /// FIFO workers until a pa3 cell's 4 MiB buffers had overrun by two million events.
    pub fn for_cell(lowest_rt: Option<u32>) -> ReaderPolicy {
        match lowest_rt {
            None => ReaderPolicy::Other { nice: READER_NICE },
            Some(_) => ReaderPolicy::Fifo { priority: 1 },
        }
    }
}

/// The reader's nice value among SCHED_OTHER workers.
pub const READER_NICE: i32 = -20;

/// How a capture runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureOptions {
    /// The instance's settings (buffer size, block events).
    pub settings: InstanceSettings,
    /// The reader's scheduling.
    pub reader: ReaderPolicy,
    /// CPUs the workers use: the reader is pinned to another allowed CPU if there is one.
    pub avoid_cpus: Vec<u32>,
    /// How often the reader wakes on its own to empty the buffers.
    pub poll: Duration,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            settings: InstanceSettings::default(),
            reader: ReaderPolicy::for_cell(None),
            avoid_cpus: Vec::new(),
            poll: Duration::from_millis(100),
        }
    }
}

/// A capture in progress.
#[derive(Debug)]
pub struct Capture {
    instance: Option<Instance>,
    /// The journal's length before the instance's entry: `stop` undoes back to it.
    mark: usize,
    reader: Option<JoinHandle<io::Result<Vec<CpuRaw>>>>,
    wake: OwnedFd,
    layouts: Layouts,
    page_size: usize,
    start_ns: u64,
    reader_tid: i32,
    reader_cpu: Option<u32>,
}

impl Capture {
    /// Creates an instance in `tfs` (journaled), starts the reader and switches tracing on.
    pub fn start(
        tfs: &Tracefs,
        journal: &mut Journal,
        opts: &CaptureOptions,
    ) -> Result<Capture, TraceError> {
        let mark = journal.entries().len();
        let instance = Instance::create(tfs, journal, &opts.settings)?;
        let layouts = instance.layouts()?;
        let page_size = instance.page_size(&layouts.header_page)?;
        let mut pipes = Vec::new();
        for cpu in instance.cpus()? {
            let p = instance.pipe_path(cpu);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|source| TraceError::Io {
                    what: format!("opening {}", p.display()),
                    source,
                })?;
            pipes.push((cpu, OwnedFd::from(f)));
        }
        // SAFETY: plain syscall; the result is checked before it is owned.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(TraceError::Io {
                what: "eventfd for the trace reader".into(),
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(efd) };
        let reader_cpu = reader_cpu(&opts.avoid_cpus);
        let (ready_tx, ready_rx) = mpsc::channel();
        let wake_fd = wake.as_raw_fd();
        let (poll, policy) = (opts.poll, opts.reader);
        let reader = std::thread::Builder::new()
            .name("schedlab-trace".into())
            .spawn(move || {
                read_loop(pipes, wake_fd, page_size, poll, (policy, reader_cpu), ready_tx)
            })
            .map_err(|source| TraceError::Io {
                what: "starting the trace reader".into(),
                source,
            })?;
        let reader_tid = match ready_rx.recv() {
            Ok(Ok(tid)) => tid,
            Ok(Err(source)) => {
                return Err(TraceError::Io { what: "setting up the trace reader".into(), source })
            }
            Err(_) => {
                return Err(TraceError::Io {
                    what: "the trace reader".into(),
                    source: io::Error::other("it ended before it was ready"),
                })
            }
        };
        instance.set_on(true)?;
        let start_ns = schedlab_sys::procfs::monotonic_ns();
        Ok(Capture {
            instance: Some(instance),
            mark,
            reader: Some(reader),
            wake,
            layouts,
            page_size,
            start_ns,
            reader_tid,
            reader_cpu,
        })
    }

    /// The reader thread's id (it is a thread of this process, and may appear in the trace).
    pub fn reader_tid(&self) -> i32 {
        self.reader_tid
    }

    /// The CPU the reader is pinned to, if the workers left one free.
    pub fn reader_cpu(&self) -> Option<u32> {
        self.reader_cpu
    }

    /// The instance (its path, events).
    pub fn instance(&self) -> &Instance {
        self.instance.as_ref().expect("present until stop")
    }

    /// Switches tracing off, drains the buffers, reads their counters and removes the
    /// instance (undoing `journal` back to where it stood before `start`, which includes
    /// anything recorded after the instance).
    pub fn stop(mut self, journal: &mut Journal) -> Result<Raw, TraceError> {
        let instance = self.instance.take().expect("present until stop");
        instance.set_on(false)?;
        let stop_ns = schedlab_sys::procfs::monotonic_ns();
        let pages = self.join_reader()?;
        let mut cpus = Vec::with_capacity(pages.len());
        for mut c in pages {
            c.stats = instance.stats(c.cpu)?;
            cpus.push(c);
        }
        instance.remove()?;
        let errors = journal.undo_to(self.mark);
        if !errors.is_empty() {
            return Err(TraceError::Cleanup(errors));
        }
        Ok(Raw {
            header_page: std::mem::take(&mut self.layouts.header_page),
            header_event: std::mem::take(&mut self.layouts.header_event),
            formats: std::mem::take(&mut self.layouts.formats),
            page_size: self.page_size,
            cpus,
            start_ns: self.start_ns,
            stop_ns,
            reader_tid: self.reader_tid,
        })
    }

    /// Tells the reader to drain and end, and takes its pages.
    fn join_reader(&mut self) -> Result<Vec<CpuRaw>, TraceError> {
        let Some(r) = self.reader.take() else { return Ok(Vec::new()) };
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
        match r.join() {
            Ok(Ok(pages)) => Ok(pages),
            Ok(Err(source)) => {
                Err(TraceError::Io { what: "reading the trace buffers".into(), source })
            }
            Err(_) => Err(TraceError::Io {
                what: "the trace reader".into(),
                source: io::Error::other("it panicked"),
            }),
        }
    }
}

impl Drop for Capture {
    /// Stopped without `stop` (an error path, a panic): tracing off, the reader ended (its
    /// pipes closed), then the instance removed by its own Drop.
    fn drop(&mut self) {
        if let Some(i) = &self.instance {
            let _ = i.set_on(false);
        }
        let _ = self.join_reader();
    }
}

/// The CPU for the reader: the highest this thread may use that the workers do not.
fn reader_cpu(avoid: &[u32]) -> Option<u32> {
    allowed_cpus().into_iter().rev().find(|c| !avoid.contains(c))
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data that sched_getaffinity fills.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c as u32)
            .collect()
    }
}

/// Schedules the calling thread by `p` (whatever the thread that made it had: the engine
/// runs at SCHED_FIFO 99).
fn schedule_self(p: ReaderPolicy) -> io::Result<()> {
    let (policy, priority, nice) = match p {
        ReaderPolicy::Other { nice } => (libc::SCHED_OTHER, 0, nice),
        ReaderPolicy::Fifo { priority } => (libc::SCHED_FIFO, priority as i32, 0),
    };
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: plain syscalls on the calling thread (0), with a live sched_param.
    unsafe {
        if libc::sched_setscheduler(0, policy, &param) != 0
            || libc::setpriority(libc::PRIO_PROCESS, 0, nice) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The reader thread: scheduled as asked, pinned if a CPU is given, then polls and reads
/// until woken through `wake`, then drains.
fn read_loop(
    pipes: Vec<(u32, OwnedFd)>,
    wake: i32,
    page_size: usize,
    poll: Duration,
    (policy, cpu): (ReaderPolicy, Option<u32>),
    ready: mpsc::Sender<io::Result<i32>>,
) -> io::Result<Vec<CpuRaw>> {
    let setup = (|| {
        schedule_self(policy)?;
        if let Some(c) = cpu {
            schedlab_sys::cpus::set_affinity(0, &[c])?;
        }
        // SAFETY: no failure mode.
        Ok(unsafe { libc::gettid() })
    })();
    let failed = setup.is_err();
    let _ = ready.send(setup);
    if failed {
        return Ok(Vec::new());
    }
    let mut out: Vec<CpuRaw> =
        pipes.iter().map(|(c, _)| CpuRaw { cpu: *c, ..Default::default() }).collect();
    let mut fds: Vec<libc::pollfd> = pipes
        .iter()
        .map(|(_, f)| libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 })
        .collect();
    fds.push(libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 });
    let timeout = poll.as_millis().min(i32::MAX as u128) as i32;
    loop {
        // SAFETY: fds is a live array of pollfd of the length given.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let stopping = fds.last().is_some_and(|w| w.revents & libc::POLLIN != 0);
        // Every pipe is read on every wake-up: a timeout says nothing about which has data.
        for ((_, fd), c) in pipes.iter().zip(out.iter_mut()) {
            drain(fd, page_size, &mut c.pages)?;
        }
        if stopping {
            return Ok(out);
        }
    }
}

/// Reads whole pages from a non-blocking pipe until it has none.
fn drain(fd: &OwnedFd, page_size: usize, pages: &mut Vec<u8>) -> io::Result<()> {
    loop {
        let at = pages.len();
        pages.resize(at + page_size, 0);
        // SAFETY: reads at most page_size bytes into the tail just made that long.
        let n = unsafe { libc::read(fd.as_raw_fd(), pages[at..].as_mut_ptr().cast(), page_size) };
        if n <= 0 {
            pages.truncate(at);
            if n == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(()),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
        // A short read leaves the rest of the page zero: the commit word bounds the data.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_is_never_rt_above_a_worker() {
        assert_eq!(ReaderPolicy::for_cell(None), ReaderPolicy::Other { nice: READER_NICE });
        for lowest in [1, 2, 50, 98] {
            let ReaderPolicy::Fifo { priority } = ReaderPolicy::for_cell(Some(lowest)) else {
                panic!("RT workers get an RT reader")
            };
            assert!(priority <= lowest, "reader {priority} above a worker at {lowest}");
        }
    }

    #[test]
    fn the_reader_avoids_the_workers_cpus_when_it_can() {
        let allowed = allowed_cpus();
        assert_eq!(reader_cpu(&[]), allowed.last().copied());
        assert_eq!(reader_cpu(&allowed), None, "no free CPU: not pinned");
        if allowed.len() > 1 {
            let all_but_first = &allowed[1..];
            assert_eq!(reader_cpu(all_but_first), Some(allowed[0]));
        }
    }
}
