//! `schedlab bisect`: the first commit between a good and a bad revision of a git repository
//! that made an experiment slower. Each step checks a revision out in a git worktree, builds
//! it with the user's command (`sh -c CMD` in the worktree, its output to a log), and runs
//! the experiment once with both arms, the good revision's worktree and the tested one's
//! ([`schedlab_spec::with_arms`]: a `command` workload's argv names `{worktree}`), in random
//! order, through [`Session::measure`]; the arms are judged by [`schedlab_verdict::judge`]
//! ([`judge`]), with more repetitions while undecided ([`schedlab_verdict::next_step`]) up to
//! a cap. A revision whose build fails is skipped, as `git bisect skip` does.
//!
//! The state (the revisions, each tested one's outcome and verdict rows) is a JSON file in
//! `.git/schedlab-bisect/` of the repository, rewritten after each step ([`state`]): a
//! bisect stopped by a signal continues where it was, and the worktrees it left are removed
//! first. Git runs with an argument vector; only the build command goes through a shell.

pub mod judge;
pub mod state;

use crate::{Error, MeasureOptions, Observer, Repetitions, Session};
use schedlab_analysis::Metric;
use schedlab_model::CellRecord;
use schedlab_runner::Executor;
use schedlab_spec::Arms;
use schedlab_verdict::{next_step, Judged, Params};
use state::{Next, Outcome, Settings, State, Tested};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The state directory's name in the repository's git directory.
pub const STATE_DIR: &str = "schedlab-bisect";
/// The power [`next_step`] sizes additions for.
const POWER: f64 = 0.8;

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct Request {
    /// The repository.
    pub repo: PathBuf,
    /// The settings (None with `resume`: the state's).
    pub settings: Option<Settings>,
    /// Continue the bisect in progress, whatever its settings.
    pub resume: bool,
    /// Forget any bisect in progress and start this one.
    pub reset: bool,
}

/// How a bisect ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// `revs[i]` is the first bad commit.
    Commit(usize),
    /// The first bad commit is one of these (the others could not be built or measured).
    Among(Vec<usize>),
    /// The bad revision is not worse than the good one.
    NotRegressed,
    /// A signal stopped it: the same command continues it.
    Stopped(i32),
}

/// A bisect's end: its state, what was found, and where the state is.
#[derive(Debug, Clone)]
pub struct Bisected {
    /// The state, as written.
    pub state: State,
    /// What was found.
    pub found: Found,
    /// The state directory (logs, state file).
    pub dir: PathBuf,
}

