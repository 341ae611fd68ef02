//! A bisect's state as its JSON file keeps it (rewritten after each step), and the bracket:
//! which revision to test next, or what was found.

use crate::Error;
use schedlab_verdict::Judged;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The state file's name in the state directory.
pub const STATE_FILE: &str = "state.json";
/// The state file's layout.
const VERSION: u32 = 1;

/// What the user asked for: a bisect with other settings is another bisect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The experiment file, absolute.
    pub experiment: PathBuf,
    /// The good revision as given.
    pub good: String,
    /// The bad revision as given.
    pub bad: String,
    /// The build command line, run by `sh -c` in each worktree.
    pub build: String,
    /// The figures judged (`wall`, `time_s`).
    pub figures: Vec<String>,
    /// Repetitions per arm of a step's first run.
    pub first: u32,
    /// The most repetitions per arm of one step.
    pub max_repetitions: u32,
    /// The margin of `same`, as a fraction (None: the verdict engine's default).
    pub same_within: Option<f64>,
    /// The family-wise error rate of each step's verdicts.
    pub alpha: f64,
}

/// What a tested revision turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A row regressed against the good revision.
    Bad,
    /// Every row is the same as the good revision's or improved.
    Good,
    /// Still undecided at the cap of repetitions: counted good.
    UndecidedAtCap,
    /// The build failed or the workload gave no value: neither good nor bad.
    Skipped,
}

impl Outcome {
    /// Whether the bracket counts it good.
    pub fn counts_good(self) -> bool {
        matches!(self, Outcome::Good | Outcome::UndecidedAtCap)
    }
}

/// One judged (cell, figure) of a step: the cell's key without the arm, the figure's name,
/// and the verdict with everything it was decided on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The cell's key.
    pub cell: String,
    /// The figure.
    pub figure: String,
    /// The verdict and its numbers (B = the tested revision, A = the good one).
    pub judged: Judged,
}

/// A tested revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tested {
    /// Its commit.
    pub rev: String,
    /// What it turned out to be.
    pub outcome: Outcome,
    /// Repetitions per arm measured.
    pub per_arm: u32,
    /// The runs that measured it (pooled).
    pub runs: Vec<i64>,
    /// The verdict rows.
    pub evidence: Vec<Evidence>,
    /// Why it was skipped.
    pub why: Option<String>,
}

/// A bisect's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The file's layout.
    pub version: u32,
    /// The settings.
    pub settings: Settings,
    /// The good commit.
    pub good: String,
    /// The commits after it up to the bad one (the last), oldest first: the first-parent
    /// ancestry path.
    pub revs: Vec<String>,
    /// The revisions tested, in the order they were.
    pub tested: Vec<Tested>,
}

/// What the bracket says next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Test `revs[i]`.
    Test(usize),
    /// `revs[i]` is the first bad commit.
    Found(usize),
    /// The first bad commit is one of these (the others could not be built or measured).
    Among(Vec<usize>),
    /// The bad revision is not worse than the good one.
    NotRegressed,
}

impl State {
    /// A new bisect of `revs` (oldest first, the bad one last) after `good`.
    pub fn new(settings: Settings, good: String, revs: Vec<String>) -> State {
        State { version: VERSION, settings, good, revs, tested: Vec::new() }
    }

    /// The outcome of `revs[i]`, if tested.
    pub fn outcome(&self, i: usize) -> Option<Outcome> {
        self.tested.iter().rev().find(|t| t.rev == self.revs[i]).map(|t| t.outcome)
    }

    /// The test of `revs[i]`, if tested.
    pub fn test_of(&self, i: usize) -> Option<&Tested> {
        self.tested.iter().rev().find(|t| t.rev == self.revs[i])
    }

    /// The bracket: the first bad commit is in `(lo, hi]`, `lo` the newest good below `hi`
    /// (None: the good revision itself), `hi` the oldest known bad (the bad revision until
    /// one is tested).
    fn bracket(&self) -> (Option<usize>, usize) {
        let last = self.revs.len() - 1;
        let hi =
            (0..self.revs.len()).find(|&i| self.outcome(i) == Some(Outcome::Bad)).unwrap_or(last);
        let lo = (0..hi).rev().find(|&i| self.outcome(i).is_some_and(Outcome::counts_good));
        (lo, hi)
    }

    /// The revisions between the bracket's ends still worth testing.
    fn candidates(&self) -> Vec<usize> {
        let (lo, hi) = self.bracket();
        (lo.map_or(0, |l| l + 1)..hi).filter(|&i| self.outcome(i).is_none()).collect()
    }

    /// What to do next: the untested revision nearest the middle of the bracket, then the
    /// bad revision itself when nothing else was bad (so that its evidence is measured and a
    /// wrong `--bad` shows), then the answer.
    pub fn next(&self) -> Next {
        let (lo, hi) = self.bracket();
        let candidates = self.candidates();
        if !candidates.is_empty() {
            let mid = (lo.map_or(-1, |l| l as i64) + hi as i64) / 2;
            let best = candidates.iter().min_by_key(|&&i| (i as i64 - mid).abs()).copied();
            return Next::Test(best.expect("a candidate"));
        }
        match self.outcome(hi) {
            None => Next::Test(hi),
            Some(Outcome::Bad) => {
                let skipped: Vec<usize> = (lo.map_or(0, |l| l + 1)..hi).collect();
                match skipped.is_empty() {
                    true => Next::Found(hi),
                    false => Next::Among(skipped.into_iter().chain([hi]).collect()),
                }
            }
            Some(Outcome::Skipped) => Next::Among((lo.map_or(0, |l| l + 1)..=hi).collect()),
            Some(_) => Next::NotRegressed,
        }
    }

