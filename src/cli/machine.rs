//! What this machine and this user allow a run, checked before anything is created or
//! changed: the cells against the task and memory limits, the restore journal's directory.

use super::common::bad_input;
use schedlab_spec::{Spec, SpecError};
use schedlab_sys::Root;
use std::path::Path;

/// Every cell against kernel.pid_max, kernel.threads-max, RLIMIT_NPROC and MemAvailable.
pub fn check_limits(spec: &Spec, root: &Root) -> Result<(), SpecError> {
    spec.check_limits(&schedlab_sys::limits::read(root))
}

/// Every knob the plan names against what this machine says about it; returns the facts
/// (each knob's value now, before anything changes).
pub fn check_knobs(spec: &Spec, root: &Root) -> Result<schedlab_spec::KnobFacts, SpecError> {
    let facts = schedlab_sys::knobs::facts(root, &spec.plan.knob_names());
    spec.check_knobs(&facts)?;
    Ok(facts)
}

/// The plan's sched_ext schedulers against this kernel (sched_ext present, nothing loaded
/// already, root, each program found).
pub fn check_scx(spec: &Spec, root: &Root) -> Result<(), SpecError> {
    spec.check_scx(&schedlab_sys::scx::facts(root, &spec.plan.scx_programs()))
}

/// The knobs' values before the run, by name, as the facts read them.
pub fn knobs_before(
    facts: &schedlab_spec::KnobFacts,
) -> std::collections::BTreeMap<String, String> {
    facts
        .iter()
        .filter_map(|(k, f)| match f {
            schedlab_spec::KnobFact::Present { value, .. } => Some((k.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

/// Refuses (exit 2) a run that could not be carried out here: a cell beyond this machine's
/// limits, or a restore journal this user cannot write (an inherited XDG_RUNTIME_DIR of
/// another user, say), which would otherwise fail only after the run was recorded.
pub fn check_run(spec: &Spec, root: &Root) -> anyhow::Result<()> {
    check_limits(spec, root).map_err(|e| bad_input(e.to_string()))?;
    check_scx(spec, root).map_err(|e| bad_input(e.to_string()))?;
    check_trace(spec, root)?;
    let state = schedlab_sys::journal::state_dir();
    if let Ok(m) = std::fs::symlink_metadata(&state) {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: no failure mode.
        let me = unsafe { libc::geteuid() };
        if !m.file_type().is_dir() || m.uid() != me {
            return Err(bad_input(format!(
                "the restore journal's directory {} is not a directory of this user (owner uid {}, this user {me}); remove it, or set SCHEDLAB_STATE_DIR",
                state.display(),
                m.uid()
            )));
        }
    }
    // The journal creates the directory if needed: the nearest existing ancestor must take it.
    let existing = state.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
    if !schedlab_sys::env::may_write(existing) {
        return Err(bad_input(format!(
            "this user cannot write the restore journal's directory {} ({} is not writable); set SCHEDLAB_STATE_DIR (or XDG_RUNTIME_DIR) to a directory of this user's",
            state.display(),
            existing.display()
        )));
    }
    Ok(())
}

/// A traced cell needs what tracing needs (the kernel's BTF, BPF and the capabilities to
/// load tracing programs; root and tracefs for the timeline): refused by name before
/// anything is changed.
pub fn check_trace(spec: &Spec, root: &Root) -> anyhow::Result<()> {
    if !spec.plan.cells.iter().any(|c| spec.plan.traced(c)) {
        return Ok(());
    }
    let mode = spec.plan.trace.mode;
    if mode.bpf() {
        if let Some(why) = schedlab_bpf::unavailable(&schedlab_bpf::kernel_btf()) {
            return Err(bad_input(format!(
                "the plan traces cells (trace = true or --trace), but {why}"
            )));
        }
    }
    if mode.timeline() {
        schedlab_trace::tracefs::preflight(root).map_err(|why| {
            bad_input(format!(
                "the plan captures cells' timelines (trace = \"timeline\" or --trace=timeline), but {why}"
            ))
        })?;
    }
    Ok(())
}
