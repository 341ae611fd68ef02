//! Seed 002's parallel writer, and its reading twin: `files` files of `file_bytes` each are
//! shared out among `threads` threads (a thread takes the next file number when it
//! finishes one, as the seed's mutex-protected counter did), `buffer_bytes` per system call.
//! Every call's latency goes into a per-thread HdrHistogram; each file's start and end are
//! kept. Buffers and histograms are made before the release; the work is the opens, the
//! calls and (fsync mode) the fsyncs.

use hdrhistogram::Histogram;
use rand_core::{RngCore, SeedableRng};
use schedlab_model::hist;
use schedlab_model::IoSummary;
use schedlab_plan::{IoMode, ParIo, DIRECT_ALIGN};
use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// A heap buffer aligned for O_DIRECT.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value; one thread uses it at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), DIRECT_ALIGN as usize)
            .expect("valid layout")
    }

    /// `len` bytes of pseudo-random data (so no filesystem can compress or dedupe it).
    pub fn random(len: usize, seed: u64) -> AlignedBuf {
        // SAFETY: non-zero size, valid alignment; checked for null below.
        let ptr = unsafe { std::alloc::alloc_zeroed(Self::layout(len)) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(Self::layout(len));
        }
        let mut b = AlignedBuf { ptr, len };
        rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(b.as_mut());
        b
    }

    pub(crate) fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to len initialised bytes we own.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    fn as_ref(&self) -> &[u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `random` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, Self::layout(self.len)) }
    }
}

/// One thread's preallocated state.
struct ThreadState {
    buf: AlignedBuf,
    hist: Histogram<u64>,
    files: Vec<(u32, u32, f64, f64)>,
    bytes: u64,
    ops: u64,
    fsync_ns: u64,
}

/// Everything a parallel I/O worker prepares before the release.
pub struct ParPrepared {
    shape: ParIo,
    threads: Vec<ThreadState>,
}

/// Latencies are recorded in ns from 100 ns to 100 s with 3 significant digits.
fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(100, 100_000_000_000, 3).expect("valid histogram bounds")
}

impl ParPrepared {
    /// Allocates a buffer and a histogram per thread.
    pub fn new(shape: &ParIo, seed: u64) -> ParPrepared {
        let threads = (0..shape.threads)
            .map(|t| ThreadState {
                buf: AlignedBuf::random(
                    shape.buffer_bytes as usize,
                    seed ^ (t as u64).wrapping_mul(0x9e37_79b9),
                ),
                hist: new_hist(),
                files: Vec::with_capacity((shape.files / shape.threads as u64 + 1) as usize),
                bytes: 0,
                ops: 0,
                fsync_ns: 0,
            })
            .collect();
        ParPrepared { shape: *shape, threads }
    }
}

fn open_flags(mode: IoMode) -> i32 {
    match mode {
        IoMode::Sync => libc::O_SYNC,
        IoMode::Direct => libc::O_DIRECT,
        IoMode::Buffered | IoMode::Fsync => 0,
    }
}

fn ns_since(t0: Instant, t: Instant) -> f64 {
    t.duration_since(t0).as_secs_f64()
}

/// The name of file `i` of a worker: `<prefix><i>`.
pub fn file_path(dir: &Path, prefix: &str, i: u64) -> PathBuf {
    dir.join(format!("{prefix}{i}"))
}

/// Writes the files `dir/<prefix><i>` (created exclusively). `stop` ends the work between files.
pub fn par_write(
    dir: &Path,
    prefix: &str,
    p: &mut ParPrepared,
    stop: &AtomicBool,
) -> io::Result<IoSummary> {
    run(p, stop, "write", |cx, i, t0| write_file(&file_path(dir, prefix, i), cx, i, t0))
}

/// Reads the files `dir/<prefix><i>` (made beforehand by [`make_read_inputs`]).
pub fn par_read(
    dir: &Path,
    prefix: &str,
    p: &mut ParPrepared,
    stop: &AtomicBool,
) -> io::Result<IoSummary> {
    run(p, stop, "read", |cx, i, t0| read_file(&file_path(dir, prefix, i), cx, i, t0))
}

/// What a file function gets: the thread's state, its number and the shape.
struct ThreadCtx<'a> {
    state: &'a mut ThreadState,
    thread: u32,
    shape: ParIo,
}

