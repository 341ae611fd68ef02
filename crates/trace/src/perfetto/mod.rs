//! A cell's scheduling timeline as Perfetto's protobuf trace: per CPU, `FtraceEventBundle`s
//! with every decoded kernel event; the processes named in a `ProcessTree`; schedlab's own
//! marks (the release, each worker's run, periodic jobs' releases and deadlines) as track
//! events; the machine's kernel release, from which Perfetto reads `prev_state`'s layout.
//!
//! Clocks: Perfetto reads an ftrace bundle's timestamps as CLOCK_BOOTTIME (its format has
//! no way to say CLOCK_MONOTONIC, the clock schedlab traces with), so the events are
//! written at their monotonic time plus the boot-time offset read when the capture
//! stopped. The marks keep their monotonic times and say so (`timestamp_clock_id`), and a
//! `ClockSnapshot` with both clocks at the cell's release lets Perfetto place them on the
//! same boot-time axis.
//!
//! The file is written packet by packet (a `Trace` is its packets back to back), so a
//! capture of millions of events never sits in memory as messages.

pub mod cell;
pub mod protos;
mod segments;

pub use segments::{switches, Left, Segment};

use crate::decode::{comm_str, Comm, Event, EventKind};
use prost::Message;
use protos::*;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// Events per bundle: Perfetto's own bundles hold what one read of a CPU's buffer gave.
const BUNDLE: usize = 4096;
/// The sequence of the kernel's packets, and of schedlab's marks.
const KERNEL_SEQ: u32 = 1;
const MARKS_SEQ: u32 = 2;
/// The first track's uuid; the others follow.
const FIRST_TRACK: u64 = 1;

/// A process to name, with the threads known to be its.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// Its pid.
    pub pid: i32,
    /// Its parent (0: unknown).
    pub ppid: i32,
    /// What the timeline calls it.
    pub name: String,
    /// Its other threads.
    pub threads: Vec<i32>,
}

/// One of schedlab's marks: an instant, or a slice when it has an end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// When, CLOCK_MONOTONIC ns (the trace's clock).
    pub ts_ns: u64,
    /// What happened.
    pub name: String,
    /// The slice's end, if it is one.
    pub end_ns: Option<u64>,
}

/// A track of marks: the cell's own (no pid) or one process's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Track {
    /// Its name (a process's track takes the process's name).
    pub name: String,
    /// The process it belongs to.
    pub pid: Option<i32>,
    /// Its marks.
    pub marks: Vec<Mark>,
}

/// The machine the trace is from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceMachine {
    /// The kernel release (`uname -r`).
    pub release: String,
    /// The architecture.
    pub arch: String,
    /// CPUs.
    pub cpus: u32,
}

/// What an export is made of.
#[derive(Debug, Clone)]
pub struct Export<'a> {
    /// The kernel's events (or a simulation's, see [`switches`]), in time order, CLOCK_MONOTONIC ns.
    pub events: &'a [Event],
    /// CPUs to write a bundle for even when they have no event.
    pub cpus: &'a [u32],
    /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC, ns.
    pub boot_offset_ns: i64,
    /// When the clocks are snapshotted, CLOCK_MONOTONIC ns (the cell's release).
    pub clock_at_ns: u64,
    /// CLOCK_REALTIME at `clock_at_ns`, ns, when known.
    pub realtime_at_ns: Option<u64>,
    /// The machine.
    pub machine: TraceMachine,
    /// The processes to name.
    pub processes: &'a [Process],
    /// schedlab's marks.
    pub tracks: &'a [Track],
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// sched_switch events per CPU.
    pub switches: BTreeMap<u32, u64>,
    /// Events by tracepoint name (sched_switch included).
    pub events: BTreeMap<&'static str, u64>,
    /// Bundles that say the kernel lost events before them.
    pub lost_bundles: u64,
    /// Processes named.
    pub processes: usize,
    /// Marks written.
    pub marks: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes `x` as a Perfetto trace to `w`.
