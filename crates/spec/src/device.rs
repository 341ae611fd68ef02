//! Checks of the experiment device against the machine, before anything is changed: the
//! facts are gathered by the caller (sys reads /sys and /proc), the judgement is here so
//! every error points at the spec line it is about.

use crate::validate::Locations;
use crate::SpecError;
use schedlab_plan::{usable_mib, Cell, DeviceFacts, DeviceTarget, Plan, QueueTarget};

const MIB: u64 = 1 << 20;

pub(crate) fn check(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    f: &DeviceFacts,
    yes_device: Option<&str>,
) -> Vec<SpecError> {
    let Some(dev) = &plan.device else { return Vec::new() };
    let mut out = Vec::new();
    let mut err = |span: Option<std::ops::Range<usize>>, msg: String| {
        out.push(SpecError::at(
            &plan.source_path,
            src,
            span.unwrap_or_else(|| locs.matrix.clone()),
            msg,
        ));
    };
    let first_io = locs.iosched.first().map(|(_, s)| s.clone());
    let is_loop = matches!(dev.target, DeviceTarget::Loop { .. });
    if !f.privileged && (is_loop || first_io.is_some()) {
        let what = if is_loop {
            "creating a loop device and mounting it"
        } else {
            "changing an I/O scheduler"
        };
        err(locs.device.clone().or(first_io), format!("{what} needs CAP_SYS_ADMIN (run as root)"));
        return out;
    }
    if let Some(why) = f.loop_unavailable.as_ref().filter(|_| is_loop) {
        err(locs.device.clone(), why.clone());
    }
    if let Some(why) = f.drop_caches_unwritable.as_ref().filter(|_| dev.drop_caches) {
        err(
            locs.device.clone(),
            format!("[device] drops the page cache before each cell (drop_caches, on by default) through /proc/sys/vm/drop_caches, but {why}; or set drop_caches = false"),
        );
    }
    if let Some(e) = &f.path_error {
        err(locs.device_path.clone(), e.clone());
        return out;
    }
    let needs_confirm = !is_loop || dev.queue == QueueTarget::Backing;
    if let (true, Some(disk)) = (needs_confirm, &f.disk) {
        let confirmed =
            dev.confirm_device.as_deref() == Some(disk) || yes_device == Some(disk.as_str());
        if let Some(c) = dev.confirm_device.as_deref().filter(|c| *c != disk) {
            err(
                locs.device.clone(),
                format!("confirm_device = \"{c}\", but this run would use the disk {disk}"),
            );
            return out;
        }
        if !confirmed {
            let why = if is_loop {
                format!("queue = \"backing\" changes the I/O scheduler of the real disk {disk}")
            } else {
                format!("the files would go to the real disk {disk}")
            };
            err(
                locs.device_path.clone().or(locs.device.clone()),
                format!("{why}; confirm with confirm_device = \"{disk}\" in [device] or --yes-device {disk}"),
            );
            return out;
        }
    }
    if let Some(e) = &f.mkfs_error {
        err(locs.device.clone(), e.clone());
    }
    if let Some((why, span)) = plan.cells.iter().find_map(|c| cell_refused(locs, f, c)) {
        err(Some(span), why);
    }
    let need = plan.device_bytes();
    match &dev.target {
        DeviceTarget::Loop { size_mib, .. } => {
            let size = plan.loop_size_mib().unwrap_or(0);
            if size_mib.is_some() && usable_mib(size) * MIB < need {
                err(
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
                    err(
                        locs.device_size.clone().or(locs.device.clone()),
                        format!("not enough space for the {size} MiB loop device image: {} MiB free where it goes", free / MIB),
                    );
                }
            }
        }
        DeviceTarget::Dir { .. } => {
            if let Some(free) = f.free_bytes {
                if free < need + need / 20 {
                    err(
                        locs.device_path.clone(),
                        format!("not enough space: the largest cell needs {} MiB, {} MiB are free there", need.div_ceil(MIB), free / MIB),
                    );
                }
            }
        }
    }
    out
}

/// Why this machine cannot give `cell` its I/O scheduler (the device does not offer it, or
/// its queue's files cannot be written), and where the spec named the scheduler.
pub(crate) fn cell_refused(
    locs: &Locations,
    f: &DeviceFacts,
    cell: &Cell,
) -> Option<(String, std::ops::Range<usize>)> {
    let s = &cell.io.as_ref()?.scheduler;
    let span = locs.iosched.iter().find(|(n, _)| n == s).map_or(&locs.matrix, |(_, at)| at);
    if let Some(offered) = f.offered.as_ref().filter(|o| !o.contains(s)) {
        let why = format!(
            "the device does not offer the I/O scheduler \"{s}\"; it offers: {} (a scheduler this kernel builds as a module is offered once it is loaded, e.g. `modprobe bfq`)",
            offered.join(", ")
        );
        return Some((why, span.clone()));
    }
    f.queue_unwritable.clone().map(|why| (why, span.clone()))
}
