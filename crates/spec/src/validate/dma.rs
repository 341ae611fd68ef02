//! `cpu_dma_latency`: what real-time and periodic cells hold /dev/cpu_dma_latency at
//! (microseconds, 0 by default as in cyclictest, or "off").

use super::{Ctx, Location, Locations};
use crate::error::SpecError;
use schedlab_plan::{Capabilities, Cell, DmaLatency, Plan};
use serde_spanned::Spanned;

/// The kernel's PM QoS takes an s32; its "no constraint" default is 2,000 s.
const MAX_US: i64 = 2_000_000_000;

/// The setting as written, recording where, for the privilege check.
pub(super) fn dma_latency(
    cx: &Ctx,
    v: Option<&Spanned<toml::Value>>,
    locs: &mut Locations,
) -> Result<DmaLatency, SpecError> {
    let Some(v) = v else { return Ok(DmaLatency::default()) };
    let setting = match v.get_ref() {
        toml::Value::Integer(us) if (0..=MAX_US).contains(us) => DmaLatency::Hold(*us as u32),
        toml::Value::String(s) if s == "off" => DmaLatency::Off,
        other => {
            return cx.err(
                v.span(),
                format!("cpu_dma_latency must be microseconds from 0 to {MAX_US}, or \"off\" to leave it to the machine, got {other}"),
            )
        }
    };
    if matches!(setting, DmaLatency::Hold(_)) {
        locs.dma_latency = Some(v.span());
    }
    Ok(setting)
}

/// A value the spec asked for must be holdable: /dev/cpu_dma_latency is root's. (The
/// default is held where it can be, and the run says when it could not.)
pub(super) fn check(
    plan: &Plan,
    locs: &Locations,
    src: &str,
    caps: &Capabilities,
) -> Result<(), SpecError> {
    match plan.cells.iter().find_map(|c| cell_refused(plan, locs, caps, c)) {
        Some((msg, at)) => Err(SpecError::at(&plan.source_path, src, at, msg)),
        None => Ok(()),
    }
}

/// Why `cell` cannot hold the value the spec asked for (a real-time cell holds it, and this
/// process may not open /dev/cpu_dma_latency), and where it was asked for.
pub(crate) fn cell_refused(
    plan: &Plan,
    locs: &Locations,
    caps: &Capabilities,
    cell: &Cell,
) -> Option<(String, Location)> {
    let (Some(at), DmaLatency::Hold(us)) = (&locs.dma_latency, plan.cpu_dma_latency) else {
        return None;
    };
    (!caps.cpu_dma_latency && cell.is_realtime()).then(|| {
        (
            format!(
                "cpu_dma_latency = {us} is held through /dev/cpu_dma_latency, which only root may open: run as root, or set cpu_dma_latency = \"off\""
            ),
            at.clone(),
        )
    })
}