pub fn write(x: &Export, w: impl Write) -> io::Result<ExportSummary> {
    let mut out = Packets { w, bytes: 0 };
    let mut sum = ExportSummary { processes: x.processes.len(), ..Default::default() };
    out.put(&clock_snapshot(x))?;
    out.put(&TracePacket {
        trusted_packet_sequence_id: Some(KERNEL_SEQ),
        system_info: Some(SystemInfo {
            utsname: Some(Utsname {
                sysname: Some("Linux".into()),
                version: None,
                release: Some(x.machine.release.clone()).filter(|r| !r.is_empty()),
                machine: Some(x.machine.arch.clone()).filter(|a| !a.is_empty()),
            }),
            num_cpus: (x.machine.cpus > 0).then_some(x.machine.cpus),
        }),
        ..Default::default()
    })?;
    out.put(&process_tree(x))?;
    kernel_events(x, &mut out, &mut sum)?;
    sum.marks = marks(x, &mut out)?;
    sum.bytes = out.bytes;
    Ok(sum)
}

/// The trace's packets, each written as field 1 of `Trace` as it is made.
struct Packets<W> {
    w: W,
    bytes: u64,
}

impl<W: Write> Packets<W> {
    fn put(&mut self, p: &TracePacket) -> io::Result<()> {
        let mut buf = Vec::with_capacity(p.encoded_len() + 12);
        buf.push(0x0a); // field 1, length-delimited
        p.encode_length_delimited(&mut buf).map_err(io::Error::other)?;
        self.bytes += buf.len() as u64;
        self.w.write_all(&buf)
    }
}

fn clock_snapshot(x: &Export) -> TracePacket {
    let boot = (x.clock_at_ns as i64 + x.boot_offset_ns) as u64;
    let mut clocks = vec![
        ClockReading { clock_id: Some(CLOCK_BOOTTIME), timestamp: Some(boot) },
        ClockReading { clock_id: Some(CLOCK_MONOTONIC), timestamp: Some(x.clock_at_ns) },
    ];
    if let Some(rt) = x.realtime_at_ns {
        clocks.push(ClockReading { clock_id: Some(CLOCK_REALTIME), timestamp: Some(rt) });
    }
    TracePacket {
        timestamp: Some(boot),
        trusted_packet_sequence_id: Some(KERNEL_SEQ),
        clock_snapshot: Some(ClockSnapshot { clocks, primary_trace_clock: Some(CLOCK_BOOTTIME) }),
        ..Default::default()
    }
}

fn process_tree(x: &Export) -> TracePacket {
    let mut tree = ProcessTree::default();
    for p in x.processes {
        tree.processes.push(protos::TreeProcess {
            pid: Some(p.pid),
            ppid: Some(p.ppid),
            cmdline: vec![p.name.clone()],
        });
        for t in p.threads.iter().filter(|t| **t != p.pid) {
            tree.threads.push(Thread { tid: Some(*t), tgid: Some(p.pid), name: None });
        }
    }
    TracePacket {
        timestamp: Some((x.clock_at_ns as i64 + x.boot_offset_ns) as u64),
        trusted_packet_sequence_id: Some(KERNEL_SEQ),
        process_tree: Some(tree),
        ..Default::default()
    }
}

/// Each task's last comm and priority in the switches, for the events that carry neither.
fn tasks(events: &[Event]) -> HashMap<i32, (Comm, i32)> {
    let mut m = HashMap::new();
    for e in events {
        if let EventKind::Switch(s) = &e.kind {
            m.insert(s.prev_pid, (s.prev_comm, s.prev_prio));
            m.insert(s.next_pid, (s.next_comm, s.next_prio));
        }
    }
    m
}

/// One CPU's bundle being filled.
#[derive(Default)]
struct Pending {
    events: Vec<FtraceEvent>,
    lost: bool,
    /// The task on the CPU (the events' common_pid, which the decoder does not keep).
    current: i32,
}