    /// About how many steps are left, this one included: log2 of the revisions that may
    /// still be the first bad one, rounded up.
    pub fn steps_left(&self) -> usize {
        let n = self.candidates().len() + usize::from(self.outcome(self.bracket().1).is_none());
        match n {
            0 => 0,
            n => ((usize::BITS - (n - 1).leading_zeros()) as usize).max(1),
        }
    }

    /// Reads the state in `dir`, if there is one.
    pub fn read(dir: &Path) -> Result<Option<State>, Error> {
        let path = dir.join(STATE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::context(format!("cannot read {}", path.display()), e)),
        };
        let state: State = serde_json::from_str(&text).map_err(|e| {
            Error::context(
                format!("{} is not a bisect's state (remove it, or `--reset`)", path.display()),
                e,
            )
        })?;
        if state.version != VERSION || state.revs.is_empty() {
            return Err(Error::Refused(format!(
                "{} is a state this schedlab does not read: `--reset` starts anew",
                path.display()
            )));
        }
        Ok(Some(state))
    }

    /// Writes the state into `dir` (a new file renamed over the old one).
    pub fn write(&self, dir: &Path) -> Result<(), Error> {
        let path = dir.join(STATE_FILE);
        let tmp = dir.join(format!("{STATE_FILE}.new"));
        std::fs::write(&tmp, serde_json::to_string_pretty(self)?)?;
        std::fs::rename(&tmp, &path)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: usize) -> State {
        let settings = Settings {
            experiment: "/e.toml".into(),
            good: "g".into(),
            bad: "b".into(),
            build: "true".into(),
            figures: vec!["wall".into()],
            first: 5,
            max_repetitions: 30,
            same_within: None,
            alpha: 0.01,
        };
        State::new(settings, "g".into(), (0..n).map(|i| format!("r{i}")).collect())
    }

    fn mark(s: &mut State, i: usize, outcome: Outcome) {
        let rev = s.revs[i].clone();
        s.tested.push(Tested {
            rev,
            outcome,
            per_arm: 5,
            runs: vec![],
            evidence: vec![],
            why: None,
        });
    }

    /// Bisects `n` revisions whose first bad one is `first_bad`, skipping those in `skip`:
    /// the answer and the revisions tested.
    fn bisect(n: usize, first_bad: usize, skip: &[usize]) -> (Next, Vec<usize>) {
        let mut s = state(n);
        let mut order = Vec::new();
        loop {
            match s.next() {
                Next::Test(i) => {
                    assert!(!order.contains(&i), "{i} tested twice");
                    order.push(i);
                    let o = match i {
                        i if skip.contains(&i) => Outcome::Skipped,
                        i if i >= first_bad => Outcome::Bad,
                        _ => Outcome::Good,
                    };
                    mark(&mut s, i, o);
                }
                other => return (other, order),
            }
        }
    }

    #[test]
    fn finds_every_position_in_log2_steps() {
        for n in [1, 2, 3, 15, 16, 64] {
            for first_bad in 0..n {
                let (next, order) = bisect(n, first_bad, &[]);
                assert_eq!(next, Next::Found(first_bad), "n {n}, first bad {first_bad}");
                let log2 = (usize::BITS - n.leading_zeros()) as usize;
                assert!(order.len() <= log2 + 1, "n {n}: {order:?}");
            }
        }
    }

    #[test]
    fn the_first_step_is_the_middle_and_the_estimate_shrinks() {
        let s = state(16);
        assert_eq!(s.next(), Next::Test(7));
        assert_eq!(s.steps_left(), 4);
        let mut s = s;
        mark(&mut s, 7, Outcome::Good);
        assert_eq!(s.steps_left(), 3);
    }

    #[test]
    fn skipped_revisions_are_stepped_around_and_named_when_they_hide_the_answer() {
        let (next, order) = bisect(16, 10, &[7]);
        assert_eq!(next, Next::Found(10));
        assert_eq!(order[0], 7);
        // The first bad commit cannot be built: it is one of itself and the one before.
        let (next, _) = bisect(16, 10, &[9, 10]);
        assert_eq!(next, Next::Among(vec![9, 10, 11]));
    }

    #[test]
    fn a_bad_revision_that_is_not_worse_says_so() {
        let (next, order) = bisect(8, 8, &[]);
        assert_eq!(next, Next::NotRegressed);
        assert_eq!(order.last(), Some(&7), "the bad revision itself was measured: {order:?}");
    }

    #[test]
    fn undecided_at_the_cap_counts_good() {
        let mut s = state(4);
        mark(&mut s, 1, Outcome::UndecidedAtCap);
        assert_eq!(s.next(), Next::Test(2));
    }

    #[test]
    fn the_state_survives_its_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(State::read(dir.path()).unwrap(), None);
        let mut s = state(4);
        mark(&mut s, 1, Outcome::Bad);
        s.write(dir.path()).unwrap();
        assert_eq!(State::read(dir.path()).unwrap(), Some(s));
        std::fs::write(dir.path().join(STATE_FILE), "{").unwrap();
        assert!(State::read(dir.path()).is_err());
    }
}
