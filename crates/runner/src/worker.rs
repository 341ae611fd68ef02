//! The worker side: the engine execs its own binary with [`WORKER_SUBCOMMAND`] and a
//! [`WorkerJob`]. The worker prepares, says so on stdout, blocks reading stdin (the release pipe)
//! until the engine closes the write end, does the work, and reports one line on stdout.

use crate::protocol::{Report, WorkerJob};
use schedlab_model::{BenchFigures, Detail};
use schedlab_plan::Workload;
use schedlab_sys::{procfs::monotonic_ns, sched};
use schedlab_workloads::{self as wl, CpuSeen, Probe};
use std::ffi::CString;
use std::io::Write;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGTERM: a background worker finishes its current chunk and reports.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Notes the CPU between chunks and stops a background worker on SIGTERM.
struct WorkerProbe {
    seen: CpuSeen,
}

impl Probe for WorkerProbe {
    fn tick(&mut self) -> ControlFlow<()> {
        self.seen.note();
        if STOP.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Runs a worker from its JSON job argument; returns the process exit code.
pub fn main(job_json: &str) -> i32 {
    let job: WorkerJob = match serde_json::from_str(job_json) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("schedlab worker: bad job description: {e}");
            return 2;
        }
    };
    // If the engine dies (even by SIGKILL), its workers die with it: no worker is left
    // running, least of all at RT priority. The setting survives the exec of a command.
    // SAFETY: plain prctl/getppid/signal calls; the handler only stores to an atomic.
    unsafe {
        // The engine blocks SIGCHLD/INT/TERM/HUP in all its threads and the mask survives
        // fork and exec: clear it, so workers and the programs they exec get signals.
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        if job.engine_pid != 0 && libc::getppid() != job.engine_pid {
            return 3;
        }
        if job.repeat {
            libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t);
        }
    }
    if let Some(soft) = job.nofile_soft {
        if let Err(e) = schedlab_sys::limits::set_nofile_soft(soft) {
            eprintln!("schedlab worker: cannot put RLIMIT_NOFILE back to {soft}: {e}");
            return 2;
        }
    }
    let mut report = Report { i: job.index, ..Default::default() };
    let prepared = prepare(&job);
    if job.index == 0 {
        // Test hook: a slow preparation on demand (the engine's wait for it is tested).
        if let Some(ms) = std::env::var(PREPARE_DELAY_ENV).ok().and_then(|v| v.parse().ok()) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }
    // The engine releases no one before every worker said this (a failed preparation too:
    // its error is reported after the release), so no preparation overlaps measured work,
    // and a periodic set's start is fixed only once all its tasks can meet their first release.
    say(crate::protocol::ready_line(job.index).as_bytes());
    wait_for_release();
    report.start_ns = monotonic_ns();
    report.setup = setup_usage();
    let (pol, nice) = sched::current();
    report.policy = sched::policy_name(pol).to_string();
    report.nice = nice;
    let mut probe = WorkerProbe { seen: CpuSeen::default() };
    probe.seen.note();
    let outcome = prepared.and_then(|mut p| loop {
        work(&job, &mut p, &mut report, &mut probe)?;
        if !job.repeat || STOP.load(Ordering::Relaxed) {
            return Ok(());
        }
    });
    report.end_ns = monotonic_ns();
    probe.seen.note();
    report.cpu = sched::current_cpu();
    report.cpus = probe.seen.cpus();
    if let Err(e) = outcome {
        report.error = Some(e.to_string());
        send(&report, &job.dir);
        return 1;
    }
    send(&report, &job.dir);
    0
}

/// Milliseconds worker 0 sleeps after preparing, for tests of the engine's wait for
/// preparation; unset in normal use.
pub const PREPARE_DELAY_ENV: &str = "SCHEDLAB_TEST_PREPARE_DELAY_MS";

