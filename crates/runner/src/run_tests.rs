//! The step loop of [`crate::Run`], driven by the [`MockExecutor`]: no root, no time.

use super::*;
use schedlab_plan::{Group, Order};
use std::cell::RefCell;
use std::rc::Rc;

/// A group of `processes` pi workers under SCHED_OTHER.
pub(crate) fn group(name: &str, processes: u32, background: bool) -> Group {
    Group { background, ..Group::new(name, "pi", Workload::Pi { iterations: 1000 }, processes) }
}

/// Two cells (the second with a background group), two repetitions and one warm-up each.
fn plan(dir: &Path) -> Plan {
    Plan {
        name: "mock".into(),
        description: None,
        source_path: "mock.toml".into(),
        repetitions: 2,
        adaptive: None,
        warmup: 1,
        order: Order::Sequential,
        seed: 7,
        timeout: Duration::from_secs(60),
        dir: Some(dir.to_path_buf()),
        scale: 1.0,
        device: None,
        cells: vec![
            Cell {
                index: 0,
                key: "pi/other/n2".into(),
                groups: vec![group("main", 2, false)],
                io: None,
                knobs: Default::default(),
                cpu_scheduler: None,
            },
            Cell {
                index: 1,
                key: "pi/other/n1+bg".into(),
                groups: vec![group("main", 1, false), group("bg", 1, true)],
                io: None,
                knobs: Default::default(),
                cpu_scheduler: None,
            },
        ],
        cpu_dma_latency: Default::default(),
        trace: Default::default(),
        knobs: Default::default(),
        allow_rt_unthrottled: false,
    }
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-runner-mock-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn opts() -> Options {
    Options { engine_rt: false, tag: "t".into(), ..Options::default() }
}

/// Every step of `plan`, set up, run and undone by one [`Run`].
fn run_steps(
    executor: &mut dyn Executor,
    plan: &Plan,
    opts: Options,
    journal: &mut Journal,
    observer: &mut dyn Progress,
    sink: &mut dyn FnMut(&CellRecord) -> Result<(), SinkError>,
) -> Result<Ending, RunError> {
    let steps = plan.steps();
    let mut source = FixedSteps::new(&steps);
    let mut run = Run::start(plan, &mut source, opts, journal, observer)?;
    run.run(executor, sink)
}

/// Notes step starts, releases and ends in the shared trace.
struct Tracer(Rc<RefCell<Vec<String>>>);

impl Progress for Tracer {
    fn step_started(&mut self, _plan: &Plan, step: &Step, done: usize, total: usize) {
        self.0.borrow_mut().push(format!("start {done}/{total} {}", step.cell));
    }
    fn prepared(&mut self) {
        self.0.borrow_mut().push("prepared".into());
    }
    fn step_finished(&mut self, rec: &CellRecord) {
        self.0.borrow_mut().push(format!("finished {}", rec.ordinal));
    }
}

/// Runs `plan`'s steps with `mock`, storing records unless `sink_fails_at` is reached.
fn run_mock(
    tag: &str,
    mock: &mut MockExecutor,
    sink_fails_at: Option<usize>,
) -> (Result<Ending, RunError>, Vec<CellRecord>, PathBuf) {
    let d = scratch(tag);
    let plan = plan(&d.join("exp"));
    let mut journal = Journal::create(&d.join("state")).unwrap();
    let trace = Rc::clone(&mock.trace);
    let mut observer = Tracer(Rc::clone(&trace));
    let mut stored = Vec::new();
    let mut sink = |rec: &CellRecord| -> Result<(), SinkError> {
        if Some(stored.len()) == sink_fails_at {
            return Err("disk full".into());
        }
        trace.borrow_mut().push(format!("sink {}", rec.ordinal));
        stored.push(rec.clone());
        Ok(())
    };
    let ending = run_steps(mock, &plan, opts(), &mut journal, &mut observer, &mut sink);
    assert!(journal.close().is_empty());
    (ending, stored, d)
}

#[test]
fn every_step_runs_once_in_plan_order_with_warm_ups_flagged() {
    let mut mock = MockExecutor::new();
    let (ending, stored, d) = run_mock("order", &mut mock, None);
    assert_eq!(ending.unwrap(), Ending::Complete);
    let steps = plan(&d).steps();
    assert_eq!(steps.len(), 6);
    assert_eq!(mock.ran, steps, "every step once, in plan order");
    let seen: Vec<(u32, u32, bool, u32)> =
        stored.iter().map(|r| (r.params.cell_id, r.rep, r.warmup, r.ordinal)).collect();
    let want: Vec<(u32, u32, bool, u32)> =
        steps.iter().enumerate().map(|(i, s)| (s.cell, s.rep, s.warmup, i as u32)).collect();
    assert_eq!(seen, want);
    assert_eq!(stored.iter().filter(|r| r.warmup).count(), 2, "one warm-up per cell, flagged");
    assert!(stored[0].warmup && !stored[1].warmup);
    // The records reach the sink as the executor made them.
    let cell = &plan(&d).cells[1];
    assert_eq!(stored[4], MockExecutor::record(cell, &steps[4], 4, false));
    assert_eq!(stored[4].samples.len(), 2);
    assert!(stored[4].samples[1].background);
    assert!(
        !d.join("exp").exists(),
        "the experiment directory (and the parent it made) is gone after the run"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_sink_gets_each_record_before_the_next_step_starts() {
    let mut mock = MockExecutor::new();
    let (ending, _, d) = run_mock("sink-order", &mut mock, None);
    assert_eq!(ending.unwrap(), Ending::Complete);
    let trace = mock.trace.borrow();
    let mut want = Vec::new();
    for (i, s) in plan(&d).steps().iter().enumerate() {
        want.push(format!("start {i}/6 {}", s.cell));
        want.push(format!("run {}/{}{}", s.cell, if s.warmup { "w" } else { "r" }, s.rep));
        // The observer hears of each release before the step's record exists.
        want.push("prepared".into());
        want.push(format!("sink {i}"));
        want.push(format!("finished {i}"));
    }
    assert_eq!(*trace, want);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_failing_sink_ends_the_run_with_its_error() {
    let mut mock = MockExecutor::new();
    let (ending, stored, d) = run_mock("sink-fails", &mut mock, Some(2));
    let err = ending.expect_err("the sink's error ends the run");
    assert_eq!(err.to_string(), "disk full");
    assert_eq!(stored.len(), 2);
    assert_eq!(mock.ran.len(), 3, "no step after the one whose record was refused");
    assert!(
        !mock.trace.borrow().iter().any(|t| t == "finished 2"),
        "a record not stored is not reported finished"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_stop_between_steps_ends_the_run_interrupted_keeping_what_was_stored() {
    let mut mock = MockExecutor::new().stop_after(3, libc::SIGTERM);
    let (ending, stored, d) = run_mock("stop", &mut mock, None);
    assert_eq!(ending.unwrap(), Ending::Interrupted(libc::SIGTERM));
    assert_eq!(mock.ran.len(), 3);
    assert_eq!(
        stored.iter().map(|r| r.ordinal).collect::<Vec<_>>(),
        [0, 1, 2],
        "every finished step kept"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_step_stopped_part_way_is_not_stored_and_ends_the_run() {
    let mut mock = MockExecutor::new().interrupt_at(1, libc::SIGINT);
    let (ending, stored, d) = run_mock("interrupt", &mut mock, None);
    assert_eq!(ending.unwrap(), Ending::Interrupted(libc::SIGINT));
    assert_eq!(mock.ran.len(), 2);
    assert_eq!(stored.iter().map(|r| r.ordinal).collect::<Vec<_>>(), [0]);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_failed_step_is_stored_failed_and_the_run_goes_on() {
    let mut mock = MockExecutor::new().failing(1);
    let (ending, stored, d) = run_mock("failing", &mut mock, None);
    assert_eq!(ending.unwrap(), Ending::Complete);
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[1].status, schedlab_model::CellStatus::Failed);
    assert_eq!(
        stored[1].message.as_deref(),
        Some("1 worker of 2 exited with status != 0 (worker 0: status 1)")
    );
    assert!(stored
        .iter()
        .enumerate()
        .all(|(i, r)| i == 1 || r.status == schedlab_model::CellStatus::Ok));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_mock_records_hold_exactly_the_made_up_samples() {
    let d = scratch("record");
    let p = plan(&d);
    let r = MockExecutor::record(&p.cells[0], &Step { cell: 0, rep: 1, warmup: false }, 5, false);
    assert_eq!(r.samples.iter().map(|s| s.wall_s).collect::<Vec<_>>(), [1.0, 1.5]);
    assert_eq!(r.samples.iter().map(|s| s.voluntary_csw).collect::<Vec<_>>(), [10, 11]);
    assert_eq!(r.samples.iter().map(|s| s.involuntary_csw).collect::<Vec<_>>(), [0, 2]);
    assert_eq!(r.samples.iter().map(|s| s.user_s + s.sys_s).collect::<Vec<_>>(), [1.0, 1.0]);
    assert_eq!(r.makespan_s, 1.5);
    assert_eq!((r.rep, r.ordinal, r.status), (1, 5, schedlab_model::CellStatus::Ok));
    std::fs::remove_dir_all(d).unwrap();
}

/// Knobs on a fake /proc/sys: the fixed one held for the whole run, each cell's own set
/// before it and put back after it; one the kernel lacks fails its cell, and the run goes on.
#[test]
fn knobs_are_set_read_back_per_cell_and_put_back_and_a_refused_one_fails_only_its_cell() {
    use schedlab_plan::knob::KnobValue;
    let d = scratch("knobs");
    let sys = d.join("root/proc/sys/kernel");
    std::fs::create_dir_all(&sys).unwrap();
    std::fs::write(sys.join("sched_rr_timeslice_ms"), "37\n").unwrap();
    std::fs::write(sys.join("sched_autogroup_enabled"), "1\n").unwrap();
    let mut plan = plan(&d.join("exp"));
    plan.warmup = 0;
    plan.repetitions = 1;
    plan.knobs.insert("kernel.sched_autogroup_enabled".into(), KnobValue::Int(0));
    plan.cells[0].knobs.insert("kernel.sched_rr_timeslice_ms".into(), KnobValue::Int(5));
    plan.cells[1].knobs.insert("kernel.sched_schedstats".into(), KnobValue::Int(1));
    let mut journal = Journal::create(&d.join("state")).unwrap();
    let mut stored = Vec::new();
    let opts = Options { root: Root::new(d.join("root")), ..opts() };
    let steps = plan.steps();
    let mut source = FixedSteps::new(&steps);
    let mut quiet = Quiet;
    let mut run = Run::start(&plan, &mut source, opts, &mut journal, &mut quiet).unwrap();
    let ending = run.run(&mut MockExecutor::new(), &mut |r: &CellRecord| {
        stored.push(r.clone());
        Ok(())
    });
    assert_eq!(ending.unwrap(), Ending::Complete);
    let knobs: Vec<Vec<(&str, &str)>> = stored
        .iter()
        .map(|r| r.knobs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
        .collect();
    assert_eq!(
        knobs[0],
        [("kernel.sched_autogroup_enabled", "0"), ("kernel.sched_rr_timeslice_ms", "5")],
        "as read back"
    );
    assert_eq!(stored[1].status, schedlab_model::CellStatus::Failed);
    assert!(
        stored[1].message.as_deref().unwrap().starts_with("kernel.sched_schedstats: "),
        "{:?}",
        stored[1].message
    );
    assert_eq!(
        std::fs::read_to_string(sys.join("sched_rr_timeslice_ms")).unwrap(),
        "37",
        "put back after its cell"
    );
    assert_eq!(
        std::fs::read_to_string(sys.join("sched_autogroup_enabled")).unwrap(),
        "0",
        "held while the run lives"
    );
    drop(run);
    assert_eq!(
        std::fs::read_to_string(sys.join("sched_autogroup_enabled")).unwrap(),
        "1",
        "put back when the run is dropped"
    );
    assert!(journal.close().is_empty());
    std::fs::remove_dir_all(d).unwrap();
}

/// A run refused after it began its set-up (here: it would weaken RT throttling with no
/// watchdog above its workers) leaves nothing behind: dropping the half-made run undoes
/// the experiment directory it had made, before the caller closes the journal.
#[test]
fn a_run_refused_part_way_through_its_set_up_undoes_what_it_made() {
    use schedlab_plan::knob::KnobValue;
    let d = scratch("refused");
    let mut plan = plan(&d.join("exp"));
    plan.allow_rt_unthrottled = true;
    plan.knobs.insert("kernel.sched_rt_runtime_us".into(), KnobValue::Int(-1));
    let mut journal = Journal::create(&d.join("state")).unwrap();
    let steps = plan.steps();
    let mut source = FixedSteps::new(&steps);
    let mut quiet = Quiet;
    let refused = Run::start(&plan, &mut source, opts(), &mut journal, &mut quiet)
        .err()
        .expect("no watchdog: refused");
    assert!(matches!(refused, RunError::NoWatchdog), "{refused}");
    assert!(journal.entries().is_empty(), "undone by the drop: {:?}", journal.entries());
    assert!(
        !d.join("exp").exists(),
        "the experiment directory and the parent made for it are gone"
    );
    assert!(journal.close().is_empty());
    std::fs::remove_dir_all(d).unwrap();
}
