//! Checks of the experiment device against the machine, before anything is changed: the
//! facts are gathered by the caller (sys reads /sys and /proc), the judgement is here so
//! every error points at the spec line it is about.

use crate::plan::{DeviceTarget, Plan, QueueTarget};
use crate::validate::Locations;
use crate::SpecError;

const MIB: u64 = 1 << 20;
/// Room a fresh filesystem takes for itself (journal, metadata), MiB, beyond 10%.
const FS_OVERHEAD_MIB: u64 = 48;

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
        let Some(DeviceTarget::Loop { size_mib, fs, .. }) = self.device.as_ref().map(|d| &d.target) else { return None };
        if let Some(s) = size_mib {
            return Some(*s);
        }
        let need = self.device_bytes().div_ceil(MIB);
        Some(((need + FS_OVERHEAD_MIB) * 10).div_ceil(9).max(min_fs_mib(fs)))
    }
}

pub(crate) fn check(plan: &Plan, locs: &Locations, src: &str, f: &DeviceFacts, yes_device: Option<&str>) -> Result<(), SpecError> {
    let Some(dev) = &plan.device else { return Ok(()) };
    let err = |span: Option<std::ops::Range<usize>>, msg: String| {
        Err(SpecError::at(&plan.source_path, src, span.unwrap_or_else(|| locs.matrix.clone()), msg))
    };
    let first_io = locs.iosched.first().map(|(_, s)| s.clone());
    let is_loop = matches!(dev.target, DeviceTarget::Loop { .. });
    if !f.privileged && (is_loop || first_io.is_some()) {
        let what = if is_loop { "creating a loop device and mounting it" } else { "changing an I/O scheduler" };
        return err(locs.device.clone().or(first_io), format!("{what} needs CAP_SYS_ADMIN (run as root)"));
    }
    if let Some(e) = &f.path_error {
        return err(locs.device_path.clone(), e.clone());
    }
    let needs_confirm = !is_loop || dev.queue == QueueTarget::Backing;
    if let (true, Some(disk)) = (needs_confirm, &f.disk) {
        let confirmed = dev.confirm_device.as_deref() == Some(disk) || yes_device == Some(disk.as_str());
        if let Some(c) = dev.confirm_device.as_deref().filter(|c| *c != disk) {
            return err(locs.device.clone(), format!("confirm_device = \"{c}\", but this run would use the disk {disk}"));
        }
        if !confirmed {
            let why = if is_loop {
                format!("queue = \"backing\" changes the I/O scheduler of the real disk {disk}")
            } else {
                format!("the files would go to the real disk {disk}")
            };
            return err(
                locs.device_path.clone().or(locs.device.clone()),
                format!("{why}; confirm with confirm_device = \"{disk}\" in [device] or --yes-device {disk}"),
            );
        }
    }
    if let Some(e) = &f.mkfs_error {
        return err(locs.device.clone(), e.clone());
    }
    if let Some(offered) = &f.offered {
        for (s, span) in &locs.iosched {
            if !offered.contains(s) {
                return err(
                    Some(span.clone()),
                    format!("the device does not offer the I/O scheduler \"{s}\"; it offers: {}", offered.join(", ")),
                );
            }
        }
    }
    let need = plan.device_bytes();
    match &dev.target {
        DeviceTarget::Loop { size_mib, .. } => {
            let size = plan.loop_size_mib().unwrap_or(0);
            if size_mib.is_some() && usable_mib(size) * MIB < need {
                return err(
                    locs.device_size.clone(),
                    format!(
                        "a {size} MiB device leaves about {} MiB for files, but the largest cell needs {} MiB; raise size_mib or leave it out to size the device automatically",
                        usable_mib(size),
                        need.div_ceil(MIB)
                    ),
                );
            }
            if let Some(free) = f.free_bytes {
                if free < (size + 64) * MIB {
                    return err(
                        locs.device_size.clone().or(locs.device.clone()),
                        format!("not enough space for the {size} MiB loop device image: {} MiB free where it goes", free / MIB),
                    );
                }
            }
        }
        DeviceTarget::Dir { .. } => {
            if let Some(free) = f.free_bytes {
                if free < need + need / 20 {
                    return err(
                        locs.device_path.clone(),
                        format!("not enough space: the largest cell needs {} MiB, {} MiB are free there", need.div_ceil(MIB), free / MIB),
                    );
                }
            }
        }
    }
    Ok(())
}