/// Setup that must not be measured: opening files, filling buffers, building argv.
enum PreparedWork {
    Cpu,
    Hash(Box<[u8; wl::HASH_BUFFER]>),
    Copy(wl::CopyFiles),
    Mixed(std::fs::File),
    /// The program's argv, its stdout's file and, when its output is parsed, its stderr's.
    Exec(Vec<CString>, std::fs::File, Option<std::fs::File>),
    Par(Box<wl::ParPrepared>, u32),
    Periodic(crate::rt::Prepared),
    Udp(Box<wl::UdpFlood>),
    Irq(Box<wl::IrqReader>),
}

/// Why a worker could not prepare or do its work: the text goes into its report and so
/// into its cell's message.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// A step failed: `what` names it.
    #[error("{what}: {error}")]
    Step {
        /// The step (a file made, a workload run).
        what: String,
        /// What went wrong.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The job description and the worker disagree (a bug, not the machine).
    #[error("{0}")]
    Internal(&'static str),
    /// A periodic task's job names a task its set does not have.
    #[error("task {task} of a set of {len}")]
    NoSuchTask {
        /// The task asked for.
        task: u32,
        /// The set's size.
        len: usize,
    },
    /// A library's own error, as it says it.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl WorkerError {
    /// Names the step an error comes from: `.map_err(WorkerError::step("copy"))`.
    pub fn step<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
        what: impl Into<String>,
    ) -> impl FnOnce(E) -> WorkerError {
        let what = what.into();
        move |e| WorkerError::Step { what, error: e.into() }
    }

    /// A library's error as it is.
    pub fn other(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> WorkerError {
        WorkerError::Other(e.into())
    }
}

fn prepare(job: &WorkerJob) -> Result<PreparedWork, WorkerError> {
    let out_path = job.dir.join(format!("out-{}", job.index));
    match &job.workload {
        Workload::Pi { .. } => Ok(PreparedWork::Cpu),
        // Their tasks are made after the release, so they inherit the worker's settings.
        Workload::Messaging(_) | Workload::Pipe(_) | Workload::Schbench(_) => Ok(PreparedWork::Cpu),
        Workload::Periodic(p) => {
            let rt = job
                .rt
                .as_ref()
                .ok_or(WorkerError::Internal("a periodic worker without its task"))?;
            crate::rt::prepare(job, p, rt).map(PreparedWork::Periodic)
        }
        Workload::ParWrite(p) | Workload::ParRead(p) => {
            Ok(PreparedWork::Par(Box::new(wl::ParPrepared::new(p, job.seed ^ job.index as u64)), 0))
        }
        Workload::UdpFlood { packet_bytes, .. } => wl::UdpFlood::new(*packet_bytes)
            .map(|f| PreparedWork::Udp(Box::new(f)))
            .map_err(WorkerError::step("udp_flood sockets")),
        Workload::IoInterrupts { read_bytes, file_bytes, .. } => {
            let path = job.dir.join(format!("irq-{}", job.index));
            wl::IrqReader::create(&path, *file_bytes, *read_bytes, job.seed ^ job.index as u64)
                .map(|r| PreparedWork::Irq(Box::new(r)))
                .map_err(WorkerError::step(format!("io_interrupts: making {}", path.display())))
        }
        Workload::Hash { .. } => {
            let mut buf = Box::new([0u8; wl::HASH_BUFFER]);
            // SAFETY: filling our own buffer from the OS random source.
            let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n != buf.len() as isize {
                return Err(WorkerError::step("getrandom")(std::io::Error::last_os_error()));
            }
            Ok(PreparedWork::Hash(buf))
        }
        Workload::Copy { .. } => {
            let input =
                job.input.as_ref().ok_or(WorkerError::Internal("copy without an input file"))?;
            wl::CopyFiles::open(input, &out_path).map(PreparedWork::Copy).map_err(
                WorkerError::step(format!("opening {} / {}", input.display(), out_path.display())),
            )
        }
        Workload::Mixed { .. } => {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_SYNC)
                .open(&out_path)
                .map(PreparedWork::Mixed)
                .map_err(WorkerError::step(format!("creating {}", out_path.display())))
        }
        Workload::Command { argv, parse } => {
            let dir = job.dir.to_string_lossy();
            let idx = job.index.to_string();
            let args: Result<Vec<CString>, _> = argv
                .iter()
                .map(|a| CString::new(a.replace("{index}", &idx).replace("{dir}", &dir)))
                .collect();
            let args = args.map_err(WorkerError::step("argument with NUL byte"))?;
            let out = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(job.dir.join(format!("cmd-{}.out", job.index)))
                .map_err(WorkerError::step("creating the command's output file"))?;
            // An original whose output is parsed keeps its stderr too (schbench reports there).
            let err = match parse {
                Some(_) => Some(
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(job.dir.join(format!("cmd-{}.err", job.index)))
                        .map_err(WorkerError::step("creating the command's error file"))?,
                ),
                None => None,
            };
            Ok(PreparedWork::Exec(args, out, err))
        }
    }
}

