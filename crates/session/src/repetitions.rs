//! `--repetitions`: a count or `auto`, and how a plan's repetitions read in words.

use schedlab_model::AdaptiveTarget;
use schedlab_spec::Plan;

/// `--repetitions`: a count, or `auto` (adaptive, [`AdaptiveTarget::AUTO`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repetitions {
    /// Exactly this many measured repetitions per cell.
    Count(u32),
    /// Each cell until its main figure's 95% interval is within 5% of the mean (3 to 30).
    Auto,
}

impl Repetitions {
    /// Sets `plan`'s repetitions as `--repetitions` gives them.
    pub fn apply(self, plan: &mut Plan) {
        match self {
            Repetitions::Count(n) => {
                plan.repetitions = n;
                plan.adaptive = None;
            }
            Repetitions::Auto => {
                plan.repetitions = AdaptiveTarget::AUTO.min;
                plan.adaptive = Some(AdaptiveTarget::AUTO);
            }
        }
    }
}

impl std::str::FromStr for Repetitions {
    type Err = BadRepetitions;

    fn from_str(s: &str) -> Result<Self, BadRepetitions> {
        match s {
            "auto" => Ok(Repetitions::Auto),
            n => match n.parse::<u32>() {
                Ok(c) if (1..=schedlab_spec::bounds::MAX_REPETITIONS).contains(&c) => {
                    Ok(Repetitions::Count(c))
                }
                _ => Err(BadRepetitions(n.to_string())),
            },
        }
    }
}

/// A `--repetitions` value that is neither a count nor `auto`.
#[derive(Debug)]
pub struct BadRepetitions(String);

impl std::fmt::Display for BadRepetitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "expected a count from 1 to {}, or auto, got \"{}\"",
            schedlab_spec::bounds::MAX_REPETITIONS,
            self.0
        )
    }
}

impl std::error::Error for BadRepetitions {}

impl std::fmt::Display for Repetitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repetitions::Count(n) => write!(f, "{n}"),
            Repetitions::Auto => f.write_str("auto"),
        }
    }
}

/// How many repetitions each cell of `plan` runs, in words.
pub fn repetitions_label(plan: &Plan) -> String {
    match &plan.adaptive {
        None => format!("{} repetitions", plan.repetitions),
        Some(t) => format!(
            "{} to {} repetitions until the 95% CI is within ±{}% of the mean",
            t.min, t.max, t.ci_pct
        ),
    }
}
