//! Per-job records of a periodic task: when each job was released, started and finished,
//! and whether it met its deadline; kept beside the per-task summary ([`crate::RtTask`]).
//!
//! A minute of a 10 ms task is 6000 jobs, so the records travel and are stored in a compact
//! binary form ([`JobLog::encode`]): per job, LEB128 varints of the release's distance from
//! the previous release and of the start, finish and CPU time as offsets from the release
//! (about 10 to 14 bytes a job), zstd-compressed (a periodic schedule repeats, so the jobs
//! of a simulated set shrink hundreds of times), behind a one-line header that names the
//! format; the first format, the same varints uncompressed, still reads. A
//! [`JobLog`] serialises as that form in base64 text wherever it goes (a worker's report,
//! the dispatcher's metrics, the store's spool), so it is typed on both ends and never
//! spelled out job by job in JSON.

use base64::Engine as _;
use integer_encoding::VarInt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Name and version of the encoding, the first bytes of every encoded log: the body
/// zstd-compressed.
pub const FORMAT: &[u8] = b"schedlab-jobs/2\n";

/// The first encoding, the same body uncompressed (databases written before /2 hold it).
pub const FORMAT_1: &[u8] = b"schedlab-jobs/1\n";

/// zstd's level for the body: its fastest regular level, which already finds a periodic
/// schedule's repetitions (docs/BENCHMARKS.md: sizes and costs).
const LEVEL: i32 = 1;

const MET: u8 = 1;
const SLEPT: u8 = 2;
const HAS_START: u8 = 4;
const HAS_FINISH: u8 = 8;
const HAS_CPU: u8 = 16;

/// One job as it happened. Times in ns; the release from the set's common start, the rest
/// from the job's release.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobTrace {
    /// Release, ns after the set's start (the first job of a task with no phase: 0).
    pub release_ns: u64,
    /// When the job first ran, ns after its release (None: it never ran).
    pub start_ns: Option<u64>,
    /// When it finished, ns after its release (None: dropped or skipped unfinished).
    pub finish_ns: Option<u64>,
    /// CPU time it used (None: not measured, e.g. counted by the dispatcher).
    pub cpu_ns: Option<u64>,
    /// Finished no later than its deadline.
    pub met: bool,
    /// The task slept until the release, so `start_ns` is a wake-up latency (a task that
    /// was still busy with an earlier job when this one was released did not).
    pub slept: bool,
}

impl JobTrace {
    /// Lateness: finish - deadline, negative when early (None: it never finished).
    pub fn lateness_ns(&self, d_ns: u64) -> Option<i64> {
        self.finish_ns.map(|f| f as i64 - d_ns as i64)
    }
}

/// The jobs of one task in one cell repetition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobLog {
    /// Who timed the jobs: "worker" (the task's own clock) or "dispatcher".
    pub source: String,
    /// Relative deadline D, ns (the lateness of job k is `finish - D`).
    pub d_ns: u64,
    /// The jobs in release order.
    pub jobs: Vec<JobTrace>,
    /// Jobs released but not recorded (the record buffer, sized before the run, was full).
    pub unrecorded: u64,
}

/// Why an encoded log could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "per-job records: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

impl JobLog {
    /// The compact binary form: [`FORMAT`], then zstd of the body: the source's length and
    /// bytes, D, the count of unrecorded and recorded jobs, then per job a flag byte and
    /// varints (release delta, then start, finish, CPU when present).
    pub fn encode(&self) -> Vec<u8> {
        let body = self.body();
        let mut out = Vec::with_capacity(FORMAT.len() + body.len() / 4 + 64);
        out.extend_from_slice(FORMAT);
        // Compressing into a Vec cannot fail but for a bug in zstd itself.
        zstd::stream::copy_encode(&body[..], &mut out, LEVEL).expect("zstd compresses into memory");
        out
    }

