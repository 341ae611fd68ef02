//! `io_interrupts`: a disturbance load of device interrupts. A worker makes its own file
//! (set-up, not measured), then reads `read_bytes` at random 4 KiB-aligned offsets with
//! O_DIRECT: no page cache, so every read is a request to the disk and completes with the
//! disk's interrupt. Only a file this worker created is ever read; nothing is written to a
//! device. Where O_DIRECT is refused (tmpfs and some others say EINVAL), the reads are
//! buffered, with readahead off and the range dropped from the page cache before each read
//! (`posix_fadvise` RANDOM and DONTNEED), and the outcome says `direct: false`.

use crate::parallel::AlignedBuf;
use crate::Probe;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_plan::DIRECT_ALIGN;
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::ops::ControlFlow;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// Reads between probe ticks (a few milliseconds of disk reads at most).
const CHUNK: u64 = 16;

pub use schedlab_model::detail::IrqOutcome;

/// A worker's file, opened for its reads, and its aligned buffer; made before the release.
pub struct IrqReader {
    file: File,
    buf: AlignedBuf,
    read_bytes: u64,
    /// Offsets a read may start at, in units of 4096 bytes.
    slots: u64,
    rng: Xoshiro256PlusPlus,
    total: IrqOutcome,
}

impl IrqReader {
    /// Creates `path` (exclusively) with `file_bytes` of pseudo-random data, syncs it, and
    /// opens it for direct reads of `read_bytes`; both sizes are multiples of 4096 and
    /// `read_bytes <= file_bytes`.
    pub fn create(
        path: &Path,
        file_bytes: u64,
        read_bytes: u64,
        seed: u64,
    ) -> io::Result<IrqReader> {
        Self::create_with(path, file_bytes, read_bytes, seed, true)
    }

    pub(crate) fn create_with(
        path: &Path,
        file_bytes: u64,
        read_bytes: u64,
        seed: u64,
        try_direct: bool,
    ) -> io::Result<IrqReader> {
        let aligned = |x: u64| x > 0 && x.is_multiple_of(DIRECT_ALIGN);
        if !aligned(file_bytes) || !aligned(read_bytes) || read_bytes > file_bytes {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "file_bytes ({file_bytes}) and read_bytes ({read_bytes}) must be multiples of {DIRECT_ALIGN}, read_bytes <= file_bytes"
                ),
            ));
        }
        fill(path, file_bytes, seed)?;
        let mut buf = AlignedBuf::random(read_bytes as usize, seed);
        let (file, fallback) = if try_direct {
            open_direct(path, &mut buf)?
        } else {
            (None, Some("O_DIRECT not tried".to_string()))
        };
        let file = match file {
            Some(f) => f,
            None => {
                let f = File::open(path)?;
                // Written and synced: the pages are clean, so DONTNEED drops them all; no readahead.
                advise(&f, 0, 0, libc::POSIX_FADV_RANDOM)?;
                advise(&f, 0, 0, libc::POSIX_FADV_DONTNEED)?;
                f
            }
        };
        let total = IrqOutcome { direct: fallback.is_none(), fallback, ..Default::default() };
        Ok(IrqReader {
            file,
            buf,
            read_bytes,
            slots: (file_bytes - read_bytes) / DIRECT_ALIGN + 1,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            total,
        })
    }

    /// True if the reads bypass the page cache.
    pub fn direct(&self) -> bool {
        self.total.direct
    }

    /// Everything read so far, over all rounds.
    pub fn total(&self) -> IrqOutcome {
        self.total.clone()
    }
}

