//! Job bodies: the work one job does. Everything a body needs (plans, buffers, open files)
//! is made when it is built, so [`JobBody::run_job`] neither allocates nor opens anything.
//!
//! - [`SpinBody`] burns exactly C of the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), so a
//!   preempted job still does all its work.
//! - [`FftBody`] is the seed's CPU-bound load: in-core FFTs over a large array. One pass is a
//!   forward and an inverse FFT of one segment, scaled back, so the data never blows up; the
//!   segments are visited in turn, so the whole array is worked through, not one cached
//!   segment. A job is a fixed number of passes, chosen from a calibration.
//! - [`ReadFileBody`] is the seed's I/O-bound load: a job preads chunks of a file made by
//!   [`make_file`] before the loop, optionally dropping them from the page cache first.

use crate::clock::thread_cpu_ns;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The work of one job.
pub trait JobBody {
    /// Does one job; returns the work units done (spin rounds, FFT passes, bytes read).
    /// Must not allocate.
    fn run_job(&mut self) -> u64;

    /// Failed operations so far (a body keeps going after an error and counts it).
    fn errors(&self) -> u64 {
        0
    }
}

impl<B: JobBody + ?Sized> JobBody for Box<B> {
    fn run_job(&mut self) -> u64 {
        (**self).run_job()
    }

    fn errors(&self) -> u64 {
        (**self).errors()
    }
}

/// Why a body could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// A parameter is out of range.
    #[error("{0}")]
    Invalid(String),
    /// The input file could not be opened or is too short.
    #[error("input file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
}

/// Burns C nanoseconds of the calling thread's CPU time.
#[derive(Debug, Clone)]
pub struct SpinBody {
    c_ns: u64,
    state: u64,
}

/// Arithmetic rounds between two reads of the thread CPU clock (a system call): well under
/// a microsecond, so a job overshoots C by less than that.
const SPIN_ROUND: u32 = 256;

impl SpinBody {
    /// A body that burns `c_ns` of thread CPU time per job.
    pub fn new(c_ns: u64) -> Self {
        SpinBody { c_ns, state: 0x9E37_79B9_7F4A_7C15 }
    }
}

impl JobBody for SpinBody {
    fn run_job(&mut self) -> u64 {
        let start = thread_cpu_ns();
        let mut rounds = 0;
        loop {
            for _ in 0..SPIN_ROUND {
                // xorshift64: cheap, and black_box keeps it from being optimised away.
                let mut s = self.state;
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                self.state = std::hint::black_box(s);
            }
            rounds += 1;
            if thread_cpu_ns().saturating_sub(start) >= self.c_ns {
                return rounds;
            }
        }
    }
}

/// In-core FFT passes over a large preallocated array of complex f32.
pub struct FftBody {
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    data: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
    len: usize,
    next_segment: usize,
    passes_per_job: u32,
}

/// Default FFT length (complex points per pass).
pub const DEFAULT_FFT_LEN: usize = 4096;
/// Default array: 2 Mi complex f32, the seed's "4 million floating point numbers" (16 MiB).
pub const DEFAULT_FFT_ARRAY_LEN: usize = 1 << 21;