    /// The uncompressed body (what [`FORMAT_1`] stored as it is).
    fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + self.source.len() + self.jobs.len() * 14);
        let v = push_varint;
        v(&mut out, self.source.len() as u64);
        out.extend_from_slice(self.source.as_bytes());
        v(&mut out, self.d_ns);
        v(&mut out, self.unrecorded);
        v(&mut out, self.jobs.len() as u64);
        let mut prev = 0u64;
        for j in &self.jobs {
            let bit = |on: bool, b: u8| if on { b } else { 0 };
            // A job is at most a flag byte and four 10-byte varints: built on the stack and
            // appended once, not byte by byte.
            let mut rec = [0u8; 41];
            rec[0] = bit(j.met, MET)
                | bit(j.slept, SLEPT)
                | bit(j.start_ns.is_some(), HAS_START)
                | bit(j.finish_ns.is_some(), HAS_FINISH)
                | bit(j.cpu_ns.is_some(), HAS_CPU);
            // Releases only move forward; a record out of order would be a bug upstream,
            // kept readable by saturating.
            let mut n = 1 + put_varint(&mut rec[1..], j.release_ns.saturating_sub(prev));
            prev = prev.max(j.release_ns);
            for x in [j.start_ns, j.finish_ns, j.cpu_ns].into_iter().flatten() {
                n += put_varint(&mut rec[n..], x);
            }
            out.extend_from_slice(&rec[..n]);
        }
        out
    }

    /// Reads what [`JobLog::encode`] wrote, in either format.
    pub fn decode(bytes: &[u8]) -> Result<JobLog, DecodeError> {
        if let Some(packed) = bytes.strip_prefix(FORMAT) {
            let body =
                zstd::stream::decode_all(packed).map_err(|e| DecodeError(format!("zstd: {e}")))?;
            return Self::decode_body(&body);
        }
        let rest = bytes.strip_prefix(FORMAT_1).ok_or_else(|| {
            let head =
                String::from_utf8_lossy(&bytes[..bytes.len().min(FORMAT.len())]).into_owned();
            DecodeError(format!(
                "unknown format {head:?} (this schedlab reads {:?} and {:?})",
                String::from_utf8_lossy(FORMAT).trim(),
                String::from_utf8_lossy(FORMAT_1).trim()
            ))
        })?;
        Self::decode_body(rest)
    }

    fn decode_body(rest: &[u8]) -> Result<JobLog, DecodeError> {
        let mut r = Reader { bytes: rest, at: 0 };
        let n = r.varint()? as usize;
        let source = String::from_utf8(r.take(n)?.to_vec())
            .map_err(|_| DecodeError("source is not UTF-8".into()))?;
        let d_ns = r.varint()?;
        let unrecorded = r.varint()?;
        let count = r.varint()? as usize;
        // Each job takes at least two bytes: a corrupt count must not reserve gigabytes.
        let mut jobs = Vec::with_capacity(count.min(r.bytes.len() / 2));
        let mut release = 0u64;
        for _ in 0..count {
            let flags = r.take(1)?[0];
            release = release
                .checked_add(r.varint()?)
                .ok_or_else(|| DecodeError("release time overflows".into()))?;
            let mut opt = |bit: u8| -> Result<Option<u64>, DecodeError> {
                if flags & bit != 0 {
                    r.varint().map(Some)
                } else {
                    Ok(None)
                }
            };
            let start_ns = opt(HAS_START)?;
            let finish_ns = opt(HAS_FINISH)?;
            let cpu_ns = opt(HAS_CPU)?;
            jobs.push(JobTrace {
                release_ns: release,
                start_ns,
                finish_ns,
                cpu_ns,
                met: flags & MET != 0,
                slept: flags & SLEPT != 0,
            });
        }
        if r.at != r.bytes.len() {
            return Err(DecodeError(format!(
                "{} bytes left after {count} jobs",
                r.bytes.len() - r.at
            )));
        }
        Ok(JobLog { source, d_ns, jobs, unrecorded })
    }

    /// The encoded log as text, as it travels in JSON (a worker's report, the dispatcher's
    /// metrics): base64 of [`JobLog::encode`].
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.encode())
    }

    /// Reads what [`JobLog::to_base64`] made.
    pub fn from_base64(text: &str) -> Result<JobLog, DecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| DecodeError(format!("base64: {e}")))?;
        JobLog::decode(&bytes)
    }

    /// Jobs that met their deadline.
    pub fn met(&self) -> u64 {
        self.jobs.iter().filter(|j| j.met).count() as u64
    }
}

impl Serialize for JobLog {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for JobLog {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JobLog, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        JobLog::from_base64(&text).map_err(serde::de::Error::custom)
    }
}

/// Writes `x` as an unsigned LEB128 varint at the start of `buf` (at least 10 bytes);
/// returns its length.
fn put_varint(buf: &mut [u8], mut x: u64) -> usize {
    let mut n = 0;
    while x >= 0x80 {
        buf[n] = x as u8 | 0x80;
        x >>= 7;
        n += 1;
    }
    buf[n] = x as u8;
    n + 1
}

