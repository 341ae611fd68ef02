//! Experiment files: parse TOML into raw structs (unknown keys are errors), then
//! validate them into a fully resolved [`Plan`] (defined in `schedlab-plan`, re-exported
//! here). Every error carries file:line:col. Paths in a spec resolve against the spec
//! file's directory. Only the CLI depends on this crate; the rooms below it take a `Plan`.
//!
//! This crate never runs anything; it reads text, and [`Spec::check_paths`] reads the
//! metadata of the files the spec names.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod arms;
mod axes;
pub mod bounds;
mod device;
mod error;
mod knobs;
mod limits;
mod locate;
mod paths;
mod periodic_check;
mod raw;
mod scx_check;
mod syntax;
mod unknown_field;
mod validate;

pub use arms::{with_arms, Arms, WORKTREE};
pub use error::{cut, line_col, SpecError, ECHO_CHARS};
pub use knobs::unthrottles;
pub use paths::{kernel_fs, not_kernel_fs, OnKernelFs, PathKey, PathUse};
/// The vocabulary and the plan this crate produces, re-exported for the CLI.
pub use schedlab_plan::*;
pub use validate::Location;

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The built-in quick experiment that `schedlab run` uses without a file.
pub const BUILTIN_QUICK: &str = include_str!("../../../experiments/quick.toml");

/// What the machine says, for [`Spec::unavailable`]: this process's capabilities, the
/// device's facts (when the plan has one), the knobs' and sched_ext's.
#[derive(Debug, Clone, Copy)]
pub struct MachineFacts<'a> {
    /// What this process may do.
    pub caps: &'a Capabilities,
    /// The plan's device, if it has one.
    pub device: Option<&'a DeviceFacts>,
    /// Each knob the plan names.
    pub knobs: &'a KnobFacts,
    /// sched_ext and the programs the plan loads.
    pub scx: &'a ScxFacts,
}

/// A parsed experiment: the plan, the source text and its hash.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The validated plan.
    pub plan: Plan,
    /// The exact text of the file.
    pub text: String,
    /// SHA-256 of the text, hex.
    pub hash: String,
    /// Where each policy name was defined or first used, for privilege errors.
    pub locations: validate::Locations,
}

/// Parses and validates an experiment file's text. `path` is used in error messages, and
/// relative paths in the spec resolve against its directory ([`spec_dir`]).
pub fn parse(path: &str, text: &str) -> Result<Spec, SpecError> {
    parse_at(path, text, &spec_dir(path))
}

/// The directory the paths of the spec file at `path` resolve against: the file's own,
/// absolute (workers do not share the caller's working directory), canonical if it exists.
pub fn spec_dir(path: &str) -> PathBuf {
    let parent =
        Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::canonicalize(parent)
        .or_else(|_| std::path::absolute(parent))
        .unwrap_or_else(|_| parent.to_path_buf())
}

/// A spec file's bytes as text; invalid UTF-8 is an error at its first bad byte.
pub fn decode<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a str, SpecError> {
    std::str::from_utf8(bytes).map_err(|e| SpecError::not_utf8(path, bytes, e))
}

/// [`parse`] with relative paths resolved against `base` (which should be absolute).
pub fn parse_at(path: &str, text: &str, base: &Path) -> Result<Spec, SpecError> {
    let raw: raw::RawSpec = toml::from_str(text).map_err(|e| {
        let msg = &unknown_field::unknown_field(e.message().trim_end());
        match e.span() {
            Some(span) => SpecError::at(path, text, span, msg),
            None => {
                let (at, msg) = syntax::locate(text, msg);
                SpecError::at(path, text, at..at, msg)
            }
        }
    })?;
    let (plan, locations) = validate::validate(path, text, base, raw)?;
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    Ok(Spec { plan, text: text.to_string(), hash, locations })
}

impl Spec {
    /// Checks that this process may apply every policy of the plan; the error points at
    /// the policy and names the missing privilege.
    pub fn check_allowed(&self, caps: &Capabilities) -> Result<(), SpecError> {
        validate::check_allowed(&self.plan, &self.locations, &self.text, caps)
    }

    /// Every cell this process may not run here, with the first reason for each, in plan
    /// order, judged against what the machine says (`m`): a privilege or cpu_dma_latency (as
    /// [`Spec::check_allowed`] names them), an I/O scheduler the device does not offer or
    /// whose queue cannot be written, a knob it cannot have, a sched_ext scheduler it cannot
    /// load (as [`Spec::check_device`], [`Spec::check_knobs`] and [`Spec::check_scx`] name them).
    pub fn unavailable(&self, m: &MachineFacts) -> Vec<(u32, String)> {
        let refused = validate::refused_cells(&self.plan, &self.locations, &self.text, m.caps);
        let (plan, locs) = (&self.plan, &self.locations);
        plan.cells
            .iter()
            .filter_map(|c| {
                let why = refused.iter().find(|(i, _)| *i == c.index).map(|(_, w)| w.clone());
                let why = why
                    .or_else(|| validate::dma::cell_refused(plan, locs, m.caps, c).map(|(w, _)| w))
                    .or_else(|| device::cell_refused(locs, m.device?, c).map(|(w, _)| w))
                    .or_else(|| knobs::cell_refused(plan, locs, m.knobs, c).map(|(_, w)| w))
                    .or_else(|| self.scx_refused(c, m.scx))?;
                Some((c.index, why))
            })
            .collect()
    }

