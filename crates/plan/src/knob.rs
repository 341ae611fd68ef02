//! The scheduler's own settings ("knobs") a spec may fix for a run (`[knobs]`) or sweep as
//! cell axes (`[matrix.knobs]`): which names exist, what values each accepts as far as the
//! kernel documents it, and how a value shows in a cell key. Where each knob's file is and
//! what the machine says about it is `schedlab-sys`'s business (`knobs`).
//!
//! Names say where the knob lives: `kernel.NAME` is the sysctl `/proc/sys/kernel/NAME`
//! (spelt as `sysctl` spells it), `sched.NAME` a file of the scheduler's debugfs directory
//! (`/sys/kernel/debug/sched/NAME`), `sched.features.NAME` one scheduler feature,
//! `cpu.smt` SMT control and `cpu.governor` every CPU's cpufreq governor.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A knob's value as a spec writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KnobValue {
    /// A whole number (sysctls, debugfs numbers).
    Int(i64),
    /// On or off (a scheduler feature).
    Bool(bool),
    /// A word from the kernel's list (a preemption mode, a governor, SMT on/off).
    Word(String),
}

impl KnobValue {
    /// The value as the cell key and the tables spell it.
    pub fn label(&self) -> String {
        match self {
            KnobValue::Int(i) => i.to_string(),
            KnobValue::Bool(b) => if *b { "on" } else { "off" }.to_string(),
            KnobValue::Word(w) => w.clone(),
        }
    }
}

/// The fixed and swept knob settings of a plan or a cell, by name.
pub type Knobs = BTreeMap<String, KnobValue>;

/// Where a knob lives; sys turns it into files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// `/proc/sys/kernel/<file>`.
    Sysctl(String),
    /// `<debugfs>/sched/<file>`.
    Debugfs(String),
    /// One name in `<debugfs>/sched/features`: `NAME` on, `NO_NAME` off.
    Feature(String),
    /// `/sys/devices/system/cpu/smt/control`.
    Smt,
    /// `/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`, every CPU.
    Governor,
}

/// What values a knob accepts (checked before the machine is asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A whole number in this range (both ends included).
    Int(i64, i64),
    /// `true` or `false`.
    Bool,
    /// One of these words (the machine's file may offer fewer).
    Word(&'static [&'static str]),
}

/// The sysctls schedlab knows, with the values the kernel documents for them. A value
/// outside is refused: the kernel would refuse it too, or (sched_rr_timeslice_ms <= 0)
/// silently put the default in its place.
const SYSCTLS: &[(&str, Rule)] = &[
    ("sched_rr_timeslice_ms", Rule::Int(1, i32::MAX as i64)),
    ("sched_autogroup_enabled", Rule::Int(0, 1)),
    ("sched_cfs_bandwidth_slice_us", Rule::Int(1, i32::MAX as i64)),
    ("sched_rt_runtime_us", Rule::Int(-1, i32::MAX as i64)),
    ("sched_rt_period_us", Rule::Int(1, i32::MAX as i64)),
    ("sched_schedstats", Rule::Int(0, 1)),
    ("sched_energy_aware", Rule::Int(0, 1)),
    ("sched_child_runs_first", Rule::Int(0, 1)),
    ("sched_util_clamp_min", Rule::Int(0, 1024)),
    ("sched_util_clamp_max", Rule::Int(0, 1024)),
    ("sched_util_clamp_min_rt_default", Rule::Int(0, 1024)),
];

/// The scheduler's debugfs files schedlab knows (all but `preempt` are unsigned numbers).
const DEBUGFS: &[(&str, Rule)] = &[
    ("base_slice_ns", Rule::Int(1, u32::MAX as i64)),
    ("migration_cost_ns", Rule::Int(0, u32::MAX as i64)),
    ("nr_migrate", Rule::Int(0, u32::MAX as i64)),
    ("tunable_scaling", Rule::Int(0, 2)),
    ("preempt", Rule::Word(&["none", "voluntary", "full", "lazy"])),
];

