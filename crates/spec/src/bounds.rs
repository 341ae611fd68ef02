//! The largest numbers a spec or the command line may give, where a larger one would not be an
//! experiment but an allocation the machine cannot make or a timer that wraps: the spec's
//! keys and the flags that override them share these bounds.

use schedlab_plan::Plan;
use std::fmt;
use std::time::Duration;

/// A number past its bound; the message names the key or flag, the bound and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfBounds(String);

impl fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutOfBounds {}

/// The most measured repetitions of one cell (`repetitions`, `--repetitions`).
pub const MAX_REPETITIONS: u32 = 100_000;

/// The most tasks in one periodic set: as many as the dispatcher's region has slots.
pub const MAX_SET_TASKS: usize = schedlab_plan::DISPATCH_MAX_TASKS;

/// The longest per-cell watchdog (`timeout_s`, `--timeout`): 30 days. The engine counts its
/// deadlines in nanoseconds of a u64, which 584 years would already wrap.
pub const MAX_TIMEOUT_S: f64 = 30.0 * 86_400.0;

/// The largest `--scale`: a million times a spec's work amounts is more than any cell runs
/// within [`MAX_TIMEOUT_S`].
pub const MAX_SCALE: f64 = 1e6;

/// The most cell repetitions (measured and warm-up) of one run: a run lists them all before
/// it starts.
pub const MAX_STEPS: u64 = 10_000_000;

/// A watchdog of `seconds`, or why it is not one (`what` names the key or flag).
pub fn watchdog(seconds: f64, what: &str) -> Result<Duration, OutOfBounds> {
    if !(seconds > 0.0 && seconds <= MAX_TIMEOUT_S) {
        return Err(OutOfBounds(format!(
            "{what} must be a positive number of seconds, at most {MAX_TIMEOUT_S} (30 days), got {}",
            shown(seconds)
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A `--scale` factor, or why it is not one.
pub fn scale(factor: f64) -> Result<f64, OutOfBounds> {
    if !(factor > 0.0 && factor <= MAX_SCALE) {
        return Err(OutOfBounds(format!(
            "--scale must be a positive number, at most {MAX_SCALE}, got {}",
            shown(factor)
        )));
    }
    Ok(factor)
}

/// A number as a message shows it: 1e308 in 5 characters, not 309.
fn shown(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// How many cell repetitions a run of `plan` lists before it starts: every cell's first
/// measured repetitions and its warm-ups.
pub fn steps(plan: &Plan) -> u64 {
    plan.cells.len() as u64 * (u64::from(plan.repetitions) + u64::from(plan.warmup))
}

/// Why a run of `plan` would list more cell repetitions than [`MAX_STEPS`], if it would.
pub fn too_many_steps(plan: &Plan) -> Option<String> {
    let n = steps(plan);
    (n > MAX_STEPS).then(|| {
        format!(
            "{} cells x ({} repetitions + {} warm-up) is {n} cell repetitions; a run takes at most {MAX_STEPS}: fewer repetitions or fewer cells",
            plan.cells.len(),
            plan.repetitions,
            plan.warmup
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watchdog_past_30_days_or_not_positive_is_refused() {
        assert_eq!(watchdog(1800.0, "timeout_s"), Ok(Duration::from_secs(1800)));
        assert_eq!(watchdog(MAX_TIMEOUT_S, "timeout_s"), Ok(Duration::from_secs(2_592_000)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e20, 18_446_744_074.0, MAX_TIMEOUT_S + 1.0]
        {
            let e = watchdog(bad, "--timeout").unwrap_err().to_string();
            assert!(
                e.starts_with("--timeout must be a positive number of seconds, at most 2592000"),
                "{bad}: {e}"
            );
            assert!(e.len() < 100, "{e}");
        }
    }

    #[test]
    fn a_scale_past_a_million_is_refused() {
        assert_eq!(scale(0.01), Ok(0.01));
        for bad in [0.0, -2.0, f64::NAN, 1e308, f64::INFINITY, 1e6 + 1.0] {
            assert!(
                scale(bad)
                    .unwrap_err()
                    .to_string()
                    .starts_with("--scale must be a positive number, at most 1000000"),
                "{bad}"
            );
        }
    }
}
