//! sched_ext (Linux 6.12+): whether the kernel has it, which scheduler is loaded, whether a
//! task is on it, and what the kernel logged about it. Everything is read under a
//! [`Root`], so tests run against fake trees that a fake scheduler writes.

use crate::{Root, SysError};
pub use schedlab_plan::ScxFacts;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the kernel shows sched_ext.
pub const SYSFS: &str = "/sys/kernel/sched_ext";

/// Reads the facts without changing anything, looking each of `programs` up.
pub fn facts(root: &Root, programs: &[String]) -> ScxFacts {
    // SAFETY: no failure mode.
    let euid = unsafe { libc::geteuid() };
    ScxFacts {
        available: root.path(SYSFS).is_dir(),
        state: state(root).unwrap_or_default(),
        ops: ops(root),
        may_load: euid == 0,
        kernel: root.read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        programs: programs
            .iter()
            .map(|p| {
                (p.clone(), find_program(p).map_err(|e| schedlab_plan::Refusal(e.to_string())))
            })
            .collect(),
    }
}

/// The file a scheduler program names: a path as it is, a bare name looked up on PATH
/// ([`SCX_DISPATCHER`](schedlab_plan::SCX_DISPATCHER) first next to the running binary); it
/// must be an executable file.
pub fn find_program(program: &str) -> Result<PathBuf, SysError> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program == schedlab_plan::SCX_DISPATCHER {
        let beside = std::env::current_exe().ok().and_then(|e| Some(e.parent()?.join(program)));
        if let Some(p) = beside.filter(|p| runnable(p)) {
            return Ok(p);
        }
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return match std::fs::metadata(&p) {
            Ok(_) if runnable(&p) => Ok(p),
            Ok(_) => Err(SysError::refused(format!("{program} is not an executable file"))),
            Err(e) => Err(SysError::io(program, e)),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| runnable(p))
        .ok_or_else(|| {
            SysError::refused(format!(
                "no executable {program} on PATH ({})",
                std::env::var("PATH").unwrap_or_default()
            ))
        })
}

/// sched_ext in a few words: `absent`, `disabled`, or the state and what is loaded
/// (`enabled bpfland_1.1.4_...`).
pub fn summary(root: &Root) -> String {
    if !root.path(SYSFS).is_dir() {
        return "absent".into();
    }
    match (state(root), ops(root)) {
        (Some(s), Some(o)) => format!("{s} {o}"),
        (Some(s), None) => s,
        (None, _) => "unreadable".into(),
    }
}

/// `/sys/kernel/sched_ext/state`.
pub fn state(root: &Root) -> Option<String> {
    root.read(&format!("{SYSFS}/state")).ok()
}

/// `/sys/kernel/sched_ext/root/ops`, None when it is absent or empty (nothing loaded).
pub fn ops(root: &Root) -> Option<String> {
    root.read(&format!("{SYSFS}/root/ops")).ok().filter(|s| !s.is_empty())
}

/// `/sys/kernel/sched_ext/enable_seq`.
pub fn enable_seq(root: &Root) -> Option<u64> {
    root.read_parse(&format!("{SYSFS}/enable_seq"))
}

/// `/sys/kernel/sched_ext/switch_all`.
pub fn switch_all(root: &Root) -> Option<bool> {
    root.read_parse::<u8>(&format!("{SYSFS}/switch_all")).map(|v| v != 0)
}

/// The state file's real path (journal entries name it).
pub fn state_path(root: &Root) -> PathBuf {
    root.path(&format!("{SYSFS}/state"))
}

