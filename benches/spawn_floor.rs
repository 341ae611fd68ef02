//! The floor a cell of N workers is measured against (`benches/spawn_floor.sh`): the kernel's
//! own cost of starting the same binary N times as the same worker, blocking them on one
//! pipe, releasing them and reaping them, with nothing else done.
//!
//!   cargo build --release --example spawn_floor
//!   target/release/examples/spawn_floor SCHEDLAB N ITERATIONS SEED DIR [fork] [rt]
//!
//! Each child is `SCHEDLAB __worker JOB`, JOB serialised from the engine's own
//! `protocol::WorkerJob` type (so argv is byte for byte what a `pi` cell's worker gets), stdin the
//! release pipe, stdout the report pipe, stderr a log file, cwd DIR, environment inherited: the
//! exec and the worker's start-up are those of a real cell. Children start by posix_spawn
//! (glibc: clone(CLONE_VM | CLONE_VFORK) + exec, the cheapest way to start a process), or by
//! fork + exec with `fork`. With `rt` it first raises itself as the engine does
//! (`schedlab_sys::sched::raise_engine`: SCHED_FIFO 99, reset on fork), so spawning and
//! reaping are not slowed by the workers starting meanwhile. A reader thread drains the report pipe (a worker writes a ready
//! line, then its report; 10,000 of them do not fit in a pipe) and says when all N are
//! ready; the pipe's write end is then closed (the release) and wait4 reaps them one by one
//! in the order they were started: wait4 on a pid looks at that child alone, whereas
//! wait4(-1) walks every child not yet reaped whenever none has exited, which makes reaping
//! N children as they exit quadratic in N; in spawn order nothing is walked, and the last
//! reap still comes right after the last exit.
//!
//! Prints one line: `n=N spawn_to_reap_s=... spawned_s=... release_to_reap_s=... max_rss_kb=...
//! cpu_s=... workers_cpu_s=...`: the times from just before the first spawn to the last reap
//! and to the return of the last spawn, from the release to the last reap, its peak RSS, its own CPU time (user + system, both threads) and its workers'
//! (wait4's rusage, summed).

