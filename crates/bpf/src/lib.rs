//! schedlab's own BPF programs (`bpf/sched.bpf.c`, compiled by `build-bpf.sh`, the object
//! committed): a cell's per-worker and per-CPU scheduler figures aggregated in the kernel,
//! loaded and read with aya (no libbpf, clang or bpftool at build or run time). The
//! programs, their links and maps are held by file descriptors only, nothing pinned: when
//! the process ends, however it ends, the kernel drops them all.
#![deny(missing_docs)]

pub mod convert;
pub mod hist;

use aya::maps::{Array, HashMap as BpfHash, PerCpuArray};
use aya::programs::{BtfTracePoint, ProgramError};
use aya::{Btf, Ebpf, EbpfLoader, Endianness};
use convert::{Agg, CpuAcc, KernelCounts, LiveTask, Maps, TaskRow};
use schedlab_model::trace::{CellTrace, ObserverCost, ProgramCost};
use std::os::fd::OwnedFd;
use std::path::Path;

/// The compiled programs (`build-bpf.sh`; `check-bpf.sh` fails when stale).
static OBJECT: &[u8] = aya::include_bytes_aligned!("bpf/sched.bpf.o");

/// The kernel's own BTF, against which the programs' field offsets are relocated.
pub const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Where tests put another BTF path in place of [`KERNEL_BTF`] (one that is missing, to
/// see the refusal): read by [`kernel_btf`], used by nothing else.
pub const BTF_ENV: &str = "SCHEDLAB_TEST_KERNEL_BTF";

/// The kernel's BTF: [`KERNEL_BTF`], or what [`BTF_ENV`] names.
pub fn kernel_btf() -> std::path::PathBuf {
    std::env::var_os(BTF_ENV).map_or_else(|| KERNEL_BTF.into(), Into::into)
}

/// The programs, each with its tracepoint. Every name starts with `schedlab_`: the
/// kernel's program list shows whose they are.
/// The switch is attached first: a task's switch-in is timed from then on, before any
/// task is followed or woken.
pub const PROGRAMS: [(&str, &str); 4] = [
    ("schedlab_switch", "sched_switch"),
    ("schedlab_fork", "sched_process_fork"),
    ("schedlab_wakeup", "sched_wakeup"),
    ("schedlab_wakeup_new", "sched_wakeup_new"),
];

/// The programs that time wake-ups, attached only when asked.
const WAKEUP_PROGRAMS: [&str; 2] = ["schedlab_wakeup", "schedlab_wakeup_new"];

/// Trees beyond the workers a cell's engine may create while observed (dispatchers,
/// helpers): each takes a slot.
const SPARE_SLOTS: u32 = 64;

/// Rows for the tasks of a cell (`task_rows`): each worker's tree may create this many, and
/// the engine's trees the spare.
const TASKS_PER_WORKER: u32 = 8;
const SPARE_ROWS: u32 = 4096;

/// The kernel's largest pid plus one (`kernel.pid_max`): the `pids` map has an entry for each
/// (16 bytes: 512 KiB at the default 32,768, 64 MiB at systemd's 4,194,304).
fn pid_max() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4_194_304)
}

/// What a followed tree's root is (`roles` in the program).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A worker of the cell.
    Worker = 1,
    /// The engine's (a dispatcher).
    Engine = 2,
}

/// Why observing failed.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// Observing is not possible here; the message says what is missing.
    #[error("{0}")]
    Unavailable(String),
    /// The kernel refused a step.
    #[error("{what}: {source}")]
    Bpf {
        /// The step.
        what: String,
        /// The error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn bpf_err(what: &str) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> BpfError + '_ {
    move |source| BpfError::Bpf { what: what.to_string(), source }
}

