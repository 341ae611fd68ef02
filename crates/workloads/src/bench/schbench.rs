//! schbench: message threads hand requests to their worker threads. A worker posts itself
//! on its message thread's list and sleeps on its futex; the message thread, woken, takes
//! the whole list, notes the time once and wakes each worker, whose wake-up latency is from
//! that time to when it runs again. A request is a sleep of `sleep_us` and `operations`
//! multiplications of matrices filling `footprint_kb`, under a per-CPU lock that a worker
//! moved to another CPU mid-request holds against the next one there. With `rps`, message
//! threads instead queue requests at that rate (round robin over their workers, at most 128
//! pending each) and wake the worker. The run lasts `runtime_ms`; at its start, every
//! second and at its end, the requests done since the last sample give one
//! requests-per-second sample (the first is 0, as schbench's is).

use hdrhistogram::Histogram;
use schedlab_model::{BenchFigures, LatencyPercentiles, RpsPercentiles};
use schedlab_plan::Schbench;
use std::cell::Cell;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BLOCKED: i32 = 0;
const RUNNING: i32 = 1;
/// The end of a posted list.
const NONE: usize = usize::MAX;
/// Most requests queued for one worker before the rate thread skips it (schbench's batch).
const MAX_PENDING: u64 = 128;

/// Side of the square matrices for a footprint: the largest whose three matrices of u64
/// fit in it (schbench's integer sizing).
pub fn matrix_size(footprint_kb: u32) -> usize {
    (footprint_kb as u64 * 1024 / 3 / size_of::<u64>() as u64).isqrt() as usize
}

/// A worker's three matrices, m1, m2 and their product m3, in one zero-filled private
/// anonymous mapping, as schbench's one allocation per worker. Only m3 is ever written, so
/// m1 and m2 stay the kernel's shared zero page, as the original's never-written matrices.
struct Matrices {
    ptr: NonNull<u64>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; it moves to its worker thread once.
unsafe impl Send for Matrices {}

impl Matrices {
    fn new(size: usize) -> io::Result<Matrices> {
        let len = 3 * size * size;
        if len == 0 {
            return Ok(Matrices { ptr: NonNull::dangling(), len });
        }
        // SAFETY: a new private anonymous mapping at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len * size_of::<u64>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        match NonNull::new(p.cast::<u64>()) {
            Some(ptr) if p != libc::MAP_FAILED => Ok(Matrices { ptr, len }),
            _ => Err(io::Error::last_os_error()),
        }
    }

    fn cells(&self) -> &[Cell<u64>] {
        // SAFETY: the mapping holds `len` zero-filled u64s until drop and is reached only
        // through these cells (Cell<u64> has u64's layout).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<Cell<u64>>(), self.len) }
    }
}

impl Drop for Matrices {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping made in `new`, of this length, unmapped once.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len * size_of::<u64>()) };
        }
    }
}

fn futex(word: &AtomicI32, op: libc::c_int, val: i32) -> libc::c_long {
    // SAFETY: the futex word is a live, aligned i32 for the call's duration.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    }
}

/// Wakes the futex's sleeper if it is (about to be) asleep.
fn post(word: &AtomicI32) {
    if word.compare_exchange(BLOCKED, RUNNING, SeqCst, SeqCst).is_ok() {
        futex(word, libc::FUTEX_WAKE, 1);
    }
}

/// Sleeps until posted (the caller set the word to BLOCKED first).
fn wait(word: &AtomicI32) {
    while word.compare_exchange(RUNNING, BLOCKED, SeqCst, SeqCst).is_err() {
        futex(word, libc::FUTEX_WAIT, BLOCKED);
    }
}

/// One worker thread's shared state.
struct Worker {
    futex: AtomicI32,
    /// When its waker woke it, ns since the run's base.
    wake_ns: AtomicU64,
    /// The next worker on its message thread's posted list.
    next: AtomicUsize,
    /// Requests queued by a rate-limited message thread, and those it counts as pending.
    queued: AtomicU64,
    pending: AtomicU64,
    done: AtomicU64,
}

