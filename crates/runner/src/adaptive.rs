//! Adaptive repetitions in `schedlab run`: the steps of a run whose cells repeat until
//! their main figure is precise enough. Every cell first runs its `min` repetitions (the
//! plan's steps, warm-ups and order as for fixed repetitions); then, round after round, each
//! cell that still needs one gets one more, in the plan's order. Whether a cell needs one is
//! `schedlab_analysis::judge` over its stored records alone, so a resumed run (or a shard of
//! cells) continues each cell from what the database holds.

use crate::steps::{FixedSteps, StepSource};
use schedlab_analysis::judge;
use schedlab_model::{AdaptiveTarget, CellRecord, RepetitionOutcome};
use schedlab_plan::{Plan, Step};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Called once a cell stops repeating, with how it ended.
pub type OnOutcome<'a> = Box<dyn FnMut(u32, &RepetitionOutcome) + 'a>;

/// The steps of an adaptive run, decided round by round from the records.
pub struct AdaptiveSteps<'a> {
    plan: &'a Plan,
    target: AdaptiveTarget,
    /// Steps of the current round not yet handed out, in order.
    queue: VecDeque<Step>,
    /// The records of each cell this run repeats (per-job records and kept captures left
    /// out: the figures do not need them).
    records: BTreeMap<u32, Vec<CellRecord>>,
    /// Cells that stopped repeating.
    decided: BTreeSet<u32>,
    /// Rounds started after the first steps.
    round: u32,
    handed: usize,
    on_outcome: OnOutcome<'a>,
}

/// A record as the decision needs it: without per-job records and kept captures.
fn lean(rec: &CellRecord) -> CellRecord {
    let mut r = CellRecord { raw_trace: None, ..rec.clone() };
    for s in &mut r.samples {
        s.jobs = None;
    }
    r
}

impl<'a> AdaptiveSteps<'a> {
    /// The run of `cells` under `target`: `first` are the plan's steps (each cell's `min`
    /// repetitions and warm-ups) not yet stored, `stored` the records already stored (a
    /// resumed run). Cells that already stopped are reported to `on_outcome` again (the
    /// run may have been stopped between a record and its outcome).
    pub fn new(
        plan: &'a Plan,
        target: AdaptiveTarget,
        cells: &[u32],
        first: Vec<Step>,
        stored: Vec<CellRecord>,
        on_outcome: OnOutcome<'a>,
    ) -> Self {
        let mut records: BTreeMap<u32, Vec<CellRecord>> =
            cells.iter().map(|c| (*c, Vec::new())).collect();
        for r in &stored {
            if let Some(v) = records.get_mut(&r.params.cell_id) {
                v.push(lean(r));
            }
        }
        let queue: VecDeque<Step> =
            first.into_iter().filter(|s| records.contains_key(&s.cell)).collect();
        let mut me = AdaptiveSteps {
            plan,
            target,
            queue,
            records,
            decided: BTreeSet::new(),
            round: 0,
            handed: 0,
            on_outcome,
        };
        let waiting: BTreeSet<u32> = me.queue.iter().map(|s| s.cell).collect();
        for cell in cells.iter().filter(|c| !waiting.contains(c)) {
            me.decide(*cell);
        }
        me
    }

    /// Judges `cell` from its records; records its outcome if it stops. True if it repeats.
    fn decide(&mut self, cell: u32) -> bool {
        if self.decided.contains(&cell) {
            return false;
        }
        let j = judge(&self.records[&cell], &self.target);
        match j.outcome(&self.target) {
            None => true,
            Some(o) => {
                self.decided.insert(cell);
                (self.on_outcome)(cell, &o);
                false
            }
        }
    }

    /// The next round: one more repetition of every cell that needs one.
    fn next_round(&mut self) {
        let cells: Vec<u32> = self.records.keys().copied().collect();
        let mut more = Vec::new();
        for cell in cells {
            if self.decide(cell) {
                let next = self.records[&cell]
                    .iter()
                    .filter(|r| !r.warmup)
                    .map(|r| r.rep + 1)
                    .max()
                    .unwrap_or(0);
                more.push((cell, next));
            }
        }
        if !more.is_empty() {
            self.round += 1;
            self.queue = self.plan.round(self.round, &more).into();
        }
    }
}

