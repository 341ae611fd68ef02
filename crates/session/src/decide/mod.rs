//! `run --until-decided AXIS`: A/B in one run, until decided. The levels of one axis (two
//! builds of a workload, two sched_ext schedulers, two knob sets) run interleaved in random
//! order, so drift hits every arm alike. The plan's repetitions are the first round; after
//! each round the cells are grouped by the other axes (as `compare --by` groups them), each
//! other level is judged against the baseline level on every figure asked for, as one
//! family ([`schedlab_verdict::judge`], against this machine's floors where a noise run
//! measured them), and the arms of every undecided pair get the repetitions
//! [`schedlab_verdict::next_step`] sizes from their spread and margin (at least one, at most
//! as many as they have, so a round at most doubles them, never past the cap). The run
//! stops when every row is decided or every undecided pair is at the cap.
//!
//! Each round is decided from the stored records alone, so a resumed run (`run --resume
//! --until-decided AXIS`) goes on deciding where it stopped.

use crate::floor::Floors;
use crate::Error;
use schedlab_analysis::{compare, compare_within, CellComparison, Correction, Metric, WithinRun};
use schedlab_model::{CellRecord, Environment};
use schedlab_report::verdicts::{counts, FloorSource, Row, Verdicts};
use schedlab_report::within::{coords, group_label};
use schedlab_runner::StepSource;
use schedlab_spec::{Plan, Step};
use schedlab_store::Store;
use schedlab_verdict::{judge, next_step, Floor, Pair, Params, Verdict};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[cfg(test)]
mod tests;

/// The most repetitions a cell gets when `--max-repetitions` does not say.
pub const DEFAULT_MAX_REPETITIONS: u32 = 30;
/// The power a round is sized for: the chance to detect a change of the margin δ.
pub const POWER: f64 = 0.8;

/// What the user asked a run to decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Until {
    /// The axis whose levels are compared (`workload`, `scheduler`, a knob's name).
    pub axis: String,
    /// The level the others are compared with (default: the first in plan order).
    pub baseline: Option<String>,
    /// The figures judged, as one family.
    pub metrics: Vec<Metric>,
    /// The most measured repetitions any cell gets.
    pub max_repetitions: u32,
    /// The verdict rule's parameters.
    pub params: Params,
}

impl Until {
    /// Deciding `axis` on wall time, against its first level, up to
    /// [`DEFAULT_MAX_REPETITIONS`], with the default rule.
    pub fn new(axis: &str) -> Until {
        Until {
            axis: axis.into(),
            baseline: None,
            metrics: vec![Metric::WallPerProc],
            max_repetitions: DEFAULT_MAX_REPETITIONS,
            params: Params::default(),
        }
    }
}

/// One level's cell against the baseline level's, in a group of cells that agree on every
/// other axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arms {
    /// The group's name (`processes=2`, or `all cells`).
    pub group: String,
    /// The level compared with the baseline.
    pub level: String,
    /// The baseline level's cell.
    pub baseline: u32,
    /// The compared level's cell.
    pub other: u32,
}

/// What a plan compares along the axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// The axis, as the plan names it.
    pub axis: String,
    /// The baseline level.
    pub baseline: String,
    /// Every level, in plan order.
    pub levels: Vec<String>,
    /// The pairs of cells judged, group by group.
    pub arms: Vec<Arms>,
}

/// The pairs of cells `until` compares in `plan`, or why the plan cannot be decided so
/// (bad input: refused before anything runs).
pub fn design(plan: &Plan, until: &Until) -> Result<Design, Error> {
    let refuse = |why: String| Error::Refused(format!("--until-decided {}: {why}", until.axis));
    if plan.adaptive.is_some() {
        return Err(refuse(
            "its rounds add repetitions themselves: give the plan a count of repetitions (the first round), not adaptive ones".into(),
        ));
    }
    if plan.repetitions > until.max_repetitions {
        return Err(refuse(format!(
            "the plan's first round of {} repetitions is past --max-repetitions {}",
            plan.repetitions, until.max_repetitions
        )));
    }
    if until.metrics.is_empty() {
        return Err(refuse("no figure to judge".into()));
    }
    if let Some(why) = until.params.problem() {
        return Err(refuse(why.into()));
    }
    // The cells' coordinates, as a run of them would store them.
    let records: Vec<CellRecord> = plan
        .cells
        .iter()
        .map(|c| CellRecord { params: c.params(), ..Default::default() })
        .collect();
    let axis = if until.axis == "procs" { "processes" } else { until.axis.as_str() };
    let w = compare_within(
        &records,
        &coords,
        axis,
        until.baseline.as_deref(),
        Metric::WallPerProc,
        until.params.alpha,
        Correction::Holm,
    )
    .map_err(|e| refuse(e.to_string()))?;
    let arms = arms_of(plan, &w);
    if arms.is_empty() {
        return Err(refuse(format!(
            "no group of cells has both the baseline {} and another level",
            w.baseline
        )));
    }
    Ok(Design { axis: w.axis, baseline: w.baseline, levels: w.levels, arms })
}