use schedlab_runner::protocol::{WorkerJob, WORKER_SUBCOMMAND};
use schedlab_spec::Workload;
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::mpsc;

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array; O_CLOEXEC keeps our ends out of the children.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        0,
        "pipe2: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: fresh descriptors we own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: spawn_floor SCHEDLAB N ITERATIONS SEED DIR [fork] [rt]");
        std::process::exit(2);
    }
    let exe = CString::new(args[1].as_str()).expect("path without NUL");
    let n: usize = args[2].parse().expect("N");
    let iterations: u64 = args[3].parse().expect("ITERATIONS");
    let seed: u64 = args[4].parse().expect("SEED");
    let dir = PathBuf::from(&args[5]);
    let use_fork = args[6..].iter().any(|a| a == "fork");
    if args[6..].iter().any(|a| a == "rt") {
        schedlab_sys::sched::raise_engine().expect("SCHED_FIFO 99 (needs root)");
    }
    std::env::set_current_dir(&dir).expect("DIR");

    // Everything a child needs is built before the clock starts: the floor is the kernel's part.
    let me = std::process::id() as i32;
    let argvs: Vec<[CString; 3]> = (0..n)
        .map(|i| {
            let job = WorkerJob {
                index: i as u32,
                seed,
                dir: dir.clone(),
                input: None,
                workload: Workload::Pi { iterations },
                repeat: false,
                engine_pid: me,
                read_dir: None,
                rt: None,
                nofile_soft: None,
            };
            let json = serde_json::to_string(&job).expect("job serialises");
            [exe.clone(), CString::new(WORKER_SUBCOMMAND).unwrap(), CString::new(json).unwrap()]
        })
        .collect();
    let (rel_r, rel_w) = pipe();
    let (res_r, res_w) = pipe();
    let log = std::fs::File::create(dir.join("stderr.log")).expect("stderr.log");
    let environ: *const *mut libc::c_char = {
        extern "C" {
            static environ: *const *mut libc::c_char;
        }
        // SAFETY: reading the process's environment pointer; nothing changes it meanwhile.
        unsafe { environ }
    };

    // The reader: counts lines; all N ready lines come before any report (none is released
    // before that), then reads to the end so no worker blocks on a full pipe.
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(res_r);
        let mut buf = vec![0u8; 1 << 16];
        let (mut lines, mut told) = (0usize, false);
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => return lines,
                Ok(k) => {
                    lines += buf[..k].iter().filter(|&&b| b == b'\n').count();
                    if !told && lines >= n {
                        told = true;
                        let _ = ready_tx.send(());
                    }
                }
            }
        }
    });

    // SAFETY (the block): posix_spawn's file actions and attributes are initialised before use
    // and destroyed after; argv and envp are NUL-terminated arrays of C strings that outlive
    // the calls; in the fork child only async-signal-safe calls (dup2, execve, _exit) are made.
    let mut pids: Vec<i32> = Vec::with_capacity(n);
    let t0 = now_ns();
    unsafe {
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut fa);
        libc::posix_spawn_file_actions_adddup2(&mut fa, rel_r.as_raw_fd(), 0);
        libc::posix_spawn_file_actions_adddup2(&mut fa, res_w.as_raw_fd(), 1);
        libc::posix_spawn_file_actions_adddup2(&mut fa, log.as_raw_fd(), 2);
        for argv in &argvs {
            let ptrs = [
                argv[0].as_ptr() as *mut libc::c_char,
                argv[1].as_ptr() as *mut _,
                argv[2].as_ptr() as *mut _,
                std::ptr::null_mut(),
            ];
            if use_fork {
                let pid = libc::fork();
                if pid == 0 {
                    libc::dup2(rel_r.as_raw_fd(), 0);
                    libc::dup2(res_w.as_raw_fd(), 1);
                    libc::dup2(log.as_raw_fd(), 2);
                    libc::execve(
                        ptrs[0],
                        ptrs.as_ptr() as *const *const _,
                        environ as *const *const _,
                    );
                    libc::_exit(127);
                }
                assert!(pid > 0, "fork: {}", std::io::Error::last_os_error());
                pids.push(pid);
            } else {
                let mut pid = 0;
                let r = libc::posix_spawn(
                    &mut pid,
                    ptrs[0],
                    &fa,
                    std::ptr::null(),
                    ptrs.as_ptr(),
                    environ,
                );
                assert_eq!(r, 0, "posix_spawn: {}", std::io::Error::from_raw_os_error(r));
                pids.push(pid);
            }
        }
        libc::posix_spawn_file_actions_destroy(&mut fa);
    }
    let t_spawned = now_ns();
    drop((rel_r, res_w, log));
    ready_rx.recv().expect("every worker ready");
    let t_release = now_ns();
    drop(rel_w); // the release
    let mut failed = 0;
    for &child in &pids {
        let mut status = 0;
        // SAFETY: rusage is plain data filled by wait4.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(child, &mut status, 0, &mut ru) };
        assert_eq!(pid, child, "wait4: {}", std::io::Error::last_os_error());
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            failed += 1;
        }
    }
    let t_end = now_ns();
    let lines = reader.join().expect("reader");
    assert_eq!(failed, 0, "{failed} workers did not exit 0 (see {}/stderr.log)", dir.display());
    assert_eq!(lines, 2 * n, "a ready line and a report per worker");
    // SAFETY: rusage is plain data that getrusage fills.
    let (me_ru, kids_ru) = unsafe {
        let (mut me, mut kids): (libc::rusage, libc::rusage) =
            (std::mem::zeroed(), std::mem::zeroed());
        libc::getrusage(libc::RUSAGE_SELF, &mut me);
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut kids);
        (me, kids)
    };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    println!(
        "n={n} spawn_to_reap_s={:.6} spawned_s={:.6} release_to_reap_s={:.6} max_rss_kb={} cpu_s={:.6} workers_cpu_s={:.6}",
        (t_end - t0) as f64 * 1e-9,
        (t_spawned - t0) as f64 * 1e-9,
        (t_end - t_release) as f64 * 1e-9,
        me_ru.ru_maxrss,
        secs(me_ru.ru_utime) + secs(me_ru.ru_stime),
        secs(kids_ru.ru_utime) + secs(kids_ru.ru_stime)
    );
}
