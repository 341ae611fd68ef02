//! The experiment device and the I/O scheduler settings a cell applies to its queue.

use crate::Plan;
use serde::{Deserialize, Serialize};

const MIB: u64 = 1 << 20;
/// Room a fresh filesystem takes for itself (journal, metadata), MiB, beyond 10%.
const FS_OVERHEAD_MIB: u64 = 48;

/// One value of the `iosched` axis: a scheduler and the tunables to write with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoSetting {
    /// The name on the axis (a scheduler name or an `[iosched.NAME]` entry).
    pub name: String,
    /// The kernel's scheduler name: none, mq-deadline, kyber, bfq, ...
    pub scheduler: String,
    /// (tunable, value): queue-level ones (nr_requests, read_ahead_kb, ...) go to
    /// `queue/<name>`, the others to `queue/iosched/<name>`.
    pub tunables: Vec<(String, String)>,
}

/// Tunables that live in `/sys/block/<dev>/queue/` itself rather than under `iosched/`.
pub const QUEUE_TUNABLES: &[&str] =
    &["nr_requests", "read_ahead_kb", "nomerges", "rq_affinity", "max_sectors_kb", "wbt_lat_usec"];

/// The tunables each scheduler offers under `queue/iosched/` (Linux 6.x).
pub const SCHEDULER_TUNABLES: &[(&str, &[&str])] = &[
    ("none", &[]),
    (
        "mq-deadline",
        &[
            "read_expire",
            "write_expire",
            "writes_starved",
            "front_merges",
            "fifo_batch",
            "async_depth",
            "prio_aging_expire",
        ],
    ),
    ("kyber", &["read_lat_nsec", "write_lat_nsec"]),
    (
        "bfq",
        &[
            "slice_idle",
            "slice_idle_us",
            "low_latency",
            "timeout_sync",
            "max_budget",
            "back_seek_max",
            "back_seek_penalty",
            "fifo_expire_async",
            "fifo_expire_sync",
            "strict_guarantees",
        ],
    ),
];

/// Where the experiment's files live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceTarget {
    /// A file-backed loop device schedlab creates, formats, mounts and removes.
    Loop {
        /// Size of the backing file in MiB (None: computed from the largest cell).
        size_mib: Option<u64>,
        /// Filesystem: ext4, xfs or btrfs.
        fs: String,
        /// The loop device does direct I/O on its backing file (LOOP_SET_DIRECT_IO).
        direct_io: bool,
    },
    /// A directory on an existing filesystem: schedlab creates its own directory inside it and
    /// writes only there. (A block device in the spec is resolved to where it is mounted.)
    Dir {
        /// The directory or block device as written.
        path: String,
    },
}

/// Which queue the `iosched` axis changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueTarget {
    /// The experiment device's own queue (the loop device's, or the disk's for `Dir`).
    Device,
    /// The disk that holds a loop device's backing file.
    Backing,
}

/// The experiment device (`[device]` in the spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// Where the files go.
    pub target: DeviceTarget,
    /// Whose queue the I/O scheduler axis sets.
    pub queue: QueueTarget,
    /// The real disk the user confirmed (`confirm_device`), needed to touch a real disk.
    pub confirm_device: Option<String>,
    /// sync and drop the page cache before every cell repetition.
    pub drop_caches: bool,
}

/// Smallest filesystem each mkfs accepts, MiB.
fn min_fs_mib(fs: &str) -> u64 {
    match fs {
        "xfs" => 320,
        "btrfs" => 256,
        _ => 64,
    }
}

/// MiB a filesystem of `size_mib` leaves for files (a conservative estimate).
pub fn usable_mib(size_mib: u64) -> u64 {
    (size_mib * 9 / 10).saturating_sub(FS_OVERHEAD_MIB)
}

impl Plan {
    /// The loop device's size in MiB: the spec's, or enough for the largest cell.
    pub fn loop_size_mib(&self) -> Option<u64> {
        let Some(DeviceTarget::Loop { size_mib, fs, .. }) = self.device.as_ref().map(|d| &d.target)
        else {
            return None;
        };
        if let Some(s) = size_mib {
            return Some(*s);
        }
        let need = self.device_bytes().div_ceil(MIB);
        Some(((need + FS_OVERHEAD_MIB) * 10).div_ceil(9).max(min_fs_mib(fs)))
    }
}
