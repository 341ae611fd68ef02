//! A stand-in for the engine that yields fixed, made-up records without spawning anything,
//! so the step loop, the store, analysis and reports can be tested without root or time
//! (hyperfine's mock executor is the model).

use crate::engine::{CellCtx, CellOutcome};
use crate::Executor;
use schedlab_model::{CellRecord, Extra, Sample};
use schedlab_plan::{Cell, Step};
use std::cell::RefCell;
use std::rc::Rc;

/// Yields [`MockExecutor::record`] for every step; scripted stops and failures on request.
#[derive(Debug, Default)]
pub struct MockExecutor {
    /// The steps it was asked to run, in order.
    pub ran: Vec<Step>,
    /// `run <cell>/<w|r><rep>` per step it ran, shared with whoever else writes to it (a
    /// sink, an observer), to check what happened in which order.
    pub trace: Rc<RefCell<Vec<String>>>,
    /// A stop signal that appears pending once this many steps ran.
    stop_after: Option<(usize, i32)>,
    /// The step with this ordinal is stopped part-way by this signal.
    interrupt_at: Option<(u32, i32)>,
    /// Steps (by ordinal) whose worker 0 exits with status 1.
    failing: Vec<u32>,
    /// Multiplies every time of a step's record (per-cell values).
    scale: Option<fn(&Cell, &Step) -> f64>,
}

impl MockExecutor {
    /// A mock whose every step ends well.
    pub fn new() -> MockExecutor {
        MockExecutor::default()
    }

    /// A stop signal `sig` is pending between steps once `steps` steps ran.
    pub fn stop_after(mut self, steps: usize, sig: i32) -> MockExecutor {
        self.stop_after = Some((steps, sig));
        self
    }

    /// The step with this ordinal is interrupted by `sig` while it runs.
    pub fn interrupt_at(mut self, ordinal: u32, sig: i32) -> MockExecutor {
        self.interrupt_at = Some((ordinal, sig));
        self
    }

    /// In the step with this ordinal, worker 0 exits with status 1.
    pub fn failing(mut self, ordinal: u32) -> MockExecutor {
        self.failing.push(ordinal);
        self
    }

    /// Every time in the record of a step (each worker's wall time, the makespan) is
    /// multiplied by `factor(cell, step)`: values per cell and repetition.
    pub fn scaled(mut self, factor: fn(&Cell, &Step) -> f64) -> MockExecutor {
        self.scale = Some(factor);
        self
    }

    /// The record the mock yields for `step` of `cell`: worker `i` (pid 10000 + i) ran
    /// 1 + i/2 s of wall time on 0.75 s user and 0.25 s system CPU with 10 + i voluntary
    /// and 2i involuntary switches and 1 work unit; it exited 0, or 1 when `fail` and i = 0.
    /// Judged by the engine's own rules ([`crate::verdict::judge`]).
    pub fn record(cell: &Cell, step: &Step, ordinal: u32, fail: bool) -> CellRecord {
        let mut samples = Vec::new();
        for g in &cell.groups {
            for _ in 0..g.processes {
                let i = samples.len() as u32;
                let wall = 1.0 + 0.5 * i as f64;
                samples.push(Sample {
                    index: i,
                    group: g.name.clone(),
                    background: g.background,
                    pid: 10_000 + i as i32,
                    exit_code: Some(if fail && i == 0 { 1 } else { 0 }),
                    wall_s: wall,
                    engine_wall_s: wall,
                    user_s: 0.75,
                    sys_s: 0.25,
                    cpu_pct: 100.0 / wall,
                    voluntary_csw: 10 + i as i64,
                    involuntary_csw: 2 * i as i64,
                    window_cpu_s: 1.0,
                    work_units: 1.0,
                    end_offset_s: wall,
                    extra: Extra {
                        policy: Some(g.policy.class.name().into()),
                        nice: Some(g.policy.nice),
                        cpu: Some(0),
                        ..Default::default()
                    },
                    ..Sample::default()
                });
            }
        }
        let verdict = crate::verdict::judge(&samples, &crate::verdict::Cut::None);
        let makespan_s =
            samples.iter().filter(|s| !s.background).map(|s| s.wall_s).fold(0.0, f64::max);
        CellRecord {
            started_unix: 1_700_000_000.0 + ordinal as f64,
            makespan_s,
            samples,
            ..crate::engine::judged(cell, step, ordinal, verdict)
        }
    }
}

impl Executor for MockExecutor {
    fn run_cell(
        &mut self,
        cx: &mut CellCtx,
        cell: &Cell,
        step: &Step,
        ordinal: u32,
    ) -> std::io::Result<CellOutcome> {
        self.ran.push(*step);
        self.trace.borrow_mut().push(format!(
            "run {}/{}{}",
            step.cell,
            if step.warmup { "w" } else { "r" },
            step.rep
        ));
        if let Some((_, sig)) = self.interrupt_at.filter(|(at, _)| *at == ordinal) {
            return Ok(CellOutcome::Interrupted(sig));
        }
        cx.progress.prepared();
        let mut rec = MockExecutor::record(cell, step, ordinal, self.failing.contains(&ordinal));
        if let Some(factor) = self.scale {
            let f = factor(cell, step);
            rec.makespan_s *= f;
            for s in &mut rec.samples {
                s.wall_s *= f;
                s.engine_wall_s *= f;
                s.end_offset_s *= f;
            }
        }
        Ok(CellOutcome::Done(Box::new(rec)))
    }

    fn stopped(&mut self) -> Option<i32> {
        self.stop_after.filter(|(n, _)| self.ran.len() >= *n).map(|(_, sig)| sig)
    }
}
