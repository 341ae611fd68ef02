//! Ring-buffer pages to typed events, all CPUs merged in timestamp order.
//!
//! A page is a base timestamp, a commit word (bytes written; bit 31: events were lost
//! before this page, bit 30: their count is stored after the data) and events. Each event
//! starts with a u32: `type_len` in its low 5 bits, a 27-bit time delta above. `type_len`
//! 1..=28 is a record of 4 x type_len bytes; 0 a record whose length is the next u32; 29
//! padding (a delta of 0: the rest of the page is empty; else a discarded record of the
//! next u32's length, which does not move the clock); 30 a time extend (the next u32 holds
//! bits 27 and up of a delta); 31 an absolute timestamp, laid out like an extend.

use crate::format::{EventFormat, FormatError, HeaderPage, Slot};
use crate::raw::Raw;

/// A task's command name as the kernel stores it: up to 16 bytes, NUL-padded.
pub type Comm = [u8; 16];

/// The name in a [`Comm`], up to its first NUL.
pub fn comm_str(c: &Comm) -> std::borrow::Cow<'_, str> {
    let n = c.iter().position(|b| *b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..n])
}

/// One decoded event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Timestamp, ns, on the instance's trace clock (CLOCK_MONOTONIC for schedlab's).
    pub ts: u64,
    /// The CPU whose buffer held it.
    pub cpu: u32,
    /// The task that was running on that CPU when the event was recorded (the record's
    /// `common_pid`; 0 is the idle task, and an interrupt's events name the task it
    /// interrupted); -1 for a loss marker, which no task recorded.
    pub current: i32,
    /// What happened.
    pub kind: EventKind,
}

/// What an event says.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// sched_switch: `prev` left the CPU, `next` took it.
    Switch(Switch),
    /// sched_waking: a wake-up began (on the waker's CPU).
    Waking(WakeTarget),
    /// sched_wakeup: the woken task was made runnable.
    Wakeup(WakeTarget),
    /// sched_wakeup_new: a new task was made runnable for the first time.
    WakeupNew(WakeTarget),
    /// sched_migrate_task: a task was moved between CPUs' run queues.
    Migrate {
        /// The task.
        pid: i32,
        /// From.
        orig_cpu: i32,
        /// To.
        dest_cpu: i32,
    },
    /// sched_process_fork: a task (process or thread) was created.
    Fork {
        /// The creating task.
        parent: i32,
        /// The new task.
        child: i32,
    },
    /// sched_process_exec: a task exec'd a program.
    Exec {
        /// The task.
        pid: i32,
        /// The program's path as given to exec.
        filename: Box<str>,
    },
    /// sched_process_exit: a task exited.
    Exit {
        /// The task.
        pid: i32,
    },
    /// block_rq_issue: a request was sent to the device.
    BlockIssue(Block),
    /// block_rq_complete: a request completed.
    BlockComplete(Block),
    /// The kernel dropped events on this CPU before this point (page flags); `count` when
    /// the page stored how many.
    Lost {
        /// Events lost, if known.
        count: Option<u64>,
    },
}

impl EventKind {
    /// The tracepoint's name (`lost` for a loss marker), as trace-cmd prints it.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Switch(_) => "sched_switch",
            EventKind::Waking(_) => "sched_waking",
            EventKind::Wakeup(_) => "sched_wakeup",
            EventKind::WakeupNew(_) => "sched_wakeup_new",
            EventKind::Migrate { .. } => "sched_migrate_task",
            EventKind::Fork { .. } => "sched_process_fork",
            EventKind::Exec { .. } => "sched_process_exec",
            EventKind::Exit { .. } => "sched_process_exit",
            EventKind::BlockIssue(_) => "block_rq_issue",
            EventKind::BlockComplete(_) => "block_rq_complete",
            EventKind::Lost { .. } => "lost",
        }
    }
}

