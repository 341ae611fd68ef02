//! Whole deciding runs driven by the mock executor, its values per cell and repetition made
//! up: a large effect stops after the first round, an effect inside the noise goes on to
//! the cap, identical levels end `same`, and a resumed run goes on deciding.

use super::*;
use crate::tests::{Lab, Said};
use crate::{Ended, MeasureOptions};
use schedlab_runner::MockExecutor;
use schedlab_spec::{Cell, Order};

/// Two builds of one program (`a` and `b`, pi), one process each: the workload axis has
/// two levels, and nothing else is swept.
const AB: &str = "name = \"ab\"\nrepetitions = 5\nwarmup = 0\n\
    [matrix]\nworkload = [\"a\", \"b\"]\npolicy = [\"other\"]\nprocesses = [1]\n\
    [workloads.a]\nkind = \"pi\"\niterations = 1000\n\
    [workloads.b]\nkind = \"pi\"\niterations = 1000\n";

/// [`AB`] with a first round of 4 repetitions.
const AB4: &str = "name = \"ab\"\nrepetitions = 4\nwarmup = 0\n\
    [matrix]\nworkload = [\"a\", \"b\"]\npolicy = [\"other\"]\nprocesses = [1]\n\
    [workloads.a]\nkind = \"pi\"\niterations = 1000\n\
    [workloads.b]\nkind = \"pi\"\niterations = 1000\n";