fn setup_usage() -> [f64; 4] {
    let ru = schedlab_sys::procfs::rusage_self();
    let tv = schedlab_sys::procfs::tv_secs;
    [tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_nvcsw as f64, ru.ru_nivcsw as f64]
}

fn wait_for_release() {
    let mut buf = [0u8; 16];
    loop {
        // SAFETY: reading into a valid stack buffer from fd 0.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 || (n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR))
        {
            return;
        }
    }
}

/// One round of the work; units accumulate across rounds of a repeating worker.
fn work(
    job: &WorkerJob,
    p: &mut PreparedWork,
    report: &mut Report,
    probe: &mut WorkerProbe,
) -> Result<(), WorkerError> {
    let seed = job.seed.wrapping_add(report.units as u64);
    match (&job.workload, p) {
        (Workload::Pi { iterations }, PreparedWork::Cpu) => {
            let o = wl::pi(*iterations, seed, job.index as u64, probe);
            report.units += o.iterations as f64;
            report.detail = Some(Detail::Pi { estimate: o.estimate });
        }
        (Workload::Hash { hashes }, PreparedWork::Hash(buf)) => {
            let o = wl::hash(*hashes, buf, probe);
            report.units += o.hashes as f64;
            report.detail = Some(Detail::Hash { digest: format!("{:032x}", o.digest) });
        }
        (Workload::Mixed { iterations, write_every }, PreparedWork::Mixed(f)) => {
            let o = wl::mixed(*iterations, *write_every, seed, job.index as u64, f, probe)
                .map_err(WorkerError::step("mixed"))?;
            report.units += o.iterations as f64;
            let sync_writes =
                report.detail.as_ref().and_then(Detail::sync_writes).unwrap_or(0) + o.writes;
            report.detail = Some(Detail::Mixed { estimate: o.estimate, sync_writes });
        }
        (Workload::Copy { transfer_bytes, block_bytes, .. }, PreparedWork::Copy(files)) => {
            let (bytes, w) = wl::copy(files, *transfer_bytes, *block_bytes)
                .map_err(WorkerError::step("copy"))?;
            report.units += bytes as f64;
            let sync_writes = report.detail.as_ref().and_then(Detail::sync_writes).unwrap_or(0) + w;
            report.detail = Some(Detail::Writes { sync_writes });
        }
        (Workload::Command { .. }, PreparedWork::Exec(args, out, err)) => {
            exec(std::mem::take(args), out, err.as_ref(), report, &job.dir)
        }
        (Workload::ParWrite(_), PreparedWork::Par(p, round)) => {
            // A background writer repeats: each round writes fresh files.
            let o = wl::par_write(&job.dir, &format!("w{}-{round}-", job.index), p, &STOP)
                .map_err(WorkerError::step("par_write"))?;
            *round += 1;
            report.units += o.bytes as f64;
            report.detail = Some(Detail::Io(o));
        }
        (Workload::ParRead(_), PreparedWork::Par(p, _)) => {
            let dir = job
                .read_dir
                .as_ref()
                .ok_or(WorkerError::Internal("par_read without an input directory"))?;
            let o = wl::par_read(dir, &format!("r{}-", job.index), p, &STOP)
                .map_err(WorkerError::step("par_read"))?;
            report.units += o.bytes as f64;
            report.detail = Some(Detail::Io(o));
        }
        (Workload::Periodic(_), PreparedWork::Periodic(p)) => crate::rt::run(job, p, report)?,
        (Workload::UdpFlood { packets, .. }, PreparedWork::Udp(f)) => {
            let o = wl::udp_flood(f, *packets, probe).map_err(WorkerError::step("udp_flood"))?;
            report.units += o.sent as f64;
            report.detail = Some(Detail::Flood(f.total()));
        }
        (Workload::IoInterrupts { reads, .. }, PreparedWork::Irq(r)) => {
            let o =
                wl::io_interrupts(r, *reads, probe).map_err(WorkerError::step("io_interrupts"))?;
            report.units += o.reads as f64;
            report.detail = Some(Detail::Irq(r.total()));
        }
        (Workload::Messaging(m), PreparedWork::Cpu) => {
            let o = wl::messaging(m).map_err(WorkerError::step("messaging"))?;
            report.units += o.messages as f64;
            report.bench = Some(BenchFigures {
                source: "messaging".into(),
                time_s: Some(o.time_s),
                ..Default::default()
            });
        }
        (Workload::Pipe(b), PreparedWork::Cpu) => {
            let o = wl::pipe_pingpong(b).map_err(WorkerError::step("pipe"))?;
            report.units += o.round_trips as f64;
            report.bench = Some(BenchFigures {
                source: "pipe".into(),
                us_per_op: Some(o.us_per_op(b.loops)),
                ops_per_s: Some(o.ops_per_s()),
                ..Default::default()
            });
        }
        (Workload::Schbench(b), PreparedWork::Cpu) => {
            // schbench sizes its default worker count by the CPUs online, not its affinity.
            // SAFETY: sysconf has no memory arguments.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
            let f = wl::schbench(b, online).map_err(WorkerError::step("schbench"))?;
            report.units += f.requests.unwrap_or(0) as f64;
            report.bench = Some(f);
        }
        _ => return Err(WorkerError::Internal("internal: workload and preparation disagree")),
    }
    Ok(())
}