/// The pairs of a within-run comparison, as cells of `plan`.
fn arms_of(plan: &Plan, w: &WithinRun) -> Vec<Arms> {
    let index = |key: &str| plan.cells.iter().find(|c| c.key == key).map(|c| c.index);
    w.pairs()
        .filter_map(|(g, p)| {
            Some(Arms {
                group: group_label(w, g),
                level: p.level.clone(),
                baseline: index(&p.baseline_key)?,
                other: index(&p.key)?,
            })
        })
        .collect()
}

/// A cell's measured repetitions (failed ones too: they ran).
fn measured(records: Option<&Vec<CellRecord>>) -> u32 {
    records.map_or(0, |r| r.iter().filter(|r| !r.warmup).count() as u32)
}

/// A cell's values of `metric`, in repetition order.
fn values(records: Option<&Vec<CellRecord>>, metric: Metric) -> Vec<f64> {
    let mut v: Vec<(u32, f64)> = records
        .into_iter()
        .flatten()
        .filter(|r| !r.warmup)
        .filter_map(|r| Some((r.rep, metric.value(r)?)))
        .collect();
    v.sort_by_key(|(rep, _)| *rep);
    v.into_iter().map(|(_, x)| x).collect()
}

/// The records of each cell, as far as judging needs them.
type Records = BTreeMap<u32, Vec<CellRecord>>;

/// A run's decisions: the plan, what to decide, this machine's floors.
pub struct Decider<'a> {
    plan: &'a Plan,
    until: &'a Until,
    design: Design,
    floors: Option<Floors>,
    run_id: i64,
    now_unix: f64,
}