/// What is missing for the programs here, if anything: the kernel's BTF at `btf` (they are
/// relocated against it), the bpf system call, or the capabilities to load tracing programs
/// (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN). Changes nothing.
pub fn unavailable(btf: &Path) -> Option<String> {
    if let Err(e) = std::fs::metadata(btf) {
        return Some(format!(
            "this kernel has no BTF ({}: {e}): the BPF observer needs CONFIG_DEBUG_INFO_BTF",
            btf.display()
        ));
    }
    let caps = effective_caps();
    let has = |bit: u32| caps.is_some_and(|c| c & (1 << bit) != 0);
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    let admin = has(CAP_SYS_ADMIN);
    let bpf_perfmon = has(CAP_BPF) && has(CAP_PERFMON);
    if !(admin || bpf_perfmon) {
        let missing: Vec<&str> = [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
            .iter()
            .filter(|(b, _)| !has(*b))
            .map(|(_, n)| *n)
            .collect();
        return Some(format!(
            "loading the BPF observer needs {} (or root)",
            if missing.is_empty() {
                "CAP_BPF and CAP_PERFMON".into()
            } else {
                missing.join(" and ")
            }
        ));
    }
    match bpf_syscall_error() {
        Some(libc::ENOSYS) => {
            Some("this kernel has no bpf() system call (CONFIG_BPF_SYSCALL)".into())
        }
        // With CAP_SYS_ADMIN only a filter refuses the call: a container's seccomp, lockdown.
        Some(libc::EPERM) if admin => Some(
            "the kernel refused the bpf() system call to this process although it has CAP_SYS_ADMIN (EPERM: a container's seccomp filter or lockdown): run outside the container, or allow bpf() in it".into(),
        ),
        _ => None,
    }
}

/// The effective capabilities (CapEff of /proc/self/status).
fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// How bpf() answers BPF_PROG_GET_NEXT_ID: its errno when refused in a way that says bpf()
/// cannot be used (ENOSYS: no such call; EPERM: not allowed), else None.
fn bpf_syscall_error() -> Option<i32> {
    const BPF_PROG_GET_NEXT_ID: libc::c_long = 11;
    let mut attr = [0u32; 4];
    // SAFETY: attr is a zeroed union bpf_attr prefix large enough for the GET_NEXT_ID fields;
    // the kernel only reads and writes within the size given.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_GET_NEXT_ID,
            attr.as_mut_ptr(),
            std::mem::size_of_val(&attr),
        )
    };
    let errno = (r < 0).then(|| std::io::Error::last_os_error().raw_os_error()).flatten();
    errno.filter(|e| [libc::ENOSYS, libc::EPERM].contains(e))
}

/// The programs' configuration (`struct config`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct ProgConfig {
    engine_tgid: u32,
    max_slots: u32,
    window_start: u64,
    next_slot: u32,
    max_rows: u32,
    next_row: u32,
    lost_tasks: u32,
    wakeups: u32,
    pad: u32,
}

// SAFETY: plain repr(C) structs of integers, any bit pattern valid, no padding holes read.
unsafe impl aya::Pod for ProgConfig {}
// SAFETY: as above.
unsafe impl aya::Pod for Agg {}
// SAFETY: as above.
unsafe impl aya::Pod for TaskRow {}
// SAFETY: as above.
unsafe impl aya::Pod for PerCpu {}

/// One CPU's state (`struct cpu_st`): its time, and its wake-up latencies not yet counted.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct PerCpu {
    acc: CpuAcc,
    /// Latencies staged.
    n: u32,
    pad: u32,
    e: [u32; 64],
    /// The task switched to last, and its row + 1.
    cur_pid: u32,
    cur_row: u32,
    wakeups: u32,
    pad2: u32,
}

/// The CLOCK_MONOTONIC time, ns (the programs' bpf_ktime_get_ns).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The object to load: the built-in one, or for trying a change to the programs without
/// rebuilding schedlab, the file `SCHEDLAB_BPF_OBJECT` names (crates/bpf/README.md).
fn object() -> Result<std::borrow::Cow<'static, [u8]>, BpfError> {
    match std::env::var_os("SCHEDLAB_BPF_OBJECT") {
        None => Ok(std::borrow::Cow::Borrowed(OBJECT)),
        Some(path) => std::fs::read(&path).map(std::borrow::Cow::Owned).map_err(|e| {
            bpf_err("reading SCHEDLAB_BPF_OBJECT")(
                format!("{}: {e}", std::path::Path::new(&path).display()).into(),
            )
        }),
    }
}