/// Writes the file in 1 MiB pieces and syncs it.
fn fill(path: &Path, file_bytes: u64, seed: u64) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mut chunk = AlignedBuf::random((1 << 20).min(file_bytes) as usize, seed ^ 0x1f0);
    let mut left = file_bytes;
    while left > 0 {
        let data = chunk.as_mut();
        let n = (data.len() as u64).min(left) as usize;
        f.write_all(&data[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// Opens with O_DIRECT and tries one read; EINVAL from either means this filesystem does
/// not do direct I/O (the file, None, and the reason). Other errors are errors.
fn open_direct(path: &Path, buf: &mut AlignedBuf) -> io::Result<(Option<File>, Option<String>)> {
    let refused = |e: &io::Error| e.raw_os_error() == Some(libc::EINVAL);
    match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
        Ok(f) => match f.read_at(buf.as_mut(), 0) {
            Ok(_) => Ok((Some(f), None)),
            Err(e) if refused(&e) => Ok((
                None,
                Some(format!(
                    "O_DIRECT read refused ({e}): buffered reads, page cache dropped before each"
                )),
            )),
            Err(e) => Err(e),
        },
        Err(e) if refused(&e) => Ok((
            None,
            Some(format!(
                "O_DIRECT open refused ({e}): buffered reads, page cache dropped before each"
            )),
        )),
        Err(e) => Err(e),
    }
}

fn advise(f: &File, off: u64, len: u64, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: an advisory call on our own open file descriptor.
    let rc = unsafe {
        libc::posix_fadvise(f.as_raw_fd(), off as libc::off_t, len as libc::off_t, advice)
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Does `reads` reads at random aligned offsets; stops early when the probe says so.
pub fn io_interrupts(
    r: &mut IrqReader,
    reads: u64,
    probe: &mut dyn Probe,
) -> io::Result<IrqOutcome> {
    let n = r.read_bytes;
    let mut done = 0u64;
    while done < reads {
        let off = (r.rng.next_u64() % r.slots) * DIRECT_ALIGN;
        if !r.total.direct {
            advise(&r.file, off, n, libc::POSIX_FADV_DONTNEED)?;
        }
        match r.file.read_at(r.buf.as_mut(), off) {
            Ok(got) if got as u64 == n => {}
            Ok(got) => {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!("short read at {off}: {got} of {n} bytes"),
                ))
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(io::Error::new(e.kind(), format!("reading {n} bytes at {off}: {e}")))
            }
        }
        done += 1;
        if done.is_multiple_of(CHUNK) && probe.tick() == ControlFlow::Break(()) {
            break;
        }
    }
    let o = IrqOutcome { reads: done, bytes: done * n, ..r.total.clone() };
    r.total.reads += o.reads;
    r.total.bytes += o.bytes;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProbe;
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;

    fn tmp(tag: &str) -> PathBuf {
        crate::test_dir(&format!("irq-{tag}"))
    }

    /// Read requests completed by the block device holding `dir`, if it is one.
    fn device_reads(dir: &Path) -> Option<u64> {
        let dev = std::fs::metadata(dir).ok()?.dev();
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        let stat = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/stat")).ok()?;
        stat.split_whitespace().next()?.parse().ok()
    }

    #[test]
    fn does_exactly_its_reads_of_the_right_size_and_each_direct_read_reaches_the_device() {
        let d = tmp("d");
        let path = d.join("f");
        let mut r = IrqReader::create(&path, 1 << 20, 8192, 3).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
        let before = device_reads(&d);
        let o = io_interrupts(&mut r, 300, &mut NoProbe).unwrap();
        let after = device_reads(&d);
        assert_eq!((o.reads, o.bytes), (300, 300 * 8192));
        if o.direct {
            assert!(o.fallback.is_none());
            // Not the page cache: the device completed at least one request per read.
            if let (Some(b), Some(a)) = (before, after) {
                assert!(a - b >= 300, "the device saw {} reads for 300 direct reads", a - b);
            }
        } else {
            assert!(o.fallback.as_deref().unwrap_or("").contains("O_DIRECT"), "{o:?}");
        }
        // A second round adds to the total; the file is created exclusively.
        io_interrupts(&mut r, 20, &mut NoProbe).unwrap();
        assert_eq!((r.total().reads, r.total().bytes), (320, 320 * 8192));
        assert!(
            IrqReader::create(&path, 1 << 20, 8192, 3).is_err(),
            "an existing file is never overwritten"
        );
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn the_buffered_fallback_reads_exactly_too_and_says_so() {
        let d = tmp("b");
        let mut r = IrqReader::create_with(&d.join("f"), 64 << 10, 4096, 1, false).unwrap();
        assert!(!r.direct());
        let o = io_interrupts(&mut r, 100, &mut NoProbe).unwrap();
        assert_eq!((o.reads, o.bytes, o.direct), (100, 100 * 4096, false));
        assert!(o.fallback.is_some());
        // One slot only: read_bytes = file_bytes always reads at offset 0.
        let mut one = IrqReader::create(&d.join("g"), 4096, 4096, 1).unwrap();
        assert_eq!(io_interrupts(&mut one, 5, &mut NoProbe).unwrap().bytes, 5 * 4096);
        assert!(IrqReader::create(&d.join("h"), 4096, 8192, 1).is_err());
        assert!(IrqReader::create(&d.join("i"), 5000, 4096, 1).is_err());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_stop_ends_the_reads_between_chunks() {
        struct Stop;
        impl Probe for Stop {
            fn tick(&mut self) -> ControlFlow<()> {
                ControlFlow::Break(())
            }
        }
        let d = tmp("s");
        let mut r = IrqReader::create(&d.join("f"), 64 << 10, 4096, 1).unwrap();
        assert_eq!(io_interrupts(&mut r, 1000, &mut Stop).unwrap().reads, CHUNK);
        std::fs::remove_dir_all(d).unwrap();
    }
}
