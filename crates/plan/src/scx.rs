//! The `cpu_scheduler` axis's values: the kernel's own scheduler (EEVDF) or a sched_ext
//! scheduler program (Linux 6.12+), which the engine starts before a cell's workers and
//! stops after them. sched_ext schedules only the fair classes' tasks (SCHED_NORMAL, BATCH,
//! IDLE); real-time and deadline tasks keep their own classes above it.

use serde::{Deserialize, Serialize};

/// The spelling of the kernel's own scheduler on the axis.
pub const EEVDF: &str = "eevdf";

/// The prefix of a sched_ext scheduler on the axis: `scx:NAME[:ARGS]`.
pub const SCX_PREFIX: &str = "scx:";

/// Who schedules the machine's ordinary tasks during a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuScheduler {
    /// The kernel's own fair scheduler: no sched_ext scheduler is loaded.
    Eevdf,
    /// A sched_ext scheduler program, loaded for the cell.
    Scx(ScxProgram),
}

/// A sched_ext scheduler program and its argument vector (exec'd, never through a shell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScxProgram {
    /// A name looked up on PATH, or a path.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl CpuScheduler {
    /// Parses the string form: `eevdf`, or `scx:NAME` with optional `:ARGS` split at
    /// whitespace (no quoting; an argument with a space needs the table form).
    pub fn parse(s: &str) -> Result<CpuScheduler, crate::Refusal> {
        if s == EEVDF {
            return Ok(CpuScheduler::Eevdf);
        }
        let Some(rest) = s.strip_prefix(SCX_PREFIX) else {
            return crate::refuse(format!(
                "unknown cpu_scheduler \"{s}\": use \"{EEVDF}\", \"scx:NAME\", \"scx:NAME:ARGS\" or {{ scx = \"NAME\", args = [..] }}"
            ));
        };
        let (program, args) = match rest.split_once(':') {
            Some((p, a)) => (p, a.split_whitespace().map(str::to_string).collect()),
            None => (rest, Vec::new()),
        };
        ScxProgram::new(program, args).map(CpuScheduler::Scx)
    }

    /// The value as cell keys and tables spell it: `eevdf`, `scx_bpfland`,
    /// `scx_lavd:--performance` (the program's file name, then its arguments).
    pub fn label(&self) -> String {
        match self {
            CpuScheduler::Eevdf => EEVDF.into(),
            CpuScheduler::Scx(p) => p.label(),
        }
    }

    /// The sched_ext program, if this is one.
    pub fn scx(&self) -> Option<&ScxProgram> {
        match self {
            CpuScheduler::Eevdf => None,
            CpuScheduler::Scx(p) => Some(p),
        }
    }
}

impl ScxProgram {
    /// A program and its arguments; the program must be a name or a path to a file.
    pub fn new(program: &str, args: Vec<String>) -> Result<ScxProgram, crate::Refusal> {
        if program.trim().is_empty() || program.ends_with('/') || program != program.trim() {
            return crate::refuse(format!(
                "a sched_ext scheduler must name a program (on PATH or by path), got \"{program}\""
            ));
        }
        Ok(ScxProgram { program: program.into(), args })
    }

    /// The program's file name (`scx_bpfland` for `/usr/bin/scx_bpfland`).
    pub fn name(&self) -> &str {
        self.program.rsplit('/').next().unwrap_or(&self.program)
    }

    /// The key's spelling: the file name, then `:` and the arguments joined by spaces.
    pub fn label(&self) -> String {
        if self.args.is_empty() {
            self.name().into()
        } else {
            format!("{}:{}", self.name(), self.args.join(" "))
        }
    }

    /// Whether `/sys/kernel/sched_ext/root/ops` (`bpfland_1.1.4_g...`) names this program
    /// (`scx_bpfland`): its name up to the first `_`, matched with the program's name
    /// without the `scx_` prefix.
    pub fn owns_ops(&self, ops: &str) -> bool {
        let stem = self.name().strip_prefix("scx_").unwrap_or(self.name());
        let ops_name = ops.split('_').next().unwrap_or(ops);
        !ops_name.is_empty()
            && (stem == ops_name || stem.starts_with(ops_name) || ops_name.starts_with(stem))
    }
}

/// Splits root/ops's text (`bpfland_1.1.4_g8a2c..._x86_64_unknown_linux_gnu`) into the
/// scheduler's name and its version (what follows the first `_`; empty when none).
pub fn ops_name_version(ops: &str) -> (String, String) {
    match ops.split_once('_') {
        Some((name, version)) => (name.into(), version.into()),
        None => (ops.into(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_string_form_names_eevdf_or_a_program_with_its_arguments() {
        assert_eq!(CpuScheduler::parse("eevdf"), Ok(CpuScheduler::Eevdf));
        let s = CpuScheduler::parse("scx:scx_lavd:--performance  -s 5000").unwrap();
        assert_eq!(s.scx().unwrap().args, ["--performance", "-s", "5000"]);
        assert_eq!(s.label(), "scx_lavd:--performance -s 5000");
        let p = CpuScheduler::parse("scx:/opt/scx/bin/scx_bpfland").unwrap();
        assert_eq!(
            (p.label(), p.scx().unwrap().program.as_str()),
            ("scx_bpfland".into(), "/opt/scx/bin/scx_bpfland")
        );
        for bad in ["cfs", "scx:", "scx: x", "scx:/opt/", "SCX:x"] {
            assert!(CpuScheduler::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn root_ops_names_the_program_it_came_from() {
        let p = ScxProgram::new("/usr/bin/scx_bpfland", vec![]).unwrap();
        assert!(p.owns_ops("bpfland_1.1.4_g8a2c_x86_64_unknown_linux_gnu"));
        assert!(!p.owns_ops("lavd_1.0.0"));
        assert!(!p.owns_ops(""));
        assert_eq!(ops_name_version("bpfland_1.1.4_gabc"), ("bpfland".into(), "1.1.4_gabc".into()));
        assert_eq!(ops_name_version("simple"), ("simple".into(), String::new()));
    }
}