impl<'a> Decider<'a> {
    /// The decisions of run `run_id` of `plan`, against `floors` (None: `--same-within` or
    /// 5%, and the 1% gate).
    pub fn new(
        plan: &'a Plan,
        until: &'a Until,
        floors: Option<Floors>,
        run_id: i64,
        now_unix: f64,
    ) -> Result<Decider<'a>, Error> {
        let design = design(plan, until)?;
        Ok(Decider { plan, until, design, floors, run_id, now_unix })
    }

    /// The decisions of run `run_id` when `until` is given, against the newest floors of a
    /// machine like `env` in `store`.
    pub fn of_run(
        store: &Store,
        plan: &'a Plan,
        until: Option<&'a Until>,
        env: &Environment,
        run_id: i64,
    ) -> Result<Option<Decider<'a>>, Error> {
        let Some(until) = until else { return Ok(None) };
        let floors = crate::floor::newest_for(store, env)?;
        Decider::new(plan, until, floors, run_id, crate::now_unix()).map(Some)
    }

    /// What the run decides, in a line said before its first step.
    pub fn intro(&self) -> String {
        let d = &self.design;
        let others: Vec<&str> =
            d.levels.iter().filter(|l| **l != d.baseline).map(String::as_str).collect();
        let figures: Vec<&str> = self.until.metrics.iter().map(|m| m.name()).collect();
        format!(
            "until decided: {} {} against {} in {} pairs of cells on {}, interleaved in random order; \
             the plan's {} repetitions first, then rounds for the undecided, up to {} repetitions a cell{}",
            d.axis,
            others.join(", "),
            d.baseline,
            d.arms.len(),
            figures.join(", "),
            self.plan.repetitions,
            self.until.max_repetitions,
            match &self.floors {
                Some(f) => format!("; floors of noise run {}", f.run_id),
                None => String::new(),
            }
        )
    }

    /// The floor of a pair's figure: the larger of its two cells' (the noisier arm), without
    /// the drift between runs (both arms are in this one).
    fn floor(&self, arms: &Arms, metric: Metric) -> Option<Floor> {
        let floors = self.floors.as_ref()?;
        [arms.baseline, arms.other]
            .iter()
            .filter_map(|c| floors.get(&self.plan.cells[*c as usize].key, metric.name()))
            .map(|f| Floor { run_sd: 0.0, ..*f })
            .max_by(|a, b| a.q95.total_cmp(&b.q95))
    }

    /// Every pair's figures judged as one family from `records`, and for each row the index
    /// of its arms. A figure neither cell of a pair has is no row.
    fn judge(&self, records: &Records) -> (Verdicts, Vec<usize>) {
        let alpha = self.until.params.alpha;
        let mut items = Vec::new();
        for (i, arms) in self.design.arms.iter().enumerate() {
            for &metric in &self.until.metrics {
                let a = values(records.get(&arms.baseline), metric);
                let b = values(records.get(&arms.other), metric);
                if !(a.is_empty() && b.is_empty()) {
                    items.push((i, metric, a, b, self.floor(arms, metric)));
                }
            }
        }
        let pairs: Vec<Pair> = items
            .iter()
            .map(|(_, metric, a, b, floor)| Pair {
                a,
                b,
                better: crate::verdicts::better(*metric),
                floor: *floor,
            })
            .collect();
        let judged = judge(&pairs, &self.until.params);
        let covered = pairs.iter().filter(|p| p.floor.is_some()).count();
        let of_row: Vec<usize> = items.iter().map(|(i, ..)| *i).collect();
        let rows = items
            .into_iter()
            .zip(judged)
            .map(|((i, metric, a, b, _), judged)| {
                let cell = &self.plan.cells[self.design.arms[i].other as usize];
                let result = compare(&a, &b, alpha);
                let cell = CellComparison {
                    key: cell.key.clone(),
                    params: cell.params(),
                    a,
                    b,
                    result,
                    p_adjusted: None,
                    alpha,
                };
                Row { cell, metric, judged }
            })
            .collect();
        let verdicts = Verdicts {
            runs: (self.run_id, self.run_id),
            params: self.until.params,
            rows,
            floor: self.floors.as_ref().map(|f| FloorSource {
                run_id: f.run_id,
                age: f.age(self.now_unix),
                covered,
            }),
            sides: Some(self.sides()),
        };
        (verdicts, of_row)
    }

    /// The names of the verdict table's sides: the baseline level, and the level compared
    /// with it (`each level` when there are several).
    fn sides(&self) -> (String, String) {
        let d = &self.design;
        let others: BTreeSet<&str> = d.arms.iter().map(|a| a.level.as_str()).collect();
        let b = match others.iter().next() {
            Some(level) if others.len() == 1 => level.to_string(),
            _ => format!("each {}", d.axis),
        };
        (d.baseline.clone(), b)
    }

    /// The repetitions of the next round, as (cell, repetition): both cells of every
    /// undecided row's pair topped up alike by what [`next_step`] says the family needs
    /// (at least 1, at most what they have), never past the cap. Empty: the run is over.
    fn more(&self, v: &Verdicts, of_row: &[usize], records: &Records) -> Vec<(u32, u32)> {
        let cap = self.until.max_repetitions;
        let judged: Vec<_> = v.rows.iter().map(|r| r.judged.clone()).collect();
        let step = next_step(&judged, &self.until.params, POWER, cap as usize).more_per_run;
        let step = step.clamp(1, cap as usize) as u32;
        let undecided: BTreeSet<usize> = v
            .rows
            .iter()
            .zip(of_row)
            .filter(|(r, _)| r.judged.verdict == Verdict::Undecided)
            .map(|(_, i)| *i)
            .collect();
        let mut target: BTreeMap<u32, u32> = BTreeMap::new();
        for arms in undecided.iter().map(|i| &self.design.arms[*i]) {
            let have =
                measured(records.get(&arms.baseline)).min(measured(records.get(&arms.other)));
            let t = (have + step.min(have.max(1))).min(cap);
            for cell in [arms.baseline, arms.other] {
                let e = target.entry(cell).or_insert(0);
                *e = (*e).max(t);
            }
        }
        let mut more = Vec::new();
        for (cell, t) in target {
            let recs = records.get(&cell);
            let next = recs
                .into_iter()
                .flatten()
                .filter(|r| !r.warmup)
                .map(|r| r.rep + 1)
                .max()
                .unwrap_or(0);
            let add = t.saturating_sub(measured(recs));
            more.extend((0..add).map(|k| (cell, next + k)));
        }
        more
    }

    /// Whether a cell is one of the pairs'.
    fn compares(&self, cell: u32) -> bool {
        self.design.arms.iter().any(|a| a.baseline == cell || a.other == cell)
    }

    /// The decision on `records`: the verdicts and how the run ended.
    fn decision(&self, records: &Records) -> Decision {
        let (verdicts, _) = self.judge(records);
        let cells = self.design.arms.iter().flat_map(|a| [a.baseline, a.other]);
        let per_arm = cells.map(|c| measured(records.get(&c))).max().unwrap_or(0);
        Decision {
            axis: self.design.axis.clone(),
            verdicts,
            per_arm,
            cap: self.until.max_repetitions,
        }
    }
}