/// Polls `path` every 20 ms until it holds `want` or `within` passes, or `give_up` says
/// why to stop (the scheduler died); returns the last value read on failure.
pub fn wait_for(
    path: &Path,
    want: &str,
    within: Duration,
    mut give_up: impl FnMut() -> Option<String>,
) -> Result<(), SysError> {
    let end = Instant::now() + within;
    loop {
        let now = std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
        if now == want {
            return Ok(());
        }
        if let Some(why) = give_up() {
            return Err(SysError::refused(why));
        }
        if Instant::now() >= end {
            return Err(SysError::refused(format!(
                "{} is still \"{now}\" after {:.0} s, not \"{want}\"",
                path.display(),
                within.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls the number in `path` every 20 ms until it differs from `before` (a file that was
/// missing counts as changed once it holds a number), or `within` passes.
pub fn wait_for_change(
    path: &Path,
    before: Option<u64>,
    within: Duration,
) -> Result<u64, SysError> {
    let end = Instant::now() + within;
    loop {
        let now: Option<u64> =
            std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok());
        if let Some(n) = now.filter(|n| Some(*n) != before) {
            return Ok(n);
        }
        if Instant::now() >= end {
            return Err(SysError::refused(format!(
                "{} stayed at {now:?} for {:.0} s",
                path.display(),
                within.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ext.enabled` of /proc/PID/sched: whether the task is on sched_ext (None: no such line,
/// or the task is gone).
pub fn ext_enabled(root: &Root, pid: i32) -> Option<bool> {
    let text = std::fs::read_to_string(root.path(&format!("/proc/{pid}/sched"))).ok()?;
    parse_ext_enabled(&text)
}

fn parse_ext_enabled(sched: &str) -> Option<bool> {
    let line = sched.lines().find(|l| l.trim_start().starts_with("ext.enabled"))?;
    let value = line.split(':').nth(1)?.trim();
    Some(value.parse::<i64>().ok()? != 0)
}

/// The kernel log from the moment it was opened on: its records about sched_ext (the
/// reason a scheduler was disabled, `sched_ext: BPF scheduler "..." disabled (...)`).
#[derive(Debug)]
pub struct KmsgTail {
    file: std::fs::File,
}

impl KmsgTail {
    /// Opens `/dev/kmsg` (under `root`) at its end, so only later records are read.
    pub fn open(root: &Root) -> io::Result<KmsgTail> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(root.path("/dev/kmsg"))?;
        file.seek(SeekFrom::End(0))?;
        Ok(KmsgTail { file })
    }

    /// The messages logged since the last call that mention sched_ext, without their
    /// record headers.
    pub fn sched_ext_lines(&mut self) -> Vec<String> {
        let mut text = String::new();
        let mut buf = vec![0u8; 8192];
        loop {
            // /dev/kmsg gives one record per read; a file, what it holds.
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
                // EPIPE: records were overwritten before they were read; go on with the next.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        text.lines()
            .filter(|l| !l.starts_with(' '))
            .map(|l| l.split_once(';').map_or(l, |(_, m)| m).trim().to_string())
            .filter(|m| m.contains("sched_ext"))
            .collect()
    }
}

/// Where scx schedulers serve their statistics: scx_stats' default UNIX socket.
pub const STATS_SOCKET: &str = "/var/run/scx/root/stats";

/// The stats socket under `root`.
pub fn stats_socket(root: &Root) -> PathBuf {
    root.path(STATS_SOCKET)
}

/// Waits up to `within` for the stats socket to appear (a scheduler serves it once it
/// runs); false when it did not, for a scheduler that offers no statistics.
pub fn wait_for_stats(root: &Root, within: Duration) -> bool {
    let path = stats_socket(root);
    let end = Instant::now() + within;
    loop {
        if std::fs::symlink_metadata(&path)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One answer of the scx_stats protocol: `{"errno": N, "args": {"resp": ...}}`.
#[derive(serde::Deserialize)]
struct StatsAnswer {
    errno: i32,
    #[serde(default)]
    args: std::collections::BTreeMap<String, serde_json::Value>,
}

/// A connection to a scheduler's scx_stats socket. scx schedulers answer each read on a
/// connection with their counters since the connection's previous read (gauges as they
/// are), so two reads on one connection bracket an interval.
pub struct StatsClient {
    stream: std::os::unix::net::UnixStream,
    reader: io::BufReader<std::os::unix::net::UnixStream>,
    path: PathBuf,
}

impl StatsClient {
    /// Connects to the socket at `path`; each read or write gives up after `timeout`.
    pub fn connect(path: &Path, timeout: Duration) -> Result<StatsClient, SysError> {
        let at = |e: io::Error| SysError::io(path.display().to_string(), e);
        let stream = std::os::unix::net::UnixStream::connect(path).map_err(at)?;
        stream.set_read_timeout(Some(timeout)).map_err(at)?;
        stream.set_write_timeout(Some(timeout)).map_err(at)?;
        let reader = io::BufReader::new(stream.try_clone().map_err(at)?);
        Ok(StatsClient { stream, reader, path: path.to_path_buf() })
    }

    /// The scheduler's top-level statistics (one `{"req":"stats","args":{"target":"top"}}`
    /// line, one answer line): every number, nested names joined by `.`
    /// (`layers.batch.util`), booleans as 0 or 1; strings are left out.
    pub fn read(&mut self) -> Result<std::collections::BTreeMap<String, f64>, SysError> {
        use std::io::{BufRead, Write};
        let path = self.path.display().to_string();
        let at = |e: io::Error| SysError::io(path.clone(), e);
        self.stream
            .write_all(b"{\"req\":\"stats\",\"args\":{\"target\":\"top\"}}\n")
            .map_err(at)?;
        let mut line = String::new();
        self.reader.read_line(&mut line).map_err(at)?;
        let answer: StatsAnswer = serde_json::from_str(&line)
            .map_err(|e| SysError::refused(format!("{path}: not an scx_stats answer ({e})")))?;
        let resp = answer.args.get("resp").cloned().unwrap_or_default();
        if answer.errno != 0 {
            return Err(SysError::refused(format!(
                "{path}: the scheduler answered errno {}: {resp}",
                answer.errno
            )));
        }
        let mut out = std::collections::BTreeMap::new();
        flatten_numbers("", &resp, &mut out);
        Ok(out)
    }
}

fn flatten_numbers(
    prefix: &str,
    v: &serde_json::Value,
    out: &mut std::collections::BTreeMap<String, f64>,
) {
    use serde_json::Value;
    let name = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(prefix.to_string(), x);
            }
        }
        Value::Bool(b) => {
            out.insert(prefix.to_string(), f64::from(u8::from(*b)));
        }
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten_numbers(&name(k), v, out)),
        Value::Array(a) => {
            a.iter().enumerate().for_each(|(i, v)| flatten_numbers(&name(&i.to_string()), v, out))
        }
        Value::String(_) | Value::Null => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_enabled_is_read_from_the_tasks_sched_file() {
        let text = "bash (1, #threads: 1)\n---------\nse.exec_start      :   1.0\next.enabled                                  :                    1\n";
        assert_eq!(parse_ext_enabled(text), Some(true));
        assert_eq!(parse_ext_enabled("ext.enabled : 0\n"), Some(false));
        assert_eq!(parse_ext_enabled("se.exec_start : 1\n"), None);
    }

    #[test]
    fn the_kernel_log_tail_keeps_only_later_sched_ext_records() {
        let d = std::env::temp_dir().join(format!("schedlab-kmsg-{}", std::process::id()));
        std::fs::create_dir_all(d.join("dev")).unwrap();
        std::fs::write(d.join("dev/kmsg"), "6,1,1;sched_ext: before the cell\n").unwrap();
        let mut tail = KmsgTail::open(&Root::new(&d)).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(d.join("dev/kmsg")).unwrap();
        std::io::Write::write_all(
            &mut f,
            b"6,2,2,-;sched_ext: BPF scheduler \"fake\" disabled (runnable task stall)\n SUBSYSTEM=x\n6,3,3,-;eth0: up\n",
        )
        .unwrap();
        assert_eq!(
            tail.sched_ext_lines(),
            ["sched_ext: BPF scheduler \"fake\" disabled (runnable task stall)"]
        );
        assert!(tail.sched_ext_lines().is_empty(), "read once");
        std::fs::remove_dir_all(d).unwrap();
    }
}
