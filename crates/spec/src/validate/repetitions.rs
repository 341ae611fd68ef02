//! `repetitions`: a count, or `{ min, max, ci_pct }` (or `"auto"`) to repeat each cell until
//! its main figure is precise enough.

use super::Ctx;
use crate::error::SpecError;
use schedlab_plan::AdaptiveTarget;
use serde_spanned::Spanned;

/// The most repetitions a cell may take, fixed or adaptive.
const MAX: i64 = crate::bounds::MAX_REPETITIONS as i64;

/// The measured repetitions every cell runs first, and the adaptive target if any.
pub(super) fn repetitions(
    cx: &Ctx,
    v: Option<&Spanned<toml::Value>>,
) -> Result<(u32, Option<AdaptiveTarget>), SpecError> {
    let Some(v) = v else { return Ok((1, None)) };
    let bad = |msg: String| cx.err(v.span(), msg);
    let target = match v.get_ref() {
        toml::Value::Integer(n) if (1..=MAX).contains(n) => return Ok((*n as u32, None)),
        toml::Value::String(s) if s == "auto" => AdaptiveTarget::AUTO,
        toml::Value::Table(t) => {
            let mut target = AdaptiveTarget::AUTO;
            for (key, value) in t {
                match (key.as_str(), value) {
                    ("min", toml::Value::Integer(n)) if (3..=MAX).contains(n) => target.min = *n as u32,
                    ("max", toml::Value::Integer(n)) if (3..=MAX).contains(n) => target.max = *n as u32,
                    ("ci_pct", toml::Value::Integer(n)) if *n > 0 && *n < 100 => target.ci_pct = *n as f64,
                    ("ci_pct", toml::Value::Float(x)) if *x > 0.0 && *x < 100.0 => target.ci_pct = *x,
                    ("min" | "max", other) => {
                        return bad(format!(
                            "repetitions.{key} must be a whole number from 3 (the fewest with a confidence interval) to {MAX}, got {other}"
                        ))
                    }
                    ("ci_pct", other) => {
                        return bad(format!(
                            "repetitions.ci_pct must be a percentage of the mean above 0 and below 100, got {other}"
                        ))
                    }
                    (other, _) => return bad(format!("unknown key \"{other}\" in repetitions: expected min, max and ci_pct")),
                }
            }
            if target.min > target.max {
                return bad(format!("repetitions.min ({}) must not exceed repetitions.max ({})", target.min, target.max));
            }
            target
        }
        other => {
            return bad(format!(
                "repetitions must be a count from 1 to {MAX}, \"auto\", or {{ min = 3, max = 30, ci_pct = 5 }} to repeat each cell until its 95% interval is within ci_pct percent of the mean, got {other}"
            ))
        }
    };
    Ok((target.min, Some(target)))
}
