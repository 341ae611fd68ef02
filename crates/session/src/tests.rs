//! Whole measured runs driven by the mock executor in a temporary database: their status,
//! an interrupt and its resume, shards and the spool. No root and no time.

use super::*;
use crate::preflight::Checked;
use schedlab_model::Environment;
use schedlab_runner::{MockExecutor, Progress};
use schedlab_spec::Step;
use schedlab_store::{RunStatus, Store};
use std::collections::BTreeSet;

/// pi under other, 2 and 3 workers, one warm-up and three repetitions: 8 steps, the warm-up
/// first in each cell.
const SPEC: &str = "name = \"mock\"\nrepetitions = 3\nwarmup = 1\n\
    [matrix]\nworkload = [\"cpu\"]\npolicy = [\"other\"]\nprocesses = [2, 3]\n\
    [workloads.cpu]\nkind = \"pi\"\niterations = 1000\n";

/// A temporary directory with the database, the journal and the experiment's files, and
/// the experiment's text.
pub(crate) struct Lab {
    pub(crate) dir: tempfile::TempDir,
    text: &'static str,
}

impl Lab {
    pub(crate) fn new() -> Lab {
        Lab::of(SPEC)
    }

    /// A lab whose experiment is `text`.
    pub(crate) fn of(text: &'static str) -> Lab {
        Lab { dir: tempfile::tempdir().expect("a temp dir"), text }
    }

    pub(crate) fn session(&self) -> Session {
        Session {
            db: self.dir.path().join("results.db"),
            root: schedlab_sys::Root::default(),
            state_dir: self.dir.path().join("state"),
            resume_command: "schedlab run --resume".into(),
        }
    }

    pub(crate) fn spec(&self) -> schedlab_spec::Spec {
        schedlab_spec::parse_at("mock.toml", self.text, self.dir.path()).expect("the spec parses")
    }

    pub(crate) fn options(&self) -> MeasureOptions {
        MeasureOptions { dir: Some(self.dir.path().join("exp")), ..MeasureOptions::default() }
    }

    /// Runs the spec's steps (`o` says which) with `mock`; what was said goes to `said`.
    pub(crate) fn measure(
        &self,
        o: &MeasureOptions,
        mock: &mut MockExecutor,
        said: &mut Said,
    ) -> Result<Measured, Error> {
        let session = self.session();
        let env = Environment { cpus: 2, kernel: "6.1.0-mock".into(), ..Default::default() };
        let p = session.prepare_checked(self.spec(), o, |_| Ok(Checked::assumed(env)))?;
        session.measure(p, o, mock, said)
    }
}

/// Everything the session said, by kind.
#[derive(Default)]
pub(crate) struct Said {
    pub(crate) notes: Vec<String>,
    pub(crate) details: Vec<String>,
    pub(crate) warnings: Vec<String>,
    begun: Option<usize>,
    ended: bool,
}

impl Progress for Said {
    fn warn(&mut self, msg: &str) {
        self.warnings.push(msg.to_string());
    }
}

impl Observer for Said {
    fn note(&mut self, line: &str) {
        self.notes.push(line.to_string());
    }
    fn begin(&mut self, steps: usize) {
        self.begun = Some(steps);
    }
    fn detail(&mut self, line: &str) {
        self.details.push(line.to_string());
    }
    fn end(&mut self) {
        self.ended = true;
    }
}

fn stored_status(lab: &Lab, id: i64) -> String {
    let store = Store::open(&lab.session().db).unwrap();
    store.run(id).unwrap().expect("the run is stored").status.to_string()
}

#[test]
fn a_run_whose_every_step_ends_well_is_complete() {
    let lab = Lab::new();
    let mut said = Said::default();
    let mut mock = MockExecutor::new();
    let m = lab.measure(&lab.options(), &mut mock, &mut said).unwrap();
    assert_eq!(mock.ran.len(), 8);
    let Ended::Complete { status, failed, measured, summary } = m.ended else {
        panic!("the run should be complete")
    };
    assert_eq!((status, failed, measured), (RunStatus::Complete, 0, 6));
    assert_eq!(stored_status(&lab, m.run_id), "complete");
    assert_eq!((said.begun, said.ended), (Some(8), true));
    let line = summary.to_string();
    assert!(
        line.starts_with(&format!(
            "run {} complete: 2 cells, 6 measured cell repetitions in 0:0",
            m.run_id
        )),
        "{line}"
    );
    assert!(line.ends_with(&format!("; tables: schedlab show {}", m.run_id)), "{line}");
    assert!(said.details[0]
        .starts_with(&format!("run {}: mock (2 cells x 3 repetitions, 8 steps)", m.run_id)));
}