fn run<F>(p: &mut ParPrepared, stop: &AtomicBool, op: &str, per_file: F) -> io::Result<IoSummary>
where
    F: Fn(&mut ThreadCtx, u64, Instant) -> io::Result<()> + Sync,
{
    let shape = p.shape;
    let next = AtomicU64::new(0);
    let t0 = Instant::now();
    let failed = AtomicBool::new(false);
    let results: Vec<io::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = p
            .threads
            .iter_mut()
            .enumerate()
            .map(|(t, state)| {
                let (next, per_file, failed) = (&next, &per_file, &failed);
                s.spawn(move || -> io::Result<()> {
                    let mut cx = ThreadCtx { state, thread: t as u32, shape };
                    loop {
                        if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= shape.files {
                            return Ok(());
                        }
                        if let Err(e) = per_file(&mut cx, i, t0) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("an I/O thread panicked"))))
            .collect()
    });
    let wall = t0.elapsed().as_secs_f64();
    if let Some(e) = results.into_iter().find_map(Result::err) {
        return Err(e);
    }
    Ok(summarise(p, op, wall))
}

fn write_file(path: &Path, cx: &mut ThreadCtx, i: u64, t0: Instant) -> io::Result<()> {
    let shape = cx.shape;
    let start = Instant::now();
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(open_flags(shape.mode))
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))?;
    let mut left = shape.file_bytes;
    while left > 0 {
        let n = left.min(shape.buffer_bytes) as usize;
        let buf = &cx.state.buf.as_ref()[..n];
        let mut off = 0;
        while off < n {
            let t = Instant::now();
            let w = f.write(&buf[off..])?;
            let dt = t.elapsed().as_nanos() as u64;
            cx.state.hist.saturating_record(dt.max(1));
            cx.state.ops += 1;
            if w == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("writing {}: device full?", path.display()),
                ));
            }
            off += w;
        }
        left -= n as u64;
        cx.state.bytes += n as u64;
    }
    if shape.mode == IoMode::Fsync {
        let t = Instant::now();
        f.sync_all()?;
        cx.state.fsync_ns += t.elapsed().as_nanos() as u64;
    }
    drop(f);
    let end = Instant::now();
    cx.state.files.push((i as u32, cx.thread, ns_since(t0, start), ns_since(t0, end)));
    Ok(())
}

fn read_file(path: &Path, cx: &mut ThreadCtx, i: u64, t0: Instant) -> io::Result<()> {
    let shape = cx.shape;
    let start = Instant::now();
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(open_flags(shape.mode))
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))?;
    let n = shape.buffer_bytes as usize;
    loop {
        let t = Instant::now();
        let r = f.read(&mut cx.state.buf.as_mut()[..n])?;
        let dt = t.elapsed().as_nanos() as u64;
        if r == 0 {
            break;
        }
        cx.state.hist.saturating_record(dt.max(1));
        cx.state.ops += 1;
        cx.state.bytes += r as u64;
    }
    let end = Instant::now();
    cx.state.files.push((i as u32, cx.thread, ns_since(t0, start), ns_since(t0, end)));
    Ok(())
}

fn summarise(p: &ParPrepared, op: &str, wall: f64) -> IoSummary {
    let mut all = new_hist();
    for t in &p.threads {
        let _ = all.add(&t.hist);
    }
    let bytes: u64 = p.threads.iter().map(|t| t.bytes).sum();
    let mut file_times: Vec<(u32, u32, f64, f64)> =
        p.threads.iter().flat_map(|t| t.files.iter().copied()).collect();
    file_times.sort_by_key(|f| f.0);
    IoSummary {
        op: op.to_string(),
        mode: p.shape.mode.name().to_string(),
        bytes,
        files: file_times.len() as u64,
        threads: p.shape.threads,
        ops: p.threads.iter().map(|t| t.ops).sum(),
        mb_s: if wall > 0.0 { bytes as f64 / wall / 1e6 } else { 0.0 },
        lat_ns: hist::summary(&all),
        hist: hist::encode(&all),
        file_times,
        thread_bytes: p.threads.iter().map(|t| t.bytes).collect(),
        fsync_s: p.threads.iter().map(|t| t.fsync_ns).sum::<u64>() as f64 * 1e-9,
    }
}

/// Creates the input files of a `par_read` worker (set-up, not measured): `files` files of
/// `file_bytes` pseudo-random bytes, written and fsync'd.
pub fn make_read_inputs(dir: &Path, prefix: &str, shape: &ParIo, seed: u64) -> io::Result<()> {
    let mut buf = AlignedBuf::random((1 << 20).min(shape.file_bytes.max(1)) as usize, seed);
    for i in 0..shape.files {
        let path = file_path(dir, prefix, i);
        let mut f = OpenOptions::new().write(true).create_new(true).open(&path)?;
        let mut left = shape.file_bytes;
        while left > 0 {
            let n = left.min(buf.len as u64) as usize;
            f.write_all(&buf.as_mut()[..n])?;
            left -= n as u64;
        }
        f.sync_all()?;
    }
    Ok(())
}