/// A made-up draw in [-1, 1) for each cell and repetition (splitmix64), so runs repeat.
fn jitter(cell: &Cell, step: &Step) -> f64 {
    let mut x = (u64::from(cell.index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (u64::from(step.rep) + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

fn is_b(cell: &Cell) -> bool {
    cell.key.starts_with("b/")
}

/// b takes 30% longer; ±1% noise.
fn large(cell: &Cell, step: &Step) -> f64 {
    (if is_b(cell) { 1.3 } else { 1.0 }) * (1.0 + 0.01 * jitter(cell, step))
}

/// b takes 0.5% longer, inside ±25% noise.
fn in_the_noise(cell: &Cell, step: &Step) -> f64 {
    (if is_b(cell) { 1.005 } else { 1.0 }) * (1.0 + 0.25 * jitter(cell, step))
}

/// a and b alike, ±1% noise.
fn identical(cell: &Cell, step: &Step) -> f64 {
    1.0 + 0.01 * jitter(cell, step)
}

/// Deciding the workload axis, at most `max` repetitions a cell.
fn deciding(lab: &Lab, max: u32) -> MeasureOptions {
    let until = Until { max_repetitions: max, ..Until::new("workload") };
    MeasureOptions { until: Some(until), ..lab.options() }
}

/// The measured steps each cell ran, by cell.
fn per_cell(ran: &[Step]) -> BTreeMap<u32, u32> {
    let mut n = BTreeMap::new();
    for s in ran.iter().filter(|s| !s.warmup) {
        *n.entry(s.cell).or_insert(0) += 1;
    }
    n
}

/// The decision of a complete run.
fn decided(m: crate::Measured) -> Decision {
    assert!(matches!(m.ended, Ended::Complete { .. }), "{:?}", m.ended);
    m.decision.expect("a deciding run has a decision")
}

#[test]
fn a_large_effect_is_decided_after_the_first_round() {
    let lab = Lab::of(AB);
    let mut mock = MockExecutor::new().scaled(large);
    let mut said = Said::default();
    let d = decided(lab.measure(&deciding(&lab, 20), &mut mock, &mut said).unwrap());
    assert_eq!(per_cell(&mock.ran), BTreeMap::from([(0, 5), (1, 5)]), "the plan's steps only");
    assert_eq!(d.verdicts.rows.len(), 1);
    assert_eq!(d.verdicts.rows[0].judged.verdict, Verdict::Regressed, "{:?}", d.verdicts.rows);
    assert_eq!(d.verdicts.rows[0].cell.key, "b/other/n1");
    assert!(d.decided());
    assert_eq!(
        d.to_string(),
        "decided after 5 repetitions per arm (1 regressed, 0 improved, 0 same, 0 undecided by workload)"
    );
    assert!(
        said.details
            .iter()
            .any(|l| l.starts_with("until decided: workload b against a in 1 pairs")),
        "{:?}",
        said.details
    );
    let summary = schedlab_report::verdicts::summary_line(&d.verdicts);
    assert!(summary.starts_with("verdicts of b against a: 1 regressed"), "{summary}");
}

#[test]
fn an_effect_inside_the_noise_goes_on_to_the_cap_and_stops_there() {
    let lab = Lab::of(AB4);
    let mut mock = MockExecutor::new().scaled(in_the_noise);
    let d = decided(lab.measure(&deciding(&lab, 12), &mut mock, &mut Said::default()).unwrap());
    assert_eq!(per_cell(&mock.ran), BTreeMap::from([(0, 12), (1, 12)]), "both arms to the cap");
    // Each round at most doubles the arms: 4, then 8, then the cap of 12; both arms of a
    // round interleaved.
    let rounds: Vec<u32> = mock.ran.iter().map(|s| s.rep).collect();
    assert!(rounds[..8].iter().all(|r| *r < 4) && rounds[8..16].iter().all(|r| (4..8).contains(r)));
    assert!(rounds[16..].iter().all(|r| (8..12).contains(r)), "{rounds:?}");
    assert_ne!(
        mock.ran[8..16].iter().map(|s| s.cell).collect::<Vec<_>>(),
        [0, 0, 0, 0, 1, 1, 1, 1],
        "a round is shuffled"
    );
    assert!(!d.decided());
    assert_eq!(d.per_arm, 12);
    assert_eq!(
        d.to_string(),
        "undecided at the cap of 12: 1 rows (0 regressed, 0 improved, 0 same, 1 undecided by workload)"
    );
}

#[test]
fn identical_levels_with_small_noise_end_same() {
    let lab = Lab::of(AB4);
    let mut mock = MockExecutor::new().scaled(identical);
    let d = decided(lab.measure(&deciding(&lab, 12), &mut mock, &mut Said::default()).unwrap());
    assert_eq!(d.verdicts.rows[0].judged.verdict, Verdict::Same, "{:?}", d.verdicts.rows);
    assert_eq!(per_cell(&mock.ran), BTreeMap::from([(0, 4), (1, 4)]));
    assert!(d
        .to_string()
        .starts_with("decided after 4 repetitions per arm (0 regressed, 0 improved, 1 same"));
}

#[test]
fn the_run_is_interleaved_and_a_resumed_one_goes_on_deciding() {
    let lab = Lab::of(AB4);
    let spec_order = lab.spec().plan.order;
    assert_eq!(spec_order, Order::Sequential, "the spec does not ask for random order");
    // Stopped in the middle of the second round (8 first, 4 of the next 8).
    let mut first = MockExecutor::new().scaled(in_the_noise).stop_after(12, 2);
    let m = lab.measure(&deciding(&lab, 12), &mut first, &mut Said::default()).unwrap();
    assert!(matches!(m.ended, Ended::Interrupted { .. }));
    let stored = m.store.run(m.run_id).unwrap().unwrap();
    let plan: Plan = serde_json::from_str(&stored.plan_json).unwrap();
    assert_eq!(plan.order, Order::Random, "the run forced random order");
    let resume = MeasureOptions { resume: true, ..deciding(&lab, 12) };
    let mut rest = MockExecutor::new().scaled(in_the_noise);
    let d = decided(lab.measure(&resume, &mut rest, &mut Said::default()).unwrap());
    let mut all = first.ran.clone();
    all.extend(&rest.ran);
    assert_eq!(per_cell(&all), BTreeMap::from([(0, 12), (1, 12)]), "on to the cap, once each");
    let reps: BTreeSet<(u32, u32)> = all.iter().map(|s| (s.cell, s.rep)).collect();
    assert_eq!(reps.len(), 24, "no repetition twice");
    assert_eq!(d.per_arm, 12);
}

#[test]
fn an_axis_that_cannot_be_decided_is_refused_before_anything_runs() {
    let lab = Lab::of(AB);
    let plan = lab.spec().plan;
    let refused = |until: Until| design(&plan, &until).unwrap_err().to_string();
    assert_eq!(
        refused(Until::new("policy")),
        "--until-decided policy: the run has one policy only (other): nothing to compare it with; the axes it sweeps: workload"
    );
    let err = refused(Until { baseline: Some("c".into()), ..Until::new("workload") });
    assert!(err.contains("\"c\" is not a workload of the run; its levels: a, b"), "{err}");
    let err = refused(Until { max_repetitions: 3, ..Until::new("workload") });
    assert!(err.contains("first round of 5 repetitions is past --max-repetitions 3"), "{err}");
    let mut adaptive = plan.clone();
    adaptive.adaptive = Some(schedlab_model::AdaptiveTarget { min: 3, max: 10, ci_pct: 5.0 });
    let err = design(&adaptive, &Until::new("workload")).unwrap_err();
    assert!(err.to_string().contains("not adaptive ones"), "{err}");
    let d = design(&plan, &Until { baseline: Some("b".into()), ..Until::new("workload") }).unwrap();
    assert_eq!(
        d.arms,
        [Arms { group: "all cells".into(), level: "a".into(), baseline: 1, other: 0 }]
    );
}

#[test]
fn this_machine_s_floor_sets_the_margin_without_the_drift_between_runs() {
    let lab = Lab::of(AB);
    let plan = lab.spec().plan;
    let until = Until::new("workload");
    // A drift between runs of 20% would keep a 30% change undecided; both arms are in one
    // run, so it does not count.
    let floor = Floor { n_a: 5, n_b: 5, ratio: 1.0, q95: 0.02, sd_log: 0.01, run_sd: 0.2 };
    let floors = Floors {
        run_id: 7,
        created_unix: 0.0,
        environment: Default::default(),
        floors: BTreeMap::from([(("a/other/n1".to_string(), "wall".to_string()), floor)]),
    };
    let decider = Decider::new(&plan, &until, Some(floors), 1, 7_200.0).unwrap();
    let mut records = Records::new();
    for cell in &plan.cells {
        for rep in 0..5 {
            let step = Step { cell: cell.index, rep, warmup: false };
            let mut r = MockExecutor::record(cell, &step, rep, false);
            r.samples[0].wall_s *= large(cell, &step);
            records.entry(cell.index).or_default().push(r);
        }
    }
    let (v, of_row) = decider.judge(&records);
    assert_eq!(of_row, [0]);
    let j = &v.rows[0].judged;
    assert_eq!(j.delta_source, schedlab_verdict::DeltaSource::Floor);
    assert!((j.delta - 0.02_f64.exp_m1()).abs() < 1e-12, "the floor at 5 v 5: {}", j.delta);
    assert_eq!(j.verdict, Verdict::Regressed, "{}", j.why);
    let source = v.floor.as_ref().unwrap();
    assert_eq!((source.run_id, source.covered, source.age.as_str()), (7, 1, "2 h"));
    assert!(decider.intro().ends_with("; floors of noise run 7"), "{}", decider.intro());
}
