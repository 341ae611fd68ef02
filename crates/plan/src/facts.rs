//! Facts about the machine that sys reads and the spec checks a plan against, before
//! anything is changed: what this process may do, its limits on tasks and memory, and the
//! experiment device.

/// sched_ext on this machine, as a spec with a `cpu_scheduler` axis is checked against
/// it before a run loads a scheduler (`schedlab-sys` reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScxFacts {
    /// `/sys/kernel/sched_ext` exists: the kernel was built with CONFIG_SCHED_CLASS_EXT.
    pub available: bool,
    /// Its `state` (`disabled`, `enabled`, `enabling`, `disabling`), empty when absent.
    pub state: String,
    /// `root/ops` while a scheduler is loaded.
    pub ops: Option<String>,
    /// This process may load a BPF scheduler (root: CAP_SYS_ADMIN and CAP_BPF).
    pub may_load: bool,
    /// The running kernel's release, for messages.
    pub kernel: String,
    /// Each scheduler program the plan names, as found on PATH or by path: its absolute
    /// path, or why it cannot be run.
    pub programs: Vec<(String, Result<std::path::PathBuf, crate::Refusal>)>,
}

/// What this process is allowed to do, as far as the spec is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// CAP_SYS_NICE (root has it): any policy, priority and nice.
    pub sys_nice: bool,
    /// RLIMIT_RTPRIO soft limit: highest RT priority allowed without CAP_SYS_NICE.
    pub rtprio_limit: u64,
    /// Lowest nice allowed without CAP_SYS_NICE (from RLIMIT_NICE: 20 - limit).
    pub min_nice: i32,
    /// This process's nice: workers start at it, and any nice >= it needs no privilege.
    pub nice: i32,
    /// A directory schedlab would create cgroups in or move workers through that this process
    /// may not write (None: it may write every one, or the machine has no cgroups).
    pub cgroup_unwritable: Option<String>,
    /// May write /proc/sys/vm/drop_caches (root only): `[device]` drops the page cache
    /// before each cell unless `drop_caches = false`.
    pub drop_caches: bool,
    /// May open /dev/cpu_dma_latency for writing (root only), which real-time cells hold.
    pub cpu_dma_latency: bool,
    /// Why this kernel takes no custom slice for other and batch (`slice_us`: Linux 6.12+
    /// reads it from sched_attr.sched_runtime; older ones ignore it), None when it does.
    pub custom_slice_refused: Option<String>,
    /// Why the kernel refuses SCHED_FIFO and SCHED_RR here although the privilege above
    /// allows them, as a forked child of this process found when it tried (e.g. RT group
    /// scheduling in a cgroup without RT runtime), and a run cannot place its workers where
    /// they are allowed; None when allowed (or allowed after [`Capabilities::rt_placement`]).
    pub rt_refused: Option<String>,
    /// The same for SCHED_DEADLINE (e.g. an affinity or cpuset narrower than the root domain).
    pub deadline_refused: Option<String>,
    /// Where a run with real-time cells moves its engine, and so its workers, because the
    /// kernel refuses real-time in this process's own cgroup but allowed it to a child moved
    /// there; None when no move is needed (or none is possible).
    pub rt_placement: Option<RtPlacement>,
}

/// A cgroup in which the kernel allows real-time, for a process whose own cgroup holds no
/// RT runtime (RT group scheduling): a run moves its engine there for its duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtPlacement {
    /// The cgroup directory this process is in (in the cpu controller's hierarchy).
    pub from: std::path::PathBuf,
    /// The cgroup directory a run moves its engine into (where a probe child was allowed).
    pub to: std::path::PathBuf,
    /// Why, in the user's terms: the cgroup, its RT runtime, the kernel feature.
    pub why: String,
}

impl Capabilities {
    /// An ordinary user's process at nice 0: no capability, RLIMIT_RTPRIO and RLIMIT_NICE 0,
    /// cgroups not writable (the distribution default; tests start from it).
    pub fn unprivileged() -> Capabilities {
        Capabilities {
            sys_nice: false,
            rtprio_limit: 0,
            min_nice: 20,
            nice: 0,
            cgroup_unwritable: Some("/sys/fs/cgroup".into()),
            drop_caches: false,
            cpu_dma_latency: false,
            custom_slice_refused: None,
            rt_refused: None,
            deadline_refused: None,
            rt_placement: None,
        }
    }

