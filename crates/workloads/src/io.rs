//! The seed studies' I/O-bound load: read blocks from an input file and write them to an
//! output file opened O_SYNC, so every write waits for the device.

use rand_core::{RngCore, SeedableRng};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// A worker's open input and output, prepared before the release.
#[derive(Debug)]
pub struct CopyFiles {
    input: File,
    output: File,
    input_len: u64,
}

impl CopyFiles {
    /// Opens `input` for reading and creates `output` (exclusively: an existing file or
    /// symlink there is an error) with O_SYNC.
    pub fn open(input: &Path, output: &Path) -> io::Result<CopyFiles> {
        let input_f = File::open(input)?;
        let input_len = input_f.metadata()?.len();
        if input_len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is empty", input.display()),
            ));
        }
        let output = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_SYNC)
            .open(output)?;
        Ok(CopyFiles { input: input_f, output, input_len })
    }
}

/// Copies `transfer` bytes in blocks of `block`, wrapping around the input if it is
/// shorter. Returns the bytes written and the number of synchronous writes.
pub fn copy(files: &mut CopyFiles, transfer: u64, block: u64) -> io::Result<(u64, u64)> {
    let mut buf = vec![0u8; block as usize];
    let (mut done, mut writes) = (0u64, 0u64);
    let mut pos = 0u64;
    while done < transfer {
        let want = block.min(transfer - done) as usize;
        let avail = (files.input_len - pos).min(want as u64) as usize;
        let n = files.input.read_at(&mut buf[..avail], pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "input file shrank during the copy",
            ));
        }
        files.output.write_all(&buf[..n])?;
        writes += 1;
        done += n as u64;
        pos = (pos + n as u64) % files.input_len;
    }
    Ok((done, writes))
}

/// Creates an input file of `len` pseudo-random bytes (exclusively), seeded so inputs are
/// reproducible; the seed study used /dev/urandom, which only costs more setup time.
pub fn make_input(path: &Path, len: u64, seed: u64) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut buf = vec![0u8; 1 << 16];
    let mut left = len;
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        r.fill_bytes(&mut buf[..n]);
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_exactly_and_wraps_around_a_short_input() {
        let dir = std::env::temp_dir().join(format!("schedlab-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (inp, out) = (dir.join("in"), dir.join("out"));
        make_input(&inp, 3000, 9).unwrap();
        let mut files = CopyFiles::open(&inp, &out).unwrap();
        let (bytes, writes) = copy(&mut files, 7000, 1024).unwrap();
        assert_eq!(bytes, 7000);
        // 1024,1024,952 (end of input), 1024,1024,952, 1000
        assert_eq!(writes, 7);
        let a = std::fs::read(&inp).unwrap();
        let b = std::fs::read(&out).unwrap();
        assert_eq!(&b[..3000], &a[..]);
        assert_eq!(&b[3000..6000], &a[..]);
        assert_eq!(&b[6000..], &a[..1000]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn refuses_to_overwrite_an_existing_output() {
        let dir = std::env::temp_dir().join(format!("schedlab-copy2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        make_input(&dir.join("in"), 10, 1).unwrap();
        std::fs::write(dir.join("out"), b"precious").unwrap();
        assert!(CopyFiles::open(&dir.join("in"), &dir.join("out")).is_err());
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), b"precious");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