/// The programs loaded and attached for one cell: they follow the children the engine
/// (this process) makes from now on.
pub struct Observer {
    ebpf: Ebpf,
    links: Vec<(&'static str, aya::programs::tp_btf::BtfTracePointLinkId)>,
    /// BPF_ENABLE_STATS, held while the cell runs (None where the kernel refused it).
    stats: Option<OwnedFd>,
    start_ns: u64,
}

impl Observer {
    /// Loads the programs, relocated against the BTF at `btf`, with room for `workers`
    /// workers, and attaches them; the window starts now. The wake-up programs are attached
    /// only with `wakeups`: without them the figures have no wake-up latencies, and the
    /// switch costs less (docs/BENCHMARKS.md).
    pub fn start(btf: &Path, workers: usize, wakeups: bool) -> Result<Observer, BpfError> {
        if let Some(why) = unavailable(btf) {
            return Err(BpfError::Unavailable(why));
        }
        let kernel = Btf::parse_file(btf, Endianness::default())
            .map_err(|e| bpf_err("reading the kernel's BTF")(Box::new(e)))?;
        let slots = workers as u32 + SPARE_SLOTS;
        let rows = workers as u32 * TASKS_PER_WORKER + SPARE_ROWS;
        let pid_max = pid_max();
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&kernel))
            .map_max_entries("aggs", slots)
            .map_max_entries("hist", slots)
            .map_max_entries("roles", slots)
            .map_max_entries("pids", pid_max)
            .map_max_entries("task_rows", rows)
            .load(&object()?)
            .map_err(|e| bpf_err("loading the BPF observer")(Box::new(e)))?;
        let stats = aya::sys::enable_stats(aya::sys::Stats::RunTime).ok();
        let start_ns = monotonic_ns();
        let config = ProgConfig {
            engine_tgid: std::process::id(),
            max_slots: slots,
            max_rows: rows,
            window_start: start_ns,
            wakeups: wakeups as u32,
            ..Default::default()
        };
        let mut map: Array<_, ProgConfig> =
            Array::try_from(ebpf.map_mut("config").expect("in the object"))
                .map_err(|e| bpf_err("the observer's configuration")(Box::new(e)))?;
        map.set(0, config, 0).map_err(|e| bpf_err("the observer's configuration")(Box::new(e)))?;
        let mut observer = Observer { ebpf, links: Vec::new(), stats, start_ns };
        for (name, tracepoint) in PROGRAMS {
            let prog: &mut BtfTracePoint = program(&mut observer.ebpf, name)?;
            let what = format!("loading {name} for {tracepoint}");
            prog.load(tracepoint, &kernel).map_err(|e| bpf_err(&what)(Box::new(e)))?;
            if !wakeups && WAKEUP_PROGRAMS.contains(&name) {
                continue;
            }
            let link = prog
                .attach()
                .map_err(|e| bpf_err(&format!("attaching {name} to {tracepoint}"))(Box::new(e)))?;
            observer.links.push((name, link));
        }
        Ok(observer)
    }

    /// Tells the programs what the tree rooted at `pid` (a child of the engine) is.
    pub fn register(&mut self, pid: i32, role: Role) -> Result<(), BpfError> {
        let mut roles: BpfHash<_, u32, u32> =
            BpfHash::try_from(self.ebpf.map_mut("roles").expect("in the object"))
                .map_err(|e| bpf_err("the observer's roles")(Box::new(e)))?;
        roles
            .insert(pid as u32, role as u32, 0)
            .map_err(|e| bpf_err("registering a worker with the observer")(Box::new(e)))
    }

    /// Detaches the programs and reads the figures of `workers` (pids, in order), with what
    /// observing cost.
    pub fn finish(mut self, workers: &[i32]) -> Result<CellTrace, BpfError> {
        for (name, link) in std::mem::take(&mut self.links) {
            program(&mut self.ebpf, name)?
                .detach(link)
                .map_err(|e| bpf_err(&format!("detaching {name}"))(Box::new(e)))?;
        }
        let end_ns = monotonic_ns();
        let mut programs = Vec::new();
        for (name, tracepoint) in PROGRAMS {
            let prog: &mut BtfTracePoint = program(&mut self.ebpf, name)?;
            let info =
                prog.info().map_err(|e| bpf_err("the observer's statistics")(Box::new(e)))?;
            programs.push(ProgramCost {
                name: tracepoint.to_string(),
                run_cnt: info.run_count(),
                run_time_ns: info.run_time().as_nanos() as u64,
            });
        }
        drop(self.stats.take());
        let maps = self.read().map_err(|e| bpf_err("reading the observer's maps")(e))?;
        let mut t = convert::cell_trace(&maps, workers, self.start_ns, end_ns);
        let cost = ObserverCost::new(programs, t.span_s);
        t.events = cost.events;
        t.observer = Some(cost);
        Ok(t)
    }

    /// The maps' contents.
    fn read(&self) -> Result<Maps, Box<dyn std::error::Error + Send + Sync>> {
        let map = |name: &str| self.ebpf.map(name).expect("in the object");
        let config: Array<_, ProgConfig> = Array::try_from(map("config"))?;
        let c = config.get(&0, 0)?;
        let used = c.next_slot.min(c.max_slots);
        let aggs: Array<_, Agg> = Array::try_from(map("aggs"))?;
        let hist: Array<_, [u32; hist::BUCKETS]> = Array::try_from(map("hist"))?;
        let mut out = Maps::default();
        for slot in 0..used {
            out.aggs.push(aggs.get(&slot, 0)?);
            out.hists.push(hist.get(&slot, 0)?.to_vec());
        }
        let unresolved: BpfHash<_, u64, u64> = BpfHash::try_from(map("unresolved"))?;
        for entry in unresolved.iter() {
            let (key, n) = entry?;
            out.unresolved.push(((key >> 32) as u32, key as u32, n));
        }
        let cpus: PerCpuArray<_, PerCpu> = PerCpuArray::try_from(map("cpus"))?;
        for (cpu, c) in cpus.get(&0, 0)?.iter().enumerate() {
            out.cpus.push((cpu as u32, c.acc));
            out.staged.extend_from_slice(&c.e[..(c.n as usize).min(c.e.len())]);
        }
        let rows: Array<_, TaskRow> = Array::try_from(map("task_rows"))?;
        for r in 0..c.next_row.min(c.max_rows) {
            let row = rows.get(&r, 0)?;
            if row.live != 0 {
                out.live.push(LiveTask { row, kernel: kernel_counts(row.pid) });
            }
        }
        out.lost_tasks = c.next_row.saturating_sub(c.max_rows) as u64 + c.lost_tasks as u64;
        Ok(out)
    }
}