/// Runs `git` in `repo` with `args`: its standard output, trimmed.
pub fn git(repo: &Path, args: &[&str]) -> Result<String, Error> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::context("cannot run git", e))?;
    if !out.status.success() {
        return Err(Error::Refused(format!(
            "git {} in {}: {}",
            args.join(" "),
            repo.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The full commit id of `rev`.
fn commit(repo: &Path, rev: &str) -> Result<String, Error> {
    git(repo, &["rev-parse", "--verify", "--end-of-options", &format!("{rev}^{{commit}}")])
}

/// The state directory of the repository at `repo`: `schedlab-bisect` in its git directory.
pub fn state_dir(repo: &Path) -> Result<PathBuf, Error> {
    let common = PathBuf::from(git(repo, &["rev-parse", "--git-common-dir"])?);
    let common = if common.is_absolute() { common } else { repo.join(common) };
    Ok(std::fs::canonicalize(&common)?.join(STATE_DIR))
}

/// The commits after `good` up to `bad` on `bad`'s first-parent line, oldest first.
fn revisions(repo: &Path, good: &str, bad: &str) -> Result<Vec<String>, Error> {
    if git(repo, &["merge-base", "--is-ancestor", good, bad]).is_err() {
        return Err(Error::Refused(format!(
            "the good revision {good} is not an ancestor of the bad one {bad}"
        )));
    }
    let range = format!("{good}..{bad}");
    let list = git(repo, &["rev-list", "--first-parent", "--ancestry-path", "--reverse", &range])?;
    let revs: Vec<String> = list.lines().map(str::to_string).collect();
    if revs.last().map(String::as_str) != Some(bad) {
        return Err(Error::Refused(format!(
            "no commit between {good} and {bad}: nothing to bisect"
        )));
    }
    Ok(revs)
}

/// The state to continue or a new one (see [`Request`]).
fn open(
    repo: &Path,
    dir: &Path,
    req: &Request,
    observer: &mut dyn Observer,
) -> Result<State, Error> {
    if req.reset {
        let _ = std::fs::remove_file(dir.join(state::STATE_FILE));
    }
    let stored = State::read(dir)?;
    let settings = match (stored, &req.settings) {
        (Some(s), given) if req.resume || given.as_ref() == Some(&s.settings) => {
            observer.note(&format!(
                "bisect: continuing the bisect of {}..{} in {} ({} revisions tested)",
                s.settings.good,
                s.settings.bad,
                dir.display(),
                s.tested.len()
            ));
            return Ok(s);
        }
        (None, _) if req.resume => {
            return Err(Error::Refused(format!("no bisect to resume in {}", dir.display())))
        }
        (Some(s), _) if matches!(s.next(), Next::Test(_)) => {
            return Err(Error::Refused(format!(
                "a bisect of {}..{} is in progress in {}: `--resume` continues it, `--reset` starts this one instead",
                s.settings.good,
                s.settings.bad,
                dir.display()
            )))
        }
        (_, Some(given)) => given.clone(),
        (_, None) => return Err(Error::Refused("bisect needs --good, --bad and --build".into())),
    };
    let good = commit(repo, &settings.good)?;
    let bad = commit(repo, &settings.bad)?;
    Ok(State::new(settings, good.clone(), revisions(repo, &good, &bad)?))
}

/// The bisect's worktrees, `good` and `test` in the state directory: removed when dropped
/// (and, left by a bisect killed, when the next one starts).
struct Worktrees {
    repo: PathBuf,
    dir: PathBuf,
}

impl Worktrees {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A fresh worktree `name` at `rev`.
    fn add(&self, name: &str, rev: &str) -> Result<PathBuf, Error> {
        self.remove(name);
        let path = self.path(name);
        let p = path.to_string_lossy().into_owned();
        git(&self.repo, &["worktree", "add", "--detach", "--force", "--quiet", &p, rev])?;
        Ok(path)
    }

    /// Removes worktree `name`, registered or not.
    fn remove(&self, name: &str) {
        let path = self.path(name);
        if path.exists() {
            let p = path.to_string_lossy().into_owned();
            let _ = git(&self.repo, &["worktree", "remove", "--force", "--force", &p]);
            if path.exists() {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}

impl Drop for Worktrees {
    fn drop(&mut self) {
        for name in judge::ARMS {
            self.remove(name);
        }
    }
}

/// Runs `cmd` by `sh -c` in `dir`, its output into `log`: None when it succeeds, else why not.
fn build(cmd: &str, dir: &Path, log: &Path) -> Result<Option<String>, Error> {
    let file = std::fs::File::create(log)?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .map_err(|e| Error::context("cannot run sh for the build command", e))?;
    Ok((!status.success())
        .then(|| format!("the build failed ({status}); its output is in {}", log.display())))
}

/// One bisect under way.
struct Bisect<'a> {
    session: &'a Session,
    executor: &'a mut dyn Executor,
    observer: &'a mut dyn Observer,
    dir: PathBuf,
    state: State,
    arms: Arms,
    figures: Vec<Metric>,
    params: Params,
    worktrees: Worktrees,
    good_built: bool,
}

/// Runs the bisect `req` asks for on database `session.db`, the experiment's runs through
/// `executor` (the engine): each step's line goes to `observer.note`. Call
/// [`schedlab_runner::signals::block`] first, before any thread exists.
pub fn bisect(
    session: &Session,
    req: &Request,
    executor: &mut dyn Executor,
    observer: &mut dyn Observer,
) -> Result<Bisected, Error> {
    let repo = std::fs::canonicalize(&req.repo).map_err(|e| {
        Error::context(format!("cannot open the repository {}", req.repo.display()), e)
    })?;
    let dir = state_dir(&repo)?;
    std::fs::create_dir_all(dir.join("logs"))?;
    // Dropped, it removes the worktrees; first, whatever a killed bisect left.
    let worktrees = Worktrees { repo: repo.clone(), dir: dir.clone() };
    drop(Worktrees { repo: repo.clone(), dir: dir.clone() });
    let state = open(&repo, &dir, req, observer)?;
    let s = &state.settings;
    let figures = s
        .figures
        .iter()
        .map(|f| Metric::parse(f).ok_or_else(|| Error::Refused(format!("unknown figure \"{f}\""))))
        .collect::<Result<Vec<_>, _>>()?;
    let text = std::fs::read_to_string(&s.experiment)
        .map_err(|e| Error::context(format!("cannot read {}", s.experiment.display()), e))?;
    let path = s.experiment.display().to_string();
    let dirs: Vec<String> =
        judge::ARMS.iter().map(|a| worktrees.path(a).display().to_string()).collect();
    let named: Vec<(&str, &str)> =
        judge::ARMS.iter().copied().zip(dirs.iter().map(String::as_str)).collect();
    let arms = schedlab_spec::with_arms(&path, &text, &named).map_err(Error::refused)?;
    // The arms must be an experiment before anything is built.
    schedlab_spec::parse_at(&path, &arms.text, &schedlab_spec::spec_dir(&path))
        .map_err(Error::refused)?;
    let params = Params { alpha: s.alpha, same_within: s.same_within, ..Params::default() };
    if let Some(why) = params.problem() {
        return Err(Error::Refused(format!("bisect's verdicts: {why}")));
    }
    state.write(&dir)?;
    let mut b = Bisect {
        session,
        executor,
        observer,
        dir,
        state,
        arms,
        figures,
        params,
        worktrees,
        good_built: false,
    };
    let found = b.run()?;
    Ok(Bisected { state: b.state.clone(), found, dir: b.dir.clone() })
}

impl Bisect<'_> {
    /// Steps until the bracket closes or a signal comes.
    fn run(&mut self) -> Result<Found, Error> {
        loop {
            if let Some(signal) = schedlab_runner::signals::stopped() {
                return Ok(Found::Stopped(signal));
            }
            let i = match self.state.next() {
                Next::Test(i) => i,
                Next::Found(i) => return Ok(Found::Commit(i)),
                Next::Among(list) => return Ok(Found::Among(list)),
                Next::NotRegressed => return Ok(Found::NotRegressed),
            };
            let (step, of) =
                (self.state.tested.len() + 1, self.state.tested.len() + self.state.steps_left());
            let Some(tested) = self.test(i)? else {
                let signal = schedlab_runner::signals::stopped().unwrap_or(SIGINT);
                return Ok(Found::Stopped(signal));
            };
            self.observer.note(&judge::step_line(step, of, &tested));
            self.state.tested.push(tested);
            self.state.write(&self.dir)?;
        }
    }

    /// Checks the good revision out and builds it, once.
    fn good(&mut self) -> Result<bool, Error> {
        if self.good_built {
            return Ok(true);
        }
        let path = self.worktrees.add(judge::ARMS[0], &self.state.good.clone())?;
        let log = self.dir.join("logs").join("build-good.log");
        if let Some(why) = build(&self.state.settings.build, &path, &log)? {
            if schedlab_runner::signals::stopped().is_some() {
                return Ok(false);
            }
            return Err(Error::Failed(format!("the good revision {}: {why}", self.state.good)));
        }
        self.good_built = true;
        Ok(true)
    }

    /// Builds and measures `revs[i]`: None when a signal stopped it.
    fn test(&mut self, i: usize) -> Result<Option<Tested>, Error> {
        let rev = self.state.revs[i].clone();
        if !self.good()? {
            return Ok(None);
        }
        let path = self.worktrees.add(judge::ARMS[1], &rev)?;
        let log = self.dir.join("logs").join(format!("build-{}.log", &rev[..rev.len().min(12)]));
        let built = build(&self.state.settings.build, &path, &log)?;
        if schedlab_runner::signals::stopped().is_some() {
            return Ok(None);
        }
        let tested = match built {
            Some(why) => Some(Tested {
                rev,
                outcome: Outcome::Skipped,
                per_arm: 0,
                runs: vec![],
                evidence: vec![],
                why: Some(why),
            }),
            None => self.measure(rev)?,
        };
        self.worktrees.remove(judge::ARMS[1]);
        Ok(tested)
    }

    /// Runs the arms `per_arm` times each: the run's id and records, None when a signal
    /// stopped it.
    fn run_arms(&mut self, per_arm: u32) -> Result<Option<(i64, Vec<CellRecord>)>, Error> {
        let experiment = &self.state.settings.experiment;
        let path = experiment.display().to_string();
        let base = schedlab_spec::spec_dir(&path);
        let mut spec =
            schedlab_spec::parse_at(&path, &self.arms.text, &base).map_err(Error::refused)?;
        Repetitions::Count(per_arm).apply(&mut spec.plan);
        if let Some(why) = schedlab_spec::bounds::too_many_steps(&spec.plan) {
            return Err(Error::Refused(format!("{per_arm} repetitions per arm: {why}")));
        }
        let o = MeasureOptions::default();
        let prepared = self.session.prepare(spec, &o, self.observer)?;
        let m = self.session.measure(prepared, &o, self.executor, self.observer)?;
        match m.ended {
            crate::Ended::Complete { .. } => Ok(Some((m.run_id, m.store.cells(m.run_id)?))),
            crate::Ended::Interrupted { .. } => Ok(None),
        }
    }

    /// Measures the built `rev` against the good revision until the verdicts decide or the
    /// cap: None when a signal stopped it.
    fn measure(&mut self, rev: String) -> Result<Option<Tested>, Error> {
        let (first, cap) = (self.state.settings.first, self.state.settings.max_repetitions);
        let (mut per_arm, mut add) = (0, first.min(cap));
        let (mut runs, mut records) = (Vec::new(), Vec::new());
        loop {
            let Some((id, recs)) = self.run_arms(add)? else { return Ok(None) };
            per_arm += add;
            runs.push(id);
            records.extend(recs);
            let v =
                judge::verdicts(&records, &self.arms, &self.figures, self.params, (runs[0], id));
            let mut tested = Tested {
                rev: rev.clone(),
                outcome: Outcome::Skipped,
                per_arm,
                runs: runs.clone(),
                evidence: judge::evidence(&v),
                why: None,
            };
            if v.rows.iter().all(|r| r.judged.ratio.is_none()) {
                if !judge::good_has_values(&records, &self.arms, &self.figures) {
                    return Err(Error::Failed(format!(
                        "the good revision's cells gave no value of {} (run {id}: `schedlab show {id}`)",
                        self.state.settings.figures.join(", ")
                    )));
                }
                tested.why =
                    Some(format!("its cells gave no value (run {id}: `schedlab show {id}`)"));
                return Ok(Some(tested));
            }
            if let Some(outcome) = judge::decide(&v) {
                tested.outcome = outcome;
                return Ok(Some(tested));
            }
            let judged: Vec<Judged> = v.rows.iter().map(|r| r.judged.clone()).collect();
            let more =
                next_step(&judged, &self.params, POWER, cap.saturating_sub(per_arm) as usize);
            if more.more_per_run == 0 {
                tested.outcome = Outcome::UndecidedAtCap;
                return Ok(Some(tested));
            }
            add = more.more_per_run as u32;
        }
    }
}

/// SIGINT's number: the stop of a run whose signal is not known any more.
const SIGINT: i32 = 2;

/// The repository's one-line description of commit `rev` (`abc1234 subject`).
pub fn describe(repo: &Path, rev: &str) -> String {
    git(repo, &["log", "-1", "--format=%h %s", rev]).unwrap_or_else(|_| rev.to_string())
}
