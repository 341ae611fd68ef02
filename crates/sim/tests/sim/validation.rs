//! Invalid inputs are refused with an error that names the problem.

use schedlab_policy::{PolicyError, PolicySpec, Window};
use schedlab_sim::{simulate, SimConfig, SimError, TaskSpec, WorkSpec};

fn edf(horizon: u64) -> SimConfig {
    SimConfig::new(1, PolicySpec::Edf).with_horizon(horizon)
}

fn err(config: &SimConfig, tasks: &[TaskSpec]) -> SimError {
    simulate(config, tasks).expect_err("input must be refused")
}

#[test]
fn c_greater_than_d() {
    let e = err(&edf(10), &[TaskSpec::periodic("t", 5, 10).deadline(4)]);
    assert_eq!(e, SimError::WcetExceedsDeadline { task: "t".into(), wcet: 5, deadline: 4 });
    assert!(e.to_string().contains("exceeds the relative deadline"));
}

#[test]
fn zero_period_and_zero_c() {
    let zero_t = TaskSpec::periodic("t", 1, 0);
    assert!(matches!(err(&edf(10), &[zero_t]), SimError::ZeroPeriod { .. }));
    let zero_c = TaskSpec::periodic("t", 0, 5);
    assert!(matches!(err(&edf(10), &[zero_c]), SimError::ZeroWcet { .. }));
    let zero_burst = TaskSpec::burst("b", 0);
    assert!(matches!(err(&edf(10), &[zero_burst]), SimError::ZeroWork { .. }));
    let empty = TaskSpec::new("m", WorkSpec::Mixed { phases: vec![] });
    assert!(matches!(err(&edf(10), &[empty]), SimError::ZeroWork { .. }));
}

#[test]
fn window_x_greater_than_y() {
    let e = err(&edf(10), &[TaskSpec::periodic("w", 1, 2).window(3, 2)]);
    assert_eq!(
        e,
        SimError::InvalidParams {
            task: "w".into(),
            source: PolicyError::InvalidWindow(Window::new(3, 2))
        }
    );
    assert_eq!(e.to_string(), "task `w`: window 3/2 is invalid: x must not exceed y");
}

#[test]
fn more_partitions_than_cpus() {
    let tasks = [TaskSpec::burst("a", 1), TaskSpec::burst("b", 1)];
    let e = err(&edf(10).partitioned(vec![0, 1]), &tasks);
    assert_eq!(e, SimError::MorePartitionsThanCpus { task: "b".into(), cpu: 1, cpus: 1 });
    let e = err(&edf(10).partitioned(vec![0]), &tasks);
    assert!(matches!(e, SimError::PartitionLength { tasks: 2, got: 1 }));
}

#[test]
fn empty_task_set_no_cpus_and_unbounded_runs() {
    assert_eq!(err(&edf(10), &[]), SimError::EmptyTaskSet);
    let none = SimConfig::new(0, PolicySpec::Edf);
    assert_eq!(err(&none, &[TaskSpec::burst("a", 1)]), SimError::NoCpus);
    let forever = SimConfig::new(1, PolicySpec::Edf);
    let e = err(&forever, &[TaskSpec::periodic("p", 1, 2)]);
    assert!(matches!(e, SimError::Unbounded { .. }));
    // A job limit makes it bounded.
    assert!(simulate(&forever, &[TaskSpec::periodic("p", 1, 2).jobs(3)]).is_ok());
}

#[test]
fn bad_policy_and_task_parameters() {
    let rr0 = SimConfig::new(1, PolicySpec::Rr { quantum: 0 });
    assert_eq!(err(&rr0, &[TaskSpec::burst("a", 1)]), SimError::Policy(PolicyError::ZeroQuantum));
    let bad_nice = TaskSpec::burst("a", 1).nice(30);
    assert!(matches!(
        err(&edf(10), &[bad_nice]),
        SimError::InvalidParams { source: PolicyError::NiceOutOfRange(30), .. }
    ));
    let bad_res = TaskSpec::burst("a", 1).reservation(5, 4, 10);
    assert!(matches!(
        err(&edf(10), &[bad_res]),
        SimError::InvalidParams { source: PolicyError::ReservationOrder { .. }, .. }
    ));
    let bad_min = TaskSpec::periodic("p", 3, 10).min_exec(4);
    assert!(matches!(err(&edf(10), &[bad_min]), SimError::BadMinExec { .. }));
}