/// A sched_switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// The task leaving the CPU (0: the idle task).
    pub prev_pid: i32,
    /// Its kernel priority.
    pub prev_prio: i32,
    /// Its state as the kernel reported it (bits of S, D, ...; the preempt bit for R+).
    pub prev_state: i64,
    /// It left still runnable (R or R+: preempted or yielding): the kernel counts such a
    /// switch in the task's involuntary context switches (nivcsw).
    pub prev_runnable: bool,
    /// It was dead or a zombie (X or Z): its last switch.
    pub prev_dead: bool,
    /// The task taking the CPU (0: the idle task).
    pub next_pid: i32,
    /// Its kernel priority.
    pub next_prio: i32,
    /// The leaving task's comm.
    pub prev_comm: Comm,
    /// The arriving task's comm.
    pub next_comm: Comm,
}

/// The bits of a sched_switch's `prev_state` that mean sleeping (below the preempt bit),
/// unless the event's format says otherwise.
pub const SLEEP_MASK: i64 = 0xff;
/// The bits that mean dead or a zombie (X, Z), unless the format says otherwise.
pub const DEAD_MASK: i64 = 0x30;

impl Switch {
    /// A switch from `prev` (pid and comm), leaving in `state`, to `next`, both at kernel
    /// priority `prio`; runnable and dead as [`SLEEP_MASK`] and [`DEAD_MASK`] read `state`.
    pub fn new(prev: (i32, Comm), state: i64, next: (i32, Comm), prio: i32) -> Switch {
        Switch {
            prev_pid: prev.0,
            prev_prio: prio,
            prev_state: state,
            prev_runnable: state & SLEEP_MASK == 0,
            prev_dead: state & DEAD_MASK != 0,
            next_pid: next.0,
            next_prio: prio,
            prev_comm: prev.1,
            next_comm: next.1,
        }
    }

    /// This switch on `cpu` at `ts`, recorded by the leaving task.
    pub fn at(self, ts: u64, cpu: u32) -> Event {
        Event { ts, cpu, current: self.prev_pid, kind: EventKind::Switch(self) }
    }
}

/// A wake-up event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeTarget {
    /// The woken task.
    pub pid: i32,
    /// The CPU it will run on.
    pub target_cpu: i32,
}

/// A block request event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The device, as the kernel's dev_t (major << 20 | minor).
    pub dev: u32,
    /// First sector.
    pub sector: u64,
    /// Sectors.
    pub nr_sector: u32,
    /// Bytes (issue only; 0 on completion).
    pub bytes: u32,
    /// Error (completion only).
    pub error: i32,
    /// The kernel's RWBS flags (`W`, `WS`, `R`, ...), NUL-padded.
    pub rwbs: [u8; 10],
}

/// How to read one event's records, from its format.
#[derive(Debug, Clone)]
enum ReadPlan {
    Switch {
        prev_pid: Slot,
        prev_prio: Slot,
        prev_state: Slot,
        next_pid: Slot,
        next_prio: Slot,
        prev_comm: Slot,
        next_comm: Slot,
    },
    Wake {
        which: WakeKind,
        pid: Slot,
        target_cpu: Slot,
    },
    Migrate {
        pid: Slot,
        orig_cpu: Slot,
        dest_cpu: Slot,
    },
    Fork {
        parent: Slot,
        child: Slot,
    },
    Exec {
        pid: Slot,
        filename: Slot,
    },
    Exit {
        pid: Slot,
    },
    Block {
        complete: bool,
        dev: Slot,
        sector: Slot,
        nr_sector: Slot,
        bytes: Option<Slot>,
        error: Option<Slot>,
        rwbs: Slot,
    },
}

#[derive(Debug, Clone, Copy)]
enum WakeKind {
    Waking,
    Wakeup,
    New,
}

/// The commit word's flags and the length mask below them.
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// Absolute timestamps carry 59 bits; the rest come from the running clock.
const TS_MSB: u64 = 0xf8 << 56;

/// Reads pages of the events it was given formats for; records of other events are counted
/// and skipped.
#[derive(Debug, Clone)]
pub struct Decoder {
    header: HeaderPage,
    common_type: Slot,
    common_pid: Slot,
    /// Indexed by event id.
    plans: Vec<Option<ReadPlan>>,
    /// sched_switch's prev_state bits that mean "still runnable" when none is set.
    sleep_mask: i64,
    /// The X and Z bits of prev_state.
    dead_mask: i64,
}