impl StepSource for AdaptiveSteps<'_> {
    fn next_step(&mut self) -> Option<Step> {
        if self.queue.is_empty() {
            self.next_round();
        }
        let s = self.queue.pop_front();
        self.handed += s.is_some() as usize;
        s
    }

    fn finished(&mut self, rec: &CellRecord) {
        let cell = rec.params.cell_id;
        let Some(v) = self.records.get_mut(&cell) else { return };
        v.push(lean(rec));
        // A cell is judged once its queued repetitions ran, so its outcome is stored as
        // soon as it stops, not at the end of the round.
        if !rec.warmup && !self.queue.iter().any(|s| s.cell == cell) {
            self.decide(cell);
        }
    }

    fn planned(&self) -> usize {
        self.handed + self.queue.len()
    }

    fn may_trace(&self, plan: &Plan) -> bool {
        self.records.keys().any(|c| plan.traced(&plan.cells[*c as usize]))
    }
}

/// Calls `run` with the run's steps: `steps` as they are under fixed repetitions; else an
/// [`AdaptiveSteps`] over `cells` (every cell, or a shard's), starting from `steps` and the
/// records `stored` (a resumed run), each cell's outcome handed to `keep` (which stores it).
/// Returns what `run` returned and a message for each outcome `keep` refused (a resumed run
/// decides those again).
pub fn with_source<T, E: std::fmt::Display>(
    plan: &Plan,
    cells: &[u32],
    steps: Vec<Step>,
    stored: Vec<CellRecord>,
    mut keep: impl FnMut(u32, &RepetitionOutcome) -> Result<(), E>,
    run: impl FnOnce(&mut dyn StepSource) -> T,
) -> (T, Vec<String>) {
    let Some(target) = plan.adaptive else {
        return (run(&mut FixedSteps::new(&steps)), Vec::new());
    };
    let refused = RefCell::new(Vec::new());
    let on_outcome = |cell: u32, o: &RepetitionOutcome| {
        if let Err(e) = keep(cell, o) {
            let key = &plan.cells[cell as usize].key;
            refused.borrow_mut().push(format!("cell {key}: its repetitions' outcome could not be stored ({e}); `--resume` stores it"));
        }
    };
    let result =
        run(&mut AdaptiveSteps::new(plan, target, cells, steps, stored, Box::new(on_outcome)));
    (result, refused.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_model::{CellParams, Sample};
    use schedlab_plan::{Cell, Order};
    use std::time::Duration;

    const TARGET: AdaptiveTarget = AdaptiveTarget { min: 3, max: 6, ci_pct: 5.0 };

    /// Three cells of pi (1, 2 and 3 processes) repeated under [`TARGET`] after a warm-up.
    fn plan(order: Order) -> Plan {
        let cell = |index: u32| {
            let group = crate::run_tests::group("main", index + 1, false);
            Cell {
                index,
                key: format!("pi/other/n{}", index + 1),
                groups: vec![group],
                io: None,
                knobs: Default::default(),
                cpu_scheduler: None,
            }
        };
        Plan {
            name: "a".into(),
            description: None,
            source_path: "a.toml".into(),
            repetitions: TARGET.min,
            adaptive: Some(TARGET),
            warmup: 1,
            order,
            seed: 7,
            timeout: Duration::from_secs(60),
            dir: None,
            scale: 1.0,
            device: None,
            cells: (0..3).map(cell).collect(),
            cpu_dma_latency: Default::default(),
            trace: Default::default(),
            knobs: Default::default(),
            allow_rt_unthrottled: false,
        }
    }

    /// The record of `step`: cell 1 alternates 1 and 2 s, the others take 1 s (and a
    /// millisecond more each repetition).
    fn record(step: &Step) -> CellRecord {
        let wall = match step.cell {
            1 => 1.0 + (step.rep % 2) as f64,
            _ => 1.0 + 0.001 * step.rep as f64,
        };
        let params = CellParams {
            cell_id: step.cell,
            key: format!("c{}", step.cell),
            processes: 1,
            ..Default::default()
        };
        let samples = vec![Sample { wall_s: wall, ..Default::default() }];
        CellRecord {
            params,
            rep: step.rep,
            warmup: step.warmup,
            makespan_s: wall,
            samples,
            ..Default::default()
        }
    }

    /// Runs `source` to its end as the engine would; returns the steps in order.
    fn drive(source: &mut AdaptiveSteps, stop_after: Option<usize>) -> Vec<Step> {
        let mut out = Vec::new();
        while let Some(s) = source.next_step() {
            assert!(source.planned() > out.len(), "the step handed out is planned");
            source.finished(&record(&s));
            out.push(s);
            if Some(out.len()) == stop_after {
                break;
            }
        }
        out
    }

    /// [`drive`]s a source of every cell of `plan` with nothing stored.
    fn drive_fresh(plan: &Plan, stop_after: Option<usize>) -> Vec<Step> {
        let nothing = Box::new(|_, _: &_| {});
        let mut src = AdaptiveSteps::new(plan, TARGET, &[0, 1, 2], plan.steps(), vec![], nothing);
        drive(&mut src, stop_after)
    }

    #[test]
    fn stable_cells_stop_at_min_and_a_noisy_one_goes_on_to_max_one_round_at_a_time() {
        let plan = plan(Order::Sequential);
        let outcomes = RefCell::new(Vec::new());
        let mut src = AdaptiveSteps::new(
            &plan,
            TARGET,
            &[0, 1, 2],
            plan.steps(),
            Vec::new(),
            Box::new(|c, o| outcomes.borrow_mut().push((c, o.clone()))),
        );
        let steps = drive(&mut src, None);
        let first = plan.steps();
        assert_eq!(
            steps[..first.len()],
            first[..],
            "the plan's steps, warm-ups included, come first"
        );
        let later: Vec<(u32, u32, bool)> =
            steps[first.len()..].iter().map(|s| (s.cell, s.rep, s.warmup)).collect();
        assert_eq!(
            later,
            [(1, 3, false), (1, 4, false), (1, 5, false)],
            "only the noisy cell repeats, one per round"
        );
        drop(src);
        let o = outcomes.into_inner();
        let by_cell: BTreeMap<u32, &RepetitionOutcome> = o.iter().map(|(c, o)| (*c, o)).collect();
        assert_eq!(o.len(), 3, "one outcome per cell: {o:?}");
        assert!(by_cell[&0].reached && by_cell[&0].repetitions == 3);
        assert!(!by_cell[&1].reached && by_cell[&1].repetitions == 6);
    }

    #[test]
    fn a_resumed_run_continues_each_cell_from_its_stored_records() {
        let plan = plan(Order::Random);
        let whole = drive_fresh(&plan, None);
        for cut in [2, 7, whole.len() - 2] {
            let stored: Vec<CellRecord> =
                drive_fresh(&plan, Some(cut)).iter().map(record).collect();
            let done: BTreeSet<(u32, u32, bool)> =
                stored.iter().map(|r| (r.params.cell_id, r.rep, r.warmup)).collect();
            let left: Vec<Step> = plan
                .steps()
                .into_iter()
                .filter(|s| !done.contains(&(s.cell, s.rep, s.warmup)))
                .collect();
            let outcomes = RefCell::new(0);
            let mut src = AdaptiveSteps::new(
                &plan,
                TARGET,
                &[0, 1, 2],
                left,
                stored.clone(),
                Box::new(|_, _| *outcomes.borrow_mut() += 1),
            );
            let rest = drive(&mut src, None);
            drop(src);
            let mut all: Vec<(u32, u32, bool)> = done
                .iter()
                .copied()
                .chain(rest.iter().map(|s| (s.cell, s.rep, s.warmup)))
                .collect();
            let mut want: Vec<(u32, u32, bool)> =
                whole.iter().map(|s| (s.cell, s.rep, s.warmup)).collect();
            all.sort();
            want.sort();
            assert_eq!(all, want, "cut after {cut}: the same steps in all, none twice");
            assert_eq!(
                outcomes.into_inner(),
                3,
                "every cell's outcome, those decided before the cut again"
            );
        }
    }

    #[test]
    fn a_shard_repeats_only_its_own_cells() {
        let plan = plan(Order::Sequential);
        let mut src =
            AdaptiveSteps::new(&plan, TARGET, &[1], plan.steps(), Vec::new(), Box::new(|_, _| {}));
        let steps = drive(&mut src, None);
        assert!(steps.iter().all(|s| s.cell == 1));
        assert_eq!(steps.iter().filter(|s| !s.warmup).count(), 6);
    }
}
