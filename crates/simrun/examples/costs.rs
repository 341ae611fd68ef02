//! Measures the simulator's default switch and migration costs on this machine.
//!
//! `cargo run --release -p schedlab-simrun --example costs` (as root or not; needs 2 CPUs).
//!
//! - switch: two processes pinned to CPU 0 pass a byte back and forth over two pipes;
//!   every hop is one context switch (plus a pipe write and read, as in
//!   `perf bench sched pipe`). Cost per switch = time / (2 x round trips).
//! - migration: one process moves itself between CPUs 0 and 1 with sched_setaffinity and
//!   touches a 32 KiB working set after each move; the same loop setting its affinity to
//!   the CPU it is already on is the baseline. Cost per migration = the difference.
//!
//! Prints the median of 5 rounds of each.

use std::time::Instant;

const ROUND_TRIPS: u32 = 100_000;
const MOVES: u32 = 20_000;
const ROUNDS: usize = 5;

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "sched_setaffinity to CPU {cpu}"
        );
    }
}

fn pipe() -> [i32; 2] {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    fds
}

fn hop(read_fd: i32, write_fd: i32, first_write: bool) {
    let mut b = [0u8; 1];
    // SAFETY: one-byte reads and writes on pipes this process owns.
    unsafe {
        if first_write {
            libc::write(write_fd, b.as_ptr().cast(), 1);
            libc::read(read_fd, b.as_mut_ptr().cast(), 1);
        } else {
            libc::read(read_fd, b.as_mut_ptr().cast(), 1);
            libc::write(write_fd, b.as_ptr().cast(), 1);
        }
    }
}

/// ns per context switch from a pipe ping-pong on CPU 0.
fn switch_cost() -> f64 {
    pin(0);
    let (a, b) = (pipe(), pipe());
    // SAFETY: this example is single-threaded, so the child may run arbitrary code.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        for _ in 0..ROUND_TRIPS {
            hop(a[0], b[1], false);
        }
        // SAFETY: leave without running the parent's exit handlers twice.
        unsafe { libc::_exit(0) };
    }
    let t0 = Instant::now();
    for _ in 0..ROUND_TRIPS {
        hop(b[0], a[1], true);
    }
    let ns = t0.elapsed().as_nanos() as f64;
    // SAFETY: reap the child and close our descriptors.
    unsafe {
        libc::waitpid(child, std::ptr::null_mut(), 0);
        for fd in a.into_iter().chain(b) {
            libc::close(fd);
        }
    }
    ns / (2.0 * f64::from(ROUND_TRIPS))
}

fn touch(ws: &mut [u8]) {
    for i in (0..ws.len()).step_by(64) {
        ws[i] = ws[i].wrapping_add(1);
    }
    std::hint::black_box(&ws);
}

/// ns per move between CPUs, less the same loop staying on one CPU.
fn migration_cost() -> f64 {
    let mut ws = vec![0u8; 32 * 1024];
    let timed = |ws: &mut [u8], moving: bool| {
        pin(0);
        let t0 = Instant::now();
        for i in 0..MOVES {
            pin(if moving { (i as usize + 1) % 2 } else { 0 });
            touch(ws);
        }
        t0.elapsed().as_nanos() as f64 / f64::from(MOVES)
    };
    let moving = timed(&mut ws, true);
    let staying = timed(&mut ws, false);
    moving - staying
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    // SAFETY: sysconf has no failure mode that matters here.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let switch = median((0..ROUNDS).map(|_| switch_cost()).collect());
    println!("context switch (pipe ping-pong on CPU 0): {:.2} us", switch / 1e3);
    if cpus < 2 {
        println!("migration: needs 2 CPUs, this machine has {cpus}");
        return;
    }
    let migration = median((0..ROUNDS).map(|_| migration_cost()).collect());
    println!("migration (CPU 0 <-> 1, 32 KiB working set): {:.2} us", migration / 1e3);
}