/// The RT bandwidth the kernel gives by default: 950000 of every 1000000 us.
pub const DEFAULT_RT_SHARE: f64 = 0.95;

/// SCHED_DEADLINE's admission rule, for the crates that see plans only: the policy crate's,
/// written once.
pub use schedlab_policy::cbs::{admission_limit, admits};

/// One knob: its spec name, where it lives and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// The name as the spec writes it (`kernel.sched_rr_timeslice_ms`).
    pub name: String,
    /// Where it lives.
    pub place: Place,
    /// What it accepts.
    pub rule: Rule,
}

/// Every knob name schedlab accepts, for error messages (features are open-ended).
pub fn known_names() -> Vec<String> {
    let mut v: Vec<String> = SYSCTLS.iter().map(|(n, _)| format!("kernel.{n}")).collect();
    v.extend(DEBUGFS.iter().map(|(n, _)| format!("sched.{n}")));
    v.push("sched.features.NAME".into());
    v.push("cpu.smt".into());
    v.push("cpu.governor".into());
    v
}

impl Knob {
    /// The knob a spec name names, or why it names none.
    pub fn parse(name: &str) -> Result<Knob, crate::Refusal> {
        let unknown = || format!("unknown knob \"{name}\"; known: {}", known_names().join(", "));
        let (place, rule) = if let Some(f) = name.strip_prefix("kernel.") {
            let (_, rule) = SYSCTLS.iter().find(|(n, _)| *n == f).ok_or_else(unknown)?;
            (Place::Sysctl(f.to_string()), *rule)
        } else if let Some(feature) = name.strip_prefix("sched.features.") {
            let ok = !feature.is_empty()
                && !feature.starts_with("NO_")
                && feature
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if !ok {
                return crate::refuse(format!(
                    "\"{name}\": a feature is named as the kernel's features file lists it, in capitals and without NO_ (e.g. sched.features.PLACE_LAG = false)"
                ));
            }
            (Place::Feature(feature.to_string()), Rule::Bool)
        } else if let Some(f) = name.strip_prefix("sched.") {
            let (_, rule) = DEBUGFS.iter().find(|(n, _)| *n == f).ok_or_else(unknown)?;
            (Place::Debugfs(f.to_string()), *rule)
        } else if name == "cpu.smt" {
            (Place::Smt, Rule::Word(&["on", "off"]))
        } else if name == "cpu.governor" {
            (Place::Governor, Rule::Word(&[]))
        } else {
            return crate::refuse(unknown());
        };
        Ok(Knob { name: name.to_string(), place, rule })
    }

    /// How the knob shows in a cell key, `/NAME=VALUE`: its last part (`sched_rr_timeslice_ms`,
    /// `preempt`, `PLACE_LAG`, `smt`, `governor`), unambiguous because sysctls all start with
    /// `sched_`, features are in capitals and the debugfs files are neither.
    pub fn key_name(&self) -> &str {
        match &self.place {
            Place::Sysctl(f) | Place::Debugfs(f) | Place::Feature(f) => f,
            Place::Smt => "smt",
            Place::Governor => "governor",
        }
    }

    /// Checks a value against the knob's rule; the error says what it accepts.
    pub fn check(&self, v: &KnobValue) -> Result<(), crate::Refusal> {
        let n = &self.name;
        match (self.rule, v) {
            (Rule::Int(lo, hi), KnobValue::Int(x)) if (lo..=hi).contains(x) => Ok(()),
            (Rule::Int(lo, hi), KnobValue::Int(x)) => crate::refuse(format!(
                "{n} must be between {lo} and {hi}, got {x}{}",
                self.why_range(*x)
            )),
            (Rule::Int(..), _) => crate::refuse(format!("{n} takes a whole number")),
            (Rule::Bool, KnobValue::Bool(_)) => Ok(()),
            (Rule::Bool, _) => {
                crate::refuse(format!("{n} takes true (the feature on) or false (off)"))
            }
            (Rule::Word(words), KnobValue::Word(w))
                if words.is_empty() || words.contains(&w.as_str()) =>
            {
                Ok(())
            }
            (Rule::Word(words), KnobValue::Word(w)) => {
                crate::refuse(format!("{n} must be one of {}, got \"{w}\"", words.join(", ")))
            }
            (Rule::Word([]), _) => crate::refuse(format!("{n} takes a name, as a string")),
            (Rule::Word(words), _) => {
                crate::refuse(format!("{n} takes one of {} (a string)", words.join(", ")))
            }
        }
    }