    /// Root: everything allowed.
    pub fn root() -> Capabilities {
        Capabilities {
            sys_nice: true,
            rtprio_limit: 99,
            min_nice: -20,
            nice: 0,
            cgroup_unwritable: None,
            drop_caches: true,
            cpu_dma_latency: true,
            custom_slice_refused: None,
            rt_refused: None,
            deadline_refused: None,
            rt_placement: None,
        }
    }

    /// True when workers may get `nice` without CAP_SYS_NICE: not below this process's nice,
    /// or not below RLIMIT_NICE's floor (the kernel's can_nice).
    pub fn may_nice(&self, nice: i32) -> bool {
        self.sys_nice || nice >= self.nice || nice >= self.min_nice
    }

    /// True when workers may run SCHED_FIFO/SCHED_RR at `priority` without CAP_SYS_NICE.
    pub fn may_rt(&self, priority: u32) -> bool {
        self.sys_nice || priority as u64 <= self.rtprio_limit
    }
}

/// What the machine allows, as read just before the check; None where unknown (or, for
/// RLIMIT_NPROC, where it does not apply).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineLimits {
    /// kernel.pid_max: every process and thread takes a pid below it.
    pub pid_max: Option<u64>,
    /// kernel.threads-max: the most tasks the kernel lets exist at once.
    pub threads_max: Option<u64>,
    /// Tasks (processes and threads) on the machine now.
    pub tasks: Option<u64>,
    /// This process's RLIMIT_NPROC (soft), when it applies: not unlimited, and the user is
    /// not root and has neither CAP_SYS_ADMIN nor CAP_SYS_RESOURCE.
    pub nproc: Option<u64>,
    /// Tasks of this process's real user now: what RLIMIT_NPROC counts.
    pub user_tasks: Option<u64>,
    /// MemAvailable from /proc/meminfo, KiB.
    pub mem_available_kib: Option<u64>,
}

/// What the machine says about the device a plan wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceFacts {
    /// The process may create loop devices, mount and write sysfs (CAP_SYS_ADMIN, root).
    pub privileged: bool,
    /// Why a `path` target cannot be used (missing, not mounted, not on a block device).
    pub path_error: Option<String>,
    /// The real disk the run would touch (the disk holding `path`; a loop device's backing
    /// disk when `queue = "backing"`); None for a loop device on its own queue.
    pub disk: Option<String>,
    /// Schedulers offered by the queue the `iosched` axis sets, if known.
    pub offered: Option<Vec<String>>,
    /// Free bytes where the files (Dir) or the loop image (Loop) go.
    pub free_bytes: Option<u64>,
    /// Why the filesystem cannot be made (mkfs tool missing).
    pub mkfs_error: Option<String>,
    /// Why a loop device cannot be made here (/dev/loop-control absent or not writable).
    pub loop_unavailable: Option<String>,
    /// Why a privileged process cannot drop the page cache (/proc/sys/vm/drop_caches
    /// read-only, as a container mounts it).
    pub drop_caches_unwritable: Option<String>,
    /// Why the `iosched` axis cannot write the queue's scheduler files (a read-only /sys, no
    /// permission): the path, the reason and the remedy.
    pub queue_unwritable: Option<String>,
}

/// What the machine says about one scheduler knob a plan names (`knob::Knob`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnobFact {
    /// Its file can be read.
    Present {
        /// The file (for a governor, the first CPU's), for messages.
        path: String,
        /// Its value now, as a knob value's text spells it (`full`, `NO_PLACE_LAG`, `100`).
        value: String,
        /// The words its file offers (preemption modes, governors, features); empty for numbers.
        offered: Vec<String>,
        /// Why this process may not write it (the path, a read-only mount or no permission,
        /// the remedy); None when it may.
        unwritable: Option<String>,
    },
    /// The kernel has no such knob: why we think so (the file that does not exist).
    Missing(String),
    /// The knob exists but cannot be used here: why (debugfs not mounted, the kernel
    /// refuses to read it, no SMT control).
    Unusable(String),
}

/// What the machine says about every knob a plan names, by name.
pub type KnobFacts = std::collections::BTreeMap<String, KnobFact>;
