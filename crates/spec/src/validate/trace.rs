//! `trace` and `trace_buffer_kb`: what the run traces, at the top level or per workload.

use super::Ctx;
use crate::error::SpecError;
use crate::raw::RawSpec;
use schedlab_plan::{TraceMode, TraceSetting, TRACE_BUFFER_KB};
use serde_spanned::Spanned;

/// The plan's trace setting from the top-level `trace` and each workload's.
pub(super) fn setting(cx: &Ctx, raw: &RawSpec) -> Result<TraceSetting, SpecError> {
    let top = trace_value(cx, raw.trace.as_ref())?;
    let mut each = Vec::new();
    for (k, w) in &raw.workloads {
        if let Some(m) = trace_value(cx, w.get_ref().trace.as_ref())? {
            each.push((k.get_ref().clone(), m));
        }
    }
    let modes = || top.iter().chain(each.iter().map(|(_, m)| m));
    let trace = TraceSetting {
        all: top.is_some(),
        workloads: each.iter().map(|(k, _)| k.clone()).collect(),
        buffer_kb: match &raw.trace_buffer_kb {
            Some(b) => Some(cx.int_in(
                b,
                (*TRACE_BUFFER_KB.start()).into(),
                (*TRACE_BUFFER_KB.end()).into(),
                "trace_buffer_kb",
            )? as u32),
            None => None,
        },
        // The run's mode: the timeline as soon as any cell asks for it; only those cells
        // capture it unless every cell does.
        mode: if modes().any(|m| *m == TraceMode::TimelineAndBpf) {
            TraceMode::TimelineAndBpf
        } else {
            TraceMode::Bpf
        },
        timeline: if top == Some(TraceMode::TimelineAndBpf) {
            Vec::new()
        } else {
            each.iter()
                .filter(|(_, m)| *m == TraceMode::TimelineAndBpf)
                .map(|(k, _)| k.clone())
                .collect()
        },
    };
    // Nothing traced: no mode (a plan as before the BPF observer).
    let trace = if trace.all || !trace.workloads.is_empty() {
        trace
    } else {
        TraceSetting { mode: TraceMode::default(), ..trace }
    };
    Ok(trace)
}

/// A `trace` value: true (the BPF figures), "timeline" (the timeline too) or false (None).
fn trace_value(cx: &Ctx, v: Option<&Spanned<toml::Value>>) -> Result<Option<TraceMode>, SpecError> {
    let Some(v) = v else { return Ok(None) };
    match v.get_ref() {
        toml::Value::Boolean(false) => Ok(None),
        toml::Value::Boolean(true) => Ok(Some(TraceMode::Bpf)),
        toml::Value::String(s) if s == "timeline" => Ok(Some(TraceMode::TimelineAndBpf)),
        other => cx.err(
            v.span(),
            format!(
                "trace must be true (figures aggregated in the kernel), \"timeline\" (every event captured too) or false, got {other}"
            ),
        ),
    }
}