#[test]
fn failed_repetitions_make_a_run_complete_with_failures() {
    let lab = Lab::new();
    // Ordinal 1 is cell 0's first measured repetition; ordinal 0 its warm-up.
    let mut mock = MockExecutor::new().failing(1).failing(5);
    let m = lab.measure(&lab.options(), &mut mock, &mut Said::default()).unwrap();
    let Ended::Complete { status, failed, measured, summary } = m.ended else {
        panic!("the run should be complete")
    };
    assert_eq!((status, failed, measured), (RunStatus::CompleteWithFailures, 2, 6));
    assert_eq!(stored_status(&lab, m.run_id), "complete with failures");
    assert!(summary.to_string().contains(" (2 FAILED) in "), "{summary}");
}

#[test]
fn an_interrupt_stops_the_run_between_steps_and_keeps_what_finished() {
    let lab = Lab::new();
    let mut mock = MockExecutor::new().stop_after(3, 2);
    let m = lab.measure(&lab.options(), &mut mock, &mut Said::default()).unwrap();
    assert_eq!(mock.ran.len(), 3);
    assert!(matches!(m.ended, Ended::Interrupted { signal: 2, stored: 3 }));
    assert_eq!(stored_status(&lab, m.run_id), "interrupted");
}

/// The steps as (cell, rep, warm-up), to compare sets of them.
fn keys(steps: &[Step]) -> BTreeSet<(u32, u32, bool)> {
    steps.iter().map(|s| (s.cell, s.rep, s.warmup)).collect()
}

#[test]
fn a_resumed_run_runs_only_the_steps_it_had_left() {
    let lab = Lab::new();
    let mut first = MockExecutor::new().stop_after(3, 15);
    let id = lab.measure(&lab.options(), &mut first, &mut Said::default()).unwrap().run_id;
    let resume = MeasureOptions { resume: true, ..lab.options() };
    let mut said = Said::default();
    let mut rest = MockExecutor::new();
    let m = lab.measure(&resume, &mut rest, &mut said).unwrap();
    assert_eq!(m.run_id, id, "the same run goes on");
    assert_eq!(rest.ran.len(), 5, "8 steps less the 3 stored");
    let all = keys(&lab.spec().plan.steps());
    let ran: BTreeSet<_> = keys(&first.ran).union(&keys(&rest.ran)).copied().collect();
    assert!(keys(&first.ran).is_disjoint(&keys(&rest.ran)), "no step runs twice");
    assert_eq!(ran, all, "together they ran every step");
    assert_eq!(
        said.notes,
        [format!("resuming run {id} (scale 1, 3 repetitions): 3 of 8 cell repetitions already stored, 5 to go")]
    );
    let Ended::Complete { status, summary, .. } = m.ended else { panic!("complete") };
    assert_eq!(status, RunStatus::Complete);
    assert_eq!(summary.before, Some(2), "cell 0's warm-up is no measured repetition");
    assert!(
        summary
            .to_string()
            .contains("ran 4 measured cell repetitions (6 in the run, 2 from before)"),
        "{summary}"
    );
}

#[test]
fn resuming_with_another_scale_is_refused() {
    let lab = Lab::new();
    let mut mock = MockExecutor::new().stop_after(1, 2);
    lab.measure(&lab.options(), &mut mock, &mut Said::default()).unwrap();
    let resume = MeasureOptions { resume: true, scale: Some(2.0), ..lab.options() };
    let err = lab.measure(&resume, &mut MockExecutor::new(), &mut Said::default()).err().unwrap();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("was made at scale 1, not 2"), "{err}");
}

#[test]
fn nothing_to_resume_is_refused() {
    let lab = Lab::new();
    lab.measure(&lab.options(), &mut MockExecutor::new(), &mut Said::default()).unwrap();
    let resume = MeasureOptions { resume: true, ..lab.options() };
    let err = lab.measure(&resume, &mut MockExecutor::new(), &mut Said::default()).err().unwrap();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().starts_with("nothing to resume: no unfinished run"), "{err}");
}