    fn why_range(&self, x: i64) -> &'static str {
        match &self.place {
            Place::Sysctl(f) if f == "sched_rr_timeslice_ms" && x <= 0 => {
                " (the kernel would put its 100 ms default in place of a value <= 0)"
            }
            _ => "",
        }
    }

    /// The text written to the knob's file to set `v`.
    pub fn text(&self, v: &KnobValue) -> String {
        match (&self.place, v) {
            (Place::Feature(f), KnobValue::Bool(true)) => f.clone(),
            (Place::Feature(f), KnobValue::Bool(false)) => format!("NO_{f}"),
            (_, v) => v.label(),
        }
    }

    /// True for a knob whose file lives on debugfs.
    pub fn on_debugfs(&self) -> bool {
        matches!(self.place, Place::Debugfs(_) | Place::Feature(_))
    }
}

/// RT throttling's share as two knob values would leave it (runtime, period in us); None
/// when runtime is -1 (no throttling).
pub fn rt_share(runtime_us: i64, period_us: i64) -> Option<f64> {
    (runtime_us >= 0).then(|| runtime_us as f64 / period_us.max(1) as f64)
}

/// The cell-key part of a cell's swept knobs, `/NAME=VALUE` each in name order.
pub fn key_part(swept: &Knobs) -> String {
    swept
        .iter()
        .map(|(name, v)| {
            let short = Knob::parse(name)
                .map(|k| k.key_name().to_string())
                .unwrap_or_else(|_| name.clone());
            format!("/{short}={}", v.label())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_key_forms_are_short_and_name_the_file() {
        let mut k = Knobs::new();
        k.insert("kernel.sched_rr_timeslice_ms".into(), KnobValue::Int(5));
        k.insert("sched.features.PLACE_LAG".into(), KnobValue::Bool(false));
        k.insert("sched.preempt".into(), KnobValue::Word("full".into()));
        k.insert("cpu.smt".into(), KnobValue::Word("off".into()));
        assert_eq!(key_part(&k), "/smt=off/sched_rr_timeslice_ms=5/PLACE_LAG=off/preempt=full");
    }

    #[test]
    fn knob_names_and_values_are_checked_by_the_kernels_rules() {
        assert!(Knob::parse("kernel.sched_nonsense").unwrap_err().0.contains("unknown knob"));
        assert!(Knob::parse("sched.features.NO_PLACE_LAG").is_err());
        assert!(Knob::parse("vm.swappiness").is_err());
        let rr = Knob::parse("kernel.sched_rr_timeslice_ms").unwrap();
        assert!(rr.check(&KnobValue::Int(-5)).unwrap_err().0.contains("100 ms default"));
        assert!(rr.check(&KnobValue::Word("5".into())).is_err());
        rr.check(&KnobValue::Int(5)).unwrap();
        let ag = Knob::parse("kernel.sched_autogroup_enabled").unwrap();
        assert!(ag.check(&KnobValue::Int(2)).is_err());
        let p = Knob::parse("sched.preempt").unwrap();
        assert!(p.check(&KnobValue::Word("maybe".into())).is_err());
        p.check(&KnobValue::Word("lazy".into())).unwrap();
        let f = Knob::parse("sched.features.RUN_TO_PARITY").unwrap();
        assert_eq!(f.text(&KnobValue::Bool(false)), "NO_RUN_TO_PARITY");
        assert_eq!(f.text(&KnobValue::Bool(true)), "RUN_TO_PARITY");
        assert!(f.on_debugfs() && !rr.on_debugfs());
        assert_eq!(rt_share(-1, 1_000_000), None);
        assert_eq!(rt_share(500_000, 1_000_000), Some(0.5));
    }
}
