//! `schedlab run SPEC --until-decided AXIS`: the flags, and the verdicts at the run's end
//! (the rounds themselves are the session's: `schedlab_session::decide`).

use schedlab_analysis::Metric;
use schedlab_session::decide::{Decision, Until, DEFAULT_MAX_REPETITIONS};

/// The flags of a run that decides the levels of an axis.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DecideArgs {
    /// A/B in one run: judge each level of AXIS (two workloads, schedulers, knob sets) against
    /// the baseline level in every group of cells that agree on the other axes (as `compare
    /// --by`), and add repetitions to both cells of every undecided pair, interleaved in
    /// random order, until every pair and figure is regressed, improved or same, or
    /// --max-repetitions is reached. The plan's repetitions are the first round.
    #[arg(long, value_name = "AXIS", conflicts_with = "shard")]
    pub until_decided: Option<String>,
    /// With --until-decided: the level the others are judged against (default: the first in
    /// plan order).
    #[arg(long, value_name = "LEVEL", requires = "until_decided")]
    pub baseline: Option<String>,
    /// With --until-decided: the figures judged, as one family (default wall).
    #[arg(long, value_name = "FIGURE", value_delimiter = ',', requires = "until_decided", value_parser = super::values::metrics())]
    pub metric: Vec<String>,
    /// With --until-decided: the most measured repetitions a cell gets (default 30).
    #[arg(long, value_name = "N", requires = "until_decided", value_parser = clap::value_parser!(u32).range(2..=10_000))]
    pub max_repetitions: Option<u32>,
}

impl DecideArgs {
    /// What to decide, when --until-decided is given.
    pub fn until(&self) -> Option<Until> {
        let axis = self.until_decided.as_deref()?;
        let mut metrics: Vec<Metric> =
            self.metric.iter().filter_map(|m| Metric::parse(m)).collect();
        if metrics.is_empty() {
            metrics.push(Metric::WallPerProc);
        }
        Some(Until {
            baseline: self.baseline.clone(),
            metrics,
            max_repetitions: self.max_repetitions.unwrap_or(DEFAULT_MAX_REPETITIONS),
            ..Until::new(axis)
        })
    }

    /// These flags as words of a `schedlab run` command line (a resumed run goes on
    /// deciding).
    pub fn to_words(&self) -> Vec<String> {
        let Some(axis) = &self.until_decided else { return Vec::new() };
        let mut words = vec!["--until-decided".to_string(), axis.clone()];
        if let Some(b) = &self.baseline {
            words.extend(["--baseline".into(), b.clone()]);
        }
        if !self.metric.is_empty() {
            words.extend(["--metric".into(), self.metric.join(",")]);
        }
        if let Some(n) = self.max_repetitions {
            words.extend(["--max-repetitions".into(), n.to_string()]);
        }
        words
    }
}

/// Prints the decision: the verdict table and its summary line unless `quiet`, then the
/// line that says how the run ended.
pub fn print(d: &Decision, quiet: bool) -> anyhow::Result<()> {
    if !quiet {
        outln!("{}", schedlab_report::verdicts::table(&d.verdicts));
        outln!("{}", schedlab_report::verdicts::summary_line(&d.verdicts));
    }
    outln!("{d}");
    Ok(())
}
