//! Experiment files: parse TOML into raw structs (unknown keys are errors), then
//! validate them into a fully resolved [`Plan`]. Every error carries file:line:col.
//!
//! This crate never runs anything; it only reads text.
#![deny(missing_docs)]

pub mod cpulist;
mod device;
mod error;
mod limits;
mod locate;
mod periodic_check;
mod plan;
mod raw;
mod rt;
mod validate;

pub use device::{usable_mib, DeviceFacts};
pub use error::{line_col, SpecError};
pub use limits::MachineLimits;
pub use plan::*;
pub use rt::*;
pub use validate::{Capabilities, Location};

use sha2::{Digest, Sha256};

/// The built-in quick experiment that `schedlab run` uses without a file.
pub const BUILTIN_QUICK: &str = include_str!("../../../experiments/quick.toml");

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

/// Parses and validates an experiment file's text. `path` is used in error messages.
pub fn parse(path: &str, text: &str) -> Result<Spec, SpecError> {
    let raw: raw::RawSpec = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim_end().to_string();
        SpecError::at(path, text, e.span(), msg)
    })?;
    let (plan, locations) = validate::validate(path, text, raw)?;
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    Ok(Spec { plan, text: text.to_string(), hash, locations })
}

impl Spec {
    /// Checks that this process may apply every policy of the plan; the error points at
    /// the policy and names the missing privilege.
    pub fn check_allowed(&self, caps: &Capabilities) -> Result<(), SpecError> {
        validate::check_allowed(&self.plan, &self.locations, &self.text, caps)
    }

    /// Checks the experiment device against what the machine says about it (privilege,
    /// confirmation of a real disk, offered schedulers, free space), before any change.
    pub fn check_device(&self, facts: &DeviceFacts, yes_device: Option<&str>) -> Result<(), SpecError> {
        device::check(&self.plan, &self.locations, &self.text, facts, yes_device)
    }

    /// Checks every cell against the machine's limits on tasks (kernel.pid_max,
    /// kernel.threads-max, RLIMIT_NPROC) and memory; the error names the limit and both numbers.
    pub fn check_limits(&self, m: &MachineLimits) -> Result<(), SpecError> {
        limits::check(&self.plan, &self.text, m)
    }

    /// Checks that every CPU named in an affinity or cpuset is online here.
    pub fn check_cpus(&self, online: &[u32]) -> Result<(), SpecError> {
        for (cpus, span) in &self.locations.cpus {
            if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
                return Err(SpecError::at(
                    &self.plan.source_path,
                    &self.text,
                    Some(span.clone()),
                    format!("CPU {c} does not exist on this machine (online: {})", cpulist::format(online)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