/// How a run decided: the verdicts of its last round.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The axis compared.
    pub axis: String,
    /// The verdicts, one row per pair of cells and figure.
    pub verdicts: Verdicts,
    /// The most measured repetitions a compared cell has.
    pub per_arm: u32,
    /// `--max-repetitions`.
    pub cap: u32,
}

impl Decision {
    /// Rows still undecided (those not judged included).
    pub fn undecided(&self) -> usize {
        self.verdicts.rows.iter().filter(|r| r.judged.verdict == Verdict::Undecided).count()
    }

    /// Whether every row is decided (and there is one).
    pub fn decided(&self) -> bool {
        !self.verdicts.rows.is_empty() && self.undecided() == 0
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [reg, imp, same, und, none] = counts(&self.verdicts);
        let tally = format!(
            "{reg} regressed, {imp} improved, {same} same, {} undecided by {}",
            und + none,
            self.axis
        );
        if self.verdicts.rows.is_empty() {
            write!(f, "nothing decided: no compared cell has a value of the figures asked for")
        } else if self.decided() {
            write!(f, "decided after {} repetitions per arm ({tally})", self.per_arm)
        } else {
            write!(f, "undecided at the cap of {}: {} rows ({tally})", self.cap, self.undecided())
        }
    }
}

/// The steps of a deciding run: the plan's first, then a round for the undecided pairs
/// whenever the last ran.
pub struct DecidingSteps<'d> {
    decider: &'d Decider<'d>,
    /// Steps of the current round not yet handed out, in order.
    queue: VecDeque<Step>,
    /// The records of the compared cells (without per-job records, unless a figure needs
    /// them, and without kept captures).
    records: Records,
    /// Rounds started after the first steps.
    round: u32,
    handed: usize,
}

impl<'d> DecidingSteps<'d> {
    /// The run's steps: `first` are the plan's not yet stored, `stored` the records already
    /// stored (a resumed run).
    pub fn new(decider: &'d Decider<'d>, first: Vec<Step>, stored: Vec<CellRecord>) -> Self {
        let mut me = DecidingSteps {
            decider,
            queue: first.into(),
            records: Records::new(),
            round: 0,
            handed: 0,
        };
        for r in &stored {
            me.keep(r);
        }
        me
    }

    /// Keeps a record of a compared cell, as judging needs it.
    fn keep(&mut self, rec: &CellRecord) {
        let cell = rec.params.cell_id;
        if !self.decider.compares(cell) {
            return;
        }
        let jobs = self.decider.until.metrics.iter().any(|m| m.needs_periodic());
        let mut r = CellRecord { raw_trace: None, ..rec.clone() };
        for s in r.samples.iter_mut().filter(|_| !jobs) {
            s.jobs = None;
        }
        self.records.entry(cell).or_default().push(r);
    }

    /// Judges what is stored and queues the next round, if any pair needs one.
    fn next_round(&mut self) {
        let (v, of_row) = self.decider.judge(&self.records);
        let more = self.decider.more(&v, &of_row, &self.records);
        if !more.is_empty() {
            self.round += 1;
            self.queue = self.decider.plan.round(self.round, &more).into();
        }
    }

    /// The decision on every record so far.
    pub fn decision(&self) -> Decision {
        self.decider.decision(&self.records)
    }
}

impl StepSource for DecidingSteps<'_> {
    fn next_step(&mut self) -> Option<Step> {
        if self.queue.is_empty() {
            self.next_round();
        }
        let s = self.queue.pop_front();
        self.handed += s.is_some() as usize;
        s
    }

    fn finished(&mut self, rec: &CellRecord) {
        self.keep(rec);
    }

    fn planned(&self) -> usize {
        self.handed + self.queue.len()
    }
}

/// Calls `run` with the run's steps: a deciding run's rounds when `decider` is given, else
/// as [`schedlab_runner::adaptive::with_source`] gives them (`keep` stores each adaptive
/// cell's outcome). Returns what `run` returned, a message for each outcome `keep` refused,
/// and the decision.
pub fn with_source<T, E: std::fmt::Display>(
    decider: Option<&Decider>,
    (plan, cells): (&Plan, &[u32]),
    steps: Vec<Step>,
    stored: Vec<CellRecord>,
    keep: impl FnMut(u32, &schedlab_model::RepetitionOutcome) -> Result<(), E>,
    run: impl FnOnce(&mut dyn StepSource) -> T,
) -> (T, Vec<String>, Option<Decision>) {
    let Some(decider) = decider else {
        let (t, refused) =
            schedlab_runner::adaptive::with_source(plan, cells, steps, stored, keep, run);
        return (t, refused, None);
    };
    let mut source = DecidingSteps::new(decider, steps, stored);
    let t = run(&mut source);
    (t, Vec::new(), Some(source.decision()))
}