/// What the kernel counted for task `pid` so far, if it still exists.
fn kernel_counts(pid: u32) -> Option<KernelCounts> {
    let t = schedlab_sys::procfs::TaskSched::read(&schedlab_sys::Root::default(), pid as i32);
    Some(KernelCounts {
        run_ns: t.oncpu_ns?,
        runnable_ns: t.run_delay_ns?,
        voluntary: t.voluntary.unwrap_or(0),
        involuntary: t.involuntary.unwrap_or(0),
        migrations: t.migrations.unwrap_or(0),
    })
}

fn program<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut BtfTracePoint, BpfError> {
    ebpf.program_mut(name)
        .expect("every program is in the object")
        .try_into()
        .map_err(|e: ProgramError| bpf_err(name)(Box::new(e)))
}

/// The ids of the BPF programs loaded now whose names are schedlab's (`schedlab_`...).
pub fn loaded_schedlab_programs() -> Result<Vec<(u32, String)>, BpfError> {
    let mut out = Vec::new();
    for p in aya::programs::loaded_programs() {
        let p = p.map_err(|e| bpf_err("listing the kernel's BPF programs")(Box::new(e)))?;
        let name = p.name_as_str().unwrap_or_default().to_string();
        if name.starts_with("schedlab_") {
            out.push((p.id(), name));
        }
    }
    Ok(out)
}

/// A BPF object of the kernel's, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Object {
    /// A program.
    Program(u32),
    /// A map.
    Map(u32),
    /// A link (a program's attachment).
    Link(u32),
}

/// The BPF objects process `pid` holds descriptors of, by its /proc/PID/fdinfo.
pub fn held_by(pid: i32) -> Vec<Object> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return Vec::new() };
    let mut out = Vec::new();
    for e in dir.filter_map(Result::ok) {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            let id = |prefix: &str| line.strip_prefix(prefix).and_then(|v| v.trim().parse().ok());
            // A link's fdinfo names its program too: the link is the object held.
            if let Some(id) = id("link_id:") {
                out.push(Object::Link(id));
            } else if let Some(id) = id("map_id:") {
                out.push(Object::Map(id));
            } else if let Some(id) = id("prog_id:").filter(|_| !text.contains("link_id:")) {
                out.push(Object::Program(id));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Those of `objects` the kernel still has. One the kernel is freeing while it is listed
/// (it cannot be opened any more) counts as gone.
pub fn still_loaded(objects: &[Object]) -> Vec<Object> {
    let mut now = Vec::new();
    now.extend(aya::programs::loaded_programs().flatten().map(|p| Object::Program(p.id())));
    now.extend(aya::maps::loaded_maps().flatten().map(|m| Object::Map(m.id())));
    now.extend(aya::programs::loaded_links().flatten().map(|l| Object::Link(l.id())));
    objects.iter().copied().filter(|o| now.contains(o)).collect()
}

#[cfg(test)]
mod tests;