#[test]
fn two_shards_cover_the_plan_disjointly() {
    let lab = Lab::new();
    let mut ran = Vec::new();
    for index in 0..2 {
        let shard = schedlab_spec::ShardSpec { index, count: 2 };
        let o = MeasureOptions { shard: Some(shard), ..lab.options() };
        let mut mock = MockExecutor::new();
        let mut said = Said::default();
        let m = lab.measure(&o, &mut mock, &mut said).unwrap();
        assert!(matches!(m.ended, Ended::Complete { .. }));
        let campaign = m.store.run(m.run_id).unwrap().unwrap().identity.campaign.unwrap();
        assert!(
            said.details
                .iter()
                .any(|l| l.starts_with(&format!("shard {index}/2 of campaign {campaign}: "))),
            "{:?}",
            said.details
        );
        assert!(!mock.ran.is_empty(), "shard {index} runs something");
        ran.push(keys(&mock.ran));
    }
    assert!(ran[0].is_disjoint(&ran[1]), "no step in both shards");
    let all: BTreeSet<_> = ran[0].union(&ran[1]).copied().collect();
    assert_eq!(all, keys(&lab.spec().plan.steps()));
}

#[test]
fn a_resumed_run_imports_its_spool_first_and_removes_it() {
    let lab = Lab::new();
    let mut first = MockExecutor::new().stop_after(2, 2);
    let id = lab.measure(&lab.options(), &mut first, &mut Said::default()).unwrap().run_id;
    // Steps 2 and 3 finished, but the database refused them: they wait in the spool.
    let plan = lab.spec().plan;
    let steps = plan.steps();
    let spool = schedlab_store::spool::path(&lab.session().db, id);
    for (ordinal, step) in steps.iter().enumerate().skip(2).take(2) {
        let rec =
            MockExecutor::record(&plan.cells[step.cell as usize], step, ordinal as u32, false);
        schedlab_store::spool::append(&spool, id, &rec).unwrap();
    }
    let resume = MeasureOptions { resume: true, ..lab.options() };
    let mut said = Said::default();
    let mut rest = MockExecutor::new();
    let m = lab.measure(&resume, &mut rest, &mut said).unwrap();
    assert!(!spool.exists(), "the spool is removed once imported");
    assert_eq!(
        said.notes[0],
        format!("imported 2 cell repetitions of run {id} from {}", spool.display())
    );
    assert!(
        said.notes[1].contains("4 of 8 cell repetitions already stored, 4 to go"),
        "{:?}",
        said.notes
    );
    assert_eq!(keys(&rest.ran), keys(&steps[4..]), "the imported steps are not run again");
    assert!(matches!(m.ended, Ended::Complete { status: RunStatus::Complete, measured: 6, .. }));
}

#[test]
fn the_built_in_experiment_loads_and_a_missing_file_is_refused() {
    let builtin = load_spec(None, Some(0.5), Some(Repetitions::Count(2))).unwrap();
    assert_eq!((builtin.plan.scale, builtin.plan.repetitions), (0.5, 2));
    let err =
        load_spec(Some(std::path::Path::new("/nonexistent/x.toml")), None, None).err().unwrap();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().starts_with("cannot read /nonexistent/x.toml: "), "{err}");
}

#[test]
fn a_deadline_set_over_the_cpus_rt_share_is_warned_of() {
    let lab = Lab::new();
    let text = "name = \"dl\"\n[matrix]\nworkload = [\"set\"]\nscheduler = [\"deadline\"]\n\
        [workloads.set]\nkind = \"periodic\"\nduration_s = 0.5\n\
        tasks = [{ c_ms = 9, t_ms = 10 }, { c_ms = 9, t_ms = 10 }, { c_ms = 9, t_ms = 10 }]\n";
    let plan = schedlab_spec::parse_at("dl.toml", text, lab.dir.path()).unwrap().plan;
    let warned = |cpus| {
        notes::feasibility_lines(&plan, cpus)
            .into_iter()
            .filter(|(l, warning)| *warning && l.contains("SCHED_DEADLINE admission"))
            .map(|(l, _)| l)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        warned(2),
        ["task set set: SCHED_DEADLINE admission will refuse it: sum of runtime/period 2.700 exceeds 1.90 (2 CPUs x 95%)"]
    );
    assert!(warned(3).is_empty(), "2.7 fits in 3 x 0.95");
}

