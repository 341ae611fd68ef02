//! Where the engine takes its steps from: a fixed list, or a source that decides as the
//! records come in (adaptive repetitions).

use schedlab_model::CellRecord;
use schedlab_plan::{Plan, Step};

/// The steps of a run, handed out one at a time.
pub trait StepSource {
    /// The next step to run; None ends the run.
    fn next_step(&mut self) -> Option<Step>;

    /// A step's record, once the sink has taken it.
    fn finished(&mut self, _rec: &CellRecord) {}

    /// Steps handed out so far plus those known to come (grows as a source decides more).
    fn planned(&self) -> usize;

    /// Whether a step of a traced cell may come (the run's tracefs is set up before the first).
    fn may_trace(&self, plan: &Plan) -> bool {
        plan.cells.iter().any(|c| plan.traced(c))
    }
}

/// A fixed list of steps, run in order.
pub struct FixedSteps<'a> {
    steps: &'a [Step],
    next: usize,
}

impl<'a> FixedSteps<'a> {
    /// The steps of `steps`, in order.
    pub fn new(steps: &'a [Step]) -> Self {
        FixedSteps { steps, next: 0 }
    }
}

impl StepSource for FixedSteps<'_> {
    fn next_step(&mut self) -> Option<Step> {
        let s = self.steps.get(self.next).copied();
        self.next += s.is_some() as usize;
        s
    }

    fn planned(&self) -> usize {
        self.steps.len()
    }

    fn may_trace(&self, plan: &Plan) -> bool {
        self.steps.iter().any(|s| plan.traced(&plan.cells[s.cell as usize]))
    }
}