/// What decoding found besides the events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Pages read.
    pub pages: u64,
    /// Pages whose flags said events were lost before them.
    pub missed_pages: u64,
    /// Events lost, where pages stored the count.
    pub missed_counted: u64,
    /// Records of events without a format here.
    pub unknown: u64,
    /// Pages that ended in a malformed event (the rest of the page was skipped).
    pub malformed: u64,
}

impl PageStats {
    fn add(&mut self, o: &PageStats) {
        self.pages += o.pages;
        self.missed_pages += o.missed_pages;
        self.missed_counted += o.missed_counted;
        self.unknown += o.unknown;
        self.malformed += o.malformed;
    }
}

/// A decoded capture.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    /// Every event of every CPU, by timestamp (ties keep CPU then buffer order).
    pub events: Vec<Event>,
    /// What the pages said besides.
    pub stats: PageStats,
}

impl Decoder {
    /// A decoder for pages laid out as `header_page` says, holding events with these
    /// `format` texts (events the decoder does not know are skipped).
    pub fn new(header_page: &str, formats: &[String]) -> Result<Decoder, FormatError> {
        let header = HeaderPage::parse(header_page)?;
        let mut plans: Vec<Option<ReadPlan>> = Vec::new();
        let mut common_type = Slot { offset: 0, size: 2, signed: false };
        let mut common_pid = Slot { offset: 4, size: 4, signed: true };
        let (mut sleep_mask, mut dead_mask) = (SLEEP_MASK, DEAD_MASK);
        for text in formats {
            let f = EventFormat::parse(text)?;
            common_type = f.int("common_type")?;
            common_pid = f.int("common_pid")?;
            let plan = match f.name.as_str() {
                "sched_switch" => {
                    if let Some(bit) = f.preempt_bit() {
                        sleep_mask = (bit - 1) as i64;
                    }
                    // X (dead) and Z (zombie), as its print format names them.
                    let bit = |name: &str| flag_value(&f.print_fmt, name).unwrap_or(0) as i64;
                    if bit("X") | bit("Z") != 0 {
                        dead_mask = bit("X") | bit("Z");
                    }
                    ReadPlan::Switch {
                        prev_pid: f.int("prev_pid")?,
                        prev_prio: f.int("prev_prio")?,
                        prev_state: f.int("prev_state")?,
                        next_pid: f.int("next_pid")?,
                        next_prio: f.int("next_prio")?,
                        prev_comm: f.chars("prev_comm")?,
                        next_comm: f.chars("next_comm")?,
                    }
                }
                "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => ReadPlan::Wake {
                    which: match f.name.as_str() {
                        "sched_waking" => WakeKind::Waking,
                        "sched_wakeup" => WakeKind::Wakeup,
                        _ => WakeKind::New,
                    },
                    pid: f.int("pid")?,
                    target_cpu: f.int("target_cpu")?,
                },
                "sched_migrate_task" => ReadPlan::Migrate {
                    pid: f.int("pid")?,
                    orig_cpu: f.int("orig_cpu")?,
                    dest_cpu: f.int("dest_cpu")?,
                },
                "sched_process_fork" => {
                    ReadPlan::Fork { parent: f.int("parent_pid")?, child: f.int("child_pid")? }
                }
                "sched_process_exec" => {
                    ReadPlan::Exec { pid: f.int("pid")?, filename: f.data_loc("filename")? }
                }
                "sched_process_exit" => ReadPlan::Exit { pid: f.int("pid")? },
                "block_rq_issue" | "block_rq_complete" => {
                    let complete = f.name == "block_rq_complete";
                    ReadPlan::Block {
                        complete,
                        dev: f.int("dev")?,
                        sector: f.int("sector")?,
                        nr_sector: f.int("nr_sector")?,
                        bytes: f.int("bytes").ok(),
                        error: f.int("error").ok(),
                        rwbs: f.chars("rwbs")?,
                    }
                }
                _ => continue,
            };
            let id = f.id as usize;
            if plans.len() <= id {
                plans.resize(id + 1, None);
            }
            plans[id] = Some(plan);
        }
        Ok(Decoder { header, common_type, common_pid, plans, sleep_mask, dead_mask })
    }

    /// The page layout.
    pub fn header(&self) -> &HeaderPage {
        &self.header
    }

    /// Decodes one CPU's pages (whole pages, back to back) into `out`, in buffer order.
    pub fn decode_cpu(&self, cpu: u32, pages: &[u8], out: &mut Vec<Event>) -> PageStats {
        let mut stats = PageStats::default();
        let size = self.header.page_size();
        for page in pages.chunks(size) {
            self.decode_page(cpu, page, out, &mut stats);
        }
        stats
    }

    /// Decodes one page into `out`.
    pub fn decode_page(&self, cpu: u32, page: &[u8], out: &mut Vec<Event>, stats: &mut PageStats) {
        let h = &self.header;
        if page.len() < h.data {
            stats.malformed += 1;
            return;
        }
        stats.pages += 1;
        let mut ts = le_u64(&page[h.timestamp..]);
        let commit = if h.commit_size == 8 {
            le_u64(&page[h.commit..])
        } else {
            le_u32(&page[h.commit..]) as u64
        };
        let len = ((commit & COMMIT_MASK) as usize).min(h.data_size).min(page.len() - h.data);
        let data = &page[h.data..h.data + len];
        if commit & MISSED_EVENTS != 0 {
            stats.missed_pages += 1;
            let count = (commit & MISSED_STORED != 0)
                .then(|| page.get(h.data + len..h.data + len + h.commit_size))
                .flatten()
                .map(|b| if h.commit_size == 8 { le_u64(b) } else { le_u32(b) as u64 });
            stats.missed_counted += count.unwrap_or(0);
            out.push(Event { ts, cpu, current: -1, kind: EventKind::Lost { count } });
        }
        let mut off = 0;
        while off + 4 <= data.len() {
            let word = le_u32(&data[off..]);
            let (type_len, delta) = (word & 31, (word >> 5) as u64);
            let array0 = || data.get(off + 4..off + 8).map(le_u32);
            match type_len {
                29 => {
                    if delta == 0 {
                        break;
                    }
                    match array0() {
                        Some(n) if n as usize + 4 <= data.len() - off => off += 4 + n as usize,
                        _ => {
                            stats.malformed += 1;
                            break;
                        }
                    }
                }
                30 | 31 => {
                    let Some(hi) = array0() else {
                        stats.malformed += 1;
                        break;
                    };
                    let v = ((hi as u64) << 27) | delta;
                    ts = if type_len == 30 { ts.wrapping_add(v) } else { fix_abs(v, ts) };
                    off += 8;
                }
                _ => {
                    let (start, end) = if type_len == 0 {
                        match array0() {
                            Some(n) if n >= 4 && off + 4 + n as usize <= data.len() => {
                                (off + 8, off + 4 + n as usize)
                            }
                            _ => {
                                stats.malformed += 1;
                                break;
                            }
                        }
                    } else {
                        (off + 4, off + 4 + 4 * type_len as usize)
                    };
                    if end > data.len() {
                        stats.malformed += 1;
                        break;
                    }
                    ts = ts.wrapping_add(delta);
                    let rec = &data[start..end];
                    match self.record(rec) {
                        Some(kind) => out.push(Event {
                            ts,
                            cpu,
                            current: self.common_pid.get(rec) as i32,
                            kind,
                        }),
                        None => stats.unknown += 1,
                    }
                    off = end;
                }
            }
        }
    }

    /// One record's event, or None for an event without a plan.
    #[inline]
    fn record(&self, rec: &[u8]) -> Option<EventKind> {
        let id = self.common_type.get(rec) as usize;
        let pid = |s: &Slot| s.get(rec) as i32;
        Some(match self.plans.get(id)?.as_ref()? {
            ReadPlan::Switch {
                prev_pid,
                prev_prio,
                prev_state,
                next_pid,
                next_prio,
                prev_comm,
                next_comm,
            } => {
                let state = prev_state.get(rec);
                EventKind::Switch(Switch {
                    prev_pid: pid(prev_pid),
                    prev_prio: pid(prev_prio),
                    prev_state: state,
                    prev_runnable: state & self.sleep_mask == 0,
                    prev_dead: state & self.dead_mask != 0,
                    next_pid: pid(next_pid),
                    next_prio: pid(next_prio),
                    prev_comm: prev_comm.comm(rec),
                    next_comm: next_comm.comm(rec),
                })
            }
            ReadPlan::Wake { which, pid: p, target_cpu } => {
                let w = WakeTarget { pid: pid(p), target_cpu: pid(target_cpu) };
                match which {
                    WakeKind::Waking => EventKind::Waking(w),
                    WakeKind::Wakeup => EventKind::Wakeup(w),
                    WakeKind::New => EventKind::WakeupNew(w),
                }
            }
            ReadPlan::Migrate { pid: p, orig_cpu, dest_cpu } => {
                EventKind::Migrate { pid: pid(p), orig_cpu: pid(orig_cpu), dest_cpu: pid(dest_cpu) }
            }
            ReadPlan::Fork { parent, child } => {
                EventKind::Fork { parent: pid(parent), child: pid(child) }
            }
            ReadPlan::Exec { pid: p, filename } => EventKind::Exec {
                pid: pid(p),
                filename: String::from_utf8_lossy(filename.string(rec)).into(),
            },
            ReadPlan::Exit { pid: p } => EventKind::Exit { pid: pid(p) },
            ReadPlan::Block { complete, dev, sector, nr_sector, bytes, error, rwbs } => {
                let mut flags = [0u8; 10];
                let r = rwbs.comm(rec);
                flags.copy_from_slice(&r[..10]);
                let b = Block {
                    dev: dev.get(rec) as u32,
                    sector: sector.get(rec) as u64,
                    nr_sector: nr_sector.get(rec) as u32,
                    bytes: bytes.map_or(0, |s| s.get(rec) as u32),
                    error: error.map_or(0, |s| s.get(rec) as i32),
                    rwbs: flags,
                };
                if *complete {
                    EventKind::BlockComplete(b)
                } else {
                    EventKind::BlockIssue(b)
                }
            }
        })
    }
}