/// True if `dir` holds the `files` inputs of the right size (made by an earlier cell).
pub fn read_inputs_ready(dir: &Path, prefix: &str, shape: &ParIo) -> bool {
    (0..shape.files).all(|i| {
        std::fs::metadata(file_path(dir, prefix, i)).is_ok_and(|m| m.len() == shape.file_bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        crate::test_dir(&format!("par-{tag}"))
    }

    fn shape(files: u64, bytes: u64, threads: u32, buf: u64, mode: IoMode) -> ParIo {
        ParIo { files, file_bytes: bytes, threads, buffer_bytes: buf, mode }
    }

    #[test]
    fn writes_every_file_exactly_once_with_the_right_size() {
        let d = tmp("w");
        let s = shape(13, 10_000, 4, 4096, IoMode::Buffered);
        let mut p = ParPrepared::new(&s, 7);
        let out = par_write(&d, "f", &mut p, &AtomicBool::new(false)).unwrap();
        assert_eq!(out.bytes, 130_000);
        assert_eq!(out.files, 13);
        let idx: Vec<u32> = out.file_times.iter().map(|f| f.0).collect();
        assert_eq!(idx, (0..13).collect::<Vec<_>>());
        for i in 0..13 {
            assert_eq!(std::fs::metadata(d.join(format!("f{i}"))).unwrap().len(), 10_000);
        }
        // 10000 = 4096 + 4096 + 1808: three calls per file (no short writes to a regular file).
        assert_eq!(out.ops, 39);
        assert_eq!(out.lat_ns.count, 39);
        assert_eq!(out.thread_bytes.iter().sum::<u64>(), 130_000);
        assert!(out.file_times.iter().all(|f| f.3 >= f.2 && f.1 < 4));
        assert!(out.lat_ns.p50 <= out.lat_ns.p99 && out.lat_ns.p99 <= out.lat_ns.max);
        let h = hist::decode(&out.hist).unwrap();
        assert_eq!(h.len(), 39);
        // Files are created exclusively: a second round into the same names fails.
        let mut p = ParPrepared::new(&s, 7);
        assert!(par_write(&d, "f", &mut p, &AtomicBool::new(false)).is_err());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn reads_back_what_was_made_and_fsync_and_direct_modes_work() {
        let d = tmp("r");
        let s = shape(5, 3 * 4096, 2, 4096, IoMode::Buffered);
        make_read_inputs(&d, "in", &s, 1).unwrap();
        assert!(read_inputs_ready(&d, "in", &s));
        let mut p = ParPrepared::new(&s, 1);
        let out = par_read(&d, "in", &mut p, &AtomicBool::new(false)).unwrap();
        assert_eq!((out.bytes, out.files, out.ops, out.op.as_str()), (5 * 3 * 4096, 5, 15, "read"));
        let s = shape(2, 8192, 1, 4096, IoMode::Fsync);
        let mut p = ParPrepared::new(&s, 1);
        let out = par_write(&d, "fs", &mut p, &AtomicBool::new(false)).unwrap();
        assert_eq!(out.bytes, 16384);
        assert!(out.fsync_s > 0.0);
        // O_DIRECT needs aligned buffers: AlignedBuf gives them (tmpfs refuses O_DIRECT).
        let s = shape(2, 8192, 2, 4096, IoMode::Direct);
        let mut p = ParPrepared::new(&s, 1);
        match par_write(&d, "dio", &mut p, &AtomicBool::new(false)) {
            Ok(out) => assert_eq!(out.bytes, 16384),
            Err(e) => assert_eq!(
                e.raw_os_error(),
                Some(libc::EINVAL),
                "only a filesystem without O_DIRECT may refuse: {e}"
            ),
        }
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn stop_ends_the_work_between_files() {
        let d = tmp("s");
        let s = shape(50, 100, 1, 100, IoMode::Buffered);
        let mut p = ParPrepared::new(&s, 1);
        let out = par_write(&d, "x", &mut p, &AtomicBool::new(true)).unwrap();
        assert_eq!(out.files, 0);
        std::fs::remove_dir_all(d).unwrap();
    }
}