fn kernel_events<W: Write>(
    x: &Export,
    out: &mut Packets<W>,
    sum: &mut ExportSummary,
) -> io::Result<()> {
    let known = tasks(x.events);
    let comm = |pid: i32| known.get(&pid).map(|(c, _)| comm_str(c).into_owned());
    let prio = |pid: i32| known.get(&pid).map(|(_, p)| *p);
    let mut cpus: BTreeMap<u32, Pending> =
        x.cpus.iter().map(|c| (*c, Pending::default())).collect();
    // Until its first switch, a CPU runs the task that switch takes off it.
    for e in x.events.iter().rev() {
        if let EventKind::Switch(s) = &e.kind {
            cpus.entry(e.cpu).or_default().current = s.prev_pid;
        }
    }
    let flush = |cpu: u32,
                 p: &mut Pending,
                 out: &mut Packets<W>,
                 sum: &mut ExportSummary|
     -> io::Result<()> {
        if p.events.is_empty() && !p.lost {
            return Ok(());
        }
        sum.lost_bundles += p.lost as u64;
        let bundle = FtraceEventBundle {
            cpu: Some(cpu),
            event: std::mem::take(&mut p.events),
            lost_events: p.lost.then_some(true),
        };
        p.lost = false;
        out.put(&TracePacket {
            trusted_packet_sequence_id: Some(KERNEL_SEQ),
            ftrace_events: Some(bundle),
            ..Default::default()
        })
    };
    for e in x.events {
        let p = cpus.entry(e.cpu).or_default();
        let ts = Some((e.ts as i64 + x.boot_offset_ns) as u64);
        let wake = |w: &crate::decode::WakeTarget| SchedWake {
            comm: comm(w.pid),
            pid: Some(w.pid),
            prio: prio(w.pid),
            success: Some(1),
            target_cpu: Some(w.target_cpu),
        };
        // A switch is recorded by the task leaving; anything else by the task running.
        let pid = match &e.kind {
            EventKind::Switch(s) => s.prev_pid,
            _ => p.current,
        };
        let event = match &e.kind {
            EventKind::Lost { .. } => {
                flush(e.cpu, p, out, sum)?;
                p.lost = true;
                continue;
            }
            EventKind::Switch(s) => {
                *sum.switches.entry(e.cpu).or_default() += 1;
                p.current = s.next_pid;
                Ftrace::SchedSwitch(SchedSwitch {
                    prev_comm: Some(comm_str(&s.prev_comm).into_owned()),
                    prev_pid: Some(s.prev_pid),
                    prev_prio: Some(s.prev_prio),
                    prev_state: Some(s.prev_state),
                    next_comm: Some(comm_str(&s.next_comm).into_owned()),
                    next_pid: Some(s.next_pid),
                    next_prio: Some(s.next_prio),
                })
            }
            EventKind::Waking(w) => Ftrace::SchedWaking(wake(w)),
            EventKind::Wakeup(w) => Ftrace::SchedWakeup(wake(w)),
            EventKind::WakeupNew(w) => Ftrace::SchedWakeupNew(wake(w)),
            EventKind::Migrate { pid, orig_cpu, dest_cpu } => {
                Ftrace::SchedMigrateTask(SchedMigrateTask {
                    comm: comm(*pid),
                    pid: Some(*pid),
                    prio: prio(*pid),
                    orig_cpu: Some(*orig_cpu),
                    dest_cpu: Some(*dest_cpu),
                })
            }
            EventKind::Fork { parent, child } => Ftrace::SchedProcessFork(SchedProcessFork {
                parent_comm: comm(*parent),
                parent_pid: Some(*parent),
                child_comm: comm(*child),
                child_pid: Some(*child),
            }),
            EventKind::Exec { pid, filename } => Ftrace::SchedProcessExec(SchedProcessExec {
                filename: Some(filename.to_string()),
                pid: Some(*pid),
                old_pid: Some(*pid),
            }),
            EventKind::Exit { pid } => Ftrace::SchedProcessExit(SchedProcessExit {
                comm: comm(*pid),
                pid: Some(*pid),
                tgid: x.processes.iter().any(|p| p.pid == *pid).then_some(*pid),
            }),
            EventKind::BlockIssue(b) => Ftrace::BlockRqIssue(BlockRqIssue {
                dev: Some(b.dev as u64),
                sector: Some(b.sector),
                nr_sector: Some(b.nr_sector),
                bytes: Some(b.bytes),
                rwbs: Some(comm_str(&pad(&b.rwbs)).into_owned()),
            }),
            EventKind::BlockComplete(b) => Ftrace::BlockRqComplete(BlockRqComplete {
                dev: Some(b.dev as u64),
                sector: Some(b.sector),
                nr_sector: Some(b.nr_sector),
                rwbs: Some(comm_str(&pad(&b.rwbs)).into_owned()),
                error: Some(b.error),
            }),
        };
        *sum.events.entry(e.kind.name()).or_default() += 1;
        p.events.push(FtraceEvent { timestamp: ts, pid: Some(pid as u32), event: Some(event) });
        if p.events.len() >= BUNDLE {
            flush(e.cpu, p, out, sum)?;
        }
    }
    for (cpu, p) in cpus.iter_mut() {
        flush(*cpu, p, out, sum)?;
    }
    Ok(())
}