    /// Why `cell` cannot load its sched_ext scheduler here: [`Spec::check_scx`] of the cell
    /// alone.
    fn scx_refused(&self, cell: &Cell, facts: &ScxFacts) -> Option<String> {
        let sets = cell
            .groups
            .iter()
            .any(|g| g.workload.periodic().is_some_and(|p| p.scheduler.sched_ext()));
        if cell.scx().is_none() && !sets {
            return None;
        }
        let alone = Plan { cells: vec![cell.clone()], ..self.plan.clone() };
        scx_check::check(&alone, &self.locations, &self.text, facts).err().map(|e| e.message)
    }

    /// Leaves out of the plan the cells `unavailable` names (by index, each with its reason;
    /// for the built-in experiment, which a user did not choose, or `--skip-unavailable`):
    /// the rest are renumbered in order, and each reason comes back with the keys of the
    /// cells it left out, in plan order.
    pub fn leave_out(&mut self, unavailable: &[(u32, String)]) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for c in &self.plan.cells {
            let Some((_, why)) = unavailable.iter().find(|(i, _)| *i == c.index) else { continue };
            match out.iter_mut().find(|(w, _)| w == why) {
                Some((_, keys)) => keys.push(c.key.clone()),
                None => out.push((why.clone(), vec![c.key.clone()])),
            }
        }
        self.plan.cells.retain(|c| !unavailable.iter().any(|(i, _)| *i == c.index));
        for (i, c) in self.plan.cells.iter_mut().enumerate() {
            c.index = i as u32;
        }
        out
    }

    /// Checks the experiment device against what the machine says about it (privilege,
    /// confirmation of a real disk, offered schedulers, free space), before any change.
    pub fn check_device(
        &self,
        facts: &DeviceFacts,
        yes_device: Option<&str>,
    ) -> Result<(), SpecError> {
        match self.check_device_all(facts, yes_device).into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// As [`Spec::check_device`], with every refusal found (a read-only /sys and a missing
    /// loop driver both, say), in the order the checks run; empty when the device is fine.
    pub fn check_device_all(
        &self,
        facts: &DeviceFacts,
        yes_device: Option<&str>,
    ) -> Vec<SpecError> {
        device::check(&self.plan, &self.locations, &self.text, facts, yes_device)
    }

    /// Checks every path the spec names against the filesystem (`dir` a directory or
    /// creatable, `[device] path` a directory or block device, a command's program an
    /// executable file); `skip_dir` when `--dir` replaces the spec's `dir`.
    pub fn check_paths(&self, skip_dir: bool) -> Result<(), SpecError> {
        paths::check(&self.plan.source_path, &self.text, &self.locations.paths, skip_dir)
    }

    /// An error about the machine's support for a group's cgroup settings, at the group's
    /// first cgroup setting.
    pub fn cgroup_error(&self, group: &str, message: impl Into<String>) -> SpecError {
        let span = self
            .locations
            .cgroups
            .iter()
            .find(|(g, _)| g == group)
            .map_or(self.locations.matrix.clone(), |(_, s)| s.clone());
        SpecError::at(&self.plan.source_path, &self.text, span, message)
    }

    /// Checks every cell against the machine's limits on tasks (kernel.pid_max,
    /// kernel.threads-max, RLIMIT_NPROC) and memory; the error names the limit and both numbers.
    pub fn check_limits(&self, m: &MachineLimits) -> Result<(), SpecError> {
        limits::check(&self.plan, &self.text, m, &self.locations.matrix)
    }

    /// Checks every knob the plan names against what the machine says about it (it exists,
    /// this process may write it, the kernel offers the value) and refuses RT throttling
    /// disabled or weakened without `allow_rt_unthrottled = true`; errors point at the knob.
    pub fn check_knobs(&self, facts: &KnobFacts) -> Result<(), SpecError> {
        knobs::check(&self.plan, &self.locations, &self.text, facts)
    }

    /// Checks the plan's sched_ext schedulers against the machine (a kernel with sched_ext,
    /// none loaded already, root, each program found); errors point at the scheduler.
    pub fn check_scx(&self, facts: &ScxFacts) -> Result<(), SpecError> {
        scx_check::check(&self.plan, &self.locations, &self.text, facts)
    }

    /// Checks that every periodic set ends before the per-cell watchdog `timeout` (the spec's
    /// `timeout_s` or `--timeout`) would stop it: else every repetition of its cells times out.
    pub fn check_watchdog(&self, timeout: std::time::Duration) -> Result<(), SpecError> {
        for g in self.plan.cells.iter().flat_map(|c| &c.groups) {
            // A worker of its own loop stays until the set's last deadline.
            let end = |p: &Periodic| p.duration_ns.max(p.last_deadline_ns());
            let Some(p) = g.workload.periodic().filter(|p| end(p) >= timeout.as_nanos() as u64)
            else {
                continue;
            };
            let at = self
                .locations
                .durations
                .iter()
                .find(|(w, _)| *w == g.workload_name)
                .map_or(&self.locations.matrix, |(_, s)| s);
            return Err(SpecError::at(
                &self.plan.source_path,
                &self.text,
                at.clone(),
                format!(
                    "workload \"{}\" runs for {} s (until its last job's deadline), and the watchdog stops each cell repetition after {} s: every one would time out; raise timeout_s (or --timeout) above the duration, or shorten duration_s",
                    g.workload_name,
                    end(p) as f64 / 1e9,
                    timeout.as_secs_f64()
                ),
            ));
        }
        Ok(())
    }

    /// Checks that every CPU named in an affinity or cpuset is online here.
    pub fn check_cpus(&self, online: &[u32]) -> Result<(), SpecError> {
        for (cpus, span) in &self.locations.cpus {
            if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
                return Err(SpecError::at(
                    &self.plan.source_path,
                    &self.text,
                    span.clone(),
                    format!(
                        "CPU {c} does not exist on this machine (online: {})",
                        cpulist::format(online)
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod shard_tests;
#[cfg(test)]
mod tests;