impl FftBody {
    /// Plans FFTs of `len` points over an array of `array_len` points (a multiple of `len`),
    /// filled with pseudo-random data. One pass per job until [`FftBody::set_passes_per_job`].
    pub fn new(len: usize, array_len: usize) -> Result<Self, BodyError> {
        if len == 0 || array_len < len || !array_len.is_multiple_of(len) {
            return Err(BodyError::Invalid(format!(
                "FFT array of {array_len} points must be a positive multiple of the length {len}"
            )));
        }
        let mut planner = FftPlanner::<f32>::new();
        let forward = planner.plan_fft_forward(len);
        let inverse = planner.plan_fft_inverse(len);
        let scratch_len = forward.get_inplace_scratch_len().max(inverse.get_inplace_scratch_len());
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(len as u64);
        let mut sample = || (rng.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
        let data = (0..array_len).map(|_| Complex::new(sample(), sample())).collect();
        let scratch = vec![Complex::new(0.0, 0.0); scratch_len];
        let mut body =
            FftBody { forward, inverse, data, scratch, len, next_segment: 0, passes_per_job: 1 };
        // One pass faults in the scratch pages (zeroed memory is mapped lazily) before any job.
        body.pass();
        body.next_segment = 0;
        Ok(body)
    }

    /// FFT length in points.
    pub fn fft_len(&self) -> usize {
        self.len
    }

    /// Array length in points.
    pub fn array_len(&self) -> usize {
        self.data.len()
    }

    /// Passes each job does.
    pub fn passes_per_job(&self) -> u32 {
        self.passes_per_job
    }

    /// Sets the passes each job does (at least 1).
    pub fn set_passes_per_job(&mut self, passes: u32) {
        self.passes_per_job = passes.max(1);
    }

    /// The array (for checking the work is real).
    pub fn data(&self) -> &[Complex<f32>] {
        &self.data
    }

    /// One pass: forward then inverse FFT of the next segment, scaled by 1/len.
    pub fn pass(&mut self) {
        let start = self.next_segment * self.len;
        let segment = &mut self.data[start..start + self.len];
        self.forward.process_with_scratch(segment, &mut self.scratch);
        self.inverse.process_with_scratch(segment, &mut self.scratch);
        let scale = 1.0 / self.len as f32;
        for v in segment.iter_mut() {
            *v *= scale;
        }
        self.next_segment = (self.next_segment + 1) % (self.data.len() / self.len);
    }

    /// Thread CPU nanoseconds per pass, averaged over passes worth at least `min_cpu_ns`
    /// (after one warm-up sweep of the array, at most 64 passes).
    pub fn calibrate(&mut self, min_cpu_ns: u64) -> u64 {
        for _ in 0..(self.data.len() / self.len).min(64) {
            self.pass();
        }
        let start = thread_cpu_ns();
        let mut passes = 0u64;
        loop {
            self.pass();
            passes += 1;
            let spent = thread_cpu_ns() - start;
            if spent >= min_cpu_ns {
                return (spent / passes).max(1);
            }
        }
    }
}

impl JobBody for FftBody {
    fn run_job(&mut self) -> u64 {
        for _ in 0..self.passes_per_job {
            self.pass();
        }
        u64::from(self.passes_per_job)
    }
}

/// CPU nanoseconds per FFT pass of `len` points over an array of `array_len` points,
/// measured over about 50 ms of CPU time.
pub fn calibrate_fft(len: usize, array_len: usize) -> Result<u64, BodyError> {
    Ok(FftBody::new(len, array_len)?.calibrate(50_000_000))
}

/// Passes per job to cover `c_ns` at `ns_per_pass`: the nearest whole number, at least 1.
pub fn passes_for(c_ns: u64, ns_per_pass: u64) -> u32 {
    let passes = (c_ns + ns_per_pass.max(1) / 2) / ns_per_pass.max(1);
    passes.clamp(1, u64::from(u32::MAX)) as u32
}

/// Reads chunks of a file with pread into one preallocated buffer, cycling through the file.
pub struct ReadFileBody {
    file: File,
    file_len: u64,
    buffer: Vec<u8>,
    chunks_per_job: u32,
    offset: u64,
    drop_cache: bool,
    errors: u64,
}

/// Writes `bytes` of pseudo-random data (from `seed`) to `path` and syncs it, so its pages
/// are clean and can be dropped from the cache. Setup: call it before the loop.
pub fn make_file(path: &Path, bytes: u64, seed: u64) -> io::Result<()> {
    let mut f = File::create(path)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut block = vec![0u8; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        rng.fill_bytes(&mut block);
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

impl ReadFileBody {
    /// Opens `path` for jobs of `chunks_per_job` reads of `chunk_bytes` each. With
    /// `drop_cache`, each chunk is dropped from the page cache (posix_fadvise DONTNEED)
    /// before it is read, so the read goes to the device.
    pub fn open(
        path: &Path,
        chunk_bytes: usize,
        chunks_per_job: u32,
        drop_cache: bool,
    ) -> Result<Self, BodyError> {
        if chunk_bytes == 0 || chunks_per_job == 0 {
            return Err(BodyError::Invalid(
                "read_file needs chunk_bytes > 0 and chunks_per_job > 0".into(),
            ));
        }
        let err = |source| BodyError::File { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(err)?;
        let file_len = file.metadata().map_err(err)?.len();
        if file_len < chunk_bytes as u64 {
            let msg = format!("{file_len} bytes is shorter than one chunk of {chunk_bytes}: make it with make_file first");
            return Err(err(io::Error::new(io::ErrorKind::InvalidInput, msg)));
        }
        // Filled with a non-zero byte so the pages are written (faulted in) now, not in a job.
        Ok(ReadFileBody {
            file,
            file_len,
            buffer: vec![0xA5; chunk_bytes],
            chunks_per_job,
            offset: 0,
            drop_cache,
            errors: 0,
        })
    }

    /// Where the next chunk will be read from.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The last chunk read.
    pub fn buffer(&self) -> &[u8] {
        &self.buffer
    }

    fn read_chunk(&mut self) -> u64 {
        let chunk = self.buffer.len() as u64;
        if self.offset + chunk > self.file_len {
            self.offset = 0;
        }
        if self.drop_cache {
            // SAFETY: a valid open descriptor and a range inside the file.
            unsafe {
                libc::posix_fadvise(
                    self.file.as_raw_fd(),
                    self.offset as libc::off_t,
                    chunk as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
        }
        // read_exact_at retries short reads and EINTR; an OS error carries no allocation.
        let read = match self.file.read_exact_at(&mut self.buffer, self.offset) {
            Ok(()) => chunk,
            Err(_) => {
                self.errors += 1;
                0
            }
        };
        self.offset += chunk;
        read
    }
}

impl JobBody for ReadFileBody {
    fn run_job(&mut self) -> u64 {
        (0..self.chunks_per_job).map(|_| self.read_chunk()).sum()
    }

    fn errors(&self) -> u64 {
        self.errors
    }
}

/// A job body as the engine describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BodySpec {
    /// Burn C of thread CPU time.
    Spin,
    /// FFT passes; `passes_per_job` defaults to the calibrated number covering C.
    Fft {
        /// FFT length in points.
        #[serde(default = "default_fft_len")]
        len: usize,
        /// Array length in points.
        #[serde(default = "default_fft_array_len")]
        array_len: usize,
        /// Fixed passes per job instead of calibrating.
        #[serde(default)]
        passes_per_job: Option<u32>,
    },
    /// pread chunks of a file made beforehand with [`make_file`].
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Bytes per read.
        chunk_bytes: usize,
        /// Reads per job.
        chunks_per_job: u32,
        /// Drop each chunk from the page cache before reading it.
        #[serde(default)]
        drop_cache: bool,
    },
}

fn default_fft_len() -> usize {
    DEFAULT_FFT_LEN
}

fn default_fft_array_len() -> usize {
    DEFAULT_FFT_ARRAY_LEN
}

/// Builds the body for a task with request length `c_ns` (calibrating an FFT if asked).
pub fn build_body(spec: &BodySpec, c_ns: u64) -> Result<Box<dyn JobBody + Send>, BodyError> {
    Ok(match spec {
        BodySpec::Spin => Box::new(SpinBody::new(c_ns)),
        BodySpec::Fft { len, array_len, passes_per_job } => {
            let mut body = FftBody::new(*len, *array_len)?;
            let passes = match passes_per_job {
                Some(p) => *p,
                None => passes_for(c_ns, body.calibrate(50_000_000)),
            };
            body.set_passes_per_job(passes);
            Box::new(body)
        }
        BodySpec::ReadFile { path, chunk_bytes, chunks_per_job, drop_cache } => {
            Box::new(ReadFileBody::open(path, *chunk_bytes, *chunks_per_job, *drop_cache)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_burns_at_least_c_of_thread_cpu() {
        let mut body = SpinBody::new(3_000_000);
        for _ in 0..3 {
            let before = thread_cpu_ns();
            assert!(body.run_job() >= 1);
            let used = thread_cpu_ns() - before;
            // At least C by construction; the upper bound is only a sanity check.
            assert!((3_000_000..30_000_000).contains(&used), "{used}");
        }
    }

    #[test]
    fn fft_pass_is_an_identity_up_to_rounding() {
        let mut body = FftBody::new(256, 1024).unwrap();
        let original = body.data().to_vec();
        body.set_passes_per_job(4);
        assert_eq!(body.run_job(), 4, "four passes: each of the four segments once");
        let worst =
            original.iter().zip(body.data()).map(|(a, b)| (a - b).norm()).fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "forward + inverse + 1/len must give the data back, off by {worst}");
        assert!(original.iter().any(|v| v.norm() > 0.1), "the data is not all zero");
    }

    #[test]
    fn fft_pass_transforms_each_segment_in_turn() {
        // Fill segment 0 with a constant: after a forward FFT only bin 0 would be non-zero;
        // a pass must give the constant back, and leave segment 1 untouched until its turn.
        let mut body = FftBody::new(64, 128).unwrap();
        body.data.iter_mut().take(64).for_each(|v| *v = Complex::new(1.0, 0.0));
        let second = body.data()[64..].to_vec();
        body.pass();
        assert!(body.data()[..64].iter().all(|v| (v - Complex::new(1.0, 0.0)).norm() < 1e-5));
        assert_eq!(&body.data()[64..], &second[..]);
        assert_eq!(body.next_segment, 1);
        body.pass();
        assert_eq!(body.next_segment, 0, "wraps around the array");
    }

    #[test]
    fn fft_rejects_bad_shapes() {
        assert!(FftBody::new(0, 16).is_err());
        assert!(FftBody::new(16, 8).is_err());
        assert!(FftBody::new(16, 24).is_err());
    }

    #[test]
    fn calibration_scales_with_length() {
        let small = FftBody::new(256, 256 * 16).unwrap().calibrate(5_000_000);
        let large = FftBody::new(1 << 16, 1 << 17).unwrap().calibrate(5_000_000);
        // 256 x the points costs far more than 256 x per pass (n log n); 10 x is a loose floor.
        assert!(small > 0 && large > 10 * small, "{small} {large}");
        assert!(calibrate_fft(64, 128).unwrap() > 0);
    }

    #[test]
    fn passes_cover_c() {
        assert_eq!(passes_for(10_000, 3_000), 3);
        assert_eq!(passes_for(10_000, 4_000), 3, "2.5 rounds up");
        assert_eq!(passes_for(100, 3_000), 1, "never zero");
        assert_eq!(passes_for(100, 0), 100, "a zero calibration counts as 1 ns");
    }

    #[test]
    fn read_file_cycles_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input");
        make_file(&path, 1 << 16, 5).unwrap();
        let content = std::fs::read(&path).unwrap();
        assert_eq!(content.len(), 1 << 16);
        let mut body = ReadFileBody::open(&path, 1 << 12, 3, true).unwrap();
        assert_eq!(body.run_job(), 3 << 12);
        assert_eq!(body.offset(), 3 << 12);
        assert_eq!(body.buffer(), &content[2 << 12..3 << 12], "the third chunk was read last");
        for _ in 0..5 {
            body.run_job();
        }
        // 16 chunks in the file: 18 reads wrap once and end after chunk 1.
        assert_eq!(body.offset(), 2 << 12);
        assert_eq!(body.buffer(), &content[1 << 12..2 << 12]);
        assert_eq!(body.errors(), 0);
    }

    #[test]
    fn read_file_refuses_short_or_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        make_file(&path, 100, 1).unwrap();
        assert!(matches!(ReadFileBody::open(&path, 4096, 1, false), Err(BodyError::File { .. })));
        assert!(matches!(
            ReadFileBody::open(&dir.path().join("none"), 4096, 1, false),
            Err(BodyError::File { .. })
        ));
        assert!(matches!(ReadFileBody::open(&path, 0, 1, false), Err(BodyError::Invalid(_))));
    }

    #[test]
    fn body_spec_builds_each_kind() {
        let spin: BodySpec = serde_json::from_str(r#"{"kind": "spin"}"#).unwrap();
        let mut b = build_body(&spin, 1_000_000).unwrap();
        assert!(b.run_job() >= 1);
        let fft: BodySpec = serde_json::from_str(
            r#"{"kind": "fft", "len": 64, "array_len": 256, "passes_per_job": 3}"#,
        )
        .unwrap();
        assert_eq!(build_body(&fft, 1).unwrap().run_job(), 3);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        make_file(&path, 8192, 2).unwrap();
        let read =
            BodySpec::ReadFile { path, chunk_bytes: 4096, chunks_per_job: 2, drop_cache: false };
        assert_eq!(build_body(&read, 1).unwrap().run_job(), 8192);
    }
}