/// Appends `x` as an unsigned LEB128 varint (what `integer_encoding` reads back), without
/// going through `io::Write` for every value: a simulated cell encodes millions of them.
fn push_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| DecodeError("truncated".into()))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let (x, n) = u64::decode_var(&self.bytes[self.at..])
            .ok_or_else(|| DecodeError("truncated or bad varint".into()))?;
        self.at += n;
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> JobLog {
        let t = 10_000_000;
        let jobs = (0..1000u64)
            .map(|k| JobTrace {
                release_ns: 3_000_000 + k * t,
                start_ns: (k % 7 != 3).then_some(12_000 + k),
                finish_ns: (k % 7 < 3).then_some(2_500_000 + 17 * k),
                cpu_ns: (k % 2 == 0).then_some(2_000_000 + k),
                met: k % 7 < 3,
                slept: k % 5 != 0,
            })
            .collect();
        JobLog { source: "worker".into(), d_ns: 9_000_000, jobs, unrecorded: 4 }
    }

    #[test]
    fn round_trips_and_is_compact() {
        let l = log();
        let bytes = l.encode();
        assert_eq!(JobLog::decode(&bytes).unwrap(), l);
        // release delta 4 bytes + start 2-3 + finish 3 + cpu 3 + flags: under 16 bytes a job.
        assert!(bytes.len() < 16 * l.jobs.len(), "{} bytes for {} jobs", bytes.len(), l.jobs.len());
        assert_eq!(JobLog::from_base64(&l.to_base64()).unwrap(), l);
        // In JSON it is the same text, typed on both ends.
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(json, format!("\"{}\"", l.to_base64()));
        assert_eq!(serde_json::from_str::<JobLog>(&json).unwrap(), l);
        assert!(serde_json::from_str::<JobLog>("\"bm90IGEgbG9n\"")
            .unwrap_err()
            .to_string()
            .contains("unknown format"));
        let empty = JobLog { source: "dispatcher".into(), ..Default::default() };
        assert_eq!(JobLog::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn varints_are_the_leb128_that_integer_encoding_writes() {
        for x in [0, 1, 127, 128, 255, 300, 16_383, 16_384, 1 << 35, u64::MAX - 1, u64::MAX] {
            let mut ours = Vec::new();
            push_varint(&mut ours, x);
            assert_eq!(ours, x.encode_var_vec(), "{x}");
            let mut buf = [0xffu8; 10];
            let n = put_varint(&mut buf, x);
            assert_eq!(&buf[..n], &ours[..], "{x}");
        }
    }

    #[test]
    fn logs_of_the_first_format_still_read() {
        let l = log();
        let v1 = [FORMAT_1, &l.body()].concat();
        assert_eq!(JobLog::decode(&v1).unwrap(), l);
        // The same body, compressed: smaller, and a periodic task's jobs shrink many times.
        assert!(l.encode().len() < v1.len());
        let t = 5_000_000;
        let steady = JobLog {
            source: "sim".into(),
            d_ns: t,
            jobs: (0..20_000u64)
                .map(|k| JobTrace {
                    release_ns: k * t,
                    start_ns: Some(0),
                    finish_ns: Some(1_000_000),
                    cpu_ns: Some(1_000_000),
                    met: true,
                    slept: true,
                })
                .collect(),
            unrecorded: 0,
        };
        let packed = steady.encode();
        assert!(
            packed.len() * 100 < [FORMAT_1, &steady.body()].concat().len(),
            "{} bytes",
            packed.len()
        );
        assert_eq!(JobLog::decode(&packed).unwrap(), steady);
    }

    #[test]
    fn lateness_is_finish_minus_deadline() {
        let j = JobTrace { release_ns: 5, finish_ns: Some(7_000), ..Default::default() };
        assert_eq!(j.lateness_ns(10_000), Some(-3_000));
        assert_eq!(JobTrace::default().lateness_ns(10), None);
    }

    #[test]
    fn rejects_truncated_trailing_and_foreign_bytes() {
        let bytes = log().encode();
        for cut in [bytes.len() - 1, bytes.len() / 2, FORMAT.len() + 1] {
            assert!(JobLog::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(JobLog::decode(&longer).is_err());
        let mut longer = [FORMAT_1, &log().body()].concat();
        longer.push(0);
        assert!(JobLog::decode(&longer).unwrap_err().0.contains("left after"));
        let e = JobLog::decode(b"something else entirely").unwrap_err();
        assert!(e.to_string().contains("unknown format"), "{e}");
    }
}
