//! A capture as the kernel gave it: each CPU's ring-buffer pages as bytes, with the layout
//! files needed to decode them and the buffer's own loss counters. It can be written to a
//! file and read back (a fixture, or a cell's trace kept beside the database).
//!
//! The file: `SLTRACE1\n`, a u64 (little-endian) length, that many bytes of JSON ([`Meta`]),
//! then each CPU's pages back to back in the order the JSON lists them.

use schedlab_model::trace::{RawTrace, RawTraceMeta};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// The file's first bytes.
const MAGIC: &[u8; 9] = b"SLTRACE1\n";

/// One CPU's per-CPU buffer counters (`per_cpu/cpuN/stats`) at the end of a capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuStats {
    /// Events still in the buffer.
    pub entries: u64,
    /// Events overwritten before they were read (the buffer was full, overwrite mode).
    pub overrun: u64,
    /// Events lost because a nested write overran the page being committed.
    pub commit_overrun: u64,
    /// Events dropped because the buffer was full (non-overwrite mode).
    pub dropped: u64,
    /// Events read.
    pub read: u64,
}

impl CpuStats {
    /// Parses a `stats` file (`overrun: 0`, `dropped events: 0`, ...).
    pub fn parse(text: &str) -> CpuStats {
        let mut s = CpuStats::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else { continue };
            let Ok(v) = v.trim().parse::<u64>() else { continue };
            match k.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "dropped events" => s.dropped = v,
                "read events" => s.read = v,
                _ => {}
            }
        }
        s
    }

    /// Events the buffer lost: overwritten, overrun on commit, or dropped.
    pub fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped
    }
}

/// One CPU's capture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuRaw {
    /// The CPU.
    pub cpu: u32,
    /// Its pages, whole, back to back (a multiple of the page size).
    pub pages: Vec<u8>,
    /// Its buffer's counters after the capture.
    pub stats: CpuStats,
}

/// A whole capture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Raw {
    /// `events/header_page`.
    pub header_page: String,
    /// `events/header_event` (what trace-cmd checks the event header against).
    pub header_event: String,
    /// The `format` files of the events enabled.
    pub formats: Vec<String>,
    /// Bytes per page.
    pub page_size: usize,
    /// Per CPU, ascending.
    pub cpus: Vec<CpuRaw>,
    /// CLOCK_MONOTONIC ns when tracing was switched on and off.
    pub start_ns: u64,
    /// See `start_ns`.
    pub stop_ns: u64,
    /// The thread that read the buffers (0 if none): it is the capturing process's, and may
    /// appear in the trace taking a CPU.
    pub reader_tid: i32,
}

/// What the file says before the pages.
#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    header_page: String,
    #[serde(default)]
    header_event: String,
    formats: Vec<String>,
    page_size: usize,
    /// (cpu, bytes of pages, counters).
    cpus: Vec<(u32, usize, CpuStats)>,
    start_ns: u64,
    stop_ns: u64,
    reader_tid: i32,
}

impl Raw {
    /// Events the buffers lost, over every CPU (from their counters).
    pub fn lost(&self) -> u64 {
        self.cpus.iter().map(|c| c.stats.lost()).sum()
    }

    /// Bytes of pages over every CPU.
    pub fn bytes(&self) -> usize {
        self.cpus.iter().map(|c| c.pages.len()).sum()
    }

    /// Writes the capture in the format above.
    pub fn write_to(&self, mut w: impl Write) -> io::Result<()> {
        let meta = Meta {
            header_page: self.header_page.clone(),
            header_event: self.header_event.clone(),
            formats: self.formats.clone(),
            page_size: self.page_size,
            cpus: self.cpus.iter().map(|c| (c.cpu, c.pages.len(), c.stats)).collect(),
            start_ns: self.start_ns,
            stop_ns: self.stop_ns,
            reader_tid: self.reader_tid,
        };
        let json = serde_json::to_vec(&meta).map_err(io::Error::other)?;
        w.write_all(MAGIC)?;
        w.write_all(&(json.len() as u64).to_le_bytes())?;
        w.write_all(&json)?;
        for c in &self.cpus {
            w.write_all(&c.pages)?;
        }
        w.flush()
    }

    /// Reads what [`Raw::write_to`] wrote.
    pub fn read_from(mut r: impl Read) -> io::Result<Raw> {
        let bad = |what: &str| {
            io::Error::new(io::ErrorKind::InvalidData, format!("not a schedlab trace: {what}"))
        };
        let mut magic = [0u8; 9];
        r.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(bad("wrong magic"));
        }
        let mut len = [0u8; 8];
        r.read_exact(&mut len)?;
        let len = u64::from_le_bytes(len);
        if len > 64 << 20 {
            return Err(bad("header too long"));
        }
        let mut json = vec![0u8; len as usize];
        r.read_exact(&mut json)?;
        let meta: Meta = serde_json::from_slice(&json).map_err(|e| bad(&e.to_string()))?;
        let mut cpus = Vec::with_capacity(meta.cpus.len());
        for (cpu, bytes, stats) in meta.cpus {
            let mut pages = Vec::new();
            (&mut r).take(bytes as u64).read_to_end(&mut pages)?;
            if pages.len() != bytes {
                return Err(bad("pages cut short"));
            }
            cpus.push(CpuRaw { cpu, pages, stats });
        }
        Ok(Raw {
            header_page: meta.header_page,
            header_event: meta.header_event,
            formats: meta.formats,
            page_size: meta.page_size,
            cpus,
            start_ns: meta.start_ns,
            stop_ns: meta.stop_ns,
            reader_tid: meta.reader_tid,
        })
    }
}