/// The value of a flag named `name` in a `__print_flags` list (`{ 0x10, "X" }`).
fn flag_value(print_fmt: &str, name: &str) -> Option<u64> {
    let quoted = format!("\"{name}\"");
    print_fmt.split('{').skip(1).find_map(|part| {
        let (value, rest) = part.split_once(',')?;
        if rest.split('}').next()?.trim() != quoted {
            return None;
        }
        let v = value.trim();
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse().ok(),
        }
    })
}

/// An absolute timestamp lacks the clock's top 5 bits: take them from the running clock.
fn fix_abs(abs: u64, running: u64) -> u64 {
    if running & TS_MSB == 0 {
        return abs;
    }
    let v = abs | (running & TS_MSB);
    if v < running {
        v.wrapping_add(1 << 59)
    } else {
        v
    }
}

#[inline]
fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[inline]
fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// Decodes a whole capture: every CPU's pages, merged by timestamp.
pub fn decode(raw: &Raw) -> Result<Decoded, FormatError> {
    let d = Decoder::new(&raw.header_page, &raw.formats)?;
    let mut out = Decoded::default();
    let per_page = d.header.data_size / 40;
    out.events.reserve(
        raw.cpus.iter().map(|c| c.pages.len() / d.header.page_size().max(1) * per_page).sum(),
    );
    for c in &raw.cpus {
        let s = d.decode_cpu(c.cpu, &c.pages, &mut out.events);
        out.stats.add(&s);
    }
    // Each CPU's run is already in order: the stable sort merges the runs and keeps ties in
    // CPU then buffer order.
    out.events.sort_by_key(|e| e.ts);
    Ok(out)
}

#[cfg(test)]
mod tests;
