//! Arguments that take one of a list of names (metrics, formats): the list comes from the
//! code that accepts the names, and clap gets it whole, so `--help`, the man pages and the
//! shell completions show every name and cannot drift from what is accepted.

use clap::builder::{PossibleValue, TypedValueParser};
use schedlab_analysis::Metric;
use std::ffi::OsStr;

/// One of a list of names (aliases accepted), parsed to its canonical name; anything else is
/// refused as "unknown WHAT "x"; use one of ..." (exit 2).
#[derive(Clone, Debug)]
pub struct Names {
    what: &'static str,
    values: Vec<PossibleValue>,
}

impl Names {
    /// A parser of `values`, called `what` in errors.
    pub fn new(what: &'static str, values: impl IntoIterator<Item = PossibleValue>) -> Names {
        Names { what, values: values.into_iter().collect() }
    }
}

impl TypedValueParser for Names {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let given = value.to_string_lossy();
        if let Some(v) = self.values.iter().find(|v| v.matches(&given, false)) {
            return Ok(v.get_name().to_string());
        }
        let names: Vec<&str> = self.values.iter().map(PossibleValue::get_name).collect();
        // An alias may be the closest (`preempted` for `preempted_per_proc`).
        let known = self.values.iter().flat_map(|v| v.get_name_and_aliases());
        let message = format!(
            "unknown {} \"{given}\"{}; use one of {}\n",
            self.what,
            schedlab_spec::suggest::did_you_mean(&given, known),
            names.join(", ")
        );
        Err(clap::Error::raw(clap::error::ErrorKind::InvalidValue, message).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values.iter().cloned()))
    }
}

/// Every metric `compare` and `report --compare` accept, with its label; the trace metrics
/// say that they need a traced run.
pub fn metrics() -> Names {
    Names::new(
        "metric",
        Metric::every().map(|m| {
            let help = if m.needs_trace() {
                format!("{} (runs made with --trace)", m.label())
            } else {
                m.label().to_string()
            };
            PossibleValue::new(m.name()).help(help).aliases(m.aliases().iter().copied())
        }),
    )
}