/// The zstd level a kept capture is compressed at (docs/ARCHITECTURE.md: ratio and cost).
pub const KEEP_LEVEL: i32 = 3;

impl Raw {
    /// The capture as a cell keeps it: its file, zstd-compressed, with the cell's release,
    /// the clock offset an export needs and the engine's tasks.
    pub fn keep(
        &self,
        release_ns: u64,
        engine_pid: i32,
        engine_tids: &[i32],
        dispatchers: &[i32],
    ) -> io::Result<RawTrace> {
        let enc = zstd::stream::Encoder::new(Vec::with_capacity(self.bytes() / 8), KEEP_LEVEL)?;
        let mut counted = Counted { inner: enc, bytes: 0 };
        self.write_to(&mut counted)?;
        let zstd = counted.inner.finish()?;
        Ok(RawTrace {
            meta: RawTraceMeta {
                raw_bytes: counted.bytes,
                release_ns,
                boot_offset_ns: boot_offset_ns(),
                engine_pid,
                engine_tids: engine_tids.to_vec(),
                dispatchers: dispatchers.to_vec(),
            },
            zstd,
        })
    }

    /// The capture a cell kept.
    pub fn unkeep(kept: &RawTrace) -> io::Result<Raw> {
        Raw::read_from(zstd::stream::Decoder::new(kept.zstd.as_slice())?)
    }
}

/// CLOCK_BOOTTIME minus CLOCK_MONOTONIC now, ns (the time the machine was suspended).
pub fn boot_offset_ns() -> i64 {
    let now = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid clock id and a timespec to fill.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    };
    let mono = now(libc::CLOCK_MONOTONIC);
    let boot = now(libc::CLOCK_BOOTTIME);
    boot - mono
}

/// A writer that counts the bytes written through it (the file's size before compression).
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_files_are_read() {
        let text = "entries: 3\noverrun: 7\ncommit overrun: 1\nbytes: 4080\noldest event ts:  15820.24\nnow ts: 15821.0\ndropped events: 2\nread events: 90\n";
        let s = CpuStats::parse(text);
        assert_eq!(s, CpuStats { entries: 3, overrun: 7, commit_overrun: 1, dropped: 2, read: 90 });
        assert_eq!(s.lost(), 10);
    }

    #[test]
    fn a_capture_survives_its_file() {
        let raw = Raw {
            header_page: "h".into(),
            header_event: "e".into(),
            formats: vec!["a".into(), "b".into()],
            page_size: 4,
            cpus: vec![
                CpuRaw {
                    cpu: 0,
                    pages: vec![1, 2, 3, 4],
                    stats: CpuStats { overrun: 1, ..Default::default() },
                },
                CpuRaw {
                    cpu: 3,
                    pages: vec![5, 6, 7, 8, 9, 10, 11, 12],
                    stats: CpuStats::default(),
                },
            ],
            start_ns: 10,
            stop_ns: 20,
            reader_tid: 77,
        };
        let mut buf = Vec::new();
        raw.write_to(&mut buf).unwrap();
        assert_eq!(Raw::read_from(buf.as_slice()).unwrap(), raw);
        assert!(Raw::read_from(&buf[..buf.len() - 1]).is_err(), "cut short");
        assert!(Raw::read_from(&b"SLTRACE2\nxxxxxxxx"[..]).is_err());
    }

    #[test]
    fn a_kept_capture_is_the_same_capture_compressed() {
        let text = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/io-other-50.sltrace"
        ))
        .unwrap();
        let raw = Raw::read_from(text.as_slice()).unwrap();
        let kept = raw.keep(5, 100, &[100, 101], &[]).unwrap();
        let mut file = Vec::new();
        raw.write_to(&mut file).unwrap();
        assert_eq!(kept.meta.raw_bytes, file.len() as u64, "the file's size before compression");
        assert!(
            kept.zstd.len() * 3 < text.len(),
            "compressed: {} of {} bytes",
            kept.zstd.len(),
            text.len()
        );
        assert_eq!((kept.meta.release_ns, kept.meta.engine_tids.as_slice()), (5, &[100, 101][..]));
        assert!(kept.meta.boot_offset_ns >= 0);
        assert_eq!(Raw::unkeep(&kept).unwrap(), raw);
    }
}
