//! The experiment device, set up once per run: a file-backed loop device with a fresh
//! filesystem mounted privately inside the experiment directory, or a directory schedlab
//! creates on an existing filesystem. Every step is journaled before it happens, so the
//! journal undoes it in reverse: unmount, detach, remove the image.

use schedlab_model::CellIo;
use schedlab_plan::{DeviceSpec, DeviceTarget, IoSetting, Plan, QueueTarget};
use schedlab_sys::blockdev::{self, DiskStat};
use schedlab_sys::journal::{Entry, Journal};
use schedlab_sys::{Root, SysError};
use std::path::{Path, PathBuf};

use crate::RunError;

/// `what` failed with the kernel's `error`.
fn step(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let what = what.into();
    move |error| RunError::Device { what, error }
}

/// The device a run's I/O goes to.
#[derive(Debug, Clone)]
pub struct ExpDevice {
    /// Where cell directories and input files are made (on the device).
    pub files_dir: PathBuf,
    /// The block device the files are on (`loop3`, or the disk holding a directory).
    pub data_dev: String,
    /// The device whose queue the `iosched` axis sets.
    pub queue_dev: String,
    /// Devices whose /sys/block/<dev>/stat deltas are kept per cell (the data device first).
    pub stat_devs: Vec<String>,
    /// sync and drop caches before every cell.
    pub drop_caches: bool,
    /// Held for the run when its cells switch `queue_dev`'s I/O scheduler.
    pub queue_lock: Option<std::sync::Arc<blockdev::QueueLock>>,
}

/// Creates the device for `plan` under `exp_dir` (which the journal already removes).
pub fn setup(
    spec: &DeviceSpec,
    plan: &Plan,
    exp_dir: &Path,
    tag: &str,
    journal: &mut Journal,
    root: &Root,
) -> Result<ExpDevice, RunError> {
    // A run that switches an existing disk's scheduler holds that queue's lock, taken before
    // anything is changed; a fresh loop device is the run's own.
    let switches = plan.cells.iter().any(|c| c.io.is_some());
    let lock = |dev: &str| -> Result<Option<std::sync::Arc<blockdev::QueueLock>>, SysError> {
        match switches {
            true => blockdev::lock_queue(root, dev).map(|l| Some(std::sync::Arc::new(l))),
            false => Ok(None),
        }
    };
    match &spec.target {
        DeviceTarget::Loop { fs, direct_io, .. } => {
            let size = plan.loop_size_mib().unwrap_or(64) << 20;
            let image = exp_dir.join("device.img");
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&image)
                .map_err(step("creating the loop device image"))?;
            allocate(&f, size).map_err(step(format!(
                "allocating {} MiB for {}",
                size >> 20,
                image.display()
            )))?;
            drop(f);
            let image = image.canonicalize()?;
            let backing_disk = blockdev::disk_of_path(root, exp_dir).ok();
            let backing_lock = match (&spec.queue, &backing_disk) {
                (QueueTarget::Backing, Some(disk)) => lock(disk)?,
                _ => None,
            };
            journal.record(Entry::DetachLoop { backing: image.clone() })?;
            let dev = blockdev::loop_attach(&image, *direct_io)
                .map_err(step("attaching a loop device (needs CAP_SYS_ADMIN)"))?;
            blockdev::mkfs(fs, &dev)?;
            let mnt = exp_dir.join("mnt");
            std::fs::create_dir(&mnt)?;
            journal.record(Entry::Unmount { path: mnt.clone() })?;
            blockdev::mount_private(&dev, &mnt, fs)
                .map_err(step(format!("mounting /dev/{dev} on {}", mnt.display())))?;
            let files_dir = mnt.join("work");
            std::fs::create_dir(&files_dir)?;
            let (queue_dev, queue_lock) = match spec.queue {
                QueueTarget::Device => (dev.clone(), lock(&dev)?),
                QueueTarget::Backing => (
                    backing_disk
                        .clone()
                        .ok_or(SysError::refused("the disk holding the loop image is unknown"))?,
                    backing_lock,
                ),
            };
            let mut stat_devs = vec![dev.clone()];
            stat_devs.extend(backing_disk);
            Ok(ExpDevice {
                files_dir,
                data_dev: dev,
                queue_dev,
                stat_devs,
                drop_caches: spec.drop_caches,
                queue_lock,
            })
        }
        DeviceTarget::Dir { path } => {
            let dir = blockdev::resolve_dir(root, path)?;
            let disk = blockdev::disk_of_path(root, &dir)?;
            let queue_lock = lock(&disk)?;
            let files_dir = crate::make_experiment_dir(&dir, tag, Some(journal))?;
            Ok(ExpDevice {
                files_dir,
                data_dev: disk.clone(),
                queue_dev: disk.clone(),
                stat_devs: vec![disk],
                drop_caches: spec.drop_caches,
                queue_lock,
            })
        }
    }
}

/// Reserves the image's blocks now, so the backing filesystem does not allocate during
/// measurements (falls back to a sparse file where fallocate is not supported).
fn allocate(f: &std::fs::File, size: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: plain syscall on our own descriptor.
    if unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return f.set_len(size);
    }
    Err(e)
}

impl ExpDevice {
    /// Applies a cell's scheduler setting (journaled), or reads the active one; returns the
    /// cell's device record without statistics yet.
    pub fn prepare_cell(
        &self,
        io: Option<&IoSetting>,
        journal: &mut Journal,
        root: &Root,
    ) -> Result<CellIo, SysError> {
        let (scheduler, tunables) = match io {
            Some(s) => blockdev::apply_iosched(journal, root, &self.queue_dev, s)?,
            None => (
                blockdev::schedulers(root, &self.queue_dev).map(|s| s.1).unwrap_or_default(),
                Vec::new(),
            ),
        };
        if self.drop_caches {
            blockdev::drop_caches(root).map_err(|e| SysError::io("dropping the page cache", e))?;
        }
        Ok(CellIo {
            device: self.data_dev.clone(),
            queue_device: self.queue_dev.clone(),
            scheduler,
            tunables,
            stats: Vec::new(),
        })
    }
}

/// /sys/block/<dev>/stat of each device, for the deltas over a cell.
pub fn read_stats(root: &Root, devs: &[String]) -> Vec<Option<DiskStat>> {
    devs.iter().map(|d| DiskStat::read(root, d)).collect()
}