/// One message thread's shared state.
struct Messenger {
    futex: AtomicI32,
    /// The first worker posted on its list (an index into `Run::workers`), or NONE.
    head: AtomicUsize,
}

struct Run {
    b: Schbench,
    base: Instant,
    stopping: AtomicBool,
    messengers: Vec<Messenger>,
    workers: Vec<Worker>,
    per_thread: usize,
    locks: Vec<AtomicBool>,
    msize: usize,
    /// Each worker's histograms, merged at its end.
    wakeup: Mutex<Histogram<u64>>,
    request: Mutex<Histogram<u64>>,
}

impl Run {
    fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// Pushes worker `w` on message thread `m`'s list.
    fn push(&self, m: usize, w: usize) {
        let head = &self.messengers[m].head;
        let mut old = head.load(SeqCst);
        loop {
            self.workers[w].next.store(old, SeqCst);
            match head.compare_exchange(old, w, SeqCst, SeqCst) {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    /// Takes message thread `m`'s whole list, stamps one time on all and wakes them.
    fn wake_all(&self, m: usize) {
        let mut w = self.messengers[m].head.swap(NONE, SeqCst);
        let now = self.now_ns();
        while w != NONE {
            let next = self.workers[w].next.swap(NONE, SeqCst);
            self.workers[w].wake_ns.store(now, SeqCst);
            post(&self.workers[w].futex);
            w = next;
        }
    }

    /// Takes this CPU's lock, again if the thread moved between choosing and taking it.
    fn lock_this_cpu(&self) -> usize {
        loop {
            // SAFETY: sched_getcpu has no arguments.
            let cpu = (unsafe { libc::sched_getcpu() }.max(0) as usize) % self.locks.len();
            while self.locks[cpu].compare_exchange(false, true, SeqCst, SeqCst).is_err() {
                std::hint::spin_loop();
            }
            // SAFETY: as above.
            let now = (unsafe { libc::sched_getcpu() }.max(0) as usize) % self.locks.len();
            if now == cpu {
                return cpu;
            }
            self.locks[cpu].store(false, SeqCst);
        }
    }

    fn request(&self, data: &[Cell<u64>]) {
        if self.b.sleep_us > 0 {
            std::thread::sleep(Duration::from_micros(self.b.sleep_us as u64));
        }
        let cpu = self.lock_this_cpu();
        for _ in 0..self.b.operations {
            multiply(data, self.msize);
        }
        self.locks[cpu].store(false, SeqCst);
    }
}

/// m3 = m1 x m2, naively, over the three n x n matrices in `data` (wrapping, as C's
/// unsigned long does): each element of m3 is cleared, then each product is added into it
/// in memory, one store a step. m1 and m2 are only read.
fn multiply(data: &[Cell<u64>], n: usize) {
    if n == 0 {
        return;
    }
    let (m1, rest) = data.split_at(n * n);
    let (m2, m3) = rest.split_at(n * n);
    for (row, out) in m1.chunks_exact(n).zip(m3.chunks_exact(n)) {
        for (j, cell) in out.iter().enumerate() {
            cell.set(0);
            // Column j of m2: the first element of each row-long chunk from its j-th on.
            for (a, b) in row.iter().zip(m2[j..].chunks(n)) {
                cell.set(cell.get().wrapping_add(a.get().wrapping_mul(b[0].get())));
            }
        }
    }
}

/// Requests per second over one sampling interval, truncated to whole requests as schbench
/// keeps them; 0 over no time (its first sample, taken at the start).
fn rate(requests: u64, over: Duration) -> u64 {
    let r = requests as f64 / over.as_secs_f64();
    if r.is_finite() {
        r as u64
    } else {
        0
    }
}

/// The rate samples' 20th, 50th and 90th percentiles: the smallest sample with at least
/// that share of them at or below it, as schbench picks them.
fn rps_percentiles(h: &Histogram<u64>) -> RpsPercentiles {
    RpsPercentiles {
        p20: h.value_at_quantile(0.2) as f64,
        p50: h.value_at_quantile(0.5) as f64,
        p90: h.value_at_quantile(0.9) as f64,
        samples: h.len(),
    }
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// A worker thread: post, sleep, note the wake-up latency, serve the request(s).
fn worker(run: &Run, w: usize, matrices: Matrices) {
    let me = &run.workers[w];
    let m = w / run.per_thread;
    let data = matrices.cells();
    let (mut wakeup, mut request) = (hist(), hist());
    let record = |h: &mut Histogram<u64>, from_ns: u64, to_ns: u64| {
        // Whole µs, and none of 0 µs, as schbench records them.
        let us = to_ns.saturating_sub(from_ns) / 1000;
        if us > 0 {
            let _ = h.record(us);
        }
    };
    while !run.stopping.load(SeqCst) {
        me.futex.store(BLOCKED, SeqCst);
        me.wake_ns.store(run.now_ns(), SeqCst);
        let mut todo = 1;
        if run.b.rps > 0 {
            me.pending.store(0, SeqCst);
            todo = me.queued.swap(0, SeqCst);
            if todo > 0 {
                me.futex.store(RUNNING, SeqCst);
            }
        } else {
            run.push(m, w);
        }
        if todo == 0 || run.b.rps == 0 {
            post(&run.messengers[m].futex);
            if !run.stopping.load(SeqCst) {
                wait(&me.futex);
            }
            record(&mut wakeup, me.wake_ns.load(SeqCst), run.now_ns());
            if run.b.rps > 0 {
                continue; // the requests are taken at the top
            }
        }
        for _ in 0..todo {
            let start = run.now_ns();
            run.request(data);
            record(&mut request, start, run.now_ns());
            me.done.fetch_add(1, SeqCst);
        }
    }
    let _ = run.wakeup.lock().map(|mut h| h.add(&wakeup));
    let _ = run.request.lock().map(|mut h| h.add(&request));
}

/// A message thread without a rate: wake whoever posted, until the run stops.
fn messenger(run: &Run, m: usize) {
    let me = &run.messengers[m];
    loop {
        me.futex.store(BLOCKED, SeqCst);
        run.wake_all(m);
        if run.stopping.load(SeqCst) {
            run.wake_all(m);
            return;
        }
        wait(&me.futex);
    }
}

/// A message thread with a rate: queue its share of requests each second, round robin.
fn rate_messenger(run: &Run, m: usize) {
    let per_second = (run.b.rps / run.b.message_threads).max(1) as u64;
    let mine = &run.workers[m * run.per_thread..(m + 1) * run.per_thread];
    let mut next = 0usize;
    while !run.stopping.load(SeqCst) {
        let second = Instant::now();
        for _ in 0..per_second {
            if run.stopping.load(SeqCst) {
                break;
            }
            let w = &mine[next % mine.len()];
            next += 1;
            if w.pending.load(SeqCst) > MAX_PENDING {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            w.pending.fetch_add(1, SeqCst);
            w.queued.fetch_add(1, SeqCst);
            w.wake_ns.store(run.now_ns(), SeqCst);
            post(&w.futex);
        }
        while !run.stopping.load(SeqCst) && second.elapsed() < Duration::from_secs(1) {
            let left = Duration::from_secs(1).saturating_sub(second.elapsed());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    for w in mine {
        post(&w.futex);
    }
}

/// Runs schbench for its runtime on a worker allowed `cpus` CPUs; the figures as schbench
/// prints them.
pub fn schbench(b: &Schbench, cpus: u32) -> io::Result<BenchFigures> {
    let per_thread = b.workers_on(cpus) as usize;
    let n = b.message_threads as usize * per_thread;
    // SAFETY: sysconf has no memory arguments.
    let ncpu = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
    let msize = matrix_size(b.footprint_kb);
    let matrices = (0..n).map(|_| Matrices::new(msize)).collect::<io::Result<Vec<_>>>()?;
    let mut matrices = matrices.into_iter();
    let run = Arc::new(Run {
        b: *b,
        base: Instant::now(),
        stopping: AtomicBool::new(false),
        messengers: (0..b.message_threads)
            .map(|_| Messenger { futex: AtomicI32::new(BLOCKED), head: AtomicUsize::new(NONE) })
            .collect(),
        workers: (0..n)
            .map(|_| Worker {
                futex: AtomicI32::new(BLOCKED),
                wake_ns: AtomicU64::new(0),
                next: AtomicUsize::new(NONE),
                queued: AtomicU64::new(0),
                pending: AtomicU64::new(0),
                done: AtomicU64::new(0),
            })
            .collect(),
        per_thread,
        locks: (0..ncpu).map(|_| AtomicBool::new(false)).collect(),
        msize,
        wakeup: Mutex::new(hist()),
        request: Mutex::new(hist()),
    });
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new().name(name).stack_size(super::STACK_BYTES).spawn(f)
    };
    let mut threads = Vec::new();
    let mut started = Ok(());
    for m in 0..b.message_threads as usize {
        let r = run.clone();
        let body: Box<dyn FnOnce() + Send> = if b.rps > 0 {
            Box::new(move || rate_messenger(&r, m))
        } else {
            Box::new(move || messenger(&r, m))
        };
        match spawn(format!("schbench-msg{m}"), body) {
            Ok(t) => threads.push(t),
            Err(e) => started = Err(e),
        }
        for (w, data) in (m * per_thread..(m + 1) * per_thread).zip(matrices.by_ref()) {
            let r = run.clone();
            match spawn(format!("schbench-w{w}"), Box::new(move || worker(&r, w, data))) {
                Ok(t) => threads.push(t),
                Err(e) => started = Err(e),
            }
        }
        if started.is_err() {
            break;
        }
    }
    let start = Instant::now();
    let runtime = Duration::from_millis(if started.is_ok() { b.runtime_ms } else { 0 });
    let mut rps = hist();
    let (mut last, mut last_done) = (start, 0u64);
    let done = |r: &Run| r.workers.iter().map(|w| w.done.load(SeqCst)).sum::<u64>();
    loop {
        let now = Instant::now();
        let d = done(&run);
        let _ = rps.record(rate(d - last_done, now.duration_since(last)));
        (last, last_done) = (now, d);
        let left = runtime.saturating_sub(now.duration_since(start));
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_secs(1)));
    }
    run.stopping.store(true, SeqCst);
    for m in &run.messengers {
        post(&m.futex);
    }
    for w in &run.workers {
        post(&w.futex);
    }
    let mut panicked = false;
    for t in threads {
        panicked |= t.join().is_err();
    }
    started?;
    if panicked {
        return Err(io::Error::other("a schbench thread panicked"));
    }
    let requests = done(&run);
    let lat = |h: &Histogram<u64>| LatencyPercentiles {
        p50: h.value_at_quantile(0.5) as f64,
        p90: h.value_at_quantile(0.9) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        p999: h.value_at_quantile(0.999) as f64,
        samples: h.len(),
    };
    let wakeup = run.wakeup.lock().map(|h| lat(&h)).unwrap_or_default();
    let request = run.request.lock().map(|h| lat(&h)).unwrap_or_default();
    Ok(BenchFigures {
        source: "schbench".into(),
        wakeup_us: Some(wakeup),
        request_us: Some(request),
        rps: Some(rps_percentiles(&rps)),
        requests: Some(requests),
        average_rps: Some(requests as f64 / (b.runtime_ms as f64 / 1e3)),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn the_matrices_are_the_largest_three_of_u64_the_footprint_holds() {
        let kb = [0, 1, 16, 64, 256, 1024, 8192];
        assert_eq!(kb.map(matrix_size), [0, 6, 26, 52, 104, 209, 591]);
        for kb in (0..20_000).chain([1 << 22, u32::MAX]) {
            let (n, bytes) = (matrix_size(kb) as u64, kb as u64 * 1024);
            assert!(24 * n * n <= bytes && bytes < 24 * (n + 1) * (n + 1), "{kb} KiB: {n}");
        }
    }

    #[test]
    fn a_multiplication_writes_the_product_into_m3_alone() {
        let (m1, m2) = ([1, 2, 3, 4, 5, 6, 7, 8, 9], [9, 8, 7, 6, 5, 4, 3, 2, 1]);
        let mut data: Vec<u64> = m1.iter().chain(&m2).copied().chain([77; 9]).collect();
        multiply(Cell::from_mut(&mut data[..]).as_slice_of_cells(), 3);
        assert_eq!(data[..9], m1);
        assert_eq!(data[9..18], m2);
        assert_eq!(data[18..], [30, 24, 18, 84, 69, 54, 138, 114, 90]);
        // Wrapping, as C's unsigned long.
        let mut one = [u64::MAX, 3, 0];
        multiply(Cell::from_mut(&mut one[..]).as_slice_of_cells(), 1);
        assert_eq!(one, [u64::MAX, 3, u64::MAX - 2]);
        multiply(&[], 0);
    }

    #[test]
    fn m1_and_m2_stay_the_zero_page_and_m3_alone_is_the_workers() {
        const PRESENT: u64 = 1 << 63;
        const EXCLUSIVE: u64 = 1 << 56;
        let n = matrix_size(256);
        let m = Matrices::new(n).unwrap();
        multiply(m.cells(), n);
        // SAFETY: sysconf has no memory arguments.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        let flags = |addr: usize| {
            let mut entry = [0u8; 8];
            pagemap.read_exact_at(&mut entry, (addr / page * 8) as u64).unwrap();
            u64::from_le_bytes(entry) & (PRESENT | EXCLUSIVE)
        };
        let (base, bytes) = (m.ptr.as_ptr() as usize, 3 * n * n * 8);
        let m3 = base + 2 * n * n * 8;
        for p in (base..m3 - m3 % page).step_by(page) {
            assert_eq!(flags(p), PRESENT, "m1 or m2 at {:#x}: read, never written", p - base);
        }
        for p in (m3 - m3 % page..base + bytes).step_by(page) {
            assert_eq!(flags(p), PRESENT | EXCLUSIVE, "m3 at {:#x}: written", p - base);
        }
    }

    #[test]
    fn a_rate_sample_is_truncated_and_the_start_s_is_zero() {
        assert_eq!(rate(0, Duration::ZERO), 0);
        assert_eq!(rate(3, Duration::ZERO), 0);
        assert_eq!(rate(1000, Duration::from_millis(2500)), 400);
        assert_eq!(rate(859, Duration::from_secs(2)), 429);
    }

    #[test]
    fn the_rate_percentiles_are_schbenchs_with_its_opening_zero() {
        let pick = |samples: &[u64]| {
            let mut h = hist();
            samples.iter().for_each(|&r| h.record(r).unwrap());
            let p = rps_percentiles(&h);
            (p.p20, p.p50, p.p90, p.samples)
        };
        // schbench 24e32b8 -r 2 printed these of its 3 samples.
        assert_eq!(pick(&[0, 761, 1058]), (0.0, 761.0, 1058.0, 3));
        // A 5 s run: p50 is the second slowest second, not the median one.
        assert_eq!(pick(&[0, 420, 400, 440, 410, 430]), (400.0, 410.0, 440.0, 6));
    }
}