/// RWBS flags as a comm-sized, NUL-padded name.
fn pad(rwbs: &[u8; 10]) -> Comm {
    let mut c = [0u8; 16];
    c[..10].copy_from_slice(rwbs);
    c
}

/// The track descriptors and the marks on them; returns how many marks.
fn marks<W: Write>(x: &Export, out: &mut Packets<W>) -> io::Result<usize> {
    let mut first = true;
    let mut seq = |p: TracePacket| {
        let flags = std::mem::take(&mut first).then_some(SEQ_INCREMENTAL_STATE_CLEARED);
        TracePacket { trusted_packet_sequence_id: Some(MARKS_SEQ), sequence_flags: flags, ..p }
    };
    let mut events: Vec<(u64, u8, TracePacket)> = Vec::new();
    let mut n = 0;
    for (i, t) in x.tracks.iter().enumerate() {
        let uuid = FIRST_TRACK + i as u64;
        let descriptor = TrackDescriptor {
            uuid: Some(uuid),
            name: Some(t.name.clone()),
            process: t.pid.map(|pid| ProcessDescriptor {
                pid: Some(pid),
                process_name: Some(t.name.clone()),
            }),
        };
        out.put(&seq(TracePacket { track_descriptor: Some(descriptor), ..Default::default() }))?;
        for m in &t.marks {
            n += 1;
            let ev = |ty: i32, name: Option<String>| TrackEvent {
                r#type: Some(ty),
                track_uuid: Some(uuid),
                name,
            };
            match m.end_ns {
                Some(end) => {
                    // At one instant a slice's end comes before the next one's beginning.
                    events.push((m.ts_ns, 1, at(m.ts_ns, ev(SLICE_BEGIN, Some(m.name.clone())))));
                    events.push((end.max(m.ts_ns), 0, at(end.max(m.ts_ns), ev(SLICE_END, None))));
                }
                None => events.push((m.ts_ns, 1, at(m.ts_ns, ev(INSTANT, Some(m.name.clone()))))),
            }
        }
    }
    events.sort_by_key(|(ts, order, _)| (*ts, *order));
    for (_, _, p) in events {
        out.put(&seq(p))?;
    }
    Ok(n)
}

/// A track event packet at a CLOCK_MONOTONIC time.
fn at(ts_ns: u64, e: TrackEvent) -> TracePacket {
    TracePacket {
        timestamp: Some(ts_ns),
        timestamp_clock_id: Some(CLOCK_MONOTONIC),
        track_event: Some(e),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
