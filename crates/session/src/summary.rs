//! The facts of a run's one line at its end (all `--quiet` prints), and the line.

use crate::Error;
use schedlab_store::{RunStatus, Store};
use std::time::Duration;

/// What ran, how long it took, what failed, how adaptive cells ended, what says the machine
/// was noisy: the run's one line at its end ([`std::fmt::Display`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The run's id.
    pub run_id: i64,
    /// Its status.
    pub status: RunStatus,
    /// Cells with a stored repetition.
    pub cells: usize,
    /// Measured cell repetitions in the run.
    pub measured: usize,
    /// Of those, the ones a resumed run found stored.
    pub before: Option<usize>,
    /// Failed measured cell repetitions.
    pub failed: usize,
    /// How long the run took.
    pub took: Duration,
    /// Warnings said during the run.
    pub warnings: usize,
    /// Adaptive cells: (within the target, all, the target's ± percent).
    pub adaptive: Option<(usize, usize, f64)>,
    /// What says the machine was noisy, in words (empty: nothing).
    pub noise: Vec<String>,
}

impl Summary {
    /// The summary of run `run_id`, `status`: `failed` of `measured` measured cell
    /// repetitions failed, `before` of them found by a resumed run.
    pub fn of(
        store: &Store,
        run_id: i64,
        status: &RunStatus,
        (failed, measured, before): (usize, usize, Option<usize>),
        took: Duration,
        warnings: usize,
        cpus: usize,
    ) -> Result<Summary, Error> {
        let cells = store
            .done_steps(run_id)?
            .iter()
            .map(|s| s.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let outcomes = store.repetition_outcomes(run_id)?;
        let adaptive = outcomes.values().next().map(|o| {
            let reached = outcomes.values().filter(|o| o.reached).count();
            (reached, outcomes.len(), o.target.ci_pct)
        });
        // Judged over every stored repetition (a resumed run's earlier ones too), as `show`
        // and `report` judge it.
        let noise = schedlab_analysis::noise::noise(&store.cells(run_id)?, cpus);
        Ok(Summary {
            run_id,
            status: status.clone(),
            cells,
            measured,
            before,
            failed,
            took,
            warnings,
            adaptive,
            noise: schedlab_report::noise::evidence(&noise),
        })
    }
}

/// `n what`, with an s when n is not 1.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A resumed run ran only what was missing: say so, beside the run's whole count.
        let reps = match self.before {
            Some(b) => format!(
                "ran {} ({} in the run, {b} from before)",
                plural(self.measured.saturating_sub(b), "measured cell repetition"),
                self.measured
            ),
            None => plural(self.measured, "measured cell repetition"),
        };
        write!(f, "run {} {}: {}, {reps}", self.run_id, self.status, plural(self.cells, "cell"))?;
        if self.failed > 0 {
            write!(f, " ({} FAILED)", self.failed)?;
        }
        write!(f, " in {}", crate::eta::clock(self.took))?;
        if let Some((reached, all, pct)) = self.adaptive {
            write!(f, "; adaptive: {reached} of {all} cells within ±{pct}% of the mean")?;
            if reached < all {
                write!(f, ", {} not (marked in the tables)", all - reached)?;
            }
        }
        if self.warnings > 0 {
            write!(f, "; {}", plural(self.warnings, "warning"))?;
        }
        if !self.noise.is_empty() {
            write!(
                f,
                "; results may be inaccurate: {} (rerun on a quiet machine)",
                self.noise.join(", ")
            )?;
        }
        write!(f, "; tables: schedlab show {}", self.run_id)
    }
}
