//! `[device]`: the run device, a loop device schedlab creates or a directory on one.

use super::workload::builtin_workload;
use super::{path_value, Ctx, Locations};
use crate::error::SpecError;
use crate::paths::PathKey;
use crate::raw::RawDevice;
use schedlab_plan::{Cell, DeviceSpec, DeviceTarget, QueueTarget, Workload};
use serde_spanned::Spanned;
use std::collections::BTreeMap;

/// The plan's device: the `[device]` table, or the default loop device when a cell does I/O
/// without one.
pub(super) fn plan_device(
    cx: &Ctx,
    raw: Option<&Spanned<RawDevice>>,
    cells: &[Cell],
    workloads: &BTreeMap<String, Workload>,
    locs: &mut Locations,
) -> Result<Option<DeviceSpec>, SpecError> {
    let needs_device = cells.iter().any(|c| c.io.is_some())
        || cells.iter().flat_map(|c| &c.groups).any(|g| g.workload.is_io());
    let device = match raw {
        Some(d) => {
            locs.device = Some(d.span());
            Some(device(cx, d.get_ref(), locs)?)
        }
        None if needs_device => {
            // The loop device exists for the first I/O workload: errors about it point there.
            let is_io = |n: &String| {
                workloads.get(n).cloned().or_else(|| builtin_workload(n)).is_some_and(|w| w.is_io())
            };
            locs.device = locs.workloads.iter().find(|(n, _)| is_io(n)).map(|(_, s)| s.clone());
            Some(DeviceSpec {
                target: DeviceTarget::Loop { size_mib: None, fs: "ext4".into(), direct_io: false },
                queue: QueueTarget::Device,
                confirm_device: None,
                drop_caches: true,
            })
        }
        None => None,
    };
    Ok(device)
}

/// The `[device]` table, checked; its path is recorded for the filesystem check.
fn device(cx: &Ctx, d: &RawDevice, locs: &mut Locations) -> Result<DeviceSpec, SpecError> {
    let queues = [("device", QueueTarget::Device), ("backing", QueueTarget::Backing)];
    let queue = cx.either(d.queue.as_ref(), "queue", queues)?.unwrap_or(QueueTarget::Device);
    let target = match &d.path {
        Some(p) => {
            for (key, span) in [
                ("size_mib", d.size_mib.as_ref().map(|x| x.span())),
                ("fs", d.fs.as_ref().map(|x| x.span())),
                ("direct_io", d.direct_io.as_ref().map(|x| x.span())),
            ] {
                if let Some(span) = span {
                    return cx.err(
                        span,
                        format!(
                            "`{key}` applies only to the loop device schedlab creates (no `path`)"
                        ),
                    );
                }
            }
            if queue == QueueTarget::Backing {
                return cx.err(
                    d.queue.as_ref().unwrap().span(),
                    "queue = \"backing\" applies only to a loop device (no `path`)",
                );
            }
            locs.device_path = Some(p.span());
            let path = path_value(cx, p, PathKey::Device, locs)?;
            DeviceTarget::Dir { path: path.to_string_lossy().into_owned() }
        }
        None => {
            let size_mib = match &d.size_mib {
                Some(s) => {
                    locs.device_size = Some(s.span());
                    Some(cx.int_in(s, 16, 1 << 24, "size_mib")? as u64)
                }
                None => None,
            };
            let fs = match &d.fs {
                None => "ext4".to_string(),
                Some(f) if ["ext4", "xfs", "btrfs"].contains(&f.get_ref().as_str()) => {
                    f.get_ref().clone()
                }
                Some(f) => {
                    return cx.err(
                        f.span(),
                        format!("fs must be ext4, xfs or btrfs, got \"{}\"", f.get_ref()),
                    )
                }
            };
            DeviceTarget::Loop {
                size_mib,
                fs,
                direct_io: d.direct_io.as_ref().is_some_and(|b| *b.get_ref()),
            }
        }
    };
    let confirm_device = match &d.confirm_device {
        Some(c) if c.get_ref().is_empty() || c.get_ref().contains('/') => {
            return cx
                .err(c.span(), "confirm_device is a device name as in /sys/block, e.g. \"sdb\"")
        }
        Some(c) => Some(c.get_ref().clone()),
        None => None,
    };
    Ok(DeviceSpec {
        target,
        queue,
        confirm_device,
        drop_caches: d.drop_caches.as_ref().is_none_or(|b| *b.get_ref()),
    })
}