#[test]
fn a_resumed_simulation_simulates_and_stores_only_what_it_lacked() {
    use schedlab_model::Mode;
    use simulate::{ModelFlags, SimEnded, Simulation};
    let lab = Lab::new();
    let session = lab.session();
    let env = Environment { cpus: 2, ..Default::default() };
    let spec = lab.spec();
    let flags = ModelFlags { ns_per_iteration: Some(1000.0), ..ModelFlags::default() };
    let p = flags.params(&session.db, &spec.plan, &env, None, &mut Vec::new()).unwrap();
    // An interrupted simulated run: its first 3 records stored, the run left unfinished.
    let mut store = db::open(&session.db).unwrap();
    let id = db::create_run(&store, &spec, Mode::Sim, &env).unwrap();
    let mut records = Vec::new();
    schedlab_simrun::simulate_plan_with(&spec.plan, &p, None, None, |r| {
        records.push(r);
        Ok::<_, Error>(())
    })
    .unwrap();
    for r in &records[..3] {
        store.insert_cell(id, r).unwrap();
    }
    drop(store);
    let mut spec = lab.spec();
    let resumed = session.resume_simulated(&mut spec).unwrap();
    let s = Simulation {
        spec: &spec,
        resumed: Some(resumed),
        environment: &env,
        params: &p,
        demands: None,
        chart: None,
        warnings: Vec::new(),
        threads: Some(1),
    };
    let mut said = Said::default();
    let done = session.simulate(s, &mut said).unwrap();
    assert_eq!(done.run_id, id);
    assert!(matches!(done.ended, SimEnded::Complete(None)));
    assert_eq!(done.store.done_steps(id).unwrap().len(), 8, "the 5 it lacked, once each");
    assert_eq!(stored_status(&lab, id), "complete");
    assert!(
        said.details[0].starts_with(&format!("run {id}: simulating mock")),
        "{:?}",
        said.details
    );
    let err = session.resume_simulated(&mut lab.spec()).err().unwrap();
    assert!(err.to_string().starts_with("nothing to resume: no unfinished simulated run"), "{err}");
}

#[test]
fn calibrated_simulation_costs_come_from_the_newest_or_the_named_calibration() {
    use crate::calibrate::{Calibration, Overhead};
    use simulate::ModelFlags;
    let (lab, env) = (Lab::new(), Environment { cpus: 2, ..Default::default() });
    let (session, spec) = (lab.session(), lab.spec());
    let flags =
        ModelFlags { calibrated: Some(None), ns_per_iteration: Some(1e3), ..ModelFlags::default() };
    let params =
        |flags: &ModelFlags| flags.params(&session.db, &spec.plan, &env, None, &mut Vec::new());
    let err = params(&flags).unwrap_err().to_string();
    assert!(err.contains("has no calibration: run `schedlab calibrate` first"), "{err}");
    let figure = |name: &str, p99_ns: u64| Overhead {
        name: name.into(),
        what: String::new(),
        ns: schedlab_periodic::LatencyPercentiles { p99_ns, ..Default::default() },
    };
    let calibration = |switch: u64| Calibration {
        created_unix: 0.0,
        cpu: 1,
        overheads: vec![
            figure("release_latency", 37_000),
            figure("context_switch", switch),
            figure("release", 15_000),
            figure("tick", 21_000),
        ],
        tick_period_ns: Some(810_000),
        interrupts: None,
        rt_share: None,
        fair_server: None,
        run_id: None,
        percentile: 99.0,
        notes: Vec::new(),
        environment: None,
    };
    let store = db::open(&session.db).unwrap();
    for switch in [2_700, 3_100] {
        let json = serde_json::to_string(&calibration(switch)).unwrap();
        store.add_calibration(0.0, "{}", &json, None).unwrap();
    }
    let p = params(&flags).unwrap();
    assert_eq!(p.calibration, Some(2));
    assert_eq!(p.switch_cost_ns, 3_100);
    assert_eq!((p.release_latency_ns, p.release_irq_ns), (37_000, 15_000));
    assert_eq!((p.tick_ns, p.tick_period_ns), (21_000, 810_000));
    let first =
        ModelFlags { calibrated: Some(Some(1)), switch_cost_us: Some(1.0), ..flags.clone() };
    let p = params(&first).unwrap();
    assert_eq!((p.calibration, p.switch_cost_ns, p.tick_ns), (Some(1), 1_000, 21_000));
    let err = params(&ModelFlags { calibrated: Some(Some(9)), ..flags }).unwrap_err();
    assert!(err.to_string().contains("has no calibration 9"), "{err}");
}