/// Reports the start, then replaces this process with the user's program: same pid, same
/// policy, nice, affinity and cgroup, so wait4's rusage covers the program itself.
fn exec(
    args: Vec<CString>,
    out: &std::fs::File,
    err: Option<&std::fs::File>,
    report: &mut Report,
    dir: &std::path::Path,
) -> ! {
    report.cpu = sched::current_cpu();
    report.detail = Some(Detail::Exec { exec: args[0].to_string_lossy().into_owned() });
    send(report, dir);
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 onto stdout so the program's output goes to its own file, not the
    // engine's result pipe; then execvp with NUL-terminated argument vectors.
    unsafe {
        libc::dup2(out.as_raw_fd(), 1);
        if let Some(e) = err {
            libc::dup2(e.as_raw_fd(), 2);
        }
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        libc::execvp(ptrs[0], ptrs.as_ptr());
    }
    let err = std::io::Error::last_os_error();
    let _ = writeln!(
        std::io::stderr(),
        "schedlab worker: cannot execute {}: {err}",
        std::ffi::OsStr::from_bytes(args[0].as_bytes()).to_string_lossy()
    );
    std::process::exit(127)
}

/// One line, one write(2): lines from different workers never interleave (< PIPE_BUF).
/// A longer report (an I/O worker's per-file times) goes to a file in `dir`, and the
/// line points at it.
fn send(r: &Report, dir: &std::path::Path) {
    let mut line = serde_json::to_vec(r).unwrap_or_default();
    if line.len() > crate::protocol::MAX_LINE {
        let path = dir.join(format!("report-{}.json", r.i));
        if std::fs::write(&path, &line).is_ok() {
            line = serde_json::to_vec(&Report { i: r.i, spill: Some(path), ..Default::default() })
                .unwrap_or_default();
        }
    }
    line.push(b'\n');
    say(&line);
}

/// One line to the engine, in one write (lines are shorter than PIPE_BUF).
fn say(line: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line);
    let _ = out.flush();
}
